"""Latency budget: a running model of the engine's own cost on this device.

Bi3D's cost is a fixed part (feature pass, refinement, readout) plus a part that
grows linearly with the plane count. The engine feeds every frame's measured
stage times in; requests with a budget ask it for the largest plane count that fits.

Continuous depth by the coarse-to-fine search (``depth.search``) costs a base (features,
upsampling, readout), the coarse planes, the per-pixel passes and the sub-pixel matching
(colour, grey or none); each is measured per frame size, so the budget can predict every
strategy of ``depth.strategies`` and choose the most accurate that fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.engine.depth.decoding import dense_span
from app.engine.errors import UserError, setting


@dataclass
class StageCost:
    """Exponential moving average of one frame size's costs, in milliseconds."""

    fixed_ms: float
    per_plane_ms: float
    samples: int = 1
    # the smallest fixed part a plane answer was measured with (None: only seeds so far): the
    # floor a budget is refused below (the average still held a new size's set-up, and said "one
    # plane, about 118 ms" where one plane took 92: review)
    fastest_fixed_ms: float | None = None
    # the coarse-to-fine search (None until measured): base of a searched frame, one per-pixel
    # pass, and the sub-pixel stage by kind ("colour", "grey") per shift it correlates (its
    # search widens with the plane step: ``subpixel.for_step``)
    search_base_ms: float | None = None
    per_pass_ms: float | None = None
    subpixel_ms: dict[str, float] = field(default_factory=dict)
    # the full dense sweep (None until measured): its base, and per plane the network pass with
    # its share of the full-resolution refinement and readout
    dense_base_ms: float | None = None
    dense_per_plane_ms: float | None = None
    # a plane answer's (binary, quantized) own cost per plane, its plane check included (None until
    # one was measured): the probe's and the search's planes are the network's alone, and a
    # quantized fallback planned on them took 1.31x its budget (12 planes for 100 ms)
    answer_per_plane_ms: float | None = None


# before a plane answer was measured, its plane costs this many network planes (the plane check:
# 16 quantized planes at 480 x 640 cost 5.5 ms a plane, a continuous sweep's plane 2.7 ms)
ANSWER_PRIOR = 2.0


