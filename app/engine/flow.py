"""Optical flow between two frames: one interface, three backends, a probe and a benchmark.

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

import dataclasses
import functools
import re
import time
from collections.abc import Callable
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


def _check_sizes(size0: tuple[int, int], size1: tuple[int, int]) -> None:
    """Sizes as (width, height)."""
    if size0 != size1:
        raise UserError(
            f"frames {size0[0]}x{size0[1]} and {size1[0]}x{size1[1]} differ in size; "
            "give two frames of one camera"
        )


def _ms(t0: float, t1: float) -> float:
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
        _check_sizes(g0.shape[::-1], g1.shape[::-1])
        t1 = time.perf_counter()
        flow = np.asarray(self._calc(g0, g1), dtype=np.float32)
        t2 = time.perf_counter()
        timings = {"gray": _ms(t0, t1), "calc": _ms(t1, t2), "total": _ms(t0, t2)}
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


# --- nvof: the NVIDIA Optical Flow Accelerator through OpenCV ---------------------------------
#
# Checked against opencv_contrib modules/cudaoptflow (include/opencv2/cudaoptflow.hpp,
# src/nvidiaOpticalFlow.cpp, misc/python/test/test_nvidiaopticalflow.py) and the
# cv::cuda::NvidiaOpticalFlow_2_0 reference on docs.opencv.org (4.x, 5.0):
# - create(imageSize, perfPreset=SLOW, outputGridSize=1, hintGridSize=1, enableTemporalHints=False,
#   enableExternalHints=False, enableCostBuffer=False, gpuId=0, inputStream, outputStream), with
#   imageSize (width, height). Another overload takes roiData second, so the rest go by keyword.
# - Enums: NV_OF_PERF_LEVEL_SLOW/MEDIUM/FAST = 5/10/20, NV_OF_OUTPUT_VECTOR_GRID_SIZE_1/2/4 =
#   1/2/4, NV_OF_HINT_VECTOR_GRID_SIZE_1/2/4/8 = 1/2/4/8.
# - calc(inputImage, referenceImage, flow[, stream[, hint[, cost]]]) -> (flow, cost). Inputs are
#   8-bit gray (NV_OF_BUFFER_FORMAT_GRAYSCALE8), Mat or GpuMat; flow is CV_16SC2 in S10.5 fixed
#   point at ceil(W / grid) x ceil(H / grid), a GpuMat when the inputs are; cost is CV_8SC1
#   holding a UINT8 buffer at the hardware grid. calc waits for its output stream.
# - If the GPU lacks the requested grid, create takes the next larger supported one and calc
#   upsamples to the requested grid, so getGridSize() returns the request; the cost buffer
#   stays at the hardware grid.
# - convertToFloat(flow, floatFlow) downloads and divides by 32 on the CPU; we do the same
#   division with GpuMat.convertTo on the GPU instead. collectGarbage() ends the NvOF session.

_NVOF_CONSTANTS = {  # documented enum values, used when a binding exposes no constant
    "NV_OF_PERF_LEVEL_SLOW": 5,
    "NV_OF_PERF_LEVEL_MEDIUM": 10,
    "NV_OF_PERF_LEVEL_FAST": 20,
    "NV_OF_OUTPUT_VECTOR_GRID_SIZE_1": 1,
    "NV_OF_OUTPUT_VECTOR_GRID_SIZE_2": 2,
    "NV_OF_OUTPUT_VECTOR_GRID_SIZE_4": 4,
    "NV_OF_HINT_VECTOR_GRID_SIZE_1": 1,
    "NV_OF_HINT_VECTOR_GRID_SIZE_2": 2,
    "NV_OF_HINT_VECTOR_GRID_SIZE_4": 4,
}
_S10_5 = 1.0 / 32.0
_TURING = (7, 5)
_BUILD_CUDA = re.compile(r"NVIDIA CUDA:\s*YES", re.IGNORECASE)
_LIBRARY_HINT = "install the full NVIDIA driver (in a container, add 'video' to NVIDIA_DRIVER_CAPABILITIES)"
# (substring of OpenCV's error text, probe code, reason): texts from nvidiaOpticalFlow.cpp
_CREATE_ERRORS: tuple[tuple[str, str, str], ...] = (
    # NV_OF_ERR_* first: NVOF_API_CALL quotes the failing expression, which names LoadNvidiaModules
    ("NV_OF_ERR_OF_NOT_AVAILABLE", "no_accelerator", "this GPU has no Optical Flow Accelerator"),
    ("NV_OF_ERR_UNSUPPORTED_DEVICE", "no_accelerator", "this GPU has no Optical Flow Accelerator"),
    ("NV_OF_ERR_INVALID_VERSION", "old_driver", "the NVIDIA driver is too old for Optical Flow SDK 2.0"),
    ("compiled without CUDA", "no_cuda_build", "this OpenCV was built without CUDA"),
    (
        "without NVIDIA OpticalFlow",
        "no_nvof_sdk",
        "this OpenCV was built without the NVIDIA Optical Flow SDK",
    ),
    ("Cannot find Cuda", "no_library", "the CUDA driver library (libcuda.so / nvcuda.dll) was not found"),
    (
        "Cannot find NvOF",
        "no_library",
        f"the driver's libnvidia-opticalflow.so.1 (nvofapi64.dll) was not found; {_LIBRARY_HINT}",
    ),
    (
        "entry in NVOF library",
        "no_library",
        f"the driver's optical flow library lacks NvOFAPICreateInstanceCuda; {_LIBRARY_HINT}",
    ),
    (
        "Can't initialize LoadNvidiaModules",
        "no_library",
        f"the CUDA driver or optical flow library could not be loaded; {_LIBRARY_HINT}",
    ),
)


@dataclass(frozen=True)
class NvofProbe:
    """Whether ``nvof`` can run. ``code``: ok, no_cuda_build, no_flow_module, no_driver,
    no_device, no_accelerator, no_library, no_nvof_sdk, old_driver or failed."""

    available: bool
    code: str
    reason: str


def _nvof_create(cv: Any) -> Callable[..., Any] | None:
    """The create function in either binding spelling, or None."""
    cuda = getattr(cv, "cuda", None)
    candidates = (
        getattr(getattr(cuda, "NvidiaOpticalFlow_2_0", None), "create", None),
        getattr(cuda, "NvidiaOpticalFlow_2_0_create", None),
        getattr(getattr(cv, "cuda_NvidiaOpticalFlow_2_0", None), "create", None),
    )
    return next((fn for fn in candidates if callable(fn)), None)


def _nvof_constant(cv: Any, name: str) -> int:
    """An enum value by its C++ name, in either binding spelling, else the documented value."""
    cuda = getattr(cv, "cuda", None)
    owners = (
        (cuda, f"NvidiaOpticalFlow_2_0_{name}"),
        (getattr(cuda, "NvidiaOpticalFlow_2_0", None), name),
        (cuda, f"NVIDIA_OPTICAL_FLOW_2_0_{name}"),
    )
    for owner, attr in owners:
        value = getattr(owner, attr, None)
        if isinstance(value, int):
            return value
    return _NVOF_CONSTANTS[name]


def _explain(exc: BaseException) -> tuple[str, str]:
    """(code, reason) for an exception from create/calc."""
    text = str(exc)
    for needle, code, reason in _CREATE_ERRORS:
        if needle.lower() in text.lower():
            return code, reason
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return "failed", f"NvidiaOpticalFlow_2_0 failed: {first}"


def opencv_has_cuda(cv: Any) -> bool:
    """True when OpenCV's build information says it was compiled with CUDA."""
    try:
        return bool(_BUILD_CUDA.search(str(cv.getBuildInformation())))
    except Exception:
        return False


