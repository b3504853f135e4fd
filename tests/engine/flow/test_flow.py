"""Optical flow: DIS accuracy on synthetic motion, .flo round-trips, and the nvof adapter and
probe against a fake that follows OpenCV's documented Python API for NvidiaOpticalFlow_2_0."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import cv2
import numpy as np
import pytest

from app.engine.errors import UserError
from app.engine.flow import base as fl
from app.engine.flow import choose, cpu
from app.engine.flow import nvof as nv
from app.engine.formats import read_flo, write_flo

MARGIN = 16  # "inside the image": borders see content that entered or left the frame


@pytest.fixture(scope="module")
def natural() -> np.ndarray:
    """A natural 192 x 256 gray image (scikit-image's astronaut, area-downsampled)."""
    skimage_data = pytest.importorskip("skimage.data")
    gray = cv2.cvtColor(skimage_data.astronaut(), cv2.COLOR_RGB2GRAY)
    return cv2.resize(gray, (256, 192), interpolation=cv2.INTER_AREA)


def warp(image: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``image`` moved by the 2 x 3 affine ``matrix`` and the exact flow from it to the result."""
    h, w = image.shape[:2]
    moved = cv2.warpAffine(image, matrix, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    u = matrix[0, 0] * xs + matrix[0, 1] * ys + matrix[0, 2] - xs
    v = matrix[1, 0] * xs + matrix[1, 1] * ys + matrix[1, 2] - ys
    return moved, np.stack([u, v], axis=2).astype(np.float32)


def epe(flow: np.ndarray, truth: np.ndarray) -> float:
    err = np.linalg.norm(flow - truth, axis=2)[MARGIN:-MARGIN, MARGIN:-MARGIN]
    return float(err.mean())


TRANSLATION = np.array([[1, 0, 0.45], [0, 1, -0.3]])  # sub-pixel
ROTATION = cv2.getRotationMatrix2D((127.5, 95.5), 1.5, 1.0)  # up to 2.5 px at the corners


@pytest.mark.parametrize("preset", ["fast", "medium"])
@pytest.mark.parametrize("motion", [TRANSLATION, ROTATION], ids=["subpixel-shift", "rotation"])
def test_dis_end_point_error_is_below_half_a_pixel(
    natural: np.ndarray, motion: np.ndarray, preset: str
) -> None:
    moved, truth = warp(natural, motion)
    result = cpu.DisFlow(preset).compute(natural, moved)
    assert result.flow.shape == (*natural.shape, 2) and result.flow.dtype == np.float32
    assert result.backend == "dis" and result.device == "cpu" and result.timings["total"] > 0
    assert epe(result.flow, truth) < 0.5


def test_farneback_follows_a_shift(natural: np.ndarray) -> None:
    moved, truth = warp(natural, TRANSLATION)
    assert epe(cpu.FarnebackFlow().compute(natural, moved).flow, truth) < 0.5


def test_rgb_frames_and_gray_frames_give_the_same_flow(natural: np.ndarray) -> None:
    moved, _ = warp(natural, TRANSLATION)
    rgb = [np.repeat(f[..., None], 3, axis=2) for f in (natural, moved)]
    np.testing.assert_array_equal(
        cpu.DisFlow().compute(*rgb).flow, cpu.DisFlow().compute(natural, moved).flow
    )


def test_flo_round_trip_of_computed_flow(natural: np.ndarray, tmp_path: Path) -> None:
    moved, _ = warp(natural, ROTATION)
    flow = cpu.DisFlow().compute(natural, moved).flow
    write_flo(tmp_path / "f.flo", flow)
    np.testing.assert_array_equal(read_flo(tmp_path / "f.flo"), flow)
    np.testing.assert_array_equal(cv2.readOpticalFlow(str(tmp_path / "f.flo")), flow)  # OpenCV agrees


def test_frames_of_different_sizes_are_a_user_error(natural: np.ndarray) -> None:
    with pytest.raises(UserError, match="differ in size"):
        cpu.DisFlow().compute(natural, natural[:-1])


def test_options_are_checked() -> None:
    with pytest.raises(UserError, match="grid"):
        fl.FlowOptions(grid=3)
    with pytest.raises(UserError, match="no preset 'slow'"):
        choose.create_flow_backend("dis", fl.FlowOptions(preset="slow"))
    with pytest.raises(UserError, match="unknown flow backend"):
        choose.create_flow_backend("raft")
    assert choose.parse_backend_spec("nvof:fast:4") == ("nvof", fl.FlowOptions("fast", 4))


def test_result_converts_to_the_flow_array(natural: np.ndarray) -> None:
    result = choose.create_flow("dis").compute(natural, natural)
    np.testing.assert_array_equal(np.asarray(result), result.flow)


def test_this_opencv_build_reports_why_nvof_is_missing() -> None:
    if nv.opencv_has_cuda(cv2):
        pytest.skip("this OpenCV has CUDA")
    probe = nv.probe_nvof()
    assert not probe.available and probe.code == "no_cuda_build" and "CPU-only" in probe.reason
    backend, reason = choose.create_flow_backend("auto")
    assert backend.name == "dis" and "built without CUDA" in reason
    with pytest.raises(UserError, match="nvof is not available"):
        choose.create_flow_backend("nvof")


# --- a fake OpenCV with the documented NvidiaOpticalFlow_2_0 Python API ---------------------


class FakeCvError(Exception):
    """Stands in for cv2.error: OpenCV formats its message as below."""

    def __init__(self, text: str) -> None:
        super().__init__(f"OpenCV(4.10.0) nvidiaOpticalFlow.cpp:240: error: (-6:Unknown) {text}\n")


class FakeGpuMat:
    """The parts of cv2.cuda.GpuMat the adapter may touch; records conversions."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.calls: list[tuple[Any, ...]] = []

    def size(self) -> tuple[int, int]:
        return self.array.shape[1], self.array.shape[0]

    def channels(self) -> int:
        return 1 if self.array.ndim == 2 else self.array.shape[2]

    def download(self) -> np.ndarray:
        return self.array.copy()

    def convertTo(self, rtype: int, dst: Any = None, alpha: float = 1.0, beta: float = 0.0) -> FakeGpuMat:
        assert rtype == cv2.CV_32FC2
        out = FakeGpuMat(self.array.astype(np.float32) * alpha + beta)
        out.calls = [*self.calls, ("convertTo", alpha)]
        return out


def truth(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The motion the fake hardware 'measures': smooth, varies across the frame."""
    return np.stack([0.05 * xs + 0.5, -0.03 * ys + 1.25], axis=-1)


class FakeNvof:
    """NvidiaOpticalFlow_2_0 as documented: S10.5 int16 vectors at the output grid."""

    sessions: ClassVar[list[FakeNvof]] = []

    def __init__(
        self,
        imageSize: tuple[int, int],
        perfPreset: int = 5,
        outputGridSize: int = 1,
        hintGridSize: int = 1,
        enableTemporalHints: bool = False,
        enableExternalHints: bool = False,
        enableCostBuffer: bool = False,
        gpuId: int = 0,
        inputStream: Any = None,
        outputStream: Any = None,
        *,
        hardware_grids: tuple[int, ...] = (1, 2, 4),
        upsample_to_request: bool = True,
    ) -> None:
        self.args = dict(
            imageSize=imageSize,
            perfPreset=perfPreset,
            outputGridSize=outputGridSize,
            hintGridSize=hintGridSize,
            enableTemporalHints=enableTemporalHints,
            enableExternalHints=enableExternalHints,
            enableCostBuffer=enableCostBuffer,
            gpuId=gpuId,
        )
        assert outputGridSize in (1, 2, 4) and perfPreset in (5, 10, 20)
        self.hw_grid = min(g for g in hardware_grids if g >= outputGridSize)
        # OpenCV 4.x/5.x source upsamples to the request and reports it; the other case stands
        # for a build that hands back the hardware grid
        self.grid = outputGridSize if upsample_to_request else self.hw_grid
        self.released = False
        FakeNvof.sessions.append(self)

    def _vectors(self, grid: int) -> np.ndarray:
        w, h = self.args["imageSize"]
        ys, xs = np.mgrid[0 : -(-h // grid), 0 : -(-w // grid)] * grid + (grid - 1) / 2
        return np.rint(truth(xs, ys) * 32).astype(np.int16)  # S10.5

    def calc(
        self,
        inputImage: Any,
        referenceImage: Any,
        flow: Any,
        stream: Any = None,
        hint: Any = None,
        cost: Any = None,
    ) -> tuple[Any, Any]:
        assert not self.released
        on_gpu = isinstance(inputImage, FakeGpuMat)
        for image in (inputImage, referenceImage):
            a = image.array if on_gpu else image
            assert a.dtype == np.uint8 and a.ndim == 2, "NVOF takes 8-bit gray"
            assert (a.shape[1], a.shape[0]) == self.args["imageSize"]
        vectors = self._vectors(self.hw_grid)
        if self.grid != self.hw_grid:  # nearest-neighbour like OpenCV's FlowUpsample kernel
            k = self.hw_grid // self.grid
            shape = self._vectors(self.grid).shape
            vectors = np.repeat(np.repeat(vectors, k, axis=0), k, axis=1)[: shape[0], : shape[1]]
        cost_out = None
        if self.args["enableCostBuffer"]:
            cost_out = np.full(self._vectors(self.hw_grid).shape[:2], -3, np.int8)  # CV_8SC1 over UINT8
        if on_gpu:
            return FakeGpuMat(vectors), None if cost_out is None else FakeGpuMat(cost_out)
        return vectors, cost_out

    def convertToFloat(self, flow: Any, floatFlow: Any) -> np.ndarray:
        a = flow.download() if isinstance(flow, FakeGpuMat) else np.asarray(flow)
        return a.astype(np.float32) / 32

    def getGridSize(self) -> int:
        return self.grid

    def collectGarbage(self) -> None:
        self.released = True


def fake_cv(
    *,
    build: str = "  NVIDIA CUDA:                   YES (ver 12.4, CUFFT CUBLAS)\n",
    devices: int = 1,
    capability: tuple[int, int] = (8, 6),
    spelling: str = "method",
    create_error: str | None = None,
    gpu_resize: bool = True,
    **session: Any,
) -> SimpleNamespace:
    def create(*args: Any, **kwargs: Any) -> FakeNvof:
        if create_error:
            raise FakeCvError(create_error)
        return FakeNvof(*args, **kwargs, **session)

    resized: list[tuple[int, int]] = []

    def resize(src: FakeGpuMat, dsize: tuple[int, int], interpolation: int = cv2.INTER_LINEAR) -> FakeGpuMat:
        resized.append(dsize)
        out = FakeGpuMat(cv2.resize(src.array, dsize, interpolation=interpolation))
        out.calls = [*src.calls, ("resize", dsize)]
        return out

    cuda = SimpleNamespace(
        getCudaEnabledDeviceCount=lambda: devices,
        DeviceInfo=lambda i: SimpleNamespace(
            majorVersion=lambda: capability[0], minorVersion=lambda: capability[1]
        ),
        GpuMat=FakeGpuMat,
        NvidiaOpticalFlow_2_0_NV_OF_PERF_LEVEL_SLOW=5,
        NvidiaOpticalFlow_2_0_NV_OF_PERF_LEVEL_MEDIUM=10,
        NvidiaOpticalFlow_2_0_NV_OF_PERF_LEVEL_FAST=20,
        resized=resized,
    )
    if gpu_resize:
        cuda.resize = resize
    if spelling == "method":
        cuda.NvidiaOpticalFlow_2_0 = SimpleNamespace(create=create, NV_OF_OUTPUT_VECTOR_GRID_SIZE_4=4)
    elif spelling == "function":
        cuda.NvidiaOpticalFlow_2_0_create = create
    return SimpleNamespace(__version__="4.10.0", getBuildInformation=lambda: build, cuda=cuda)


@pytest.fixture(autouse=True)
def _fresh_sessions() -> None:
    FakeNvof.sessions = []


def frames(h: int = 50, w: int = 70) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(0, 255, (h, w, 3), dtype=np.uint8), rng.integers(0, 255, (h, w, 3), dtype=np.uint8)


def expected(h: int, w: int) -> np.ndarray:
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    return truth(xs, ys).astype(np.float32)


@pytest.mark.parametrize("spelling", ["method", "function"])
def test_nvof_calls_create_as_documented(spelling: str) -> None:
    cv = fake_cv(spelling=spelling)
    backend = nv.NvofFlow(fl.FlowOptions("fast", 2, temporal_hints=True, cost=True, gpu_id=0), cv)
    backend.compute(*frames(50, 70))
    assert FakeNvof.sessions[-1].args == {
        "imageSize": (70, 50),  # (width, height)
        "perfPreset": 20,
        "outputGridSize": 2,
        "hintGridSize": 2,
        "enableTemporalHints": True,
        "enableExternalHints": False,
        "enableCostBuffer": True,
        "gpuId": 0,
    }


def test_nvof_converts_s10_5_at_grid_1_exactly() -> None:
    session_cv = fake_cv()
    result = nv.NvofFlow(fl.FlowOptions(grid=1), session_cv).compute(*frames(50, 70))
    raw = FakeNvof.sessions[-1]._vectors(1)
    np.testing.assert_array_equal(result.flow, FakeNvof.sessions[-1].convertToFloat(raw, None))
    np.testing.assert_allclose(result.flow, expected(50, 70), atol=1 / 64)
    assert result.flow.dtype == np.float32 and result.grid == 1 and result.device == "cuda:0"
    assert set(result.timings) >= {"calc", "convert", "total"}


@pytest.mark.parametrize("grid", [2, 4])
@pytest.mark.parametrize("on_gpu", [False, True], ids=["numpy", "gpumat"])
def test_nvof_upsamples_grid_vectors_to_pixels(grid: int, on_gpu: bool) -> None:
    cv = fake_cv()
    f0, f1 = (cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames(50, 70))
    inputs = (FakeGpuMat(f0), FakeGpuMat(f1)) if on_gpu else (f0, f1)
    result = nv.NvofFlow(fl.FlowOptions(grid=grid), cv).compute(*inputs)
    assert result.flow.shape == (50, 70, 2) and result.grid == grid
    # linear motion: bilinear upsampling between block centres is exact away from the border
    inner = (slice(grid, 50 - 2 * grid), slice(grid, 70 - 2 * grid))
    np.testing.assert_allclose(result.flow[inner], expected(50, 70)[inner], atol=1 / 32)
    gpu_resizes = [(72, 52)] if grid == 4 else [(70, 50)]  # whole blocks, cropped after download
    assert cv.cuda.resized == (gpu_resizes if on_gpu else [])


def test_nvof_gpumat_path_converts_on_the_gpu_and_matches_numpy() -> None:
    cv = fake_cv(gpu_resize=False)  # no cv2.cuda.resize: download, then upsample on the CPU
    f0, f1 = (cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames(50, 70))
    gpu = nv.NvofFlow(fl.FlowOptions(grid=4), cv).compute(FakeGpuMat(f0), FakeGpuMat(f1))
    cpu = nv.NvofFlow(fl.FlowOptions(grid=4), fake_cv()).compute(f0, f1)
    np.testing.assert_allclose(gpu.flow, cpu.flow, atol=1e-6)


def test_nvof_reports_the_grid_the_accelerator_used() -> None:
    # the GPU only has a 4 px grid: OpenCV upsamples to the request, the cost buffer tells
    cv = fake_cv(hardware_grids=(4,))
    result = nv.NvofFlow(fl.FlowOptions(grid=1, cost=True), cv).compute(*frames(50, 70))
    assert result.grid == 4 and "used 4" in result.note
    assert result.cost is not None and result.cost.shape == (50, 70) and result.cost.dtype == np.uint8
    assert int(result.cost[0, 0]) == 253  # the UINT8 byte behind CV_8SC1's -3
    # builds that return the hardware grid directly: the shape tells, and we still fill every pixel
    older = fake_cv(hardware_grids=(4,), upsample_to_request=False)
    result = nv.NvofFlow(fl.FlowOptions(grid=1), older).compute(*frames(50, 70))
    assert result.grid == 4 and result.flow.shape == (50, 70, 2)


def test_nvof_session_follows_the_frame_size_and_is_released() -> None:
    backend = nv.NvofFlow(fl.FlowOptions(), fake_cv())
    backend.compute(*frames(50, 70))
    backend.compute(*frames(50, 70))
    assert len(FakeNvof.sessions) == 1
    backend.compute(*frames(40, 64))
    assert len(FakeNvof.sessions) == 2 and FakeNvof.sessions[0].released
    backend.close()
    assert FakeNvof.sessions[1].released


def test_auto_picks_nvof_when_the_probe_passes() -> None:
    backend, reason = choose.create_flow_backend("auto", cv=fake_cv())
    assert backend.name == "nvof" and "compute capability 8.6" in reason
    assert FakeNvof.sessions[0].released  # the probe's own session is given back


PROBES = [
    (dict(build="  NVIDIA CUDA: NO\n"), "no_cuda_build", "built without CUDA"),
    (dict(spelling="none"), "no_flow_module", "no cv2.cuda.NvidiaOpticalFlow_2_0"),
    (dict(devices=-1), "no_driver", "driver is missing"),
    (dict(devices=0), "no_device", "no CUDA device"),
    (dict(capability=(7, 0)), "no_accelerator", "needs Turing"),
    (
        dict(create_error="Cannot find NvOF library. in function 'LoadNvidiaModules'"),
        "no_library",
        "libnvidia-opticalflow.so.1",
    ),
    (dict(create_error="Cannot find Cuda library. in function 'LoadNvidiaModules'"), "no_library", "libcuda"),
    (
        dict(
            create_error="GetAPI()->nvCreateOpticalFlowCuda(m_cuContext, &m_hOF) returned error 1:"
            "NV_OF_ERR_OF_NOT_AVAILABLE"
        ),
        "no_accelerator",
        "no Optical Flow Accelerator",
    ),
    (
        dict(
            create_error="LoadNvidiaModulesObj.GetOFLibraryFunctionPtr()(NV_OF_API_VERSION, m_ofAPI.get()) "
            "returned error 7:NV_OF_ERR_INVALID_VERSION"
        ),
        "old_driver",
        "too old",
    ),
    (dict(create_error="OpenCV was build without NVIDIA OpticalFlow support"), "no_nvof_sdk", "SDK"),
]


@pytest.mark.parametrize(
    ("setup", "code", "needle"), PROBES, ids=[p[1] + str(i) for i, p in enumerate(PROBES)]
)
def test_probe_gives_a_distinct_readable_reason(setup: dict[str, Any], code: str, needle: str) -> None:
    probe = nv.probe_nvof(fake_cv(**setup))
    assert not probe.available and probe.code == code and needle in probe.reason
    assert "\n" not in probe.reason
    backend, reason = choose.create_flow_backend("auto", cv=fake_cv(**setup))
    assert backend.name == "dis" and probe.reason in reason


def test_probe_passes_on_a_turing_gpu() -> None:
    probe = nv.probe_nvof(fake_cv(capability=(7, 5)))
    assert probe.available and probe.code == "ok"
