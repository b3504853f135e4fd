"""Tests for the coarse-to-fine search (app.engine.depth.search, searched) and the light model's
per-pixel plane pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.padding import Padder
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.depth.search import bracket, coarse_planes, passes_needed, search
from app.engine.errors import UserError
from app.engine.types import DepthRequest, Mode


def curve_logits(disparity: torch.Tensor, planes: np.ndarray, tau: float = 1.0) -> torch.Tensor:
    """1 x P x h x w logits of P(d > plane) for a known h x w disparity."""
    p = torch.as_tensor(planes, dtype=torch.float32).view(1, -1, 1, 1)
    return (disparity[None, None] - p) / tau


def test_coarse_planes_end_at_last() -> None:
    assert coarse_planes(0, 192, 24).tolist() == list(range(0, 193, 24))
    assert coarse_planes(0, 30, 12).tolist() == [0, 12, 24, 30]


@pytest.mark.parametrize(("step", "passes"), [(3, 0), (6, 1), (12, 2), (24, 3), (48, 4), (96, 5)])
def test_passes_needed(step: int, passes: int) -> None:
    assert passes_needed(step) == passes


def test_search_finds_the_full_sweeps_crossing() -> None:
    """Bisecting an ideal curve lands where the full 3 px sweep's readout does."""
    torch.manual_seed(0)
    truth = torch.rand(6, 7) * 180 + 5
    fine = np.arange(0, 193, 3.0)
    full = curve_logits(truth, fine)
    planes = coarse_planes(0, 192, 24)
    coarse = curve_logits(truth, planes)

    def pixel_pass(plane_map: torch.Tensor) -> torch.Tensor:  # the full sweep's logit at each plane
        index = (plane_map / 3).long()
        return full[0].gather(0, index[None])[0]

    found = search(coarse, planes, pixel_pass, passes_needed(24))
    # tau = 1 px: the curve is a sigmoid ramp, linear interpolation in probability between planes
    # 3 px apart lands within half a plane step of the truth
    assert torch.allclose(found, truth, atol=1.5)


def test_bracket_outside_the_range() -> None:
    truth = torch.tensor([[-5.0, 200.0]])
    planes = coarse_planes(0, 192, 24)
    br = bracket(curve_logits(truth, planes), torch.as_tensor(planes, dtype=torch.float32))
    assert br.below.tolist() == [[True, False]] and br.above.tolist() == [[False, True]]
    found = search(curve_logits(truth, planes), planes, lambda m: torch.zeros_like(m), 3)
    assert found.tolist() == [[-1.5, 193.5]]


def test_constant_plane_map_answers_as_the_plane() -> None:
    torch.manual_seed(0)
    model = LightBi3D(width=0.5).eval()
    left, right = (torch.rand(1, 3, 96, 192) for _ in range(2))
    with torch.inference_mode():
        feats = model.extract(left, right)
        sweep = model.pixel_sweep(feats)
        seen: list[torch.Tensor] = []  # SegNet's input: the first layer both ways
        model.segnet.down1.register_forward_hook(lambda m, args, out: seen.append(args[0]))
        for shift in (4.0, 6.5):  # whole and fractional feature columns
            expected = model.plane_logits(feats, torch.tensor([shift]))
            got = sweep(torch.full(sweep.shape, shift))
            assert torch.allclose(seen[-1], seen[-2], atol=1e-4, rtol=1e-4)
            # this random network amplifies float rounding through its layers
            assert torch.allclose(got, expected, atol=0.05)
        low = model.plane_logits(feats, torch.tensor([5.0]))
        sweep.at_planes(torch.full(low.shape[-2:], 15.0))
        assert torch.allclose(seen[-1], seen[-2], atol=1e-4, rtol=1e-4)


def test_plane_map_moves_each_pixel_by_its_own_shift() -> None:
    """Two halves at two planes answer, away from the seam, as their planes do."""
    torch.manual_seed(1)
    model = LightBi3D(width=0.5).eval()
    left, right = (torch.rand(1, 3, 96, 384) for _ in range(2))
    with torch.inference_mode():
        feats = model.extract(left, right)
        sweep = model.pixel_sweep(feats)
        h, w = feats.left.shape[2] // 2, feats.left.shape[3] // 2
        plane_map = torch.full((h, w), 6.0)
        plane_map[:, w // 2 :] = 30.0
        got = sweep.at_planes(plane_map)
        a, b = (model.plane_logits(feats, torch.tensor([s]))[0, 0] for s in (2.0, 10.0))
        gap = (a - b).abs()
        # each side reads as its own plane (the seam reaches a little into a random network)
        assert (got[:, :4] - a[:, :4]).abs().mean() < 0.1 * gap[:, :4].mean()
        assert (got[:, -4:] - b[:, -4:]).abs().mean() < 0.1 * gap[:, -4:].mean()


def rgb(h: int = 96, w: int = 192, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    left = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    return left, np.roll(left, -6, axis=1)


def test_engine_coarse_to_fine_sweeps_the_coarse_planes() -> None:
    engine = Bi3DEngine(LightBi3D(width=0.5), search="coarse-to-fine")
    left, right = rgb()
    result = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96))
    assert result.planes.tolist() == list(range(0, 97, 24))
    assert result.disparity.shape == left.shape[:2] and np.isfinite(result.disparity).all()
    assert result.probabilities.shape == (5, *left.shape[:2])
    assert "search" in result.timings
    full = Bi3DEngine(LightBi3D(width=0.5), search="full")
    assert len(full.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96)).planes) == 33


def test_engine_search_falls_back_with_a_note_for_published_models() -> None:
    from app.engine.bi3d.model import Bi3DModel

    engine = Bi3DEngine(Bi3DModel("continuous_2d", width=0.25), search="coarse-to-fine")
    left, right = rgb(96, 192)
    result = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
    assert any("full sweep" in note for note in result.notes)


def test_unknown_search_is_a_user_error() -> None:
    with pytest.raises(UserError, match="search"):
        Bi3DEngine(LightBi3D(width=0.5), search="fast")


def test_padder_grid_matches_the_plane_map() -> None:
    assert Padder(100, 200, minimum=96).padded_size[0] % 6 == 0
