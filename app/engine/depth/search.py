"""Coarse-to-fine continuous search: a coarse plane sweep, then a per-pixel bisection.

The full sweep classifies every plane of the 3 px grid over the whole image (65 network
passes for 0-192 px) and reads each pixel where its curve P(disparity > plane) crosses 0.5.
Only the two grid planes around that crossing decide the answer, so this search finds them
with far fewer passes:

1. a sweep of coarse planes ``coarse_step`` px apart (a multiple of 3: 24 px gives 9 planes
   over 0-192) brackets each pixel's crossing between two coarse planes (the first plane
   below 0.5 of the curve made non-increasing, as the full sweep reads it);
2. per-pixel bisection: each pass classifies every pixel at the middle grid plane of its own
   bracket (one network pass with a per-pixel plane map, ``LightBi3D.pixel_sweep``) and keeps
   the half that holds the crossing, until the bracket is one grid step (3 px): log2(step / 3)
   passes;
3. the crossing between the bracket's two planes is interpolated from their probabilities,
   as the step readout (``readout.step_fit``) does between neighbouring planes.

Everything here runs on the network's low-resolution logit grid (1/6 of the image for the
light model): B = 1, h x w that grid; planes and disparities in image pixels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from app.engine.depth.decoding import PLANE_STEP_PX
from app.engine.depth.readout import monotone_logits, step_fit


@dataclass
class Bracket:
    """Each pixel's crossing lies between planes ``lo`` and ``hi`` (h x w px) whose logits are
    ``lo_logit`` (>= 0: P > 0.5) and ``hi_logit`` (< 0); ``below`` / ``above`` mark pixels whose
    curve is below 0.5 at the first plane / above it at the last (no crossing in the range)."""

    lo: Tensor
    hi: Tensor
    lo_logit: Tensor
    hi_logit: Tensor
    below: Tensor
    above: Tensor
    # the coarse curve's disagreement with its best step (h x w, in coarse planes), where the
    # bracket came from that step (``fitted_bracket``)
    cost: Tensor | None = None


def coarse_planes(first: int, last: int, step: int) -> np.ndarray:
    """Planes ``first``, ``first + step``, ... and always ``last`` (px, ascending)."""
    planes = [*range(first, last, step), last]
    return np.asarray(planes, np.float64)


def bracket(logits: Tensor, planes: Tensor) -> Bracket:
    """1 x P x h x w coarse logits at ``planes`` (P,) px -> each pixel's ``Bracket``."""
    mono = monotone_logits(logits.float())[0]  # P x h x w, non-increasing along P
    p = mono.shape[0]
    below_half = mono < 0
    k = torch.argmax(below_half.to(torch.uint8), dim=0)  # first plane below 0.5
    above = ~below_half.any(dim=0)
    below = (k == 0) & ~above
    k_hi = k.clamp(min=1)
    k_hi = torch.where(above, torch.full_like(k_hi, p - 1), k_hi)
    k_lo = k_hi - 1
    d = planes.to(mono)
    lo_logit = mono.gather(0, k_lo.unsqueeze(0))[0]
    hi_logit = mono.gather(0, k_hi.unsqueeze(0))[0]
    return Bracket(d[k_lo], d[k_hi], lo_logit, hi_logit, below, above)


def fitted_bracket(logits: Tensor, planes: Tensor) -> Bracket:
    """1 x P x h x w coarse logits at ``planes`` (P,) px -> each pixel's ``Bracket`` around the
    best step of its curve (``readout.step_fit``, as the full sweep reads its curves: a short
    run of false "closer" answers on far planes is ignored, not followed), with that step's
    cost."""
    d = planes.to(device=logits.device, dtype=torch.float32)
    fit = step_fit(logits.float(), d)
    k = fit.above[0, 0]
    p = logits.shape[1]
    above = k >= p
    below = k == 0
    k_hi = k.clamp(1, p - 1)
    k_lo = k_hi - 1
    raw = logits.float()[0]
    lo_logit = raw.gather(0, k_lo.unsqueeze(0))[0]
    hi_logit = raw.gather(0, k_hi.unsqueeze(0))[0]
    # the step says the crossing lies between the two planes: their logits keep to its sides
    lo_logit = lo_logit.clamp(min=0.0)
    hi_logit = hi_logit.clamp(max=-1e-3)
    return Bracket(d[k_lo], d[k_hi], lo_logit, hi_logit, below, above, fit.cost[0, 0])


