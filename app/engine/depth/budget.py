"""Latency budget: a running model of the engine's own cost on this device.

Bi3D's cost is a fixed part (feature pass, refinement, readout) plus a part that
grows linearly with the plane count. The engine feeds every frame's measured
stage times in; requests with a budget ask it for the largest plane count that fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.engine.depth.decoding import dense_span


@dataclass
class StageCost:
    """Exponential moving average of one frame size's costs, in milliseconds."""

    fixed_ms: float
    per_plane_ms: float
    samples: int = 1


@dataclass
class CostModel:
    smoothing: float = 0.3  # weight of the newest frame
    costs: dict[tuple[int, int], StageCost] = field(default_factory=dict)

    def known(self, size: tuple[int, int]) -> bool:
        return size in self.costs

    def update(self, size: tuple[int, int], fixed_ms: float, planes_ms: float, planes: int) -> None:
        """Record one frame: ``fixed_ms`` (features, refinement, readout) and the time
        spent sweeping ``planes`` planes."""
        per_plane = planes_ms / max(planes, 1)
        old = self.costs.get(size)
        if old is None:
            self.costs[size] = StageCost(fixed_ms, per_plane)
            return
        a = self.smoothing
        old.fixed_ms = (1 - a) * old.fixed_ms + a * fixed_ms
        old.per_plane_ms = (1 - a) * old.per_plane_ms + a * per_plane
        old.samples += 1

    def predict_ms(self, size: tuple[int, int], planes: int) -> float:
        cost = self.costs[size]
        return cost.fixed_ms + planes * cost.per_plane_ms

    def max_planes(self, size: tuple[int, int], budget_ms: float, limit: int) -> int:
        """Largest plane count in [1, limit] predicted to fit; 1 when nothing fits."""
        cost = self.costs[size]
        if cost.per_plane_ms <= 0:
            return limit
        # the epsilon keeps float division from dropping a plane that fits exactly
        fits = math.floor((budget_ms - cost.fixed_ms) / cost.per_plane_ms + 1e-9)
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


def grid_planes(lo: float, hi: float, step: int, top: int) -> int:
    """How many planes a dense sweep of [lo, hi] px every ``step`` px takes (``top``: the model's max)."""
    first, last = dense_span(lo, hi, step, top)
    return (last - first) // step + 1
