"""Sub-pixel refinement of the plane readout: finds sub-pixel shifts near the readout, leaves
flat regions and far moves alone, and its CPU shortcuts match the device-agnostic paths."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from app.engine.depth.subpixel import (
    SubpixelConfig,
    box_mean,
    box_mean_torch,
    for_step,
    median_filter,
    median_filter_torch,
    refine_subpixel,
    shift_count,
)


def _shifted_pair(disparity: float, size: tuple[int, int] = (120, 200)) -> tuple[torch.Tensor, torch.Tensor]:
    """A textured left image and a right image moved left by ``disparity`` px (sub-pixel exact)."""
    rng = np.random.default_rng(0)
    h, w = size
    base = cv2.GaussianBlur(rng.uniform(0, 255, (h, w + 64, 3)).astype(np.float32), (0, 0), 1.2)
    left = base[:, 32 : 32 + w]
    shift = np.float32([[1, 0, -disparity], [0, 1, 0]])  # right(x) = base(x + 32 + d) = left(x + d)
    right = cv2.warpAffine(base, shift, (w + 64, h), flags=cv2.INTER_CUBIC)[:, 32 : 32 + w]
    return torch.from_numpy(np.ascontiguousarray(left)), torch.from_numpy(np.ascontiguousarray(right))


@pytest.mark.parametrize("truth", [7.4, 12.75])
def test_finds_the_sub_pixel_shift_near_the_readout(truth: float) -> None:
    left, right = _shifted_pair(truth)
    readout = torch.full(left.shape[:2], float(np.floor(truth)) - 1.0)  # off by 1.4 / 1.75 px
    out = refine_subpixel(left, right, readout)
    inner = out[10:-10, 30:-10]
    assert float((inner - truth).abs().median()) < 0.15
    assert float((readout[10:-10, 30:-10] - truth).abs().median()) > 1.0


@pytest.mark.parametrize("joint", [True, False])
def test_both_colour_correlations_find_the_shift_through_a_white_balance_difference(joint: bool) -> None:
    left, right = _shifted_pair(9.6)
    # the right camera: another gain, and an offset per channel (a white-balance difference)
    right = (0.8 * right + torch.tensor([12.0, -9.0, 20.0])).clamp(0, 255)
    readout = torch.full(left.shape[:2], 8.0)
    config = SubpixelConfig(joint=joint)
    out = refine_subpixel(left, right, readout, config)[10:-10, 30:-10]
    assert float((out - 9.6).abs().median()) < 0.15
    # and one correlation per channel or over the patch answer alike on the same pair
    other = refine_subpixel(left, right, readout, SubpixelConfig(joint=not joint))[10:-10, 30:-10]
    assert float((out - other).abs().median()) < 0.05


def test_a_coarser_plane_step_widens_the_search() -> None:
    base = SubpixelConfig()
    assert [for_step(base, s).radius for s in (3, 6, 9, 12)] == [3, 4, 5, 6]
    assert for_step(base, 12).reach == 7.0 and shift_count(for_step(base, 12)) == 15
    assert for_step(SubpixelConfig(radius=5), 3).radius == 5  # never narrower than asked
    # a readout between planes 12 px apart, 5 px off: out of the default reach, inside the widened one
    left, right = _shifted_pair(20.3)
    readout = torch.full(left.shape[:2], 15.0)
    narrow = refine_subpixel(left, right, readout)[10:-10, 40:-10]
    wide = refine_subpixel(left, right, readout, for_step(base, 12))[10:-10, 40:-10]
    assert float((narrow - 20.3).abs().median()) > 4.0
    assert float((wide - 20.3).abs().median()) < 0.15


def test_flat_regions_keep_the_readout() -> None:
    left = torch.full((64, 96, 3), 128.0)
    readout = torch.full((64, 96), 10.3)
    assert torch.equal(refine_subpixel(left, left.clone(), readout), readout)


def test_never_moves_farther_than_its_reach() -> None:
    left, right = _shifted_pair(9.0)
    readout = torch.full(left.shape[:2], 3.0)  # 6 px off: out of reach
    cfg = SubpixelConfig(reach=1.0)
    out = refine_subpixel(left, right, readout, cfg)
    assert float((out - readout).abs().max()) <= cfg.reach + 1e-6


def test_cpu_shortcuts_match_the_device_agnostic_paths() -> None:
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.uniform(-1, 1, (40, 57, 7)).astype(np.float32))
    torch.testing.assert_close(box_mean(x, 11), box_mean_torch(x, 11), atol=1e-5, rtol=0)
    d = torch.from_numpy(rng.uniform(0, 60, (40, 57)).astype(np.float32))
    assert torch.equal(median_filter(d, 5), median_filter_torch(d, 5))


def test_bands_of_rows_give_the_same_result_as_one_piece() -> None:
    left, right = _shifted_pair(7.4, size=(100, 160))
    rng = np.random.default_rng(4)
    readout = torch.from_numpy(rng.uniform(5.5, 9.0, (100, 160)).astype(np.float32))
    whole = refine_subpixel(left, right, readout, band_rows=1000)
    assert torch.equal(refine_subpixel(left, right, readout, band_rows=17), whole)


def test_autocast_of_the_engine_does_not_reach_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the device path (convolutions, which autocast would run in bf16), here on the CPU
    monkeypatch.setattr("app.engine.depth.subpixel.box_mean", box_mean_torch)
    left, right = _shifted_pair(7.4, size=(60, 120))
    readout = torch.full(left.shape[:2], 6.0)
    plain = refine_subpixel(left, right, readout)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert box_mean_torch(left, 11).dtype == torch.bfloat16  # what the guard keeps out
        assert torch.equal(refine_subpixel(left, right, readout), plain)
