"""Stereo calibration from chessboard views: pairing files, corners, coverage, calibration.

A pattern is (cols, rows) inner corners. Corners are N x 2 float32 (x, y) pixel arrays,
N = cols * rows, row after row, in an order read off the board itself (see `board_order`),
so that the left and right views of one pair list the same physical corners in the same order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from app.engine.calibration.fit import fit_stereo
from app.engine.calibration.rig import StereoRig
from app.engine.calibration.target import Detection
from app.engine.errors import UserError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".pgm", ".ppm")
MIN_VIEWS = 4
# Spread of x, y, size and skew over the views that counts as full coverage (ROS calibrator).
COVERAGE_SPAN = (0.7, 0.7, 0.4, 0.5)
_SIDE = re.compile(r"left|right", re.IGNORECASE)


def natural_key(name: str) -> list[int | str]:
    """'img10' sorts after 'img9'."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def find_stereo_pairs(folder: str | Path, notes: list[str] | None = None) -> list[tuple[Path, Path]]:
    """(left, right) image paths in ``folder``: files named *left*/*right*, or left/ and right/.

    Files pair up when their names match once 'left'/'right' is removed, so a missing frame
    cannot shift the pairing: a file without its partner is left out, said in ``notes`` (one
    missing image stopped the whole calibration: review), and an error without ``notes`` or
    when no pair is left.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"folder not found: {folder}; give a folder of left/right chessboard images")
    split = (folder / "left").is_dir() and (folder / "right").is_dir()
    sides: dict[str, dict[str, Path]] = {"left": {}, "right": {}}
    for side in sides:
        files = sorted((folder / side).iterdir()) if split else sorted(folder.iterdir())
        for path in files:
            if path.suffix.lower() not in IMAGE_SUFFIXES or (not split and side not in path.name.lower()):
                continue
            if path.name.startswith("."):  # hidden: macOS's ._left01.jpg resource forks and the like
                continue
            sides[side][_SIDE.sub("", path.name.lower())] = path
    left, right = sides["left"], sides["right"]
    if not left and not right:
        raise UserError(
            f"no images named *left*/*right* (or in left/ and right/) in {folder}; check the folder"
        )
    unpaired = [
        (mine[k], side)
        for mine, other, side in ((left, right, "right"), (right, left, "left"))
        for k in sorted(set(mine) - set(other), key=natural_key)
    ]
    pairs = [(left[k], right[k]) for k in sorted(set(left) & set(right), key=natural_key)]
    if unpaired:  # every one named at once, not the first of them per run
        listed = ", ".join(f"{path.name} (no {side})" for path, side in unpaired[:6])
        more = f" and {len(unpaired) - 6} more" if len(unpaired) > 6 else ""
        if notes is None or not pairs:
            raise UserError(
                f"{len(unpaired)} image(s) in {folder} have no partner to pair with: {listed}{more}; "
                "add the missing images or remove these files"
            )
        notes.append(f"{len(unpaired)} image(s) without a partner left out: {listed}{more}")
    return pairs


def board_points(pattern: tuple[int, int], square_m: float) -> np.ndarray:
    """N x 3 float32 corner positions on the board plane (z = 0), in metres, row after row."""
    cols, rows = pattern
    grid = np.mgrid[0:cols, 0:rows].T.reshape(-1, 2)
    return np.hstack([grid * square_m, np.zeros((len(grid), 1))]).astype(np.float32)


MIN_CORNERS, MAX_CORNERS = 3, 100  # per side: OpenCV's detectors need more than 2 inner corners


def check_pattern(pattern: tuple[int, int]) -> None:
    """A ``UserError`` unless both sides count MIN_CORNERS to MAX_CORNERS inner corners."""
    cols, rows = pattern
    if not (MIN_CORNERS <= cols <= MAX_CORNERS and MIN_CORNERS <= rows <= MAX_CORNERS):
        raise UserError(
            f"a chessboard pattern of {cols}x{rows} inner corners cannot be detected; each side needs "
            f"{MIN_CORNERS} to {MAX_CORNERS} inner corners (count the corners where four squares meet)"
        )


def detect_corners(gray: np.ndarray, pattern: tuple[int, int]) -> np.ndarray | None:
    """Sub-pixel corners of the board in an H x W uint8 image: N x 2 float32, or None."""
    check_pattern(pattern)
    found, corners = cv2.findChessboardCornersSB(gray, pattern, flags=cv2.CALIB_CB_NORMALIZE_IMAGE)
    if not found:
        flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE
        found, corners = cv2.findChessboardCorners(gray, pattern, flags=flags)
        if not found:
            return None
    # Refine either way: on sharp images cornerSubPix's saddle fit is about twice as accurate
    # as the SB detector's own estimate (0.06 vs 0.12 px RMS on the rendered test boards).
    # A window wider than half a square would pull corners towards their neighbours.
    spacing = float(np.min(np.linalg.norm(np.diff(corners.reshape(-1, 2), axis=0), axis=1)))
    win = int(np.clip(spacing * 0.4, 2, 11))
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)
    corners = cv2.cornerSubPix(gray, np.asarray(corners, np.float32), (win, win), (-1, -1), criteria)
    return board_order(gray, np.asarray(corners, np.float32).reshape(-1, 2), pattern)


GUESS_SIDES = range(3, 16)  # inner corners per side of the boards `guess_pattern` looks for
GUESS_WIDTH = 800  # px: images are reduced to this width first (OpenCV's detector slows with size)


def guess_pattern(gray: np.ndarray) -> tuple[int, int] | None:
    """The largest chessboard (inner corners, cols >= rows, 3 to 15 a side) OpenCV finds in an
    H x W uint8 image, or None: a hint for a --pattern found in no image (a few seconds; OpenCV's
    detector also finds a smaller board inside a larger one, hence the largest first)."""
    found = guess_board(gray)
    return None if found is None else found[0]


def guess_board(gray: np.ndarray) -> tuple[tuple[int, int], bool] | None:
    """``guess_pattern``'s board and whether it reaches the image's edge (its outer squares, one
    corner spacing beyond its outer corners, fall outside the image: a larger board may be cut
    off there), or None."""
    sizes = sorted(
        ((c, r) for c in GUESS_SIDES for r in GUESS_SIDES if r <= c), key=lambda p: (-p[0] * p[1], -p[0])
    )
    return _first_board(gray, sizes)


LARGER_BY = 3  # `larger_board` tries boards up to this many inner corners more a side


def larger_board(gray: np.ndarray, pattern: tuple[int, int]) -> tuple[int, int] | None:
    """The largest board of up to ``LARGER_BY`` more inner corners a side than ``pattern`` that
    OpenCV finds in an H x W uint8 image, or None (OpenCV finds a pattern inside a larger board)."""
    cols, rows = pattern
    sizes = [(cols + a, rows + b) for a in range(LARGER_BY + 1) for b in range(LARGER_BY + 1) if a or b]
    return _first_found(gray, sorted(sizes, key=lambda p: -p[0] * p[1]))


def _first_found(gray: np.ndarray, sizes: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The first of ``sizes`` (inner corners) whose board OpenCV's quick check finds in the image,
    reduced to ``GUESS_WIDTH`` first; None when none is."""
    found = _first_board(gray, sizes)
    return None if found is None else found[0]


