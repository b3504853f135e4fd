"""Self-rectification: OpenCV's hand-held pair (projective), and a drifted rig (pose)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.calibration.check import check_epipolar
from app.engine.calibration.files import read_middlebury_calib
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.calibration.selfrect import rectify_frames, to_raw
from app.engine.errors import UserError
from app.engine.formats import read_image_rgb

HANDHELD = Path(__file__).resolve().parents[2] / "data" / "opencv_handheld"


@pytest.fixture(scope="module")
def handheld() -> tuple[np.ndarray, np.ndarray]:
    return read_image_rgb(HANDHELD / "left.jpg"), read_image_rgb(HANDHELD / "right.jpg")


def test_hand_held_pair_self_rectifies(handheld: tuple[np.ndarray, np.ndarray]) -> None:
    result = rectify_frames([handheld])
    assert result.method == "projective" and not result.baseline_known
    assert result.before_rms_px > 5.0 and result.after_rms_px <= 1.0, result.after_rms_px
    assert result.matches >= 100
    # An independent look: the check, on the frames the saved rig rectifies.
    report = check_epipolar(*Rectifier(result.rig).rectify(*handheld))
    assert report.verdict == "rectified" and report.subpixel, report.reason
    assert result.rig.rectified().baseline_m == pytest.approx(1.0)


def _drifted_demo(demo_dir: Path) -> tuple[np.ndarray, np.ndarray, StereoRig, np.ndarray]:
    """The rectified demo pair with the right camera turned a little: (left, raw right,
    the stale rig that still thinks it is rectified, the drift rotation)."""
    left, right = read_image_rgb(demo_dir / "im0.png"), read_image_rgb(demo_dir / "im1.png")
    c = read_middlebury_calib(demo_dir / "calib.txt").calibration
    k1 = np.array([[c.focal_px, 0, c.cx], [0, c.focal_px, c.cy], [0, 0, 1]])
    k2 = k1.copy()
    k2[0, 2] += c.doffs
    drift = cv2.Rodrigues(np.array([0.004, -0.003, 0.006]))[0]
    h, w = left.shape[:2]
    raw = cv2.warpPerspective(right, k2 @ drift @ np.linalg.inv(k2), (w, h), borderMode=cv2.BORDER_REFLECT)
    zeros = np.zeros((1, 5))
    stale = StereoRig((w, h), k1, zeros, k2, zeros, np.eye(3), np.array([-c.baseline_m, 0, 0]))
    return left, raw, stale, drift


def test_drifted_rig_gets_its_pose_back(demo_dir: Path) -> None:
    left, raw, stale, drift = _drifted_demo(demo_dir)
    assert check_epipolar(*Rectifier(stale).rectify(left, raw)).verdict == "not rectified"
    result = rectify_frames([(left, raw)], known=stale)
    assert result.method == "pose" and result.baseline_known
    assert result.after_rms_px < 0.5 and result.before_rms_px > 3.0
    np.testing.assert_allclose(result.rig.K1, stale.K1)
    assert np.linalg.norm(result.rig.T) == pytest.approx(np.linalg.norm(stale.T))
    # pitch and roll, which rows depend on, come back; yaw trades against disparity
    error = cv2.Rodrigues(result.rig.R @ drift.T)[0].ravel()
    assert abs(np.degrees(error[0])) < 0.05 and abs(np.degrees(error[2])) < 0.05
    assert check_epipolar(*Rectifier(result.rig).rectify(left, raw)).verdict == "rectified"


def test_points_go_back_to_raw_pixels(handheld: tuple[np.ndarray, np.ndarray]) -> None:
    rig = rectify_frames([handheld]).rig.with_rectification()
    raw = np.array([[100.0, 120.0], [400.0, 300.0]], np.float32)
    rect = cv2.undistortPoints(raw.reshape(-1, 1, 2), rig.K2, rig.D2, R=rig.R2, P=rig.P2).reshape(-1, 2)
    np.testing.assert_allclose(to_raw(rig, rect, 1), raw, atol=1e-3)


def test_no_overlap_is_a_user_error(handheld: tuple[np.ndarray, np.ndarray], demo_dir: Path) -> None:
    flat = np.full_like(handheld[0], 128)
    with pytest.raises(UserError, match="consistent matches over the frames"):
        rectify_frames([(handheld[0], flat)])
    left, raw, stale, _ = _drifted_demo(
        Path(__file__).resolve().parents[3] / "resources" / "demo" / "motorcycle"
    )
    with pytest.raises(UserError, match="calibration is for 741x500 but frames are"):
        rectify_frames([(left[:400], raw[:400])], known=stale)
