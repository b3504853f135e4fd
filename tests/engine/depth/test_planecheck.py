"""Matching check of binary answers near their plane: measures the local disparity, flips
hesitant answers on the wrong side, and leaves confident answers, flat regions and
unmeasurable borders alone."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from app.engine.depth.planecheck import DEFAULT_PLANE_CHECK as DEFAULT
from app.engine.depth.planecheck import PlaneCheckConfig, PlaneChecker


def _shifted_pair(disparity: float, size: tuple[int, int] = (120, 240)) -> tuple[np.ndarray, np.ndarray]:
    """A textured uint8 RGB left image and a right image moved left by ``disparity`` px."""
    rng = np.random.default_rng(0)
    h, w = size
    base = cv2.GaussianBlur(rng.uniform(0, 255, (h, w + 64, 3)).astype(np.float32), (0, 0), 1.5)
    left = base[:, 32 : 32 + w]
    shift = np.float32([[1, 0, -disparity], [0, 1, 0]])  # right(x) = left(x + d)
    right = cv2.warpAffine(base, shift, (w + 64, h), flags=cv2.INTER_CUBIC)[:, 32 : 32 + w]
    as_u8 = lambda a: np.ascontiguousarray(a.clip(0, 255).round().astype(np.uint8))  # noqa: E731
    return as_u8(left), as_u8(right)


def _inner(a: np.ndarray) -> np.ndarray:
    return a[12:-12, 60:-12]  # away from the borders, where every window can be measured


@pytest.mark.parametrize("truth", [19.4, 20.6])
def test_estimates_the_disparity_near_the_plane(truth: float) -> None:
    left, right = _shifted_pair(truth)
    checker = PlaneChecker(left, right)
    hs, ws = checker.shape
    cells = np.arange(hs * ws)
    estimate, peak = checker.estimate(20.0, cells)
    estimate, peak = estimate.reshape(hs, ws)[6:-6, 30:-6], peak.reshape(hs, ws)[6:-6, 30:-6]
    assert np.median(peak) > 0.9
    assert abs(float(np.median(estimate)) - truth) < 0.3
    assert np.mean((estimate > 20.0) == (truth > 20.0)) > 0.95


PARABOLA = PlaneCheckConfig(band=0.2, side_band=0.0)  # the earlier check alone


@pytest.mark.parametrize("config", [DEFAULT, PARABOLA], ids=["default", "parabola"])
@pytest.mark.parametrize(("truth", "hesitant"), [(21.5, 0.45), (18.5, 0.55)])
def test_flips_hesitant_answers_on_the_wrong_side(
    truth: float, hesitant: float, config: PlaneCheckConfig
) -> None:
    left, right = _shifted_pair(truth)
    probabilities = np.full(left.shape[:2], hesitant, np.float32)
    out = PlaneChecker(left, right, config).check(probabilities, 20.0)
    assert np.mean(_inner(out > 0.5) == (truth > 20.0)) > 0.95
    assert np.array_equal(probabilities, np.full(left.shape[:2], hesitant, np.float32))  # input kept


@pytest.mark.parametrize("config", [DEFAULT, PARABOLA], ids=["default", "parabola"])
def test_confident_answers_flat_regions_and_borders_stay(config: PlaneCheckConfig) -> None:
    left, right = _shifted_pair(18.5)
    confident = np.full(left.shape[:2], 0.95, np.float32)  # wrong, but sure: not the check's business
    assert np.array_equal(PlaneChecker(left, right, config).check(confident, 20.0), confident)
    flat = np.full_like(left, 128)
    hesitant = np.full(left.shape[:2], 0.45, np.float32)
    assert np.array_equal(PlaneChecker(flat, flat.copy(), config).check(hesitant, 20.0), hesitant)
    # windows that would reach past the right image's left edge are not measured
    out = PlaneChecker(left, right, config).check(hesitant, 20.0)
    assert np.array_equal(out[:, :20], hesitant[:, :20])


@pytest.mark.parametrize("size", [(5, 7), (40, 30), (97, 131)])
def test_any_size_and_planes_beyond_the_image(size: tuple[int, int]) -> None:
    rng = np.random.default_rng(1)
    left = rng.integers(0, 255, (*size, 3), dtype=np.uint8)
    right = rng.integers(0, 255, (*size, 3), dtype=np.uint8)
    hesitant = np.full(size, 0.5, np.float32)
    checker = PlaneChecker(left, right)
    for plane in (0.0, 1.5, 10.0, 500.0):
        out = checker.check(hesitant, plane)
        assert out.shape == size and np.all((out >= 0) & (out <= 1))
        smooth = checker.smooth(out.copy())
        assert smooth.shape == size and np.all((smooth >= 0) & (smooth <= 1))
    assert np.array_equal(checker.check(hesitant, 500.0), hesitant)  # nothing to match that far


def test_settings_are_checked() -> None:
    left, right = _shifted_pair(10.0, (40, 60))
    with pytest.raises(ValueError, match="plane check"):
        PlaneChecker(left, right, PlaneCheckConfig(window=4))
    with pytest.raises(ValueError, match="plane check"):
        PlaneChecker(left, right, PlaneCheckConfig(radius=0))  # a parabola needs three shifts


def test_checks_in_place_into_a_strided_view() -> None:
    """The engine hands over planes of a padded network output: views with a row stride."""
    left, right = _shifted_pair(21.5)
    checker = PlaneChecker(left, right)
    padded = np.full((2, left.shape[0] + 4, left.shape[1] + 8), 0.45, np.float32)
    view = padded[1, 4:, 8:]
    expected = checker.check(view.copy(), 20.0)
    assert checker.check(view, 20.0, in_place=True) is view
    assert np.array_equal(view, expected) and np.mean(expected > 0.5) > 0.5
    assert np.all(padded[0] == np.float32(0.45)) and np.all(padded[1, :4] == np.float32(0.45))


@pytest.mark.parametrize(("truth", "answer"), [(20.4, 0.45), (19.6, 0.55), (21.5, 0.25), (18.5, 0.75)])
def test_the_two_sided_test_decides_within_a_pixel_of_the_plane(truth: float, answer: float) -> None:
    """Within half a pixel of a plane on the half-resolution grid (20 px), and answers outside
    the parabola's band (|p - 0.5| = 0.25)."""
    left, right = _shifted_pair(truth)
    probabilities = np.full(left.shape[:2], answer, np.float32)
    out = PlaneChecker(left, right).check(probabilities, 20.0)
    assert np.mean(_inner(out > 0.5) == (truth > 20.0)) > 0.95
    if abs(answer - 0.5) >= PARABOLA.band:  # outside the parabola's band, the parabola does nothing
        assert np.array_equal(PlaneChecker(left, right, PARABOLA).check(probabilities, 20.0), probabilities)


