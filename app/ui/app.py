"""Starting the application: settings, session, window, first source, self-photography."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from app import vocabulary
from app.engine.errors import UserError
from app.engine.session import Session
from app.ui.main_window import MainWindow, engine_options
from app.ui.settings import Settings, load_settings


def app_icon() -> QIcon:
    icon = QIcon()
    for png in Session.icon_files():
        icon.addFile(str(png))
    return icon


def build_session(settings: Settings) -> tuple[Session, str | None]:
    """A session from the saved settings, or from defaults (and why) when they do not work here."""
    try:
        return Session(engine_options(settings)), None
    except UserError as exc:
        problem = exc.worded(vocabulary.window_words)
        return Session(
            vocabulary.EngineOptions()
        ), f"saved engine settings did not load ({problem}); using defaults"


WINDOW_SIZE = (1500, 950)


def window_size() -> tuple[int, int]:
    """The window's opening size: 1500 x 950, or the screen's free area where it is smaller (a
    1366 x 768 laptop clipped the calibration panel and the status bar at the fixed size)."""
    width, height = WINDOW_SIZE
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return width, height
    free = screen.availableGeometry()
    return min(width, free.width()), min(height, free.height())


def create_window(source: str | None = None, settings_path: Path | None = None) -> MainWindow:
    settings, warning = load_settings(settings_path)
    session, problem = build_session(settings)
    if problem:
        settings = settings.model_copy(
            update={"engine": "auto", "weights": "", "device": "cpu", "precision": "fp32"}
        )
    window = MainWindow(session, settings, None, settings_path)
    window.resize(*window_size())
    if problem is None:
        window.apply_engine()  # again, now that engine-build progress can reach the status bar
    for message in (warning, problem):
        if message:
            window.show_status(message)
    window.open_spec(source or session.demo_spec())
    return window


def run_gui(source: str | None, screenshot: str | None = None, quit_after: float | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    if isinstance(app, QApplication):
        app.setApplicationName("Bi3D Studio")
        app.setDesktopFileName("bi3d-studio")  # matches packaging/bi3d-studio.desktop
        app.setWindowIcon(app_icon())
    window = create_window(source)
    window.show()
    if screenshot:

        def shoot() -> None:
            window.grab().save(screenshot)
            print(f"wrote {screenshot}")
            if quit_after is None:
                window.close()

        # wait for the first depth, then let the widgets paint once more
        window.controller.resultShown.connect(lambda _r: QTimer.singleShot(400, shoot))
    if quit_after is not None:
        QTimer.singleShot(int(quit_after * 1000), window.close)
    return int(app.exec())
