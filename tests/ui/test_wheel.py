"""The wheel scrolls the controls panel; a field changes by the wheel only once clicked."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QScrollArea

from app.engine.depth.engines import EngineOptions
from app.engine.session import Session
from app.ui.main_window import MainWindow
from app.ui.settings import Settings
from tests.ui.conftest import FakeSource


def _wheel(widget, down: bool = True) -> None:  # type: ignore[no-untyped-def]
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, -120 if down else 120),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_panel_not_the_setting_under_it(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = MainWindow(Session(EngineOptions(engine="sgbm")), Settings(), lambda spec: FakeSource(1))
    qtbot.addWidget(window)
    window.resize(1000, 500)  # short: the controls scroll
    window.show()
    qtbot.wait(50)
    combo = window.controls.mode
    area = combo.parentWidget()
    while not isinstance(area, QScrollArea):
        area = area.parentWidget()
    bar = area.verticalScrollBar()
    assert bar.maximum() > 0
    before_text, before_scroll = combo.currentText(), bar.value()
    _wheel(combo)
    assert combo.currentText() == before_text and bar.value() > before_scroll
    # a value picked from the list leaves the focus on the box: the next roll down the panel
    # switched the mode unseen (review); a combo box never takes the wheel in a panel
    combo.setFocus()
    qtbot.waitUntil(combo.hasFocus, timeout=2000)
    _wheel(combo, down=False)
    assert combo.currentText() == before_text
    # a clicked spin box or slider does take it
    spin = next(w for w in window.controls.findChildren(QAbstractSpinBox) if w.isEnabled() and w.isVisible())
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus, timeout=2000)
    value = spin.value()
    _wheel(spin, down=False)
    assert spin.value() != value


def test_the_wheel_over_the_calibration_panels_square_scrolls_the_panel(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A review scrolled the Calibration panel and the square size under the pointer went from
    0.0250 m to 0.0010 m (there the field had been clicked first: then the wheel is its own)."""
    window = MainWindow(Session(EngineOptions(engine="sgbm")), Settings(), lambda spec: FakeSource(1))
    qtbot.addWidget(window)
    window.resize(1000, 500)
    window.show()
    qtbot.wait(50)
    square = window.calibration.square
    before = square.value()
    for _ in range(5):
        _wheel(square)
        _wheel(square.lineEdit())  # the pointer is over the field's text, its child
    assert square.value() == before


def test_fields_polished_before_the_guard_lose_the_wheel_focus_when_it_is_installed(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The calibration panel's fields were polished while the window was built (a panel's size
    hint polishes them), before the guard was installed: they kept Qt's wheel focus, which
    focuses a field the wheel rolls over before any filter sees the wheel, and a review's wheel
    switched Board to ChArUco (review). The first window of a process had 26 such fields."""
    from PySide6.QtWidgets import QComboBox, QWidget

    from app.ui import wheel_guard

    holder = QWidget()
    qtbot.addWidget(holder)
    combo = QComboBox(holder)
    combo.ensurePolished()
    combo.setFocusPolicy(Qt.FocusPolicy.WheelFocus)  # as a field polished before any guard keeps it
    guard = wheel_guard.install(holder)
    assert combo.focusPolicy() == Qt.FocusPolicy.StrongFocus
    QApplication.instance().removeEventFilter(guard)
