"""TensorRT: the exported stages as engines built for the frame size in use, run on torch CUDA
tensors with ``execute_async_v3`` on torch's current stream.

Engines are built (or read from the cache) at the first frame of a size; the plane pass takes
up to ``max_planes`` planes a call (the engine chunks to that). Shapes as in ``runtimes.base``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from app.engine.bi3d.model import FEATURE_STRIDE, SweepModel
from app.engine.runtimes.base import RuntimeFailed, RuntimeUnavailable
from app.engine.runtimes.cache import cache_root
from app.engine.runtimes.graphs import stages
from app.engine.runtimes.onnx_export import check_onnx, import_onnx, model_fingerprint, write_onnx
from app.engine.runtimes.staged import StagedRuntime
from app.engine.runtimes.tensorrt_build import BuildSpec, Report, Shape, load_or_build, strongly_typed


def stderr_report(message: str) -> None:
    print(f"TensorRT: {message}", file=sys.stderr, flush=True)


def symbol_sizes(height: int, width: int, max_shift: int, light: bool) -> dict[str, int]:
    """Values of the ONNX graphs' named dimensions for one padded frame size."""
    h, w = height // FEATURE_STRIDE, width // FEATURE_STRIDE
    out = (h // 2, w // 2) if light else (h, w)
    return {
        "batch": 1,
        "height": height,
        "width": width,
        "grid_height": h,
        "grid_width": w,
        "sweep_width": w + max_shift,
        "half_height": h // 2,
        "half_width": w // 2,
        "out_height": out[0],
        "out_width": out[1],
    }


def onnx_files(model: SweepModel, precision: str, root: Path, report: Report) -> dict[str, Path]:
    """The model's ONNX stages in the cache, exported once; a file that does not fit is replaced."""
    fingerprint = model_fingerprint(model)
    folder = root / "onnx" / fingerprint[:24]
    suffix = ".onnx" if precision == "fp32" else f".{precision}.onnx"
    names = [s.name for s in stages(model)]
    paths = {name: folder / f"{name}{suffix}" for name in names}
    try:
        for name, path in paths.items():
            if path.is_file():
                check_onnx(path, model, name, precision, fingerprint)
        if all(p.is_file() for p in paths.values()):
            return paths
    except RuntimeUnavailable as exc:
        report(f"{exc}; exporting again")
    write_onnx(model, folder, precision)
    return paths


class EngineRunner:
    """One engine's execution context; inputs and outputs are torch tensors on the GPU."""

    def __init__(self, trt: Any, engine: Any, device: torch.device) -> None:
        self.engine, self.device = engine, device
        self.context = engine.create_execution_context()
        if self.context is None:
            raise RuntimeFailed("TensorRT could not create an execution context (GPU memory?)")
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        self.inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self.outputs = [n for n in names if n not in self.inputs]
        table = {trt.DataType.FLOAT: torch.float32, trt.DataType.HALF: torch.float16}
        table |= {trt.DataType.INT32: torch.int32, trt.DataType.INT64: torch.int64}
        self.dtypes = {n: table[engine.get_tensor_dtype(n)] for n in names}

    def __call__(self, feeds: dict[str, Tensor]) -> dict[str, Tensor]:
        kept = []
        for name in self.inputs:
            t = feeds[name].to(self.device, self.dtypes[name]).contiguous()
            kept.append(t)
            self.context.set_input_shape(name, tuple(t.shape))
            self.context.set_tensor_address(name, t.data_ptr())
        outputs = {}
        for name in self.outputs:
            shape = tuple(self.context.get_tensor_shape(name))
            out = torch.empty(shape, dtype=self.dtypes[name], device=self.device)
            self.context.set_tensor_address(name, out.data_ptr())
            outputs[name] = out
        stream = torch.cuda.current_stream(self.device).cuda_stream if self.device.type == "cuda" else 0
        if not self.context.execute_async_v3(stream):
            raise RuntimeFailed("TensorRT could not run the engine (see the log above)")
        return outputs


class TensorRTRuntime(StagedRuntime):
    name = "tensorrt"

    def __init__(
        self,
        model: SweepModel,
        device: torch.device,
        precision: str,
        trt: Any,
        gpu: str,
        root: Path | None = None,
        report: Report = stderr_report,
        max_planes: int = 32,
    ) -> None:
        if precision not in ("fp32", "fp16"):
            raise RuntimeUnavailable(f"TensorRT runs fp32 or fp16 here, not {precision}")
        super().__init__(device, precision, {s.name: s.inputs for s in stages(model)})
        self.trt, self.gpu, self.report = trt, gpu, report
        self.root = (root or cache_root()) / "tensorrt"
        self.logger = trt.Logger(trt.Logger.WARNING)
        self.runtime = trt.Runtime(self.logger)
        self.max_shift, self.light = model.max_shift, model.kind.value == "light"
        self.max_planes = self.segnet_max = max_planes
        self._dims: dict[str, dict[str, list[tuple[str, int]]]] = {}
        graph_precision = "fp16" if strongly_typed(trt, precision) else "fp32"
        try:
            self.onnx = onnx_files(model, graph_precision, self.root.parent, report)
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot write the cache {self.root.parent}: {exc.strerror}") from exc
        self.runners: dict[tuple[str, int, int], EngineRunner] = {}
        self.size = (0, 0)
        self.notes: list[str] = []
        self.engine_files: list[Path] = []

    @property
    def size_bytes(self) -> int:
        """Bytes of the engine files built or loaded so far (what this runtime holds)."""
        return sum(p.stat().st_size for p in self.engine_files if p.is_file())

    def features(self, left: Tensor, right: Tensor) -> Any:
        self.size = (int(left.shape[-2]), int(left.shape[-1]))
        self.prepare(*self.size)
        return super().features(left, right)

    def prepare(self, height: int, width: int) -> list[str]:
        """Build (or load) every stage's engine for a padded frame size; notes on rebuilds."""
        for stage in self.stage_inputs:
            if (stage, height, width) in self.runners:
                continue
            spec = BuildSpec(stage, self.onnx[stage], self.precision, self._profile(stage, height, width))
            try:
                engine, note, path = load_or_build(
                    self.trt, self.runtime, spec, self.root, self.gpu, self.report
                )
                self.runners[(stage, height, width)] = EngineRunner(self.trt, engine, self._device)
            except RuntimeUnavailable:
                raise
            except Exception as exc:  # the bindings raise RuntimeError, MemoryError, ...
                raise RuntimeFailed(f"TensorRT failed on the {stage} engine: {_first_line(exc)}") from exc
            if note:
                self.notes.append(note)
            self.engine_files.append(path)
        self.reason = "; ".join(self.notes)
        return self.notes

    def refine_planes(self, feats: Any, lowres: Tensor) -> Tensor:
        step = self._refine_max()
        parts = [super(TensorRTRuntime, self).refine_planes(feats, p) for p in lowres.split(step, dim=1)]
        return torch.cat(parts, dim=1)

    def _run(self, stage: str, feeds: dict[str, Tensor]) -> dict[str, Tensor]:
        try:
            return self.runners[(stage, *self.size)](feeds)
        except RuntimeUnavailable:
            raise
        except Exception as exc:  # a shape outside the profile, GPU out of memory, ...
            raise RuntimeFailed(f"TensorRT failed in {stage}: {_first_line(exc)}") from exc

    def _refine_max(self) -> int:
        return max(64, self.max_shift + 1)

    def _profile(self, stage: str, height: int, width: int) -> dict[str, tuple[Shape, Shape, Shape]]:
        """min / opt / max shapes of each input: the frame size fixed, the plane count a range."""
        sizes = symbol_sizes(height, width, self.max_shift, self.light)
        top = {"segnet": self.segnet_max, "regularise": self.max_shift + 1}.get(stage, self._refine_max())
        planes = (1, min(8, top), top)
        profile: dict[str, tuple[Shape, Shape, Shape]] = {}
        for name, dims in self._input_dims(stage).items():
            low, opt, high = (
                tuple(planes[i] if p == "planes" else sizes.get(p, v) for p, v in dims) for i in range(3)
            )
            profile[name] = (low, opt, high)
        return profile

    def _input_dims(self, stage: str) -> dict[str, list[tuple[str, int]]]:
        """Each input's dimensions as (name, value) pairs; read once per stage (files are large)."""
        if stage not in self._dims:
            graph = import_onnx().load(str(self.onnx[stage]), load_external_data=False).graph
            self._dims[stage] = {
                v.name: [(d.dim_param, d.dim_value) for d in v.type.tensor_type.shape.dim]
                for v in graph.input
            }
        return self._dims[stage]

    def describe(self) -> str:
        built = len(self.runners)
        return f"tensorrt {self.trt.__version__} on {self.gpu}, {self.precision} ({built} engines ready)"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def open_tensorrt(
    model: SweepModel,
    device: torch.device,
    precision: str,
    report: Report = stderr_report,
    max_planes: int = 32,
) -> TensorRTRuntime:
    """The TensorRT runtime if this machine can run it, else ``RuntimeUnavailable`` saying why."""
    from app.engine.runtimes.tensorrt_build import import_tensorrt

    trt = import_tensorrt()
    if device.type != "cuda":
        raise RuntimeUnavailable("TensorRT needs a CUDA device")
    if not torch.cuda.is_available():
        raise RuntimeUnavailable("TensorRT needs CUDA, which is not available on this machine")
    name = torch.cuda.get_device_name(device)
    major, minor = torch.cuda.get_device_capability(device)
    gpu = f"{name} sm{major}{minor}"
    return TensorRTRuntime(model, device, precision, trt, gpu, report=report, max_planes=max_planes)
