"""Sub-pixel refinement of the plane readout by local matching (no learned weights).

Per-plane classifiers place each pixel between two planes 3 px apart, and the light model's
plane logits live on a 1/6-resolution grid: its readout finds the right plane for most
pixels but lands between planes only roughly (on the Middlebury demo, 21 % of pixels off by
more than 3 px but 57 % by more than 1 px). This stage keeps the network's answer to "which
planes" and re-measures "where between them" from the images, as classical pipelines do
after their winner-takes-all step:

1. around each pixel's readout ``d``, the zero-mean normalised cross-correlation (ZNCC; by
   default one over the colour patch, each channel's mean removed: ``joint``) of a
   ``window`` x ``window`` patch of the left image with the
   right image shifted by ``round(d) + k`` px, for ``k`` in ``[-radius - 1, radius + 1]``
   (every neighbour in the window is shifted by its own readout, so the patch follows the
   network's surface rather than assuming a fronto-parallel one);
2. the best ``k`` in ``[-radius, radius]`` and a parabola through it and its neighbours give
   the sub-pixel position;
3. it replaces the readout only where the left patch has texture (``min_std``), the
   correlation is clear (``min_peak``) and the move stays within ``reach`` px (one plane
   step): the network's plane decisions stand;
4. a ``median`` x ``median`` median filter removes isolated moves.

ZNCC ignores gain and offset differences between the cameras, so it runs on the 0-255
images as they come. Choices (radius 2, window 11, colour, 5 x 5 median, texture gate) were
made on 16 held-out synthetic scenes (``resources/models/README.md`` has the figures). The
joint colour correlation replaced the average of one per channel later: a 5-plane box filter
per shift instead of 9, the stage 25 % cheaper, with dense bad-2 (defaults) on Motorcycle
16.12 -> 16.22 %, 16 held-out layered scenes 16.59 -> 16.60 %, 16 held-out rooms 42.37 ->
42.18 % (``benchmarks/RESULTS.md``, fourteenth session).
Shapes: H x W x C images (the layout they arrive in), H x W disparity in pixels; any device.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True)
class SubpixelConfig:
    radius: int = 2  # px searched either side of the rounded readout
    window: int = 11  # correlation window (odd)
    median: int = 5  # median filter afterwards (odd; 1 = none)
    min_peak: float = 0.3  # ZNCC the best shift must reach
    min_std: float = 2.55  # left-patch standard deviation needed, in 0-255 grey levels
    reach: float = 3.0  # px the refined value may move from the readout
    # match grey levels instead of the three colours: a third of the work (the fast strategies
    # of the latency budget; the default keeps colour)
    grey: bool = False
    # colour: one ZNCC over the patch's three channels (each channel's window mean removed, so
    # an offset per channel, as a white-balance difference gives, still cancels), instead of
    # the average of one ZNCC per channel (False)
    joint: bool = True


DEFAULT_SUBPIXEL = SubpixelConfig()


def for_step(config: SubpixelConfig, step: float) -> SubpixelConfig:
    """The search widened to the sweep's plane step: a readout between planes ``step`` px apart
    can land several px off, so the shifts searched reach ``ceil(step / 3) + 2`` px either side
    (3, 4, 5, 6 px for steps of 3, 6, 9, 12; never fewer than ``config.radius``) and the answer
    may move one px more. Each shift costs time (``shift_count``), so the reach grows slower
    than the step.

    Measured (dense bad-2, ``--max-disparity auto``, default confidence): at the default 3 px
    step, radius 2 -> 3 gave Motorcycle 17.56 -> 16.64 %, 16 held-out layered scenes 16.06 ->
    16.10 %, 10 held-out rooms 48.11 -> 47.03 %. The budget's coarse sweeps gained most: 12 px,
    grey, radius 2 -> 4 -> 6: Motorcycle 27.5 -> 21.1 -> 20.1 %, 8 held-out layered scenes 25.1
    -> 22.4 -> 22.3 % (``benchmarks/RESULTS.md``, "Sub-pixel reach").
    """
    return with_radius(config, max(config.radius, math.ceil(step / 3) + 2))


def with_radius(config: SubpixelConfig, radius: int) -> SubpixelConfig:
    """``config`` searching ``radius`` px either side; the answer may move one px more (never
    less than ``config.reach``)."""
    return dataclasses.replace(config, radius=radius, reach=max(config.reach, radius + 1.0))


def stage_config(config: SubpixelConfig, kind: str, step: int, radius: int | None = None) -> SubpixelConfig:
    """The stage's settings after a sweep every ``step`` px: ``kind`` "grey" matches grey levels,
    anything else colour; ``radius`` None: the search widened to the step (``for_step``), else
    that many px either side (the answer may move one px more, and never less than ``reach``)."""
    config = dataclasses.replace(config, grey=kind == "grey")
    return for_step(config, step) if radius is None else with_radius(config, radius)


def shift_count(config: SubpixelConfig) -> int:
    """Shifts the stage correlates (its cost is proportional): ``2 * radius + 3``."""
    return 2 * config.radius + 3


def box_mean(x: Tensor, size: int) -> Tensor:
    """Mean over a size x size window of each channel of an H x W x C tensor, borders
    reflected (OpenCV's BORDER_REFLECT_101). On the CPU OpenCV's running sums over all
    channels at once (46 ms for 69 channels at 741 x 500 here, against 82-380 ms for the
    torch formulations measured); on other devices separable depthwise convolutions."""
    if x.device.type == "cpu":
        return torch.from_numpy(box_mean_array(x.numpy(), size).reshape(x.shape))
    return box_mean_torch(x, size)


def box_mean_array(x: np.ndarray, size: int, border: int = cv2.BORDER_REFLECT_101) -> np.ndarray:
    """``box_mean`` of a NumPy H x W (x C) array by OpenCV, borders reflected (``border``: an
    OpenCV border type, BORDER_REFLECT_101 unless told)."""
    return cv2.boxFilter(np.ascontiguousarray(x), -1, (size, size), borderType=border)


def box_mean_torch(x: Tensor, size: int) -> Tensor:
    """``box_mean`` by separable depthwise convolutions (any device)."""
    pad, c = size // 2, x.shape[-1]
    y = x.permute(2, 0, 1).unsqueeze(0)
    row = y.new_full((c, 1, 1, size), 1.0 / size)
    y = F.conv2d(F.pad(y, (pad, pad, 0, 0), mode="reflect"), row, groups=c)
    y = F.conv2d(F.pad(y, (0, 0, pad, pad), mode="reflect"), row.view(c, 1, size, 1), groups=c)
    return y[0].permute(1, 2, 0)


def median_filter(x: Tensor, size: int) -> Tensor:
    """size x size median of an H x W map, borders replicated."""
    if size <= 1:
        return x
    if x.device.type == "cpu" and size <= 5:  # OpenCV's float median takes 3 and 5
        return torch.from_numpy(cv2.medianBlur(np.ascontiguousarray(x.numpy()), size))
    return median_filter_torch(x, size)


def median_filter_torch(x: Tensor, size: int) -> Tensor:
    """``median_filter`` by unfolding the windows (any device, any odd size)."""
    h, w = x.shape
    pad = size // 2
    patches = F.unfold(F.pad(x.view(1, 1, h, w), (pad, pad, pad, pad), mode="replicate"), size)
    return patches.median(dim=1).values.view(h, w)


GREY = (0.299, 0.587, 0.114)  # ITU-R BT.601 luma weights of R, G, B


def to_grey(image: Tensor) -> Tensor:
    """H x W x 3 RGB -> H x W x 1 float32 luma, also under an engine's bf16/fp16 autocast (which
    would run the product in bf16: the matching stages then got bf16 grey levels)."""
    weights = torch.tensor(GREY, device=image.device, dtype=torch.float32)
    with torch.autocast(image.device.type, enabled=False):
        return (image.float() @ weights).unsqueeze(-1)


BAND_BYTES = 64 << 20  # working buffers per band of rows


def refine_subpixel(
    left: Tensor,
    right: Tensor,
    disparity: Tensor,
    config: SubpixelConfig | None = None,
    band_rows: int | None = None,
) -> Tensor:
    """H x W x C 0-255 images, H x W disparity (px) -> refined H x W disparity.

    Works in bands of rows (``band_rows``; by default as many as fit ``BAND_BYTES`` of
    buffers) with enough overlap that the result is the same as in one piece: a 4K frame
    would otherwise need gigabytes.
    """
    cfg = config or DEFAULT_SUBPIXEL
    if cfg.grey:
        left, right = to_grey(left), to_grey(right)
    h, w, c = left.shape
    n = shift_count(cfg)
    if band_rows is None:
        band_rows = max(32, BAND_BYTES // (4 * w * (8 * c + n + 8)))
    halo = cfg.window // 2 + cfg.median // 2  # rows a band's edge influences
    out = []
    # fp32 throughout: under an engine's fp16/bf16 autocast the convolutions of the box means
    # would lose the variances (a difference of two large, nearly equal sums)
    with torch.autocast(left.device.type, enabled=False):
        for top in range(0, h, band_rows):
            bottom = min(h, top + band_rows)
            lo, hi = max(0, top - halo), min(h, bottom + halo)
            band = _refine(left[lo:hi].float(), right[lo:hi].float(), disparity[lo:hi].float(), cfg)
            out.append(band[top - lo : top - lo + bottom - top])
    return out[0] if len(out) == 1 else torch.cat(out, 0)


def box_mean_planes(x: Tensor, size: int) -> Tensor:
    """Mean over a size x size window of each plane of a K x H x W tensor, borders reflected
    (BORDER_REFLECT_101). On the CPU OpenCV's running sums plane by plane into one output
    buffer (5 ms for 9 planes at 480 x 640 here); elsewhere separable depthwise convolutions."""
    if x.device.type != "cpu":
        return box_mean_torch(x.permute(1, 2, 0), size).permute(2, 0, 1)
    src = x.contiguous().numpy()
    out = np.empty_like(src)
    for plane, dst in zip(src, out, strict=True):
        cv2.boxFilter(plane, -1, (size, size), dst=dst, borderType=cv2.BORDER_REFLECT_101)
    return torch.from_numpy(out)


def _first_max(x: Tensor, start: int, stop: int) -> Tensor:
    """Index (int64, H x W) of the first largest of ``x[start:stop]`` along dim 0: the same as
    ``argmax`` but a loop of element-wise passes (``argmax`` over the leading dimension of a
    7 x 370k slice took 79 ms on the CPU, this loop a few)."""
    best = x[start].clone()
    index = torch.full(best.shape, start, dtype=torch.int64, device=x.device)
    better = torch.empty(best.shape, dtype=torch.bool, device=x.device)
    for k in range(start + 1, stop):
        torch.gt(x[k], best, out=better)
        torch.maximum(best, x[k], out=best)
        index.masked_fill_(better, k)
    return index


def _channel_mean(x: Tensor, out: Tensor) -> None:
    """``torch.mean(x, 0, out=out)`` of a C x H x W tensor; one channel by a copy (the reduction
    over a leading dimension of 1 took 1 ms at Motorcycle's size, the copy 0.1 ms)."""
    if x.shape[0] == 1:
        out.copy_(x[0])
    else:
        torch.mean(x, 0, out=out)


def _refine(left: Tensor, right: Tensor, disparity: Tensor, cfg: SubpixelConfig) -> Tensor:
    """One band. Colour planes first (C x H x W) and one shift at a time, so that every
    buffer is small and contiguous: the H x W x (2 + 3n)C layout of all shifts at once took
    220 ms at 480 x 640 on the 2-core CPU, mostly strided passes and fresh pages; this 70-110 ms."""
    h, w, c = left.shape
    n = shift_count(cfg)  # shifts k = -radius - 1 .. radius + 1
    lp, rp = left.permute(2, 0, 1).contiguous(), right.permute(2, 0, 1).contiguous()
    base = disparity.round()
    if cfg.joint and c > 1:
        return _refine_joint(lp, rp, disparity, base, cfg)
    stats = torch.empty(2 * c, h, w, device=left.device)
    stats[:c] = lp
    torch.mul(lp, lp, out=stats[c:])
    stats = box_mean_planes(stats, cfg.window)
    mu_l, var_l = stats[:c], stats[c:]
    var_l.addcmul_(mu_l, mu_l, value=-1).clamp_min_(1e-6)
    zncc = torch.empty(n, h, w, device=left.device)
    moved = torch.empty(3 * c, h, w, device=left.device)  # right, right^2, left * right
    for j, outside, strip in _shifted_reads(rp, base, cfg, moved[:c]):
        torch.mul(moved[:c], moved[:c], out=moved[c : 2 * c])
        torch.mul(moved[:c], lp, out=moved[2 * c :])
        box = box_mean_planes(moved, cfg.window)
        mu_r, var_r, cov = box[:c], box[c : 2 * c], box[2 * c :]
        var_r.addcmul_(mu_r, mu_r, value=-1).clamp_min_(1e-6)
        cov.addcmul_(mu_r, mu_l, value=-1)
        cov.mul_(var_r.mul_(var_l).rsqrt_())
        _channel_mean(cov, out=zncc[j])
        zncc[j, :, :strip].masked_fill_(outside, -1.0)
    return _vertex(zncc, base, disparity, var_l.mean(0), cfg)


def _refine_joint(lp: Tensor, rp: Tensor, disparity: Tensor, base: Tensor, cfg: SubpixelConfig) -> Tensor:
    """``_refine`` with one correlation over the colour patch: C x H x W planes, ``base`` the
    rounded readout."""
    c, h, w = lp.shape
    n = shift_count(cfg)
    stats = torch.empty(c + 1, h, w, device=lp.device)
    stats[:c] = lp
    _channel_dot(lp, lp, out=stats[c])
    stats = box_mean_planes(stats, cfg.window)
    mu_l, var_l = stats[:c], stats[c]
    for k in range(c):  # the variance summed over the channels
        var_l.addcmul_(mu_l[k], mu_l[k], value=-1)
    var_l.clamp_min_(1e-6)
    zncc = torch.empty(n, h, w, device=lp.device)
    moved = torch.empty(c + 2, h, w, device=lp.device)  # right, sum right^2, sum left * right
    for j, outside, strip in _shifted_reads(rp, base, cfg, moved[:c]):
        _channel_dot(moved[:c], moved[:c], out=moved[c])
        _channel_dot(moved[:c], lp, out=moved[c + 1])
        box = box_mean_planes(moved, cfg.window)
        mu_r, var_r, cov = box[:c], box[c], box[c + 1]
        for k in range(c):  # minus the means' products, channel by channel (no C x H x W temporaries)
            var_r.addcmul_(mu_r[k], mu_r[k], value=-1)
            cov.addcmul_(mu_r[k], mu_l[k], value=-1)
        torch.mul(cov, var_r.clamp_min_(1e-6).mul_(var_l).rsqrt_(), out=zncc[j])
        zncc[j, :, :strip].masked_fill_(outside, -1.0)
    return _vertex(zncc, base, disparity, var_l / c, cfg)


def _shifted_reads(
    rp: Tensor, base: Tensor, cfg: SubpixelConfig, out: Tensor
) -> Iterator[tuple[int, Tensor, int]]:
    """For each shift ``j`` (k = j - radius - 1): the C x H x W right image read into ``out`` at
    each pixel's own readout ``base`` + k (every neighbour in a window at its own readout), then
    ``j``, the reads left of the image in the first ``strip`` columns (H x strip) and ``strip``."""
    c, h, w = rp.shape
    cols = torch.arange(w, device=rp.device, dtype=torch.float32).view(1, w)
    start = cols - base  # the right column each pixel's readout reads
    # a read left of the image happens only in the columns left of the largest readout + k
    strip = min(w, max(0, int(base.max()) + cfg.radius + 2))
    for j in range(shift_count(cfg)):
        source = start - float(j - cfg.radius - 1)
        outside = source[:, :strip] < 0
        torch.gather(rp, 2, source.clamp_(0, w - 1).long().expand(c, h, w), out=out)
        yield j, outside, strip


def _channel_dot(a: Tensor, b: Tensor, out: Tensor) -> None:
    """``out = (a * b).sum(0)`` of C x H x W tensors, channel by channel into ``out`` (H x W)."""
    torch.mul(a[0], b[0], out=out)
    for k in range(1, a.shape[0]):
        out.addcmul_(a[k], b[k])


def _vertex(zncc: Tensor, base: Tensor, disparity: Tensor, var_l: Tensor, cfg: SubpixelConfig) -> Tensor:
    """The n x H x W correlations at shifts ``base + k`` -> the refined H x W disparity where the
    left patch has texture (``var_l``, its variance per channel), the peak is clear and the move
    stays within reach; median filtered."""
    n = zncc.shape[0]
    best = _first_max(zncc, 1, n - 1).unsqueeze(0)  # in [1, n - 2]: both neighbours exist
    peak = zncc.gather(0, best)
    before, after = zncc.gather(0, best - 1), zncc.gather(0, best + 1)
    curvature = before - 2 * peak + after
    vertex = torch.where(
        curvature < -1e-6, 0.5 * (before - after) / curvature.clamp(max=-1e-6), torch.zeros_like(peak)
    )
    refined = (base.unsqueeze(0) + (best - cfg.radius - 1).float() + vertex.clamp(-0.5, 0.5))[0]
    texture = var_l.sqrt() > cfg.min_std
    keep = texture & (peak[0] > cfg.min_peak) & ((refined - disparity).abs() <= cfg.reach)
    out = median_filter(torch.where(keep, refined, disparity), cfg.median)
    return torch.where((out - disparity).abs() <= cfg.reach, out, disparity)
