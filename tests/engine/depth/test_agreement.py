"""Step-fit readout, occlusion fill and confidence."""

from __future__ import annotations

import numpy as np
import torch

from app.engine.depth.agreement import AgreementConfig, Matcher, agree, background_fill, plane_confidence
from app.engine.depth.readout import step_fit


def _logits(curve: list[float]) -> torch.Tensor:
    p = torch.tensor(curve).clamp(1e-4, 1 - 1e-4)
    return torch.log(p / (1 - p)).view(1, -1, 1, 1)


PLANES = torch.arange(0, 30, 3, dtype=torch.float32)  # 10 planes, 0..27 px


def test_step_fit_ignores_a_short_false_closer_run_on_far_planes() -> None:
    # closer than planes 0..3 (true disparity between 9 and 12), then a false "closer" run at 21..27
    curve = [1, 1, 1, 1, 0.1, 0.1, 0.1, 0.1, 0.95, 0.95]
    fit = step_fit(_logits(curve), PLANES)
    assert fit.above.item() == 4
    assert 9 <= fit.disparity.item() <= 12
    assert abs(fit.cost.item() - 2.3) < 1e-2  # 4 x 0.1 below the step, 2 x 0.95 ignored


def test_step_fit_reads_the_crossing_and_the_ends() -> None:
    fit = step_fit(_logits([1, 1, 0.8, 0.2, 0, 0, 0, 0, 0, 0]), PLANES)
    assert abs(fit.disparity.item() - 7.5) < 1e-3  # 0.5 halfway between planes 6 and 9 px
    assert step_fit(_logits([0.0] * 10), PLANES).disparity.item() == -1.5
    assert step_fit(_logits([1.0] * 10), PLANES).disparity.item() == 28.5
    assert step_fit(_logits([1.0] * 10), PLANES).cost.item() < 1e-2


def _shifted_pair(d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 255, (60, 160 + d, 3)).astype(np.uint8)
    return base[:, :160].copy(), base[:, d:].copy()  # left(x) = right(x - d)


def test_match_score_is_high_at_the_true_disparity_only() -> None:
    left, right = (torch.from_numpy(a) for a in _shifted_pair(8))
    matcher = Matcher(left, right, 7)
    (good, inside), std = matcher.score(torch.full((60, 160), 8.0)), matcher.texture
    bad, _ = matcher.score(torch.full((60, 160), 13.0))
    assert good[5:-5, 20:-5].min() > 0.95
    assert bad[5:-5, 20:-5].median() < 0.3
    assert (std > 5).all()
    # sensor noise on a blank wall is not texture: the deviation is measured 3 x 3-smoothed
    rng = np.random.default_rng(3)
    wall = torch.from_numpy(np.clip(128 + rng.normal(0, 3, (60, 160, 3)), 0, 255).astype(np.uint8))
    wall_std = Matcher(wall, wall, 7).texture
    assert wall_std.median() < AgreementConfig().min_std
    assert not inside[:, :8].any() and inside[:, 8:].all()


def test_background_fill_takes_the_farther_neighbour() -> None:
    d = torch.tensor([[5.0, 5.0, 20.0, 20.0, 20.0, 9.0]])
    accepted = torch.tensor([[True, True, False, False, True, True]])
    out = background_fill(d, accepted)
    assert out[0, 2].item() == 5.0 and out[0, 3].item() == 5.0  # min(5 from the left, 20 from the right)
    assert torch.isnan(background_fill(d, torch.zeros_like(accepted))).all()


def test_agree_fills_a_mismatched_strip_and_lowers_its_confidence() -> None:
    left, right = (torch.from_numpy(a) for a in _shifted_pair(8, seed=1))
    disparity = torch.full((60, 160), 8.0)
    disparity[:, 70:90] = 30.0  # a wrong (too near) strip
    cost = torch.zeros(60, 160)
    config = AgreementConfig(median=1)
    out = agree(left, right, disparity, cost, config)
    assert torch.allclose(out.disparity[:, 74:86], torch.tensor(8.0))
    assert out.filled[:, 74:86].all()
    assert out.confidence[:, 74:86].max() <= config.filled
    assert out.confidence[10:-10, 20:60].min() > 0.9  # matched, clean curve
    noisy = agree(left, right, torch.full((60, 160), 8.0), torch.full((60, 160), 6.0), config)
    assert noisy.confidence[10:-10, 20:60].max() < 0.1  # a curve far from any step


def test_plane_confidence_is_the_least_decided_plane() -> None:
    p = np.array([[[0.95]], [[0.6]]], np.float32)
    assert abs(plane_confidence(p)[0, 0] - 0.2) < 1e-6


def test_only_matched_answers_fill_a_mismatch() -> None:
    # blank | textured, true disparity 8; the network guesses 3 px on the blank strip, and the
    # first textured columns answer 20 px and do not match. Their fill comes from matched
    # answers to the right, never from the blank strip's guess (3 px: farther, so the fill of
    # every accepted answer took it)
    left, right = _shifted_pair(8)
    left[:, :40] = 128
    right[:, :32] = 128  # the same blank strip seen by the right camera
    lt, rt = torch.from_numpy(left).float(), torch.from_numpy(right).float()
    answer = torch.full((60, 160), 8.0)
    answer[:, :40] = 3.0
    answer[:, 40:46] = 20.0
    agreed = agree(lt, rt, answer, None, AgreementConfig())
    assert bool(agreed.filled[10:-10, 38:43].all())
    assert bool((agreed.disparity[10:-10, 38:43] > 3.5).all())
