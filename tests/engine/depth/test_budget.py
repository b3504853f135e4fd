"""Tests for app.engine.depth.budget.CostModel (running latency model)."""

from __future__ import annotations

import pytest

from app.engine.depth.budget import CostModel, grid_planes

SIZE = (120, 200)


def model(fixed_ms: float = 10.0, planes_ms: float = 40.0, planes: int = 4) -> CostModel:
    m = CostModel()
    m.update(SIZE, fixed_ms=fixed_ms, planes_ms=planes_ms, planes=planes)
    return m


def test_first_update_sets_costs() -> None:
    m = model()
    assert m.known(SIZE) and not m.known((1, 1))
    assert m.costs[SIZE].fixed_ms == 10.0 and m.costs[SIZE].per_plane_ms == 10.0
    assert m.costs[SIZE].samples == 1


def test_predict_ms_is_linear_in_planes() -> None:
    m = model()
    assert m.predict_ms(SIZE, 8) == 90.0
    assert m.predict_ms(SIZE, 0) == 10.0


def test_predict_unknown_size_raises() -> None:
    with pytest.raises(KeyError):
        model().predict_ms((1, 1), 4)


def test_zero_planes_update_does_not_divide_by_zero() -> None:
    m = model(planes_ms=7.0, planes=0)
    assert m.costs[SIZE].per_plane_ms == 7.0


def test_max_planes_fits_budget() -> None:
    m = model()
    assert m.max_planes(SIZE, budget_ms=50, limit=64) == 4
    assert m.max_planes(SIZE, budget_ms=59.9, limit=64) == 4
    assert m.max_planes(SIZE, budget_ms=60, limit=64) == 5


def test_max_planes_respects_limit() -> None:
    assert model().max_planes(SIZE, budget_ms=10_000, limit=16) == 16


def test_max_planes_nothing_fits_gives_one() -> None:
    m = model()
    assert m.max_planes(SIZE, budget_ms=15, limit=64) == 1
    assert m.max_planes(SIZE, budget_ms=5, limit=64) == 1  # below even the fixed cost


def test_max_planes_free_planes_gives_limit() -> None:
    assert model(planes_ms=0.0).max_planes(SIZE, budget_ms=50, limit=32) == 32


def test_smoothing_moves_toward_new_frames() -> None:
    m = model()
    m.update(SIZE, fixed_ms=20.0, planes_ms=80.0, planes=4)  # per plane 20
    cost = m.costs[SIZE]
    assert cost.fixed_ms == pytest.approx(0.7 * 10 + 0.3 * 20)
    assert cost.per_plane_ms == pytest.approx(0.7 * 10 + 0.3 * 20)
    assert cost.samples == 2
    for _ in range(30):
        m.update(SIZE, fixed_ms=20.0, planes_ms=80.0, planes=4)
    assert m.costs[SIZE].fixed_ms == pytest.approx(20.0, abs=1e-3)
    assert m.costs[SIZE].per_plane_ms == pytest.approx(20.0, abs=1e-3)


def test_sizes_are_tracked_separately() -> None:
    m = model()
    m.update((240, 400), fixed_ms=40.0, planes_ms=160.0, planes=4)
    assert m.predict_ms(SIZE, 1) == 20.0
    assert m.predict_ms((240, 400), 1) == 80.0


def test_custom_smoothing_weight() -> None:
    m = CostModel(smoothing=1.0)
    m.update(SIZE, 10.0, 40.0, 4)
    m.update(SIZE, 30.0, 8.0, 4)
    assert m.predict_ms(SIZE, 2) == pytest.approx(34.0)


def test_finest_step_large_budget_is_base_step() -> None:
    assert model().finest_step(SIZE, 10_000, 0, 192, base_step=3, top=192) == 3


@pytest.mark.parametrize(
    ("budget", "lo", "hi"), [(150.0, 0, 60), (100.0, 0, 192), (300.0, 0, 192), (150.0, 20, 61)]
)
def test_finest_step_fits_and_is_finest(budget: float, lo: float, hi: float) -> None:
    m = model()
    step = m.finest_step(SIZE, budget, lo, hi, base_step=3, top=192)
    assert step % 3 == 0 and step >= 3
    planes = grid_planes(lo, hi, step, 192)
    assert planes <= 2 or m.predict_ms(SIZE, planes) <= budget
    if step > 3:  # the next finer grid would not fit
        assert m.predict_ms(SIZE, grid_planes(lo, hi, step - 3, 192)) > budget


def test_finest_step_counts_the_widened_grid() -> None:
    m = model()  # 10 ms fixed + 10 ms per plane
    # [20, 61] at 3 px widens to [18, 63]: 16 planes, 170 ms; 14 planes (150 ms) would be a miscount
    assert m.finest_step(SIZE, 150, 20, 61, base_step=3, top=192) == 6
    assert grid_planes(20, 61, 3, 192) == 16


def test_finest_step_example_values() -> None:
    m = model()
    assert m.finest_step(SIZE, 220, 0, 60, base_step=3, top=192) == 3  # 21 planes, 220 ms
    assert m.finest_step(SIZE, 219, 0, 60, base_step=3, top=192) == 6  # 11 planes, 120 ms


def test_finest_step_stops_at_two_planes_when_nothing_fits() -> None:
    step = model().finest_step(SIZE, 1, 0, 60, base_step=3, top=192)
    assert step % 3 == 0
    assert grid_planes(0, 60, step, 192) <= 2 < grid_planes(0, 60, step - 3, 192)


def test_max_planes_keeps_a_plane_that_fits_exactly() -> None:
    m = CostModel()
    m.update(SIZE, fixed_ms=29, planes_ms=99, planes=5)
    assert m.predict_ms(SIZE, 5) <= 128
    assert m.max_planes(SIZE, 128, 64) == 5


def test_a_budget_is_refused_below_the_fastest_plane_answer_measured() -> None:
    """A new size's first frame (its set-up in it) stayed in the average: the window refused 100 ms
    with "one plane, about 118 ms" where one plane then took 92 ms (review)."""
    from app.engine.depth.budget import CostModel

    costs = CostModel()
    costs.update((480, 640), 90.0, 40.0, 4, seed=True)  # a dense frame's, set-up and all
    costs.update((480, 640), 30.0, 40.0, 4)  # plane answers
    costs.update((480, 640), 35.0, 40.0, 4)
    assert costs.predict_ms((480, 640), 1) > 60.0  # the average, for choosing: still careful
    assert costs.fastest_ms((480, 640)) == pytest.approx(30.0 + 10.0)  # the floor: as measured


def test_a_plane_answer_is_planned_on_its_own_cost_per_plane_not_the_network_s() -> None:
    """The probe's and the search's planes are the network's alone; a quantized plane also pays
    its plane check. A fallback planned on the network's cost took 1.31x its budget (review)."""
    m = CostModel()
    m.update(SIZE, fixed_ms=10.0, planes_ms=20.0, planes=2, seed=True)  # the probe: 10 ms a plane
    assert m.predict_ms(SIZE, 4) == pytest.approx(10.0 + 4 * 20.0)  # the prior: 2 network planes
    m.update(SIZE, fixed_ms=10.0, planes_ms=150.0, planes=10)  # a quantized answer: 15 ms a plane
    assert m.predict_ms(SIZE, 4) == pytest.approx(10.0 + 4 * 15.0)  # measured: it replaces the prior
    m.update_search(SIZE, 30.0, (9, 45.0), (3, 30.0), None)  # search planes: 5 ms, network only
    assert m.predict_ms(SIZE, 4) == pytest.approx(70.0) and m.max_planes(SIZE, 70.0, 64) == 4
