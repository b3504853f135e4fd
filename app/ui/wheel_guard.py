"""The mouse wheel scrolls a panel instead of changing the setting under the pointer.

The controls and calibration panels scroll; rolling the wheel down them landed on a combo box
(Device) and switched it (an error about CUDA stood on screen), or on a spin box or a slider.
A spin box or slider takes the wheel once it has the keyboard focus (a click); until then the
wheel scrolls the panel it is in, as in most desktop applications. A combo box never takes it
there: one keeps the focus after a value is picked from its list, and the next roll of the wheel
down the panel switched the mode, or turned the optical flow off, unseen (review); its keys and
its list still change it.
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
        if event.type() == QEvent.Type.Polish:
            no_wheel_focus(obj)
            return False
        if event.type() != QEvent.Type.Wheel:
            return False
        if obj.hasFocus() and not isinstance(obj, QComboBox):
            return False
        area = _scroll_area(obj)
        if area is None:  # not in a scrolling panel (the seek bar): the field's own
            return False
        QApplication.sendEvent(area.verticalScrollBar(), event)
        return True


def no_wheel_focus(widget: QWidget) -> None:
    """Qt focuses a field the wheel rolls over when its policy says so, before any filter sees
    the wheel: the field would then take it."""
    if widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)


def install(parent: QObject) -> WheelGuard:
    """Filter the application's wheel events for as long as ``parent`` lives. Fields polished
    before (a panel's size hint polishes its fields while the window is built) are seen to now:
    the calibration panel's combo boxes kept the wheel focus and the wheel switched them (review)."""
    guard = filter_application(WheelGuard(parent))
    for widget in QApplication.allWidgets():
        if isinstance(widget, GUARDED) and not isinstance(widget, QScrollBar):
            no_wheel_focus(widget)
    return guard


def filter_application(guard: GuardT) -> GuardT:
    """Install ``guard`` as an event filter of the whole application (it lives as its parent)."""
    app = QApplication.instance()
    if app is not None:
        app.installEventFilter(guard)
    return guard
