"""What every runtime offers the engine: the feature pass and the plane pass as separate calls.

A runtime owns one model's stages on one device in one precision. The engine calls
``features`` once per frame, ``planes`` once per chunk of planes (so "features once, planes
batched" holds for every runtime), then the readout stages. Shapes: B batch, P planes,
H x W padded image (multiples of 96), h' x w' the plane logits' grid.
"""

from __future__ import annotations

import contextlib
import importlib
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from torch import Tensor

from app.engine.types import RUNTIMES

__all__ = ["RUNTIMES"]


class RuntimeUnavailable(Exception):
    """This runtime cannot run here (a package, a device or a file is missing or wrong).

    The message is one line saying why; the engine falls back to the next runtime and shows it.
    """


def optional_module(name: str, missing: str) -> ModuleType:
    """Import an optional package, or raise `RuntimeUnavailable` with ``missing`` (what to install)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise RuntimeUnavailable(missing) from exc


class RuntimeFailed(RuntimeUnavailable):
    """A runtime that had started failed while running a frame (e.g. GPU out of memory)."""


@runtime_checkable
class FrameFeatures(Protocol):
    """Per-frame features of any runtime; ``image`` is the normalised left image, B x 3 x H x W."""

    image: Tensor


class Runtime(Protocol):
    """One model's stages on one device. ``name`` is what results report in ``runtime``."""

    name: str
    device: str  # "cpu" or "cuda"
    precision: str  # "fp32", "tf32", "bf16", "fp16" or "int8" (CPU: bi3d.int8)
    reason: str  # why this runtime runs (auto choice, fallbacks); "" when it was simply asked for
    max_planes: int | None  # the most planes one ``planes`` call takes (the engine chunks to it)

    def features(self, left: Tensor, right: Tensor) -> FrameFeatures:
        """Normalised B x 3 x H x W images -> features, computed once per frame."""
        ...

    def planes(self, feats: FrameFeatures, shifts: Tensor) -> Tensor:
        """Shifts (P,) in feature columns -> low-resolution logits B x P x h' x w' (one batch)."""
        ...

    def refine_planes(self, feats: FrameFeatures, lowres: Tensor) -> Tensor:
        """B x P x h' x w' logits -> full-resolution logits B x P x H x W."""
        ...

    def regularise(self, feats: FrameFeatures, lowres: Tensor) -> Tensor:
        """Continuous-3D: 3D-regularised low-resolution logits (same shape); others: unchanged."""
        ...

    def refine_disparity(self, feats: FrameFeatures, normalized: Tensor) -> Tensor:
        """Continuous kinds: DispRefine of B x 1 x H x W normalised disparity."""
        ...

    def context(self) -> contextlib.AbstractContextManager[Any]:
        """Entered around a whole frame (autocast, TF32 switches); a null context for most."""
        ...

    def describe(self) -> str:
        """One line: runtime, device, precision and anything notable (providers, engine files)."""
        ...
