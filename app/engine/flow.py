"""Optical flow between two frames: one interface, three backends (``nvof`` lives in
``flow_nvof``, the benchmark in ``flow_bench``).

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

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import cv2
import numpy as np

from app.engine.errors import UserError

BACKENDS: tuple[str, ...] = ("auto", "nvof", "dis", "farneback")
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


def check_sizes(size0: tuple[int, int], size1: tuple[int, int]) -> None:
    """Sizes as (width, height)."""
    if size0 != size1:
        raise UserError(
            f"frames {size0[0]}x{size0[1]} and {size1[0]}x{size1[1]} differ in size; "
            "give two frames of one camera"
        )


def elapsed_ms(t0: float, t1: float) -> float:
    return (t1 - t0) * 1e3


# --- CPU backends ----------------------------------------------------------------------------


class _CpuFlow:
    name = ""
    device = "cpu"
    preset: str | None = None
    status = ""

    def compute(self, frame0: np.ndarray, frame1: np.ndarray) -> FlowResult:
        t0 = time.perf_counter()
        g0, g1 = to_gray(frame0), to_gray(frame1)
        check_sizes(g0.shape[::-1], g1.shape[::-1])
        t1 = time.perf_counter()
        flow = np.asarray(self._calc(g0, g1), dtype=np.float32)
        t2 = time.perf_counter()
        timings = {"gray": elapsed_ms(t0, t1), "calc": elapsed_ms(t1, t2), "total": elapsed_ms(t0, t2)}
        return FlowResult(flow, self.name, self.device, timings)

    def _calc(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release on the CPU."""


class DisFlow(_CpuFlow):
    """OpenCV's Dense Inverse Search (Kroeger et al. 2016) at a speed/quality preset."""

    name = "dis"
    _PRESET_IDS: ClassVar[dict[str, int]] = {
        "ultrafast": cv2.DISOpticalFlow_PRESET_ULTRAFAST,
        "fast": cv2.DISOpticalFlow_PRESET_FAST,
        "medium": cv2.DISOpticalFlow_PRESET_MEDIUM,
    }

    def __init__(self, preset: str = "fast") -> None:
        self.preset = preset
        self._dis = cv2.DISOpticalFlow.create(self._PRESET_IDS[preset])

    def _calc(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        # None, not a zero buffer: DIS takes any flow of the right size as its initial guess
        return self._dis.calc(gray0, gray1, None)  # type: ignore[call-overload]


class FarnebackFlow(_CpuFlow):
    """Farneback polynomial expansion: slower than DIS, smooth, no preset."""

    name = "farneback"

    def __init__(self, levels: int = 4, winsize: int = 15, iterations: int = 3) -> None:
        self.levels, self.winsize, self.iterations = levels, winsize, iterations

    def _calc(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        # pyr_scale 0.5 (classic pyramid), poly_n 5 with poly_sigma 1.1 as OpenCV's docs pair them
        flow = np.zeros((*gray0.shape, 2), np.float32)  # not read: flags has no USE_INITIAL_FLOW
        return cv2.calcOpticalFlowFarneback(
            gray0, gray1, flow, 0.5, self.levels, self.winsize, self.iterations, 5, 1.1, 0
        )


# --- Choosing a backend ----------------------------------------------------------------------


def create_flow_backend(
    name: str, options: FlowOptions | None = None, cv: Any = None
) -> tuple[FlowBackend, str]:
    """The backend called ``name`` and one line saying what runs and why.

    ``auto`` uses the start-up probe (or probes ``cv`` when one is given) and falls back to ``dis``.
    """
    opts = options or FlowOptions()
    if name not in BACKENDS:
        raise UserError(f"unknown flow backend {name!r}; use one of: {', '.join(BACKENDS)}")
    if name in ("auto", "nvof"):
        from app.engine.flow_nvof import NvofFlow, nvof_probe, probe_nvof  # imports this module

        probe = nvof_probe() if cv is None and opts.gpu_id == 0 else probe_nvof(cv, opts.gpu_id)
        if probe.available:
            return NvofFlow(opts, cv), f"NVIDIA Optical Flow Accelerator on {probe.reason}"
        if name == "nvof":
            raise UserError(f"nvof is not available: {probe.reason}; use --backend dis or farneback")
        dis = DisFlow(opts.preset_for("dis") or "fast")
        return dis, f"nvof unavailable: {probe.reason}"
    if name == "dis":
        return DisFlow(opts.preset_for("dis") or "fast"), "OpenCV DIS on the CPU"
    opts.preset_for("farneback")
    return FarnebackFlow(), "OpenCV Farneback on the CPU"


def create_flow(name: str, options: FlowOptions | None = None, cv: Any = None) -> FlowBackend:
    """``create_flow_backend`` with the reason line kept on the backend as ``status``."""
    backend, reason = create_flow_backend(name, options, cv)
    backend.status = reason
    return backend


def parse_backend_spec(spec: str) -> tuple[str, FlowOptions]:
    """'dis', 'dis:ultrafast' or 'nvof:fast:4' (backend[:preset[:grid]]) -> (name, options)."""
    name, *rest = spec.strip().split(":")
    if name not in BACKENDS:
        raise UserError(f"unknown flow backend {name!r}; use one of: {', '.join(BACKENDS)}")
    preset = rest[0] if rest and rest[0] else None
    try:
        grid = int(rest[1]) if len(rest) > 1 else 1
    except ValueError:
        raise UserError(f"bad flow grid in {spec!r}; write e.g. nvof:fast:4") from None
    options = FlowOptions(preset=preset, grid=grid)
    if name != "auto":
        options.preset_for(name)
    return name, options
