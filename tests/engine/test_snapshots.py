"""A snapshot keeps what is needed to show or redo an answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.engine.formats import read_image_rgb, read_pfm
from app.engine.snapshots import write_snapshot
from app.engine.types import DepthRequest, DepthResult, FrameResult, Mode, StereoPair


def _depth(value: float, engine: str) -> DepthResult:
    d = np.full((20, 30), value, np.float32)
    return DepthResult(d, np.zeros((0, 20, 30), np.float32), np.arange(0, 12, 3.0), Mode.CONTINUOUS, engine)


def test_a_snapshot_holds_the_pair_the_source_and_sgbm_beside(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    left, right = (rng.integers(0, 255, (20, 30, 3), dtype=np.uint8) for _ in range(2))
    result = FrameResult(
        7, 1, StereoPair(left, right, 2.5), DepthRequest(), _depth(5.0, "bi3d"), baseline=_depth(6.0, "sgbm")
    )
    folder = write_snapshot(result, tmp_path, "rec/", {"colormap": "turbo"})
    meta = json.loads((folder / "result.json").read_text())
    assert meta["source"] == "rec/" and meta["source_time_s"] == 2.5 and meta["view"] == {"colormap": "turbo"}
    assert meta["files"] == {"left": "left.png", "right": "right.png", "sgbm": "sgbm/"}
    np.testing.assert_array_equal(read_image_rgb(folder / "left.png"), left)
    np.testing.assert_array_equal(read_image_rgb(folder / "right.png"), right)
    assert float(read_pfm(folder / "sgbm" / "disparity.pfm")[0, 0]) == 6.0
    assert float(read_pfm(folder / "disparity.pfm")[0, 0]) == 5.0
