"""The 3D generator: deterministic, exact disparity (f B / Z), thin structures, masks, camera."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import torch

from app.engine.synthetic.layout import CEILING, FLOOR, THIN, WALL, Builder, _plane, _railing
from app.engine.synthetic.raycast import cylinder
from app.engine.synthetic.rooms import RoomConfig, render_rig, render_room, render_room_labelled

SMALL = RoomConfig(96, 192)


def _flat(seed: int = 0) -> Builder:
    """A builder whose materials are nearly flat (plaster), camera at 1.5 m, looking straight."""
    b = Builder(torch.Generator().manual_seed(seed), natural=0.0, blank_share=1.0)
    b.scene.position = np.array([0.0, 1.5, 0.0])
    return b


def test_same_seed_same_scene() -> None:
    a, b, c = render_room(5, SMALL), render_room(5, SMALL), render_room(6, SMALL)
    assert torch.equal(a.left, b.left) and torch.equal(a.right, b.right)
    assert torch.equal(a.disparity, b.disparity)
    assert not torch.equal(a.left, c.left)
    assert a.left.shape == (3, 96, 192) and a.disparity.shape == (96, 192)


def test_disparity_warps_right_onto_left() -> None:
    """Without camera effects, the right view warped by the left disparity is the left view,
    except at occlusions and depth edges."""
    cfg = RoomConfig(144, 240, photometric=False)
    for seed in range(4):
        s = render_room(seed, cfg)
        d = s.disparity.numpy()
        left = s.left.permute(1, 2, 0).numpy()
        right = np.ascontiguousarray(s.right.permute(1, 2, 0).numpy())
        h, w = d.shape
        xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
        # away from depth edges (3 px: where the disparity is not locally planar) and the left
        # border that the right view cannot see
        curve = np.abs(cv2.Laplacian(d, cv2.CV_32F, ksize=1))
        smooth = cv2.dilate((curve > 0.3).astype(np.uint8), np.ones((7, 7), np.uint8)) == 0
        keep = smooth & (xs - d >= 2)
        warped = cv2.remap(right, xs - d, ys, cv2.INTER_LINEAR)
        err = np.abs(warped - left).mean(axis=2)[keep]
        wrong = np.abs(cv2.remap(right, xs + d, ys, cv2.INTER_LINEAR) - left).mean(axis=2)[keep]
        assert keep.mean() > 0.2
        # what is left: surfaces hidden from the right camera, and resampling of fine texture
        assert np.median(err) < 0.003 and (err < 0.03).mean() > 0.9, seed
        assert np.median(err) < 0.3 * np.median(wrong)


def test_fronto_parallel_wall_has_constant_disparity() -> None:
    b = _flat()
    b.add(_plane(2, 4.0), b.material(WALL))  # a wall 4 m ahead
    r = render_rig(b.scene, focal_px=200.0, baseline=0.1, cfg=RoomConfig(48, 64, photometric=False))
    assert torch.allclose(r.sample.disparity, torch.full((48, 64), 200 * 0.1 / 4), atol=1e-5)
    assert r.kind.eq(WALL).all() and r.low_texture.all()


def test_floor_disparity_is_linear_in_the_row() -> None:
    """Camera 1.5 m above a floor, level: a floor pixel in row v has disparity B (v - cy) / 1.5."""
    b = _flat()
    b.add(_plane(1, 0.0), b.material(FLOOR))
    b.add(_plane(1, 3.0), b.material(CEILING))
    b.add(_plane(2, 1000.0), b.material(WALL))
    h, w, baseline = 64, 96, 0.2
    r = render_rig(b.scene, focal_px=80.0, baseline=baseline, cfg=RoomConfig(h, w, photometric=False))
    d = r.sample.disparity
    cy = (h - 1) / 2
    rows = torch.arange(h, dtype=torch.float32)
    floor = r.kind[:, 0] == FLOOR
    assert floor.sum() > 20 and bool((rows[floor] > cy).all())
    expected = baseline * (rows - cy) / 1.5
    assert torch.allclose(d[floor], expected[floor, None].expand(-1, w), atol=1e-4)
    ceiling = r.kind[:, 0] == CEILING  # 1.5 m above: the mirror image
    assert torch.allclose(d[ceiling], -expected[ceiling, None].expand(-1, w), atol=1e-4)


def test_thin_structures_stand_out_of_their_background() -> None:
    """A railing in front of a wall: bars 1-6 px wide whose disparity exceeds both neighbours'."""
    b = _flat(3)
    b.scene.hfov = math.radians(70)
    focal = 96 / math.tan(b.scene.hfov / 2)
    b.add(_plane(2, 6.0), b.material(WALL))
    b.add(_plane(1, 0.0), b.material(FLOOR))
    _railing(b, 0.0, 3.0, focal, along_x=True)
    r = render_rig(b.scene, focal_px=focal, baseline=0.1, cfg=RoomConfig(96, 192, photometric=False))
    d = r.sample.disparity
    thin = r.kind == THIN
    assert thin.sum() > 50
    ridge = (d[:, 4:-4] > d[:, :-8] + 0.5) & (d[:, 4:-4] > d[:, 8:] + 0.5)  # above both, 4 px away
    assert (ridge & thin[:, 4:-4]).sum() > 30
    # the bars cross the row 0.6 m above the floor (0.9 m below the camera, 3 m away) in 1-8 px
    row = thin[round(47.5 + focal * 0.9 / 3)]
    runs = np.diff(np.flatnonzero(np.diff(np.r_[0, row.numpy().astype(int), 0])))[::2]
    assert len(runs) >= 3 and runs.max() <= 8


