"""The session's per-frame timings: what the latency plot draws."""

from __future__ import annotations

import numpy as np

from app.engine.engines import EngineOptions
from app.engine.session import Session
from app.engine.types import DepthRequest, DepthResult, Mode, StereoPair


class _TimedEngine:
    name = "bi3d"

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        h, w = left.shape[:2]
        return DepthResult(
            disparity=np.zeros((h, w), np.float32),
            probabilities=np.zeros((1, h, w), np.float32),
            planes=np.zeros(1, np.float32),
            mode=request.mode,
            engine=self.name,
            timings={
                "features": 1.0,
                "planes": 2.0,
                "refine": 3.0,
                "readout": 4.0,
                "subpixel": 5.0,
                "total": 15.0,
            },
        )


def test_the_refine_entry_adds_up_every_stage_after_the_planes() -> None:
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    image = np.zeros((96, 128, 3), np.uint8)
    frame = session.process(StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
    assert frame.timings["features"] == 1.0 and frame.timings["planes"] == 2.0
    assert frame.timings["refine"] == 3.0 + 4.0 + 5.0
