"""The main window: source picker, image and depth views, controls, latency, work actions."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QEvent, QObject, QProcess, QSettings, QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProxyStyle,
    QScrollArea,
    QSlider,
    QSplitter,
    QStackedWidget,
    QStyle,
    QStyleHintReturn,
    QStyleOption,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app import vocabulary
from app.engine.errors import UserError
from app.engine.session import (
    NOT_STEREO_MARK,
    RUNTIME_FALLBACK,
    UNRECTIFIED_ADVICE,
    AdaptResult,
    FrameSource,
    Session,
    dropped_note,
    left_first,
    plural,
    right_partner,
)
from app.engine.types import Calibration, DepthResult, FrameResult, Mode, StereoPair

if TYPE_CHECKING:
    from app.engine.sources.recording import Recorder
from app.ui import key_guard, wheel_guard, work
from app.ui.adapt_runner import AdaptRunner
from app.ui.calibration_panel import CalibrationPanel
from app.ui.cloud_view import CloudView
from app.ui.controller import SessionController
from app.ui.controls import ANSWERING_AGAIN, NEXT_FITS, SWAP_LABEL, ControlsPanel
from app.ui.folders import FolderMemory
from app.ui.latency import LatencyPlot
from app.ui.log_slider import round_up
from app.ui.measure_panel import MeasurePanel
from app.ui.notices import NotesLabel, NoticeBar, RecBadge
from app.ui.render import ERROR_MAX_PX, DisplaySpec, Rendered, render
from app.ui.settings import Settings, engine_values, save_settings, settings_dir
from app.ui.views import DepthPane, ImagePane, link_views

SourceOpener = Callable[[str], FrameSource]


def engine_options(
    settings: Settings, base: vocabulary.EngineOptions | None = None
) -> vocabulary.EngineOptions:
    """The engine fields the window's controls set, over ``base`` (its other fields kept)."""
    return vocabulary.engine_options(engine_values(settings), base)


def _output_folder_hint(message: str) -> str:
    """An error that asks for another folder says where the window chooses one."""
    for asks in ("choose another folder", "choose another"):
        if asks in message:
            return message.replace(asks, "choose another with File > Output folder…", 1)
    return message


SWAPPED_WORDS = "look swapped"  # in the warning, and how it is found again to be cleared


# the engine's advice for a pair that is not rectified, in the window's words (the panel's buttons)
WINDOW_UNRECTIFIED_ADVICE = (
    "load the rig's calibration (the Calibration panel's Load…; one loaded: press 'Check the current "
    "pair' there), or estimate one with the panel's 'Self-rectify'"
)
# with a calibration of one's own in use, loading one is not the advice (review: it was)
WINDOW_UNRECTIFIED_LOADED = (
    "the calibration in use ({name}) does not rectify these frames: press 'Check the current pair' in "
    "the Calibration panel, load the right one, or re-fit it with 'Self-rectify'"
)


class _JumpToClick(QProxyStyle):
    """A seek bar whose click moves the handle to the frame under the mouse (a click paged by a
    tenth of the source, away from the frame aimed at), then drags from there."""

    def styleHint(
        self,
        hint: QStyle.StyleHint,
        option: QStyleOption | None = None,
        widget: QWidget | None = None,
        returnData: QStyleHintReturn | None = None,
    ) -> int:
        if hint == QStyle.StyleHint.SH_Slider_AbsoluteSetButtons:
            return Qt.MouseButton.LeftButton.value
        return super().styleHint(hint, option, widget, returnData)


WIDE_LAYOUT_PX = 1500  # narrower first openings tabify the side docks (``MainWindow.fit_width``)


COMPACT_HEIGHT = 700  # px: a window shorter than this gives the images the room first
LATENCY_MIN_PX = 80
TAB_PANE_MIN_PX = 90
MIN_WINDOW = (800, 500)  # smaller, the panes overlapped and the controls were cut off

PLAY_AGAIN = "Play starts it again"  # the end's news: taken back when Play does

SLOWER_THAN_REAL = 0.9  # playback below this share of the source's own speed is said on the seek bar
PLAYED_FOR_SPEED = 4  # frames in a row before the speed is said
NEW_SOURCE_DEPTH = "depth of the new source: computing…"
RECOMPUTING = "computing the new settings…"  # before the title of an answer to the settings before
RAISE_MARGIN = 1.3  # a budget raised to the fastest answer goes this much above its prediction


STILL_PLAYBACK = "a still pair"  # Pause, Step and Loop's tooltip when greyed: "...: nothing to play"
REC_BADGE_MS = 1000  # the REC badge's counts (and the quit question's) follow the recording this often
SEEK_TIP = "seek: drag to a frame (files, datasets, recordings, videos)"
SEEK_RECORDING_TIP = (
    "seek: stop recording (Ctrl+R) first; a recording keeps the frames in the order they play"
)
PAUSE_KEY = "Space"  # pauses and plays again (the toolbar's button and the Playback menu)


