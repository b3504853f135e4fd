"""Stereo calibration from chessboard views: pairing files, corners, coverage, calibration.

A pattern is (cols, rows) inner corners. Corners are N x 2 float32 (x, y) pixel arrays,
N = cols * rows, row after row, starting at the corner nearest the image's top left.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from app.engine.calibration.rig import StereoRig
from app.engine.errors import UserError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".pgm", ".ppm")
MIN_VIEWS = 4
# Spread of x, y, size and skew over the views that counts as full coverage (ROS calibrator).
COVERAGE_SPAN = (0.7, 0.7, 0.4, 0.5)
_SIDE = re.compile(r"left|right", re.IGNORECASE)


def natural_key(name: str) -> list[int | str]:
    """'img10' sorts after 'img9'."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def find_stereo_pairs(folder: str | Path) -> list[tuple[Path, Path]]:
    """(left, right) image paths in ``folder``: files named *left*/*right*, or left/ and right/.

    Files pair up when their names match once 'left'/'right' is removed; any file without
    a partner is an error, so that a missing frame cannot shift the pairing.
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
            sides[side][_SIDE.sub("", path.name.lower())] = path
    left, right = sides["left"], sides["right"]
    if not left and not right:
        raise UserError(
            f"no images named *left*/*right* (or in left/ and right/) in {folder}; check the folder"
        )
    for mine, other, side in ((left, right, "right"), (right, left, "left")):
        lonely = sorted(set(mine) - set(other), key=natural_key)
        if lonely:
            raise UserError(f"{mine[lonely[0]]} has no {side} image to pair with; add it or remove the file")
    return [(left[k], right[k]) for k in sorted(left, key=natural_key)]


def board_points(pattern: tuple[int, int], square_m: float) -> np.ndarray:
    """N x 3 float32 corner positions on the board plane (z = 0), in metres, row after row."""
    cols, rows = pattern
    grid = np.mgrid[0:cols, 0:rows].T.reshape(-1, 2)
    return np.hstack([grid * square_m, np.zeros((len(grid), 1))]).astype(np.float32)


def detect_corners(gray: np.ndarray, pattern: tuple[int, int]) -> np.ndarray | None:
    """Sub-pixel corners of the board in an H x W uint8 image: N x 2 float32, or None."""
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
    pts = np.asarray(corners, np.float32).reshape(-1, 2)
    # The detectors may start at either end of the board; fix one so both cameras agree.
    if float((pts[-1] - pts[0]).sum()) < 0:
        pts = pts[::-1]
    return np.ascontiguousarray(pts)


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


@dataclass(frozen=True, eq=False)
class ChessboardResult:
    """A stereo calibration and its quality figures (pixels; baseline in metres)."""

    rig: StereoRig
    rms_px: float  # stereo reprojection error, from cv2.stereoCalibrate
    epipolar_rms_px: float  # RMS vertical gap of the corners after rectification
    baseline_m: float
    coverage: Coverage
    views: tuple[str, ...]
    skipped: tuple[str, ...]


def epipolar_rms(rig: StereoRig, left: Sequence[np.ndarray], right: Sequence[np.ndarray]) -> float:
    """Rectify the N x 2 corner sets with the rig and take the RMS of their y differences."""
    rig = rig.with_rectification()
    gaps = []
    for pl, pr in zip(left, right, strict=True):
        yl = cv2.undistortPoints(pl.reshape(-1, 1, 2), rig.K1, rig.D1, R=rig.R1, P=rig.P1)[:, 0, 1]
        yr = cv2.undistortPoints(pr.reshape(-1, 1, 2), rig.K2, rig.D2, R=rig.R2, P=rig.P2)[:, 0, 1]
        gaps.append(yl - yr)
    return float(np.sqrt(np.mean(np.concatenate(gaps) ** 2)))


def calibrate_stereo(
    left: Sequence[np.ndarray],
    right: Sequence[np.ndarray],
    pattern: tuple[int, int],
    square_m: float,
    image_size: tuple[int, int],
) -> tuple[StereoRig, float]:
    """Per-camera `cv2.calibrateCamera`, then `cv2.stereoCalibrate` with those intrinsics fixed.

    ``left``/``right``: one N x 2 corner array per view. Returns the rig (rectified) and the
    stereo RMS reprojection error in pixels.
    """
    objects = [board_points(pattern, square_m)] * len(left)
    # k3 stays 0: with a dozen views of an ordinary lens it only fits noise (as ROS does).
    flags = cv2.CALIB_FIX_K3
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 100, 1e-6)
    try:
        _, k1, d1, _, _ = cv2.calibrateCamera(objects, list(left), image_size, None, None, flags=flags)
        _, k2, d2, _, _ = cv2.calibrateCamera(objects, list(right), image_size, None, None, flags=flags)
        rms, k1, d1, k2, d2, r, t, _, _ = cv2.stereoCalibrate(
            objects, list(left), list(right), k1, d1, k2, d2, image_size,
            flags=cv2.CALIB_FIX_INTRINSIC, criteria=criteria,
        )  # fmt: skip
    except cv2.error as exc:  # degenerate input makes OpenCV assert; report it in one line
        why = str(exc).strip().splitlines()[-1]
        raise UserError(
            f"calibration failed ({why}); use more varied board views (tilts, distances)"
        ) from None
    return StereoRig(image_size, k1, d1, k2, d2, r, t.ravel()).with_rectification(), float(rms)


def calibrate_folder(
    folder: str | Path,
    pattern: tuple[int, int],
    square_m: float,
    on_view: Callable[[str, bool], None] | None = None,
) -> ChessboardResult:
    """Detect the board in every pair of ``folder`` and calibrate the rig from the good ones.

    ``on_view(name, found)`` is called after each pair, for progress output.
    """
    from app.engine.formats import read_image_rgb

    cols, rows = pattern
    size: tuple[int, int] | None = None
    left: list[np.ndarray] = []
    right: list[np.ndarray] = []
    views: list[str] = []
    skipped: list[str] = []
    pairs = find_stereo_pairs(folder)
    for lpath, rpath in pairs:
        found = []
        for path in (lpath, rpath):
            gray = cv2.cvtColor(read_image_rgb(path), cv2.COLOR_RGB2GRAY)
            h, w = gray.shape
            size = size or (w, h)
            if size != (w, h):
                raise UserError(f"{path} is {w}x{h} but earlier images are {size[0]}x{size[1]}; use one size")
            found.append(detect_corners(gray, pattern))
        ok = found[0] is not None and found[1] is not None
        (views if ok else skipped).append(lpath.name)
        if found[0] is not None and found[1] is not None:
            left.append(found[0])
            right.append(found[1])
        if on_view is not None:
            on_view(lpath.name, ok)
    if len(views) < MIN_VIEWS or size is None:
        raise UserError(
            f"a {cols}x{rows} chessboard was found in both images of {len(views)} of {len(pairs)} pairs "
            f"in {folder}; need {MIN_VIEWS}; check --pattern (inner corners, COLSxROWS)"
        )
    rig, rms = calibrate_stereo(left, right, pattern, square_m, size)
    return ChessboardResult(
        rig=rig,
        rms_px=rms,
        epipolar_rms_px=epipolar_rms(rig, left, right),
        baseline_m=rig.rectified().baseline_m,
        coverage=Coverage.of([view_parameters(c, pattern, size) for c in left]),
        views=tuple(views),
        skipped=tuple(skipped),
    )
