"""The PyTorch runtime: the model's own stages, eagerly, on the CPU or CUDA.

On CUDA it takes the fast path: channels-last convolutions, cuDNN autotuning for the frame
size in use, TF32 only when asked for (``precision="tf32"``; ``"fp32"`` is IEEE fp32),
autocast for bf16 and fp16. On the CPU, int8 runs the light model's SegNet in int8
(``bi3d.int8``). CUDA graphs are a separate runtime (``cuda_graphs``).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor, nn

from app.engine.bi3d.int8 import int8_calibration, int8_model
from app.engine.bi3d.model import Features, SweepModel, to_channels_last
from app.engine.runtimes.base import RuntimeFailed

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


class TorchRuntime:
    """``SweepModel`` calls as they are: today's behaviour, and the conformance reference."""

    name = "torch"
    reason = ""
    max_planes: int | None = None

    def __init__(self, model: SweepModel, device: torch.device, precision: str = "fp32") -> None:
        self.model = model.to(device).eval()
        if precision in AUTOCAST:
            self.model = autocast_weights(self.model, AUTOCAST[precision])
        if precision == "int8":  # a copy whose SegNet runs in int8 (the model given is unchanged)
            self.model = int8_model(self.model, int8_calibration(self.model))
        self._device = device
        self.device = device.type
        self.precision = precision
        self.channels_last = device.type == "cuda"
        if self.channels_last:
            to_channels_last(self.model)

    def features(self, left: Tensor, right: Tensor) -> Features:
        if self.channels_last:
            left = left.contiguous(memory_format=torch.channels_last)
            right = right.contiguous(memory_format=torch.channels_last)
        with out_of_memory_fails(self.name):
            return self.model.extract(left, right)

    def planes(self, feats: Any, shifts: Tensor) -> Tensor:
        with out_of_memory_fails(self.name):
            return self.model.plane_logits(feats, shifts.cpu(), chunk=shifts.numel())

    def pixel_sweep(self, feats: Any) -> Callable[[Tensor, Tensor | None], Tensor] | None:
        """Per-pixel planes for this frame (an h' x w' plane map in px and each pixel's prior
        logit there, or None -> h' x w' logits at it), or None when the model has no such pass
        (only the light model has)."""
        sweep = getattr(self.model, "pixel_sweep", None)
        if sweep is None:
            return None
        planes = sweep(feats).at_planes

        def run(plane_map: Tensor, prior: Tensor | None = None) -> Tensor:
            with out_of_memory_fails(self.name):
                return planes(plane_map, prior)

        return run

    def refine_planes(self, feats: Any, lowres: Tensor) -> Tensor:
        with out_of_memory_fails(self.name):
            return self.model.refine_planes(feats, lowres)

    def regularise(self, feats: Any, lowres: Tensor) -> Tensor:
        return self.model.regularise(feats, lowres)

    def refine_disparity(self, feats: Any, normalized: Tensor) -> Tensor:
        return self.model.refine_disparity(normalized, feats.image)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return precision_context(self._device, self.precision)

    def describe(self) -> str:
        extra = ", channels-last, cuDNN autotuning" if self.device == "cuda" else ""
        return f"torch on {self.device}, {self.precision}{extra}"


def autocast_weights(model: SweepModel, dtype: torch.dtype) -> SweepModel:
    """A copy of ``model`` whose 2D convolutions hold their weights and biases in ``dtype``.

    Autocast casts them at every call and forgets the casts when its context closes, which is
    once a frame here: about 25 casts a frame for the light model, 0.1-0.3 ms of a 10 ms
    one-plane answer on a CPU. Autocast would cast them to the same values, so the outputs are
    identical; the model given stays as it is (the engine, other runtimes and a trainer share it).
    """
    cast = copy.deepcopy(model)
    for module in cast.modules():
        if isinstance(module, nn.Conv2d):
            module.to(dtype)
    return cast


@contextlib.contextmanager
def precision_context(device: torch.device, precision: str, cache: bool = True) -> Iterator[None]:
    """Autocast for bf16/fp16; on CUDA also the TF32 switch and cuDNN autotuning, restored after.

    ``cache=False`` turns off autocast's weight cache, which CUDA graph capture needs.
    """
    with contextlib.ExitStack() as stack:
        if device.type == "cuda":
            stack.enter_context(_cuda_switches(precision == "tf32"))
        if precision in AUTOCAST:
            stack.enter_context(torch.autocast(device.type, dtype=AUTOCAST[precision], cache_enabled=cache))
        yield


@contextlib.contextmanager
def _cuda_switches(tf32: bool) -> Iterator[None]:
    """TF32 for matmuls and convolutions on or off, cuDNN benchmark on (fixed frame sizes).

    The ``allow_tf32`` flags, not torch 2.9's ``fp32_precision``: the trainer sets the former,
    and torch refuses to read the old flags once the new ones were set differently.
    """
    backends = torch.backends
    saved = (backends.cudnn.benchmark, backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32)
    backends.cudnn.benchmark = True
    backends.cudnn.allow_tf32 = backends.cuda.matmul.allow_tf32 = tf32
    try:
        yield
    finally:
        backends.cudnn.benchmark, backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32 = saved


@contextlib.contextmanager
def out_of_memory_fails(name: str) -> Iterator[None]:
    """GPU out of memory becomes a ``RuntimeFailed`` the engine can report (and fall back on)."""
    try:
        yield
    except torch.cuda.OutOfMemoryError as exc:
        torch.cuda.empty_cache()
        first = str(exc).splitlines()[0] if str(exc) else "out of memory"
        raise RuntimeFailed(f"{name}: GPU out of memory ({first[:120]})") from exc