def _first_board(gray: np.ndarray, sizes: list[tuple[int, int]]) -> tuple[tuple[int, int], bool] | None:
    """``_first_found``'s board and whether it reaches the image's edge (``guess_board``)."""
    scale = min(1.0, GUESS_WIDTH / gray.shape[1])
    small = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) if scale < 1 else gray
    flags = cv2.CALIB_CB_FAST_CHECK | cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE
    for size in sizes:
        found, corners = cv2.findChessboardCorners(small, size, flags=flags)
        if found:
            return size, _reaches_edge(np.asarray(corners, np.float32).reshape(-1, 2), small.shape)
    return None


def _reaches_edge(corners: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether a board's outer squares (one corner spacing past its N x 2 inner corners) reach
    past an image of ``shape``."""
    steps = np.linalg.norm(np.diff(corners, axis=0), axis=1)
    spacing = float(np.median(steps)) if steps.size else 0.0
    h, w = shape[:2]
    lo, hi = corners.min(0) - spacing, corners.max(0) + spacing
    return bool(lo[0] < 0 or lo[1] < 0 or hi[0] > w - 1 or hi[1] > h - 1)


def pattern_hint(pattern: tuple[int, int], gray: np.ndarray | None, where: str) -> str:
    """What to check when a board of ``pattern`` is not found; given the image (named ``where``)
    it was not found in, the board OpenCV does find there."""
    guessed = guess_board(gray) if gray is not None else None
    if guessed is not None and set(guessed[0]) != set(pattern):
        (cols, rows), cut = guessed
        fewer = cols * rows < pattern[0] * pattern[1]
        if cut and fewer:  # a board pushed past the edge shows fewer corners (review: "try 8x6")
            return (
                f"a {cols}x{rows} board reaching the image's edge was found in {where}: bring the whole "
                f"board into both views (or, if it is {cols}x{rows}, give --pattern {cols}x{rows})"
            )
        return f"a {cols}x{rows} board was found in {where}: try --pattern {cols}x{rows}"
    return "check --pattern (inner corners, COLSxROWS)"


def is_symmetric(pattern: tuple[int, int]) -> bool:
    """True when a half turn maps the board onto itself: cols + rows inner corners even."""
    return (pattern[0] + pattern[1]) % 2 == 0


def board_order(gray: np.ndarray, pts: np.ndarray, pattern: tuple[int, int]) -> np.ndarray:
    """The detector's N x 2 corners of an H x W image put in an order fixed by the board.

    The detectors may start at any end of the board. Two rules make the order the same in
    every camera that sees the board's printed side: rows run so that the first row and the
    first column turn like the image axes (x right, y down), which leaves a half turn open;
    a board with cols + rows odd is not symmetric under a half turn (its corner squares
    differ in colour), so the order is the one whose first square is dark. A symmetric board
    starts at the corner nearest the image's top left, and `align_pair` settles a pair.
    """
    cols, rows = pattern
    grid = pts.reshape(rows, cols, 2)
    across, down = grid[0, -1] - grid[0, 0], grid[-1, 0] - grid[0, 0]
    if float(across[0] * down[1] - across[1] * down[0]) < 0:  # mirrored: reverse the rows
        grid = grid[::-1]
    if is_symmetric(pattern):
        flip = float((grid[-1, -1] - grid[0, 0]).sum()) < 0
    else:
        flip = _first_square_is_light(gray, grid)
    if flip:
        grid = grid[::-1, ::-1]
    return np.ascontiguousarray(grid.reshape(-1, 2), dtype=np.float32)


def _first_square_is_light(gray: np.ndarray, grid: np.ndarray) -> bool:
    """Are the squares of the first one's colour lighter than the others? ``grid`` rows x cols x 2."""
    centres = (grid[:-1, :-1] + grid[:-1, 1:] + grid[1:, :-1] + grid[1:, 1:]) / 4.0
    blurred = cv2.blur(gray, (3, 3))
    h, w = gray.shape
    x = np.clip(np.round(centres[..., 0]).astype(int), 0, w - 1)
    y = np.clip(np.round(centres[..., 1]).astype(int), 0, h - 1)
    values = blurred[y, x].astype(np.float64)
    i, j = np.indices(values.shape)
    even = (i + j) % 2 == 0
    return float(values[even].mean()) > float(values[~even].mean())


def align_pair(left: np.ndarray, right: np.ndarray, pattern: tuple[int, int]) -> np.ndarray:
    """The right view's N x 2 corners in the left view's order.

    The cameras of a rig look the same way, so the board's rows point the same way in both
    images (within far less than a quarter turn); when they point opposite ways, one view
    started at the other end (a symmetric board, or a first square misjudged) and the right
    view is turned round to match.
    """
    cols, rows = pattern
    gl, gr = left.reshape(rows, cols, 2), right.reshape(rows, cols, 2)
    along = float((gl[0, -1] - gl[0, 0]) @ (gr[0, -1] - gr[0, 0]))
    across = float((gl[-1, 0] - gl[0, 0]) @ (gr[-1, 0] - gr[0, 0]))
    if along < 0 and across < 0:
        return np.ascontiguousarray(right[::-1])
    return right


def view_parameters(corners: np.ndarray, pattern: tuple[int, int], image_size: tuple[int, int]) -> np.ndarray:
    """(x, y, size, skew) of one view in 0..1, as the ROS camera calibrator measures them."""
    cols, rows = pattern
    w, h = image_size
    grid = corners.reshape(rows, cols, 2).astype(np.float64)
    ul, ur, dr, dl = grid[0, 0], grid[0, -1], grid[-1, -1], grid[-1, 0]
    quad = np.array([ul, ur, dr, dl])
    area = 0.5 * abs(
        float(np.dot(quad[:, 0], np.roll(quad[:, 1], -1)) - np.dot(quad[:, 1], np.roll(quad[:, 0], -1)))
    )
    a, c = ul - ur, dr - ur
    angle = math.acos(float(np.clip(a @ c / (np.linalg.norm(a) * np.linalg.norm(c)), -1.0, 1.0)))
    border = math.sqrt(area)
    mean = grid.reshape(-1, 2).mean(axis=0)
    return np.array(
        [
            np.clip((mean[0] - border / 2) / (w - border), 0.0, 1.0),
            np.clip((mean[1] - border / 2) / (h - border), 0.0, 1.0),
            math.sqrt(area / (w * h)),
            min(1.0, 2.0 * abs(math.pi / 2 - angle)),
        ]
    )


@dataclass(frozen=True)
class Coverage:
    """How much of each range the accepted views span, 0..1 (1: enough for a good calibration)."""

    x: float
    y: float
    size: float
    skew: float

    @classmethod
    def of(cls, params: Sequence[np.ndarray]) -> Coverage:
        p = np.asarray(params, np.float64).reshape(-1, 4)
        spread = (p.max(axis=0) - p.min(axis=0)) / np.asarray(COVERAGE_SPAN)
        return cls(*(float(v) for v in np.clip(spread, 0.0, 1.0)))

    def __str__(self) -> str:
        return f"X {self.x:.2f}, Y {self.y:.2f}, size {self.size:.2f}, skew {self.skew:.2f}"

    def narrow(self) -> list[str]:
        """The figures under ``WIDE_COVERAGE``: ranges the views leave much of out."""
        return [name for name, value in vars(self).items() if value < WIDE_COVERAGE]

    def advice(self) -> str:
        """'; x, y under 0.5: add views that vary it', or '' when every range is wide."""
        short = self.narrow()
        return f"; {', '.join(short)} under {WIDE_COVERAGE:g}: add views that vary it" if short else ""


WIDE_COVERAGE = 0.5  # a coverage figure under this: the views leave much of that range out


@dataclass(frozen=True)
class ChessboardTarget:
    """A plain chessboard of ``inner`` = (cols, rows) inner corners and ``square_m`` squares."""

    inner: tuple[int, int]
    square_m: float

    def describe(self) -> str:
        return f"{self.inner[0]}x{self.inner[1]} chessboard"

    def hint(self, gray: np.ndarray | None = None) -> str:
        return pattern_hint(self.inner, gray, "the first left image")

    def larger_hint(self, gray: np.ndarray, where: str) -> str:
        """A note when the board in ``gray`` (image ``where``) has more inner corners than the
        pattern: OpenCV finds the pattern inside it, and the calibration uses part of the board."""
        found = larger_board(gray, self.inner)
        if found is None:
            return ""
        cols, rows = found
        return (
            f"the board in {where} has {cols}x{rows} inner corners and --pattern {self.inner[0]}x"
            f"{self.inner[1]} uses part of it; --pattern {cols}x{rows} uses all its corners"
        )

    def detect(self, gray: np.ndarray) -> Detection | None:
        pts = detect_corners(gray, self.inner)
        return None if pts is None else Detection(np.arange(len(pts)), pts)

    def match(self, left: Detection, right: Detection) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        right_pts = align_pair(left.points, right.points, self.inner)
        return board_points(self.inner, self.square_m), left.points, right_pts

    def full_view(self, found: Detection) -> np.ndarray:
        return found.points


def calibrate_stereo(
    left: Sequence[np.ndarray],
    right: Sequence[np.ndarray],
    pattern: tuple[int, int],
    square_m: float,
    image_size: tuple[int, int],
) -> tuple[StereoRig, float]:
    """`fit_stereo` of full chessboard views (one N x 2 corner array per view, same order).

    Returns the rig (rectified) and the stereo RMS reprojection error in pixels.
    """
    fit = fit_stereo([board_points(pattern, square_m)] * len(left), left, right, image_size)
    return fit.rig, fit.rms_px
