"""The NVIDIA Optical Flow Accelerator through OpenCV's ``cv2.cuda.NvidiaOpticalFlow_2_0``:
the start-up probe and the ``nvof`` backend (see ``app.engine.flow.base`` for the interface).

The OpenCV module used for CUDA is injectable (``cv=``) so tests can put a fake in its place;
CPU-side image work always uses the real ``cv2``.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from app.engine.errors import UserError, setting
from app.engine.flow.base import FlowOptions, FlowResult, check_sizes, elapsed_ms, to_gray

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
            raise UserError(
                f"this OpenCV has no cv2.cuda.NvidiaOpticalFlow_2_0; use {setting('flow', 'dis')}"
            )
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
            raise UserError(
                f"nvof could not start: {_explain(exc)[1]}; use {setting('flow', 'dis')}"
            ) from exc
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
        check_sizes((width, height), _size(g1))
        session = self._open(width, height)
        t1 = time.perf_counter()
        try:
            raw, cost = session.calc(g0, g1, None)
        except Exception as exc:
            raise UserError(f"nvof failed: {_explain(exc)[1]}; use {setting('flow', 'dis')}") from exc
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
        timings = {
            "prepare": elapsed_ms(t0, t1),
            "calc": elapsed_ms(t1, t2),
            "convert": elapsed_ms(t2, t3),
            "total": elapsed_ms(t0, t3),
        }
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
