"""Matching check of binary answers near their plane (no learned weights).

A per-plane classifier is least sure where the scene's disparity is close to the plane, and
on real images its answer there is often wrong: on the Middlebury demo, the light model's
20 px mask was right on only 56 % of the pixels within 1 px of the plane (on synthetic scenes
the same model is sharp there). Classical matching is at its most precise exactly there, so
where the network hesitates this stage asks the images:

1. once per frame: grey images downsampled by ``scale`` (area averaging);
2. per plane, at the check-scale pixels under hesitant answers only, at the plane's few
   neighbouring shifts (``radius`` either side, at that scale): the zero-mean normalised
   cross-correlation (ZNCC) of ``window`` x ``window`` patches, the best shift and a parabola
   through it and its neighbours: a local disparity estimate;
3. where the network's probability is within ``band`` of 0.5, the left patch has texture
   (``min_std``) and the correlation is clear (``min_peak``), the answer becomes
   ``sigmoid(estimate - plane)`` (the 1 px scale of the training targets); elsewhere the
   network's answer stands.

ZNCC ignores gain and offset differences between the cameras. The settings (half resolution,
window 7, radius 1, band 0.2, peak 0.7) were chosen on 16 held-out synthetic scenes, where
full resolution (window 11), four times the pixels, did no better
(``resources/models/README.md`` has the figures). At 480 x 640 on the 2-core development CPU
it takes 1.6-1.8 ms of a one-plane answer and about 1.1 ms per further plane.
Shapes: H x W x 3 uint8 images, H x W probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np


@dataclass(frozen=True)
class PlaneCheckConfig:
    band: float = 0.2  # network answers with |p - 0.5| below this are checked
    scale: int = 2  # the check runs on images downsampled by this factor
    window: int = 7  # ZNCC window at that scale (odd)
    radius: int = 1  # whole shifts searched either side of the plane, at that scale (>= 1)
    min_peak: float = 0.7  # ZNCC the best shift must reach
    min_std: float = 2.55  # left-patch standard deviation needed, in 0-255 grey levels


DEFAULT_PLANE_CHECK = PlaneCheckConfig()


def _grey(image: np.ndarray, size: tuple[int, int], pad: tuple[int, int, int, int]) -> np.ndarray:
    """Grey image at ``size`` (w, h), float32, with reflected borders ``pad`` (top, bottom, left,
    right)."""
    grey: np.ndarray = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY).astype(np.float32)
    if size != grey.shape[::-1]:
        grey = cv2.resize(grey, size, interpolation=cv2.INTER_AREA)
    return cv2.copyMakeBorder(grey, *pad, cv2.BORDER_REFLECT_101)


class PlaneChecker:
    """The per-frame part of the check for one image pair; ``check`` per plane.

    Only the windows around hesitant pixels are read (a few percent of a frame, typically), so
    a plane's check costs in proportion to the pixels it checks. They are gathered into
    (window pixel, checked pixel) arrays: every operation then runs along long contiguous rows."""

    def __init__(self, left: np.ndarray, right: np.ndarray, config: PlaneCheckConfig | None = None) -> None:
        cfg = config or DEFAULT_PLANE_CHECK
        if cfg.window % 2 == 0 or cfg.window < 3 or cfg.scale < 1 or cfg.radius < 1:
            raise ValueError(f"bad plane check settings {cfg}")
        self.config = cfg
        h, w = left.shape[:2]
        self.shape = (max(1, h // cfg.scale), max(1, w // cfg.scale))  # the check's grid
        size, half, win = self.shape[::-1], cfg.window // 2, cfg.window
        self.shifts = 2 * cfg.radius + 2  # whole shifts per plane: the parabola's, either side
        more = self.shifts - 1
        # the right image has `more` extra border columns either side for the blocks below
        left_grey = _grey(left, size, (half,) * 4)
        right_grey = _grey(right, size, (half, half, half + more, half + more))
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
        """H x W probabilities P(disparity > plane) -> the same with hesitant answers checked:
        written into ``probabilities`` itself (``in_place``, which may be a strided view) or
        into a new array."""
        cfg = self.config
        out = probabilities if in_place else probabilities.copy()
        hesitant = np.flatnonzero(np.abs(probabilities - 0.5) < cfg.band)  # flat: 10x faster than nonzero
        if hesitant.size == 0:
            return out
        ys, xs = np.divmod(hesitant, probabilities.shape[1])
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
        return out
