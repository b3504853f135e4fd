"""The latency budget's choice for continuous depth: strategies, not only plane counts.

A strategy is a plane step of the full sweep (3, 6, 9 or 12 px) or the coarse-to-fine search
(``depth.search``, where the model carries per-pixel weights) and a sub-pixel stage
(colour, grey or none), listed most accurate first (``LADDER``, ordered by the measurements
in benchmarks/RESULTS.md, "Latency budget"). The budget takes the first whose predicted time
(``budget.CostModel``, measured on this device and frame size) fits. A sweep coarser than
12 px is not offered as depth: below the cheapest strategy the engine answers the quantized
mode with as many planes as fit, and says so; below one plane it is a ``UserError`` naming
the minimum.

Shapes: none (plans only).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import torch

from app.engine.depth.budget import CostModel, grid_planes
from app.engine.depth.searched import Strategy, span_planes
from app.engine.depth.subpixel import (
    DEFAULT_SUBPIXEL,
    SubpixelConfig,
    refine_subpixel,
    shift_count,
    stage_config,
)
from app.engine.errors import BudgetTooLow, setting

# most accurate first; every step is a multiple of the 3 px feature column
LADDER: tuple[Strategy, ...] = (
    Strategy(coarse_step=0, step=3, subpixel="colour"),
    Strategy(coarse_step=0, step=3, subpixel="grey"),
    Strategy(coarse_step=0, step=6, subpixel="colour"),
    Strategy(coarse_step=0, step=6, subpixel="grey"),
    Strategy(coarse_step=0, step=9, subpixel="grey"),
    # the 9 px sweep with a +-3 px search instead of +-5: 4 shifts fewer, and more accurate than
    # every 12 px strategy (``--max-disparity auto``: Motorcycle 18.54 % against 17.43 % at +-5 and
    # 20.14 % at 12 px +-6; 16 held-out layered scenes 19.71 %, 20.11 %, 20.60 %)
    Strategy(coarse_step=0, step=9, subpixel="grey", radius=3),
    Strategy(coarse_step=0, step=12, subpixel="grey"),
    # the coarse-to-fine search (9 planes and 3 per-pixel passes over 0-192 px, where a 12 px sweep
    # takes 17 planes), offered only where the model carries per-pixel weights and the runtime runs
    # them (``ladder``): less accurate than the 12 px sweep on the demo pair, more on held-out scenes
    # (``--max-disparity auto``: Motorcycle 19.87 / 20.04 % colour / grey against 19.20 %, 8 layered
    # scenes 20.45 / 21.02 % against 21.74 %), ahead of the cheapest sweep on both
    Strategy(coarse_step=24, subpixel="colour"),
    Strategy(coarse_step=24, subpixel="grey"),
    # the cheapest: the sub-pixel search at its own +-2 px, not widened to the 12 px step
    # (Motorcycle 27.5 % against 20.1 % widened, about 60 ms less at its size)
    Strategy(coarse_step=0, step=12, subpixel="grey", radius=DEFAULT_SUBPIXEL.radius),
)
SUBPIXEL_CODES = {"off": 0.0, "grey": 1.0, "colour": 2.0}  # result.choice["subpixel"]


@dataclass(frozen=True)
class Choice:
    """A strategy that fits (``strategy``), or ``levels`` planes of the quantized fallback."""

    predicted_ms: float
    strategy: Strategy | None = None
    levels: int = 0
    planes: int = 0

    def describe(self) -> str:
        if self.strategy is None:
            return f"quantized, {self.levels} plane{'' if self.levels == 1 else 's'}"
        sub = {"colour": "colour", "grey": "grey", "off": "no"}[self.strategy.subpixel]
        radius = self.strategy.radius
        reach = "" if radius is None or self.strategy.subpixel == "off" else f" (+-{radius} px)"
        if self.strategy.coarse_step:
            passes = self.strategy.passes
            return (
                f"coarse-to-fine, {self.planes} planes every {self.strategy.coarse_step} px and {passes} "
                f"per-pixel passes, {sub} sub-pixel matching{reach}"
            )
        return f"{self.planes} planes every {self.strategy.step} px, {sub} sub-pixel matching{reach}"


def ladder(subpixel: bool, search: bool = False) -> tuple[Strategy, ...]:
    """``LADDER`` (without the coarse-to-fine searches unless ``search``), or its sub-pixel-free
    versions where the engine has no sub-pixel stage."""
    offered = tuple(s for s in LADDER if search or not s.coarse_step)
    if subpixel:
        return offered
    seen: list[Strategy] = []
    for s in offered:
        plain = Strategy(coarse_step=s.coarse_step, step=s.step, subpixel="off")
        if plain not in seen:
            seen.append(plain)
    return tuple(seen)


def strategy_planes(strategy: Strategy, span: tuple[float, float], top: int) -> int:
    """Planes ``strategy`` sweeps over the disparity ``span``: its grid, or its coarse planes."""
    if not strategy.coarse_step:
        return grid_planes(span[0], span[1], strategy.step, top)
    return len(span_planes(span, strategy, top)[0])


def predict_strategy_ms(
    costs: CostModel, size: tuple[int, int], strategy: Strategy, planes: int, config: SubpixelConfig
) -> float:
    """The cost model's time for ``strategy`` over ``planes`` planes (``strategy_planes``)."""
    shifts = shifts_for(config, strategy.step, strategy.radius)
    if strategy.coarse_step:
        return costs.predict_search_ms(size, planes, strategy.passes, strategy.subpixel, shifts)
    return costs.predict_dense_ms(size, planes, strategy.subpixel, shifts)


