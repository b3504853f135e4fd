"""A DepthResult of the right shapes for fakes of an engine."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.engine.types import DepthResult, Mode


def empty_result(left: np.ndarray, engine: str, mode: Mode = Mode.BINARY, **fields: Any) -> DepthResult:
    h, w = left.shape[:2]
    return DepthResult(
        disparity=np.zeros((h, w), np.float32),
        probabilities=np.zeros((1, h, w), np.float32),
        planes=np.zeros(1, np.float32),
        mode=mode,
        engine=engine,
        **fields,
    )
