"""The Bi3D engine's continuous answer by the coarse-to-fine search (``depth.search``).

A coarse plane sweep (the engine's ordinary sweep, at ``coarse_step`` px) and per-pixel
bisection passes give a disparity on the network's low-resolution grid; ``curve_upsample``
takes it to the model's 1/3 grid with the model's own edge-aware weights, bilinear
interpolation to the image, and the sub-pixel matching stage follows as after the full sweep.
``probabilities`` are the network's at the coarse planes, which are the result's ``planes``.

Available where the model has a per-pixel plane pass (the light model) and the runtime answers
it (torch); elsewhere the engine keeps the full sweep and says why. Each pixel is bracketed at
its coarse curve's best step (``search.fitted_bracket``), its final answer upsampled as the
full sweep reads its upsampled curves (``curve_upsample``), then matched (sub-pixel stage) and
checked (occlusion fill, confidence) as after the full sweep.

Not the default (``--search coarse-to-fine``, or the latency budget's ladder): a SegNet trained
on uniform planes only answers the search's scene-following plane maps unlike its own sweep
(on 4 held-out scenes 25 % of the last pass's decisions differ from the sweep's at the same
planes), and even with the bundled model's per-pixel SegNet (``LightBi3D.pixel_segnet``, trained
for them: ``training.pixel_pass``; 20 % differ) the search is 3.9 points of dense bad-2 behind
the full sweep on the demo pair and 2.7 on 16 held-out synthetic scenes (19.87 / 18.61 %
against 15.99 / 15.95 %). Reading the full sweep's own logits at the search's planes gives
16.54 % on the demo pair: the gap is the per-pixel pass's (benchmarks/RESULTS.md, tenth session).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from app.engine.bi3d.padding import Padder
from app.engine.depth.agreement import agree
from app.engine.depth.border import leave_unknown
from app.engine.depth.decoding import PLANE_STEP_PX, continuous_range, dense_span
from app.engine.depth.readout import DeferredRecord
from app.engine.depth.search import Bracket, coarse_planes, passes_needed, search
from app.engine.depth.subpixel import SubpixelConfig, refine_subpixel, stage_config
from app.engine.errors import Interrupted
from app.engine.types import SEARCHES, DepthRequest, DepthResult, Mode

__all__ = ["SEARCHES"]
DEFAULT_COARSE_STEP = 24  # px between coarse planes: 9 planes over 0-192 px, then 3 passes
# the logit at which a neighbour's modelled curve saturates in ``curve_upsample``: on the demo pair
# and 8 held-out synthetic scenes (the search read from the full sweep's own logits) 0.75-1.5 did
# best (synthetic 18.46 %), 3 gave 18.55 %, 6 18.72 %, 12 19.04 %; upsampling the crossings
# themselves 19.95 % (benchmarks/RESULTS.md, tenth session)
SATURATION = 1.5


def curve_upsample(
    low: Tensor, br: Bracket, guide: Tensor, saturation: float = SATURATION, iters: int = 12
) -> Tensor:
    """The search's h x w answer -> 2h x 2w, as the full sweep reads its upsampled curves.

    The full sweep upsamples every plane's logits (each output pixel a convex combination of
    its 3 x 3 coarse neighbours, with the model's weights: ``light.convex_upsample``) and reads
    the crossing of that combined curve, so at an edge the answer follows the neighbours that
    dominate it. Upsampling the crossings blends the two sides instead (on held-out scenes 1.5
    points more bad-2). The search knows each pixel's curve only near its crossing ``c``, by its
    slope ``s`` there (logits per px, from its bracket); modelled as clamp(s (c - d), -M, M),
    the combined curve's crossing is found by bisection between the neighbours' crossings.
    ``guide``: the model's upsampling weights 1 x 9*4 x h x w (before the softmax)."""
    h, w = low.shape
    slope = ((br.lo_logit - br.hi_logit) / (br.hi - br.lo).clamp_min(1e-3)).clamp(min=1e-2)
    weights = torch.softmax(guide.float().view(1, 9, 4, h, w), dim=1)[0]  # 9 x 4 x h x w
    pc = F.pad(low[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
    ps = F.pad(slope[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
    cs, ss = [], []
    for k in range(9):
        dy, dx = divmod(k, 3)
        cs.append(pc[dy : dy + h, dx : dx + w])
        ss.append(ps[dy : dy + h, dx : dx + w])
    c = torch.stack(cs)[:, None]  # 9 x 1 x h x w
    sl = torch.stack(ss)[:, None]
    lo = c.amin(0, keepdim=True).expand(1, 4, h, w).clone()
    hi = c.amax(0, keepdim=True).expand(1, 4, h, w).clone()
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        f = (weights * (sl * (c - mid)).clamp(-saturation, saturation)).sum(0, keepdim=True)
        up = f >= 0
        lo = torch.where(up, mid, lo)
        hi = torch.where(up, hi, mid)
    out = (0.5 * (lo + hi))[0]  # 4 x h x w
    return out.view(2, 2, h, w).permute(2, 0, 3, 1).reshape(2 * h, 2 * w)


@dataclass(frozen=True)
class Strategy:
    """One way to answer continuous depth: ``coarse_step`` 0 is the full sweep every ``step`` px."""

    coarse_step: int = DEFAULT_COARSE_STEP
    subpixel: str = "colour"  # the matching stage after it: "colour", "grey" or "off"
    step: int = PLANE_STEP_PX
    # that stage's search: None widened to the plane step (subpixel.for_step), else this many px
    radius: int | None = None

    @property
    def passes(self) -> int:
        return passes_needed(self.coarse_step) if self.coarse_step else 0


@dataclass
class SearchPlan:
    planes: np.ndarray  # the coarse planes (px)
    span: tuple[int, int]
    strategy: Strategy
    notes: list[str] = field(default_factory=list)


class SearchEngine(Protocol):
    """What the search needs of the Bi3D engine."""

    backend: Any
    subpixel: SubpixelConfig | None
    agreement: Any
    interrupt: Any

    def _timed(self, timings: dict[str, float], stage: str) -> AbstractContextManager[None]: ...

    def _result(
        self,
        request: DepthRequest,
        disparity: np.ndarray,
        probs: np.ndarray | DeferredRecord,
        planes: np.ndarray,
        **extra: np.ndarray | None,
    ) -> DepthResult: ...


def pixel_sweep(backend: Any, feats: Any) -> Callable[[Tensor, Tensor | None], Tensor] | None:
    """The runtime's per-pixel plane pass for this frame, or None where it has none."""
    current = getattr(backend, "current", backend)
    make = getattr(current, "pixel_sweep", None)
    return None if make is None else make(feats)


def can_search(model: Any, backend: Any) -> str:
    """Why the coarse-to-fine search cannot run here, or "" when it can."""
    if not hasattr(model, "pixel_sweep"):
        return "this model has no per-pixel plane pass (only the light model has)"
    current = getattr(backend, "current", backend)
    if not hasattr(current, "pixel_sweep"):
        return f"runtime {current.name} has no per-pixel plane pass (torch has)"
    return ""


def search_plan(request: DepthRequest, strategy: Strategy, top: int) -> SearchPlan:
    """The coarse planes of a continuous request's range for ``strategy``."""
    planes, span = span_planes(continuous_range(request), strategy, top)
    return SearchPlan(planes, span, strategy)


def span_planes(
    span: tuple[float, float], strategy: Strategy, top: int
) -> tuple[np.ndarray, tuple[int, int]]:
    """The coarse planes (px) of the search over the disparity ``span`` (``top``: the model's
    max), and the grid span they cover."""
    first, last = dense_span(span[0], span[1], PLANE_STEP_PX, top)
    return coarse_planes(first, last, strategy.coarse_step), (first, last)


def match_and_rate(
    engine: SearchEngine,
    images: tuple[np.ndarray, np.ndarray],
    disp: Tensor,
    stage: tuple[str, int, int | None],
    cost: Tensor | None,
    timings: dict[str, float],
) -> tuple[Tensor, np.ndarray | None]:
    """After a continuous readout (the full sweep's or the search's), H x W px: the sub-pixel
    matching stage (``stage``: its kind "colour", "grey" or "off", the plane step and search
    radius it follows) where the engine has one, then the occlusion fill and confidence
    (``agreement.agree``) where the engine has them and ``cost`` (the curve's disagreement with
    its step, H x W in grid planes) is known. -> the answer and its confidence (None: not rated)."""
    left, right = (torch.from_numpy(im).to(disp.device) for im in images)
    kind, step, radius = stage
    if engine.subpixel is not None and kind != "off":
        config = stage_config(engine.subpixel, kind, step, radius)
        with engine._timed(timings, "subpixel"):
            disp = refine_subpixel(left, right, disp, config)
    if engine.agreement is None or cost is None:
        return disp, None
    with engine._timed(timings, "agreement"):
        agreed = agree(left, right, disp, cost, engine.agreement)
        return agreed.disparity, agreed.confidence.cpu().numpy()


def searched_result(
    engine: SearchEngine,
    request: DepthRequest,
    planes: np.ndarray,
    strategy: Strategy,
    feats: Any,
    lowres: Tensor,
    padder: Padder,
    timings: dict[str, float],
    images: tuple[np.ndarray, np.ndarray],
) -> DepthResult:
    """Coarse logits 1 x P x h' x w' at ``planes`` -> the continuous ``DepthResult``."""
    assert request.mode is Mode.CONTINUOUS
    sweep = pixel_sweep(engine.backend, feats)
    assert sweep is not None  # checked when planning (can_search)

    def run(plane_map: Tensor, prior: Tensor) -> Tensor:
        if engine.interrupt is not None and engine.interrupt.is_set():
            raise Interrupted("depth computation stopped")
        return sweep(plane_map, prior)

    with engine._timed(timings, "search"):
        low, br = search(lowres, planes, run, strategy.passes)
    with engine._timed(timings, "refine"):
        third = curve_upsample(low, br, feats.guide)  # the model's grid (1/3), then bilinearly
        full = F.interpolate(third[None, None], padder.padded_size, mode="bilinear", align_corners=False)
        disp = padder.crop(full)[0, 0]
        # the coarse planes' probabilities, bilinearly when read: a record, not the answer (10 ms,
        # where the edge-aware upsampling of 9 planes took 45)
        probs = DeferredRecord(torch.sigmoid(lowres.float()), padder.padded_size, padder.top, padder.left)
    cost = None
    if engine.agreement is not None and br.cost is not None:
        # the coarse curve's disagreement with its step, in coarse planes, counted as the grid
        # planes they stand for
        scaled = (br.cost * (strategy.coarse_step / PLANE_STEP_PX))[None, None]
        cost = padder.crop(F.interpolate(scaled, padder.padded_size, mode="bilinear"))[0, 0]
    stage = (strategy.subpixel, strategy.step, strategy.radius)
    disp, confidence = match_and_rate(engine, images, disp, stage, cost, timings)
    with engine._timed(timings, "readout"):
        disparity = disp.cpu().numpy().astype(np.float32)
    unmasked = None if confidence is None else leave_unknown(disparity, confidence, request.min_confidence)
    return engine._result(request, disparity, probs, planes, confidence=confidence, unmasked=unmasked)
