"""TensorRT runtime against a fake ``tensorrt`` module (the real one needs an NVIDIA GPU):
profiles, precision, the engine and timing caches, staleness, progress, and results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from app.engine.bi3d.factory import build_model
from app.engine.runtimes.base import RuntimeFailed, RuntimeUnavailable
from app.engine.runtimes.tensorrt_runtime import TensorRTRuntime, onnx_files, open_tensorrt, symbol_sizes
from app.engine.runtimes.verify import FP32_TOLERANCE, compare_with_torch

CPU = torch.device("cpu")
SIZE = (192, 288)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    return build_model("binary", 0.25).eval()


@pytest.fixture(scope="module")
def exported(model, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """The fp32 ONNX files, exported once for the module."""
    root = tmp_path_factory.mktemp("exported")
    onnx_files(model, "fp32", root, lambda _: None)
    return root / "onnx"


@pytest.fixture(autouse=True)
def _onnx_in_cache(exported: Path, cache: Path) -> None:
    shutil.copytree(exported, cache / "onnx")


def _runtime(model, trt, cache: Path, precision: str = "fp32", messages: list[str] | None = None):  # type: ignore[no-untyped-def]
    report = (messages if messages is not None else []).append
    return TensorRTRuntime(
        model, CPU, precision, trt, "Fake GPU sm90", root=cache, report=report, max_planes=4
    )


def test_engines_run_and_match_torch(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    trt = fake_trt("10.9.0")
    runtime = _runtime(model, trt, cache)
    agreement = compare_with_torch(model, runtime, SIZE, planes=3)
    assert agreement.probabilities < FP32_TOLERANCE
    assert trt.calls["builds"] == 3  # featnet, segnet, refine
    assert trt.calls["cleared"] == ["TF32", "TF32", "TF32"]  # fp32 means fp32, not TF32
    assert runtime.describe().startswith("tensorrt 10.9.0 on Fake GPU sm90, fp32")


def test_profiles_fix_the_frame_size_and_range_the_planes(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    trt = fake_trt()
    _runtime(model, trt, cache).prepare(*SIZE)
    featnet, segnet, refine = trt.calls["profiles"]
    assert featnet["left"] == ((1, 3, 192, 288),) * 3
    c = model.featnet.out_channels
    assert segnet["feat_left"] == ((1, c, 64, 96),) * 3
    assert segnet["shifts"] == ((1,), (4,), (4,))  # max_planes=4
    assert refine["lowres"][0] == (1, 1, 64, 96) and refine["lowres"][2] == (1, 65, 64, 96)
    assert symbol_sizes(192, 288, 64, light=True)["out_width"] == 48


def test_engine_cache_reuses_and_rebuilds_what_is_stale(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    trt = fake_trt()
    _runtime(model, trt, cache).prepare(*SIZE)
    assert trt.calls["builds"] == 3
    _runtime(model, trt, cache).prepare(*SIZE)
    assert trt.calls["builds"] == 3  # all three engines came from the cache
    timing = list((cache / "tensorrt").glob("timing-10.9.0-Fake_GPU_sm90.cache"))
    assert timing and timing[0].read_bytes().endswith(b"+")

    segnet = next((cache / "tensorrt").glob("segnet-*.json"))
    fields = json.loads(segnet.read_text())
    segnet.write_text(json.dumps(fields | {"gpu": "another GPU"}))  # a foreign side file
    refine = next((cache / "tensorrt").glob("refine-*.engine"))
    refine.write_bytes(b"not an engine")
    messages: list[str] = []
    runtime = _runtime(model, trt, cache, messages=messages)
    notes = runtime.prepare(*SIZE)
    assert trt.calls["builds"] == 5
    assert any("built for gpu another GPU" in n and n.endswith("rebuilt") for n in notes)
    assert any("TensorRT could not read it; rebuilt" in n for n in notes)
    assert compare_with_torch(model, runtime, SIZE, planes=2).probabilities < FP32_TOLERANCE


def test_a_new_tensorrt_version_builds_new_engines(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    _runtime(model, fake_trt("10.9.0"), cache).prepare(*SIZE)
    newer = fake_trt("10.13.0")
    _runtime(model, newer, cache).prepare(*SIZE)
    assert newer.calls["builds"] == 3


def test_build_progress_is_reported(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    messages: list[str] = []
    _runtime(model, fake_trt(), cache, messages=messages).prepare(*SIZE)
    assert any("building the segnet engine (fp32); this takes minutes" in m for m in messages)
    assert any(m == "segnet: Building engine" for m in messages)  # from the IProgressMonitor
    assert any(m.startswith("built the refine engine in") for m in messages)


def test_fp16_on_tensorrt_10_uses_the_builder_flag(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    trt = fake_trt("10.9.0")
    runtime = _runtime(model, trt, cache, "fp16")
    runtime.prepare(*SIZE)
    assert trt.calls["flags"] == ["FP16"] * 3 and trt.calls["network_flags"] == [0, 0, 0]
    assert compare_with_torch(model, runtime, SIZE, planes=2).probabilities < FP32_TOLERANCE  # fake runs fp32


def test_fp16_on_tensorrt_11_builds_an_fp16_graph_strongly_typed(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    trt = fake_trt("11.3.0")
    assert not hasattr(trt.BuilderFlag, "FP16")
    runtime = _runtime(model, trt, cache, "fp16")
    runtime.prepare(*SIZE)
    assert trt.calls["network_flags"] == [2, 2, 2] and trt.calls["flags"] == []
    assert all(p.name.endswith(".fp16.onnx") for p in runtime.onnx.values())
    runner = runtime.runners[("segnet", *SIZE)]
    assert runner.dtypes["feat_left"] == torch.float16 and runner.dtypes["shifts"] == torch.float32


def test_an_engine_without_fp16_layers_is_refused(model, fake_trt, cache: Path) -> None:  # type: ignore[no-untyped-def]
    trt = fake_trt("10.9.0")
    runtime = _runtime(model, trt, cache, "fp16")
    trt.drop_fp16 = True  # the builder ignores the flag
    with pytest.raises(RuntimeFailed, match="without fp16 layers"):
        runtime.prepare(*SIZE)


def test_tensorrt_missing_or_cpu_says_why(model) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(
        RuntimeUnavailable, match=r"TensorRT is not installed \(pip install '\.\[gpu\]'\)|--device cuda"
    ):
        open_tensorrt(model, CPU, "fp16")
    with pytest.raises(RuntimeUnavailable, match="fp32 or fp16"):
        TensorRTRuntime(model, CPU, "bf16", object(), "gpu")
