"""Choosing runtimes: named ones with fallback and reasons, auto timing, failures mid-frame."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from app.engine.bi3d.factory import build_model
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.depth.engines import EngineOptions, build_engine
from app.engine.errors import UserError
from app.engine.runtimes.base import RuntimeFailed, RuntimeUnavailable
from app.engine.runtimes.chain import RuntimeChain
from app.engine.runtimes.select import open_runtime
from app.engine.runtimes.torch_runtime import TorchRuntime
from app.engine.types import DepthRequest, Mode

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def cache(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One cache for the module: the model is exported once, not once per test."""
    monkeypatch.setenv("BI3D_STUDIO_CACHE", str(shared_cache))
    return shared_cache


@pytest.fixture(scope="module")
def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    left = rng.integers(0, 255, (150, 250, 3), dtype=np.uint8)
    return left, np.roll(left, -6, axis=1)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    return build_model("binary", 0.25).eval()


class Slow(TorchRuntime):
    """The torch runtime, slowed down (and optionally broken) to steer the chain."""

    def __init__(self, model: Any, name: str, delay: float, fail: bool = False) -> None:
        super().__init__(model, CPU)
        self.name, self.delay, self.fail = name, delay, fail

    def planes(self, feats: Any, shifts: torch.Tensor) -> torch.Tensor:
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeFailed(f"{self.name}: GPU out of memory")
        return super().planes(feats, shifts)


def test_onnxruntime_engine_matches_torch_engine(model, pair) -> None:  # type: ignore[no-untyped-def]
    torch_engine = Bi3DEngine(model)
    ort_engine = Bi3DEngine(model, runtime=open_runtime(model, "onnxruntime", CPU, "fp32"))
    for request in (
        DepthRequest(mode=Mode.QUANTIZED, planes=(6, 12, 30)),
        DepthRequest(mode=Mode.BINARY, planes=(21,)),
    ):
        want, got = torch_engine.compute(*pair, request), ort_engine.compute(*pair, request)
        assert got.runtime == "onnxruntime" and want.runtime == "torch"
        np.testing.assert_allclose(got.probabilities, want.probabilities, rtol=0, atol=1e-4)
    assert not any("runtime" in n for n in got.notes)  # asked for and ran: nothing to explain


def test_tensorrt_on_the_cpu_falls_back_with_the_reason(model, pair) -> None:  # type: ignore[no-untyped-def]
    engine = Bi3DEngine(model, runtime=open_runtime(model, "tensorrt", CPU, "fp32"))
    result = engine.compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(12,)))
    assert result.runtime == "onnxruntime"
    assert any("tensorrt skipped: needs a CUDA device" in n for n in result.notes)


def test_bf16_skips_onnxruntime(model, pair) -> None:  # type: ignore[no-untyped-def]
    chain = open_runtime(model, "onnxruntime", CPU, "bf16")
    engine = Bi3DEngine(model, precision="bf16", runtime=chain)
    result = engine.compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(12,)))
    assert result.runtime == "torch" and result.precision == "bf16"
    assert any("onnxruntime skipped:" in n and "runs fp32 only" in n for n in result.notes)


def test_auto_runs_the_fastest_and_says_why(model, pair) -> None:  # type: ignore[no-untyped-def]
    chain = RuntimeChain(
        [("slow", lambda: Slow(model, "slow", 0.3)), ("quick", lambda: Slow(model, "quick", 0))]
    )
    chain.probe = True
    result = Bi3DEngine(model, runtime=chain).compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(9,)))
    assert result.runtime == "quick"
    note = next(n for n in result.notes if n.startswith("runtime quick"))
    assert "auto picked the fastest" in note and "288 x 192 px" in note and "slow" in note


