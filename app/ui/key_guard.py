"""The playback keys (Space: pause, Right: step) leave a focused control its own keys.

The window's Space and Right shortcuts work wherever the focus is, so that the playback needs no
toolbar. They took the keys from the control being used: Right did not move a focused slider
(Min confidence went down with Left and never up again) and Space paused the video instead of
ticking the focused checkbox. A control with the focus that uses the key claims it first, as
Qt's shortcut override allows; elsewhere (an image, a button-less area) the shortcut works. A
list or a button used with the mouse keeps the focus too, but not Space: it opened the Mode list
instead of pausing.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFocusEvent, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QLineEdit,
)

from app.ui.range_slider import RangeSlider
from app.ui.wheel_guard import filter_application

# a focused control of these kinds keeps these keys
OWN_KEYS: tuple[tuple[type, frozenset[int]], ...] = (
    (QAbstractSlider, frozenset({Qt.Key.Key_Left, Qt.Key.Key_Right})),
    (RangeSlider, frozenset({Qt.Key.Key_Left, Qt.Key.Key_Right})),
    (QAbstractSpinBox, frozenset({Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Space})),
    (QLineEdit, frozenset({Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Space})),
    (QComboBox, frozenset({Qt.Key.Key_Space})),
    (QAbstractButton, frozenset({Qt.Key.Key_Space})),
)


# controls whose Space is not theirs when the mouse brought the focus to them: a Mode list chosen
# with the mouse kept the focus, and Space then opened the list instead of pausing (review)
CLICKED_CONTROLS: tuple[type, ...] = (QComboBox, QAbstractButton)
MOUSE_FOCUS = "bi3dMouseFocus"  # the property that marks such a control focused by the mouse
KEYBOARD_REASONS = (
    Qt.FocusReason.TabFocusReason,
    Qt.FocusReason.BacktabFocusReason,
    Qt.FocusReason.ShortcutFocusReason,
)


class KeyGuard(QObject):
    """An application event filter: a focused control's own key is not a window shortcut."""

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusIn and isinstance(event, QFocusEvent):
            # set by a click, cleared by Tab; kept when the focus comes back (a popup or dialog
            # closed, the window active again: code review)
            if isinstance(obj, CLICKED_CONTROLS) and event.reason() == Qt.FocusReason.MouseFocusReason:
                obj.setProperty(MOUSE_FOCUS, True)
            elif isinstance(obj, CLICKED_CONTROLS) and event.reason() in KEYBOARD_REASONS:
                obj.setProperty(MOUSE_FOCUS, False)
            return False
        if event.type() != QEvent.Type.ShortcutOverride or not isinstance(event, QKeyEvent):
            return False
        if event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            return False  # Ctrl+R and the like stay shortcuts
        key = event.key()
        if key == Qt.Key.Key_Space and isinstance(obj, CLICKED_CONTROLS) and obj.property(MOUSE_FOCUS):
            return False  # used with the mouse: Space pauses
        if any(isinstance(obj, kind) and key in keys for kind, keys in OWN_KEYS):
            event.accept()  # the key goes to the control, not to the shortcut
            return True
        return False


def install(parent: QObject) -> KeyGuard:
    """Filter the application's shortcut overrides for as long as ``parent`` lives."""
    return filter_application(KeyGuard(parent))
