"""Is this pair well rectified? Vertical offsets of matched features, and a chessboard check.

On a well rectified pair a scene point lies on the same row in both images, so the vertical
offset y_left - y_right of true matches is zero up to localisation noise (about 0.3 px RMS
with ORB on the bundled demo pair). Images are RGB uint8 H x W x 3; point arrays are N x 2
float32 (x, y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.calibration.chessboard import detect_corners
from app.engine.errors import UserError
from app.engine.types import Calibration, check_pair

GOOD_RMS_PX = 0.6
MARGINAL_RMS_PX = 1.0
MIN_MATCHES = 20
DETECTORS = ("orb", "sift")
_HALF = 7  # refinement patch is 15 x 15 px
_SEARCH = 3  # px around the descriptor match
_MIN_NCC = 0.9


def verdict_for(vertical_rms_px: float) -> str:
    """'good' up to 0.6 px RMS, 'marginal' up to 1 px, else 'bad'."""
    if vertical_rms_px <= GOOD_RMS_PX:
        return "good"
    return "marginal" if vertical_rms_px <= MARGINAL_RMS_PX else "bad"


@dataclass(frozen=True, eq=False)
class EpipolarReport:
    """Vertical offsets of matches (px); figures are NaN when the verdict is 'unknown'.

    ``points_left``/``points_right`` (N x 2) are the matches the figures come from, for
    drawing match or epipolar lines.
    """

    vertical_mean_px: float
    vertical_rms_px: float
    vertical_p95_px: float
    matches: int
    verdict: str
    reason: str
    points_left: np.ndarray
    points_right: np.ndarray

    def summary(self) -> dict[str, float | int | str | None]:
        """The figures as JSON-ready values (None for NaN)."""
        out: dict[str, float | int | str | None] = {"matches": self.matches, "verdict": self.verdict}
        for key in ("vertical_mean_px", "vertical_rms_px", "vertical_p95_px"):
            value = getattr(self, key)
            out[key] = round(value, 4) if math.isfinite(value) else None
        out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class BoardReport:
    """Chessboard in view: epipolar RMS over corners and, with a calibration, the size check."""

    corners: int
    epipolar_rms_px: float
    square_m: float
    square_measured_m: float | None = None
    square_error_percent: float | None = None


def check_epipolar(
    left: np.ndarray, right: np.ndarray, detector: str = "orb", max_features: int = 3000
) -> EpipolarReport:
    """Match features across a rectified pair and measure their vertical offsets."""
    check_pair(left, right)
    gl = cv2.cvtColor(left, cv2.COLOR_RGB2GRAY)
    gr = cv2.cvtColor(right, cv2.COLOR_RGB2GRAY)
    pl, pr = _match(gl, gr, detector, max_features)
    if len(pl) >= 8:
        # Outliers go by the fundamental matrix, not by row: a row threshold would hide the
        # very misalignment we measure, while F fits whatever geometry the rig really has.
        _, mask = cv2.findFundamentalMat(pl, pr, cv2.FM_RANSAC, 1.0, 0.999)
        keep = mask.ravel().astype(bool) if mask is not None else np.zeros(len(pl), bool)
        pl, pr = pl[keep], pr[keep]
    pl, pr = _refine(gl, gr, pl, pr)
    n = len(pl)
    if n < MIN_MATCHES:
        nan = float("nan")
        reason = f"only {n} reliable matches (need {MIN_MATCHES}); point the cameras at a textured scene"
        return EpipolarReport(nan, nan, nan, n, "unknown", reason, pl, pr)
    dy = (pl[:, 1] - pr[:, 1]).astype(np.float64)
    rms = float(np.sqrt(np.mean(dy**2)))
    verdict = verdict_for(rms)
    reason = f"vertical RMS {rms:.2f} px; good is <= {GOOD_RMS_PX} px, marginal <= {MARGINAL_RMS_PX} px"
    p95 = float(np.percentile(np.abs(dy), 95))
    return EpipolarReport(float(dy.mean()), rms, p95, n, verdict, reason, pl, pr)


def _match(gl: np.ndarray, gr: np.ndarray, detector: str, max_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Cross-checked brute-force matches: two N x 2 float32 arrays."""
    features: cv2.Feature2D
    if detector == "sift":
        if not hasattr(cv2, "SIFT"):
            raise UserError("SIFT is not available in this OpenCV build; use --detector orb")
        features, norm = cv2.SIFT.create(max_features), cv2.NORM_L2
    elif detector == "orb":
        features, norm = cv2.ORB.create(max_features), cv2.NORM_HAMMING
    else:
        raise UserError(f"unknown detector {detector!r}; use one of: {', '.join(DETECTORS)}")
    kl, dl = features.detectAndCompute(gl, None)
    kr, dr = features.detectAndCompute(gr, None)
    if dl is None or dr is None:
        return np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32)
    matches = cv2.BFMatcher(norm, crossCheck=True).match(dl, dr)
    pl = np.array([kl[m.queryIdx].pt for m in matches], np.float32).reshape(-1, 2)
    pr = np.array([kr[m.trainIdx].pt for m in matches], np.float32).reshape(-1, 2)
    return pl, pr


