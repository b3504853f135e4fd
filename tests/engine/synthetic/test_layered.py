"""The synthetic generator: deterministic, and its disparity is exact."""

from __future__ import annotations

import cv2
import numpy as np
import torch

from app.engine.synthetic.layered import SceneConfig, render_scene


def test_same_seed_same_scene() -> None:
    cfg = SceneConfig(96, 192)
    a, b, c = render_scene(5, cfg), render_scene(5, cfg), render_scene(6, cfg)
    assert torch.equal(a.left, b.left) and torch.equal(a.disparity, b.disparity)
    assert not torch.equal(a.left, c.left)


def test_disparity_warps_right_onto_left() -> None:
    for seed in range(4):
        s = render_scene(seed, SceneConfig(144, 240, photometric=False))
        d = s.disparity.numpy()
        left = s.left.permute(1, 2, 0).numpy()
        right = np.ascontiguousarray(s.right.permute(1, 2, 0).numpy())
        h, w = d.shape
        xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
        inside = xs - d >= 0
        warped = cv2.remap(right, xs - d, ys, cv2.INTER_LINEAR)
        err = np.abs(warped - left).mean(axis=2)[inside]
        # the wrong direction, as a yardstick for what a geometric error looks like
        wrong = np.abs(cv2.remap(right, xs + d, ys, cv2.INTER_LINEAR) - left).mean(axis=2)[inside]
        # occlusions, edges and bilinear resampling of fine texture account for the rest
        assert np.median(err) < 0.01 and (err < 0.05).mean() > 0.6
        assert np.median(err) < 0.3 * np.median(wrong)


def test_disparity_stays_in_range_and_views_differ_photometrically() -> None:
    cfg = SceneConfig(96, 192, max_disparity=48)
    for seed in range(5):
        s = render_scene(seed, cfg)
        assert float(s.disparity.min()) >= 0 and float(s.disparity.max()) <= 48 + 1e-3
        assert s.left.min() >= 0 and s.left.max() <= 1
