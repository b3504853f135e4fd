"""A horizontal slider over a range spanning orders of magnitude, in round values.

The latency budget runs from 5 ms to 3 s; on a linear slider the budgets that matter on a CPU
(20-400 ms) took the first eighth of its track and one pixel of it was 15 ms. Here equal
distances are equal ratios, and the values are rounded to what a person would type: whole ms
under 100, then steps of 5, then of 50 from 1 s.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QSlider, QWidget

STEPS = 400  # slider positions from the minimum to the maximum


def _step(value: float) -> int:
    """The grid the slider's values keep to near ``value``: 1, 5 from 100, 50 from 1000."""
    return 1 if value < 100 else 5 if value < 1000 else 50


def round_value(value: float) -> int:
    """``value`` rounded to a whole number, to 5 from 100 and to 50 from 1000."""
    step = _step(value)
    return int(step * round(value / step))


def round_up(value: float) -> int:
    """The least value ``round_value`` gives that is not below ``value``."""
    step = _step(value)
    return int(step * math.ceil(value / step))


class LogSlider(QSlider):
    """Integer values from ``minimum`` to ``maximum`` (both > 0) on a logarithmic track.

    ``value()`` and ``setValue()`` of the underlying ``QSlider`` are track positions; use
    ``number()``, ``set_number()`` and ``numberChanged`` for the values themselves."""

    numberChanged = Signal(int)

    def __init__(self, minimum: int, maximum: int, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        if not 0 < minimum < maximum:
            raise ValueError(f"a logarithmic slider needs 0 < minimum < maximum, got {minimum}, {maximum}")
        self.low, self.high = minimum, maximum
        self.setRange(0, STEPS)
        self.setSingleStep(4)  # arrow keys: about 10 % a press at the default range
        self.setPageStep(STEPS // 10)
        self._number = minimum
        self.valueChanged.connect(self._moved)

    def number(self) -> int:
        return self._number

    def minimum_number(self) -> int:
        return self.low

    def maximum_number(self) -> int:
        return self.high

    def set_number(self, value: float) -> None:
        """Show ``value`` (clamped to the range) and announce it when it changed."""
        value = min(max(round_value(value), self.low), self.high)
        position = round(STEPS * math.log(value / self.low) / math.log(self.high / self.low))
        self.blockSignals(True)
        self.setValue(position)
        self.blockSignals(False)
        if value != self._number:
            self._number = value
            self.numberChanged.emit(value)

    def number_at(self, position: int) -> int:
        """The value a track position stands for."""
        if position <= 0:
            return self.low
        if position >= STEPS:
            return self.high
        exact = self.low * (self.high / self.low) ** (position / STEPS)
        return min(max(round_value(exact), self.low), self.high)

    def _moved(self, position: int) -> None:
        value = self.number_at(position)
        if value != self._number:
            self._number = value
            self.numberChanged.emit(value)
