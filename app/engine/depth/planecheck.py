"""Matching check of binary answers near their plane (no learned weights).

A per-plane classifier is least sure where the scene's disparity is close to the plane, and
on real images its answer there is often wrong: on the Middlebury demo, the light model's
20 px mask was right on only 56 % of the pixels within 1 px of the plane (on synthetic scenes
the same model is sharp there). Classical matching is at its most precise exactly there, so
where the network hesitates this stage asks the images:

1. once per frame: grey images downsampled by ``scale`` (area averaging);
2. per plane, where the network's probability is within ``side_band`` of 0.5: which side of
   the plane the pixel is on, from the zero-mean normalised cross-correlation (ZNCC) of
   ``window`` x ``window`` patches at ``plane - side_step`` against ``plane + side_step``
   (full-resolution px, read at the check's scale with linear interpolation), over every
   check-scale pixel at once. Where the left patch has texture (``min_std``), both windows
   lie inside the right image and the better of the two reaches ``min_peak``, the answer
   becomes ``sigmoid((zncc(plane + step) - zncc(plane - step)) / 0.05)``; elsewhere the
   network's answer stands;
3. ``smooth``: the plane's probabilities through an edge-preserving guided filter (He, Sun
   and Tang), the left grey image as guide, so that a hesitant pixel takes its side from the
   pixels of its own surface. Its coefficients are computed at 1 / ``smooth_scale`` of the
   resolution (He and Sun's fast variant: 1/4 changed no figure against full resolution).

The earlier check, a parabola through the ZNCC at the plane's neighbouring whole shifts
(``radius`` either side) giving a local disparity estimate and ``sigmoid(estimate - plane)``
where the answer is within ``band`` of 0.5, is still there (``estimate``; ``band`` > 0 runs it
before step 2) but off by default: with steps 2 and 3 it added nothing on the selection
scenes and cost 2-3 ms a plane. A parabola's vertex is pulled towards whole shifts ("pixel
locking"), and 10, 20 and 40 px fall on whole shifts of the half-resolution grid, exactly
where that bias decides the side; the two-sided comparison has no vertex to lock.

ZNCC ignores gain and offset differences between the cameras. Settings: the parabola's (half
resolution, window 7, radius 1, band 0.2, peak 0.7) were chosen on 16 held-out synthetic
scenes, where full resolution (window 11), four times the pixels, did no better
(``resources/models/README.md``); the two-sided test (band 0.3, 1 px either side) and the
filter (radius 8 px, eps 100 grey levels squared) on the 16 selection scenes
(``benchmarks/plane_check_variants.py``: binary agreement over 11 planes 0.9551 with the
parabola alone, 0.9570 now; ``benchmarks/RESULTS.md``, ninth session).
Shapes: H x W x 3 uint8 images, H x W probabilities.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.depth.subpixel import box_mean_array


@dataclass(frozen=True)
class PlaneCheckConfig:
    band: float = 0.0  # answers with |p - 0.5| below this get the parabola step (0: none, the default)
    scale: int = 2  # the check runs on images downsampled by this factor
    window: int = 7  # ZNCC window at that scale (odd)
    radius: int = 1  # whole shifts searched either side of the plane, at that scale (>= 1)
    min_peak: float = 0.7  # ZNCC the best shift must reach
    min_std: float = 2.55  # left-patch standard deviation needed, in 0-255 grey levels
    side_band: float = 0.3  # answers with |p - 0.5| below this get the two-sided test (0: none)
    side_step: float = 1.0  # px (full resolution) either side of the plane that test compares
    smooth_radius: int = 8  # px (full resolution) of the guided filter (0: no smoothing)
    smooth_eps: float = 100.0  # the guided filter's regulariser, grey levels squared
    smooth_scale: int = 4  # the guided filter's coefficients are computed at 1 / this resolution


DEFAULT_PLANE_CHECK = PlaneCheckConfig()


def _grey(grey: np.ndarray, size: tuple[int, int], pad: tuple[int, int, int, int]) -> np.ndarray:
    """A float32 grey image at ``size`` (w, h), with reflected borders ``pad`` (top, bottom,
    left, right)."""
    if size != grey.shape[::-1]:
        grey = cv2.resize(grey, size, interpolation=cv2.INTER_AREA)
    return cv2.copyMakeBorder(grey, *pad, cv2.BORDER_REFLECT_101)


def _full_grey(image: np.ndarray) -> np.ndarray:
    """H x W x 3 uint8 RGB -> H x W float32 grey levels."""
    return cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY).astype(np.float32)


class PlaneChecker:
    """The per-frame part of the check for one image pair; ``check`` per plane.

    Only the windows around hesitant pixels are read (a few percent of a frame, typically), so
    a plane's check costs in proportion to the pixels it checks. They are gathered into
    (window pixel, checked pixel) arrays: every operation then runs along long contiguous rows."""

    def __init__(self, left: np.ndarray, right: np.ndarray, config: PlaneCheckConfig | None = None) -> None:
        cfg = config or DEFAULT_PLANE_CHECK
        if (
            cfg.window % 2 == 0
            or cfg.window < 3
            or cfg.scale < 1
            or cfg.radius < 1
            or cfg.side_step <= 0
            or cfg.smooth_scale < 1
        ):
            raise ValueError(f"bad plane check settings {cfg}")
        self.config = cfg
        h, w = left.shape[:2]
        self.shape = (max(1, h // cfg.scale), max(1, w // cfg.scale))  # the check's grid
        size, half, win = self.shape[::-1], cfg.window // 2, cfg.window
        self.shifts = 2 * cfg.radius + 2  # whole shifts per plane: the parabola's, either side
        more = self.shifts - 1
        # the right image has `more` extra border columns either side for the blocks below
        self._full_left = _full_grey(left)  # the guided filter's guide, too
        left_grey = _grey(self._full_left, size, (half,) * 4)
        right_grey = _grey(_full_grey(right), size, (half, half, half + more, half + more))
        self._left, self._right = left_grey.ravel(), right_grey.ravel()
        self._left_width, self._right_width = left_grey.shape[1], right_grey.shape[1]
        # flat offsets of a window from its top-left corner: in the left image the window of
        # check-scale pixel (y, x) starts at padded (y, x); in the right image a block holds the
        # windows of all of a plane's shifts side by side, the largest shift's first
        rows = np.arange(win)[:, None]
        self._left_offsets = (rows * self._left_width + np.arange(win)).ravel()
        self._right_offsets = (rows * self._right_width + np.arange(win + more)).ravel()
        # full-resolution pixel -> its check-scale pixel (nearest), row and column
        self.rows = np.minimum(np.arange(h) // cfg.scale, self.shape[0] - 1)
        self.cols = np.minimum(np.arange(w) // cfg.scale, self.shape[1] - 1)
        # the two-sided test reads whole check-scale images, unpadded
        hs, ws = self.shape
        self._small_left = np.ascontiguousarray(left_grey[half : half + hs, half : half + ws])
        self._small_right = np.ascontiguousarray(right_grey[half : half + hs, half + more : half + more + ws])
        self._side_stats: tuple[np.ndarray, np.ndarray] | None = None
        self._guide: _Guide | None = None

    def estimate(self, plane: float, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Local disparity (full-resolution px) near ``plane`` and its ZNCC peak at the
        check-scale pixels ``where`` (flat indices); the peak is -1 where nothing could be
        measured (no texture, or every window reaching past the right image)."""
        cfg = self.config
        ws, half, win, n, m = self.shape[1], cfg.window // 2, cfg.window, self.shifts, where.size
        area = win * win
        first = math.floor(plane / cfg.scale) - cfg.radius
        shifts = np.arange(first, first + n)
        ys, xs = np.divmod(where, ws)
        left = np.take(self._left, self._left_offsets[:, None] + (ys * self._left_width + xs))  # area x m
        left -= left.mean(0)  # centred: the cross term needs no right-window mean
        var_l = np.maximum(np.einsum("km,km->m", left, left) / area, 1e-6)
        left3 = left.reshape(win, win, m)
        # right block column j: the right image at column x - shifts[-1] - half + j
        start = np.clip(xs - int(shifts[-1]) + n - 1, 0, self._right_width - (win + n - 1))
        block = np.take(self._right, self._right_offsets[:, None] + (ys * self._right_width + start))
        block = block.reshape(win, win + n - 1, m)
        columns, column_squares = block.sum(0), (block * block).sum(0)  # (win + n - 1) x m
        zncc = np.full((n, m), -1.0, np.float32)
        for i, s in enumerate(shifts.tolist()):
            if not 0 < s < ws - half:
                continue
            j = n - 1 - i  # shift s's window within the block
            mu_r = columns[j : j + win].sum(0) / area
            var_r = np.maximum(column_squares[j : j + win].sum(0) / area - mu_r * mu_r, 1e-6)
            cross = np.einsum("rcm,rcm->m", left3, block[:, j : j + win]) / area
            # windows reaching past the right image's left edge stay at -1
            zncc[i] = np.where(xs >= s + half, cross / np.sqrt(var_l * var_r), -1.0)
        best = zncc.argmax(0)
        pick = np.arange(m)
        inner = np.clip(best, 1, n - 2)
        a, b, c = zncc[inner - 1, pick], zncc[inner, pick], zncc[inner + 1, pick]
        curvature = a - 2 * b + c
        vertex = 0.5 * (a - c) / np.minimum(curvature, -1e-6)
        vertex = np.where((inner == best) & (curvature < -1e-6), np.clip(vertex, -0.5, 0.5), 0.0)
        estimate = (shifts[best] + vertex) * cfg.scale
        peak = np.where(var_l > cfg.min_std**2, zncc[best, pick], -1.0)
        return estimate.astype(np.float32), peak

    def check(self, probabilities: np.ndarray, plane: float, in_place: bool = False) -> np.ndarray:
        """H x W probabilities P(disparity > plane) -> the same with hesitant answers checked
        (the parabola where ``band`` > 0, then step 2): written into ``probabilities`` itself
        (``in_place``, which may be a strided view) or into a new array."""
        cfg = self.config
        width = probabilities.shape[1]
        side = None  # decided on the network's answers
        if cfg.side_band > 0:
            side = cv2.absdiff(np.ascontiguousarray(probabilities, np.float32), 0.5) < cfg.side_band  # type: ignore[call-overload]
        out = probabilities if in_place else probabilities.copy()
        hesitant = np.empty(0, np.intp)
        if cfg.band > 0:  # off by default: its scan of the frame costs a millisecond
            hesitant = np.flatnonzero(np.abs(probabilities - 0.5) < cfg.band)  # flat: 10x faster than nonzero
        if hesitant.size:
            ys, xs = np.divmod(hesitant, width)
            # each check-scale pixel is measured once for the full-resolution pixels it covers
            cells = self.shape[0] * self.shape[1]
            cell = self.rows[ys] * self.shape[1] + self.cols[xs]
            marked = np.zeros(cells, bool)
            marked[cell] = True
            where = np.flatnonzero(marked)
            estimate, peak = self.estimate(plane, where)
            slot = np.zeros(cells, np.intp)
            slot[where] = np.arange(where.size)
            estimate, peak = estimate[slot[cell]], peak[slot[cell]]
            use = peak > cfg.min_peak
            out[ys[use], xs[use]] = 1.0 / (1.0 + np.exp(plane - estimate[use]))  # out may be a strided view
        if side is not None and side.any():
            better, usable = self._side_test(plane)
            # the answers at the check's scale (NaN where unusable), then one expansion
            with np.errstate(over="ignore"):  # exp overflows to inf far from 0: the answer is 0
                answer = (1.0 / (1.0 + np.exp(-better / 0.05))).astype(np.float32)
            use = side & self._full(usable)
            np.copyto(out, self._full(answer), where=use)  # out may be a strided view
        return out

    def _full(self, grid: np.ndarray) -> np.ndarray:
        """A check-scale array at full resolution (each pixel its cell's value)."""
        h, w = self.rows.size, self.cols.size
        if (h, w) == (grid.shape[0] * self.config.scale, grid.shape[1] * self.config.scale):
            # whole cells: OpenCV's nearest neighbour reads cell (y // scale, x // scale), as the
            # lookups below do, in a fifth of their time
            small = grid.view(np.uint8) if grid.dtype == bool else grid
            full = cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)
            return full.view(bool) if grid.dtype == bool else full
        return np.take(np.take(grid, self.rows, axis=0), self.cols, axis=1)

    def prepare(self) -> None:
        """Compute what every plane's check and smoothing share, before planes run in threads."""
        if self._side_stats is None:
            left = self._small_left
            mean = _box(left, self.config.window)
            var = _box(left * left, self.config.window) - mean * mean
            self._side_stats = (mean, var)
        if self._guide is None and self.config.smooth_radius > 0:
            cfg = self.config
            self._guide = _Guide(self._full_left, cfg.smooth_radius, cfg.smooth_eps, cfg.smooth_scale)

    def _side_test(self, plane: float) -> tuple[np.ndarray, np.ndarray]:
        """Over the check-scale grid: (ZNCC at plane + step minus ZNCC at plane - step, where
        that difference can be trusted)."""
        cfg = self.config
        half = cfg.window // 2
        hs, ws = self.shape
        self.prepare()
        assert self._side_stats is not None
        var_l = self._side_stats[1]
        low, high = self._zncc(plane - cfg.side_step), self._zncc(plane + cfg.side_step)
        inside = np.arange(ws) >= (plane + cfg.side_step) / cfg.scale + half  # both windows in the image
        rows_inside = (np.arange(hs) >= half) & (np.arange(hs) < hs - half)
        usable = (
            (var_l > cfg.min_std**2)
            & inside[None, :]
            & rows_inside[:, None]
            & (np.maximum(low, high) > cfg.min_peak)
        )
        return high - low, usable

    def _zncc(self, shift: float) -> np.ndarray:
        """ZNCC of every check-scale window with the right image moved by ``shift`` (full-resolution
        px): right(x - shift), linear between columns; columns left of the image repeat."""
        cfg = self.config
        win = cfg.window
        hs, ws = self.shape
        assert self._side_stats is not None
        mean_l, var_l = self._side_stats
        move = np.array([[1.0, 0.0, -shift / cfg.scale], [0.0, 1.0, 0.0]], np.float32)
        flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        moved = cv2.warpAffine(
            self._small_right, move, (ws, hs), flags=flags, borderMode=cv2.BORDER_REPLICATE
        )
        mean_r = _box(moved, win)
        var_r = _box(moved * moved, win) - mean_r * mean_r
        cross = _box(self._small_left * moved, win) - mean_l * mean_r
        score: np.ndarray = cross / np.sqrt(np.maximum(var_l, 1e-6) * np.maximum(var_r, 1e-6))
        return score

    def smooth(self, probabilities: np.ndarray) -> np.ndarray:
        """The plane's H x W probabilities through the guided filter (module docstring), in place
        (``probabilities`` may be a strided view); returned."""
        cfg = self.config
        if cfg.smooth_radius <= 0:
            return probabilities
        self.prepare()
        assert self._guide is not None
        np.clip(self._guide.filter(probabilities), 0.0, 1.0, out=probabilities)
        return probabilities


