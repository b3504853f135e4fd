"""Choosing and building a depth engine from user options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from app.engine.assets import default_weights
from app.engine.bi3d.checkpoint import load_model
from app.engine.bi3d.factory import build_model
from app.engine.bi3d.model import SweepModel
from app.engine.depth.bi3d import Bi3DEngine, resolve_device, resolve_precision
from app.engine.depth.exposure import DEFAULT_EXPOSURE
from app.engine.depth.planecheck import DEFAULT_PLANE_CHECK
from app.engine.depth.sgbm import SGBMEngine, SGBMParams
from app.engine.depth.subpixel import DEFAULT_SUBPIXEL
from app.engine.errors import UserError, setting
from app.engine.runtimes.select import open_runtime
from app.engine.runtimes.tensorrt_runtime import stderr_report
from app.engine.types import ENGINES, DepthRequest, DepthResult


class DepthEngine(Protocol):
    name: str

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        """``left``, ``right``: H x W x 3 RGB uint8, rectified -> a ``DepthResult`` of H x W."""
        ...

    def new_stream(self) -> None:
        """Forget what frame-to-frame state learnt of the last stream (its disparity range, its
        vertical alignment): the next frames come from another source or rectification."""
        ...


@dataclass(frozen=True)
class EngineOptions:
    engine: str | None = None  # None: Bi3D with the bundled model if there is one, else SGBM
    weights: Path | None = None
    device: str = "cpu"
    precision: str = "auto"  # bf16 or fp32, the faster, on CPUs with native bf16, else fp32 (bi3d_engine)
    shift_mode: str = "auto"
    width: float | None = None  # random-initialised Bi3D of this width (benchmarks only)
    sgbm: SGBMParams = field(default_factory=SGBMParams)
    runtime: str = "auto"  # auto, torch, onnxruntime or tensorrt (see app.engine.runtimes)
    cuda_graphs: bool = False  # torch runtime on CUDA: replay captured graphs per size and plane bucket
    subpixel: bool = True  # Bi3D continuous/selective: refine the plane readout by local matching
    plane_check: bool = True  # Bi3D binary/quantized: check hesitant answers by local matching
    search: str = "auto"  # Bi3D continuous: coarse-to-fine where it can run, or the full sweep
    align: bool = True  # both engines: cancel the pair's measured vertical misalignment (depth.alignment)
    exposure_stretch: bool = True  # Bi3D: stretch an underexposed pair's contrast first (depth.exposure)
    colour_choice: bool = True  # Bi3D: read a colour stream in colour or grey levels (depth.colour_choice)
    # where TensorRT engine-build progress goes (None: stderr); builds take minutes
    progress: Callable[[str], None] | None = field(default=None, compare=False)


def choose_engine_name(options: EngineOptions) -> tuple[str, str]:
    """Engine name and a one-line reason for the choice."""
    if options.engine is not None:
        if options.engine not in ENGINES:
            raise UserError(f"unknown engine {options.engine!r}; use one of {', '.join(ENGINES)}")
        return options.engine, "as requested"
    if options.weights is not None:
        return "bi3d", f"weights {options.weights}"
    bundled = default_weights()
    if bundled is not None:
        return "bi3d", f"bundled default model {bundled.name}"
    return "sgbm", f"no bundled Bi3D model in this build; give {setting('weights')} for Bi3D"


def build_engine(options: EngineOptions, kind: str = "binary") -> tuple[DepthEngine, str]:
    """The engine ``options`` describe and one line saying what was chosen and why.

    ``kind`` is the model kind of random weights when ``options.width`` asks for them (timing).
    """
    name, reason = choose_engine_name(options)
    if name == "sgbm":
        return SGBMEngine(options.sgbm, align=options.align), reason
    if options.width is not None and options.weights is None:
        # the same random weights every run: their exported graphs and runtime choice are cached
        # by the weights' fingerprint (each bench --width run added 35-130 MB of exports: review)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = build_model(kind, options.width)
        return bi3d_engine(model, options), f"random {kind} weights at width {options.width:g} (timing only)"
    weights = options.weights or default_weights()
    if weights is None:
        raise UserError(f"Bi3D needs weights: give {setting('weights')} (published or project checkpoint)")
    model, info = load_model(weights)
    engine = bi3d_engine(model, options)
    return engine, f"{reason}; {info.kind.value} model, width {info.width:g}, {info.source} format"


def bi3d_engine(model: SweepModel, options: EngineOptions) -> Bi3DEngine:
    """A Bi3D engine on the runtime the options ask for (opened at its first frame)."""
    device = resolve_device(options.device)
    precision = resolve_precision(options.precision, device, model, options.runtime)
    # auto precision chose bf16 for a CPU that computes it natively, but without AMX it can be
    # slower than fp32 (41 against 35 ms a plane): both are timed on the first frame, and cached
    timed = options.precision == "auto" and precision == "bf16" and device.type == "cpu"
    chain = open_runtime(
        model,
        options.runtime,
        device,
        precision,
        options.cuda_graphs,
        options.progress or stderr_report,
        alternatives=("fp32",) if timed else (),
    )
    return Bi3DEngine(
        model,
        options.device,
        precision,
        options.shift_mode,
        runtime=chain,
        subpixel=DEFAULT_SUBPIXEL if options.subpixel else None,
        plane_check=DEFAULT_PLANE_CHECK if options.plane_check else None,
        search=options.search,
        align=options.align,
        exposure=DEFAULT_EXPOSURE if options.exposure_stretch else None,
        colour_choice=options.colour_choice,
    )
