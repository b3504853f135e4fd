"""Vertical alignment before matching: a pair that is almost rectified, made rectified.

Both engines compare each left row with the same row of the right image. A rig drifts from its
calibration (a knock, heat, a refocus) by fractions of a pixel to a few pixels, and file pairs
come rectified to within a pixel or so. Measured on Motorcycle with the right image moved down
0.5 / 0.8 / 1.5 px: Bi3D's dense bad-2 16.20 -> 18.86 / 22.75 / 36.90 %, SGBM's 22.91 -> 23.19 /
24.29 / 32.02 %; aligned, 16.23 / 16.19 / 16.22 % and 22.90 / 22.91 / 22.90 %
(``benchmarks/camera_variants.py``).

``VerticalAligner`` measures how far the right image's rows are from the left's: a half-resolution,
left-right-checked SGBM gives each pixel's disparity; the right image, moved by it column by
column, should then coincide with the left, and Lucas-Kanade tracking of up to 1500 corners of
the left image in it measures what remains vertically (``max_points``). A plane over the image
fitted to those offsets (iteratively reweighted, Huber) is the misalignment (shift, roll and
vertical scale: ``Misalignment``); a second pass on the corrected pair measures what the first
missed. Where the plane moves the rows by more than ``min_rms_px`` RMS over the frame, the right
image's rows are resampled to cancel it. Disparities stay those of the left image's pixels; only
the engine's copy of the right image changes. A pair that measures less, has fewer than
``min_points`` tracked corners (a blank scene) or whose offsets scatter more than
``max_scatter_px`` about the plane (not a rigid offset) passes unchanged.

Moving the right image by the disparity first matters: feature matches refined by correlation
(the calibration check's) read slanted surfaces' shear as a vertical offset: on rectified
held-out room renders they measured up to 0.87 px RMS (floors), the demo pair 0.13 px. This
measures at most 0.16 px on 16 rectified room renders (one more, 1.26 px, scatters 0.88 px about
its plane and is not trusted) and 0.15 px on 16 layered ones, 0.05 px on the demo pair, a 0.5 /
0.8 / 1.5 / 3 px shift as 0.46 / 0.76 / 1.45 / 3.07 px and a 0.15 degree turn as 0.151 degrees.

On a stream the estimate is kept: measured on the first frame of a size, again every ``every``
frames (a drifting rig), every ``retry`` frames while none could be made, and at once when the
view is no longer the one measured (a 32 x 24 thumbnail of the left image correlates below
``same_view`` with the measured frame's: another scene, a cut, a camera moved on); a failed
measurement of the same view keeps the last good one. Images are H x W x 3 RGB uint8.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.depth.scene_range import checked_disparity, drop_ceiling_notes
from app.engine.epipolar import (
    SWAP_ROWS_PX,
    Misalignment,
    epipolar_inliers,
    match_features,
    matches_swapped,
    robust_plane,
    row_consistent,
)
from app.engine.types import DepthResult


@dataclass(frozen=True)
class AlignConfig:
    min_rms_px: float = 0.25  # the plane's RMS over the frame below which the pair is left alone
    max_scatter_px: float = 0.5  # robust spread of the offsets about the plane above which it is not trusted
    max_points: int = 1500  # corners of the left image tracked
    min_points: int = 100  # tracked corners needed for an estimate
    passes: int = 2  # measurements, each on the pair corrected by the ones before
    # ORB features per image for the swapped and not-rectified checks: 1000 left 12-50 matches on
    # a chessboard scene, most of them a square away (3000 cost the same: fewer RANSAC rounds)
    features: int = 3000
    every: int = 300  # frames between estimates of a stream
    retry: int = 10  # frames between tries while there is no estimate
    same_view: float = 0.9  # thumbnail correlation below which the view counts as new ...
    # ... unless its grey levels' histogram correlates this well: a pan or a moving camera (a new
    # thumbnail every frame) re-measured every frame, 80-110 ms each of the synthetic demo's
    # (review); another scene's histogram correlates -0.5-0.4, the pan's 1.0
    same_levels: float = 0.9


DEFAULT_ALIGN = AlignConfig()
# matched features this far apart vertically (RMS) that the alignment did not account for: the
# pair is not rectified (a raw camera pair, a tilted hand-held one, a pair rectified twice), so
# no row of the right image holds a left pixel's match and the depth is noise
UNRECTIFIED_PX = 2.0
# matches' rows this far apart (RMS) start the measurement from their plane: the corner tracking
# (from a half-resolution SGBM, which needs rows within about a pixel) measured 3 px, not 4
SEED_PX = 1.5
UNSEEDED_PX = 3.5  # rows further apart than this: the old start cannot measure them
UNRECTIFIED_WORDS = "does not look rectified"
SWAPPED_NOTE = (
    "the left and right images look swapped: most features sit further right in the right image than "
    "in the left (negative disparity); give the left camera's image first, or swap the cameras"
)


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
    coef = np.array([m.shift_px, math.tan(math.radians(m.roll_deg)), -m.scale_percent / 100.0])
    return _field(coef, size)


def measure(left: np.ndarray, right: np.ndarray, config: AlignConfig = DEFAULT_ALIGN) -> Alignment | None:
    """The pair's vertical misalignment, or None when too few corners could be tracked."""
    return _measure(*_greys(left, right), config)