def choose(
    costs: CostModel,
    size: tuple[int, int],
    budget_ms: float,
    span: tuple[float, float],
    top: int,
    subpixel: bool,
    max_levels: int,
    config: SubpixelConfig = DEFAULT_SUBPIXEL,
    search: bool = False,
) -> Choice:
    """The most accurate strategy predicted to fit ``budget_ms`` over the disparity ``span``, else
    the most quantized planes that fit; a ``UserError`` when not even one plane fits in a
    measured frame (after the first frame's probe alone, one plane runs to measure it).
    ``search``: the coarse-to-fine searches can run here."""
    for strategy in ladder(subpixel, search):
        planes = strategy_planes(strategy, span, top)
        predicted = predict_strategy_ms(costs, size, strategy, planes, config)
        if predicted <= budget_ms:
            return Choice(predicted, strategy, planes=planes)
    levels = costs.max_planes(size, budget_ms, max_levels)
    predicted = costs.predict_ms(size, levels)
    if predicted > budget_ms and costs.costs[size].samples < 2:
        # only the first frame's probe says so: answer the fastest once and measure it
        return Choice(predicted, None, levels=levels, planes=levels)
    if predicted > budget_ms:
        refuse_below_one_plane(costs, size, budget_ms)
    return Choice(predicted, None, levels=levels, planes=levels)


def refuse_below_one_plane(costs: CostModel, size: tuple[int, int], budget_ms: float) -> None:
    """A ``UserError`` when one plane is predicted to take longer than ``budget_ms`` on a measured
    frame size (after its first frame's probe alone, one plane runs to measure it), naming the minimum."""
    minimum = costs.fastest_ms(size)
    if minimum > budget_ms and costs.costs[size].samples >= 2:
        least = float(np.ceil(minimum))
        raise BudgetTooLow(
            f"{setting('budget_ms')} {budget_ms:g} ms is below the fastest answer here "
            f"(one plane, about {minimum:.0f} ms for this frame size); use at least {least:.0f} ms",
            least,
        )


def cheapest_ms(
    costs: CostModel,
    size: tuple[int, int],
    span: tuple[float, float],
    top: int,
    subpixel: bool,
    config: SubpixelConfig = DEFAULT_SUBPIXEL,
    search: bool = False,
) -> float:
    """Predicted time of the cheapest continuous strategy (the note of a quantized fallback)."""
    return min(
        predict_strategy_ms(costs, size, s, strategy_planes(s, span, top), config)
        for s in ladder(subpixel, search)
    )


def shifts_for(config: SubpixelConfig, step: int, radius: int | None = None) -> int:
    """Shifts the sub-pixel stage correlates after a sweep every ``step`` px (``radius``: its
    search, None widened to that step: ``subpixel.stage_config``)."""
    return shift_count(stage_config(config, "colour", step, radius))


def probe_subpixel(left: np.ndarray, right: np.ndarray, config: SubpixelConfig | None) -> dict[str, float]:
    """Milliseconds per correlated shift of the sub-pixel stage on this pair, colour and grey (the
    budget's first frame): H x W x 3 uint8 images, run on a flat disparity (its cost does not
    depend on the values)."""
    cfg = config or DEFAULT_SUBPIXEL
    lt, rt = torch.from_numpy(left), torch.from_numpy(right)
    flat = torch.full(left.shape[:2], 8.0)
    refine_subpixel(lt, rt, flat, dataclasses.replace(cfg, grey=True))  # untimed: first calls set up
    out = {}
    for kind in ("colour", "grey"):
        t0 = time.perf_counter()
        refine_subpixel(lt, rt, flat, dataclasses.replace(cfg, grey=kind == "grey"))
        out[kind] = (time.perf_counter() - t0) * 1000 / shift_count(cfg)
    return out
