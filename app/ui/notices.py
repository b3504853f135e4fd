"""Feedback a user can see: a bar over the tabs below the images for what just happened, and a
REC badge.

Information (a snapshot saved, a source opened or ended) shows for a few seconds; an error
stays until the user dismisses it, so that nothing that went wrong passes unseen.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics, QMouseEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from app.engine.session import progress_text

INFO_MS = 6000
SAVED_MS = 20000  # a file written: its path is the only copy of where it went (it was gone in 3 s: review)
COLOURS = {"info": ("#e3f2fd", "#0d47a1"), "error": ("#ffebee", "#b71c1c")}


class NoticeBar(QWidget):
    """One line of feedback with a close button; ``info`` fades after a while, ``error`` stays."""

    dismissed = Signal()
    shown = Signal()  # its text changed and it is on screen: the window places it

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 4, 2)
        self.text = QLabel("")
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # paths can be copied
        self.text.setWordWrap(True)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(24)
        close.setToolTip("dismiss")
        close.clicked.connect(self.dismiss)
        row.addWidget(self.text, 1)
        row.addWidget(close)
        self.level = ""
        self._timer = QTimer(self, singleShot=True, interval=INFO_MS)
        self._timer.timeout.connect(self._expire)
        self.hide()

    def info(self, message: str, hold: bool = False) -> None:
        """``hold``: news to read (a file written, its path), shown for ``SAVED_MS``."""
        # an error on screen (or shown before the window is) is not pushed away by routine news
        if self.level == "error" and not self.isHidden():
            return
        self._show(message, "info")
        self._timer.start(SAVED_MS if hold else INFO_MS)

    def error(self, message: str) -> None:
        self._timer.stop()
        self._show(message, "error")

    def dismiss(self) -> None:
        self._timer.stop()
        self.level = ""
        self.hide()
        self.dismissed.emit()

    def _expire(self) -> None:
        if self.level == "info":
            self.dismiss()

    def _show(self, message: str, level: str) -> None:
        background, foreground = COLOURS[level]
        self.setStyleSheet(f"NoticeBar {{ background: {background}; }} QLabel {{ color: {foreground}; }}")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        prefix = "Error: " if level == "error" else ""
        self.text.setText(prefix + message)
        self.level = level
        self.show()
        self.raise_()
        self.shown.emit()


class RecBadge(QLabel):
    """``● REC 123 frames · 45.6 MB · 0:12`` while recording; hidden otherwise."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setStyleSheet("color: #c62828; font-weight: bold; padding: 0 6px;")
        self._started = 0.0
        self.hide()

    def start(self) -> None:
        self._started = time.monotonic()
        self.update_counts(0, 0)
        self.show()

    def update_counts(self, frames: int, size_bytes: int, free_bytes: int | None = None) -> None:
        """The counts so far; with ``free_bytes`` (the disk's), how long it lasts at this rate
        when that is under an hour (a camera at full rate fills gigabytes a minute)."""
        seconds = time.monotonic() - self._started
        self.setText(f"● REC {progress_text(frames, size_bytes, seconds, free_bytes)}")

    def stop(self) -> None:
        self.hide()


class NotesLabel(QLabel):
    """The status bar's engine line: what ran, then the frame's notes. As much as fits is shown
    (the notes ran past any screen: "(scene reache…" even at 1920 px); the tooltip lists every
    note on its own line, and a click opens them in a window whose text can be copied."""

    def __init__(self, max_width: int = 520) -> None:
        super().__init__("")
        self.setMaximumWidth(max_width)
        self.status = ""
        self.notes: list[str] = []
        self.dialog: QMessageBox | None = None

    def show_notes(self, status: str, notes: list[str]) -> None:
        if (status, notes) == (self.status, self.notes):
            return
        self.status, self.notes = status, list(notes)
        count = f"{len(notes)} note{'' if len(notes) == 1 else 's'}"
        line = status + (f" · {count}: {'; '.join(notes)}" if notes else "")
        width = self.maximumWidth() - 8
        self.setText(QFontMetrics(self.font()).elidedText(line, Qt.TextElideMode.ElideRight, width))
        self.setToolTip("\n".join([status, *notes]) + ("\n(click to read and copy them)" if notes else ""))
        self.setCursor(Qt.CursorShape.PointingHandCursor if notes else Qt.CursorShape.ArrowCursor)
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.setText(self._text())

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if self.notes and event.button() == Qt.MouseButton.LeftButton:
            self.open_notes()
        super().mousePressEvent(event)

    def open_notes(self) -> None:
        """The notes in a window of their own (not modal: the frames go on behind it)."""
        if self.dialog is None:
            self.dialog = QMessageBox(
                QMessageBox.Icon.Information, "Notes on the last frame", "", parent=self
            )
            self.dialog.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.dialog.setModal(False)
        self.dialog.setText(self._text())
        self.dialog.show()

    def _text(self) -> str:
        return "\n\n".join([self.status, *self.notes])
