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
        repeat=3, warmup=1, precisions=["fp32", "bf16"],
    )  # fmt: skip
    timed = calls[3:]  # after one warm-up call each
    assert calls[:3] == ["bi3d-fp32", "bi3d-bf16", "sgbm-fp32"]
    assert timed == ["bi3d-fp32", "bi3d-bf16", "sgbm-fp32"] * 3
    expected = [("bi3d", "fp32"), ("bi3d", "bf16"), ("sgbm", "fp32")]
    assert [(r.engine, r.precision) for r in records] == expected
