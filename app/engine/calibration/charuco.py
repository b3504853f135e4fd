"""ChArUco boards: a chessboard with ArUco markers in its white squares (opencv-contrib).

Each inner corner has an id decoded from its neighbouring markers, so the order is fixed by
the board whatever its orientation, and a board seen only in part still calibrates: a pair
uses the corners both cameras saw. Boards are given by their squares (cols x rows), as
OpenCV's ``CharucoBoard`` and calib.io's generator describe them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from app.engine.calibration.fit import MIN_POINTS
from app.engine.calibration.target import Detection
from app.engine.errors import UserError

DICTIONARIES = tuple(
    sorted({n.removeprefix("DICT_").upper() for n in dir(cv2.aruco) if n.startswith("DICT_")})
)


def dictionary(name: str) -> cv2.aruco.Dictionary:
    """An ArUco dictionary by name, '4X4_50' or 'DICT_4X4_50'."""
    key = "DICT_" + name.upper().removeprefix("DICT_")
    if not hasattr(cv2.aruco, key):
        raise UserError(f"unknown ArUco dictionary {name!r}; use one of: {', '.join(DICTIONARIES)}")
    return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, key))


@dataclass(frozen=True)
class CharucoTarget:
    """``squares`` (cols, rows) of ``square_m``, markers of ``marker_m``, from ``dictionary_name``."""

    squares: tuple[int, int]
    square_m: float
    marker_m: float
    dictionary_name: str = "4X4_50"
    legacy: bool = False  # boards made before OpenCV 4.6 with an even number of rows
    _board: cv2.aruco.CharucoBoard = field(init=False, repr=False, compare=False)
    _detector: cv2.aruco.CharucoDetector = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cols, rows = self.squares
        if cols < 3 or rows < 3:
            raise UserError(f"a ChArUco board needs at least 3x3 squares, got {cols}x{rows}")
        if not 0 < self.marker_m < self.square_m:
            raise UserError(
                f"marker size {self.marker_m} m must be positive and smaller than the square "
                f"{self.square_m} m; measure both on the printed board"
            )
        board = cv2.aruco.CharucoBoard(
            self.squares, self.square_m, self.marker_m, dictionary(self.dictionary_name)
        )
        board.setLegacyPattern(self.legacy)
        object.__setattr__(self, "_board", board)
        object.__setattr__(self, "_detector", cv2.aruco.CharucoDetector(board))

    @property
    def inner(self) -> tuple[int, int]:
        return self.squares[0] - 1, self.squares[1] - 1

    @property
    def board(self) -> cv2.aruco.CharucoBoard:
        return self._board

    def describe(self) -> str:
        cols, rows = self.squares
        return f"{cols}x{rows}-square ChArUco board ({self.dictionary_name})"

    def hint(self, gray: np.ndarray | None = None) -> str:
        return "check --squares (squares, COLSxROWS), --dictionary and --legacy"

    def corners_m(self) -> np.ndarray:
        """N x 3 float32 board positions of the inner corners, by id."""
        return np.asarray(self._board.getChessboardCorners(), np.float32).reshape(-1, 3)

    def detect(self, gray: np.ndarray) -> Detection | None:
        """Corners with ids in an H x W uint8 image; None below MIN_POINTS corners."""
        corners, ids, _, _ = self._detector.detectBoard(gray)
        if ids is None or len(ids) < MIN_POINTS:
            return None
        return Detection(ids.ravel().astype(int), np.asarray(corners, np.float32).reshape(-1, 2))

    def match(self, left: Detection, right: Detection) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        common, il, ir = np.intersect1d(left.ids, right.ids, return_indices=True)
        if len(common) < MIN_POINTS:
            return None
        obj = self.corners_m()[common]
        if np.linalg.matrix_rank(obj[:, :2] - obj[:, :2].mean(axis=0), tol=1e-9) < 2:
            return None  # one row of corners: no homography, no pose
        return obj, left.points[il], right.points[ir]

    def full_view(self, found: Detection) -> np.ndarray:
        """All inner corners, row after row: the found ones' board-to-image homography applied."""
        board = self.corners_m()[:, :2]
        h, _ = cv2.findHomography(board[found.ids], found.points)
        if h is None:
            return np.repeat(found.points.mean(axis=0, keepdims=True), len(board), axis=0)
        return cv2.perspectiveTransform(board.reshape(-1, 1, 2).astype(np.float64), h).reshape(-1, 2)

    def render(self, pixels_per_square: int, margin_px: int = 0) -> np.ndarray:
        """The board as an H x W uint8 image (for printing and for tests)."""
        cols, rows = self.squares
        size = (cols * pixels_per_square + 2 * margin_px, rows * pixels_per_square + 2 * margin_px)
        return np.asarray(self._board.generateImage(size, marginSize=margin_px), np.uint8)
