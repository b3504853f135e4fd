"""Losses for Bi3D training.

Binary kinds classify P(disparity > plane) per plane: binary cross-entropy against soft
targets sigmoid((gt - plane) / tau), so probabilities ramp over about a pixel and the area
under the curve reads out sub-plane disparity; plus a penalty on curves that rise again
with the plane (the main failure of per-plane training, see the light-model notes).
Continuous kinds add an L1 loss on the disparity after DispRefine.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

PLANE_STEP = 3


def sample_planes(
    gt: Tensor,
    count: int,
    max_disparity: int,
    g: torch.Generator,
    step: int = PLANE_STEP,
    near_share: float | None = None,
) -> Tensor:
    """``count`` distinct planes (px, multiples of ``step``, ascending), some of them near the
    ground truth of random pixels (within about 6 px), where the classification is hard.

    ``near_share`` None: ``count // 2`` near planes join ``2 * count`` uniform ones and a random
    subset is kept, so near planes come about twice as often as chance would have them (the
    recipe of the bundled model). A number: that share of the planes is drawn near the ground
    truth, the rest uniformly.
    ``step`` 3 keeps to whole feature columns (the published models' planes); ``step`` 1 also
    trains the fractional shifts that planes between the columns need."""
    top = max_disparity // step
    valid = gt[torch.isfinite(gt)]
    if near_share is None:
        near = count // 2 if valid.numel() else 0
    else:
        near = round(count * near_share) if valid.numel() else 0
    idx = torch.randint(0, max(valid.numel(), 1), (near,), generator=g)
    jitter = torch.randn(near, generator=g) * (2.0 * PLANE_STEP / step)  # about 6 px either way
    near_ids = ((valid[idx].cpu() / step) + jitter).round().clamp(0, top) if near else torch.empty(0)
    uniform_ids = torch.randint(0, top + 1, (count * 2,), generator=g).float()
    if near_share is None:
        ids = torch.cat([near_ids, uniform_ids]).unique()
        ids = ids[torch.randperm(ids.numel(), generator=g)][:count]
    else:
        near_ids = near_ids.unique()
        rest = uniform_ids[~torch.isin(uniform_ids, near_ids)].unique()
        rest = rest[torch.randperm(rest.numel(), generator=g)][: max(0, count - near_ids.numel())]
        ids = torch.cat([near_ids, rest])
    return (ids.sort().values * step).float()


def soft_targets(gt: Tensor, planes: Tensor, tau: float) -> tuple[Tensor, Tensor]:
    """B x H x W disparity, K planes -> targets B x K x H x W and a validity mask."""
    valid = torch.isfinite(gt)
    d = torch.nan_to_num(gt, nan=0.0)[:, None]
    target = torch.sigmoid((d - planes.to(gt.device)[None, :, None, None]) / tau)
    return target, valid[:, None].expand_as(target)


def plane_loss(logits: Tensor, gt: Tensor, planes: Tensor, tau: float = 1.0) -> Tensor:
    """Masked BCE of B x K x H x W logits (planes ascending)."""
    target, valid = soft_targets(gt, planes, tau)
    loss = F.binary_cross_entropy_with_logits(logits.float(), target, reduction="none")
    return (loss * valid).sum() / valid.sum().clamp_min(1)


def monotone_penalty(logits: Tensor) -> Tensor:
    """Mean amount by which logits rise from one plane to the next farther plane."""
    if logits.shape[1] < 2:
        return logits.new_zeros(())
    return F.relu(logits[:, 1:].float() - logits[:, :-1].float()).mean()


def disparity_loss(pred: Tensor, gt: Tensor, lo: float, hi: float) -> Tensor:
    """Smooth L1 on pixels whose ground truth lies in [lo, hi]."""
    valid = torch.isfinite(gt) & (gt >= lo) & (gt <= hi)
    if not valid.any():
        return pred.new_zeros(())
    return F.smooth_l1_loss(pred[valid].float(), gt[valid])
