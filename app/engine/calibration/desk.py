"""What a calibration panel needs, in one place: the session hands it to the window
(``Session.desk``) so that the window reaches the calibration code through the session only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from app.engine.calibration.charuco import DICTIONARIES, CharucoTarget
from app.engine.calibration.check import GOOD_RMS_PX, EpipolarReport, check_epipolar, verdict_for
from app.engine.calibration.chessboard import MIN_VIEWS, ChessboardTarget, Coverage, view_parameters
from app.engine.calibration.files import (
    baseline_note,
    declared_size,
    focal_guessed,
    load_calibration,
    load_for_frames,
    write_opencv_yaml,
)
from app.engine.calibration.fit import StereoFit, fit_stereo
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.calibration.selfrect import SelfRectification, rectify_frames
from app.engine.calibration.target import Target
from app.engine.calibration.validate import OFF_CENTRE_WORDS
from app.engine.types import Calibration

BoardView = Any  # one matched view: (object points, left corners, right corners)


class CalibrationDesk:
    """Stateless calibration operations; heavy ones are meant for the UI's worker thread."""

    DICTIONARIES = DICTIONARIES
    MIN_VIEWS = MIN_VIEWS
    RECTIFIED_RMS_PX = GOOD_RMS_PX  # vertical RMS at or below which a pair counts as rectified

    @staticmethod
    def load(
        path: Path, frame_size: tuple[int, int] | None, second: Path | None = None
    ) -> tuple[Calibration, StereoRig | None, str | None]:
        """A calibration file for frames of ``frame_size`` (w, h; None: as the file says), the raw
        rig when it has one, and a note when it was rescaled to the frames. ``second`` is the
        right camera's ROS camera_info or OpenCV's extrinsics.yml (``--calib2``)."""
        if frame_size is None:
            calibration, rig = load_calibration(path, second)
            note = baseline_note(calibration, str(path))
        else:
            calibration, rig, note = load_for_frames(path, second, frame_size)
        return calibration, rig, note  # a placeholder baseline (calib rectify's) is marked unknown

    @staticmethod
    def doubtful(note: str) -> bool:
        """Whether ``load``'s note says the calibration likely does not fit the frames (a principal
        point far off their centre): the window raises it as an error, not a panel line only."""
        return OFF_CENTRE_WORDS in note

    @staticmethod
    def declared_size(path: Path, second: Path | None = None) -> tuple[int, int] | None:
        """The frame size (w, h) a calibration file says it is for, or None (it says none)."""
        return declared_size(path, second)

    @staticmethod
    def save(
        path: str | Path, rig: StereoRig, baseline_known: bool = True, focal_guessed: bool = False
    ) -> None:
        """The rig as OpenCV YAML (what ``calib`` writes and every loader reads); a placeholder
        baseline is marked, so that the file reloads in baselines, not as a 1 m rig, and a
        guessed focal length too, so that its metres are said to be rough wherever it is read."""
        write_opencv_yaml(path, rig, baseline_known, focal_guessed)

    @staticmethod
    def focal_guessed(path: str | Path) -> bool:
        """Whether the file's focal length is a self-rectification's guess."""
        return focal_guessed(path)

    @staticmethod
    def rectifier(rig: StereoRig) -> Rectifier:
        return Rectifier(rig)

    @staticmethod
    def verdict(vertical_rms_px: float) -> str:
        """'rectified', 'marginal' or 'not rectified' for a vertical RMS (px)."""
        return verdict_for(vertical_rms_px)

    @staticmethod
    def check(left: np.ndarray, right: np.ndarray) -> EpipolarReport:
        """The target-free check of a pair (H x W x 3 RGB uint8)."""
        return check_epipolar(left, right)

    @staticmethod
    def target(
        board: str, pattern: tuple[int, int], square_m: float, marker_m: float, dictionary: str
    ) -> Target:
        """A chessboard (inner corners) or a ChArUco board (squares) to detect."""
        if board == "ChArUco":
            return CharucoTarget(pattern, square_m, marker_m, dictionary)
        return ChessboardTarget(pattern, square_m)

    @staticmethod
    def find_view(
        target: Target, left: np.ndarray, right: np.ndarray
    ) -> tuple[BoardView | None, np.ndarray | None, tuple[int, int]]:
        """The board matched in both raw views (or None), its pose parameters for coverage, and
        the image size (w, h)."""
        dl, matched = _detect_pair(target, left, right)
        size = (left.shape[1], left.shape[0])
        params = view_parameters(target.full_view(dl), target.inner, size) if matched and dl else None
        return matched, params, size

    @staticmethod
    def missing_hint(target: Target, left: np.ndarray) -> str:
        """What to check when ``target`` was not found in a raw pair: the board OpenCV does find
        in the left image when it is another size (a chessboard; a second or two), or the fields."""
        return target.hint(cv2.cvtColor(left, cv2.COLOR_RGB2GRAY))

    @staticmethod
    def larger_hint(target: Target, left: np.ndarray) -> str:
        """A note when the board in an RGB view has more inner corners than ``target``'s pattern
        (OpenCV finds the pattern inside it): '' when not, or for boards that cannot tell."""
        larger = getattr(target, "larger_hint", None)
        return larger(cv2.cvtColor(left, cv2.COLOR_RGB2GRAY), "view") if larger is not None else ""

    @staticmethod
    def coverage(params: Sequence[np.ndarray]) -> Coverage:
        return Coverage.of(params)

    @staticmethod
    def fit(views: Sequence[BoardView], size: tuple[int, int]) -> StereoFit:
        """Stereo calibration from matched views, with per-view errors and outlier flags."""
        objects, left, right = ([v[i] for v in views] for i in range(3))
        return fit_stereo(objects, left, right, size)

    @staticmethod
    def self_rectify(
        frames: Sequence[tuple[np.ndarray, np.ndarray]],
        known: StereoRig | None,
        baseline_m: float | None = None,
    ) -> SelfRectification:
        """A rectification from matches over several raw frames (``calib rectify``); ``baseline_m``
        is the rig's measured baseline (None: a known rig's, else a 1 m placeholder)."""
        return rectify_frames(frames, known, baseline_m)

    @staticmethod
    def board_rows(target: Target, left: np.ndarray, right: np.ndarray) -> tuple[int, float] | None:
        """The board's corners seen in both views of a rectified pair: their count and the RMS of
        their vertical offsets (px), the check a repetitive scene cannot fool; None: no board."""
        _, matched = _detect_pair(target, left, right)
        if not matched:
            return None
        cl, cr = (np.asarray(c, np.float64).reshape(-1, 2) for c in matched[1:3])
        return len(cl), float(np.sqrt(np.mean((cl[:, 1] - cr[:, 1]) ** 2)))


def _detect_pair(target: Target, left: np.ndarray, right: np.ndarray) -> tuple[Any, BoardView | None]:
    """``target`` detected in the left view of an RGB pair, and its corners matched in both (None
    when either view misses it)."""
    dl, dr = (target.detect(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)) for img in (left, right))
    return dl, target.match(dl, dr) if dl is not None and dr is not None else None