def test_a_busy_spell_while_timing_does_not_pick_the_slower_runtime(model, pair) -> None:  # type: ignore[no-untyped-def]
    """Timed one after the other, a busy spell fell on the first candidate alone: beside two other
    jobs auto cached ONNX Runtime (59 ms) over torch (79 ms), where torch is the faster."""
    calls = [0]

    class Spelled(Slow):
        def planes(self, feats: Any, shifts: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            if calls[0] <= 8:  # the machine is busy for the first eight passes of the probe
                time.sleep(0.1)
            return super().planes(feats, shifts)

    chain = RuntimeChain(
        [("quick", lambda: Spelled(model, "quick", 0.01)), ("slower", lambda: Spelled(model, "slower", 0.03))]
    )
    chain.probe = True
    result = Bi3DEngine(model, runtime=chain).compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(9,)))
    assert result.runtime == "quick"


def test_failure_mid_frame_hands_the_frame_to_the_next(model, pair) -> None:  # type: ignore[no-untyped-def]
    chain = RuntimeChain(
        [("broken", lambda: Slow(model, "broken", 0, fail=True)), ("torch", lambda: TorchRuntime(model, CPU))]
    )
    engine = Bi3DEngine(model, runtime=chain)
    result = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=(6, 12)))
    assert result.runtime == "torch" and result.probabilities.shape[0] == 2
    assert any("broken failed (broken: GPU out of memory); fell back to torch" in n for n in result.notes)


def test_last_runtime_failing_is_one_clear_error(model, pair) -> None:  # type: ignore[no-untyped-def]
    engine = Bi3DEngine(
        model, runtime=RuntimeChain([("broken", lambda: Slow(model, "broken", 0, fail=True))])
    )
    with pytest.raises(UserError, match="GPU out of memory"):
        engine.compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(12,)))


def test_unopenable_runtimes_are_skipped_with_reasons(model) -> None:  # type: ignore[no-untyped-def]
    def missing() -> TorchRuntime:
        raise RuntimeUnavailable("TensorRT is not installed (pip install '.[gpu]')")

    chain = RuntimeChain([("tensorrt", missing), ("torch", lambda: TorchRuntime(model, CPU))])
    assert chain.name == "torch" and "tensorrt skipped: TensorRT is not installed" in chain.reason


def test_a_runtime_that_breaks_while_opening_is_skipped(model, pair) -> None:  # type: ignore[no-untyped-def]
    def broken() -> TorchRuntime:
        raise FileNotFoundError("graphs.py")  # e.g. a frozen build without sources

    chain = RuntimeChain([("onnxruntime", broken), ("torch", lambda: TorchRuntime(model, CPU))])
    result = Bi3DEngine(model, runtime=chain).compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(12,)))
    assert result.runtime == "torch"
    assert "onnxruntime skipped: it failed to open (FileNotFoundError: graphs.py)" in chain.reason


def test_exports_work_in_a_frozen_build_without_sources(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from app.engine.runtimes import graphs, onnx_export

    onnx_export._graph_code.cache_clear()
    monkeypatch.setattr(graphs, "__file__", str(tmp_path / "frozen" / "graphs.pyc"))
    try:
        code = onnx_export._graph_code()
        assert code.startswith(b"frozen ")  # the version and executable stand in for the sources
    finally:
        monkeypatch.undo()
        onnx_export._graph_code.cache_clear()
    assert b"def " in onnx_export._graph_code()  # sources again once they exist


def test_bad_runtime_options_are_user_errors(model) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match="unknown runtime 'cuda'"):
        open_runtime(model, "cuda", CPU, "fp32")
    with pytest.raises(UserError, match="CUDA graphs need device cuda"):
        open_runtime(model, "torch", CPU, "fp32", cuda_graphs=True)
    with pytest.raises(UserError, match="tf32 needs device cuda"):
        Bi3DEngine(model, precision="tf32")


def test_build_engine_opens_nothing_heavy_until_the_first_frame(tmp_path, monkeypatch, pair) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "fresh"
    monkeypatch.setenv("BI3D_STUDIO_CACHE", str(cache))
    engine, _ = build_engine(EngineOptions(engine="bi3d", width=0.25, runtime="auto"), "binary")
    assert not cache.exists()  # no export yet: a GUI thread building an engine never waits
    result = engine.compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(12,)))
    assert result.runtime in ("torch", "onnxruntime")
    assert any("auto picked the fastest" in n and "tensorrt skipped" in n for n in result.notes)
    assert list((cache / "onnx").glob("*/segnet.onnx"))