def fitted(
    free: tuple[int, int, int, int], corner: tuple[int, int], size: tuple[int, int], extra: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The size (without its frame) and frame corner that put a window of ``size`` whose frame adds
    ``extra`` (width, height) inside the ``free`` area (x, y, width, height), moved as little as
    possible."""
    x0, y0, width, height = free
    w, h = min(size[0], width - extra[0]), min(size[1], height - extra[1])
    x = min(max(corner[0], x0), x0 + width - (w + extra[0]))
    y = min(max(corner[1], y0), y0 + height - (h + extra[1]))
    return (w, h), (x, y)


class MainWindow(QMainWindow):
    def __init__(
        self,
        session: Session,
        settings: Settings,
        open_source: SourceOpener | None = None,
        settings_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.setWindowTitle("Bi3D Studio")
        self.setAcceptDrops(True)
        self.session = session
        self.settings = settings
        self.folders = FolderMemory(settings)  # where every file dialog of the window starts
        self.settings_path = settings_path
        self._resetting = False  # View > Reset settings: closing keeps the defaults written
        # closing while recording asks first (it closed at once, unsaid: review); off for timed
        # closes (gui --quit-after, --screenshot), which nobody is there to answer
        self.confirm_close_while_recording = True
        self.confirm_reset: Callable[[], bool] = self._confirm_reset  # tests answer for the user
        self.restart: Callable[[], None] = self._restart
        self._open_source = open_source or session.open_source
        self._swap_warned = False  # the swapped-images warning shows once a stream
        self._unrectified_warned: str | None = None  # the unrectified-pair warning shown this stream
        self._identical_warned = ""  # the warning that both images are the same, while it holds
        self._exposure_warned = ""  # the warning that one camera is exposed darker, while it holds
        self._input_said: set[str] = set()  # the input's notes said once this source (colours, clipping)
        self._error_of_source = False  # the error on screen came while a source ran
        self._set_aside_warned: str | None = None  # a set-aside rig's error, of this source only
        self._ended = False  # the source gave its last frame (Play starts it again)
        self._flow_drawn = False  # the flow pane shows the last frame's flow
        self._flow_failed = ""  # why the chosen flow method could not start (nvof without CUDA)
        self._layout_warned = False  # the wrong-layout warning, once a source
        session.set_swap_views(settings.swap_views)
        self.controls = ControlsPanel(settings, session.flow_parameters)
        self.controller = SessionController(session, self, self.controls.request, self.display_spec)
        self.adapt_runner = AdaptRunner(self, self._adapted, self.show_error, self.show_status)
        # the window's questions, replaceable in tests: where to write the adapted model, whether to load it
        self.ask_adapt_path: Callable[[], str] = self._ask_adapt_path
        self.ask_load_adapted: Callable[[AdaptResult], bool] = self._ask_load_adapted
        self.ask_output_folder: Callable[[], str] = self._ask_output_folder
        if settings.output_folder and Path(settings.output_folder).is_dir():
            session.output_root = Path(settings.output_folder)
        self._build_views()
        self._build_docks()
        self._build_menus()
        self._wire()
        self.last_error = ""
        self._engine_error = ""  # the engine settings' last error, gone when they next apply
        self._model_error = ""  # the last model file that failed to load, while its error may be shown
        self._engine_in_use = engine_values(settings)  # what the controls go back to on an error
        # what the engine in use makes moot (SGBM side by side under SGBM), whichever way it changes
        # (Engine, File > Load model); set_engine runs on this thread
        self.controls.set_running_engine(self.session.engine.name)
        self.session.events.engine_changed.connect(
            lambda _reason: self.controls.set_running_engine(self.session.engine.name)
        )
        if settings.flow != "off":  # the saved method: its combo said "auto" while flow stayed off
            self._apply_flow(settings.flow)
        self._restore_layout()
        self._wheel_guard = wheel_guard.install(self)  # the wheel scrolls panels, not their fields
        self._key_guard = key_guard.install(self)  # Space and Right stay a focused control's own

    # ---- construction ---------------------------------------------------------------------
    def _build_views(self) -> None:
        self.left_view = ImagePane("Left")
        self.depth_view = DepthPane("Depth")
        self.right_view = ImagePane("Right")
        self.baseline_view = DepthPane("SGBM")
        self.flow_view = ImagePane("Optical flow")
        self.extra = QTabWidget()
        self.extra.addTab(self.right_view, "Right")
        self.compare_tab = self._build_compare()
        self.extra.addTab(self.compare_tab, "Errors")
        self.extra.addTab(self.flow_view, "Flow")
        self.cloud_view = CloudView()
        self.extra.addTab(self.cloud_view, "3D")
        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.setSpacing(2)
        # over the tabs below the images, not above them: shown and dismissed, it had pushed every
        # image 30-40 px down and back, moving a hover or measurement target under the mouse (review)
        self.notices = NoticeBar(central)
        self.notices.shown.connect(self._place_notices)
        self.top = self._build_top()
        self.top.setCurrentIndex(1 if self.settings.compare else 0)
        # the images above, the tabs (right image, errors, flow, 3D) below: the line between them
        # drags (a fixed 2:1 left the 3D view 115 px tall on a 1366 x 768 screen)
        self.central_split = QSplitter(Qt.Orientation.Vertical)
        self.central_split.setObjectName("central")
        self.central_split.setChildrenCollapsible(False)
        self.central_split.addWidget(self.top)
        self.central_split.addWidget(self.extra)
        self.central_split.setStretchFactor(0, 2)
        self.central_split.setStretchFactor(1, 1)
        outer.addWidget(self.central_split, 1)
        self.central_split.splitterMoved.connect(lambda _pos, _index: self._place_notices())
        self.setCentralWidget(central)
        central.installEventFilter(self)  # a dock dragged wider resizes it without the window
        self.setMinimumSize(*MIN_WINDOW)
        # the tabs below the images may shrink further than the images themselves (a short window)
        for pane in (self.right_view, self.error_main, self.error_base, self.flow_view):
            pane.setMinimumHeight(TAB_PANE_MIN_PX)
        self.cloud_view.setMinimumHeight(TAB_PANE_MIN_PX)
        self.readout = QLabel("")
        self.engine_label = NotesLabel(520)  # every note in its tooltip, and a window on a click
        self.rec_badge = RecBadge()
        self.statusBar().addWidget(self.readout, 1)
        self.statusBar().addPermanentWidget(self.rec_badge)
        self.statusBar().addPermanentWidget(self.engine_label)
        self._hover_at: tuple[str, int, int] | None = None  # pane, x, y of the last hover
        self._budget_retried = False  # a held frame's answer over the budget was answered again
        self._split_before: list[int] | None = None  # the split's sizes before Large tabs
        self._timed: FrameResult | None = None  # the last result whose timings the latency plot has
        # (frame, wall clock, source time) of the last frames played in a row: the playback's speed
        self._played: deque[tuple[int, float, float]] = deque(maxlen=10)
        self._rec_timer = QTimer(self, interval=REC_BADGE_MS)
        self._rec_timer.timeout.connect(self._update_rec_badge)
        self.depth_view.set_colormap(self.settings.colormap)
        self.baseline_view.set_colormap(self.settings.colormap)

    def _build_compare(self) -> QWidget:
        """The errors against ground truth of the main engine and of SGBM, side by side."""
        self.error_main = DepthPane("Error")
        self.error_base = DepthPane("Error")
        errors = QWidget()
        row = QHBoxLayout(errors)
        row.setContentsMargins(0, 0, 0, 0)
        for pane in (self.error_main, self.error_base):
            pane.set_colormap("magma")
            pane.set_title("no ground truth for this source")
            row.addWidget(pane)
        return errors

    def _build_top(self) -> QStackedWidget:
        """Left image and depth; when comparing, the main engine and SGBM at equal size, their
        zoom, pan and hover linked (with the error views below)."""
        self.compare_main = DepthPane("Depth")
        top = QStackedWidget()
        for a, b in ((self.left_view, self.depth_view), (self.compare_main, self.baseline_view)):
            page = QWidget()
            row = QHBoxLayout(page)
            row.setContentsMargins(0, 0, 0, 0)
            row.addWidget(a)
            row.addWidget(b)
            top.addWidget(page)
        link_views([self.compare_main, self.baseline_view, self.error_main, self.error_base])
        return top

    def _build_docks(self) -> None:
        scroll = QScrollArea()
        scroll.setWidget(self.controls)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # labels wrap instead
        scroll.setMinimumWidth(self.controls.sizeHint().width() + 24)
        controls_dock = QDockWidget("Controls", self)
        controls_dock.setObjectName("controls")
        controls_dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, controls_dock)
        self.calibration = CalibrationPanel(self.controller, self.folders)
        calibration_dock = QDockWidget("Calibration", self)
        calibration_dock.setObjectName("calibration")
        calibration_dock.setWidget(_scrolling(self.calibration))
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, calibration_dock)
        self.measure = MeasurePanel(self.compare_main if self.settings.compare else self.depth_view)
        measure_dock = QDockWidget("Measure", self)
        measure_dock.setObjectName("measure")
        measure_dock.setWidget(_scrolling(self.measure))
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, measure_dock)
        self.tabifyDockWidget(calibration_dock, measure_dock)  # one at a time: the images keep the room
        calibration_dock.raise_()
        self.resizeDocks([controls_dock, calibration_dock], [290, 330], Qt.Orientation.Horizontal)
        self.latency = LatencyPlot()
        dock = QDockWidget("Latency", self)
        self.latency_dock = dock
        dock.setObjectName("latency")
        dock.setWidget(self.latency)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        self.resizeDocks([dock], [150], Qt.Orientation.Vertical)  # the images get the room
        self.docks = [controls_dock, calibration_dock, measure_dock, dock]  # the View menu shows them

    def _build_menus(self) -> None:
        file = self.menuBar().addMenu("&File")
        for text, slot, key in [
            ("Open image pair…", self._pick_pair, QKeySequence.StandardKey.Open),
            ("Open folder or dataset…", self._pick_folder, None),
            ("Open stereo video…", self._pick_video, None),
            ("Open camera…", self._pick_camera, None),
            ("Synthetic demo", lambda: self.open_spec("synthetic"), None),
            ("Demo pair", lambda: self.open_spec(self.session.demo_spec()), None),
        ]:
            action = QAction(text, self)
            action.triggered.connect(slot)
            if key is not None:
                action.setShortcut(key)
            file.addAction(action)
        file.addSeparator()
        self.snapshot_action = QAction("Snapshot", self, shortcut=QKeySequence("Ctrl+S"))
        self.snapshot_action.triggered.connect(self.snapshot)
        self.record_action = QAction("Record input", self, checkable=True, shortcut=QKeySequence("Ctrl+R"))
        self.record_action.setToolTip("record every captured frame pair, as a folder you can open again")
        self.record_action.toggled.connect(self.toggle_recording)
        self.ply_action = QAction("Export point cloud (PLY)…", self)
        self.ply_action.triggered.connect(self.export_ply)
        self.output_action = QAction("Output folder…", self)
        self.output_action.setToolTip("where snapshots, recordings and point clouds go")
        self.output_action.triggered.connect(self.choose_output_folder)
        for action in (self.snapshot_action, self.record_action, self.ply_action, self.output_action):
            file.addAction(action)
        file.addSeparator()
        self.load_model_action = QAction("Load model file…", self)
        self.load_model_action.triggered.connect(self._pick_model)
        self.adapt_action = QAction("Adapt model to this recording…", self)
        self.adapt_action.setToolTip(
            "fine-tune the depth model on the current source's footage (no ground truth needed)"
        )
        self.adapt_action.triggered.connect(self.adapt_to_source)
        self.load_calibration_action = QAction("Load calibration…", self)
        self.load_calibration_action.triggered.connect(self._load_calibration)
        file.addAction(self.load_calibration_action)
        file.addAction(self.load_model_action)
        file.addAction(self.adapt_action)
        file.addSeparator()
        playback = self._build_playback()
        quit_action = QAction("Quit", self, shortcut=QKeySequence(QKeySequence.StandardKey.Quit))
        quit_action.triggered.connect(self.close)
        file.addAction(quit_action)
        # a closed panel comes back from here (the dock's close button left no way back but the
        # right-click menu of a toolbar, which nothing pointed to)
        self.view_menu = self.menuBar().addMenu("&View")
        # a zoom had no way back but opening the source again (no menu on the panes)
        self.fit_action = QAction("Fit images", self, shortcut=QKeySequence("F"))
        self.fit_action.setToolTip("show every image whole again after zooming or panning")
        self.fit_action.triggered.connect(self.fit_images)
        self.view_menu.addAction(self.fit_action)
        # the 3D view got 130 px of height at 1366 x 768, and nothing said the line above the tabs
        # drags (review): the tabs below the images take three quarters of the height and back
        self.large_tabs_action = QAction("Large tabs below the images", self, shortcut=QKeySequence("T"))
        self.large_tabs_action.setCheckable(True)
        self.large_tabs_action.setToolTip("the Right, Errors, Flow and 3D tabs take most of the height")
        self.large_tabs_action.toggled.connect(self._large_tabs)
        self.view_menu.addAction(self.large_tabs_action)
        self.full_screen_action = QAction("Full screen", self, shortcut=QKeySequence("F11"))
        self.full_screen_action.setCheckable(True)
        self.full_screen_action.toggled.connect(lambda on: self.showFullScreen() if on else self.showNormal())
        self.view_menu.addAction(self.full_screen_action)
        # the status bar's notes are cut to its width, and only a click on them opened them whole,
        # which nothing pointed to (review: "no way to read them")
        self.notes_action = QAction("Notes on the last frame", self, shortcut=QKeySequence("N"))
        self.notes_action.setToolTip("every note of the frame shown, in a window whose text can be copied")
        self.notes_action.triggered.connect(self._open_notes)
        self.view_menu.addAction(self.notes_action)
        self.view_menu.addSeparator()
        for action in (*(d.toggleViewAction() for d in self.docks), playback.toggleViewAction()):
            self.view_menu.addAction(action)
        self.view_menu.addSeparator()
        # the settings and layout carried over from run to run with no way back (review)
        self.reset_action = QAction("Reset settings to defaults…", self)
        self.reset_action.setToolTip(
            "every setting and the window layout as at the first start; the app restarts"
        )
        self.reset_action.triggered.connect(self.reset_settings)
        self.view_menu.addAction(self.reset_action)
        # Space and → were in no menu: only the playback bar's tooltips named them (review)
        self.playback_menu = self.menuBar().addMenu("&Playback")
        # the toolbar's checkable Pause read "✓ Play" in a menu once paused, as if playing (review):
        # the menu's entry says what it does, with the key, and toggles the same action
        self.pause_menu_action = QAction(f"Pause\t{PAUSE_KEY}", self)
        self.pause_menu_action.triggered.connect(self.pause_action.toggle)
        for action in (self.pause_menu_action, self.step_action, self.loop_action, self.record_action):
            self.playback_menu.addAction(action)

    def _large_tabs(self, on: bool) -> None:
        """The tabs below the images take three quarters of the split (``on``), or the sizes they
        had before."""
        sizes = self.central_split.sizes()
        total = sum(sizes)
        if on:
            self._split_before = sizes
            self.central_split.setSizes([total // 4, total - total // 4])
        else:
            before = self._split_before or [total - total // 3, total // 3]
            self.central_split.setSizes(before)
        self._place_notices()

    def fit_images(self) -> None:
        """Every image pane shows its whole image again (View > Fit images, F)."""
        for pane in (
            self.left_view, self.depth_view, self.right_view, self.compare_main, self.baseline_view,
            self.error_main, self.error_base, self.flow_view,
        ):  # fmt: skip
            pane.fit()

    def keep_on_screen(self) -> None:
        """The whole window on its screen's free area, its title bar and borders included. The
        opening size is the free area's, but a window manager adds its frame outside it: on a 1366
        x 768 screen the status bar (hover readouts, notes, the REC badge) was 25 px below the
        screen (review). A maximised or full-screen window is left as it is."""
        screen = self.screen()
        if screen is None or self.isMaximized() or self.isFullScreen():
            return
        frame, inner = self.frameGeometry(), self.geometry()
        extra = (frame.width() - inner.width(), frame.height() - inner.height())
        free = screen.availableGeometry()
        size, corner = fitted(
            (free.x(), free.y(), free.width(), free.height()),
            (frame.x(), frame.y()),
            (inner.width(), inner.height()),
            extra,
        )
        if size != (inner.width(), inner.height()):
            self.resize(*size)
        if corner != (frame.x(), frame.y()):
            self.move(*corner)

    def fit_width(self, width: int) -> None:
        """A first opening narrower than ``WIDE_LAYOUT_PX`` (a laptop) puts Calibration and Measure
        as tabs beside Controls: the three docks side by side left the images about 300 px wide at
        1366 px. A layout the user arranged and that was saved is left as it is."""
        if self.layout_restored or width >= WIDE_LAYOUT_PX:
            return
        controls, calibration, measure, latency = self.docks
        for dock in (calibration, measure):
            self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
            self.tabifyDockWidget(controls, dock)
        controls.raise_()
        self.resizeDocks([latency], [110], Qt.Orientation.Vertical)

    def _load_calibration(self) -> None:
        self._show_dock(self.calibration)  # where the loaded file and its check are shown
        self.calibration.pick_file()

    def _calibration_changed(self, calibration: Calibration | None, _rig: object) -> None:
        self.controls.set_calibration(calibration)
        if calibration is not None and self._set_aside_warned:  # a calibration in use supersedes it
            self.clear_error(self._set_aside_warned)
            self._set_aside_warned = None
        if self._unrectified_warned is not None:  # its advice was for the calibration before: the
            self.clear_error(self._unrectified_warned)  # next frame says it afresh if it still holds
            self._unrectified_warned = None

    def _show_dock(self, panel: QWidget) -> None:
        for dock in self.docks:
            if dock.isAncestorOf(panel):
                dock.show()
                dock.raise_()

    def _wire(self) -> None:
        c = self.controls
        c.requestChanged.connect(self.controller.request_changed)
        c.requestChanged.connect(self._new_budget_try)
        c.engineChanged.connect(self.apply_engine)
        c.compareChanged.connect(self._apply_compare)
        c.swapChanged.connect(self._apply_swap)
        c.displayChanged.connect(self._redraw)
        c.flowChanged.connect(self._apply_flow)
        self.controller.sourceChanged.connect(self._source_changed)
        self.controller.sourceEnded.connect(self._source_ended)
        self.controller.progress.connect(self.show_status)
        self.calibration.linesReady.connect(self._show_lines)
        self.calibration.calibrationChanged.connect(self._calibration_changed)
        for name, pane in (
            ("left", self.left_view), ("depth", self.depth_view), ("right", self.right_view),
            ("baseline", self.baseline_view), ("depth", self.compare_main), ("depth", self.error_main),
            ("baseline", self.error_base),
        ):  # fmt: skip
            pane.hovered.connect(lambda x, y, name=name: self._hover(name, x, y))

    # ---- sources ---------------------------------------------------------------------------
    def open_spec(self, spec: str) -> None:
        """Open a source described by a spec (path, 'LEFT,RIGHT', 'camera:0', 'synthetic')."""
        self.controller.open_source(lambda: self._open_source(spec), spec)

    def _pick_pair(self) -> None:
        images = "Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.pfm);;All (*)"
        files, _ = QFileDialog.getOpenFileNames(
            self, "Left and right images (or the left one)", self.folders.start(), images
        )
        if files:
            self.folders.chose(files[0])
        if len(files) == 1:  # the left view: ask for the right one beside it
            try:  # a file that is no image was refused only after the right view was chosen
                self.session.check_image(files[0])
            except UserError as exc:
                self.show_error(exc.worded(vocabulary.window_words))
                return
            # the right view beside it named alike is chosen already (aloeL.jpg -> aloeR.jpg); the
            # left one chosen again gave a pair of one image, whose depth reads 0 px (review)
            partner = right_partner(files[0])
            start = str(partner) if partner is not None else str(Path(files[0]).parent)
            right, _ = QFileDialog.getOpenFileName(self, "Right image", start, images)
            if right and Path(right).resolve() == Path(files[0]).resolve():
                self.show_error(
                    f"{Path(right).name} was chosen as both views; choose the right camera's image"
                )
            elif right:
                self.open_spec(f"{files[0]},{right}")
        elif len(files) == 2:
            self.open_spec(",".join(left_first(*files)))
        elif files:
            self.show_error("choose two images, the left and the right view, or the left one alone")

    def _pick_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Folder of pairs, dataset or recording", self.folders.start()
        )
        if folder:
            self.folders.chose(folder, folder=True)
            self.open_spec(folder)

    def _pick_video(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Side-by-side stereo video",
            self.folders.start(),
            "Video (*.mp4 *.avi *.mkv *.mov);;All (*)",
        )
        if path:
            self.folders.chose(path)
            self.open_spec(path)

    def _pick_camera(self) -> None:
        text, ok = QInputDialog.getText(
            self,
            "Camera",
            "Devices (e.g. 0,1 for two cameras, 0 for side-by-side),\n"
            "optionally ?width=1280&&height=720&&fps=30",  # && shows one & (a lone & marks a shortcut)
            text="0,1",
        )
        if ok and text.strip():
            self.open_spec(f"camera:{text.strip()}")

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            self.open_spec(",".join(left_first(*paths)) if len(paths) == 2 else paths[0])

    def _source_changed(self, description: str) -> None:
        """A new source: nothing derived from the previous one stays on screen."""
        unswapped = self.settings.swap_views and description != self.settings.source
        if unswapped:  # the last source's cameras were the wrong way round, not this one's
            self.controls.swap_views.setChecked(False)
        self.settings.source = description
        # an error of the last source, or of a source that failed to open, stood over this one's
        # run and hid its news (a recording's path): review; the engine's error still holds
        if self.notices.level == "error" and self._error_of_source and self.last_error != self._engine_error:
            self.notices.dismiss()
        self.left_view.show_lines(None)
        self.left_view.show_tint(None)
        self.latency.reset()
        # "17 planes, took 98 ms; searched 0-48 px" and its notes were the last source's
        self.controls.budget_label.setText("")
        self.engine_label.show_notes("", [])
        self.controls.set_calibration(None)
        self.calibration.note_source_calibration(None)
        self.calibration.reset_source(description)
        self._hover_at = None
        self.measure.reset()
        self.cloud_view.reset()
        self._swap_warned = False
        for warned in (self._unrectified_warned, self._set_aside_warned):  # of the last source
            if warned is not None:
                self.clear_error(warned)
        self._unrectified_warned = self._set_aside_warned = None
        if self._identical_warned:
            self.clear_error(self._identical_warned)
            self._identical_warned = ""
        self._exposure_warned = ""  # of the last source (its error went with it)
        self._input_said = set()
        self._layout_warned = False
        # the last source's depth stood under its own title for seconds beside the new images (review)
        for pane in (self.depth_view, self.compare_main, self.baseline_view):
            pane.clear_image()
            pane.set_title(NEW_SOURCE_DEPTH)
        # the last source's error maps and scores stood beside the new images (review)
        for pane in (self.error_main, self.error_base):
            pane.clear_image()
            pane.set_title(NEW_SOURCE_DEPTH)
        self.fit_images()  # a new source is shown whole, whatever the last one was zoomed to
        self.readout.setText("")
        self._ended = False
        self.pause_action.setChecked(False)
        self._playback_for(self.session.source)
        self.seek_label.setMinimumWidth(0)  # the last source's widest text is not this one's
        self._update_position()
        describe = getattr(self.session.source, "describe", None)
        what = describe() if callable(describe) else ""  # how it was opened: a video layout, a camera mode
        opened = f"opened {description}" + (f": {what}" if what and what != description else "")
        self.show_status(opened + (f' ("{SWAP_LABEL}" was for the last source: off)' if unswapped else ""))
        self.setWindowTitle(f"Bi3D Studio — {short_description(description)}")

    def _playback_for(self, source: object) -> None:
        """Pause, Step and Loop greyed for one still pair: it has nothing to play (a Pause button
        stood live under a still pair: review)."""
        still = getattr(source, "frame_count", None) == 1
        for action, tip in self._playback_tips.items():
            action.setEnabled(not still)
            action.setToolTip(f"{STILL_PLAYBACK}: nothing to play" if still else tip)
        self.pause_menu_action.setEnabled(not still)

    def _source_ended(self) -> None:
        if self.loop_action.isChecked() and self.settings.source:
            # the recording ends first: a recording refuses a seek back to the start (code review)
            self._end_recording_with_the_source()
            self._from_the_start()
            return
        self._ended = True
        self._show_paused(True)  # the button offers Play, which starts it again
        self.latency.mark_ended()
        cut = self.session.cut_short_note()
        if cut is not None:  # not a whole file's end: said as a problem, not as news
            self.show_error(cut[0].upper() + cut[1:])
        else:
            self.show_status(f"source ended: its last frame stays live for every control; {PLAY_AGAIN}")
        self._end_recording_with_the_source()  # said last: where the recording went

    def _end_recording_with_the_source(self) -> None:
        """A file source's recording ends with its last frame: over Loop, 6 pairs became 194
        recorded frames and more, the same ones again (review). Said last, over the end's news."""
        recorder = self.session.recorder
        if recorder is None or not self.record_action.isChecked():
            return
        self.record_action.setChecked(False)  # says "recording stopped: N frames in FOLDER"
        if recorder.frames_written:
            again = "; Loop plays on" if self.loop_action.isChecked() else ""
            self.show_status(
                f"recording stopped at the end of the source: {plural(recorder.frames_written, 'frame')} "
                f"in {recorder.folder}{again}",
                hold=True,  # it names the folder (5 s was too short to read it: review)
            )

    def _recorded_into(self, folder: Path) -> None:
        """The next file dialog starts beside a recording just made: File > Open folder started in
        the last video's folder, and the recording had to be found under Documents (review)."""
        if folder.is_dir():
            self.folders.chose(str(folder))

    def _from_the_start(self) -> None:
        self._ended = False
        if getattr(self.session.source, "seekable", False):
            self.controller.seek(0)  # from its start again (a recording of it ended with its last frame)
        elif self.settings.source:
            self.open_spec(self.settings.source)

    def _step(self) -> None:
        if self._ended:  # Step at the end did nothing, unsaid
            self.show_status(f"the source has ended: {PLAY_AGAIN}, or drag the seek bar")
            return
        if not self.pause_action.isChecked() and getattr(self.session.source, "seekable", False):
            self.pause_action.setChecked(True)  # Step while playing did nothing: it pauses, then steps
        self.controller.step()

    # ---- playback -------------------------------------------------------------------------
    def _build_playback(self) -> QToolBar:
        bar = QToolBar("Playback", self)
        bar.setObjectName("playback")
        self.pause_action = QAction("Pause", self, checkable=True, shortcut=QKeySequence(PAUSE_KEY))
        self.pause_action.setToolTip("pause a video, camera or recording; the frame shown stays live")
        self.pause_action.toggled.connect(self._pause)
        self.step_action = QAction("Step", self, shortcut=QKeySequence("Right"))
        self.step_action.setToolTip(
            "the next frame (a playing video, recording or folder pauses first); a live source (a camera, "
            "the synthetic scene) runs on: its newest"
        )
        self.step_action.triggered.connect(self._step)
        self.loop_action = QAction("Loop", self, checkable=True)
        self.loop_action.setToolTip("start a finite source again when it ends")
        self._playback_tips = {
            a: a.toolTip() for a in (self.pause_action, self.step_action, self.loop_action)
        }
        for action in (self.pause_action, self.step_action, self.loop_action):
            bar.addAction(action)
            self.addAction(action)  # its key works with the toolbar hidden too (Space, Right)
        button = bar.widgetForAction(self.pause_action)
        if button is not None:  # as wide as its wider label: Play and Pause do not move Step and Loop
            widths = [button.fontMetrics().horizontalAdvance(text) for text in ("Pause", "Play")]
            button.setMinimumWidth(button.sizeHint().width() + max(widths) - widths[0])
        bar.addSeparator()
        bar.addAction(self.record_action)  # beside the playback, as a viewer's record button is
        self.seek_bar = QSlider(Qt.Orientation.Horizontal)
        self._seek_style = _JumpToClick()  # kept: the slider does not own a style it is given
        self.seek_bar.setStyle(self._seek_style)
        self.seek_bar.setToolTip(SEEK_TIP)
        self.seek_bar.setMinimumWidth(200)
        self.seek_bar.setEnabled(False)
        self.seek_bar.sliderReleased.connect(lambda: self.controller.seek(self.seek_bar.value()))
        # a click on the groove, the keys and the wheel move the handle too: they seek as well (the
        # label named a frame that was not shown); a drag seeks once, where it is released
        self.seek_bar.actionTriggered.connect(self._seek_action)
        self.seek_bar.valueChanged.connect(self._seek_label_text)
        self.seek_label = QLabel("")
        bar.addWidget(self.seek_bar)
        bar.addWidget(self.seek_label)
        self.addToolBar(bar)
        return bar

    def _seek_action(self, action: int) -> None:
        if action in (QSlider.SliderAction.SliderMove.value, QSlider.SliderAction.SliderNoAction.value):
            return
        # the action is announced before the handle moves: seek to where it lands
        QTimer.singleShot(0, lambda: self.controller.seek(self.seek_bar.value()))

    def _seek_label_text(self, index: int) -> None:
        _, count, _ = self.session.position()
        if not count:
            return
        source = self.session.source
        if not getattr(source, "has_times", False):  # a folder of pairs: its frames carry no times
            # ("frame 7 / 8 · 6.00 s" made up 1 s a frame: review)
            text = f" frame {index + 1} / {count} "
        else:
            # time into the source: a recording's clock (a camera's, or a restarted one) starts anywhere
            stamp = source.timestamp_of(index) - source.timestamp_of(0)  # type: ignore[union-attr]
            speed = self._playback_speed(index)
            slower = f" · {speed:.2g}x real time" if speed is not None and speed < SLOWER_THAN_REAL else ""
            text = f" frame {index + 1} / {count} · {stamp:.2f} s{slower} "
            # room for the speed from the first frame: the seek bar's end moved 110 px as
            # "· 0.78x real time" first came (review)
            end = source.timestamp_of(count - 1) - source.timestamp_of(0)  # type: ignore[union-attr]
            widest = f" frame {count} / {count} · {end:.2f} s · 0.00x real time "
            label = self.seek_label
            label.setMinimumWidth(
                max(label.minimumWidth(), label.fontMetrics().horizontalAdvance(widest) + 8)
            )
        self.seek_label.setText(text)
        # as wide as its widest text of this source: the seek bar's end moved 110 px frame by
        # frame as "· 0.22x real time" came and went (re-check)
        label = self.seek_label
        label.setMinimumWidth(max(label.minimumWidth(), label.sizeHint().width()))

    def _playback_speed(self, index: int) -> float | None:
        """Seconds of the source played per second over the last frames shown in a row, or None
        (held, too few yet, or a source whose frames carry no times). A video played at the depth's
        pace ran at a third of its speed, unsaid (review)."""
        source, marks = self.session.source, self._played
        if source is None or not getattr(source, "has_times", False) or self.controller.holds_still():
            marks.clear()
            return None
        if marks and index not in (marks[-1][0], marks[-1][0] + 1):  # a seek, a skipped frame: afresh
            marks.clear()
        if not marks or marks[-1][0] != index:
            marks.append((index, time.monotonic(), source.timestamp_of(index)))  # type: ignore[attr-defined]
        if len(marks) < PLAYED_FOR_SPEED:
            return None
        (_, wall0, stamp0), (_, wall1, stamp1) = marks[0], marks[-1]
        return (stamp1 - stamp0) / (wall1 - wall0) if wall1 > wall0 else None

    def _update_position(self) -> None:
        number, count, _ = self.session.position()
        # a recording keeps frames in the order they play: a seek back recorded them twice (review)
        recording = self.session.recorder is not None
        self.seek_bar.setEnabled(bool(count) and not recording)
        self.seek_bar.setToolTip(SEEK_RECORDING_TIP if recording else SEEK_TIP)
        if not count:  # no end to seek in (the synthetic scene, a camera): which frame, at least
            self.seek_label.setText(f" frame {number + 1} " if number >= 0 else "")
            return
        if self.seek_bar.maximum() != count - 1:
            self.seek_bar.setRange(0, count - 1)
        if not self.seek_bar.isSliderDown():
            self.seek_bar.setValue(max(number, 0))
            self._seek_label_text(max(number, 0))

    def _show_paused(self, on: bool) -> None:
        """The Pause button as paused (it offers Play) or playing, without pausing anything."""
        with QSignalBlocker(self.pause_action):
            self.pause_action.setChecked(on)
        self._pause_texts(on)

    def _pause_texts(self, on: bool) -> None:
        """The button's and the menu's words: what a press does now."""
        self.pause_action.setText("Play" if on else "Pause")
        self.pause_menu_action.setText(f"{'Play' if on else 'Pause'}\t{PAUSE_KEY}")

    def _pause(self, on: bool) -> None:
        self._pause_texts(on)
        self.controller.set_paused(on)
        if not on and self._ended:  # Play at the end: from the start, as a player does
            if self.notices.level == "info" and PLAY_AGAIN in self.notices.text.text():
                self.notices.dismiss()  # "source ended … Play starts it again" stood while it played
            self._from_the_start()

    # ---- engine, flow, display ------------------------------------------------------------------
    def engine_options(self) -> vocabulary.EngineOptions:
        return dataclasses.replace(
            engine_options(self.settings, self.session.options),
            progress=self.controller.progress.emit,  # TensorRT builds report from the worker
        )

    def apply_engine(self) -> None:
        try:
            reason = self.session.set_engine(self.engine_options())
        except UserError as exc:
            self._engine_error = exc.worded(vocabulary.window_words)
            self.show_error(self._engine_error)
            # every control back to the engine in use (the error stays on screen): a device,
            # precision or weights file that cannot run was left shown, and saved for next time
            self.controls.show_engine_values(self._engine_in_use)
            return
        self._engine_in_use = engine_values(self.settings)
        if self._engine_error and self.last_error == self._engine_error:
            self.notices.dismiss()  # the engine the error was about is gone: so is the error
            self._engine_error = ""
        self.session.set_compare(self.settings.compare)
        self.show_status(
            f"engine: {self.session.engine.name} ({vocabulary.word(reason)})" + self._runtime_skipped()
        )
        self.controller.refresh()

    def _runtime_skipped(self) -> str:
        """'; Runtime onnxruntime cannot run here (runs fp32 only, not bf16): the next one runs' when
        the runtime asked for by name is skipped before any frame: torch ran, said only in the
        status bar's tooltip after the first frame (review)."""
        asked = self.settings.runtime
        notes = getattr(getattr(self.session.engine, "backend", None), "notes", [])
        why = next((n.split(" skipped: ", 1)[1] for n in notes if n.startswith(f"{asked} skipped: ")), None)
        if asked == "auto" or why is None:
            return ""
        return (
            f"; Runtime {asked} cannot run here ({why}): the next one in {', '.join(RUNTIME_FALLBACK)} runs"
        )

    def _apply_compare(self, on: bool) -> None:
        self.session.set_compare(on)
        self.top.setCurrentIndex(1 if on else 0)
        self.measure.set_pane(self.compare_main if on else self.depth_view)  # measure where depth is shown
        last = self.controller.last
        if on and last is not None and last.pair.gt_disparity is not None:  # errors to see
            self.extra.setCurrentWidget(self.compare_tab)
        if last is not None:  # the answer shown moves to its side of the comparison at once
            self.show_result(last)  # ("depth of the new source: computing…" stood in both: review)
        self.controller.refresh()

    def _show_lines(self, segments: np.ndarray | None) -> None:
        """The calibration panel's match lines or board corners, on the left image; a side-by-side
        comparison hides that image, so it says where they are (they were out of sight: review)."""
        self.left_view.show_lines(segments)
        if segments is not None and len(segments) and self.settings.compare:
            self.show_status(
                'the marks are drawn on the left image: untick "SGBM side by side" (Engine) to see them'
            )

    def _apply_swap(self, on: bool) -> None:
        self.session.set_swap_views(on)
        self._swap_warned = False  # the swapped pair is judged afresh
        self._clear_swap_warning()
        self.show_status("left and right images swapped" if on else "left and right images as given")
        self.controller.refresh()

    def _clear_swap_warning(self) -> None:
        if self.notices.level == "error" and SWAPPED_WORDS in self.notices.text.text():
            self.notices.dismiss()

    def _warn_if_swapped(self, result: FrameResult) -> None:
        """The engine's note that the images look swapped, once a stream, where it is seen; the
        warning goes when a frame no longer looks swapped."""
        if not self.session.looks_swapped(result):
            if self._swap_warned:
                self._clear_swap_warning()
            return
        if self._swap_warned:
            return
        self._swap_warned = True
        if self.settings.swap_views:
            advice = f'they are swapped now: untick "{SWAP_LABEL}" (Engine)'
        else:
            advice = f'tick "{SWAP_LABEL}" (Engine), or give the left camera first'
        self.show_error(
            f"The left and right images {SWAPPED_WORDS} (most features sit further right in the right "
            f"image, a negative disparity), so the depth is noise: {advice}"
        )

    def _open_notes(self) -> None:
        if self.engine_label.notes:
            self.engine_label.open_notes()
        else:
            self.show_status("the frame shown has no notes")

    def _warn_if_identical(self, result: FrameResult) -> None:
        """The engine's note that both images are the same, as an error while it holds (the depth
        pane drew a plausible colour map and the note sat cut off in the status bar: review)."""
        self._identical_warned = self._warn_while(self.session.identical_note(result), self._identical_warned)

    def _warn_if_exposed_apart(self, result: FrameResult) -> None:
        """The engine's note that one camera is exposed much darker, as an error while it holds
        (the pot read 90 px for 115 and the note was one of "4 notes" in the status bar: review)."""
        self._exposure_warned = self._warn_while(self.session.exposure_note(result), self._exposure_warned)

    def _say_input_notes(self, result: FrameResult) -> None:
        """The engine's notes on the cameras' images that the user can act on (colours set apart,
        clipped white), said once a source in the bar: the notes line showed "3 notes: max
        disparity auto: ..." and the colour note only in the notes dialog (re-check)."""
        for kind, note in self.session.input_notes(result):
            if kind not in self._input_said:
                self._input_said.add(kind)
                self.show_status(note[0].upper() + note[1:], hold=True)

    def _warn_while(self, note: str | None, shown: str) -> str:
        """``note`` as an error once while it holds (dismissed, it stays away), taken back when it
        no longer does; answers the error shown for it ("" when none)."""
        if note is None:
            if shown:
                self.clear_error(shown)
            return ""
        if not shown:
            shown = note[0].upper() + note[1:]
            self.show_error(shown)
        return shown

    def _warn_if_unrectified(self, result: FrameResult) -> None:
        """The engine's note that the pair is not rectified, once a stream, as an error (its depth
        is noise that looks like an answer); it goes when a frame is rectified again (a
        calibration loaded)."""
        note = self.session.unrectified_note(result)
        if note is None:
            if self._unrectified_warned is not None:
                self.clear_error(self._unrectified_warned)
                self._unrectified_warned = None
            return
        if self._unrectified_warned is None:
            own = self.calibration.rig if self.session.calibration is not None else None
            advice = (
                WINDOW_UNRECTIFIED_LOADED.format(name=self.calibration.rig_name)
                if own is not None
                else WINDOW_UNRECTIFIED_ADVICE
            )
            message = note[0].upper() + note[1:].replace(UNRECTIFIED_ADVICE, advice)
            self._unrectified_warned = message
            self.show_error(message)

    def _warn_layout(self, result: FrameResult) -> None:
        """The source's note that its frames look like the other layout, or that a recording's
        index hides frames, once a source."""
        note = (
            None
            if self._layout_warned
            else self.session.layout_note(result) or self.session.index_note(result)
        )
        if note is not None:
            self._layout_warned = True
            self.show_error(note[0].upper() + note[1:])

    def _apply_flow(self, name: str) -> None:
        status = self.session.set_flow_backend(name, dict(self.controls.flow_values))
        self.controls.set_flow_status(vocabulary.word(status))
        self._flow_failed = status if name != "off" and self.session.flow is None else ""
        if self.session.flow is not None:
            self.extra.setCurrentWidget(self.flow_view)
        else:  # off, or it could not start: the last method's image is not this one's (review)
            self.flow_view.clear_image()
            self._flow_drawn = False
        # the title says the new state at once (it read "Optical flow is off" beside a method just
        # chosen); a held frame (ended, paused) is answered again: its flow by the new method
        self._flow_title(self.session.flow is not None and self._flow_drawn)
        if self.controller.holds_still():  # its flow by the new method, or none (its time too)
            self.controller.refresh()

    def _flow_title(
        self, drawn: bool, scale: float | None = None, arrows: bool = False, layout: str | None = None
    ) -> None:
        if drawn:
            if scale is None:
                rim = ""
            elif arrows:  # the arrows had no scale at all (review)
                rim = f" · the longest arrows = {scale:.3g} px"
            else:
                rim = f" · colour wheel's rim = {scale:.3g} px"
            # a mono video opened as stereo: its left half is the left view (the command line's
            # flow takes the whole frame; the pane did not say it showed half: review)
            half = (
                " · the left half of a mono video (bi3d-studio flow VIDEO: the whole frame)"
                if layout is not None and NOT_STEREO_MARK in layout
                else ""
            )
            self.flow_view.set_title(f"Optical flow{rim} (previous left frame to this one){half}")
        elif self._flow_failed:  # it read "Optical flow is off: choose a method" beside nvof chosen
            self.flow_view.set_title(f"Optical flow could not start: {vocabulary.word(self._flow_failed)}")
        elif self.session.flow is not None and getattr(self.session.source, "frame_count", None) == 1:
            self.flow_view.set_title(
                "Optical flow needs a moving source (video, camera, recording): a still pair has no motion"
            )
        elif self.session.flow is not None:  # a video ended, paused, or just seeked (review)
            self.flow_view.set_title(
                "Optical flow: no previous frame to compare this one with (Play or Step for the next)"
            )
        else:
            self.flow_view.set_title(
                f"Optical flow is off: choose a method ({vocabulary.FLOW.label}, Engine)"
            )

    def _redraw(self) -> None:
        for pane in (self.depth_view, self.baseline_view, self.compare_main):
            pane.set_colormap(self.settings.colormap)
        if self.controller.last is not None:
            self.show_result(self.controller.last)

    # ---- MainView ---------------------------------------------------------------------------
    def display_spec(self) -> DisplaySpec:
        s = self.settings
        return DisplaySpec(
            s.colormap, None if s.auto_range else s.display_max, s.flow_view, s.flow_max or None
        )

    def show_pair(self, pair: StereoPair) -> None:
        """The images of a new frame, before its depth is ready (the last depth's red overlay goes:
        it belongs to another frame)."""
        self.left_view.show_image(pair.left)
        self.right_view.show_image(pair.right)
        self.left_view.show_tint(None)

    def show_pending(self, shown: FrameResult | None = None) -> None:
        """While the frame held is answered again (changed controls, engine, calibration), its
        panes say their answer (``shown``, or the last) is of the settings before, until the new
        one comes or fails (the Mode box said selective for 1-3 s over the binary answer,
        unmarked: review). A stream's next frame answers them anyway."""
        pending = self.controller.answer_pending(shown)
        for pane in (self.depth_view, self.compare_main):
            title = pane.title.full_text.removeprefix(f"{RECOMPUTING} · ")
            if pending and title:
                title = f"{RECOMPUTING} · {title}"
            pane.set_title(title)

    def show_result(self, result: FrameResult) -> None:
        spec = self.display_spec()
        shown: Rendered = result.display
        if shown is None or shown.spec != spec:  # display settings changed since it was rendered
            shown = result.display = render(result, spec)
        pair, depth = result.pair, result.depth
        self.left_view.show_image(pair.left)
        self.right_view.show_image(pair.right)
        self.left_view.show_tint(shown.tint)
        selective = depth.range_state is not None and depth.mode is not Mode.BINARY
        self.left_view.set_title("Left · red: nearer than the range" if selective else "Left")
        self.depth_view.set_title(shown.depth_title)
        self.depth_view.show_rgb(shown.depth_rgb, shown.depth_levels, shown.answered)
        if self.top.currentIndex() == 1:  # comparing: the main engine again, beside SGBM
            self.compare_main.set_title(shown.depth_title)
            self.compare_main.show_rgb(shown.depth_rgb, shown.depth_levels, shown.answered)
        self.show_pending(result)  # drawn again (a colour map) while a new answer is computed
        if shown.baseline_rgb is not None and result.baseline is not None:
            # what it shows (it said "SGBM" alone, also beside a quick preview's banded answer)
            first = shown.depth_title.split(" · ")[0]
            preview = f"{first} · " if first.startswith("preview") else ""
            self.baseline_view.set_title(
                f"{preview}sgbm {result.baseline.mode.value} · the colours of the pane beside"
            )
            self.baseline_view.show_rgb(shown.baseline_rgb, shown.depth_levels)
        elif self.top.currentIndex() == 1:  # no second answer (not the last one's)
            self.baseline_view.clear_image()
            self.baseline_view.set_title(
                "SGBM is the main engine: choose bi3d (Engine) to compare the two"
                if depth.engine == "sgbm"
                else "sgbm: computing…"  # compare just ticked: this answer was made without it
            )
        self._show_errors(shown, sgbm_main=depth.engine == "sgbm")
        if shown.flow_rgb is not None:
            self.flow_view.show_image(shown.flow_rgb)
        else:  # the last pair's flow stood under "no previous frame to compare" (review)
            self.flow_view.clear_image()
        self._flow_drawn = shown.flow_rgb is not None
        self._flow_title(
            self._flow_drawn, shown.flow_scale, shown.flow_arrows, self.session.layout_note(result)
        )
        self._show_choice(depth, result.timings)
        self._warn_if_swapped(result)
        self._warn_if_identical(result)
        self._warn_if_exposed_apart(result)
        self._say_input_notes(result)
        set_aside = self.session.take_set_aside()
        if set_aside is not None:  # a rig of another camera's frame size, kept from the last source
            self.calibration.set_aside(set_aside)
            message = set_aside[0].upper() + set_aside[1:]
            if result.calibration is not None:  # the source's own: depth is metric, nothing to mend
                self.show_status(message)
            else:
                self.show_error(message)
                self._set_aside_warned = message
        self._warn_if_unrectified(result)
        self._warn_layout(result)
        if self.measure.isVisible():
            self.measure.set_result(result)
        else:
            self.measure.result = result  # figures and histogram catch up when it is shown
        self._update_position()
        if self._ended and not self.controller.holds_still():  # a seek after the end plays on
            self._ended = False
            self._show_paused(False)
        self.cloud_view.set_result(result)
        if result is not self._timed:  # a redraw (a colour map, compare) is no new frame to time
            self._timed = result
            self.latency.add(result.timings, still=self.controller.holds_still(), engine=depth.engine)
        self.controls.set_calibration(result.calibration)
        # the source's own, not the one depth used: after Clear, a frame answered with the board
        # calibration put its figures under "from the source" (review)
        self.calibration.note_source_calibration((result.raw or result.pair).calibration)
        self.calibration.frame_shown(result)
        status = f"{depth.engine} · {depth.runtime} · {depth.device} · {depth.precision}"
        if depth.searched is not None:
            status += f" · searched {depth.searched[0]:g}-{depth.searched[1]:g} px"
        self.engine_label.show_notes(status, [vocabulary.word(n) for n in depth.notes])
        if self._hover_at is not None:  # the readout follows the newest result
            self._hover(*self._hover_at, result=result)

    def _show_errors(self, shown: Rendered, sgbm_main: bool = False) -> None:
        """``sgbm_main``: SGBM answered as the main engine, so no second answer comes (the pane
        read "SGBM's errors: computing…" for good: review)."""
        for pane, error in zip((self.error_main, self.error_base), (*shown.errors, None, None), strict=False):
            if error is not None:
                pane.set_title(error[0])
                # a binary answer's map is right or wrong: no 0-4 px bar beside it (review)
                pane.show_rgb(error[1], (0.0, ERROR_MAX_PX), answered=error[2])
            elif not shown.errors:
                pane.set_title("no ground truth for this source")
                pane.clear_image()  # not the last source's errors
            else:  # the main engine's errors on the left; this pane waits for SGBM's
                pane.set_title(
                    "SGBM is the main engine: its errors are beside; choose bi3d (Engine) to compare the two"
                    if sgbm_main
                    else "SGBM's errors: computing…"
                    if self.settings.compare
                    else 'SGBM\'s errors: tick "SGBM side by side" (Engine) to compare'
                )
                pane.clear_image()

    def show_error(self, message: str) -> None:
        """An error stays on screen until the user dismisses it."""
        self.last_error = message
        # shown while a source ran (not at start: a damaged settings file's error stays)
        self._error_of_source = self.session.source is not None
        self.notices.error(message)

    def clear_error(self, message: str) -> None:
        """``message`` no longer holds: it goes if it is the error on screen (not another one)."""
        if self.notices.level == "error" and self.notices.isVisible() and self.last_error == message:
            self.notices.dismiss()

    def show_status(self, message: str, hold: bool = False) -> None:
        """What just happened, for a few seconds; ``hold``: news to read (a path), for longer."""
        self.notices.info(message, hold=hold)

    # ---- readouts and work -------------------------------------------------------------------
    def _hover(self, pane: str, x: int, y: int, result: FrameResult | None = None) -> None:
        self._hover_at = (pane, x, y)
        shown = result or self.controller.last
        if shown is not None and pane == "right":  # its pixel x is another scene point than the left's x
            self.readout.setText(
                f"x {x}  y {y}   right image: disparity is read on the left image and the depth"
            )
        elif shown is not None:
            self.readout.setText(work.readout(shown, x, y, baseline=pane == "baseline"))

    def snapshot(self) -> None:
        if self.controller.last is None:
            self.show_error("nothing to save yet: open a source first")
            return
        try:
            s = self.settings
            view = {"colormap": s.colormap, "min_confidence": s.min_confidence, "swap_views": s.swap_views}
            folder = self.session.snapshot(self.controller.last, s.source, view)
        except UserError as exc:
            self.show_error(_output_folder_hint(exc.worded(vocabulary.window_words)))
            return
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
        # its size said (result.npz holds the planes' probabilities: 45 MB), and one line short
        # enough for a small window (its list of files covered the 3D view at 1024 x 600: review)
        self.show_status(f"snapshot saved in {folder}, {size:.1f} MB", hold=True)

    def toggle_recording(self, on: bool) -> None:
        self._record_toggled(on)
        self._update_position()  # the seek bar rests while a recording runs

    def _record_toggled(self, on: bool) -> None:
        if not on:
            recorder = self.session.stop_recording()
            ended = self.session.take_ended_recording() if recorder is None else None
            self._rec_timer.stop()
            self.rec_badge.stop()
            writer = self.session.stopped_writer if recorder is not None else None
            frames = recorder.frames_written if recorder is not None else 0
            if writer is not None and writer.recorder is recorder:  # a camera's: some may still be queued
                frames = writer.captured - writer.dropped
            if recorder is not None and not frames:
                self.show_status("recording stopped before any frame came: nothing was recorded")
            elif recorder is not None:
                self._recorded_into(recorder.folder)
                message = f"recording stopped: {plural(frames, 'frame')} in {recorder.folder}"
                if writer is not None and writer.recorder is recorder and writer.dropped:
                    message += f"; {dropped_note(writer, 'the camera')}"
                self.show_status(message, hold=True)
            elif ended is not None:  # another source was opened: the recording belonged to the last one
                self.show_status(
                    "recording stopped with the source it recorded: "
                    f"{plural(ended.frames_written, 'frame')} in {ended.folder}",
                    hold=True,
                )
            return
        if self.session.source is not None and not self.controller.gives_frames:
            # it said "recording" and stopped with "nothing was recorded" (seen on the demo pair)
            still = getattr(self.session.source, "frame_count", None) == 1
            self.show_status(  # guidance, not a failure: a red bar that stayed read as one (review)
                "a still pair gives no new frames to record: Snapshot (Ctrl+S) saves it with its depth"
                if still
                else "the source has ended: play it again (Space), then record"
            )
            self.record_action.setChecked(False)
            return
        try:
            recorder = self.session.start_recording(self.controller.showing_held_frame())
        except UserError as exc:
            self.show_error(_output_folder_hint(exc.worded(vocabulary.window_words)))
            self.record_action.setChecked(False)
            return
        self.rec_badge.start()
        self._rec_timer.start()
        self.show_status(f"recording every captured frame to {recorder.folder}", hold=True)

    def _update_rec_badge(self) -> None:
        failed = self.session.take_failed_recording()
        if failed is not None:  # a full disk: the recording stopped, the source plays on
            stopped, error = failed
            self.record_action.setChecked(False)
            kept = (
                f"{stopped.folder} keeps the {plural(stopped.frames_written, 'frame')} recorded before it"
                if stopped.frames_written
                else "nothing was recorded"
            )
            self.show_error(f"recording stopped: {error}; {kept}")
            return
        recorder = self.session.recorder
        if recorder is None:  # stopped by a new source
            self.record_action.setChecked(False)
            return
        try:
            free: int | None = shutil.disk_usage(recorder.folder).free
        except OSError:
            free = None
        # the recorder's own count: walking the folder took a second a tick at 100k files
        self.rec_badge.update_counts(recorder.frames_written, recorder.bytes_written, free)

    def _ask_output_folder(self) -> str:
        return QFileDialog.getExistingDirectory(
            self, "Folder for snapshots, recordings and point clouds", str(self.session.output_root)
        )

    def choose_output_folder(self) -> None:
        """Where snapshots, recordings and point clouds go from now on (remembered)."""
        folder = self.ask_output_folder()
        if not folder:
            return
        if not os.access(folder, os.W_OK | os.X_OK):
            self.show_error(f"cannot write into {folder}; choose a folder you can write to")
            return
        if "cannot write into" in self.last_error or "File > Output folder" in self.last_error:
            self.clear_error(self.last_error)  # the folder it was about is no longer used
        self.session.output_root = Path(folder)
        self.settings.output_folder = folder
        recording = " (the recording under way stays where it is)" if self.session.recorder else ""
        self.show_status(f"snapshots, recordings and point clouds now go under {folder}{recording}")

    def export_ply(self) -> None:
        last = self.controller.last
        if last is None or last.calibration is None:
            self.show_error("a point cloud needs depth and a calibration: load one in the calibration panel")
            return
        try:  # before the save dialog (binary mode refused once a name was chosen: review)
            Session.require_metric(last, "a point cloud")
        except UserError as exc:
            self.show_error(exc.worded(vocabulary.window_words))
            return
        path, _ = QFileDialog.getSaveFileName(self, "Point cloud", self._ply_suggestion(), "PLY (*.ply)")
        if path:
            if not Path(path).suffix:  # Qt's own dialog adds no suffix: a viewer looks for .ply
                path += ".ply"
            try:
                _, count = self.session.export_point_cloud(last, Path(path))
            except UserError as exc:
                self.show_error(exc.worded(vocabulary.window_words))
                return
            self.show_status(f"wrote {count} points to {path}", hold=True)

    def raise_budget(self, minimum_ms: float) -> bool:
        """The budget moved up to ``minimum_ms``, the least that answers at this frame size; False
        when it cannot go there (the refusal is then shown)."""
        # with room over the prediction: raised to the predicted 29 ms it took 37 (review)
        before, target = self.controls.budget.number(), round_up(RAISE_MARGIN * minimum_ms)
        if (
            not self.controls.budget_on.isChecked()
            or target <= before
            or target > self.controls.budget.maximum_number()
        ):
            return False  # not the budget's doing, or no higher budget answers: the refusal is said
        self.controls.budget.set_number(target)
        now = self.controls.budget.number()
        self.controls.apply_now()  # the request at once: ticks sent the refused one again meanwhile
        self.show_status(
            f"budget raised to {now} ms: the fastest answer at this frame size (one plane) takes about "
            f"{minimum_ms:.0f} ms"
        )
        return True

    def show_refused(self) -> None:
        self.controls.show_refused()
        # the pane itself says its answer is an older one (on a live source the left image moved
        # on while the depth stayed, with only the message bar and the panel saying why)
        title = self.depth_view.title.full_text
        if not title.startswith(STALE_DEPTH):
            self.depth_view.set_title(f"{STALE_DEPTH} · {title}")

    def _ply_suggestion(self) -> str:
        """Where the save dialog starts: a new name in the output folder, as snapshots and
        recordings go (it started in the last source's folder: 5.5 MB went into a dataset)."""
        root = self.session.output_root
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError:
            return self.folders.start("points.ply")  # the output folder cannot be made: said on saving
        return str(root / time.strftime("points-%Y%m%d-%H%M%S.ply"))

    # ---- the model ---------------------------------------------------------------------------
    def _pick_model(self) -> None:
        kinds = "Checkpoints (*.pt *.pth *.tar);;All (*)"
        path, _ = QFileDialog.getOpenFileName(self, "Bi3D model", self.folders.start(), kinds)
        self.folders.chose(path)
        if path:
            self.load_model(path)

    def load_model(self, path: str) -> bool:
        """Run Bi3D with the checkpoint at ``path``; a bad file is a message and changes nothing."""
        try:
            reason = self.session.load_weights(path)
        except UserError as exc:
            self._model_error = exc.worded(vocabulary.window_words)
            self.show_error(self._model_error)
            return False
        if self._model_error:  # a good model after a bad one: its error no longer holds (it stayed)
            self.clear_error(self._model_error)
            self._model_error = ""
        for name, value in (("engine", "bi3d"), ("weights", path)):  # kept for the next start
            setattr(self.settings, name, value)
        holder = self.controls.engine_controls.get("weights")
        edit = holder.findChild(QLineEdit) if holder is not None else None
        if edit is not None:
            edit.setText(path)
        engine = self.controls.engine_controls.get("engine")
        if engine is not None and hasattr(engine, "setCurrentText"):
            engine.blockSignals(True)  # the engine is built already
            engine.setCurrentText("bi3d")
            engine.blockSignals(False)
        self.show_status(
            f"model {Path(path).name} loaded; engine: {self.session.engine.name} ({vocabulary.word(reason)})"
        )
        self.controller.refresh()
        return True

    def adapt_to_source(self) -> None:
        """Fine-tune the model on the current source's footage, in the background."""
        spec = self.settings.source
        if not spec:
            self.show_error("open a recording, a video or a folder of pairs first, then adapt the model")
            return
        if getattr(self.session.source, "frame_count", None) == 1:  # said after the file dialog (review)
            self.show_error(
                "adaptation learns from footage of several frames, and this source is one pair: open a "
                "recording, a video or a folder of pairs of your rig, then adapt the model"
            )
            return
        out = self.ask_adapt_path()
        if not out:
            return
        try:
            job = self.session.adapt(spec, out)
        except UserError as exc:
            self.show_error(exc.worded(vocabulary.window_words))
            return
        self.adapt_runner.start(job)

    def _ask_adapt_path(self) -> str:
        suggested = str(self.session.output_root / "adapted.pt")
        path, _ = QFileDialog.getSaveFileName(self, "Adapted model", suggested, "Checkpoints (*.pt)")
        return path

    def _adapted(self, result: AdaptResult) -> None:
        # in words, as `adapt` says them ("photometric_l1 33.400 -> 30.100" read raw: review)
        summary = "; ".join(self.session.adapt_figures(result))
        self.show_status(f"adapted model written to {result.out}; held-back frames: {summary}", hold=True)
        if self.ask_load_adapted(result):
            self.load_model(str(result.out))

    def _ask_load_adapted(self, result: AdaptResult) -> bool:
        warning = "" if result.warning is None else f"\n\nNote: {result.warning}."
        answer = QMessageBox.question(
            self,
            "Adapt model",
            f"The adapted model is in {result.out}; the report is in {result.report_path}.{warning}"
            "\n\nLoad it now?",
        )
        return answer == QMessageBox.StandardButton.Yes

    # ---- lifecycle -------------------------------------------------------------------------
    def reset_settings(self) -> None:
        """Every setting and the layout back to the defaults, after asking; the output folder is
        kept (recordings and snapshots stay where they are). The app starts again with them."""
        if not self.confirm_reset():
            return
        defaults = Settings(output_folder=self.settings.output_folder)
        try:
            save_settings(defaults, self.settings_path)
        except (OSError, UserError) as exc:
            self.show_error(f"could not reset the settings: {exc}")
            return
        self._layout_store().clear()
        self._resetting = True  # closing must not save the settings and layout just replaced
        self.restart()
        self.close()

    def _confirm_reset(self) -> bool:
        answer = QMessageBox.question(
            self,
            "Reset settings",
            "Reset every setting and the window layout to the defaults and start again?\n\n"
            "Recordings, snapshots and calibrations stay where they are.",
        )
        return answer == QMessageBox.StandardButton.Yes

    def _restart(self) -> None:
        """The window again, as a new process (the interpreter and its arguments, or a bundle's
        executable), on the source open now (``restart_args``)."""
        args = sys.orig_argv[1:] if not getattr(sys, "frozen", False) else sys.argv[1:]
        QProcess.startDetached(sys.executable, restart_args(args, self.settings.source))

    def _layout_store(self) -> QSettings:
        """The window's layout (geometry, docks, the central split), beside its settings file (in
        ``BI3D_STUDIO_CONFIG_DIR`` when set: it was Qt's own place, shared by every config dir)."""
        folder = self.settings_path.parent if self.settings_path is not None else settings_dir()
        return QSettings(str(folder / "layout.ini"), QSettings.Format.IniFormat)

    def _restore_layout(self) -> None:
        q = self._layout_store()
        geometry, state, split = q.value("geometry"), q.value("windowState"), q.value("centralSplit")
        self.layout_restored = state is not None
        self.geometry_restored = geometry is not None and bool(self.restoreGeometry(geometry))
        if state is not None:
            self.restoreState(state)
        if split is not None:
            self.central_split.restoreState(split)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._keep_images_room()
        self._place_notices()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.centralWidget() and event.type() == QEvent.Type.Resize:
            self._place_notices()
        return super().eventFilter(watched, event)

    def _show_choice(self, depth: DepthResult, timings: dict[str, float]) -> None:
        """The budget's choice under the controls. A held frame (an image pair, a paused source) has
        no next answer to fit the budget better ("the next answer fits better" never came: review):
        it is answered once again with the costs the first answer measured."""
        still = self.controller.holds_still()
        retry = still and not self._budget_retried
        over = ANSWERING_AGAIN if retry else "" if still else NEXT_FITS
        # answered again only where a finer choice could fit (the coarsest was over it: code review)
        if self.controls.show_choice(depth, timings, over) and retry and not self.controls.coarsest_over:
            self._budget_retried = True
            QTimer.singleShot(0, self.controller.refresh)

    def _new_budget_try(self) -> None:
        """New settings: a held frame's answer over the budget may be answered again once more."""
        self._budget_retried = False

    def _place_notices(self) -> None:
        """The notice bar across the bottom of the tabs below the images, as tall as its wrapped
        text: their tab bar and the first lines of each tab (the 3D view's Max depth slider, the
        Errors tab's bad-2 and EPE) stay in view (the bar hid them from under the tab bar: review)."""
        central = self.centralWidget()
        if central is None:
            return
        width = max(1, central.width() - 4)
        layout = self.notices.layout()
        height = self.notices.sizeHint().height()
        if layout is not None and layout.hasHeightForWidth():  # the wrapped text's own height
            height = layout.totalHeightForWidth(width)
        bottom = self.extra.mapTo(central, self.extra.rect().bottomLeft()).y()
        top = self.extra.mapTo(central, self.extra.rect().topLeft()).y() + self.extra.tabBar().height()
        self.notices.setGeometry(2, max(top, bottom + 1 - height), width, height)
        self.notices.raise_()

    def _keep_images_room(self) -> None:
        """In a short window the images keep the room: the tabs below them take at most a third
        of the split and the latency plot a seventh of the window (at 800 x 500 the depth was 120
        x 80 px beside a larger right image and a full-height latency plot: review). Taller
        windows keep the sizes the user dragged."""
        height = self.height()
        if height >= COMPACT_HEIGHT or self.large_tabs_action.isChecked():  # asked for: kept
            return
        sizes = self.central_split.sizes()
        total = sum(sizes)
        if total > 0 and sizes[1] > total // 3:
            self.central_split.setSizes([total - total // 3, total // 3])
        if self.latency_dock.isVisible() and self.latency_dock.height() > height // 7:
            self.resizeDocks([self.latency_dock], [max(LATENCY_MIN_PX, height // 7)], Qt.Orientation.Vertical)

    def ask_stop_recording(self, recorder: Recorder) -> bool:
        """Whether to stop the recording under way and close (every frame so far is kept)."""
        box = QMessageBox(self)
        box.setWindowTitle("Recording")
        box.setIcon(QMessageBox.Icon.Question)

        def say() -> None:
            frames = plural(recorder.frames_written, "frame")
            box.setText(
                f"A recording is under way: {frames} in {recorder.folder}.\n"
                "Stop it and quit? Every frame recorded so far is kept."
            )

        say()
        # it records on while asked: the count follows, as the REC badge's does (it stood at 10
        # beside the badge's 12: review)
        follow = QTimer(box, interval=REC_BADGE_MS)
        follow.timeout.connect(say)
        follow.start()
        stop = box.addButton("Stop recording and quit", QMessageBox.ButtonRole.AcceptRole)
        box.addButton("Keep recording", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(stop)
        box.exec()
        return box.clickedButton() is stop

    def closeEvent(self, event: QCloseEvent) -> None:
        recorder = self.session.recorder
        if (
            recorder is not None
            and self.confirm_close_while_recording
            and not self.ask_stop_recording(recorder)
        ):
            event.ignore()
            return
        self.adapt_runner.shutdown()  # a running adaptation keeps its progress for a later run
        self.controller.shutdown()
        if recorder is not None:  # stopped by the shutdown: said where a terminal may show it
            print(f"recording stopped: {plural(recorder.frames_written, 'frame')} in {recorder.folder}")
        if self._resetting:  # the defaults just written stay
            super().closeEvent(event)
            return
        q = self._layout_store()
        q.setValue("geometry", self.saveGeometry())
        q.setValue("windowState", self.saveState())
        q.setValue("centralSplit", self.central_split.saveState())
        try:
            save_settings(self.settings, self.settings_path)
        except (OSError, UserError) as exc:  # never block closing on a settings problem
            print(f"could not save settings: {exc}")
        super().closeEvent(event)


def _scrolling(panel: QWidget) -> QScrollArea:
    """``panel`` in a vertical scroll area: a tall panel never makes the window taller than the
    screen (1366 x 768 laptops)."""
    scroll = QScrollArea()
    scroll.setWidget(panel)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    # never narrower than the panel's own minimum: the dock was squeezed to 123 px at 1366 x 768,
    # cutting its buttons and labels (there is no horizontal scroll bar to reach them)
    bar = scroll.verticalScrollBar().sizeHint().width()
    scroll.setMinimumWidth(panel.minimumSizeHint().width() + bar + 4)
    return scroll


STALE_DEPTH = "last answer (these settings were refused)"


def short_description(description: str) -> str:
    """A source's name for the window title: a pair in one folder as its two file names and the
    folder once ("im0.png, im1.png — /data/scene"), where the full paths twice filled the title."""
    parts = description.split(",")
    if len(parts) != 2 or ":" in parts[0].split("/")[0]:  # not a pair of paths (a camera, a spec)
        return description
    left, right = (Path(p.strip()) for p in parts)
    if left.parent != right.parent or not left.name or not right.name:
        return description
    folder = str(left.parent)
    return f"{left.name}, {right.name}" + ("" if folder == "." else f" — {folder}")


def restart_args(args: list[str], source: str) -> list[str]:
    """The command line that starts the window again after a reset: up to ``gui`` as it was,
    then the source open now (the command line's own source and flags went with the reset: it
    reopened the folder given at start, not the demo opened since: review)."""
    if "gui" not in args:
        return [*args, "gui", *([source] if source else [])]
    head = args[: args.index("gui") + 1]
    return [*head, source] if source else head
