"""The latency budget's strategies: shift counts, and the choice of the most accurate that fits."""

from __future__ import annotations

from app.engine.depth.budget import CostModel, StageCost, grid_planes
from app.engine.depth.searched import Strategy
from app.engine.depth.strategies import LADDER, choose, ladder, shifts_for
from app.engine.depth.subpixel import DEFAULT_SUBPIXEL, stage_config

SIZE = (576, 768)


def _costs() -> CostModel:
    costs = CostModel()
    costs.costs[SIZE] = StageCost(
        fixed_ms=30.0,
        per_plane_ms=12.0,
        subpixel_ms={"colour": 15.0, "grey": 7.0},
        dense_base_ms=80.0,
        dense_per_plane_ms=16.0,
    )
    return costs


def test_a_strategy_searches_its_own_radius_or_the_widened_one() -> None:
    assert shifts_for(DEFAULT_SUBPIXEL, 9) == 13  # widened to the 9 px step: +-5
    assert shifts_for(DEFAULT_SUBPIXEL, 9, 3) == 9
    config = stage_config(DEFAULT_SUBPIXEL, "grey", 9, 3)
    assert (config.radius, config.reach, config.grey) == (3, 4.0, True)
    assert stage_config(DEFAULT_SUBPIXEL, "colour", 12, 2).reach == DEFAULT_SUBPIXEL.reach  # never less


def test_the_budget_takes_the_first_strategy_on_the_ladder_that_fits() -> None:
    costs = _costs()
    span, top = (0.0, 84.0), 192
    wide, narrow = (Strategy(coarse_step=0, step=9, subpixel="grey", radius=r) for r in (None, 3))
    assert LADDER.index(wide) + 1 == LADDER.index(narrow)
    planes = grid_planes(*span, 9, top)
    wide_ms = costs.predict_dense_ms(SIZE, planes, "grey", shifts_for(DEFAULT_SUBPIXEL, 9))
    narrow_ms = costs.predict_dense_ms(SIZE, planes, "grey", shifts_for(DEFAULT_SUBPIXEL, 9, 3))
    assert narrow_ms < wide_ms
    chosen = choose(costs, SIZE, (narrow_ms + wide_ms) / 2, span, top, True, 63)
    assert chosen.strategy == narrow and chosen.planes == planes
    assert chosen.describe() == f"{planes} planes every 9 px, grey sub-pixel matching (+-3 px)"
    assert choose(costs, SIZE, wide_ms + 0.01, span, top, True, 63).strategy == wide


def test_the_coarse_to_fine_searches_are_offered_only_where_they_run() -> None:
    costs = _costs()
    cost = costs.costs[SIZE]
    cost.search_base_ms, cost.per_pass_ms = 90.0, 14.0
    span, top = (0.0, 84.0), 192
    searched = Strategy(coarse_step=24, subpixel="colour")
    assert searched not in ladder(True) and searched in ladder(True, search=True)
    assert Strategy(coarse_step=24, subpixel="off") in ladder(False, search=True)
    # 0-84 px: coarse planes 0, 24, 48, 72, 84, then 3 passes
    search_ms = costs.predict_search_ms(SIZE, 5, 3, "colour", shifts_for(DEFAULT_SUBPIXEL, 3))
    # on the ladder after every sweep but the cheapest: chosen when none of those fits
    cost.dense_per_plane_ms = 1e3
    chosen = choose(costs, SIZE, search_ms + 1, span, top, True, 63, search=True)
    assert chosen.strategy == searched and chosen.planes == 5
    assert (
        chosen.describe()
        == "coarse-to-fine, 5 planes every 24 px and 3 per-pixel passes, colour sub-pixel matching"
    )
    assert choose(costs, SIZE, search_ms + 1, span, top, True, 63).strategy != searched