def probe_nvof(cv: Any = None, gpu_id: int = 0) -> NvofProbe:
    """Check, in order: a CUDA build, the flow class, the driver, a device, Turing or newer,
    then create (and release) a small session. Never raises."""
    cv = cv2 if cv is None else cv
    version = getattr(cv, "__version__", "?")
    if not opencv_has_cuda(cv):
        return NvofProbe(
            False,
            "no_cuda_build",
            f"OpenCV {version} was built without CUDA (the PyPI wheels are CPU-only); "
            "install an OpenCV built with CUDA and contrib to use the accelerator",
        )
    create = _nvof_create(cv)
    if create is None:
        return NvofProbe(
            False,
            "no_flow_module",
            f"OpenCV {version} has CUDA but no cv2.cuda.NvidiaOpticalFlow_2_0; "
            "build it with opencv_contrib's cudaoptflow module",
        )
    try:
        count = int(cv.cuda.getCudaEnabledDeviceCount())
    except Exception as exc:
        return NvofProbe(False, "no_driver", f"CUDA could not start ({_explain(exc)[1]})")
    if count < 0:  # documented: -1 when the driver is missing or incompatible
        return NvofProbe(False, "no_driver", "the NVIDIA driver is missing or too old for this OpenCV's CUDA")
    if count == 0:
        return NvofProbe(False, "no_device", "no CUDA device was found")
    if gpu_id >= count:
        return NvofProbe(False, "no_device", f"GPU {gpu_id} does not exist ({count} CUDA device(s))")
    capability = _compute_capability(cv, gpu_id)
    if capability is not None and capability < _TURING:
        return NvofProbe(
            False,
            "no_accelerator",
            f"GPU {gpu_id} has compute capability {capability[0]}.{capability[1]}; "
            "the Optical Flow Accelerator needs Turing (7.5) or newer",
        )
    try:
        session = create(
            (256, 256),
            perfPreset=_nvof_constant(cv, "NV_OF_PERF_LEVEL_FAST"),
            outputGridSize=_nvof_constant(cv, "NV_OF_OUTPUT_VECTOR_GRID_SIZE_4"),
            hintGridSize=_nvof_constant(cv, "NV_OF_HINT_VECTOR_GRID_SIZE_4"),
            enableTemporalHints=False,
            enableExternalHints=False,
            enableCostBuffer=False,
            gpuId=gpu_id,
        )
        session.collectGarbage()
    except Exception as exc:
        return NvofProbe(False, *_explain(exc))
    cc = "" if capability is None else f", compute capability {capability[0]}.{capability[1]}"
    return NvofProbe(True, "ok", f"GPU {gpu_id}{cc}")


