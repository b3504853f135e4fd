"""Tests for the coarse-to-fine search (app.engine.depth.search, searched) and the light model's
per-pixel plane pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.padding import Padder
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.depth.search import bracket, coarse_planes, fitted_bracket, passes_needed, search
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

    def pixel_pass(
        plane_map: torch.Tensor, prior: torch.Tensor
    ) -> torch.Tensor:  # the full sweep's logit at each plane
        index = (plane_map / 3).long()
        return full[0].gather(0, index[None])[0]

    found, _ = search(coarse, planes, pixel_pass, passes_needed(24))
    # tau = 1 px: the curve is a sigmoid ramp, linear interpolation in probability between planes
    # 3 px apart lands within half a plane step of the truth
    assert torch.allclose(found, truth, atol=1.5)


def test_bracket_outside_the_range() -> None:
    truth = torch.tensor([[-5.0, 200.0]])
    planes = coarse_planes(0, 192, 24)
    br = bracket(curve_logits(truth, planes), torch.as_tensor(planes, dtype=torch.float32))
    assert br.below.tolist() == [[True, False]] and br.above.tolist() == [[False, True]]
    found, _ = search(curve_logits(truth, planes), planes, lambda m, p: torch.zeros_like(m), 3)
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


def test_fitted_bracket_ignores_a_short_false_closer_run_on_far_planes() -> None:
    """A pixel at 30 px whose curve says "closer" again at 144-168 px: the first plane below 0.5
    of the monotone curve follows the run, the best step does not."""
    planes = coarse_planes(0, 192, 24)
    d = torch.as_tensor(planes, dtype=torch.float32)
    logits = curve_logits(torch.tensor([[30.0]]), planes).clamp(-6, 6)
    logits[0, 6:8] = 6.0  # planes 144 and 168
    fitted = fitted_bracket(logits, d)
    cost = fitted.cost
    assert cost is not None
    assert (fitted.lo.item(), fitted.hi.item()) == (24.0, 48.0)
    assert cost.item() > 1  # the run it ignored counts against the answer's rating
    plain = bracket(logits, d)
    assert plain.lo.item() != 24.0
    found, _ = search(logits, planes, lambda m, p: (30.0 - m).clamp(-6, 6), 3)
    assert abs(found.item() - 30.0) < 1.5


def test_a_checkpoint_keeps_the_per_pixel_segnet(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from app.engine.bi3d.checkpoint import load_model, save_checkpoint

    torch.manual_seed(0)
    model = LightBi3D(width=0.5).eval()
    plain_path, pixel_path = tmp_path / "plain.pt", tmp_path / "pixel.pt"
    save_checkpoint(plain_path, model)
    seg = model.add_pixel_segnet()
    assert torch.equal(seg.out.weight, model.segnet.out.weight)  # a copy to train
    with torch.no_grad():
        seg.out.bias.add_(3.0)
    save_checkpoint(pixel_path, model)
    assert load_model(plain_path)[0].pixel_segnet is None
    loaded = load_model(pixel_path)[0]
    assert loaded.pixel_segnet is not None
    assert torch.equal(loaded.pixel_segnet.out.bias, seg.out.bias)
    left, right = (torch.rand(1, 3, 96, 192) for _ in range(2))
    with torch.inference_mode():
        feats = loaded.extract(left, right)
        uniform = loaded.plane_logits(feats, torch.tensor([4.0]))
        got = loaded.pixel_sweep(feats).at_planes(torch.full(uniform.shape[-2:], 12.0))
    # the passes run the per-pixel SegNet: its output bias moved every logit by 3
    assert torch.allclose(got, uniform[0, 0] + 3.0, atol=0.05)


def test_the_search_with_per_pixel_weights_is_rated_and_the_default_stays_the_full_sweep() -> None:
    left, right = rgb()
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96)
    torch.manual_seed(0)
    trained = LightBi3D(width=0.5)
    trained.add_pixel_segnet()
    assert len(Bi3DEngine(trained).compute(left, right, request).planes) == 33  # auto: the full sweep
    engine = Bi3DEngine(trained, search="coarse-to-fine")
    assert engine._search_ready() and Bi3DEngine(trained)._search_ready()  # the budget may choose it
    assert not Bi3DEngine(trained, search="full")._search_ready()
    assert not Bi3DEngine(LightBi3D(width=0.5))._search_ready()  # no per-pixel weights
    result = engine.compute(left, right, request)
    assert result.planes.tolist() == list(range(0, 97, 24))
    assert any(note.startswith("coarse-to-fine search: 5 planes every 24 px") for note in result.notes)
    # the answer is rated and checked against the images as the full sweep's is
    assert result.confidence is not None and result.confidence.shape == left.shape[:2]
    assert 0 <= result.confidence.min() and result.confidence.max() <= 1
    strict = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96, min_confidence=1.0)
    masked = engine.compute(left, right, strict)
    assert np.isnan(masked.disparity).sum() >= (result.confidence < 1.0).sum()


def test_curve_upsampling_follows_the_dominant_side_of_an_edge() -> None:
    """Two neighbours at 10 and 40 px, weights 0.8 / 0.2 on one output pixel: blending the
    crossings answers 16 px, a surface that is not there; the combined curve's crossing stays
    with the dominant side (within the saturation's reach)."""
    from app.engine.depth.search import Bracket
    from app.engine.depth.searched import curve_upsample

    low = torch.tensor([[10.0, 40.0]])
    lo, hi = low - 1.5, low + 1.5
    br = Bracket(lo, hi, torch.full_like(low, 3.0), torch.full_like(low, -3.0), low < 0, low < 0)
    guide = torch.full((1, 9, 4, 1, 2), -30.0)
    guide[:, 4] = 0.0  # every output pixel: its own coarse pixel (the 3 x 3 window's centre)
    guide[:, 5, :, :, 0] = -1.386  # ... and for the left one its right neighbour, 0.8 / 0.2
    out = curve_upsample(low, br, guide.view(1, 36, 1, 2))
    assert out.shape == (2, 4)
    assert torch.allclose(out[:, 2:], torch.tensor(40.0), atol=0.05)
    assert (out[:, :2] - 10.0).abs().max() < 1.0  # the blend would be 16


def test_the_per_pixel_segnet_reads_the_prior_only_through_its_own_weights() -> None:
    from app.engine.depth.search import Bracket, prior

    torch.manual_seed(2)
    model = LightBi3D(width=0.5).eval()
    seg = model.add_pixel_segnet()
    left, right = (torch.rand(1, 3, 96, 192) for _ in range(2))
    with torch.inference_mode():
        feats = model.extract(left, right)
        planes = torch.full(model.plane_logits(feats, torch.tensor([4.0])).shape[-2:], 12.0)
        known = torch.full_like(planes, 2.0)
        plain = model.pixel_sweep(feats).at_planes(planes)
        assert torch.equal(model.pixel_sweep(feats).at_planes(planes, known), plain)  # zero weights
        seg.proj_prior.weight.fill_(1.0)
        feats = model.extract(left, right)  # new terms for the new weights
        assert torch.equal(model.pixel_sweep(feats).at_planes(planes), plain)  # no prior given
        assert not torch.allclose(model.pixel_sweep(feats).at_planes(planes, known), plain)
    # the prior is the bracket's ends read linearly at the plane
    br = Bracket(
        torch.tensor([0.0]),
        torch.tensor([24.0]),
        torch.tensor([4.0]),
        torch.tensor([-2.0]),
        torch.tensor([False]),
        torch.tensor([False]),
    )
    assert prior(br, torch.tensor([12.0])).item() == pytest.approx(1.0)


def test_the_budget_chooses_the_search_where_it_fits_and_the_sweeps_do_not() -> None:
    left, right = rgb()
    torch.manual_seed(0)
    trained = LightBi3D(width=0.5)
    trained.add_pixel_segnet()
    engine = Bi3DEngine(trained)
    first = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96, budget_ms=1e6))
    assert first.choice.get("coarse_px") is None  # the finest sweep fits
    cost = next(iter(engine.costs.costs.values()))
    assert cost.search_base_ms is not None and cost.per_pass_ms is not None  # probed on the first frame
    cost.dense_per_plane_ms = 1e4  # no full sweep fits now
    budget = engine.costs.predict_search_ms(next(iter(engine.costs.costs)), 5, 3, "colour", 9) + 1
    result = engine.compute(
        left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96, budget_ms=budget)
    )
    assert (
        result.choice["coarse_px"] == 24
        and result.choice["passes"] == 3
        and result.planes.tolist() == list(range(0, 97, 24))
    )
    assert "coarse-to-fine, 5 planes every 24 px" in " ".join(result.notes)


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_the_per_pixel_passes_run_in_every_cpu_precision(precision: str) -> None:
    """bf16 (the default where the CPU has it) once failed in the passes' in-place product:
    fp32 correlations against the bf16 weights of the autocast model."""
    left, right = rgb()
    torch.manual_seed(0)
    trained = LightBi3D(width=0.5)
    trained.add_pixel_segnet()
    engine = Bi3DEngine(trained, precision=precision, search="coarse-to-fine")
    result = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96))
    assert result.precision == precision and result.planes.tolist() == list(range(0, 97, 24))
    assert np.isfinite(result.disparity).any()
