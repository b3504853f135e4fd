"""Is this pair well rectified? Vertical offsets of matched features, and a chessboard check.

On a well rectified pair a scene point lies on the same row in both images, so the vertical
offset y_left - y_right of true matches is zero up to localisation noise (about 0.3 px RMS
with ORB on the bundled demo pair). Verdicts: 'rectified', 'marginal', 'not rectified', and
'unknown' when too few matches are consistent with any epipolar geometry. Images are RGB
uint8 H x W x 3; point arrays are N x 2 float32 (x, y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.calibration.chessboard import detect_corners, pattern_hint
from app.engine.epipolar import (  # noqa: F401 (the check's matching, re-exported for its users)
    DETECTORS,
    MAX_FEATURES,
    MIN_FEATURES,
    SWAP_ROWS_PX,
    Misalignment,
    epipolar_inliers,
    match_features,
    matches_swapped,
    refine_matches,
    row_consistent,
)
from app.engine.errors import UserError, Wording, plain_words, setting, word_settings
from app.engine.types import Calibration, check_pair

GOOD_RMS_PX = 0.6
MARGINAL_RMS_PX = 1.0
MIN_MATCHES = 20
VERDICTS = ("rectified", "marginal", "not rectified", "unknown")
SWAPPED = "swapped"  # shown for rows that agree while the views are the wrong way round


def swapped_verdict(verdict: str, swapped: bool) -> str:
    """``SWAPPED`` for views the wrong way round whose rows agree, else ``verdict``."""
    return SWAPPED if swapped and verdict != "not rectified" else verdict


def verdict_for(vertical_rms_px: float) -> str:
    """'rectified' up to 0.6 px RMS, 'marginal' up to 1 px, else 'not rectified'."""
    if vertical_rms_px <= GOOD_RMS_PX:
        return "rectified"
    return "marginal" if vertical_rms_px <= MARGINAL_RMS_PX else "not rectified"


@dataclass(frozen=True, eq=False)
class EpipolarReport:
    """Vertical offsets of matches (px); figures are NaN when the verdict is 'unknown'.

    ``points_left``/``points_right`` (N x 2) are the matches the figures come from, for
    drawing match or epipolar lines; ``misalignment`` is None when the verdict is 'unknown'.
    ``subpixel``: the points were refined by correlation (else they are keypoint positions,
    good to about half a pixel, which happens when the views differ too much to correlate).
    """

    vertical_mean_px: float
    vertical_rms_px: float
    vertical_p95_px: float
    matches: int
    verdict: str
    reason: str
    points_left: np.ndarray
    points_right: np.ndarray
    misalignment: Misalignment | None = None
    subpixel: bool = True
    swapped: bool = False  # most matches at negative disparity: the left camera's image came second

    @property
    def headline(self) -> str:
        """The verdict to show: ``SWAPPED`` for rows that agree with the views the wrong way round
        (it read "rectified" while the check failed: review), else ``verdict``."""
        return swapped_verdict(self.verdict, self.swapped)

    def reason_in(self, words: Wording) -> str:
        """``reason`` with the actions it advises worded for a front end (``app.vocabulary``)."""
        return word_settings(self.reason, words)

    def summary(self, words: Wording = plain_words) -> dict[str, float | int | str | None]:
        """The figures as JSON-ready values (None for NaN), the reason worded by ``words``."""
        out: dict[str, float | int | str | None] = {"matches": self.matches, "verdict": self.headline}
        if self.headline != self.verdict:
            out["rows_verdict"] = self.verdict  # what the rows alone say
        m = self.misalignment
        values = {
            "vertical_mean_px": self.vertical_mean_px,
            "vertical_rms_px": self.vertical_rms_px,
            "vertical_p95_px": self.vertical_p95_px,
            "vertical_shift_px": m.shift_px if m else float("nan"),
            "roll_deg": m.roll_deg if m else float("nan"),
            "vertical_scale_percent": m.scale_percent if m else float("nan"),
        }
        for key, value in values.items():
            out[key] = round(value, 4) if math.isfinite(value) else None
        out["reason"] = self.reason_in(words)
        out["swapped"] = self.swapped
        return out


@dataclass(frozen=True)
class BoardReport:
    """Chessboard in view: epipolar RMS over corners and, with a calibration and the square's
    size, the size check."""

    corners: int
    epipolar_rms_px: float
    square_m: float | None  # None: not given (the corners' rows need no size)
    square_measured_m: float | None = None
    square_error_percent: float | None = None
    # the corners' rows as shift, roll and scale: exact matches, where the features of a board
    # scene mostly lie on its squares (a 1 deg knock read 0.61 deg from them: review)
    misalignment: Misalignment | None = None


def check_epipolar(
    left: np.ndarray, right: np.ndarray, detector: str = "orb", max_features: int = 3000
) -> EpipolarReport:
    """Match features over the whole of a pair and measure the vertical offsets of the inliers.

    Matches pass a ratio test and a RANSAC fundamental matrix, never a row filter: a row
    threshold would hide the very misalignment we measure, while F fits whatever geometry
    the rig really has. 'unknown' only when fewer than MIN_MATCHES matches survive.
    """
    check_pair(left, right)
    gl = cv2.cvtColor(left, cv2.COLOR_RGB2GRAY)
    gr = cv2.cvtColor(right, cv2.COLOR_RGB2GRAY)
    pl, pr = epipolar_inliers(*match_features(gl, gr, detector, max_features))
    if len(pl) < MIN_MATCHES:
        nan = float("nan")
        reason = (
            f"only {len(pl)} consistent matches (need {MIN_MATCHES}); the scene lacks texture "
            "or the views do not overlap: point the cameras at a textured scene"
        )
        return EpipolarReport(nan, nan, nan, len(pl), "unknown", reason, pl, pr, None, False)
    rl, rr = refine_matches(gl, gr, pl, pr)
    subpixel = len(rl) >= MIN_MATCHES
    if subpixel:
        pl, pr = rl, rr
    keep, agree = row_consistent(pl, pr, gl.shape)  # a repetitive pattern's matches a period away: out
    if not agree:
        nan = float("nan")
        reason = (
            f"of {len(pl)} matches too few agree on the rows (a repetitive pattern matches a period "
            "away, or the views differ too much): point the cameras at a varied, textured scene"
        )
        return EpipolarReport(nan, nan, nan, len(pl), "unknown", reason, pl, pr, None, subpixel)
    mismatched = int((~keep).sum())
    pl, pr = pl[keep], pr[keep]
    dy = (pl[:, 1] - pr[:, 1]).astype(np.float64)
    rms = float(np.sqrt(np.mean(dy**2)))
    verdict = verdict_for(rms)
    misalignment = Misalignment.fit(pl, pr, (gl.shape[1], gl.shape[0]))
    limits = f"rectified is <= {GOOD_RMS_PX} px, marginal <= {MARGINAL_RMS_PX} px"
    if verdict == "not rectified":
        reason = (
            f"vertical RMS {rms:.2f} px, {rms / GOOD_RMS_PX:.1f} times the {GOOD_RMS_PX} px of a rectified "
            f"pair ({misalignment}); recalibrate, or self-rectify with {setting('calib_rectify')}"
        )
    else:
        reason = f"vertical RMS {rms:.2f} px; {limits}"
    if not subpixel:
        reason += "; keypoint positions (views too different to refine)"
    if mismatched:
        reason += (
            f"; {mismatched} of {len(pl) + mismatched} matches left out, rows apart from the others' "
            "(a repetitive pattern matched a period away)"
        )
    # depth.alignment's test, on these matches; rows far apart (a tilt turns the columns too) say
    # nothing of the order: the hand-held pair read "swapped" and its self-rectification was not
    swapped = rms <= SWAP_ROWS_PX and matches_swapped(pl, pr)
    if swapped:
        reason += (
            "; the images look swapped (most matches sit further right in the right image): give the "
            "left camera's image first"
        )
    p95 = float(np.percentile(np.abs(dy), 95))
    return EpipolarReport(
        float(dy.mean()), rms, p95, len(pl), verdict, reason, pl, pr, misalignment, subpixel, swapped
    )


def check_board(
    left: np.ndarray,
    right: np.ndarray,
    pattern: tuple[int, int],
    square_m: float | None = None,
    calibration: Calibration | None = None,
) -> BoardReport:
    """Epipolar RMS over chessboard corners of a rectified pair, and the board's scale.

    With a calibration of a measured baseline and ``square_m`` the corners are triangulated
    (Z = f B / (d + doffs)) and the mean distance between neighbouring corners is compared with
    ``square_m``: an error in percent, which is the error of every metric depth from this rig.
    """
    check_pair(left, right)
    cols, rows = pattern
    corners = []
    for name, img in (("left", left), ("right", right)):
        gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
        found = detect_corners(gray, pattern)
        if found is None:
            hint = pattern_hint(pattern, gray, "it")
            raise UserError(f"no {cols}x{rows} chessboard found in the {name} image; {hint}")
        corners.append(found.astype(np.float64))
    cl, cr = corners
    epipolar = float(np.sqrt(np.mean((cl[:, 1] - cr[:, 1]) ** 2)))
    misaligned = Misalignment.fit(cl, cr, (left.shape[1], left.shape[0]))
    if calibration is None or square_m is None or not calibration.baseline_known:
        return BoardReport(len(cl), epipolar, square_m, misalignment=misaligned)
    f, b = calibration.focal_px, calibration.baseline_m
    disparity = cl[:, 0] - cr[:, 0] + calibration.doffs
    if np.any(disparity <= 0):
        raise UserError("the chessboard has zero or negative disparity; are the images swapped?")
    z = f * b / disparity
    xyz = np.stack([(cl[:, 0] - calibration.cx) * z / f, (cl[:, 1] - calibration.cy) * z / f, z], axis=1)
    grid = xyz.reshape(rows, cols, 3)
    steps = np.concatenate(
        [
            np.linalg.norm(np.diff(grid, axis=0), axis=2).ravel(),
            np.linalg.norm(np.diff(grid, axis=1), axis=2).ravel(),
        ]
    )
    measured = float(steps.mean())
    error = 100.0 * (measured - square_m) / square_m
    return BoardReport(len(cl), epipolar, square_m, measured, error, misaligned)