def check_planes(
    left: np.ndarray,
    right: np.ndarray,
    probabilities: np.ndarray,
    planes: Sequence[float],
    config: PlaneCheckConfig,
) -> None:
    """Every plane's check and smoothing, in place on its P x H x W ``probabilities``, the planes
    in threads (numpy and OpenCV let go of the interpreter while they compute). Each plane writes
    only its own answers, so the result is the same as one plane after the other (16 planes at
    480 x 640 on 2 cores: 102 -> 70 ms; one plane's two sides in threads gained nothing)."""
    checker = PlaneChecker(left, right, config)

    def one(k: int) -> None:
        checker.check(probabilities[k], float(planes[k]), in_place=True)
        checker.smooth(probabilities[k])

    if len(planes) == 1:
        one(0)
        return
    checker.prepare()
    for _ in _pool().map(one, range(len(planes))):
        pass


_workers: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """The check's threads, shared by every engine of the process (as many as cores, up to 4)."""
    global _workers
    if _workers is None:
        _workers = ThreadPoolExecutor(min(4, os.cpu_count() or 1), thread_name_prefix="plane-check")
    return _workers


def _box(image: np.ndarray, window: int) -> np.ndarray:
    """The mean over ``window`` x ``window`` (odd) around each pixel, borders reflected with
    the edge pixel repeated (the settings were measured so)."""
    return box_mean_array(image, window, cv2.BORDER_REFLECT)