def middle(br: Bracket, step: int = PLANE_STEP_PX) -> tuple[Tensor, Tensor]:
    """The grid plane to test in each bracket (h x w px) and which brackets are still wider than
    ``step``; a finished pixel is tested at its lower plane (its answer is then ignored)."""
    width = br.hi - br.lo
    active = (width > step) & ~br.below & ~br.above
    half = torch.floor(width / (2 * step)) * step
    return torch.where(active, br.lo + half, br.lo), active


def prior(br: Bracket, plane: Tensor) -> Tensor:
    """Each pixel's logit at ``plane`` as far as the search knows its curve: linear between its
    bracket's ends (h x w)."""
    t = ((plane - br.lo) / (br.hi - br.lo).clamp_min(1e-6)).clamp(0, 1)
    return torch.lerp(br.lo_logit, br.hi_logit, t)


def narrow(br: Bracket, plane: Tensor, logit: Tensor, active: Tensor) -> None:
    """Keep the half of each active bracket that holds the crossing (in place)."""
    up = active & (logit >= 0)
    down = active & (logit < 0)
    br.lo = torch.where(up, plane, br.lo)
    br.lo_logit = torch.where(up, logit, br.lo_logit)
    br.hi = torch.where(down, plane, br.hi)
    br.hi_logit = torch.where(down, logit, br.hi_logit)


def crossing(br: Bracket, step: int = PLANE_STEP_PX) -> Tensor:
    """Where each bracket's curve crosses 0.5, linear in probability between its planes (h x w px);
    pixels below the first plane read it minus half a grid step, above the last plus half."""
    p_lo, p_hi = torch.sigmoid(br.lo_logit), torch.sigmoid(br.hi_logit)
    t = ((p_lo - 0.5) / (p_lo - p_hi).clamp(min=1e-6)).clamp(0, 1)
    d = br.lo + t * (br.hi - br.lo)
    d = torch.where(br.below, br.lo - step / 2, d)
    return torch.where(br.above, br.hi + step / 2, d)


def passes_needed(coarse_step: int, step: int = PLANE_STEP_PX) -> int:
    """Bisection passes that take a ``coarse_step`` bracket down to ``step`` px."""
    n, width = 0, coarse_step
    while width > step:
        width -= (width // (2 * step)) * step
        n += 1
    return n


def search(
    coarse: Tensor,
    planes: np.ndarray,
    pixel_pass: Callable[[Tensor, Tensor], Tensor],
    passes: int,
    fitted: bool = True,
) -> tuple[Tensor, Bracket]:
    """Coarse logits 1 x P x h x w at ``planes`` px, then ``passes`` bisection passes of
    ``pixel_pass`` (an h x w plane map in px and each pixel's ``prior`` logit there -> h x w
    logits at it) -> h x w disparity (px) and
    each pixel's final bracket. ``fitted``: bracket each pixel at its curve's best step
    (``fitted_bracket``, as the full sweep reads it: held-out synthetic scenes read from the
    sweep's own logits 21.6 % bad-2 either way, Motorcycle at 0-192 px 19.7 % against 24.4 %),
    else at the first plane below 0.5 of its curve made non-increasing (``bracket``)."""
    d = torch.as_tensor(planes, dtype=torch.float32, device=coarse.device)
    br = fitted_bracket(coarse, d) if fitted else bracket(coarse, d)
    for _ in range(passes):
        plane, active = middle(br)
        if not bool(active.any()):
            break
        narrow(br, plane, pixel_pass(plane, prior(br, plane)).float(), active)
    return crossing(br), br
