"""Optical flow between two frames: the one interface of three backends (``cpu``: DIS and
Farneback, ``nvof``; ``choose`` picks one by name; the benchmark is ``app.engine.bench.flow``).

Flow is float32 H x W x 2 (u, v) in pixels from ``frame0`` to ``frame1``: the content at
``frame0[y, x]`` is found near ``frame1[y + v, x + u]``. Frames are uint8 RGB H x W x 3 or
grayscale H x W; ``nvof`` also takes ``cv2.cuda.GpuMat`` (8-bit, 1 or 3 channels).

- ``nvof``: the NVIDIA Optical Flow Accelerator (Turing and newer) through OpenCV's
  ``cv2.cuda.NvidiaOpticalFlow_2_0``; needs an OpenCV built with CUDA (the PyPI wheels are not).
- ``dis`` (OpenCV DIS) and ``farneback`` on the CPU.
- ``auto``: ``nvof`` when the start-up probe passes, else ``dis``.

The OpenCV module used for CUDA is injectable (``cv=``) so tests can put a fake in its place;
CPU-side image work always uses the real ``cv2``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.types import FLOW_BACKENDS

BACKENDS: tuple[str, ...] = FLOW_BACKENDS
DIS_PRESETS: tuple[str, ...] = ("ultrafast", "fast", "medium")
NVOF_PRESETS: tuple[str, ...] = ("slow", "medium", "fast")
NVOF_GRIDS: tuple[int, ...] = (1, 2, 4)
_PRESETS: dict[str, tuple[str, ...]] = {"dis": DIS_PRESETS, "nvof": NVOF_PRESETS, "farneback": ()}
_DEFAULT_PRESET: dict[str, str | None] = {"dis": "fast", "nvof": "medium", "farneback": None}


@dataclass(frozen=True)
class FlowParam:
    """How a UI should offer one backend parameter: a choice among ``choices``."""

    name: str
    label: str
    default: object
    choices: tuple[object, ...]


PARAMETERS: dict[str, tuple[FlowParam, ...]] = {
    "nvof": (
        FlowParam("preset", "Performance preset", "medium", NVOF_PRESETS),
        FlowParam("grid", "Output grid (px)", 1, NVOF_GRIDS),
        FlowParam("temporal_hints", "Temporal hints (video)", False, (False, True)),
        FlowParam("cost", "Cost buffer", False, (False, True)),
    ),
    "dis": (FlowParam("preset", "Preset", "fast", DIS_PRESETS),),
    "farneback": (),
}


@dataclass(frozen=True)
class FlowOptions:
    """Backend settings; ``preset`` None is the backend's default, the rest is for ``nvof``."""

    preset: str | None = None
    grid: int = 1
    temporal_hints: bool = False
    cost: bool = False
    gpu_id: int = 0

    def __post_init__(self) -> None:
        if self.grid not in NVOF_GRIDS:
            raise UserError(f"flow grid must be 1, 2 or 4 px, got {self.grid}")
        if self.gpu_id < 0:
            raise UserError(f"GPU id must be 0 or more, got {self.gpu_id}")

    def preset_for(self, backend: str) -> str | None:
        allowed = _PRESETS[backend]
        if self.preset is None:
            return _DEFAULT_PRESET[backend]
        if self.preset not in allowed:
            hint = f"use one of: {', '.join(allowed)}" if allowed else "leave --preset out"
            raise UserError(f"{backend} has no preset {self.preset!r}; {hint}")
        return self.preset


@dataclass(frozen=True)
class FlowResult:
    """``flow`` H x W x 2 float32 px, ``timings`` in ms.

    ``grid`` (px) is the grid the vectors came at; with nvof's cost buffer on, it is the grid the
    accelerator computed at (OpenCV upsamples to the requested grid when the GPU lacks it, and
    only the cost buffer keeps the hardware grid). ``cost`` (nvof, when enabled) is H x W uint8,
    higher is less reliable. ``note`` says when the grid differs from the one asked for.
    """

    flow: np.ndarray
    backend: str
    device: str
    timings: dict[str, float] = field(default_factory=dict)
    grid: int = 1
    cost: np.ndarray | None = None
    note: str = ""

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(result)`` is the flow, for callers that only want the field."""
        return np.asarray(self.flow, dtype=dtype)


class FlowBackend(Protocol):
    name: str
    device: str
    preset: str | None
    status: str  # what runs and why, one line for the UI

    def compute(self, frame0: Any, frame1: Any) -> FlowResult: ...

    def close(self) -> None: ...


def to_gray(frame: np.ndarray) -> np.ndarray:
    """uint8 H x W x 3 RGB or H x W gray -> uint8 H x W gray."""
    a = np.asarray(frame)
    if a.dtype != np.uint8 or not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)):
        raise ValueError(f"flow needs uint8 H x W or H x W x 3 frames, got {a.dtype} {a.shape}")
    return a if a.ndim == 2 else cv2.cvtColor(a, cv2.COLOR_RGB2GRAY)


MIN_FLOW_SIDE = 16  # px: DIS needs 12 on a side, and a smaller frame holds no motion worth drawing


def check_sizes(size0: tuple[int, int], size1: tuple[int, int]) -> None:
    """Sizes as (width, height): equal, and at least ``MIN_FLOW_SIDE`` on each side."""
    if size0 != size1:
        raise UserError(
            f"frames {size0[0]}x{size0[1]} and {size1[0]}x{size1[1]} differ in size; "
            "give two frames of one camera"
        )
    if min(size0) < MIN_FLOW_SIDE:
        raise UserError(
            f"the frames are {size0[0]}x{size0[1]} px; flow needs at least "
            f"{MIN_FLOW_SIDE}x{MIN_FLOW_SIDE} px; give larger frames"
        )


def elapsed_ms(t0: float, t1: float) -> float:
    return (t1 - t0) * 1e3