class _Guide:
    """A guided filter (He, Sun and Tang 2013) with a grey image as guide, its linear
    coefficients computed at 1 / ``scale`` resolution (He and Sun 2015): what depends on the
    guide alone is computed once per frame."""

    def __init__(self, guide: np.ndarray, radius: int, eps: float, scale: int) -> None:
        """``guide``: the H x W float32 grey left image."""
        h, w = guide.shape
        self.full = guide
        self.size = (max(1, w // scale), max(1, h // scale))
        small = cv2.resize(guide, self.size, interpolation=cv2.INTER_AREA) if scale > 1 else guide
        self.window = 2 * max(1, radius // scale) + 1
        self.small = small
        self.mean = _box(small, self.window)
        self.var = _box(small * small, self.window) - self.mean * self.mean
        self.eps = eps

    def filter(self, values: np.ndarray) -> np.ndarray:
        h, w = self.full.shape
        small = values if self.size == (w, h) else cv2.resize(values, self.size, interpolation=cv2.INTER_AREA)
        small = np.ascontiguousarray(small, np.float32)
        mean_p = _box(small, self.window)
        a = (_box(self.small * small, self.window) - self.mean * mean_p) / (self.var + self.eps)
        b = mean_p - a * self.mean
        a, b = _box(a, self.window), _box(b, self.window)
        if self.size != (w, h):
            a = cv2.resize(a, (w, h), interpolation=cv2.INTER_LINEAR)
            b = cv2.resize(b, (w, h), interpolation=cv2.INTER_LINEAR)
        out: np.ndarray = a * self.full + b
        return out
