"""Tests for app.engine.depth.readout's grid readout: the light model's curves read on its own
grid and the answer upsampled, instead of upsampling every plane first."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from app.engine.depth.readout import host_array, step_fit, upsampled_probabilities, upsampled_step_fit

PLANES = torch.arange(40, dtype=torch.float32) * 3
SIZE = (60, 90)  # 3x the grid, as the light model's feature grid to the image


def _scene_logits(seed: int = 0) -> torch.Tensor:
    """1 x P x 20 x 30 logits of a scene with depth edges (30 / 80 / 10 px) and noise."""
    g = torch.Generator().manual_seed(seed)
    gt = torch.zeros(20, 30)
    gt[:, :12], gt[:, 12:] = 30.0, 80.0
    gt[5:9, 20:25] = 10.0
    gt += torch.linspace(0, 6, 30)  # a slant: neighbouring steps one plane apart
    logits = 0.8 * (gt[None] - PLANES[:, None, None])
    return (logits + 0.3 * torch.randn(logits.shape, generator=g))[None]


def _full_res(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    full = F.interpolate(logits, SIZE, mode="bilinear", align_corners=False)
    fit = step_fit(full, PLANES)
    return fit.disparity, fit.cost


def test_every_pixel_read_from_its_own_curve_is_the_full_resolution_fit() -> None:
    logits = _scene_logits()
    disp, cost = upsampled_step_fit(logits, PLANES, torch.sigmoid(logits), SIZE, spread=0)
    ref_disp, ref_cost = _full_res(logits)
    assert torch.allclose(disp, ref_disp, atol=1e-4)
    assert torch.allclose(cost, ref_cost, atol=1e-4)


def test_the_default_reads_edges_from_their_curves_and_stays_close_elsewhere() -> None:
    logits = _scene_logits(1)
    disp, _ = upsampled_step_fit(logits, PLANES, torch.sigmoid(logits), SIZE)
    ref_disp, _ = _full_res(logits)
    diff = (disp - ref_disp).abs()
    assert float(diff.max()) < 0.5
    assert float((diff > 0.25).float().mean()) < 0.002
    # upsampling the grid's answers everywhere instead strays further at the edges
    fit = step_fit(logits, PLANES)
    blended = (F.interpolate(fit.disparity, SIZE, mode="bilinear", align_corners=False) - ref_disp).abs()
    assert float(blended.max()) > 2 * float(diff.max())
    assert float((blended > 0.25).float().mean()) > 0.01


def test_the_probability_record_is_the_bilinear_crop() -> None:
    probs = torch.sigmoid(_scene_logits(2))
    record = upsampled_probabilities(probs, SIZE, 6, 9)
    ref = F.interpolate(probs, SIZE, mode="bilinear", align_corners=False)[0, :, 6:, 9:].numpy()
    assert record.flags.c_contiguous and record.dtype == np.float32
    assert record.shape == (40, 54, 81)
    np.testing.assert_allclose(record, ref, atol=1e-5)


def test_host_array_gives_contiguous_values_of_a_crop() -> None:
    volume = torch.arange(2 * 5 * 7, dtype=torch.float32).view(2, 5, 7)
    crop = volume[:, 1:, 2:]  # as the padder crops: not contiguous
    out = host_array(crop)
    assert out.flags["C_CONTIGUOUS"] and np.array_equal(out, crop.numpy())


@pytest.mark.gpu
def test_host_array_copies_from_the_gpu_through_page_locked_memory() -> None:
    volume = torch.rand(3, 40, 50, device="cuda")
    crop = volume[:, 4:, 6:]
    out = host_array(crop)
    assert out.flags["C_CONTIGUOUS"] and np.array_equal(out, crop.cpu().numpy())
    assert torch.from_numpy(out).is_pinned()  # the same memory: page-locked
