"""The mouse wheel scrolls a panel instead of changing the setting under the pointer.

The controls and calibration panels scroll; rolling the wheel down them landed on a combo box
(Device) and switched it (an error about CUDA stood on screen), or on a spin box or a slider.
A field takes the wheel once it has the keyboard focus (a click); until then the wheel scrolls
the panel it is in, as in most desktop applications.
"""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QScrollArea,
    QScrollBar,
    QWidget,
)

GUARDED = (QComboBox, QAbstractSpinBox, QAbstractSlider)
GuardT = TypeVar("GuardT", bound=QObject)


def _scroll_area(widget: QWidget) -> QScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


class WheelGuard(QObject):
    """An application event filter: a wheel event over an unfocused field of a scrolling panel
    goes to the panel's scroll area."""

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if not isinstance(obj, GUARDED) or isinstance(obj, QScrollBar):  # a scroll bar scrolls
            return False
        if event.type() == QEvent.Type.Polish and obj.focusPolicy() == Qt.FocusPolicy.WheelFocus:
            obj.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # Qt focuses it before filters see the wheel
            return False
        if event.type() != QEvent.Type.Wheel:
            return False
        if obj.hasFocus():
            return False
        area = _scroll_area(obj)
        if area is None:  # not in a scrolling panel (the seek bar): the field's own
            return False
        QApplication.sendEvent(area.verticalScrollBar(), event)
        return True


def install(parent: QObject) -> WheelGuard:
    """Filter the application's wheel events for as long as ``parent`` lives."""
    return filter_application(WheelGuard(parent))


def filter_application(guard: GuardT) -> GuardT:
    """Install ``guard`` as an event filter of the whole application (it lives as its parent)."""
    app = QApplication.instance()
    if app is not None:
        app.installEventFilter(guard)
    return guard
