"""The logarithmic slider of the latency budget: round values, equal ratios, both ends reachable."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtCore import Qt

from app.ui.log_slider import STEPS, LogSlider, round_value


def test_values_are_round_and_rise_with_the_track(qtbot) -> None:  # type: ignore[no-untyped-def]
    slider = LogSlider(5, 3000)
    qtbot.addWidget(slider)
    values = [slider.number_at(p) for p in range(STEPS + 1)]
    assert values[0] == 5 and values[-1] == 3000
    assert all(a <= b for a, b in itertools.pairwise(values))
    assert all(v % (1 if v < 100 else 5 if v < 1000 else 50) == 0 for v in values)
    # the budgets that matter on a CPU have half the track, not an eighth
    inside = sum(20 <= v <= 400 for v in values) / len(values)
    assert inside > 0.45
    assert round_value(97.4) == 97 and round_value(123) == 125 and round_value(1234) == 1250


def test_set_number_shows_the_value_and_announces_changes_only(qtbot) -> None:  # type: ignore[no-untyped-def]
    slider = LogSlider(5, 3000)
    qtbot.addWidget(slider)
    seen: list[int] = []
    slider.numberChanged.connect(seen.append)
    slider.set_number(200)
    slider.set_number(200)
    slider.set_number(1e9)  # clamped
    slider.set_number(-3)
    assert seen == [200, 3000, 5] and slider.number() == 5 and slider.value() == 0
    slider.set_number(200)
    assert abs(slider.number_at(slider.value()) - 200) <= 10  # the handle stands where 200 is


def test_the_keyboard_steps_by_ratios(qtbot) -> None:  # type: ignore[no-untyped-def]
    slider = LogSlider(5, 3000)
    qtbot.addWidget(slider)
    slider.set_number(100)
    seen: list[int] = []
    slider.numberChanged.connect(seen.append)
    qtbot.keyClick(slider, Qt.Key.Key_Right)
    qtbot.keyClick(slider, Qt.Key.Key_Left)
    qtbot.keyClick(slider, Qt.Key.Key_Left)
    assert len(seen) == 3 and 100 < seen[0] < 115 and 85 < seen[2] < 100


def test_a_bad_range_is_refused() -> None:
    with pytest.raises(ValueError, match="0 < minimum < maximum"):
        LogSlider(0, 10)