@dataclass
class CostModel:
    smoothing: float = 0.3  # weight of the newest frame
    costs: dict[tuple[int, int], StageCost] = field(default_factory=dict)

    def known(self, size: tuple[int, int]) -> bool:
        return size in self.costs

    def update(
        self, size: tuple[int, int], fixed_ms: float, planes_ms: float, planes: int, seed: bool = False
    ) -> None:
        """Record one frame: ``fixed_ms`` (features, refinement, readout) and the time
        spent sweeping ``planes`` planes; ``seed``: a probe's or a dense frame's figures, not a
        plane answer's."""
        per_plane = planes_ms / max(planes, 1)
        old = self.costs.get(size)
        fastest = None if seed else fixed_ms
        answer = None if seed else per_plane
        if old is None:
            self.costs[size] = StageCost(
                fixed_ms, per_plane, fastest_fixed_ms=fastest, answer_per_plane_ms=answer
            )
            return
        if fastest is not None:
            known = old.fastest_fixed_ms
            old.fastest_fixed_ms = fastest if known is None else min(fastest, known)
        a = self.smoothing
        if answer is not None:  # the first measured one replaces the prior outright
            old.answer_per_plane_ms = _mix(old.answer_per_plane_ms, answer, a)
        old.fixed_ms = (1 - a) * old.fixed_ms + a * fixed_ms
        old.per_plane_ms = (1 - a) * old.per_plane_ms + a * per_plane
        old.samples += 1

    def update_search(
        self,
        size: tuple[int, int],
        base_ms: float,
        planes: tuple[int, float],
        passes: tuple[int, float],
        subpixel: tuple[str, float] | None,
    ) -> None:
        """Record one searched frame: its base, (coarse planes, ms), (pixel passes, ms) and
        (sub-pixel kind, ms per shift) when that stage ran. The size must be known (``update`` first)."""
        cost = self.costs[size]
        a = self.smoothing
        cost.search_base_ms = _mix(cost.search_base_ms, base_ms, a)
        if planes[0]:
            cost.per_plane_ms = _mix(cost.per_plane_ms, planes[1] / planes[0], a)
        if passes[0]:
            cost.per_pass_ms = _mix(cost.per_pass_ms, passes[1] / passes[0], a)
        if subpixel is not None:
            kind, ms = subpixel
            cost.subpixel_ms[kind] = _mix(cost.subpixel_ms.get(kind), ms, a)

    def update_dense(
        self,
        size: tuple[int, int],
        base_ms: float,
        planes: tuple[int, float],
        subpixel: tuple[str, float] | None,
    ) -> None:
        """Record one full-sweep dense frame: its base, (planes, ms of planes, refinement and
        readout) and (sub-pixel kind, ms per shift) when that stage ran. The size must be known."""
        cost = self.costs[size]
        a = self.smoothing
        cost.dense_base_ms = _mix(cost.dense_base_ms, base_ms, a)
        if planes[0]:
            cost.dense_per_plane_ms = _mix(cost.dense_per_plane_ms, planes[1] / planes[0], a)
        if subpixel is not None:
            cost.subpixel_ms[subpixel[0]] = _mix(cost.subpixel_ms.get(subpixel[0]), subpixel[1], a)

    def predict_dense_ms(self, size: tuple[int, int], planes: int, subpixel: str, shifts: int) -> float:
        """A full-sweep dense frame's time over ``planes`` planes with the sub-pixel stage
        ``subpixel`` correlating ``shifts`` shifts; before one was measured, a plane costs 1.6
        network passes (the readout of 65 planes at 480 x 640 took 0.55 of their network time
        here) and the base the fixed part."""
        cost = self.costs[size]
        base = cost.dense_base_ms if cost.dense_base_ms is not None else cost.fixed_ms
        per = cost.dense_per_plane_ms if cost.dense_per_plane_ms is not None else 1.6 * cost.per_plane_ms
        return base + planes * per + shifts * self._subpixel_ms(cost, subpixel)

    @staticmethod
    def _subpixel_ms(cost: StageCost, subpixel: str) -> float:
        """Per shift."""
        if subpixel == "off":
            return 0.0
        known = cost.subpixel_ms
        colour = known.get("colour", 3 * known.get("grey", 0.0))
        return known.get(subpixel, colour / 3 if subpixel == "grey" else colour)

    def predict_search_ms(
        self, size: tuple[int, int], planes: int, passes: int, subpixel: str, shifts: int
    ) -> float:
        """A searched frame's time: ``planes`` coarse planes, ``passes`` pixel passes, the sub-pixel
        stage ``subpixel`` ("colour", "grey" or "off") over ``shifts`` shifts. Unmeasured parts are
        estimated from the measured ones (a pass as a plane, the base as the fixed part of a
        sweep, grey as a third of colour)."""
        cost = self.costs[size]
        base = cost.search_base_ms if cost.search_base_ms is not None else cost.fixed_ms
        per_pass = cost.per_pass_ms if cost.per_pass_ms is not None else cost.per_plane_ms
        return (
            base + planes * cost.per_plane_ms + passes * per_pass + shifts * self._subpixel_ms(cost, subpixel)
        )

    def predict_ms(self, size: tuple[int, int], planes: int) -> float:
        """A plane answer's (binary, quantized) time over ``planes`` planes."""
        cost = self.costs[size]
        return cost.fixed_ms + planes * _answer_plane_ms(cost)

    def fastest_ms(self, size: tuple[int, int]) -> float:
        """One plane at the smallest fixed part measured: what a budget is refused below."""
        cost = self.costs[size]
        fixed = cost.fixed_ms if cost.fastest_fixed_ms is None else min(cost.fixed_ms, cost.fastest_fixed_ms)
        return fixed + _answer_plane_ms(cost)

    def max_planes(self, size: tuple[int, int], budget_ms: float, limit: int) -> int:
        """Largest plane count in [1, limit] of a plane answer predicted to fit; 1 when nothing fits."""
        cost = self.costs[size]
        per_plane = _answer_plane_ms(cost)
        if per_plane <= 0:
            return limit
        # the epsilon keeps float division from dropping a plane that fits exactly
        fits = math.floor((budget_ms - cost.fixed_ms) / per_plane + 1e-9)
        return int(max(1, min(limit, fits)))

    def finest_step(
        self, size: tuple[int, int], budget_ms: float, lo: float, hi: float, base_step: int, top: int
    ) -> int:
        """Smallest multiple of ``base_step`` whose plane grid over [lo, hi] fits the budget.

        The grid is the one the engine will sweep: ``dense_span`` widens it to the step.
        """
        step = base_step
        while True:
            planes = grid_planes(lo, hi, step, top)
            if planes <= 2 or step >= top or self.predict_ms(size, planes) <= budget_ms:
                return step
            step += base_step


def _mix(old: float | None, new: float, weight: float) -> float:
    return new if old is None else (1 - weight) * old + weight * new


def check_budget(budget_ms: float | None) -> None:
    """A ``UserError`` for a budget that is not a positive finite number of milliseconds."""
    if budget_ms is None:
        return
    if not (isinstance(budget_ms, int | float) and math.isfinite(budget_ms) and budget_ms > 0):
        raise UserError(f"{setting('budget_ms')} must be a positive, finite number of ms, got {budget_ms!r}")


def grid_planes(lo: float, hi: float, step: int, top: int) -> int:
    """How many planes a dense sweep of [lo, hi] px every ``step`` px takes (``top``: the model's max)."""
    first, last = dense_span(lo, hi, step, top)
    return (last - first) // step + 1


def _answer_plane_ms(cost: StageCost) -> float:
    """A plane answer's cost per plane: measured, else the network's per plane times the prior."""
    return (
        cost.answer_per_plane_ms if cost.answer_per_plane_ms is not None else ANSWER_PRIOR * cost.per_plane_ms
    )