def _compute_capability(cv: Any, gpu_id: int) -> tuple[int, int] | None:
    try:
        info = cv.cuda.DeviceInfo(gpu_id)
        return int(info.majorVersion()), int(info.minorVersion())
    except Exception:
        return None


@functools.cache
def nvof_probe() -> NvofProbe:
    """The probe of the real OpenCV on GPU 0, run once per process (at start-up)."""
    return probe_nvof()


def _is_gpumat(x: Any) -> bool:
    return not isinstance(x, np.ndarray) and hasattr(x, "download")


def _size(image: Any) -> tuple[int, int]:
    """(width, height) of a numpy image or a GpuMat (whose size() is (width, height))."""
    if _is_gpumat(image):
        w, h = image.size()
        return int(w), int(h)
    return int(image.shape[1]), int(image.shape[0])


def _grid_of(shape_hw: tuple[int, int], height: int, width: int) -> int:
    """The grid g for which a buffer of ``shape_hw`` is ceil(H / g) x ceil(W / g)."""
    for g in (1, 2, 4, 8):
        if shape_hw == (-(-height // g), -(-width // g)):
            return g
    raise ValueError(f"nvof buffer {shape_hw} matches no grid for a {height} x {width} image")


def upsample_grid(flow: np.ndarray, grid: int, height: int, width: int) -> np.ndarray:
    """ceil(H/g) x ceil(W/g) x C vectors, one per g x g block -> H x W x C, bilinear between
    block centres (values are already pixels: the grid changes where, not how far)."""
    if grid == 1:
        return flow[:height, :width]
    hg, wg = flow.shape[:2]
    # cv2.resize by exactly g puts source sample i at g * i + (g - 1) / 2: the block centre.
    return cv2.resize(flow, (wg * grid, hg * grid), interpolation=cv2.INTER_LINEAR)[:height, :width]


class NvofFlow:
    """Flow on the NVIDIA Optical Flow Accelerator; one NvOF session per frame size."""

    name = "nvof"
    status = ""

    def __init__(self, options: FlowOptions | None = None, cv: Any = None) -> None:
        self.options = options or FlowOptions()
        self.preset = self.options.preset_for("nvof")
        self.device = f"cuda:{self.options.gpu_id}"
        self._cv = cv2 if cv is None else cv
        create = _nvof_create(self._cv)
        if create is None:
            raise UserError("this OpenCV has no cv2.cuda.NvidiaOpticalFlow_2_0; use --backend dis")
        self._create = create
        self._session: Any = None
        self._size: tuple[int, int] | None = None

    def _open(self, width: int, height: int) -> Any:
        if self._session is not None and self._size == (width, height):
            return self._session
        self.close()
        grid, preset = self.options.grid, (self.preset or "medium").upper()
        try:
            self._session = self._create(
                (width, height),
                perfPreset=_nvof_constant(self._cv, f"NV_OF_PERF_LEVEL_{preset}"),
                outputGridSize=_nvof_constant(self._cv, f"NV_OF_OUTPUT_VECTOR_GRID_SIZE_{grid}"),
                # only read with external hints, which this adapter does not pass
                hintGridSize=_nvof_constant(self._cv, f"NV_OF_HINT_VECTOR_GRID_SIZE_{grid}"),
                enableTemporalHints=self.options.temporal_hints,
                enableExternalHints=False,
                enableCostBuffer=self.options.cost,
                gpuId=self.options.gpu_id,
            )
        except Exception as exc:
            raise UserError(f"nvof could not start: {_explain(exc)[1]}; use --backend dis") from exc
        self._size = (width, height)
        return self._session

    def compute(self, frame0: Any, frame1: Any) -> FlowResult:
        t0 = time.perf_counter()
        on_gpu = _is_gpumat(frame0)
        if on_gpu != _is_gpumat(frame1):
            raise ValueError("pass both frames as numpy arrays or both as GpuMat")
        if on_gpu:
            g0, g1 = self._gray_gpu(frame0), self._gray_gpu(frame1)
        else:
            g0, g1 = to_gray(frame0), to_gray(frame1)
        width, height = _size(g0)
        _check_sizes((width, height), _size(g1))
        session = self._open(width, height)
        t1 = time.perf_counter()
        try:
            raw, cost = session.calc(g0, g1, None)
        except Exception as exc:
            raise UserError(f"nvof failed: {_explain(exc)[1]}; use --backend dis") from exc
        t2 = time.perf_counter()
        flow, out_grid = self._to_pixels(raw, height, width, on_gpu)
        t3 = time.perf_counter()
        cost_px, cost_grid = self._cost(cost, height, width) if self.options.cost else (None, None)
        grid = cost_grid or max(out_grid, int(session.getGridSize()))
        note = (
            f"asked for grid {self.options.grid}, the accelerator used {grid}"
            if grid != self.options.grid
            else ""
        )
        timings = {"prepare": _ms(t0, t1), "calc": _ms(t1, t2), "convert": _ms(t2, t3), "total": _ms(t0, t3)}
        return FlowResult(flow, self.name, self.device, timings, grid, cost_px, note)

    def _gray_gpu(self, frame: Any) -> Any:
        if frame.channels() == 1:
            return frame
        return self._cv.cuda.cvtColor(frame, cv2.COLOR_RGB2GRAY)

    def _to_pixels(self, raw: Any, height: int, width: int, on_gpu: bool) -> tuple[np.ndarray, int]:
        """S10.5 int16 vectors at the output grid -> float32 px, H x W x 2, and that grid."""
        if not on_gpu:
            vectors = np.asarray(raw, dtype=np.int16)
            grid = _grid_of(vectors.shape[:2], height, width)
            return upsample_grid(vectors.astype(np.float32) * np.float32(_S10_5), grid, height, width), grid
        w_out, h_out = raw.size()
        grid = _grid_of((h_out, w_out), height, width)
        pixels = raw.convertTo(cv2.CV_32FC2, alpha=_S10_5, beta=0.0)
        resize = getattr(self._cv.cuda, "resize", None)
        if grid > 1 and resize is not None:
            pixels = resize(pixels, (w_out * grid, h_out * grid), interpolation=cv2.INTER_LINEAR)
            return np.asarray(pixels.download(), np.float32)[:height, :width], grid
        return upsample_grid(np.asarray(pixels.download(), np.float32), grid, height, width), grid

    def _cost(self, cost: Any, height: int, width: int) -> tuple[np.ndarray | None, int | None]:
        if cost is None:
            return None, None
        c: np.ndarray = np.asarray(cost.download() if _is_gpumat(cost) else cost)
        if c.size == 0:
            return None, None
        rows, cols = c.shape[:2]
        c = c.reshape(rows, cols).view(np.uint8)  # CV_8SC1 wrapper around a UINT8 buffer
        grid = _grid_of((rows, cols), height, width)
        return np.repeat(np.repeat(c, grid, axis=0), grid, axis=1)[:height, :width], grid

    def close(self) -> None:
        if self._session is not None:
            self._session.collectGarbage()
        self._session, self._size = None, None


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


# --- Benchmark -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlowBenchRecord:
    spec: str
    backend: str
    preset: str | None
    height: int
    width: int
    device: str
    median_ms: float | None
    p90_ms: float | None
    grid: int = 1
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}


def run_flow_bench(
    specs: list[str],
    sizes: list[tuple[int, int]],
    repeat: int = 5,
    warmup: int = 1,
    frames: Callable[[int, int], tuple[np.ndarray, np.ndarray]] | None = None,
    cv: Any = None,
) -> list[FlowBenchRecord]:
    """Median and p90 latency of each backend spec (see ``parse_backend_spec``) at each size.

    A backend that cannot run here gives a record without times and the reason in ``note``.
    """
    parsed = [(spec, *parse_backend_spec(spec)) for spec in specs]  # bad specs fail before timing
    records = []
    for height, width in sizes:
        frame0, frame1 = (frames or _bench_frames)(height, width)
        for spec, name, options in parsed:
            try:
                backend, _ = create_flow_backend(name, options, cv)
            except UserError as exc:  # the backend cannot run here (specs were checked above)
                records.append(
                    FlowBenchRecord(spec, name, options.preset, height, width, "", None, None, note=str(exc))
                )
                continue
            try:
                result, times = _time_flow(backend, frame0, frame1, repeat, warmup)
            finally:
                backend.close()
            records.append(
                FlowBenchRecord(
                    spec,
                    backend.name,
                    backend.preset,
                    height,
                    width,
                    backend.device,
                    float(np.median(times)),
                    float(np.percentile(times, 90)),
                    result.grid,
                    result.note,
                )
            )
    return records


def _bench_frames(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The depth benchmark's demo pair: its horizontal motion stands in for camera motion."""
    from app.engine.bench import bench_images

    return bench_images(height, width)


def _time_flow(
    backend: FlowBackend, frame0: np.ndarray, frame1: np.ndarray, repeat: int, warmup: int
) -> tuple[FlowResult, list[float]]:
    for _ in range(warmup):
        backend.compute(frame0, frame1)
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        result = backend.compute(frame0, frame1)
        times.append(_ms(t0, time.perf_counter()))
    return result, times


def flow_bench_table(records: list[FlowBenchRecord]) -> str:
    """Plain-text table of flow latency; backends that cannot run here say why."""
    lines = [
        f"{'flow':<14} {'backend':<9} {'preset':<9} {'size':>9} {'device':<7} {'grid':>4} "
        f"{'median':>9} {'p90':>9}"
    ]
    for r in records:
        size = f"{r.height}x{r.width}"
        if r.median_ms is None or r.p90_ms is None:
            lines.append(f"{r.spec:<14} {r.backend:<9} {'-':<9} {size:>9} unavailable: {r.note}")
            continue
        lines.append(
            f"{r.spec:<14} {r.backend:<9} {r.preset or '-':<9} {size:>9} {r.device:<7} {r.grid:>4} "
            f"{r.median_ms:>9.1f} {r.p90_ms:>9.1f}"
        )
    return "\n".join(lines)
