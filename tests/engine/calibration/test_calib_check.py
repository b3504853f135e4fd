"""The calibration check: vertical offsets of feature matches, and the chessboard checks."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.calibration.check import check_board, check_epipolar, verdict_for
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.errors import UserError
from app.engine.formats import read_image_rgb
from app.engine.types import Calibration
from tests.engine.calibration.test_chessboard import K_LEFT, PATTERN, SIZE, SQUARE_M, render_pair, true_rig


@pytest.fixture(scope="module")
def demo_pair(demo_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    return read_image_rgb(demo_dir / "im0.png"), read_image_rgb(demo_dir / "im1.png")


def _warp(img: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    return cv2.warpAffine(img, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def test_verdict_thresholds() -> None:
    assert [verdict_for(v) for v in (0.3, 0.6, 0.61, 1.0, 1.2)] == [
        "rectified",
        "rectified",
        "marginal",
        "marginal",
        "not rectified",
    ]


def test_rectified_demo_pair_is_good(demo_pair: tuple[np.ndarray, np.ndarray]) -> None:
    report = check_epipolar(*demo_pair)
    assert report.verdict == "rectified", report.reason
    assert report.matches >= 200 and report.points_left.shape == report.points_right.shape == (
        report.matches,
        2,
    )
    assert report.vertical_rms_px < 0.45 and abs(report.vertical_mean_px) < 0.1
    assert report.vertical_p95_px < 1.0
    summary = report.summary()
    assert summary["verdict"] == "rectified" and summary["matches"] == report.matches
    assert report.subpixel and report.misalignment is not None
    assert abs(report.misalignment.roll_deg) < 0.02 and abs(report.misalignment.shift_px) < 0.1


def test_a_swapped_pair_is_called_out(demo_pair: tuple[np.ndarray, np.ndarray]) -> None:
    assert "swapped" not in check_epipolar(*demo_pair).reason
    report = check_epipolar(demo_pair[1], demo_pair[0])
    assert report.verdict == "rectified" and "the images look swapped" in report.reason
    # what the window and the JSON show: swapped, the rows' own verdict beside it
    assert report.headline == "swapped" and check_epipolar(*demo_pair).headline == "rectified"
    summary = report.summary()
    assert summary["verdict"] == "swapped" and summary["rows_verdict"] == "rectified"


def test_small_rotation_is_bad(demo_pair: tuple[np.ndarray, np.ndarray]) -> None:
    left, right = demo_pair
    h, w = right.shape[:2]
    rotated = _warp(right, cv2.getRotationMatrix2D((w / 2, h / 2), 0.75, 1.0))
    report = check_epipolar(left, rotated)
    assert report.verdict == "not rectified" and report.vertical_rms_px > 1.2
    assert report.misalignment is not None and report.misalignment.roll_deg == pytest.approx(0.75, abs=0.1)


def test_vertical_shift_is_measured(demo_pair: tuple[np.ndarray, np.ndarray]) -> None:
    left, right = demo_pair
    report = check_epipolar(left, _warp(right, np.array([[1.0, 0, 0], [0, 1, 0.8]])))
    assert report.vertical_mean_px == pytest.approx(-0.8, abs=0.12)
    assert report.misalignment is not None and report.misalignment.shift_px == pytest.approx(-0.8, abs=0.12)
    assert report.verdict == "marginal"


def test_sift_option(demo_pair: tuple[np.ndarray, np.ndarray]) -> None:
    report = check_epipolar(*demo_pair, detector="sift", max_features=1500)
    assert report.verdict == "rectified" and report.matches >= 100


def test_textureless_pair_is_unknown() -> None:
    flat = np.full((240, 320, 3), 128, np.uint8)
    report = check_epipolar(flat, flat)
    assert report.verdict == "unknown" and report.matches < 20 and "textured" in report.reason
    assert report.summary()["vertical_rms_px"] is None


def test_chessboard_on_a_rectified_rig() -> None:
    """An ideal rectified rig: rows agree, and the triangulated squares have the true size."""
    zeros = np.zeros((1, 5))
    ideal = StereoRig(SIZE, K_LEFT, zeros, K_LEFT, zeros, np.eye(3), np.array([-0.12, 0, 0]))
    left, right = render_pair((0.2, -0.3, 0.1), (0.06, 0.0, 0.9), ideal)
    truth = Calibration(focal_px=700.0, baseline_m=0.12, cx=320.0, cy=240.0)
    board = check_board(left, right, PATTERN, SQUARE_M, truth)
    assert board.corners == 48 and board.epipolar_rms_px < 0.1
    assert board.square_error_percent is not None and abs(board.square_error_percent) < 0.5
    # a baseline 4 % too long makes every distance, so every square, 4 % too large
    wrong = Calibration(focal_px=700.0, baseline_m=0.125, cx=320.0, cy=240.0)
    off = check_board(left, right, PATTERN, SQUARE_M, wrong).square_error_percent
    assert off == pytest.approx(100 * (0.125 / 0.12 - 1), abs=0.5)
    assert check_board(left, right, PATTERN, SQUARE_M).square_error_percent is None


def test_raw_rig_rectified_then_checked() -> None:
    """Frames of the raw (rotated, unequal) rig, rectified with its own calibration."""
    rig = true_rig()
    left, right = render_pair((-0.2, 0.3, 0.0), (0.06, 0.02, 0.85))
    raw = check_board(left, right, PATTERN, SQUARE_M)
    assert raw.epipolar_rms_px > 2.0  # the raw rig is visibly misaligned
    rectifier = Rectifier(rig)
    board = check_board(*rectifier.rectify(left, right), PATTERN, SQUARE_M, rectifier.calibration)
    assert board.epipolar_rms_px < 0.15
    assert board.square_error_percent is not None and abs(board.square_error_percent) < 0.5


def test_no_chessboard_in_view(demo_pair: tuple[np.ndarray, np.ndarray]) -> None:
    with pytest.raises(UserError, match=r"no 8x6 chessboard found in the left image; check --pattern"):
        check_board(*demo_pair, PATTERN, SQUARE_M)


HANDHELD = Path(__file__).resolve().parents[2] / "data" / "opencv_handheld"


def test_hand_held_pair_is_not_rectified() -> None:
    # Two photographs of a textured scene from different places: the check must see the
    # misalignment, not give up on it (it found 1 match when it filtered by row).
    left, right = read_image_rgb(HANDHELD / "left.jpg"), read_image_rgb(HANDHELD / "right.jpg")
    report = check_epipolar(left, right)
    assert report.verdict == "not rectified" and report.matches >= 50
    assert report.vertical_rms_px > 5.0 and "times the 0.6 px" in report.reason
    assert report.misalignment is not None and abs(report.misalignment.roll_deg) > 1.0
    # rows 39 px apart say nothing of which image is left: it read "swapped", and the rectify that
    # followed found the pair the right way round (review)
    assert "swapped" not in report.reason
