"""Building TensorRT engines from the exported ONNX stages, with an engine cache and a timing cache.

An engine is kept under a key made of the TensorRT version, the GPU, the ONNX file's sha256,
the optimisation profile and the precision; a side file repeats those fields and is compared
on load, so a stale or foreign engine is rebuilt, never used. Precision: on TensorRT 10 fp16
comes from the builder flag (and TF32 is cleared for fp32); TensorRT 11 removed those flags,
so fp16 comes from an fp16 ONNX graph built strongly typed. Either way the built engine is
checked to really hold fp16 layers. Building takes minutes; progress goes to ``report``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from app.engine.runtimes.base import RuntimeFailed, optional_module
from app.engine.runtimes.cache import write_cached

Shape = tuple[int, ...]
Report = Callable[[str], None]
ENGINE_FORMAT = "bi3d-studio-trt-1"


def import_tensorrt() -> ModuleType:
    return optional_module("tensorrt", "TensorRT is not installed (pip install '.[gpu]')")


def trt_major(trt: Any) -> int:
    return int(str(trt.__version__).split(".")[0])


def strongly_typed(trt: Any, precision: str) -> bool:
    """TensorRT 11 builds fp16 from an fp16 graph (strong typing); 10 uses the builder flag."""
    return precision == "fp16" and trt_major(trt) >= 11


@dataclass(frozen=True)
class BuildSpec:
    """One stage's engine: its ONNX file, precision and optimisation profile (min, opt, max)."""

    stage: str
    onnx: Path
    precision: str
    profile: dict[str, tuple[Shape, Shape, Shape]]

    def key_fields(self, trt: Any, gpu: str) -> dict[str, Any]:
        return {
            "format": ENGINE_FORMAT,
            "tensorrt": str(trt.__version__),
            "gpu": gpu,
            "onnx_sha256": hashlib.sha256(self.onnx.read_bytes()).hexdigest(),
            "stage": self.stage,
            "precision": self.precision,
            "profile": {k: [list(s) for s in v] for k, v in sorted(self.profile.items())},
        }


def engine_paths(root: Path, spec: BuildSpec, fields: dict[str, Any]) -> tuple[Path, Path]:
    key = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:20]
    base = root / f"{spec.stage}-{spec.precision}-{key}"
    return base.with_suffix(".engine"), base.with_suffix(".json")


def load_or_build(
    trt: Any, runtime: Any, spec: BuildSpec, root: Path, gpu: str, report: Report
) -> tuple[Any, str, Path]:
    """A deserialised engine for ``spec``, a note ("" when the cache held a good one) and its file."""
    fields = spec.key_fields(trt, gpu)
    engine_path, meta_path = engine_paths(root, spec, fields)
    note = ""
    if engine_path.is_file():
        problem = _cached_problem(meta_path, fields)
        engine = None if problem else runtime.deserialize_cuda_engine(engine_path.read_bytes())
        if engine is not None:
            check_precision(trt, engine, spec)
            return engine, "", engine_path
        note = f"{engine_path.name}: {problem or 'TensorRT could not read it'}; rebuilt"
        report(note)
    data = build_serialized(
        trt, spec, root / f"timing-{_slug(fields['tensorrt'])}-{_slug(gpu)}.cache", report
    )
    engine = runtime.deserialize_cuda_engine(data)
    if engine is None:
        raise RuntimeFailed(f"TensorRT could not load the {spec.stage} engine it just built")
    check_precision(trt, engine, spec)
    write_cached(engine_path, data)
    write_cached(meta_path, json.dumps(fields, indent=1).encode())
    return engine, note, engine_path


def _cached_problem(meta_path: Path, fields: dict[str, Any]) -> str:
    try:
        stored = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return "no readable description beside it"
    for name, want in fields.items():
        if stored.get(name) != want:
            return f"built for {name} {stored.get(name)!s:.60}, not {want!s:.60}"
    return ""


def build_serialized(trt: Any, spec: BuildSpec, timing_path: Path, report: Report) -> bytes:
    """Parse the ONNX file, set precision, profile and timing cache, build; bytes of the plan."""
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    flags = 0
    if strongly_typed(trt, spec.precision) and hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED"):
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(spec.onnx.read_bytes()):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise RuntimeFailed(f"TensorRT could not parse {spec.onnx.name}: {errors[:200]}")
    config = builder.create_builder_config()
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED  # lets check_precision read layers
    if spec.precision == "fp16" and not strongly_typed(trt, spec.precision):
        config.set_flag(trt.BuilderFlag.FP16)
    elif spec.precision == "fp32" and hasattr(trt.BuilderFlag, "TF32"):
        config.clear_flag(trt.BuilderFlag.TF32)  # TensorRT 10 allows TF32 by default
    profile = builder.create_optimization_profile()
    for name, (low, opt, high) in spec.profile.items():
        profile.set_shape(name, low, opt, high)
    config.add_optimization_profile(profile)
    timing = config.create_timing_cache(timing_path.read_bytes() if timing_path.is_file() else b"")
    config.set_timing_cache(timing, False)
    monitor = progress_monitor(trt, spec.stage, report)
    if monitor is not None:
        config.progress_monitor = monitor
    report(f"building the {spec.stage} engine ({spec.precision}); this takes minutes the first time")
    start = time.monotonic()
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeFailed(
            f"TensorRT could not build the {spec.stage} engine (GPU memory or an unsupported layer)"
        )
    write_cached(timing_path, bytes(config.get_timing_cache().serialize()))
    report(f"built the {spec.stage} engine in {time.monotonic() - start:.0f} s")
    return bytes(serialized)


def check_precision(trt: Any, engine: Any, spec: BuildSpec) -> None:
    """Refuse an engine that claims fp16 but holds no fp16 tensors or layers."""
    if spec.precision != "fp16":
        return
    if strongly_typed(trt, spec.precision):
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        half = any(engine.get_tensor_dtype(n) == trt.DataType.HALF for n in names)
    else:
        info = engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON)
        half = "half" in info.lower() or "fp16" in info.lower()
    if not half:
        raise RuntimeFailed(
            f"the {spec.stage} engine was built without fp16 layers; not reporting it as fp16"
        )


def progress_monitor(trt: Any, stage: str, report: Report) -> Any | None:
    """A ``trt.IProgressMonitor`` that reports top-level phases and, every 10 s, the current step."""
    base = getattr(trt, "IProgressMonitor", None)
    if base is None:
        return None

    class Monitor(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.steps: dict[str, int] = {}
            self.last = time.monotonic()

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            self.steps[phase_name] = num_steps
            if parent_phase is None:
                report(f"{stage}: {phase_name}")

        def step_complete(self, phase_name: str, step: int) -> bool:
            now = time.monotonic()
            if now - self.last >= 10:
                self.last = now
                report(f"{stage}: {phase_name} {step + 1}/{self.steps.get(phase_name, '?')}")
            return True  # False would cancel the build

        def phase_finish(self, phase_name: str) -> None:
            self.steps.pop(phase_name, None)

    return Monitor()


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in text)[:60]
