"""The benchmark runner: engines are timed in rounds, so drifts in machine speed hit all alike."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.engine.bench import depth as bench
from app.engine.depth.engines import EngineOptions
from app.engine.types import DepthRequest, DepthResult
from tests.engine.fake_results import empty_result


class _Recorder:
    def __init__(self, name: str, precision: str, calls: list[str]) -> None:
        self.name, self.precision, self.calls = name, precision, calls

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        self.calls.append(f"{self.name}-{self.precision}")
        return empty_result(left, self.name, runtime="fake", precision=self.precision, timings={"total": 1.0})


def test_engines_are_timed_in_alternating_rounds(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []

    def build(options: EngineOptions, kind: str = "binary") -> tuple[Any, str]:
        return _Recorder(str(options.engine), options.precision, calls), "fake"

    monkeypatch.setattr(bench, "build_engine", build)
    records = bench.run_bench(
        ["bi3d"], ["binary"], [1], [(96, 192)], EngineOptions(precision="fp32"), [None],
        repeat=3, warmup=0, precisions=["fp32", "bf16"],
    )  # fmt: skip
    assert calls == ["bi3d-fp32", "bi3d-bf16", "sgbm-fp32"] * 3  # (warm-up: the test below)
    expected = [("bi3d", "fp32"), ("bi3d", "bf16"), ("sgbm", "fp32")]
    assert [(r.engine, r.precision) for r in records] == expected


def test_warm_up_goes_on_until_the_calls_settle(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a clock the calls advance: real sleeps of 5 ms, on a busy machine, took longer in turn and
    # read as "still getting faster" (the clean-clone CI failed so once)
    now = [0.0]
    monkeypatch.setattr(bench.time, "perf_counter", lambda: now[0])

    class _Slow:  # one-time costs in the first calls (s by call number), then 5 ms
        def __init__(self, first: dict[int, float]) -> None:
            self.first, self.calls = first, 0

        def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
            self.calls += 1
            now[0] += self.first.get(self.calls, 0.005)
            return empty_result(left, "bi3d", timings={"total": 1.0})

    image = np.zeros((8, 8, 3), np.uint8)
    for first, count, calls in (
        ({1: 0.1, 2: 0.05}, 0, 0),  # asked for none: none
        ({1: 0.1, 2: 0.05}, 1, 4),  # 100, 50, 5 ms (still faster), 5 ms: warm
        ({1: 0.1, 2: 0.05}, 6, 6),  # at least as many as asked
        ({}, 1, 2),  # warm from the start: one call, and one to see it
    ):
        engine = _Slow(first)
        bench._Timing(engine, DepthRequest()).warm_up(image, image, count)
        assert engine.calls == calls, (first, count, engine.calls)


def test_a_row_that_ran_otherwise_than_asked_says_so(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`bench --runtimes tensorrt` printed an onnxruntime row and nothing else; selective 1 and 2
    planes both sweep 2 and shared SGBM's figure (its own row read 1.51 x itself: review)."""

    class _Fallback:
        def __init__(self, options: EngineOptions) -> None:
            self.options = options

        def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
            sgbm = self.options.engine == "sgbm"
            result = empty_result(
                left, str(self.options.engine), request.mode, runtime="opencv" if sgbm else "torch",
                precision="fp32", timings={"total": 1.0},
            )  # fmt: skip
            result.planes = np.zeros(2, np.float32)  # 1 and 2 selective planes both sweep 2
            if not sgbm:
                result.notes = ["runtime torch: tensorrt skipped: needs a CUDA device"]
            return result

    monkeypatch.setattr(bench, "build_engine", lambda options, kind="binary": (_Fallback(options), "fake"))
    records = bench.run_bench(
        ["bi3d"], ["selective"], [1, 2], [(96, 192)], EngineOptions(precision="fp32"), [None],
        repeat=1, warmup=0, runtimes=["tensorrt"],
    )  # fmt: skip
    bi3d = [r for r in records if r.engine == "bi3d"]
    assert [r.asked for r in bi3d] == ["tensorrt fp32"] * 2 and [r.requested for r in records] == [1, 2, 1, 2]
    assert (
        bi3d[0].note == "tensorrt skipped: needs a CUDA device"
        and bi3d[0].to_json()["asked"] == "tensorrt fp32"
    )
    table = bench.bench_table(records)
    assert table.count("torch*1") == 2
    assert "*1: tensorrt fp32 asked, torch fp32 ran: tensorrt skipped: needs a CUDA device" in table
    sgbm_rows = [line for line in table.splitlines() if line.startswith("sgbm")]
    assert len(sgbm_rows) == 2 and all(line.endswith("1.00") for line in sgbm_rows)


def test_a_small_size_asks_what_its_width_can_hold() -> None:
    """`bench --size 32x32` failed: "plane 48 px is outside [0, 16] px ... (--max-disparity (16 px)
    bounds it)", advice the user could not follow; at 96 x 128 continuous Bi3D swept 65 planes
    over 0-192 px where SGBM searched 0-112 (review)."""
    records = bench.run_bench(
        ["bi3d"], ["binary", "quantized", "selective", "continuous"], [1, 16], [(32, 32), (96, 128)],
        EngineOptions(), [0.25], repeat=1, warmup=0,
    )  # fmt: skip
    assert {(r.height, r.mode) for r in records} >= {(32, "binary"), (32, "continuous"), (96, "continuous")}
    continuous = {(r.engine, r.height): r.planes for r in records if r.mode == "continuous"}
    assert continuous[("bi3d", 96)] == continuous[("sgbm", 96)] == 39  # 0-112 px every 3 px


def test_random_weights_for_timing_are_the_same_every_run() -> None:
    """Each `bench --width` run exported new ONNX graphs into the cache (35-130 MB): the weights'
    fingerprint names them, and the random weights differed every run (review)."""
    import torch

    from app.engine.depth.engines import build_engine
    from app.engine.runtimes.onnx_export import model_fingerprint

    torch.manual_seed(5)
    state = torch.random.get_rng_state()
    a, _ = build_engine(EngineOptions(width=0.25), "binary")
    b, _ = build_engine(EngineOptions(width=0.25), "binary")
    assert model_fingerprint(a.model) == model_fingerprint(b.model)  # type: ignore[attr-defined]
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's random stream untouched
