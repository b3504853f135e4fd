"""Starting the application: settings, session, window, first source, self-photography."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer, qInstallMessageHandler
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from app import vocabulary
from app.engine.errors import UserError
from app.engine.session import Session
from app.ui.main_window import MainWindow, engine_options
from app.ui.settings import Settings, engine_values, load_settings


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
FRAMED_AFTER_MS = 300  # a window manager has framed a new window by then


def screen_free() -> tuple[int, int] | None:
    """The primary screen's free area (width, height), None without a screen."""
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return None
    free = screen.availableGeometry()
    return free.width(), free.height()


def window_size() -> tuple[int, int]:
    """The window's opening size: 1500 x 950, or the screen's free area where it is smaller (a
    1366 x 768 laptop clipped the calibration panel and the status bar at the fixed size)."""
    width, height = WINDOW_SIZE
    free = screen_free()
    return (width, height) if free is None else (min(width, free[0]), min(height, free[1]))


def fits_screen(width: int, height: int) -> bool:
    """Whether a window of this size fits the primary screen's free area (no screen: it does)."""
    free = screen_free()
    return free is None or (width <= free[0] and height <= free[1])


def create_window(source: str | None = None, settings_path: Path | None = None) -> MainWindow:
    settings, warning = load_settings(settings_path)
    session, problem = build_session(settings)
    if problem:  # every engine control shows the defaults that run (the runtime stayed "onnxruntime")
        settings = settings.model_copy(update=engine_values(Settings()))
    window = MainWindow(session, settings, None, settings_path)
    size = window_size()
    # the size the window had when it closed, when it still fits the screen (it opened at 1500 x 950
    # whatever the user had made it: review); else the opening size
    if not (window.geometry_restored and fits_screen(window.width(), window.height())):
        window.resize(*size)
        window.fit_width(size[0])  # a laptop's first opening: the side docks as tabs, the images wider
        # once shown and framed by the window manager: its title bar pushed the status bar off a
        # 1366 x 768 screen (review)
        QTimer.singleShot(FRAMED_AFTER_MS, window.keep_on_screen)
    if problem is None:
        window.apply_engine()  # again, now that engine-build progress can reach the status bar
    window.open_spec(source or session.demo_spec())
    # a settings file that was not read stays on screen until dismissed (as a status, the next
    # one, "opened ...", replaced it at once); a migrated one is news
    ignored = warning if warning and warning.startswith("ignored") else None
    errors = [m for m in (ignored, problem) if m]
    if errors:
        window.show_error("; ".join(errors))
    if warning and ignored is None:
        window.show_status(warning)
    return window


# Qt's own lines that say nothing to a user (the offscreen platform of `gui --screenshot` printed
# this before the one error line a failed run promises)
QUIET_QT_MESSAGES = frozenset({"This plugin does not support propagateSizeHints()"})


def _qt_message(_kind: object, _context: object, message: str) -> None:
    if message not in QUIET_QT_MESSAGES:
        print(message, file=sys.stderr)


def run_gui(
    source: str | None,
    screenshot: str | None = None,
    quit_after: float | None = None,
    calibration: str | None = None,
    calibration2: str | None = None,
) -> int:
    qInstallMessageHandler(_qt_message)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    if isinstance(app, QApplication):
        app.setApplicationName("Bi3D Studio")
        app.setDesktopFileName("bi3d-studio")  # matches packaging/bi3d-studio.desktop
        app.setWindowIcon(app_icon())
    window = create_window(source)
    if calibration:
        window.calibration.load(Path(calibration), Path(calibration2) if calibration2 else None)
    window.show()
    # a timed close has nobody to answer "stop the recording?": it stops it, as Quit would
    window.confirm_close_while_recording = not (screenshot or quit_after is not None)
    shot = {"taken": False}
    if screenshot:

        def shoot() -> None:
            if shot["taken"]:  # once: a video shows many first frames' worth of results
                return
            shot["taken"] = True
            window.grab().save(screenshot)
            print(f"wrote {screenshot}")
            window.close()  # with --quit-after too: that is the longest wait for the shot

        def failed() -> None:  # the source did not open: nothing will be shown, do not wait
            if not shot["taken"] and window.last_error and window.session.source is None:
                window.close()

        # wait for the first full depth (not the quick answer before it), then let the widgets
        # paint once more
        def shown(_result: object) -> None:
            if not window.controller.showing_quick:
                QTimer.singleShot(400, shoot)

        window.controller.resultShown.connect(shown)
        watch = QTimer(window)
        watch.timeout.connect(failed)
        watch.start(250)
    if quit_after is not None:
        QTimer.singleShot(int(quit_after * 1000), window.close)
    code = int(app.exec())
    if screenshot and not shot["taken"]:
        reason = window.last_error or "no depth was shown before the window closed"
        print(f"bi3d-studio gui: error: no screenshot saved: {reason}", file=sys.stderr)
        return code or 2
    return code
