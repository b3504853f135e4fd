"""Tests for app.engine.depth.decoding (plane choice and readouts) and DepthRequest validation."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.depth.decoding import (
    continuous_range,
    dense_span,
    depth_uniform_planes,
    hold_far_planes,
    quantized_disparity,
    quantized_step,
    range_state,
    requested_planes,
    uniform_planes,
)
from app.engine.errors import UserError
from app.engine.types import Calibration, DepthRequest, Mode, Spacing

NAN = np.nan
PLANES = np.array([10.0, 20.0, 30.0])
CAL = Calibration(focal_px=1000.0, baseline_m=0.1)


def pixels(*ps: list[float]) -> np.ndarray:
    """P x 1 x K probabilities from K per-pixel lists of P values."""
    return np.array(ps, np.float32).T[:, None, :]


def reference_quantized(p: np.ndarray, planes: np.ndarray, top: float) -> float:
    """The published recipe for one pixel, written out step by step."""
    if np.isnan(p).any():
        return float("nan")
    stack = np.concatenate([[1.0], p, [0.0]])
    cdf = 1.0 - stack
    bins = np.diff(cdf)
    k = int(np.argmax(bins))
    edges = [0.0, *planes, top]
    return (edges[k] + edges[k + 1]) / 2


def test_quantized_hand_made_pixels() -> None:
    probs = pixels([0.9, 0.8, 0.1], [0.1, 0.05, 0.0], [1.0, 1.0, 1.0], [0.9, NAN, 0.1])
    out = quantized_disparity(probs, PLANES, 40)
    assert out.shape == (1, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out[0, :3], [25.0, 5.0, 35.0])
    assert np.isnan(out[0, 3])


def test_quantized_bins_of_first_pixel() -> None:
    p = np.array([0.9, 0.8, 0.1])
    bins = np.diff(1.0 - np.concatenate([[1.0], p, [0.0]]))
    np.testing.assert_allclose(bins, [0.1, 0.1, 0.7, 0.1])
    assert reference_quantized(p, PLANES, 40) == 25.0


def test_quantized_all_zero_is_first_bin() -> None:
    out = quantized_disparity(pixels([0.0, 0.0, 0.0]), PLANES, 40)
    assert out[0, 0] == 5.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quantized_matches_recipe_on_random_probabilities(seed: int) -> None:
    rng = np.random.default_rng(seed)
    planes = np.sort(rng.choice(np.arange(3, 190, 3), size=6, replace=False)).astype(np.float64)
    probs = rng.random((6, 5, 7)).astype(np.float32)
    probs[rng.random(probs.shape) < 0.05] = NAN
    out = quantized_disparity(probs, planes, 192)
    for y in range(5):
        for x in range(7):
            expected = reference_quantized(probs[:, y, x].astype(np.float64), planes, 192)
            np.testing.assert_allclose(out[y, x], expected, rtol=1e-6)


def test_quantized_unequal_bins_use_their_own_midpoints() -> None:
    out = quantized_disparity(pixels([1.0, 0.0]), np.array([2.0, 50.0]), 192)
    assert out[0, 0] == 26.0


def reference_step(p: np.ndarray, planes: np.ndarray, top: float, window: int | None) -> float:
    """The step readout for one pixel, written out: the step disagreeing least with the curve
    (of equal ones the farther), then the published arg-max among the bins near it."""
    if np.isnan(p).any():
        return float("nan")
    n = len(p)
    costs = [float(np.sum(1 - p[:k]) + np.sum(p[k:])) for k in range(n + 1)]
    step = int(np.argmin(costs))  # the first of equal costs: the smaller, farther k
    bins = np.diff(1.0 - np.concatenate([[1.0], p, [0.0]]))
    near = range(max(0, step - (window or 0)), min(n, step + (window or 0)) + 1)
    k = max(near, key=lambda i: (bins[i], -i))  # the first of equal bins
    edges = [0.0, *planes, top]
    return (edges[k] + edges[k + 1]) / 2


def test_quantized_step_passes_over_false_closer_runs_on_far_planes() -> None:
    planes = np.arange(12.0, 192.0, 12.0)  # 15 planes
    truth = [0.98, 0.97, 0.95, 0.1, 0.05] + [0.02] * 5 + [0.9, 0.95, 0.97, 0.95, 0.9]  # 40 px, then noise
    probs = pixels(truth, [0.9] * 15, [0.05] * 15)
    published = quantized_disparity(probs, planes, 192)
    assert published[0, 0] == 186.0  # the far run's last bin wins the arg-max
    for window in (None, 2, 6):
        out = quantized_step(probs, planes, 192, window)
        np.testing.assert_array_equal(out[0], [42.0, 186.0, 6.0])


@pytest.mark.parametrize("window", [None, 1, 6])
@pytest.mark.parametrize("seed", [0, 1])
def test_quantized_step_matches_its_definition_on_random_curves(seed: int, window: int | None) -> None:
    rng = np.random.default_rng(seed)
    planes = np.sort(rng.choice(np.arange(3, 190, 3), size=9, replace=False)).astype(np.float64)
    probs = rng.random((9, 4, 6)).astype(np.float32)
    probs[rng.random(probs.shape) < 0.05] = NAN
    out = quantized_step(probs, planes, 192, window)
    assert out.dtype == np.float32
    for y in range(4):
        for x in range(6):
            expected = reference_step(probs[:, y, x].astype(np.float64), planes, 192, window)
            np.testing.assert_allclose(out[y, x], expected, rtol=1e-6)


def test_uniform_planes() -> None:
    np.testing.assert_allclose(uniform_planes(3, 0, 40), [10.0, 20.0, 30.0])
    np.testing.assert_allclose(uniform_planes(1, 10, 30), [20.0])


def test_depth_uniform_planes_even_in_depth() -> None:
    planes = depth_uniform_planes(4, CAL, 0, 192)
    assert planes.shape == (4,)
    assert np.all(np.diff(planes) > 0)
    assert planes.min() > 3 and planes.max() < 192
    depths = 1000.0 * 0.1 / planes
    steps = np.diff(np.sort(depths))
    np.testing.assert_allclose(steps, steps[0], rtol=1e-5)
    # The interval is [f B / 192, f B / 3] split into 5 equal parts.
    np.testing.assert_allclose(np.sort(depths)[0], 100 / 192 + (100 / 3 - 100 / 192) / 5, rtol=1e-5)


def test_depth_uniform_planes_honours_doffs() -> None:
    cal = Calibration(focal_px=1000.0, baseline_m=0.1, doffs=5.0)
    planes = depth_uniform_planes(3, cal, 10, 100)
    depths = 100.0 / (planes + 5.0)
    np.testing.assert_allclose(np.diff(np.sort(depths)), np.diff(np.sort(depths))[0], rtol=1e-5)
    assert planes.min() > 10 and planes.max() < 100


def test_depth_uniform_planes_unusable_calibration() -> None:
    with pytest.raises(UserError):
        depth_uniform_planes(3, Calibration(focal_px=1000.0, baseline_m=0.0), 0, 192)


def test_requested_planes_explicit_are_sorted() -> None:
    req = DepthRequest(mode=Mode.QUANTIZED, planes=(30, 10, 20))
    np.testing.assert_array_equal(requested_planes(req), [10.0, 20.0, 30.0])


def test_requested_planes_levels_in_disparity() -> None:
    req = DepthRequest(mode=Mode.QUANTIZED, levels=3, max_disparity=40)
    np.testing.assert_allclose(requested_planes(req), [10.0, 20.0, 30.0])
    ranged = DepthRequest(mode=Mode.QUANTIZED, levels=1, range=(10, 30), max_disparity=40)
    np.testing.assert_allclose(requested_planes(ranged), [20.0])


def test_requested_planes_default_levels() -> None:
    planes = requested_planes(DepthRequest(mode=Mode.QUANTIZED, max_disparity=90))
    np.testing.assert_allclose(planes, np.arange(10, 90, 10))


def test_requested_planes_levels_in_depth() -> None:
    req = DepthRequest(mode=Mode.QUANTIZED, levels=4, spacing=Spacing.DEPTH, calibration=CAL)
    np.testing.assert_allclose(requested_planes(req), depth_uniform_planes(4, CAL, 0, 192))


def test_requested_planes_binary_needs_plane() -> None:
    with pytest.raises(UserError):
        requested_planes(DepthRequest(mode=Mode.BINARY))


def test_depth_spacing_without_calibration_rejected() -> None:
    with pytest.raises(UserError):
        DepthRequest(mode=Mode.QUANTIZED, levels=4, spacing=Spacing.DEPTH)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((18, 60, 3, 192), (18, 60)),
        ((20, 61, 3, 192), (18, 63)),
        ((0, 192, 3, 192), (0, 192)),
        ((150, 200, 3, 190), (150, 189)),  # clipped to the last multiple of 3 below 190
        ((189, 192, 3, 190), (186, 189)),  # collapsed span stays one step wide at the top
        ((30, 30, 3, 192), (30, 33)),  # empty span widened to one step
    ],
)
def test_dense_span(args: tuple[float, float, int, int], expected: tuple[int, int]) -> None:
    assert dense_span(*args) == expected


def test_range_state() -> None:
    disp = np.array([[5.0, 10.0, 20.0], [30.0, 31.0, NAN]], np.float32)
    np.testing.assert_array_equal(range_state(disp, 10, 30), [[-1, 0, 0], [0, 1, 0]])
    assert range_state(disp, 10, 30).dtype == np.int8


def test_continuous_range() -> None:
    assert continuous_range(DepthRequest(mode=Mode.SELECTIVE, range=(10, 30))) == (10.0, 30.0)
    assert continuous_range(DepthRequest(max_disparity=64)) == (0.0, 64.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": Mode.QUANTIZED, "planes": (10, 200)},
        {"mode": Mode.QUANTIZED, "planes": (-1,)},
        {"mode": Mode.SELECTIVE, "range": (30, 30)},
        {"mode": Mode.SELECTIVE, "range": (40, 30)},
        {"mode": Mode.SELECTIVE, "range": (-5, 30)},
        {"mode": Mode.SELECTIVE, "range": (10, 193)},
        {"mode": Mode.QUANTIZED, "levels": 0},
        {"budget_ms": 0.0},
        {"budget_ms": -5.0},
        {"mode": Mode.BINARY, "planes": (10, 20)},
        {"mode": Mode.SELECTIVE},
        {"max_disparity": 0},
    ],
)
def test_depth_request_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(UserError):
        DepthRequest(**kwargs)  # type: ignore[arg-type]


def test_depth_request_accepts_valid() -> None:
    req = DepthRequest(mode="binary", planes=(0,), max_disparity=64)
    assert req.mode is Mode.BINARY and req.planes == (0.0,)
    DepthRequest(mode=Mode.QUANTIZED, planes=(64,), max_disparity=64)


def test_far_quantized_planes_are_held_to_the_plane_at_half_their_disparity() -> None:
    """A background pixel (truth about 30 px) answered "closer" on the far planes, a longer run than
    its true one: held to the planes at half their disparity, its curve reads the truth's bin."""
    planes = np.array([21.3, 42.7, 64.0, 85.3, 106.7, 128.0, 149.3, 170.7])
    curve = np.array([1, 0, 0, 0, 0.6, 1, 1, 1], np.float32)
    probs = np.broadcast_to(curve[:, None, None], (8, 2, 3)).copy()
    before = quantized_step(probs, planes, 192)
    hold_far_planes(probs, planes, 108.0)
    # 128 -> 64 (0), 149.3 -> 64 (0), 170.7 -> 85.3 (0); planes below 108 px untouched
    np.testing.assert_array_equal(probs[:, 0, 0], np.float32([1, 0, 0, 0, 0.6, 0, 0, 0]))
    after = quantized_step(probs, planes, 192)
    assert float(before[0, 0]) > 150 and float(after[0, 0]) == pytest.approx(32.0)
    near = np.array([1, 1, 1, 1, 1, 1, 0.9, 0.2], np.float32)  # a truly near pixel keeps its answer
    kept = np.broadcast_to(near[:, None, None], (8, 1, 1)).copy()
    hold_far_planes(kept, planes, 108.0)
    np.testing.assert_array_equal(kept[:, 0, 0], near)
    only_far = np.array([120.0, 150.0])  # no plane at half their disparity: nothing to hold to
    far = np.ones((2, 1, 1), np.float32)
    hold_far_planes(far, only_far, 108.0)
    assert far.min() == 1.0


def test_edge_planes_hold_the_range_edges_within_the_model_range() -> None:
    from app.engine.depth.decoding import edge_planes

    assert edge_planes(20, 174, 27, 192).tolist() == [18, 45, 72, 99, 126, 153, 180]
    assert edge_planes(20, 40, 3, 192).tolist() == list(range(18, 43, 3))
    top = edge_planes(100, 190, 12, 192)  # the grid would pass 192: it ends there, its last gap shorter
    assert top[0] == 99 and top[-1] == 192 and np.allclose(np.diff(top)[:-1], 12) and np.diff(top)[-1] == 9
    assert edge_planes(0, 192, 99, 192).tolist() == [0, 99, 192]
    assert edge_planes(0, 190, 60, 192).tolist() == [0, 60, 120, 180, 192]  # no plane wasted at 12 px
