"""Turning plane logits into probabilities and disparity (torch, any device).

Shapes: P planes, H x W padded image. Logits are of P(disparity > plane).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass
class DenseReadout:
    """Result of integrating a plane grid at 1-px spacing."""

    normalized: Tensor  # 1 x 1 x H x W: mean probability over the dense planes
    dense_count: int  # number of 1-px planes integrated: last - first + 1
    probes: dict[int, Tensor]  # dense index -> H x W probability at that plane


def monotone_logits(logits: Tensor) -> Tensor:
    """Make logits non-increasing along planes (dim 1).

    Networks that see one plane at a time can produce curves that fall and rise again;
    the symmetric running bounds (minimum from the near end, maximum from the far end)
    average to a non-increasing curve without biasing either end.
    """
    # A loop over planes of element-wise minima and maxima: torch.cummin / cummax along a
    # non-last dimension took 0.9 s for 33 planes at 576 x 768 on a 2-core CPU, this 20 ms.
    planes = logits.unbind(1)
    near = [planes[0]]
    for plane in planes[1:]:
        near.append(torch.minimum(near[-1], plane))
    far = [planes[-1]]
    for plane in reversed(planes[:-1]):
        far.append(torch.maximum(far[-1], plane))
    return 0.5 * (torch.stack(near, 1) + torch.stack(far[::-1], 1))


def integrate_planes(logits: Tensor, step: int, probe_indices: tuple[int, ...] = ()) -> DenseReadout:
    """Area under the probability curve of 1 x P x H x W full-resolution logits.

    Planes ``i`` sit at dense index ``i * step``; logits between planes are interpolated
    linearly (as the published decoders do), passed through the sigmoid and averaged.
    Works one dense plane at a time so memory stays at P x H x W.
    """
    p = logits.shape[1]
    count = (p - 1) * step + 1
    total = torch.zeros_like(logits[:, :1], dtype=torch.float32)
    probes: dict[int, Tensor] = {}
    # a probe outside the grid reads the nearest end plane
    wanted = {i: min(max(i, 0), count - 1) for i in probe_indices}
    for j in range(count):
        i0, rem = divmod(j, step)
        if rem == 0:
            plane = logits[:, i0 : i0 + 1].float()
        else:
            t = rem / step
            plane = (1 - t) * logits[:, i0 : i0 + 1].float() + t * logits[:, i0 + 1 : i0 + 2].float()
        prob = torch.sigmoid(plane)
        total += prob
        for i, at in wanted.items():
            if at == j:
                probes[i] = prob[0, 0]
    return DenseReadout(total / count, count, probes)


def normalized_to_disparity(normalized: Tensor, first: int, last: int) -> Tensor:
    """Published conversion: clamp(n * (last - first + 1) + first - 0.5, first - 0.5, last + 0.5)."""
    span = last - first + 1
    return torch.clamp(normalized * span + first - 0.5, first - 0.5, last + 0.5)


COST_WINDOW = 8  # planes either side of the step that its rating (StepFit.cost) counts


@dataclass
class StepFit:
    """The best step of a probability curve: where it goes from "closer" to "farther"."""

    disparity: Tensor  # 1 x 1 x H x W px: the 0.5 crossing at the step
    cost: Tensor  # 1 x 1 x H x W: disagreement with the step within COST_WINDOW planes of it (0: clean)
    above: Tensor  # 1 x 1 x H x W int64: planes judged closer (the step's index)


def step_fit(logits: Tensor, planes: Tensor, probs: Tensor | None = None) -> StepFit:
    """Fit each pixel's curve P(d > plane) with the step that disagrees with it least.

    logits 1 x P x H x W of any shape of curve (not made monotone), planes (P,) px ascending;
    ``probs``: their sigmoid when the caller has it already. The step after the first ``k``
    planes costs ``sum_{i<k} (1 - p_i) + sum_{i>=k} p_i``; the best ``k`` is read out at the
    curve's 0.5 crossing between planes ``k - 1`` and ``k``.

    A run of false "closer" answers on planes far beyond the scene (the light model gives
    them on real images: 15 % of Motorcycle's pixels moved by more than 10 px at a 192-px
    sweep when the curve was made monotone first) costs less to ignore than to follow, as
    long as it is shorter than the true "closer" run, so the answer no longer depends on
    how far the sweep goes.

    With the prefix sums ``C_k = sum_{i<k} p_i`` the cost is ``C_P + k - 2 C_k``: the best
    step maximises ``C_k - k / 2`` (of equal fits the farther, smaller ``k`` wins), and its
    rating within ``COST_WINDOW`` planes is three reads of ``C``. One pass over the planes of
    a few element-wise operations each (a whole-volume cumsum along the planes took 3x as
    long on the CPU); memory: the P + 1 prefix planes.
    """
    if probs is None:
        probs = torch.sigmoid(logits.float())
    n, p, h, w = probs.shape
    prefix = probs.new_empty(n, p + 1, h, w)
    prefix[:, 0].zero_()
    gain = torch.zeros_like(prefix[:, 0])  # best C_k - k / 2 so far (k = 0: 0)
    value = torch.empty_like(gain)
    better = torch.empty(gain.shape, dtype=torch.bool, device=gain.device)
    above = torch.zeros(gain.shape, dtype=torch.int64, device=gain.device)
    for i in range(p):
        torch.add(prefix[:, i], probs[:, i], out=prefix[:, i + 1])
        torch.sub(prefix[:, i + 1], (i + 1) / 2, out=value)
        torch.gt(value, gain, out=better)  # strictly: of equal fits the farther step wins
        torch.maximum(gain, value, out=gain)
        above.masked_fill_(better, i + 1)
    above = above.unsqueeze(1)
    # the rating counts the planes near the step only: a curve's far end (false "closer" runs
    # many planes beyond the scene) would otherwise rate the same answer by the sweep's reach
    start = (above - COST_WINDOW).clamp(min=0)
    stop = (above + COST_WINDOW + 1).clamp(max=p)
    at_start, at_step, at_stop = prefix.gather(1, start), prefix.gather(1, above), prefix.gather(1, stop)
    # (1 - p) summed over the planes in the window before the step, p over those from it on
    cost = (above - start).to(probs.dtype) - (at_step - at_start) + (at_stop - at_step)
    return StepFit(_crossing(probs, above, planes), cost, above)


def _crossing(probs: Tensor, k: Tensor, planes: Tensor) -> Tensor:
    """The 0.5 crossing between planes ``k - 1`` and ``k`` (1 x 1 x H x W indices in [0, P]);
    ``k = 0`` reads the first plane - half a step, ``k = P`` the last + half a step."""
    p = probs.shape[1]
    k1 = k.clamp(max=p - 1)
    k0 = (k - 1).clamp(min=0)
    p_hi, p_lo = probs.gather(1, k0), probs.gather(1, k1)
    d = planes.to(probs)
    d_hi, d_lo = d[k0], d[k1]
    t = ((p_hi - 0.5) / (p_hi - p_lo).clamp(min=1e-6)).clamp(0, 1)
    out = d_hi + t * (d_lo - d_hi)
    step = float(d[1] - d[0]) if p > 1 else 1.0
    out = torch.where(k == 0, d[0] - step / 2, out)
    return torch.where(k >= p, d[-1] + step / 2, out)


def feats_guide(feats: Any) -> Tensor | None:
    """A frame's upsampling weights (the light model's ``Features.guide``, or the ``guide`` output
    of an exported feature stage: ``runtimes.staged.GraphFeatures``), or None."""
    guide = getattr(feats, "guide", None)
    if guide is None:
        guide = getattr(feats, "tensors", {}).get("guide")
    return guide


def upsampled(x: Tensor, size: tuple[int, int]) -> Tensor:
    """B x C x h x w -> B x C x H x W bilinearly (half-pixel centres, as the models upsample)."""
    return F.interpolate(x, size, mode="bilinear", align_corners=False)


def upsampled_probabilities(curves: Tensor, size: tuple[int, int], top: int, left: int) -> np.ndarray:
    """1 x P x h x w probabilities on a model's grid -> the P x (H - top) x (W - left) record of the
    padded H x W image's crop, bilinearly (as ``upsampled``), one contiguous float32 array.

    On the CPU plane by plane through OpenCV into the record (65 planes at 480 x 640: 50 ms,
    against 105 for torch's interpolation of the volume and the copy of its crop); the same
    values to 1e-5."""
    p = curves.shape[1]
    h, w = size
    if curves.device.type != "cpu":
        return host_array(upsampled(curves.float(), size)[0, :, top:, left:])
    src = curves[0].float().contiguous().numpy()
    out = np.empty((p, h - top, w - left), np.float32)
    scratch = np.empty((h, w), np.float32)
    for k in range(p):
        cv2.resize(src[k], (w, h), dst=scratch, interpolation=cv2.INTER_LINEAR)
        out[k] = scratch[top:, left:]
    return out


@dataclass(frozen=True)
class DeferredRecord:
    """The probability record of a continuous answer, made when read (``DepthResult.
    defer_probabilities``): 1 x P x h x w probabilities on the network's grid, bilinearly to the
    P x (H - top) x (W - left) crop of the padded H x W image (``upsampled_probabilities``), or,
    where the grid is the padded image itself, its crop. Keeps the grid (9 MB for 65 planes at
    480 x 640), not the 80 MB record."""

    curves: Tensor
    size: tuple[int, int]
    top: int
    left: int

    def record(self) -> np.ndarray:
        return self._planes(self.curves)

    def plane(self, k: int) -> np.ndarray:
        k %= self.curves.shape[1]
        return self._planes(self.curves[:, k : k + 1])[0]

    def finite(self) -> bool:
        """Whether every probability is a number (a sum finds a NaN)."""
        return bool(torch.isfinite(self.curves.sum()))

    def _planes(self, curves: Tensor) -> np.ndarray:
        if tuple(curves.shape[-2:]) == self.size:
            return host_array(curves[0, :, self.top :, self.left :])
        return upsampled_probabilities(curves, self.size, self.top, self.left)


def host_array(t: Tensor) -> np.ndarray:
    """A tensor's values as a contiguous NumPy array. From a GPU through page-locked host memory
    (torch's caching host allocator reuses the blocks of dropped results): on the H200 of
    2026-12-04 a continuous frame's probability record (65 x 576 x 960 float32, 144 MB) took
    113 ms to copy into pageable memory, most of the frame; through page-locked memory the
    readout stage took 10.8 ms and the frame 54 ms instead of 172 (``benchmarks/RESULTS.md``).
    Where page-locked memory cannot be had, the plain copy."""
    if t.device.type == "cpu":
        return t.contiguous().numpy()
    try:
        host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    except RuntimeError:  # no page-locked memory to be had: pageable, as before
        return t.cpu().numpy()
    host.copy_(t)  # synchronous: the values are there when this returns
    return host.numpy()


EDGE_SPREAD = 2  # planes: a 2 x 2 block of grid steps this far apart is read at full resolution


def upsampled_step_fit(
    logits: Tensor, planes: Tensor, probs: Tensor, size: tuple[int, int], spread: int = EDGE_SPREAD
) -> tuple[Tensor, Tensor]:
    """``step_fit`` of 1 x P x h x w grid logits (``probs`` their sigmoid) read out at the H x W
    image ``size`` -> its 1 x 1 x H x W disparity and cost, as if the curves had been upsampled
    bilinearly first, without upsampling the volume (65 planes at 480 x 640: 80 MB).

    Where the 2 x 2 grid pixels that an image pixel blends step at planes closer together than
    ``spread``, the curves are alike and the blend of their answers stands for the answer of
    their blend: the grid's answer and rating are upsampled. Elsewhere (depth edges: blending
    answers there would give a value between the two sides) the pixel's own curve is
    interpolated from its four grid pixels, as torch's bilinear upsampling weights them, and
    fitted."""
    fit = step_fit(logits, planes, probs)
    h, w = logits.shape[-2:]
    out = upsampled(torch.cat([fit.disparity, fit.cost], 1), size)
    k = fit.above[0, 0]
    pk = F.pad(k[None, None].float(), (0, 1, 0, 1), mode="replicate")[0, 0]
    blocks = torch.stack([pk[:h, :w], pk[:h, 1:], pk[1:, :w], pk[1:, 1:]])
    wide = (blocks.amax(0) - blocks.amin(0)) >= spread  # h x w: the block starting here
    ys, y1, fy = _bilinear_taps(size[0], h, logits.device)
    xs, x1, fx = _bilinear_taps(size[1], w, logits.device)
    edge = wide[ys][:, xs]  # H x W
    flat = torch.nonzero(edge.view(-1)).squeeze(1)
    if flat.numel() == 0:
        return out[:, :1], out[:, 1:]
    py, px = flat // size[1], flat % size[1]
    # (h w) x P: a grid pixel's curve is one row (columns of a P x (h w) table read 10x slower)
    table = logits[0].reshape(logits.shape[1], -1).t().contiguous()
    a, b = ys[py] * w, y1[py] * w
    c, d = xs[px], x1[px]
    wy, wx = fy[py, None], fx[px, None]
    top = torch.lerp(table.index_select(0, a + c), table.index_select(0, a + d), wx)
    bottom = torch.lerp(table.index_select(0, b + c), table.index_select(0, b + d), wx)
    curve = torch.lerp(top, bottom, wy).t().contiguous()[None, :, None]  # 1 x P x 1 x E
    own = step_fit(curve, planes)
    flat_out = out.view(1, 2, -1)
    flat_out[0, 0, flat] = own.disparity.view(-1)
    flat_out[0, 1, flat] = own.cost.view(-1)
    return out[:, :1], out[:, 1:]


def _bilinear_taps(size: int, grid: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """For each of ``size`` output positions upsampled from ``grid`` (half-pixel centres, as
    ``upsampled``): the lower and upper grid index and the upper one's weight."""
    scale = grid / size
    src = ((torch.arange(size, device=device, dtype=torch.float32) + 0.5) * scale - 0.5).clamp(min=0)
    lo = src.floor().long().clamp(max=grid - 1)
    hi = (lo + 1).clamp(max=grid - 1)
    return lo, hi, src - lo.float()
