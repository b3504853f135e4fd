"""The one validation layer: finite, in range, the unit and the allowed range in the message;
and the memory estimate that refuses with the figure."""

from __future__ import annotations

import math

import pytest

from app.engine.errors import UserError
from app.engine.memory import available_bytes, require
from app.engine.types import DepthRequest, Mode
from app.engine.validation import POSITIVE, Bounds, integer, number


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", math.nan, math.inf, "abc", None, "1e999"])
def test_numbers_that_are_not_finite_are_refused_with_unit_and_range(value: object) -> None:
    with pytest.raises(UserError, match=r"budget.*\(0, 100\] ms"):
        number(value, "budget", Bounds(0, 100, low_open=True), "ms")


def test_numbers_in_range_pass_and_outside_are_named() -> None:
    assert number("2.5", "x", Bounds(0, 3)) == 2.5
    with pytest.raises(UserError, match=r"plane 250 px is outside \[0, 192\] px"):
        number(250, "plane", Bounds(0, 192), "px")
    with pytest.raises(UserError, match="must be above 0 m, got 0 m"):
        number(0, "depth", POSITIVE, "m")


@pytest.mark.parametrize(
    ("value", "good"), [("4", True), (4.0, True), ("4.5", False), (True, False), ("x", False), ("nan", False)]
)
def test_integers_must_be_whole(value: object, good: bool) -> None:
    if good:
        assert integer(value, "levels", Bounds(1, 10)) == 4
    else:
        with pytest.raises(UserError, match="levels"):
            integer(value, "levels", Bounds(1, 10))


@pytest.mark.parametrize(
    "fields",
    [
        {"mode": Mode.SELECTIVE, "range": (math.nan, 30.0)},
        {"mode": Mode.SELECTIVE, "range": (10.0, math.inf)},
        {"budget_ms": math.nan},
        {"budget_ms": math.inf},
        {"mode": Mode.BINARY, "planes": (math.nan,)},
        {"mode": Mode.QUANTIZED, "levels": 10000},
        {"max_disparity": 10**9},
    ],
)
def test_requests_refuse_what_no_engine_can_answer(fields: dict[str, object]) -> None:
    with pytest.raises(UserError):
        DepthRequest(**fields)  # type: ignore[arg-type]


def test_levels_are_bounded_by_what_the_range_resolves() -> None:
    assert DepthRequest(mode=Mode.QUANTIZED, levels=191).levels == 191
    with pytest.raises(UserError, match="at most 19 planes 1 px apart"):
        DepthRequest(mode=Mode.QUANTIZED, levels=20, range=(0.0, 20.0))


def test_memory_is_refused_with_both_figures() -> None:
    require(1 << 20, "a small thing", "nothing", available=1 << 30)
    with pytest.raises(UserError, match=r"needs about 11\.6 GiB, 4\.0 GiB is free here; use less"):
        require(11.6 * (1 << 30), "Bi3D on a big pair", "use less", available=4 << 30)


def test_available_memory_reads_meminfo() -> None:
    assert available_bytes("MemTotal: 10 kB\nMemAvailable:    2048 kB\n") == 2048 * 1024
    assert available_bytes("") > 0  # the physical memory where MemAvailable is not given


def test_a_frame_too_large_is_said_width_first_and_padded() -> None:
    """--size 8000x6000 (height x width) read "Bi3D on a 6048x8064 pair": width first and padded,
    unsaid (review)."""
    from app.engine.depth.limits import require_frame

    with pytest.raises(UserError, match=r"Bi3D on a 6048 x 8064 px frame \(width x height, padded for the"):
        require_frame(1e15, 65, (8064, 6048), "Bi3D", padded=True)


def test_a_plane_past_the_default_maximum_names_bi3d_s_reach_and_sgbm() -> None:
    """It said "--max-disparity (192 px) bounds it", a maximum not given, and a larger one is
    refused by Bi3D ("use --max-disparity 192"): SGBM is what searches farther (review)."""
    from app.engine.types import DepthRequest, Mode

    with pytest.raises(
        UserError, match=r"192 px is where .*max_disparity.* auto stops, and Bi3D's reach; SGBM"
    ):
        DepthRequest(mode=Mode.BINARY, planes=(300.0,))
    with pytest.raises(UserError, match=r"\(96 px\) bounds it"):  # a maximum given is named as such
        DepthRequest(mode=Mode.BINARY, planes=(100.0,), max_disparity=96)
