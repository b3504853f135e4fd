"""Sparse pseudo-labels for adaptation: the classical matcher where it is confident.

SGBM (``app.engine.depth.sgbm``, with its uniqueness test and speckle filter) is run twice: the
left view against the right, and the mirrored pair, which gives the right view's disparity. A
left pixel keeps its disparity only when the right view's disparity where it lands agrees within
``LR_TOLERANCE_PX`` (the left-right check; OpenCV's own ``disp12MaxDiff`` is kept too). What
survives is mostly textured, unoccluded surface, where SGBM is rarely wrong (about 4-5 % of such
pixels off by more than 2 px on the adaptation footage); everything else is NaN, which the
plane loss skips.

Also here: whether footage is rectified at all, from the vertical offsets of matched features.
"""

from __future__ import annotations

import numpy as np

from app.engine.calibration.check import check_epipolar
from app.engine.depth.sgbm import SGBMEngine, SGBMParams
from app.engine.errors import UserError

LR_TOLERANCE_PX = 1.0
MAX_VERTICAL_PX = 2.0  # median |dy| of matches above this: the footage is not rectified
# stricter than the engine's defaults: fewer pixels, but fewer wrong ones
PSEUDO_SGBM = SGBMParams(block_size=5, uniqueness=15, speckle_window=100, speckle_range=2)


def right_disparity(
    matcher: SGBMEngine, left: np.ndarray, right: np.ndarray, max_disparity: float
) -> np.ndarray:
    """The right view's disparity (H x W, NaN unknown): SGBM on the mirrored, swapped pair."""
    mirrored = matcher.disparity(right[:, ::-1].copy(), left[:, ::-1].copy(), max_disparity)
    return mirrored[:, ::-1].copy()


def lr_consistent(
    disp_left: np.ndarray, disp_right: np.ndarray, tolerance: float = LR_TOLERANCE_PX
) -> np.ndarray:
    """H x W bool: the left disparity lands on a right pixel whose own disparity agrees."""
    h, w = disp_left.shape
    xs = np.arange(w, dtype=np.float32)[None, :].repeat(h, 0)
    finite = np.isfinite(disp_left)
    target = np.round(xs - np.where(finite, disp_left, 0)).astype(np.int64)
    inside = finite & (target >= 0) & (target < w)
    rows = np.arange(h)[:, None].repeat(w, 1)
    landed = disp_right[rows, np.clip(target, 0, w - 1)]
    with np.errstate(invalid="ignore"):
        return inside & (np.abs(landed - disp_left) <= tolerance)


def confident_disparity(
    left: np.ndarray, right: np.ndarray, max_disparity: float, params: SGBMParams = PSEUDO_SGBM
) -> np.ndarray:
    """H x W float32 disparity (px) where SGBM passes the left-right check, NaN elsewhere.

    ``left``, ``right``: rectified H x W x 3 RGB uint8."""
    matcher = SGBMEngine(params)
    disp = matcher.disparity(left, right, max_disparity)
    keep = lr_consistent(disp, right_disparity(matcher, left, right, max_disparity))
    return np.where(keep, disp, np.nan).astype(np.float32)


def median_vertical_offset(pairs: list[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """Median |y_left - y_right| (px) of the matched features over ``pairs``; None when
    the frames have too little texture to match."""
    offsets = []
    for left, right in pairs:
        report = check_epipolar(left, right)
        if report.matches:
            offsets.append(np.abs(report.points_left[:, 1] - report.points_right[:, 1]))
    if not offsets:
        return None
    return float(np.median(np.concatenate(offsets)))


def check_rectified(pairs: list[tuple[np.ndarray, np.ndarray]], what: str) -> float | None:
    """Refuse footage whose matched features lie on different rows (the median offset, px)."""
    offset = median_vertical_offset(pairs)
    if offset is not None and offset > MAX_VERTICAL_PX:
        raise UserError(
            f"{what} does not look rectified: matched features lie {offset:.1f} px apart vertically "
            f"(median; at most {MAX_VERTICAL_PX:g} px expected); check the rig with 'bi3d-studio calib "
            "check LEFT RIGHT'; adapt learns from rectified footage only: give the rig's calibration "
            "(--calib FILE) and its frames are rectified, or self-rectify with 'bi3d-studio calib "
            "rectify' and give that file"
        )
    return offset
