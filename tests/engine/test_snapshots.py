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
    # a folder of pairs without times: its frame number is no time (it read as seconds: review)
    untimed = write_snapshot(result, tmp_path, "pairs/", timed=False, start_s=0.0)
    untimed_meta = json.loads((untimed / "result.json").read_text())
    assert untimed_meta["source_time_s"] is None and untimed_meta["time_into_source_s"] is None
    # the seek bar's seconds: from the source's first frame (a recording's times start anywhere;
    # the snapshot said 1.1 s of a frame shown at 0.90 s: review)
    assert meta["time_into_source_s"] is None  # no first frame's time given (a camera)
    into = write_snapshot(result, tmp_path, "rec/", start_s=0.2)
    assert json.loads((into / "result.json").read_text())["time_into_source_s"] == 2.3


def test_a_dense_answer_s_snapshot_leaves_its_plane_probabilities_out(tmp_path: Path) -> None:
    """A selective snapshot was 73.6 MB, 70 of them its 46 planes' probabilities (review): a
    continuous or selective answer keeps its disparity and confidence; a quantized one, whose
    probabilities are the answer, keeps them."""
    rng = np.random.default_rng(0)
    left, right = (rng.integers(0, 255, (20, 30, 3), dtype=np.uint8) for _ in range(2))
    probs = rng.random((4, 20, 30)).astype(np.float32)
    planes = np.arange(0, 12, 3.0)
    dense = DepthResult(np.full((20, 30), 5.0, np.float32), probs, planes, Mode.CONTINUOUS, "bi3d")
    folder = write_snapshot(FrameResult(1, 1, StereoPair(left, right, 0.0), DepthRequest(), dense), tmp_path)
    with np.load(folder / "result.npz") as arrays:
        assert "probabilities" not in arrays and "disparity" in arrays
    assert "left out (4 planes)" in json.loads((folder / "result.json").read_text())["probabilities"]
    levels = DepthResult(np.full((20, 30), 5.0, np.float32), probs, planes, Mode.QUANTIZED, "bi3d")
    request = DepthRequest(mode=Mode.QUANTIZED)
    folder = write_snapshot(FrameResult(2, 1, StereoPair(left, right, 0.0), request, levels), tmp_path)
    with np.load(folder / "result.npz") as arrays:
        np.testing.assert_array_equal(arrays["probabilities"], probs)
