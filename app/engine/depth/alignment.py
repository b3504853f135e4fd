"""Vertical alignment before matching: a pair that is almost rectified, made rectified.

Both engines compare each left row with the same row of the right image. A rig drifts from its
calibration (a knock, heat, a refocus) by fractions of a pixel to a few pixels, and file pairs
come rectified to within a pixel or so. Measured on Motorcycle with the right image moved down
0.5 / 0.8 / 1.5 px: Bi3D's dense bad-2 16.20 -> 18.86 / 22.75 / 36.90 %, SGBM's 22.91 -> 23.19 /
24.29 / 32.02 %; aligned, 16.31 / 16.34 / 16.62 % and 22.97 / 22.96 / 22.98 %
(``benchmarks/camera_variants.py``).

``VerticalAligner`` measures the vertical offsets of the pair's feature matches (``epipolar``:
ORB, ratio-tested and mutual, consistent with one fundamental matrix, refined to sub-pixel
positions by correlation), fits them with a plane over the image (shift, roll and vertical
scale: ``Misalignment``) and, where that plane moves the rows by more than ``min_rms_px`` RMS
over the frame, resamples the right image's rows to cancel it. Disparities stay those of the
left image's pixels; only the engine's copy of the right image changes. A pair that measures
less (the demo pair: 0.1 px), has too few matches (a blank scene) or whose matches scatter too
much about the plane (not a rigid offset) passes unchanged.

On a stream the estimate is kept: measured on the first frame of a size, again every ``every``
frames (a drifting rig), every ``retry`` frames while none could be made, and at once when the
view is no longer the one measured (a 32 x 24 thumbnail of the left image correlates below
``same_view`` with the measured frame's: another scene, a cut, a camera moved on); a failed new
measurement keeps the last good one. Images are H x W x 3 RGB uint8.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.epipolar import Misalignment, epipolar_inliers, match_features, refine_matches
from app.engine.types import DepthResult


@dataclass(frozen=True)
class AlignConfig:
    min_rms_px: float = 0.25  # the plane's RMS over the frame below which the pair is left alone
    max_scatter_px: float = 1.0  # RMS of the matches about the plane above which it is not trusted
    features: int = 1000  # ORB features per image
    min_matches: int = 20  # refined matches needed for an estimate
    every: int = 300  # frames between estimates of a stream
    retry: int = 10  # frames between tries while there is no estimate
    same_view: float = 0.9  # thumbnail correlation below which the view counts as new


DEFAULT_ALIGN = AlignConfig()


@dataclass(frozen=True, eq=False)
class Alignment:
    """One estimate: the plane, how far it moves the rows (RMS over the frame, px), the matches it
    came from and their scatter about it (px RMS)."""

    misalignment: Misalignment
    rms_px: float
    matches: int
    scatter_px: float

    def note(self) -> str:
        return (
            f"vertical alignment: the right image's rows moved {self.rms_px:.2f} px RMS to meet the left's "
            f"({self.misalignment}; {self.matches} matches); the pair is not quite rectified: check the "
            "rig with 'bi3d-studio calib check'"
        )


def offset_field(m: Misalignment, size: tuple[int, int]) -> np.ndarray:
    """H x W float32 vertical offset y_left - y_right of ``m`` over a frame of ``size`` (H, W)."""
    h, w = size
    xs = np.arange(w, dtype=np.float64) - (w - 1) / 2
    ys = np.arange(h, dtype=np.float64) - (h - 1) / 2
    along_x, along_y = math.tan(math.radians(m.roll_deg)), -m.scale_percent / 100.0
    return (m.shift_px + along_x * xs[None, :] + along_y * ys[:, None]).astype(np.float32)


def measure(left: np.ndarray, right: np.ndarray, config: AlignConfig = DEFAULT_ALIGN) -> Alignment | None:
    """The pair's vertical misalignment, or None when too few matches survive."""
    gl, gr = (cv2.cvtColor(im, cv2.COLOR_RGB2GRAY) for im in (left, right))
    pl, pr = epipolar_inliers(*match_features(gl, gr, "orb", config.features))
    if len(pl) < config.min_matches:
        return None
    pl, pr = refine_matches(gl, gr, pl, pr)
    if len(pl) < config.min_matches:
        return None
    h, w = gl.shape
    m = Misalignment.fit(pl, pr, (w, h))
    field = offset_field(m, (h, w))
    cols = np.clip(np.round(pl[:, 0]).astype(int), 0, w - 1)
    rows = np.clip(np.round(pl[:, 1]).astype(int), 0, h - 1)
    scatter = float(np.sqrt(np.mean((pl[:, 1] - pr[:, 1] - field[rows, cols]) ** 2)))
    return Alignment(m, float(np.sqrt(np.mean(field.astype(np.float64) ** 2))), len(pl), scatter)


class VerticalAligner:
    """The alignment of one stream's frames (module docstring)."""

    def __init__(self, config: AlignConfig = DEFAULT_ALIGN) -> None:
        self.config = config
        self.reset()

    def reset(self) -> None:
        self.current: Alignment | None = None
        self._size: tuple[int, int] | None = None
        self._since: int | None = None  # frames since the last measurement
        self._maps: tuple[np.ndarray, np.ndarray] | None = None
        self._thumb: np.ndarray | None = None  # the left image when last measured

    def align(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, str | None, float]:
        """The right image aligned to the left (or ``right`` itself), a note when it was moved, and
        the milliseconds spent."""
        t0 = time.perf_counter()
        size = (left.shape[0], left.shape[1])
        if size != self._size:
            self.reset()
            self._size = size
        wait = self.config.every if self.current is not None else self.config.retry
        thumb = _thumbnail(left)
        new_view = self._thumb is None or _correlation(thumb, self._thumb) < self.config.same_view
        if self._since is None or self._since >= wait or new_view:
            found = measure(left, right, self.config)
            if found is not None and found.scatter_px <= self.config.max_scatter_px:
                self.current, self._maps = found, self._remap(found, size)
            elif new_view:  # another scene: what was measured of the last one does not hold
                self.current, self._maps = None, None
            self._since, self._thumb = 0, thumb
        self._since += 1
        maps, current = self._maps, self.current
        if maps is None or current is None:
            return right, None, (time.perf_counter() - t0) * 1000
        moved = cv2.remap(right, *maps, cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
        return moved, current.note(), (time.perf_counter() - t0) * 1000

    def _remap(self, found: Alignment, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray] | None:
        """The remap tables that move the right image's rows by the plane, or None below the
        threshold. A left pixel at row y sees its match at row y - dy in the right image."""
        if found.rms_px < self.config.min_rms_px:
            return None
        h, w = size
        map_x = np.broadcast_to(np.arange(w, dtype=np.float32)[None, :], (h, w)).copy()
        map_y = np.arange(h, dtype=np.float32)[:, None] - offset_field(found.misalignment, size)
        return map_x, map_y.astype(np.float32)


def _thumbnail(image: np.ndarray) -> np.ndarray:
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    return cv2.resize(grey, (32, 24), interpolation=cv2.INTER_AREA).astype(np.float64).ravel()


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Normalised correlation of two thumbnails; 1 for two flat ones of the same level."""
    a, b = a - a.mean(), b - b.mean()
    den = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / den if den > 1e-6 else float(np.abs(a - b).max() < 1e-6)


def with_alignment(result: DepthResult, note: str | None, ms: float) -> DepthResult:
    """``result`` with the alignment's note (when it moved the right image) and time."""
    if note is not None:
        result.notes.append(note)
    if ms:
        result.timings["align"] = ms
    return result
