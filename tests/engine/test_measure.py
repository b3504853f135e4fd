"""Measuring: distances, regions, plane fits and histograms on known geometry."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine import measure
from app.engine.errors import UserError
from app.engine.types import Calibration

CAL = Calibration(focal_px=500.0, baseline_m=0.1, cx=100.0, cy=60.0)


def test_distance_between_two_pixels_of_a_wall() -> None:
    d = np.full((120, 200), 25.0, np.float32)  # z = 500 * 0.1 / 25 = 2 m
    assert measure.distance_m(d, CAL, (50, 60), (150, 60)) == pytest.approx(100 * 2.0 / 500.0, rel=1e-6)


def test_plane_fit_of_a_slanted_plane_with_noise() -> None:
    rng = np.random.default_rng(0)
    xs = np.mgrid[0:120, 0:200][1]
    d = (20.0 + 0.05 * xs).astype(np.float32)  # a slanted plane in disparity is a plane in 3D
    stats = measure.region_stats(d, CAL, 0, 0, 200, 120)
    assert stats.fill_rate == 1.0 and stats.plane_rms_mm < 0.01
    d[::2] = np.nan
    noisy = measure.region_stats(d + rng.normal(0, 0.2, d.shape).astype(np.float32), CAL, 0, 0, 200, 120)
    assert noisy.fill_rate == pytest.approx(0.5) and noisy.plane_rms_mm > 1.0


def test_a_region_without_a_calibration_gives_its_disparities_figures() -> None:
    """It said "measuring a region needs a calibration", where the fill rate, the median disparity
    and how flat the disparities are need none (review)."""
    rng = np.random.default_rng(0)
    xs = np.mgrid[0:120, 0:200][1]
    d = (20.0 + 0.05 * xs).astype(np.float32)
    d[:60] = np.nan
    stats = measure.region_stats(d, None, 0, 0, 200, 120)
    assert stats.mean_distance_m is None and stats.plane_rms_mm is None
    assert stats.fill_rate == 0.5 and stats.median_disparity_px == pytest.approx(24.975, abs=0.03)
    assert stats.disparity_plane_rms_px < 1e-4  # a slanted plane's disparity is a plane in x, y
    noisy = measure.region_stats(d + rng.normal(0, 0.2, d.shape).astype(np.float32), None, 0, 0, 200, 120)
    assert noisy.disparity_plane_rms_px == pytest.approx(0.2, rel=0.1)
    assert measure.region_stats(d, CAL, 0, 0, 200, 120).disparity_plane_rms_px < 1e-4


def test_pixels_without_depth_and_empty_regions_say_so() -> None:
    d = np.full((40, 50), np.nan, np.float32)
    with pytest.raises(UserError, match="has no depth"):
        measure.distance_m(d, CAL, (1, 1), (2, 2))
    with pytest.raises(UserError, match="fewer than 3 pixels"):
        measure.region_stats(d, CAL, 0, 0, 10, 10)
    with pytest.raises(UserError, match="at least 2 x 2"):
        measure.region_stats(d, CAL, 5, 5, 5, 9)
    with pytest.raises(UserError, match="needs a calibration"):
        measure.distance_m(np.ones((4, 4), np.float32), None, (0, 0), (1, 1))


def test_histogram_counts_finite_values_in_a_robust_range() -> None:
    values = np.concatenate([np.full(996, 10.0), np.full(4, 500.0), [np.nan]])
    counts, edges = measure.histogram(values, bins=16)
    assert counts.sum() == 1000 and edges[-1] < 500  # the outliers do not set the range
    flat, flat_edges = measure.histogram(np.full(50, 3.0))
    assert flat.sum() == 50 and flat_edges[0] < 3.0 < flat_edges[-1]


def test_a_few_wrong_answers_are_left_out_of_the_plane_fit_and_counted() -> None:
    """25 wrong pixels of 34080 at a board's edge made its 1.5 mm plane-fit RMS read 25.7 mm, with
    nothing on screen to say why (review)."""
    rng = np.random.default_rng(1)
    d = (25.0 + rng.normal(0, 0.05, (120, 200))).astype(np.float32)  # a wall 2 m away, a little noise
    clean = measure.region_stats(d, CAL, 0, 0, 200, 120)
    d[5, :25] = 15.0  # wrong answers far behind it
    stats = measure.region_stats(d, CAL, 0, 0, 200, 120)
    # the 25, and at most a noise pixel or two past 4 sigmas (24000 of them)
    assert 25 <= stats.plane_outliers <= 27 and stats.plane_rms_mm == pytest.approx(
        clean.plane_rms_mm, rel=0.05
    )
    assert 25 <= measure.region_stats(d, None, 0, 0, 200, 120).plane_outliers <= 27
    from app.engine.pointcloud import point_cloud

    points, _ = point_cloud(d, CAL, np.zeros((120, 200, 3), np.uint8))
    assert 1000 * measure.plane_fit_rms(points) > 5 * clean.plane_rms_mm  # what a plain fit read
