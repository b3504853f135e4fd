"""Self-rectification: OpenCV's hand-held pair (projective), and a drifted rig (pose)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.calibration.check import check_epipolar
from app.engine.calibration.files import read_middlebury_calib
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.calibration.selfrect import pooled_matches, rectify_frames, self_rectify, to_raw
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


def _rectified_disparities(
    rig: StereoRig, left: np.ndarray, right: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pair's feature matches: horizontal offsets in raw pixels and disparities after ``rig``."""
    rig = rig.with_rectification()
    pl, pr, _, _ = pooled_matches([(left, right)])
    ql, qr = (
        cv2.undistortPoints(p.reshape(-1, 1, 2), k, d, R=r, P=pm).reshape(-1, 2)
        for p, k, d, r, pm in ((pl, rig.K1, rig.D1, rig.R1, rig.P1), (pr, rig.K2, rig.D2, rig.R2, rig.P2))
    )
    return pl[:, 0] - pr[:, 0], ql[:, 0] - qr[:, 0]


def test_a_flat_scene_keeps_its_disparity(demo_dir: Path) -> None:
    # Hartley's rectification of a fronto-parallel scene maps every match to disparity 0
    # (its matching transform minimises disparity); the rig must keep the 20 px
    image = read_image_rgb(demo_dir / "im0.png")
    left, right = image[:, :640], image[:, 20:660]
    raw, rectified = _rectified_disparities(rectify_frames([(left, right)]).rig, left, right)
    assert np.median(raw) == pytest.approx(20, abs=0.5)
    assert np.median(rectified) == pytest.approx(20, abs=1.0), np.percentile(rectified, [5, 50, 95])


def test_a_pair_only_rows_apart_is_corrected_along_its_rows(demo_dir: Path) -> None:
    """A wall 20 px away, the right camera 3 px low: Hartley's projective pair sheared the views
    (24.6 px on the wall's left half, 20.0 on its right). Moving the right view's rows keeps every
    disparity and leaves the left view as it was."""
    image = read_image_rgb(demo_dir / "im0.png")
    left, right = image[150:390, 200:520], image[147:387, 220:540]
    result = rectify_frames([(left, right)], baseline_m=0.1)
    assert result.method == "rows" and result.after_rms_px < 0.3 and result.before_rms_px > 2.5
    _, rectified = _rectified_disparities(result.rig, left, right)
    assert np.percentile(rectified, 5) > 19 and np.percentile(rectified, 95) < 21, np.percentile(
        rectified, [5, 95]
    )
    shown, _ = Rectifier(result.rig).rectify(left, right)
    assert np.abs(shown.astype(int) - left.astype(int)).mean() < 1  # the left view as it was


@pytest.mark.parametrize("pair", ["demo", "handheld"])
def test_projective_disparities_suit_a_zero_to_max_search(
    pair: str, demo_dir: Path, handheld: tuple[np.ndarray, np.ndarray]
) -> None:
    # a scene in depth: matched disparities after self-rectification are >= 0 (none behind the rig)
    left, right = (
        handheld if pair == "handheld" else (read_image_rgb(demo_dir / f"im{i}.png") for i in (0, 1))
    )
    _, rectified = _rectified_disparities(rectify_frames([(left, right)]).rig, left, right)
    assert np.mean(rectified >= -1.0) >= 0.95, np.percentile(rectified, [2, 50, 98])


@pytest.mark.parametrize("drop", [0, 3])
def test_a_nearly_rectified_pair_stays_the_right_way_up_and_whole(demo_dir: Path, drop: int) -> None:
    # cv2.stereoRectifyUncalibrated may answer -H for H: the same point map, but read as a
    # camera rotation (the rig's R1) it turned the views upside down and zoomed them
    left, right = (read_image_rgb(demo_dir / f"im{i}.png") for i in (0, 1))
    if drop:  # the right camera a few px low
        right = np.ascontiguousarray(np.pad(right, ((drop, 0), (0, 0), (0, 0)), mode="edge")[:-drop])
    rig = rectify_frames([(left, right)]).rig.with_rectification()
    assert rig.R1 is not None
    centre = rig.R1 @ np.array([0.0, 0.0, 1.0])
    assert centre[2] > 0 and rig.R1[0, 0] > 0 and rig.R1[1, 1] > 0  # the scene in front, not turned
    rectified, _ = Rectifier(rig).rectify(left, right)
    turned = np.ascontiguousarray(left[::-1, ::-1])
    grey = [cv2.cvtColor(i, cv2.COLOR_RGB2GRAY).astype(np.float64).ravel() for i in (rectified, left, turned)]
    upright, upside_down = np.corrcoef(grey)[0, 1:]
    assert upright > 0.35 and upright > upside_down + 0.2, (upright, upside_down)  # nearly in place
    assert np.mean(rectified.sum(axis=2) == 0) < 0.2  # the whole view kept, little border


def test_either_sign_of_hartleys_homographies_gives_the_same_rig(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # -H moves points as H does; OpenCV answered it for some pairs, and the rig then turned
    # the views upside down (its R1 a 180-degree turn of the camera)
    left, right = (read_image_rgb(demo_dir / f"im{i}.png") for i in (0, 1))
    pl, pr, size, _ = pooled_matches([(left, right)])
    plain = self_rectify(pl, pr, size)
    answer = cv2.stereoRectifyUncalibrated
    monkeypatch.setattr(
        cv2, "stereoRectifyUncalibrated", lambda *a: (lambda ok, h1, h2: (ok, -h1, -h2))(*answer(*a))
    )
    negated = self_rectify(pl, pr, size)
    for a, b in ((plain.rig.R1, negated.rig.R1), (plain.rig.R2, negated.rig.R2)):
        np.testing.assert_allclose(a, b, atol=1e-9)


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


def test_a_pose_fit_without_a_stereo_baseline_is_refused_in_words_of_frames(
    monkeypatch: pytest.MonkeyPatch, handheld: tuple[np.ndarray, np.ndarray]
) -> None:
    """A chessboard's matches fitted a pose that looks straight along the baseline, and the error
    was a file's: "P1[0,0] and P2[0,0] (focal length) must be positive; check the file"."""
    from app.engine.calibration import selfrect

    h, w = handheld[0].shape[:2]
    k = np.array([[w, 0, (w - 1) / 2], [0, w, (h - 1) / 2], [0, 0, 1.0]])
    zeros = np.zeros((1, 5))
    known = StereoRig((w, h), k, zeros, k, zeros, np.eye(3), np.array([-0.08, 0.0, 0.0]))
    along = StereoRig((w, h), k, zeros, k, zeros, np.eye(3), np.array([0.0, 0.0, 0.08]))
    monkeypatch.setattr(selfrect, "_pose", lambda *_a: along)
    with pytest.raises(UserError) as exc:
        rectify_frames([handheld], known)
    assert str(exc.value).startswith("no relative pose fits the matches") and "file" not in str(exc.value)
