"""Does the answer match the images? Occlusion fill and per-pixel confidence (no learned weights).

A dense per-plane readout answers every pixel, including those the right camera cannot see:
the strip left of every near object (occluded in the right view) takes the near object's
disparity, as every matcher without a left-right check does (on the Middlebury demo these
8.8 % of the pixels were 69 % wrong, mostly too near). This stage measures, for each pixel,
how well its answer matches:

1. the zero-mean normalised cross-correlation (ZNCC, grey levels, ``window`` x ``window``)
   of the left patch with the right image read at ``x - d`` (bilinear along the row);
2. where the left patch has texture (``min_std``) and the correlation stays below
   ``fill_below``, or the answer points outside the right image, the answer is replaced
   by the background fill: the farther of the nearest matched answers (textured, correlated,
   inside) to its left and right in the same row, at most ``fill_reach`` px away (occluded
   strips belong to the farther surface; a row of blank wall with nothing matched nearby
   stays as it is); a ``median`` filter then smooths the seams. Only matched answers fill: a
   textureless neighbour's answer is the network's guess, and filling from it spread the
   phantom "near" blobs of blank walls (on 16 tuning renders of blank rooms, 86 % of the
   phantoms kept at the default threshold were such fills);
3. ``confidence`` in [0, 1] combines the probability curve (``exp(-cost / curve_scale)``,
   the curve's disagreement with its best step, in planes: a clean sharp step is 1) with
   the matching (a textured pixel's ZNCC mapped linearly from ``zncc_low`` -> 0 to
   ``zncc_high`` -> 1; a textureless one has no matching evidence and keeps
   ``untextured`` x the curve's, or 0 when it is nearer by ``support_px`` than every matched
   textured answer found along its row and column: blank walls and ceilings cannot carry a
   "near" answer that nothing around them supports), measured at the final answer; a
   filled pixel is rated ``filled``.

The fill's settings (grey ZNCC over 7 x 7, fill below 0.5, a 5 x 5 median) were chosen on
the 16 held-out synthetic selection scenes (``training.data.selection_scenes``): dense bad-2
16.54 % -> 16.02 % there (Motorcycle, only checked afterwards: 18.82 % -> 17.32 %). Filling
from matched answers only, as far as 192 px (the widest occlusion the model's range makes),
was chosen on blank-room tuning renders (seeds from 5 x 10^9) and the same selection scenes
(``benchmarks/RESULTS.md``, eighth session).

Shapes: H x W x C 0-255 images, H x W disparity in pixels; any torch device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from app.engine.depth.subpixel import box_mean, median_filter, to_grey


@dataclass(frozen=True)
class AgreementConfig:
    window: int = 7  # correlation window (odd)
    min_std: float = 2.55  # deviation (0-255 grey levels) of the 3 x 3-smoothed left patch that is texture
    fill_below: float = 0.5  # ZNCC under which a textured pixel's answer is an occlusion candidate
    curve_scale: float = 2.0  # planes of curve disagreement at which the curve's confidence is 1/e
    zncc_low: float = 0.2  # matching confidence 0 at or below this ZNCC
    zncc_high: float = 0.8  # matching confidence 1 at or above this ZNCC
    untextured: float = 0.8  # share of the curve's confidence a pixel without texture keeps
    filled: float = 0.3  # the confidence of a filled (guessed) pixel
    median: int = 5  # median filter of the filled answer (odd; 1 = none)
    fill_reach: int = 192  # px: an occluded strip is filled from matched answers this close at most
    support_px: float = 3.0  # a textureless answer this much nearer than all its support is rated 0


DEFAULT_AGREEMENT = AgreementConfig()


@dataclass
class Agreement:
    disparity: Tensor  # H x W px, occlusions filled
    confidence: Tensor  # H x W in [0, 1]
    filled: Tensor  # H x W bool: the answers replaced by the background fill


class Matcher:
    """ZNCC of each left patch with the right image read at ``x - disparity``, for any number of
    answers of one pair: what depends on the left image alone (grey levels, window means and
    variances, texture) is computed once.

    left, right H x W x C 0-255."""

    def __init__(self, left: Tensor, right: Tensor, window: int) -> None:
        self.window = window
        self.grey_l, self.grey_r = to_grey(left)[..., 0], to_grey(right)[..., 0]
        # texture is measured on a 3 x 3 mean of the left image: sensor noise alone (a blank
        # wall) loses two thirds of its deviation there, structure keeps it
        smooth = box_mean(self.grey_l.unsqueeze(-1).contiguous(), 3)[..., 0]
        grey = self.grey_l
        mean = box_mean(torch.stack([grey, grey * grey, smooth, smooth * smooth], dim=2).contiguous(), window)
        self.mu_l = mean[..., 0].contiguous()
        self.var_l = (mean[..., 1] - self.mu_l * self.mu_l).clamp_min(1e-6)
        self.texture = (mean[..., 3] - mean[..., 2] * mean[..., 2]).clamp_min(0).sqrt()

    def score(self, disparity: Tensor) -> tuple[Tensor, Tensor]:
        """H x W disparity -> (zncc H x W in [-1, 1], inside H x W bool: ``x - d`` within the image)."""
        grey_l, grey_r = self.grey_l, self.grey_r
        w = grey_l.shape[1]
        source = torch.arange(w, device=grey_l.device, dtype=torch.float32).view(1, w) - disparity.float()
        inside = (source >= 0) & (source <= w - 1)
        x0 = source.floor().clamp(0, w - 1)
        t = (source - x0).clamp(0, 1)
        i0 = x0.long()
        i1 = (i0 + 1).clamp(max=w - 1)
        moved = (1 - t) * grey_r.gather(1, i0) + t * grey_r.gather(1, i1)
        mean = box_mean(torch.stack([moved, moved * moved, grey_l * moved], dim=2).contiguous(), self.window)
        mu_r = mean[..., 0]
        var_r = (mean[..., 1] - mu_r * mu_r).clamp_min(1e-6)
        zncc = ((mean[..., 2] - self.mu_l * mu_r) * (self.var_l * var_r).rsqrt()).clamp(-1, 1)
        return zncc, inside


def row_neighbours(disparity: Tensor, accepted: Tensor, reach: int | None = None) -> tuple[Tensor, Tensor]:
    """The nearest accepted answer to the left and to the right of each pixel in its row, at
    most ``reach`` px away (None: any); NaN where there is none. H x W float, H x W bool ->
    (from the left, from the right), each H x W."""
    h, w = disparity.shape
    cols = torch.arange(w, device=disparity.device).expand(h, w)
    missing = torch.full_like(cols, -1)
    last = torch.cummax(torch.where(accepted, cols, missing), dim=1).values  # nearest to the left
    flipped = torch.where(accepted.flip(1), cols, missing)
    nxt = (w - 1) - torch.cummax(flipped, dim=1).values.flip(1)  # nearest to the right
    nan = torch.full_like(disparity, float("nan"))
    near_left, near_right = last >= 0, nxt <= w - 1
    if reach is not None:
        near_left &= cols - last <= reach
        near_right &= nxt - cols <= reach
    from_left = torch.where(near_left, disparity.gather(1, last.clamp(min=0)), nan)
    from_right = torch.where(near_right, disparity.gather(1, nxt.clamp(max=w - 1)), nan)
    return from_left, from_right


def background_fill(disparity: Tensor, accepted: Tensor, reach: int | None = None) -> Tensor:
    """The farther (smaller) of the nearest accepted answers left and right in each row, each
    at most ``reach`` px away (None: any); NaN where there is none. H x W float, H x W bool -> H x W."""
    return torch.fmin(*row_neighbours(disparity, accepted, reach))


def curve_confidence(cost: Tensor, scale: float = DEFAULT_AGREEMENT.curve_scale) -> Tensor:
    """A curve's confidence from its disagreement with its best step (planes): ``exp(-cost / scale)``."""
    return torch.exp(-cost.float() / scale)