def test_a_cable_one_pixel_wide_is_antialiased_not_lost() -> None:
    b = _flat()
    b.add(_plane(2, 5.0), b.material(WALL))
    focal = 100.0
    r_m = 0.6 * 4.0 / (2 * focal)  # 0.6 px wide at 4 m
    b.add(cylinder(np.array([-5.0, 1.5, 4.0]), np.array([5.0, 1.5, 4.0]), r_m), b.material(THIN, blank=True))
    b.scene.materials[-1] = (*b.scene.materials[-1][:5], 0.0, 0.0, 0.0, *b.scene.materials[-1][8:])  # black
    r = render_rig(b.scene, focal, 0.1, RoomConfig(48, 96, photometric=False))
    rows = r.sample.left[0].mean(1)  # the black cable darkens its row partly (supersampled)
    assert float(rows.min()) < 0.8 * float(rows.max())


def test_disparity_never_exceeds_the_maximum_and_spreads_below_it() -> None:
    tops = []
    for max_d in (48.0, 192.0):
        for seed in range(6):
            d = render_room(seed, RoomConfig(96, 192, max_disparity=max_d)).disparity
            assert float(d.min()) >= 0 and float(d.max()) <= max_d + 1e-3
            tops.append(float(d.max()) / max_d)
    assert min(tops) < 0.7 and max(tops) > 0.6  # the scene's top disparity is drawn, not fixed


def test_grey_cameras_give_equal_channels() -> None:
    grey = render_room(2, RoomConfig(64, 128, grey_share=1.0))
    for img in (grey.left, grey.right):
        assert torch.equal(img[0], img[1]) and torch.equal(img[1], img[2])
    colour = render_room(2, RoomConfig(64, 128, grey_share=0.0))
    assert not torch.equal(colour.left[0], colour.left[1])


def test_vertical_misalignment_moves_only_the_right_view() -> None:
    base = render_room_labelled(4, RoomConfig(64, 128, misalign_share=0.0))
    shifted = render_room_labelled(4, RoomConfig(64, 128, misalign_share=1.0))
    assert base.vertical_offset == 0.0 and 0 < abs(shifted.vertical_offset) <= 0.5
    assert torch.equal(base.sample.disparity, shifted.sample.disparity)
    assert not torch.equal(base.sample.right, shifted.sample.right)


def test_blank_wall_scenes_are_mostly_low_texture_and_the_mask_is_right() -> None:
    cfg = RoomConfig(96, 192, blank_walls=True, photometric=False)
    for seed in range(3):
        r = render_room_labelled(seed, cfg)
        low = r.low_texture
        assert low.float().mean() > 0.5
        grey = r.sample.left.mean(0, keepdim=True)[None]
        # local contrast (3 x 3 high-pass) on blank surfaces is tiny: only shading and faint plaster
        hp = (grey - torch.nn.functional.avg_pool2d(grey, 3, 1, 1, count_include_pad=False))[0, 0].abs()
        inner = torch.nn.functional.max_pool2d((~low).float()[None, None], 5, 1, 2)[0, 0] == 0
        assert float(hp[inner].quantile(0.95)) < 0.005  # (the rest: creases between walls)


def test_outdoor_scenes_have_sky_at_tiny_disparity() -> None:
    cfg = RoomConfig(96, 192, outdoor_share=1.0)
    skies = [render_room_labelled(seed, cfg) for seed in range(4)]
    seen = [r for r in skies if (r.kind == 0).sum() > 20]
    assert seen
    for r in seen:
        sky = r.sample.disparity[r.kind == 0]
        assert float(sky.max()) <= 2.0 and float(sky.min()) > 0


@pytest.mark.gpu
def test_renders_alike_on_cuda() -> None:
    cpu, gpu = render_room(3, SMALL), render_room(3, SMALL, device="cuda")
    assert torch.allclose(cpu.disparity, gpu.disparity.cpu(), rtol=1e-4)
    assert (cpu.left - gpu.left.cpu()).abs().mean() < 0.01
