"""Tests for app.engine.metrics on small hand-computed disparity maps."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from app.engine.errors import UserError
from app.engine.metrics import (
    StereoMetrics,
    binary_agreement,
    evaluate,
    fill_holes_kitti,
    format_table,
    to_json_dict,
)

NAN = np.nan


def test_perfect_prediction_scores_zero() -> None:
    gt = np.array([[5.0, 10.0], [20.0, 40.0]])
    for kind, m in evaluate(gt.copy(), gt).items():
        assert m == StereoMetrics(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 4), kind


def test_hole_counts_in_dense_but_not_valid_only() -> None:
    gt = np.array([[10.0, 10.0, 10.0, 10.0]])
    pred = np.array([[10.5, 12.5, NAN, 14.0]])
    res = evaluate(pred, gt)
    vo = res["valid_only"]
    # Errors 0.5, 2.5, 4.0 over the three predicted pixels.
    assert vo.epe == pytest.approx(7.0 / 3.0)
    assert (vo.bad1, vo.bad2, vo.bad3, vo.d1) == pytest.approx((2 / 3, 2 / 3, 1 / 3, 1 / 3))
    dense = res["dense"]
    # The hole is filled with min(12.5 left, 14.0 right) = 12.5 -> error 2.5 for EPE, but is always bad.
    assert dense.epe == pytest.approx((0.5 + 2.5 + 2.5 + 4.0) / 4)
    assert (dense.bad1, dense.bad2, dense.bad3, dense.d1) == pytest.approx((0.75, 0.75, 0.5, 0.5))
    assert dense.density == vo.density == pytest.approx(0.75)
    assert dense.n_valid_gt == vo.n_valid_gt == 4


def test_d1_needs_more_than_5_percent_of_gt() -> None:
    gt = np.array([[100.0, 50.0, 50.0]])
    pred = np.array([[104.0, 54.0, 53.0]])  # errors 4, 4, 3: only 4 > 0.05 * 50 and > 3 counts
    m = evaluate(pred, gt)["valid_only"]
    assert m.bad3 == pytest.approx(2 / 3)
    assert m.d1 == pytest.approx(1 / 3)


def test_invalid_gt_and_mask_are_ignored() -> None:
    gt = np.array([[10.0, 0.0, NAN, np.inf, -2.0, 10.0]])
    pred = np.array([[10.0, 99.0, 99.0, 99.0, 99.0, 20.0]])
    m = evaluate(pred, gt)["valid_only"]
    assert m.n_valid_gt == 2 and m.epe == pytest.approx(5.0)
    mask = np.array([[True, True, True, True, True, False]])
    masked = evaluate(pred, gt, mask)["dense"]
    assert masked.n_valid_gt == 1 and masked.epe == 0.0 and masked.bad1 == 0.0


def test_fill_holes_kitti_takes_farther_neighbour() -> None:
    pred = np.array([[NAN, 5.0, NAN, NAN, 3.0, NAN], [NAN] * 6, [1.0, NAN, 2.0, NAN, NAN, NAN]])
    filled = fill_holes_kitti(pred, np.isfinite(pred))
    np.testing.assert_array_equal(filled, [[5, 5, 3, 3, 3, 3], [0, 0, 0, 0, 0, 0], [1, 1, 2, 2, 2, 2]])


def test_dense_epe_uses_filled_values() -> None:
    gt = np.array([[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]])
    pred = np.array([[NAN, 4.0, NAN], [NAN, NAN, NAN]])
    dense = evaluate(pred, gt)["dense"]
    # Row 0 holes take 4.0 (error 0); row 1 has nothing valid so holes become 0 (error 4).
    assert dense.epe == pytest.approx(12.0 / 6)
    assert dense.bad1 == pytest.approx(5 / 6)
    assert dense.density == pytest.approx(1 / 6)


def test_all_holes_gives_nan_valid_only() -> None:
    gt = np.full((2, 2), 10.0)
    res = evaluate(np.full((2, 2), NAN), gt)
    assert math.isnan(res["valid_only"].epe) and math.isnan(res["valid_only"].d1)
    assert res["dense"].bad1 == 1.0 and res["dense"].d1 == 1.0 and res["dense"].density == 0.0
    js = to_json_dict(res)
    assert js["valid_only"]["epe"] is None and js["dense"]["n_valid_gt"] == 4
    json.dumps(js, allow_nan=False)  # must be strict JSON


def test_errors() -> None:
    with pytest.raises(UserError, match="no valid pixels"):
        evaluate(np.ones((2, 2)), np.zeros((2, 2)))
    with pytest.raises(UserError, match="differ"):
        evaluate(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(UserError, match=r"^mask "):
        evaluate(np.ones((2, 2)), np.ones((2, 2)), np.ones((3, 3), bool))


def test_format_table_is_aligned() -> None:
    gt = np.array([[10.0, 10.0, 10.0, 10.0]])
    a = evaluate(np.array([[10.5, 12.5, NAN, 14.0]]), gt)
    b = evaluate(gt.copy(), gt)
    text = format_table([("method-a", a), ("b", b)])
    lines = text.splitlines()
    assert len(lines) == 5
    assert len({len(line) for line in lines}) == 1  # every column padded to the same width
    assert lines[1].split() == ["method-a", "dense", "2.375", "75.0", "75.0", "50.0", "50.0", "75.0"]
    assert lines[2].split() == ["method-a", "valid-only", "2.333", "66.7", "66.7", "33.3", "33.3", "75.0"]
    assert lines[4].split()[:3] == ["b", "valid-only", "0.000"]
    # Numeric columns end at the same character position on every row.
    assert lines[0].index("EPE") + len("EPE") == lines[1].index("2.375") + len("2.375")


def test_binary_agreement_counts_pixels_with_ground_truth_per_plane() -> None:
    gt = np.array([[5.0, 15.0, np.nan, 25.0]])
    probs = np.array([[[0.9, 0.9, 0.0, 0.9]], [[0.1, 0.6, 0.9, 0.2]]])  # planes 10 and 20
    # plane 10: answers near/near/near for gt 5/15/25 -> 2 of 3; plane 20: far/near/far -> 1 of 3
    np.testing.assert_allclose(binary_agreement(probs, np.array([10.0, 20.0]), gt), [2 / 3, 1 / 3])