def _refine(gl: np.ndarray, gr: np.ndarray, pl: np.ndarray, pr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Move each right point to the sub-pixel best match of the patch around its left point.

    Keypoint positions are quantised to the detector's pyramid grid (up to a pixel), which is
    the size of the offsets we look for; normalised cross-correlation with a parabola fit at
    the peak brings them to about a tenth of a pixel. Matches without a clear peak are dropped.
    """
    h, w = gr.shape
    win = _HALF + _SEARCH
    fl, fr = gl.astype(np.float32), gr.astype(np.float32)
    keep, refined = [], []
    for i, ((xl, yl), (xr, yr)) in enumerate(zip(pl, pr, strict=True)):
        cx, cy = round(float(xr)), round(float(yr))
        if not (win <= cx < w - win and win <= cy < h - win and win <= xl < w - win and win <= yl < h - win):
            continue
        patch = cv2.getRectSubPix(fl, (2 * _HALF + 1, 2 * _HALF + 1), (float(xl), float(yl)))
        score = cv2.matchTemplate(
            fr[cy - win : cy + win + 1, cx - win : cx + win + 1], patch, cv2.TM_CCOEFF_NORMED
        )
        _, best, _, (px, py) = cv2.minMaxLoc(score)
        if best < _MIN_NCC or not (0 < px < score.shape[1] - 1 and 0 < py < score.shape[0] - 1):
            continue
        dx = _parabola_peak(score[py, px - 1 : px + 2])
        dy = _parabola_peak(score[py - 1 : py + 2, px])
        keep.append(i)
        refined.append((cx - _SEARCH + px + dx, cy - _SEARCH + py + dy))
    return pl[keep].reshape(-1, 2), np.array(refined, np.float32).reshape(-1, 2)


def _parabola_peak(v: np.ndarray) -> float:
    """Sub-pixel offset of the peak of three samples around the middle one."""
    den = float(v[0] - 2 * v[1] + v[2])
    return 0.0 if den == 0 else 0.5 * float(v[0] - v[2]) / den


def check_board(
    left: np.ndarray,
    right: np.ndarray,
    pattern: tuple[int, int],
    square_m: float,
    calibration: Calibration | None = None,
) -> BoardReport:
    """Epipolar RMS over chessboard corners of a rectified pair, and the board's scale.

    With a calibration the corners are triangulated (Z = f B / (d + doffs)) and the mean
    distance between neighbouring corners is compared with ``square_m``: an error in
    percent, which is the error of every metric depth from this rig.
    """
    check_pair(left, right)
    cols, rows = pattern
    corners = []
    for name, img in (("left", left), ("right", right)):
        found = detect_corners(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), pattern)
        if found is None:
            raise UserError(
                f"no {cols}x{rows} chessboard found in the {name} image; check --pattern (inner corners)"
            )
        corners.append(found.astype(np.float64))
    cl, cr = corners
    epipolar = float(np.sqrt(np.mean((cl[:, 1] - cr[:, 1]) ** 2)))
    if calibration is None:
        return BoardReport(len(cl), epipolar, square_m)
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
    return BoardReport(len(cl), epipolar, square_m, measured, 100.0 * (measured - square_m) / square_m)
