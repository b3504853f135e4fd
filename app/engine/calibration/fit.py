"""Stereo calibration from matched target views: the fit, per-view errors and outlier views.

A view is one pair of images of a target: M x 3 float32 board points (metres, z = 0) and the
M x 2 float32 pixels where the left and the right camera saw them (M may differ per view,
as with a partly visible ChArUco board).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.calibration.rig import StereoRig
from app.engine.errors import UserError

# A view is an outlier when its RMS error is this many times the median view's, and at
# least OUTLIER_MIN_PX above it (so that a set of uniformly sharp views flags nothing).
OUTLIER_FACTOR = 2.0
OUTLIER_MIN_PX = 0.2
MIN_POINTS = 6  # board points seen by both cameras for a view to count


@dataclass(frozen=True, eq=False)
class StereoFit:
    """A rectified rig, the stereo RMS reprojection error (px) and each view's (left, right) RMS."""

    rig: StereoRig
    rms_px: float
    view_errors_px: np.ndarray  # V x 2

    def outliers(self) -> np.ndarray:
        """V booleans: views whose worse camera error stands out (see OUTLIER_FACTOR)."""
        return outlier_views(self.view_errors_px.max(axis=1))


def outlier_views(errors: np.ndarray) -> np.ndarray:
    """Booleans for the entries of a V-vector of view errors that stand out from the median."""
    errors = np.asarray(errors, np.float64)
    if errors.size < 3:
        return np.zeros(errors.shape, bool)
    median = float(np.median(errors))
    return (errors > OUTLIER_FACTOR * median) & (errors > median + OUTLIER_MIN_PX)


def fit_stereo(
    objects: Sequence[np.ndarray],
    left: Sequence[np.ndarray],
    right: Sequence[np.ndarray],
    image_size: tuple[int, int],
) -> StereoFit:
    """Per-camera `cv2.calibrateCamera`, then `cv2.stereoCalibrate` with those intrinsics fixed.

    ``objects``: one M x 3 array per view; ``left``/``right``: the matching M x 2 pixels.
    This is OpenCV's plain recipe (its stereo_calib sample fits all at once, which lets a
    poor view of one camera pull the other's intrinsics).
    """
    objects = [np.asarray(o, np.float32).reshape(-1, 1, 3) for o in objects]
    left = [np.asarray(p, np.float32).reshape(-1, 1, 2) for p in left]
    right = [np.asarray(p, np.float32).reshape(-1, 1, 2) for p in right]
    # k3 stays 0: with a dozen views of an ordinary lens it only fits noise (as ROS does).
    flags = cv2.CALIB_FIX_K3
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 100, 1e-6)
    try:
        _, k1, d1, _, _ = cv2.calibrateCamera(objects, left, image_size, None, None, flags=flags)
        _, k2, d2, _, _ = cv2.calibrateCamera(objects, right, image_size, None, None, flags=flags)
        rms, k1, d1, k2, d2, r, t, _, _, _, _, errors = cv2.stereoCalibrateExtended(
            objects, left, right, k1, d1, k2, d2, image_size, np.eye(3), np.zeros((3, 1)),
            flags=cv2.CALIB_FIX_INTRINSIC, criteria=criteria,
        )  # fmt: skip
    except cv2.error as exc:  # degenerate input makes OpenCV assert; report it in one line
        why = str(exc).strip().splitlines()[-1]
        raise UserError(
            f"calibration failed ({why}); use more varied board views (tilts, distances)"
        ) from None
    rig = StereoRig(image_size, k1, d1, k2, d2, r, t.ravel()).with_rectification()
    baseline = rig.rectified().baseline_m
    if baseline < 0:  # written, it was refused by every reader (review)
        raise UserError(
            f"the right camera came out left of the left one (baseline {baseline:.4f} m): "
            "the left and right images are swapped; exchange them (left*/right* names, or the cameras) "
            "and calibrate again"
        )
    return StereoFit(rig, float(rms), np.asarray(errors, np.float64).reshape(-1, 2))


def epipolar_rms(rig: StereoRig, left: Sequence[np.ndarray], right: Sequence[np.ndarray]) -> float:
    """Rectify the M x 2 point sets with the rig and take the RMS of their y differences."""
    rig = rig.with_rectification()
    gaps = []
    for pl, pr in zip(left, right, strict=True):
        yl = cv2.undistortPoints(pl.reshape(-1, 1, 2), rig.K1, rig.D1, R=rig.R1, P=rig.P1)[:, 0, 1]
        yr = cv2.undistortPoints(pr.reshape(-1, 1, 2), rig.K2, rig.D2, R=rig.R2, P=rig.P2)[:, 0, 1]
        gaps.append(yl - yr)
    return float(np.sqrt(np.mean(np.concatenate(gaps) ** 2)))
