"""A horizontal slider with two handles, for the selective disparity range."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

HANDLE = 7.0  # handle radius in pixels


class RangeSlider(QWidget):
    """Integer range [low, high] within [minimum, maximum]; drag either handle."""

    rangeChanged = Signal(int, int)

    def __init__(self, minimum: int = 0, maximum: int = 192, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.minimum, self.maximum = minimum, maximum
        self._low, self._high = minimum, maximum
        self._drag: str | None = None
        self.setMinimumHeight(22)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        # reached with Tab too, as the other sliders are (Tab went from Mode to Max disparity: re-check);
        # Left and Right then move the range
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def values(self) -> tuple[int, int]:
        return self._low, self._high

    def set_values(self, low: int, high: int) -> None:
        low = max(self.minimum, min(int(low), self.maximum - 1))
        high = max(low + 1, min(int(high), self.maximum))
        if (low, high) != (self._low, self._high):
            self._low, self._high = low, high
            self.update()
            self.rangeChanged.emit(low, high)

    def set_maximum(self, maximum: int) -> None:
        self.maximum = maximum
        self.set_values(min(self._low, maximum - 1), min(self._high, maximum))

    # ---- geometry ------------------------------------------------------------------------
    def _x(self, value: int) -> float:
        span = max(self.maximum - self.minimum, 1)
        return HANDLE + (self.width() - 2 * HANDLE) * (value - self.minimum) / span

    def _value(self, x: float) -> int:
        span = max(self.width() - 2 * HANDLE, 1.0)
        return round(self.minimum + (x - HANDLE) / span * (self.maximum - self.minimum))

    # ---- events --------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        mid = self.height() / 2
        p.fillRect(QRectF(HANDLE, mid - 2, self.width() - 2 * HANDLE, 4), QColor(120, 120, 120))
        x0, x1 = self._x(self._low), self._x(self._high)
        p.fillRect(QRectF(x0, mid - 3, x1 - x0, 6), self.palette().highlight())
        p.setBrush(self.palette().button())
        for x in (x0, x1):
            p.drawEllipse(QRectF(x - HANDLE, mid - HANDLE, 2 * HANDLE, 2 * HANDLE))
        if self.hasFocus():  # where the keys go
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.setPen(QPen(self.palette().highlight().color(), 1, Qt.PenStyle.DotLine))
            p.drawRect(QRectF(0.5, 0.5, self.width() - 1.0, self.height() - 1.0))
        p.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        self._drag = "low" if abs(x - self._x(self._low)) <= abs(x - self._x(self._high)) else "high"
        self.mouseMoveEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._drag is None:
            return
        v = self._value(event.position().x())
        if self._drag == "low":
            self.set_values(min(v, self._high - 1), self._high)
        else:
            self.set_values(self._low, max(v, self._low + 1))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self._drag = None

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key not in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            super().keyPressEvent(event)
            return
        step = -1 if key == Qt.Key.Key_Left else 1
        self.set_values(self._low + step, self._high + step)
