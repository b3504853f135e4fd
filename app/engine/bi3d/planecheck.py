"""Matching check of binary answers near their plane (no learned weights).

A per-plane classifier is least sure where the scene's disparity is close to the plane, and
on real images its answer there is often wrong: on the Middlebury demo, the light model's
20 px mask was right on only 56 % of the pixels within 1 px of the plane (on synthetic scenes
the same model is sharp there). Classical matching is at its most precise exactly there, so
where the network hesitates this stage asks the images:

1. once per frame: grey images downsampled by ``scale`` (area averaging), and the window means
   and variances of both;
2. per plane, at the plane's few neighbouring shifts (``radius`` either side, at that scale):
   the zero-mean normalised cross-correlation (ZNCC) of ``window`` x ``window`` patches, the
   best shift and a parabola through it and its neighbours: a local disparity estimate;
3. where the network's probability is within ``band`` of 0.5, the left patch has texture
   (``min_std``) and the correlation is clear (``min_peak``), the answer becomes
   ``sigmoid(estimate - plane)`` (the 1 px scale of the training targets); elsewhere the
   network's answer stands.

ZNCC ignores gain and offset differences between the cameras. The settings (half resolution,
window 7, radius 1, band 0.2, peak 0.7) were chosen on 16 held-out synthetic scenes, where
full resolution (window 11), four times the pixels, did no better
(``resources/models/README.md`` has the figures). At 480 x 640 on the 2-core development CPU
it adds about 2 ms to a one-plane answer and 1-1.5 ms to each further plane.
Shapes: H x W x 3 uint8 images, H x W probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.bi3d.subpixel import box_mean_array


@dataclass(frozen=True)
class PlaneCheckConfig:
    band: float = 0.2  # network answers with |p - 0.5| below this are checked
    scale: int = 2  # the check runs on images downsampled by this factor
    window: int = 7  # ZNCC window at that scale (odd)
    radius: int = 1  # whole shifts searched either side of the plane, at that scale (>= 1)
    min_peak: float = 0.7  # ZNCC the best shift must reach
    min_std: float = 2.55  # left-patch standard deviation needed, in 0-255 grey levels


DEFAULT_PLANE_CHECK = PlaneCheckConfig()


def _grey(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    grey = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY).astype(np.float32)
    return cv2.resize(grey, size, interpolation=cv2.INTER_AREA) if size != grey.shape[::-1] else grey


def _mean_var(image: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat window means and variances (floored at 1e-6) of an h x w image."""
    mean = box_mean_array(image, size)
    var = box_mean_array(image * image, size)
    var -= mean * mean
    np.maximum(var, 1e-6, out=var)
    return mean.ravel(), var.ravel()


class PlaneChecker:
    """The per-frame part of the check for one image pair; ``check`` per plane."""

    def __init__(self, left: np.ndarray, right: np.ndarray, config: PlaneCheckConfig | None = None) -> None:
        cfg = config or DEFAULT_PLANE_CHECK
        if cfg.window % 2 == 0 or cfg.window < 3 or cfg.scale < 1 or cfg.radius < 1:
            raise ValueError(f"bad plane check settings {cfg}")
        self.config = cfg
        h, w = left.shape[:2]
        self.full = (h, w)
        size = (max(1, w // cfg.scale), max(1, h // cfg.scale))
        self.left, self.right = _grey(left, size), _grey(right, size)
        # window means and variances, flat (each array contiguous: flat views cost nothing)
        self.mu_l, self.var_l = _mean_var(self.left, cfg.window)
        self.mu_r, self.var_r = _mean_var(self.right, cfg.window)
        self.textured = self.var_l > cfg.min_std**2
        # full-resolution pixel -> its check-scale pixel (nearest), row and column
        self.rows = np.minimum(np.arange(h) // cfg.scale, size[1] - 1)
        self.cols = np.minimum(np.arange(w) // cfg.scale, size[0] - 1)
        self._moved = np.empty_like(self.left)  # per-plane buffer

    def estimate(self, plane: float, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Local disparity (full-resolution px) near ``plane`` and its ZNCC peak at the
        check-scale pixels ``where`` (flat indices); the peak is -1 where nothing could be
        measured (no texture, or every window reaching past the right image)."""
        cfg = self.config
        left, right = self.left, self.right
        ws = left.shape[1]
        k0 = math.floor(plane / cfg.scale)
        shifts = np.arange(k0 - cfg.radius, k0 + cfg.radius + 2)
        n = len(shifts)
        zncc = np.full((n, where.size), -1.0, np.float32)
        measurable = [(i, int(s)) for i, s in enumerate(shifts) if 0 < s < ws - cfg.window // 2]
        if measurable:
            mu_l, var_l = self.mu_l[where], self.var_l[where]
            col = where % ws
            product = self._moved
            for i, s in measurable:
                # window means of the left image times the right one moved by s columns
                product[:, :s] = 0.0
                np.multiply(left[:, s:], right[:, :-s], out=product[:, s:])
                cross = box_mean_array(product, cfg.window).ravel()[where]
                moved = where - s
                value = (cross - mu_l * self.mu_r[moved]) / np.sqrt(var_l * self.var_r[moved])
                # windows reaching past the right image's edge stay at -1
                zncc[i] = np.where(col >= s + cfg.window // 2, value, -1.0)
        best = zncc.argmax(0)
        pick = np.arange(where.size)
        inner = np.clip(best, 1, n - 2)
        a, b, c = zncc[inner - 1, pick], zncc[inner, pick], zncc[inner + 1, pick]
        curvature = a - 2 * b + c
        vertex = 0.5 * (a - c) / np.minimum(curvature, -1e-6)
        vertex = np.where((inner == best) & (curvature < -1e-6), np.clip(vertex, -0.5, 0.5), 0.0)
        estimate = (shifts[best] + vertex) * cfg.scale
        peak = np.where(self.textured[where], zncc[best, pick], -1.0)
        return estimate.astype(np.float32), peak

    def check(self, probabilities: np.ndarray, plane: float) -> np.ndarray:
        """H x W probabilities P(disparity > plane) -> the same with hesitant answers checked."""
        cfg = self.config
        hesitant = np.flatnonzero(np.abs(probabilities - 0.5) < cfg.band)  # flat: 10x faster than nonzero
        if hesitant.size == 0:
            return probabilities
        ys, xs = np.divmod(hesitant, probabilities.shape[1])
        # each check-scale pixel is measured once for the full-resolution pixels it covers
        cell = self.rows[ys] * self.left.shape[1] + self.cols[xs]
        marked = np.zeros(self.left.size, bool)
        marked[cell] = True
        where = np.flatnonzero(marked)
        estimate, peak = self.estimate(plane, where)
        slot = np.zeros(self.left.size, np.intp)
        slot[where] = np.arange(where.size)
        estimate, peak = estimate[slot[cell]], peak[slot[cell]]
        use = peak > cfg.min_peak
        out = probabilities.copy()
        out.ravel()[hesitant[use]] = 1.0 / (1.0 + np.exp(plane - estimate[use]))
        return out