def test_smoothing_takes_each_pixel_to_the_side_of_its_own_surface() -> None:
    """Two surfaces of different brightness: a confident answer on each, noise of hesitant
    answers scattered over both; the filter keeps the edge and settles the noise."""
    h, w = 96, 160
    left = np.full((h, w, 3), 60, np.uint8)
    left[:, w // 2 :] = 190
    rng = np.random.default_rng(2)
    left = np.clip(left + rng.normal(0, 2, left.shape), 0, 255).astype(np.uint8)
    truth = np.zeros((h, w), bool)
    truth[:, : w // 2] = True  # the dark surface is nearer than the plane
    probabilities = np.where(truth, 0.9, 0.1).astype(np.float32)
    noisy = rng.random((h, w)) < 0.15
    probabilities[noisy] = np.where(truth[noisy], 0.4, 0.6)  # hesitant and wrong
    checker = PlaneChecker(left, left.copy())
    out = checker.smooth(probabilities.copy())
    assert np.mean((probabilities > 0.5) == truth) < 0.9
    assert np.mean((out > 0.5) == truth) > 0.99
    assert np.all((out >= 0) & (out <= 1))
    constant = np.full((h, w), 0.95, np.float32)
    assert np.allclose(checker.smooth(constant.copy()), 0.95, atol=1e-4)
    view = np.full((2, h + 4, w + 8), 0.5, np.float32)[1, 4:, 8:]  # a strided view, in place
    view[...] = probabilities
    assert checker.smooth(view) is view and np.allclose(view, out)
    off = PlaneChecker(left, left.copy(), PlaneCheckConfig(smooth_radius=0))
    assert np.array_equal(off.smooth(probabilities.copy()), probabilities)


def test_side_settings_are_checked() -> None:
    left, right = _shifted_pair(10.0, (40, 60))
    for bad in (PlaneCheckConfig(side_step=0.0), PlaneCheckConfig(smooth_scale=0)):
        with pytest.raises(ValueError, match="plane check"):
            PlaneChecker(left, right, bad)


def test_planes_checked_in_threads_equal_one_after_another() -> None:
    from app.engine.depth.planecheck import check_planes

    left, right = _shifted_pair(20.3)
    rng = np.random.default_rng(4)
    planes = [8.0, 16.0, 20.0, 24.0, 40.0]
    probabilities = rng.uniform(0.2, 0.8, (len(planes), *left.shape[:2])).astype(np.float32)
    want = probabilities.copy()
    checker = PlaneChecker(left, right)
    for k, plane in enumerate(planes):
        checker.check(want[k], plane, in_place=True)
        checker.smooth(want[k])
    got = probabilities.copy()
    check_planes(left, right, got, planes, DEFAULT)
    assert not np.array_equal(got, probabilities)  # the check changed answers
    assert np.array_equal(got, want)
    one = probabilities[2:3].copy()
    check_planes(left, right, one, planes[2:3], DEFAULT)
    assert np.array_equal(one[0], want[2])
