"""ChArUco boards: rendered through the known rig of test_chessboard, partly out of view too."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.calibration.charuco import CharucoTarget, dictionary
from app.engine.calibration.folder import calibrate_folder
from app.engine.errors import UserError
from tests.engine.calibration.test_chessboard import BASELINE_M, K_LEFT, POSES, SIZE, true_rig

SQUARES = (8, 6)
SQUARE_M = 0.03
MARKER_M = 0.022
_PX = 128  # texture pixels per square
_SS = 4  # supersampling, as the chessboard renderer does


def _render(target: CharucoTarget, k: np.ndarray, r: np.ndarray, t: np.ndarray) -> np.ndarray:
    """H x W uint8 view of the board whose outer corner (board origin) sits at ``t``."""
    texture = target.render(_PX, margin_px=_PX)
    s = SQUARE_M / _PX
    texel_to_board = np.array([[s, 0, 0.5 * s - SQUARE_M], [0, s, 0.5 * s - SQUARE_M], [0, 0, 1]])
    upscale = np.array([[_SS, 0, (_SS - 1) / 2], [0, _SS, (_SS - 1) / 2], [0, 0, 1]])
    h = upscale @ k @ np.column_stack([r[:, 0], r[:, 1], t]) @ texel_to_board
    big = cv2.warpPerspective(
        texture, h, (SIZE[0] * _SS, SIZE[1] * _SS), flags=cv2.INTER_LINEAR, borderValue=90
    )
    return cv2.resize(big, SIZE, interpolation=cv2.INTER_AREA)


def _pose(
    rvec: tuple[float, float, float], centre: tuple[float, float, float]
) -> tuple[np.ndarray, np.ndarray]:
    r = cv2.Rodrigues(np.asarray(rvec, np.float64))[0]
    mid = np.array([SQUARES[0] / 2 * SQUARE_M, SQUARES[1] / 2 * SQUARE_M, 0.0])
    return r, np.asarray(centre, np.float64) - r @ mid


def _write(folder: Path, target: CharucoTarget, turn: bool = True) -> Path:
    rig = true_rig()
    for i, (rvec, centre) in enumerate(POSES):
        r, t = _pose(rvec, centre)
        if turn and i % 2:  # every other board upside down: the ids still fix the order
            r = r @ cv2.Rodrigues(np.array([0.0, 0.0, np.pi]))[0]
            t = t + r @ np.array([-SQUARES[0] * SQUARE_M, -SQUARES[1] * SQUARE_M, 0.0])
        cv2.imwrite(str(folder / f"left_{i:02d}.png"), _render(target, rig.K1, r, t))
        cv2.imwrite(str(folder / f"right_{i:02d}.png"), _render(target, rig.K2, rig.R @ r, rig.R @ t + rig.T))
    return folder


@pytest.fixture(scope="module")
def target() -> CharucoTarget:
    return CharucoTarget(SQUARES, SQUARE_M, MARKER_M, "4X4_50")


def test_charuco_calibration_recovers_the_rig(target: CharucoTarget, tmp_path: Path) -> None:
    result = calibrate_folder(_write(tmp_path, target), target)
    assert len(result.views) == len(POSES)
    assert result.baseline_m == pytest.approx(BASELINE_M, rel=0.01)
    assert result.rms_px < 0.3 and result.epipolar_rms_px < 0.2
    np.testing.assert_allclose(result.rig.K1[0, 0], K_LEFT[0, 0], rtol=0.01)


def test_partly_visible_board_pairs_by_id(target: CharucoTarget) -> None:
    rig = true_rig()
    r, t = _pose((0.1, 0.2, 0.0), (0.2, 0.0, 0.6))  # off to the right: cut by the image edge
    left = target.detect(_render(target, rig.K1, r, t))
    right = target.detect(_render(target, rig.K2, rig.R @ r, rig.R @ t + rig.T))
    assert left is not None and right is not None
    assert len(left.ids) < target.inner[0] * target.inner[1]
    matched = target.match(left, right)
    assert matched is not None
    obj, pl, pr = matched
    assert len(obj) == len(np.intersect1d(left.ids, right.ids))
    # the same corners: left and right points agree with the rig's projection of obj
    obj64 = obj.astype(np.float64)
    seen_left = cv2.projectPoints(obj64, cv2.Rodrigues(r)[0], t, rig.K1, None)[0].reshape(-1, 2)
    seen_right = cv2.projectPoints(obj64, cv2.Rodrigues(rig.R @ r)[0], rig.R @ t + rig.T, rig.K2, None)[0]
    assert np.abs(seen_left - pl).max() < 0.5 and np.abs(seen_right.reshape(-1, 2) - pr).max() < 0.5
    assert target.full_view(left).shape == (target.inner[0] * target.inner[1], 2)


def test_bad_charuco_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match="unknown ArUco dictionary"):
        dictionary("9X9_7")
    with pytest.raises(UserError, match="smaller than the square"):
        CharucoTarget(SQUARES, 0.03, 0.04)
