"""Measuring on a depth map, as RealSense's Depth Quality Tool does: the 3D distance between two
pixels, a region's fill rate, mean distance and plane-fit RMS error, and a histogram."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.engine.errors import UserError
from app.engine.pointcloud import point_cloud
from app.engine.types import Calibration


@dataclass(frozen=True)
class RegionStats:
    """What a rectangle of the depth map holds."""

    pixels: int
    fill_rate: float  # share of the pixels with a depth
    mean_distance_m: float | None  # mean z of those (None without a calibration)
    plane_rms_mm: float | None  # RMS distance of their 3D points to the best-fitting plane
    median_disparity_px: float
    # RMS of the disparities about their best plane d = a x + b y + c (a flat surface's disparity
    # is such a plane in the image): flatness without a calibration
    disparity_plane_rms_px: float = float("nan")
    # pixels left out of the fits as far off their plane (``plane_fit``): 25 edge pixels of 34080
    # made a flat board's 1.5 mm read 25.7 mm, with nothing on screen to say why (review)
    plane_outliers: int = 0


def point_at(disparity: np.ndarray, calibration: Calibration | None, x: int, y: int) -> np.ndarray:
    """The 3D point (metres, left camera) of pixel (x, y); ``UserError`` where it has no depth."""
    h, w = disparity.shape
    if not (0 <= x < w and 0 <= y < h):
        raise UserError(f"pixel ({x}, {y}) is outside the {w} x {h} image")
    keep = np.zeros((h, w), bool)
    keep[y, x] = True
    points, _ = point_cloud(disparity, calibration, np.zeros((h, w, 3), np.uint8), keep)
    if len(points) == 0:
        raise UserError(f"pixel ({x}, {y}) has no depth; pick a pixel with a colour in the depth view")
    return points[0]


def distance_m(
    disparity: np.ndarray, calibration: Calibration | None, a: tuple[int, int], b: tuple[int, int]
) -> float:
    """Straight-line distance in metres between the 3D points of pixels ``a`` and ``b`` (x, y)."""
    return float(np.linalg.norm(point_at(disparity, calibration, *a) - point_at(disparity, calibration, *b)))


def region_stats(
    disparity: np.ndarray, calibration: Calibration | None, x0: int, y0: int, x1: int, y1: int
) -> RegionStats:
    """Fill rate, mean distance and plane-fit RMS of the rectangle [x0, x1) x [y0, y1)."""
    h, w = disparity.shape
    x0, x1 = sorted((max(0, min(w, x0)), max(0, min(w, x1))))
    y0, y1 = sorted((max(0, min(h, y0)), max(0, min(h, y1))))
    if x1 - x0 < 2 or y1 - y0 < 2:
        raise UserError("drag a rectangle at least 2 x 2 pixels over the depth view")
    keep = np.zeros((h, w), bool)
    keep[y0:y1, x0:x1] = True
    region = disparity[y0:y1, x0:x1]
    known = np.isfinite(region) & (region > 0)
    pixels = region.size
    points = None  # without a calibration, the pixels' figures alone (it said "needs a calibration")
    if calibration is not None:
        points, _ = point_cloud(disparity, calibration, np.zeros((h, w, 3), np.uint8), keep)
    if min(int(known.sum()), len(points) if points is not None else 3) < 3:
        raise UserError("the rectangle holds fewer than 3 pixels with depth; choose a region with depth")
    ys, xs = np.nonzero(known)
    flat, outliers = plane_fit(np.stack([xs, ys, region[known]], axis=1).astype(np.float64), along=2)
    mean_m = rms_mm = None
    if points is not None:
        rms_m, outliers = plane_fit(points)
        mean_m, rms_mm = float(points[:, 2].mean()), 1000.0 * rms_m
    return RegionStats(
        pixels=pixels,
        fill_rate=float(known.sum() / pixels),
        mean_distance_m=mean_m,
        plane_rms_mm=rms_mm,
        median_disparity_px=float(np.median(region[known])),
        disparity_plane_rms_px=flat,
        plane_outliers=outliers,
    )


OUTLIER_SIGMAS = 4.0  # a point this many robust sigmas (1.4826 MAD) off its plane is left out of the fit


def plane_fit(points: np.ndarray, along: int | None = None) -> tuple[float, int]:
    """``plane_fit_rms`` of the points within ``OUTLIER_SIGMAS`` of a first fit (refitted on them),
    and how many were left out: a few wrong answers at a board's edge, 0.07 % of the pixels, made
    a flat board's 1.5 mm read 25.7 mm (review)."""
    p = np.asarray(points, np.float64)
    r = plane_residuals(p, along)
    spread = 1.4826 * float(np.median(np.abs(r - np.median(r))))
    keep = np.abs(r - np.median(r)) <= OUTLIER_SIGMAS * spread if spread > 0 else np.ones(len(p), bool)
    if keep.sum() < 3:
        keep[:] = True
    return plane_fit_rms(p[keep], along), int((~keep).sum())


def plane_fit_rms(points: np.ndarray, along: int | None = None) -> float:
    """RMS orthogonal distance of N x 3 points to their least-squares plane (same unit); ``along``
    a coordinate: the RMS of that coordinate about its best plane over the other two instead
    (a disparity d = a x + b y + c, whose units differ from x's and y's)."""
    return float(np.sqrt(np.mean(plane_residuals(points, along) ** 2)))


def plane_residuals(points: np.ndarray, along: int | None = None) -> np.ndarray:
    """Each point's signed distance to the least-squares plane (``plane_fit_rms``'s)."""
    p = np.asarray(points, np.float64)
    if along is not None:
        others = np.delete(p, along, axis=1)
        design = np.column_stack([others, np.ones(len(p))])
        coef, *_ = np.linalg.lstsq(design, p[:, along], rcond=None)
        return design @ coef - p[:, along]
    centred = p - p.mean(axis=0)
    # the plane's normal is the direction of least spread: the last right-singular vector
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[-1]


def histogram(values: np.ndarray, bins: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Counts and bin edges of the finite values (robust range: 0.5th to 99.5th percentile)."""
    finite = values[np.isfinite(values)].astype(np.float64)
    if finite.size == 0:
        return np.zeros(bins, np.int64), np.linspace(0, 1, bins + 1)
    lo, hi = (float(v) for v in np.percentile(finite, [0.5, 99.5]))
    if hi - lo < 1e-3:  # one value (a flat wall): a narrow range around it
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(np.clip(finite, lo, hi), bins=bins, range=(lo, hi))
    return counts, edges