def plane_confidence(probabilities: np.ndarray) -> np.ndarray:
    """Binary and quantized answers: how decided the least decided plane is, ``min |2p - 1|``
    over the P x H x W probabilities -> H x W in [0, 1] (one plane: its own decisiveness)."""
    if probabilities.shape[0] == 0:
        return np.zeros(probabilities.shape[1:], np.float32)
    return np.abs(2.0 * probabilities - 1.0).min(axis=0).astype(np.float32)


def nearest_support(disparity: Tensor, accepted: Tensor) -> Tensor:
    """The nearest (largest) of the closest accepted answers in the four directions along rows
    and columns; -inf where none. H x W float, H x W bool -> H x W."""
    # columns as rows of contiguous transposes: cummax along strided memory is several times slower
    rows = row_neighbours(disparity, accepted)
    cols = row_neighbours(disparity.T.contiguous(), accepted.T.contiguous())
    found = torch.fmax(torch.fmax(*rows), torch.fmax(*cols).T)  # fmax: NaN only where all four are
    return found.nan_to_num_(nan=float("-inf"), posinf=float("inf"))


def agree(
    left: Tensor, right: Tensor, disparity: Tensor, curve_cost: Tensor | None, config: AgreementConfig
) -> Agreement:
    """Fill occlusions and rate each answer (module docstring). ``curve_cost`` H x W in planes
    (``readout.step_fit``), None when the curve is not known (it then counts as clean)."""
    matcher = Matcher(left, right, config.window)
    zncc, inside = matcher.score(disparity)
    textured = matcher.texture > config.min_std
    suspect = (textured & (zncc < config.fill_below)) | ~inside
    fill = background_fill(disparity, textured & ~suspect, config.fill_reach)  # matched answers only
    filled = suspect & ~torch.isnan(fill)  # a row without accepted answers keeps its own
    out = median_filter(torch.where(filled, fill, disparity), config.median)
    zncc, inside = matcher.score(out)  # the final answer's match
    span = max(config.zncc_high - config.zncc_low, 1e-6)
    matching = ((zncc - config.zncc_low) / span).clamp(0, 1) * inside
    curve = torch.ones_like(disparity)
    if curve_cost is not None:
        curve = curve_confidence(curve_cost, config.curve_scale)
    # a textureless pixel nearer than every matched textured answer around it (left, right,
    # above, below) has no support: the phantom "near" blobs of blank walls and ceilings
    matched = textured & (zncc >= config.fill_below) & inside
    unsupported = ~textured & (out > nearest_support(out, matched) + config.support_px)
    untextured = torch.where(unsupported, torch.zeros_like(curve), curve * config.untextured)
    confidence = torch.where(textured, curve * matching, untextured)
    # a filled pixel is a guess from its row: neither its curve nor its (occluded) match rates it
    confidence = torch.where(filled, torch.full_like(confidence, config.filled), confidence)
    return Agreement(out, confidence.clamp(0, 1), filled)