def _greys(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return cv2.cvtColor(left, cv2.COLOR_RGB2GRAY), cv2.cvtColor(right, cv2.COLOR_RGB2GRAY)


def _measure(
    gl: np.ndarray, gr: np.ndarray, config: AlignConfig, seed: np.ndarray | None = None
) -> Alignment | None:
    """``measure`` of the grey images; ``seed``: a first plane (``PairGeometry.seed``) the right
    image is moved by before the first measurement, for rows too far apart for it."""
    h, w = gl.shape
    coef = np.zeros(3) if seed is None else seed.astype(np.float64)
    found = None
    for _ in range(max(1, config.passes)):
        moved = gr if not coef.any() else _resample(gr, _row_maps(_field(coef, (h, w))))
        offsets = _residual_offsets(gl, moved, config)
        if offsets is None:
            return None if found is None else _alignment(coef, found, (h, w))
        points, dy = offsets
        step, spread = robust_plane(points, dy, (h, w))
        coef, found = coef + step, (len(points), spread)
        if _rms(_field(step, (h, w))) < config.min_rms_px / 4:
            break
    assert found is not None
    return _alignment(coef, found, (h, w))


def _alignment(coef: np.ndarray, found: tuple[int, float], size: tuple[int, int]) -> Alignment:
    m = Misalignment(float(coef[0]), float(np.degrees(np.arctan(coef[1]))), float(-100.0 * coef[2]))
    return Alignment(m, _rms(_field(coef, size)), found[0], found[1])


def _field(coef: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """H x W float32 plane ``coef[0] + coef[1] (x - cx) + coef[2] (y - cy)``."""
    h, w = size
    xs = np.arange(w, dtype=np.float64) - (w - 1) / 2
    ys = np.arange(h, dtype=np.float64) - (h - 1) / 2
    return (coef[0] + coef[1] * xs[None, :] + coef[2] * ys[:, None]).astype(np.float32)


def _rms(field: np.ndarray) -> float:
    return float(np.sqrt(np.mean(field.astype(np.float64) ** 2)))


def _row_maps(dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cv2.remap`` tables (float32, H x W) that bring row y - dy(x, y) of an image to row y."""
    h, w = dy.shape
    map_x = np.broadcast_to(np.arange(w, dtype=np.float32)[None, :], (h, w)).copy()
    map_y = (np.arange(h, dtype=np.float32)[:, None] - dy).astype(np.float32)
    return map_x, map_y


def _resample(image: np.ndarray, maps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``image`` resampled by ``cv2.remap`` tables (bicubic, edges replicated): the rows moved by
    ``_row_maps``, or the columns by a disparity."""
    return cv2.remap(image, *maps, cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)


def _residual_offsets(
    gl: np.ndarray, gr: np.ndarray, config: AlignConfig
) -> tuple[np.ndarray, np.ndarray] | None:
    """Corners of the left image (N x 2, x y) and their vertical offsets y_left - y_right (N) once
    the right image is moved by a half-resolution SGBM's disparities; None below ``min_points``."""
    h, w = gl.shape
    num = max(16, min(128, (w // 2 - 8) // 2 // 16 * 16))
    if w // 2 < num + 16 or h // 2 < 16:  # too small a frame to match at half resolution
        return None
    small_l, small_r = (cv2.resize(g, (w // 2, h // 2), interpolation=cv2.INTER_AREA) for g in (gl, gr))
    raw = checked_disparity(small_l, small_r, num)
    valid = (raw > 0).astype(np.uint8)
    disparity = cv2.resize(np.where(valid > 0, raw, 0.0), (w, h), interpolation=cv2.INTER_NEAREST) * 2.0
    # corners well inside answered regions: their window sees one surface, moved by its own disparity
    usable = cv2.erode(cv2.resize(valid, (w, h), interpolation=cv2.INTER_NEAREST), np.ones((9, 9), np.uint8))
    corners = cv2.goodFeaturesToTrack(gl, config.max_points, 0.01, 7, mask=usable * 255)
    if corners is None or len(corners) < config.min_points:
        return None
    cols = np.arange(w, dtype=np.float32)[None, :] - disparity.astype(np.float32)
    rows = np.broadcast_to(np.arange(h, dtype=np.float32)[:, None], (h, w))
    moved = _resample(gr, (cols, np.ascontiguousarray(rows)))
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 30, 0.01)
    # an output array for the tracked points (OpenCV 5.0's stubs refuse None there, 5.1's take it)
    tracked = np.empty_like(corners)
    tracked, status, _ = cv2.calcOpticalFlowPyrLK(
        gl, moved, corners, tracked, winSize=(15, 15), maxLevel=2, criteria=criteria
    )
    start, end = corners.reshape(-1, 2), tracked.reshape(-1, 2)
    du, dv = end[:, 0] - start[:, 0], end[:, 1] - start[:, 1]
    keep = status.ravel().astype(bool) & (np.abs(du) < 1.5) & (np.abs(dv) < 8.0)
    if keep.sum() < config.min_points:
        return None
    return start[keep], -dv[keep]  # content lower in the right image: y_left - y_right < 0


@dataclass(frozen=True)
class PairGeometry:
    """What a pair's geometry-consistent feature matches say: the images look swapped (most
    matches at negative disparity, on a pair whose rows agree), and the matches' vertical offsets
    (RMS px; NaN with fewer than 20 matches)."""

    swapped: bool
    vertical_rms_px: float
    # the matches' plane of vertical offsets (``robust_plane`` coefficients) where their rows are
    # too far apart for the corner tracking to start from the pair as it is (``SEED_PX``), else None
    seed: np.ndarray | None = None

    @property
    def unrectified(self) -> bool:
        return self.vertical_rms_px > UNRECTIFIED_PX


# what to do, as the command line says it (the window says it in its own words)
UNRECTIFIED_ADVICE = (
    "give the rig's calibration (--calib FILE, or the window's calibration panel; one already "
    "given: check it with 'bi3d-studio calib check'), or estimate one with 'bi3d-studio calib "
    "rectify LEFT RIGHT --out rig.yaml'"
)


def unrectified_note(vertical_rms_px: float) -> str:
    return (
        f"the pair {UNRECTIFIED_WORDS}: its matched features lie {vertical_rms_px:.1f} px apart "
        f"vertically (RMS), more than the vertical alignment corrects, so this depth is unreliable; "
        f"{UNRECTIFIED_ADVICE}"
    )


def pair_geometry(left: np.ndarray, right: np.ndarray, config: AlignConfig = DEFAULT_ALIGN) -> PairGeometry:
    """``PairGeometry`` of an H x W x 3 RGB pair."""
    return _pair_geometry(*_greys(left, right), config)


def _pair_geometry(gl: np.ndarray, gr: np.ndarray, config: AlignConfig) -> PairGeometry:
    """``pair_geometry`` of the grey images."""
    pl, pr = epipolar_inliers(*match_features(gl, gr, "orb", config.features))
    keep, agree = row_consistent(pl, pr, gl.shape)  # a repetitive pattern's matches a period away: out
    pl, pr = pl[keep], pr[keep]
    if len(pl) < 20 or not agree:
        return PairGeometry(False, float("nan"))
    dy = (pl[:, 1] - pr[:, 1]).astype(np.float64)
    rms = float(np.sqrt(np.mean(dy**2)))
    # rows 4 px apart or more were left as they were ("does not look rectified"), where the
    # calibration check measured the shift to 0.01 px (review): the matches' plane starts it
    seed = robust_plane(pl, dy, gl.shape)[0] if rms > SEED_PX else None
    # on a pair whose rows disagree by far (a tilt turns columns too) the side of the matches
    # says nothing about the order of the images
    return PairGeometry(rms <= SWAP_ROWS_PX and matches_swapped(pl, pr), rms, seed)


class VerticalAligner:
    """The alignment of one stream's frames (module docstring)."""

    def __init__(self, config: AlignConfig = DEFAULT_ALIGN) -> None:
        self.config = config
        self.reset()

    def new_stream(self) -> None:
        """Start afresh at the next ``align``: another thread may be inside one now, and the thread
        that aligns resets."""
        self._stale = True

    def reset(self) -> None:
        self.current: Alignment | None = None
        self._size: tuple[int, int] | None = None
        self._since: int | None = None  # frames since the last measurement
        self._maps: tuple[np.ndarray, np.ndarray] | None = None
        self._thumb: np.ndarray | None = None  # the left image when last measured
        self._levels: np.ndarray | None = None  # ... and its grey levels' histogram
        self._swapped = False  # the last measured frame's images look swapped
        self._unrectified: float | None = None  # vertical RMS px of a pair that is not rectified
        self._stale = False  # new_stream() asked for a reset

    def align(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, list[str], float]:
        """The right image aligned to the left (or ``right`` itself), notes (it was moved; the
        images look swapped) and the milliseconds spent."""
        t0 = time.perf_counter()
        size = (left.shape[0], left.shape[1])
        if size != self._size or self._stale:
            self.reset()
            self._size = size
        wait = self.config.every if self.current is not None else self.config.retry
        gl = cv2.cvtColor(left, cv2.COLOR_RGB2GRAY)
        thumb, levels = _thumbnail(gl), _levels(gl)
        new_view = (
            self._thumb is None
            or self._levels is None
            or (
                _correlation(thumb, self._thumb) < self.config.same_view
                and _correlation(levels, self._levels) < self.config.same_levels
            )
        )
        if self._since is None or self._since >= wait or new_view:
            gr = cv2.cvtColor(right, cv2.COLOR_RGB2GRAY)
            geometry = _pair_geometry(gl, gr, self.config)
            seed = None if geometry.swapped else geometry.seed
            found = _measure(gl, gr, self.config, seed)
            failed = found is None or found.scatter_px > self.config.max_scatter_px
            if seed is not None and failed and geometry.vertical_rms_px <= UNSEEDED_PX:
                # the matches' plane misled it: the old start, where it could measure (beyond, a
                # second try only doubled an unrectified stream's retries: code review)
                found = _measure(gl, gr, self.config)
            if found is not None and found.scatter_px <= self.config.max_scatter_px:
                self.current, self._maps = found, self._remap(found, size)
            elif new_view:  # another scene: what was measured of the last one does not hold
                self.current, self._maps = None, None
            # rows apart by more than the alignment found (it measures rigid offsets of a few px)
            corrected = self.current.rms_px if self.current is not None else 0.0
            # a swapped pair (its rows agree within a few px) is said to be swapped: its alignment
            # cannot be measured, and the order is what to fix first
            unrectified = (
                geometry.unrectified and not geometry.swapped and corrected < 0.5 * geometry.vertical_rms_px
            )
            self._unrectified = geometry.vertical_rms_px if unrectified else None
            self._swapped = geometry.swapped
            self._since, self._thumb, self._levels = 0, thumb, levels
        self._since += 1
        maps, current = self._maps, self.current
        notes = [SWAPPED_NOTE] if self._swapped else []
        if self._unrectified is not None:
            notes.append(unrectified_note(self._unrectified))
        if maps is None or current is None:
            return right, notes, (time.perf_counter() - t0) * 1000
        return _resample(right, maps), [current.note(), *notes], (time.perf_counter() - t0) * 1000

    def _remap(self, found: Alignment, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray] | None:
        """The remap tables that move the right image's rows by the plane, or None below the
        threshold. A left pixel at row y sees its match at row y - dy in the right image."""
        if found.rms_px < self.config.min_rms_px:
            return None
        return _row_maps(offset_field(found.misalignment, size))


def _thumbnail(grey: np.ndarray) -> np.ndarray:
    return cv2.resize(grey, (32, 24), interpolation=cv2.INTER_AREA).astype(np.float64).ravel()


def _levels(grey: np.ndarray) -> np.ndarray:
    """32 bins of the grey levels of every 4th pixel of every 4th row."""
    return (
        cv2.calcHist([np.ascontiguousarray(grey[::4, ::4])], [0], None, [32], [0, 256])
        .ravel()
        .astype(np.float64)
    )


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Normalised correlation of two thumbnails; 1 for two flat ones of the same level."""
    a, b = a - a.mean(), b - b.mean()
    den = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / den if den > 1e-6 else float(np.abs(a - b).max() < 1e-6)


def with_alignment(result: DepthResult, notes: list[str], ms: float) -> DepthResult:
    """``result`` with the notes of the stages before matching (the alignment's, and in Bi3D the
    exposure stretch's) and the alignment's time."""
    if any(UNRECTIFIED_WORDS in note for note in notes):
        # matching along the wrong rows reads anything, up to the top of the range: the advice to
        # shrink the images was wrong there (a hand-held pair's reach was 40 px once rectified)
        drop_ceiling_notes(result)
    result.notes.extend(notes)
    if ms:
        result.timings["align"] = ms
    return result
