"""Calibration panel: load a file, check the rig without a target, calibrate with a chessboard.

Heavy work (feature matching, calibration) runs on the session's worker between frames.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.errors import UserError
from app.engine.session import Session, plural
from app.engine.types import Calibration, FrameResult
from app.ui.controller import SessionController
from app.ui.folders import FolderMemory
from app.ui.settings import Settings
from app.vocabulary import window_words

if TYPE_CHECKING:  # types only: the work goes through the session's desk
    from app.engine.calibration.check import EpipolarReport
    from app.engine.calibration.fit import StereoFit
    from app.engine.calibration.rig import StereoRig
    from app.engine.calibration.selfrect import SelfRectification
    from app.engine.calibration.target import Target

DESK = Session.desk
MIN_VIEWS = DESK.MIN_VIEWS

VERDICT_COLOURS = {
    "rectified": "#2e7d32",
    "marginal": "#f9a825",
    "not rectified": "#c62828",
    "swapped": "#c62828",
    "unknown": "#777777",
}
LINE_GAIN = 10.0  # vertical offsets are drawn this many times larger, so sub-pixel errors show
BOARDS = ("Chessboard", "ChArUco")
MAX_SELF_FRAMES = 10
NO_CALIBRATION = "none: depth in pixels only"
SOURCE_CALIBRATION = "from the source"
SELF_RECTIFICATION = "self-rectification"
POSE_REFIT = ", pose re-fitted"  # a rig's name after Self-rectify re-fitted its pose (its intrinsics kept)
UNKNOWN_BASELINE = "not given"  # "Baseline: unknown" beside a loaded 193 mm rig read as a contradiction


def match_segments(report: EpipolarReport, gain: float = LINE_GAIN) -> np.ndarray:
    """N x 2 x 2 segments on the left image: from each match to where its partner's row is,
    with the vertical gap amplified by ``gain``."""
    pl, pr = report.points_left, report.points_right
    if len(pl) == 0:
        return np.zeros((0, 2, 2))
    end = pl.copy().astype(np.float64)
    end[:, 1] += gain * (pr[:, 1] - pl[:, 1])
    return np.stack([pl.astype(np.float64), end], axis=1)


def corner_marks(points: np.ndarray, size: float) -> np.ndarray:
    """N x 2 corner positions -> 2N x 2 x 2 segments: a cross of arm ``size`` px on each."""
    pts = np.asarray(points, np.float64).reshape(-1, 2)
    arms = []
    for dx, dy in ((size, 0.0), (0.0, size)):
        step = np.array([dx, dy])
        arms.append(np.stack([pts - step, pts + step], axis=1))
    return np.concatenate(arms) if len(pts) else np.zeros((0, 2, 2))


_HINT_WORDS = (
    ("try --pattern ", "set Pattern to "),
    ("--pattern", "Pattern"),
    ("--squares", "Pattern"),
    ("--dictionary", "Dictionary"),
    (" and --legacy", ""),
)


def outlier_text(views: list[str]) -> str:
    """'outlier views: none', 'outlier view: view 2 (frame 2, 0.50 px)', 'outlier views: views 2
    (...), 5 (...)': "outlier views: 2 (frame 2) (0.50 px)" read as two views or view 2 (review)."""
    if not views:
        return "outlier views: none"
    many = len(views) > 1
    return f"outlier view{'s' if many else ''}: view{'s' if many else ''} {', '.join(views)}"


def _panel_words(hint: str) -> str:
    """A target's hint (worded for the command line) in the panel's words."""
    for flag, field in _HINT_WORDS:
        hint = hint.replace(flag, field)
    return hint


class CalibrationPanel(QWidget):
    calibrationChanged = Signal(object, object)  # Calibration | None, StereoRig | None
    linesReady = Signal(object)  # segments to draw on the left view

    def __init__(
        self,
        controller: SessionController,
        folders: FolderMemory | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        self.folders = folders or FolderMemory(Settings())  # the window's: its dialogs start alike
        self.views: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # board points, left, right
        self._source = ""  # the source shown (as the window names it), and the one the views are of
        self._views_source = ""
        self.params: list[np.ndarray] = []
        self.frame_keys: list[str] = []  # a digest of each captured view's left image: one frame counts once
        # each view's frame as the seek bar numbers it ("frame 2"): outliers were named by their
        # place in the capture order, which read as frame numbers (review)
        self.view_frames: list[str] = []
        self.image_size: tuple[int, int] | None = None
        self.target_key: tuple[object, ...] | None = None
        self._views_board: tuple[str, str, float, float] | None = None  # the fields the views were taken with
        self.self_frames: list[tuple[np.ndarray, np.ndarray]] = []
        self.rig: StereoRig | None = None
        self.baseline_known = True  # False: the rig's baseline is a 1 m placeholder
        self.rig_estimated = False  # the rig is a self-rectification of this panel
        self.rig_name = ""  # the loaded file's name, or how the rig was made
        # the calibration ``apply`` put in use (beside its rig, name and kind above), and the rig set
        # aside for a source of another frame size, given back when a source of its size comes (it
        # stayed away for good: review)
        self._applied: Calibration | None = None
        self._aside: tuple[Calibration, StereoRig | None, str, bool, tuple[int, int] | None] | None = None
        self._applied_size: tuple[int, int] | None = None  # the frames a rectified pair's was fitted to
        self.rig_baseline_m: float | None = None  # the rig's measured baseline (None: none, or unknown)
        self._odd_frame: str | None = None  # not captured for its size: a second try starts over
        self._errors: list[str] = []  # calibration errors shown: a calibration applied later supersedes them
        self._marked: np.ndarray | None = None  # the raw left image whose board corners are crossed
        layout = QVBoxLayout(self)
        layout.addWidget(self._file_group())
        layout.addWidget(self._check_group())
        layout.addWidget(self._board_group())
        layout.addWidget(self._self_group())
        layout.addStretch(1)

    # ---- groups --------------------------------------------------------------------------
    def _file_group(self) -> QGroupBox:
        box = QGroupBox("Calibration file")
        v = QVBoxLayout(box)
        load = QPushButton("Load…")
        load.clicked.connect(self.pick_file)
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("stop using the loaded or computed calibration (the source's own stays)")
        self.clear_button.clicked.connect(self.clear)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip(
            "write the rig in use (loaded, calibrated or self-rectified) as OpenCV YAML"
        )
        self.save_button.clicked.connect(lambda: self.save())  # clicked(bool) would fill the title
        self.save_button.setEnabled(False)
        self.clear_button.setEnabled(False)  # enabled while one's own calibration is in use
        buttons = QHBoxLayout()
        buttons.addWidget(load)
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.clear_button)
        self.file_label = QLabel(NO_CALIBRATION)
        self.file_label.setWordWrap(True)
        v.addLayout(buttons)
        v.addWidget(self.file_label)
        return box

    def _check_group(self) -> QGroupBox:
        box = QGroupBox("Check (no target)")
        v = QVBoxLayout(box)
        run = QPushButton("Check the current pair")
        run.clicked.connect(self.run_check)
        self.verdict = QLabel("")
        self.figures = QLabel("")
        for label in (self.verdict, self.figures):  # long verdicts wrap, never widen the dock past its edge
            label.setWordWrap(True)
        for w in (run, self.verdict, self.figures):
            v.addWidget(w)
        return box

    def _board_group(self) -> QGroupBox:
        box = QGroupBox("Board calibration")
        form = QFormLayout(box)
        self.board = QComboBox()
        self.board.addItems(BOARDS)
        self.pattern = QLineEdit("9x6")
        self.square = QDoubleSpinBox(decimals=4, minimum=0.001, maximum=1.0, value=0.025, suffix=" m")
        self.marker = QDoubleSpinBox(decimals=4, minimum=0.001, maximum=1.0, value=0.018, suffix=" m")
        self.dictionary = QComboBox()
        self.dictionary.addItems(DESK.DICTIONARIES)
        self.dictionary.setCurrentText("4X4_50")
        capture = QPushButton("Capture view")
        capture.clicked.connect(self.capture_view)
        self.calibrate_button = QPushButton("Calibrate")
        self.calibrate_button.clicked.connect(self.calibrate)
        self.calibrate_button.setEnabled(False)
        self.drop_button = QPushButton("Drop outlier views")
        self.drop_button.clicked.connect(self.drop_outliers)
        self.drop_button.setEnabled(False)
        self.outliers: list[int] = []
        self._dropped_note = ""  # the views the last drop took out, said with the next result
        self.board_status = QLabel(
            "chessboard: inner corners COLSxROWS; ChArUco: squares; capture varied views"
        )
        self.board_status.setWordWrap(True)
        self.board.currentTextChanged.connect(self._board_changed)
        form.addRow("Board", self.board)
        form.addRow("Pattern", self.pattern)
        form.addRow("Square", self.square)
        form.addRow("Marker", self.marker)
        form.addRow("Dictionary", self.dictionary)
        form.addRow(capture, self.calibrate_button)
        form.addRow(self.drop_button)
        form.addRow(self.board_status)
        self._board_changed(self.board.currentText())
        return box

    def _self_group(self) -> QGroupBox:
        box = QGroupBox("Self-rectification (no target)")
        v = QVBoxLayout(box)
        add = QPushButton("Add frame")
        add.clicked.connect(self.add_self_frame)
        self.self_button = QPushButton("Self-rectify")
        self.self_button.clicked.connect(self.self_rectify)
        self.self_status = QLabel("uses the current frame and those added; keeps a loaded rig's intrinsics")
        self.self_status.setWordWrap(True)
        self.self_baseline = QDoubleSpinBox(decimals=4, minimum=0.0, maximum=5.0, value=0.0, suffix=" m")
        self.self_baseline.setSpecialValueText(UNKNOWN_BASELINE)
        self.self_baseline.setToolTip(
            "for Self-rectify: the distance between the cameras' centres, measured, gives depth in "
            "metres (not given: a loaded rig's baseline is kept, else depths are in baselines)"
        )
        baseline = QFormLayout()
        baseline.addRow("Measured baseline", self.self_baseline)  # an input of self-rectification
        v.addWidget(add)
        v.addLayout(baseline)
        for w in (self.self_button, self.self_status):
            v.addWidget(w)
        return box

    # ---- errors ----------------------------------------------------------------------------
    def _show_error(self, message: str) -> None:
        self._errors.append(message)
        self.controller.view.show_error(message)

    def _run(self, work: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """``work`` on the session's worker; its refusal (a ``UserError``) is shown as the panel's own
        error, for a later calibration to take back."""

        def guarded() -> tuple[Any, str | None]:
            try:
                return work(), None
            except UserError as exc:
                return None, exc.worded(window_words)

        def finish(outcome: tuple[Any, str | None]) -> None:
            value, error = outcome
            if error is not None:
                self._show_error(error)
            else:
                done(value)

        self.controller.run_task(guarded, finish)

    def _errors_superseded(self) -> None:
        """A calibration now in use: the errors of earlier tries (a file that did not load, a
        calibration that failed) no longer hold."""
        for message in self._errors:
            self.controller.view.clear_error(message)
        self._errors = []

    def _show_rig_baseline(self, calibration: Calibration | None) -> None:
        """The Baseline field at 0 keeps the rig's baseline: it says which (it read 'unknown'
        beside a loaded rig of a known baseline)."""
        known = calibration is not None and calibration.baseline_known
        self.rig_baseline_m = b = calibration.baseline_m if calibration is not None and known else None
        text = UNKNOWN_BASELINE if b is None else f"the rig's, {b * 1000:.1f} mm"
        self.self_baseline.setSpecialValueText(text)

    # ---- file ----------------------------------------------------------------------------
    def pick_file(self) -> None:
        """Load a calibration chosen in a file dialog (the panel's Load…, File > Load calibration…)."""
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Calibration",
            self.folders.start(),
            "Calibration (*.yaml *.yml *.xml *.json *.txt);;All (*)",
        )
        if path:
            self.folders.chose(path)
            self.load(Path(path))

    def load(self, path: Path, second: Path | None = None) -> None:
        """A calibration file (and its second half: a ROS pair's right camera_info, OpenCV's
        extrinsics.yml), as Load... and ``gui --calib/--calib2`` give it."""
        last = self.controller.last
        frame = (last.raw or last.pair).left if last is not None else None
        try:
            size = None if frame is None else (frame.shape[1], frame.shape[0])
            calibration, rig, note = DESK.load(path, size, second)
        except UserError as exc:
            self._show_error(exc.worded(window_words))
            return
        # before any frame (gui --calib), the size the file says it is for (code review)
        fitted = size if size is not None or rig is not None else DESK.declared_size(path, second)
        self.apply(calibration, rig, path.name, rig is not None and DESK.focal_guessed(path), fitted)
        if note:
            self.file_label.setText(f"{self.file_label.text()}; {note}")
        if note is not None and DESK.doubtful(note):  # said in the panel alone, under a zoomed-in
            self._show_error(note)  # corner as the left view and a 3D view of nothing (review)

    def apply(
        self,
        calibration: Calibration,
        rig: StereoRig | None,
        name: str,
        estimated: bool = False,
        size: tuple[int, int] | None = None,
    ) -> None:
        """Use ``calibration`` (and ``rig``, raw frames to rectify) named ``name``; ``estimated``:
        its intrinsics are a projective self-rectification's, made up (not a pose re-fit's);
        ``size``: the frames (w, h) a rectified pair's calibration fits (None: those shown)."""
        self.rig, self.rig_name = rig, name
        self.rig_estimated = estimated
        self._applied, self._aside = calibration, None
        self.baseline_known = calibration.baseline_known
        self._errors_superseded()
        self._show_rig_baseline(calibration if rig is not None else None)
        self.save_button.setEnabled(rig is not None)
        rectifier = DESK.rectifier(rig) if rig is not None else None
        last = self.controller.last
        shown = (last.raw or last.pair).left if last is not None else None
        # a rectified pair's calibration is fitted to the frames shown: another size sets it aside
        if size is None and shown is not None:
            size = (shown.shape[1], shown.shape[0])
        self._applied_size = size if rig is None else None
        self.controller.session.set_calibration(calibration, rectifier, size)
        self.clear_button.setEnabled(True)
        kind = "raw rig, frames are rectified" if rig is not None else "rectified pair"
        if calibration.baseline_known:
            baseline = f"baseline {calibration.baseline_m * 1000:.1f} mm"
        else:
            baseline = "baseline unknown: depths in baselines, not metres"
        rough = (
            "; f is a guess, so metres are rough: calibrate a board for true metres"
            if estimated and calibration.baseline_known
            else ""
        )  # a self-rectification's metres read as measured ones, 7.3 m where 3.8 m was right (review)
        self.file_label.setText(f"{name}: f {calibration.focal_px:.1f} px, {baseline} ({kind}){rough}")
        self.reset_check()  # measured on frames rectified otherwise (or not at all)
        self.calibrationChanged.emit(calibration, rig)
        self.controller.refresh()

    def clear(self) -> None:
        """Back to no calibration of one's own: a file loaded, a board calibrated or a
        self-rectification (a dead end when it does not fit the next source's frames). The
        source's own (a dataset's calib.txt) stays, and with nothing of one's own to clear, that
        is said (it did nothing, silently)."""
        had_own = self.controller.session.calibration is not None
        from_source = self.file_label.text().startswith(SOURCE_CALIBRATION)
        self.rig = None
        self._applied = self._aside = None
        self._applied_size = None
        self.baseline_known = True
        self._show_rig_baseline(None)
        self.save_button.setEnabled(False)
        self.controller.session.set_calibration(None, None)
        self.clear_button.setEnabled(False)  # nothing of one's own left (it stood enabled: review)
        if not from_source:
            self.file_label.setText(NO_CALIBRATION)
        self.reset_check()
        self.calibrationChanged.emit(None, None)
        self.controller.refresh()
        if not had_own and from_source:
            self.controller.view.show_status(
                "nothing loaded to clear: the calibration in use comes with the source (its calib.txt)"
            )

    def set_aside(self, why: str) -> None:
        """The session stopped using the rig (it fits another frame size): the panel says so, and
        keeps it for the next frames of its size (``frame_shown``)."""
        # the frames it fits: a rig's image size, or the size a rectified pair's was fitted to (it
        # came back too: code review)
        fits = tuple(self.rig.image_size) if self.rig is not None else self._applied_size
        if self._applied is not None and fits is not None:
            self._aside = (self._applied, self.rig, self.rig_name, self.rig_estimated, (fits[0], fits[1]))
        self.rig, self.baseline_known = None, True
        self._show_rig_baseline(None)
        self.save_button.setEnabled(False)
        # one set aside comes back with frames of its size: Clear forgets it (code review)
        self.clear_button.setEnabled(
            self.controller.session.calibration is not None or self._aside is not None
        )
        self.file_label.setText(f"{NO_CALIBRATION} ({why})")
        self.reset_check()
        self.calibrationChanged.emit(None, None)

    def note_source_calibration(self, calibration: Calibration | None) -> None:
        """Say so when the depth is metric thanks to the source (a dataset's calib.txt); None (a
        new source, or one without a calibration) takes back what an earlier source said."""
        if calibration is None:
            if self.file_label.text().startswith(SOURCE_CALIBRATION):
                self.file_label.setText(NO_CALIBRATION)
            return
        if self.rig is not None or not self.file_label.text().startswith("none"):
            return
        mm = calibration.baseline_m * 1000
        focal = calibration.focal_px
        self.file_label.setText(f"{SOURCE_CALIBRATION}: f {focal:.1f} px, baseline {mm:.1f} mm")

    # ---- check ---------------------------------------------------------------------------
    def reset_check(self) -> None:
        """The check's verdict, figures and lines were of other frames (another source, another
        calibration): they go, not to stand beside a state they contradict."""
        self.verdict.setText("")
        self.figures.setText("")
        self._marked = None
        self.linesReady.emit(None)

    def reset_source(self, description: str = "") -> None:
        """Another source: the check and the self-rectification's result and frames were of the
        last one's (its "vertical RMS 12.76 px" stood beside the demo: review). Board views
        captured from another source go too: one view of a second rig was calibrated with the
        first rig's 13, and the result put in use (review); the same source opened again (a
        video looped by opening it afresh) keeps them."""
        self.reset_check()
        self.self_frames = []
        self.self_status.setText("")
        if self.views and description != self._views_source:
            count = len(self.views)
            self._clear_views()
            self.board_status.setText(
                f"the {count} board view{'' if count == 1 else 's'} of the last source were cleared: "
                "capture this source's board"
            )
        self._source = description

    def _clear_views(self) -> None:
        self.views, self.params, self.frame_keys, self.view_frames = [], [], [], []
        self.outliers = []
        self.calibrate_button.setEnabled(False)
        self.drop_button.setEnabled(False)

    def run_check(self) -> None:
        last = self.controller.last
        if last is None:
            self._show_error("open a source first: the check needs a stereo pair")
            return
        pair = last.pair  # rectified when a rig is loaded
        target = self._quiet_target()
        number, count, _ = self.controller.session.position()
        # which frame it read: its figures stood unmarked over other frames after a seek (review)
        of_frame = f" (frame {number + 1})" if count and count > 1 and number >= 0 else ""

        def measure() -> tuple[EpipolarReport, tuple[int, float] | None]:
            board = DESK.board_rows(target, pair.left, pair.right) if target is not None else None
            return DESK.check(pair.left, pair.right), board

        def done(value: tuple[EpipolarReport, tuple[int, float] | None]) -> None:
            report, board = value
            board_line = ""
            if board is not None:
                count, rms = board
                board_line = (
                    f"<br>Board in view ({target.describe() if target else ''}): its {count} corners lie "
                    f"{rms:.2f} px apart vertically (RMS), {DESK.verdict(rms)}"
                )
            colour = VERDICT_COLOURS.get(report.headline, "#777777")
            self.verdict.setText(
                f"<b style='color:{colour}'>{report.headline.upper()}</b>{of_frame}{board_line}"
            )
            r = report
            if r.misalignment is None:
                self.figures.setText(f"{r.matches} matches. {r.reason_in(window_words)}")
            else:
                mean = round(r.vertical_mean_px, 2) + 0.0  # "-0.00 px" read as a measured offset (review)
                self.figures.setText(
                    f"vertical offset: mean {mean:.2f} px, RMS {r.vertical_rms_px:.2f} px, "
                    f"p95 {r.vertical_p95_px:.2f} px over {r.matches} matches; {r.misalignment}. "
                    f"{r.reason_in(window_words)}. On the left image each match's line is its "
                    f"vertical offset drawn {LINE_GAIN:g} times longer, up to the image's edge "
                    "(ringed: on its row)"
                )
            self._marked = None
            self.linesReady.emit(match_segments(report))

        self._run(measure, done)

    def _quiet_target(self) -> Target | None:
        """The board set below, for the check to look for; None when its fields do not parse (the
        check then goes without it, saying nothing: only a capture needs them right)."""
        return self._target(quiet=True)

    # ---- board calibration ---------------------------------------------------------------
    def _board_changed(self, board: str) -> None:
        charuco = board == "ChArUco"
        self.marker.setEnabled(charuco)
        self.dictionary.setEnabled(charuco)
        if charuco and self.pattern.text() == "9x6":
            self.pattern.setText("7x5")
        elif not charuco and self.pattern.text() == "7x5":
            self.pattern.setText("9x6")

    def _target(self, quiet: bool = False) -> Target | None:
        """The board the fields describe; None (said, unless ``quiet``) when they do not parse."""
        try:
            cols, rows = (int(v) for v in self.pattern.text().lower().split("x"))
            return DESK.target(
                self.board.currentText(),
                (cols, rows),
                self.square.value(),
                self.marker.value(),
                self.dictionary.currentText(),
            )
        except ValueError:
            if not quiet:
                self._show_error("pattern must be COLSxROWS (chessboard: inner corners; ChArUco: squares)")
        except UserError as exc:
            if not quiet:
                self._show_error(exc.worded(window_words))
        return None

    def capture_view(self) -> None:
        last, target = self.controller.last, self._target()
        if last is None or target is None:
            return
        raw = last.raw or last.pair
        key = (target.describe(), self.square.value(), self.marker.value())
        board = (
            self.pattern.text().lower(),
            self.board.currentText(),
            self.square.value(),
            self.marker.value(),
        )
        frame = hashlib.sha1(np.ascontiguousarray(raw.left[::4, ::4]).tobytes()).hexdigest()
        if frame in self.frame_keys and self.target_key == key:
            number = self.frame_keys.index(frame) + 1
            self.board_status.setText(
                f"this frame is view {number} already; move the board (or pick another frame) "
                "and capture again"
            )
            return

        size = (raw.left.shape[1], raw.left.shape[0])
        if self.views and self.target_key == key and size != self.image_size and frame != self._odd_frame:
            assert self.image_size is not None
            (w, h), (vw, vh) = size, self.image_size
            self._odd_frame = frame
            self.board_status.setText(
                f"this frame is {w}x{h}, not the {vw}x{vh} of the {len(self.views)} views captured: not "
                f"captured (one calibration is of one image size); capture {vw}x{vh} frames, or capture "
                f"this one again to drop those views and start over at {w}x{h}"
            )
            return
        first = not self.views or self.target_key != key
        number, count, _ = self.controller.session.position()
        shown_frame = f"frame {number + 1}" if count and count > 1 and number >= 0 else ""

        def find() -> Any:
            matched, params, size = DESK.find_view(target, raw.left, raw.right)
            hint = DESK.missing_hint(target, raw.left) if matched is None else ""
            larger = DESK.larger_hint(target, raw.left) if matched is not None and first else ""
            return matched, params, size, hint, larger

        def done(value: Any) -> None:
            matched, params, size, hint, larger = value
            if matched is None:
                self.board_status.setText(
                    f"no {target.describe()} in both views: move it fully into both, or {_panel_words(hint)}"
                )
                return
            if self.image_size not in (None, size) or self.target_key not in (None, key):
                self.views, self.params, self.frame_keys, self.view_frames = [], [], [], []
            if not self.views:
                self._views_source = self._source  # the source these views are of
            self.image_size, self.target_key, self._odd_frame = size, key, None
            self._views_board = board
            self.views.append(matched)
            self.params.append(params)
            self.frame_keys.append(frame)
            self.view_frames.append(shown_frame)
            cov = DESK.coverage(self.params)
            count = f"{len(self.views)} view{'' if len(self.views) == 1 else 's'}"
            need = f"need {MIN_VIEWS}" if len(self.views) < MIN_VIEWS else "Calibrate when coverage is wide"
            larger_words = (
                f"; {_panel_words(larger).replace('the board in view', 'this board')}" if larger else ""
            )
            self.board_status.setText(
                f"{count} ({need}); coverage {cov} (each 0-1: board positions, sizes, tilts){larger_words}"
            )
            self.calibrate_button.setEnabled(len(self.views) >= MIN_VIEWS)
            self._draw_corners(last, matched)

        self._run(find, done)

    def _draw_corners(self, last: FrameResult, matched: Any) -> None:
        """Cross the captured board's corners on the left view, where the view shows them: found
        on the raw frame, they are moved onto the rectified (or swapped) image the view shows."""
        raw = last.raw or last.pair
        left, right = (np.asarray(c, np.float64).reshape(-1, 2) for c in matched[1:3])
        shown = last.pair.left
        if shown is raw.left:
            corners = left
        elif shown is raw.right:
            corners = right
        else:
            session = self.controller.session
            swapped = session.swap_views
            mapper = getattr(session.rectifier, "map_points", None)
            if mapper is None:  # rectified by something that cannot map points: draw nothing wrong
                self.linesReady.emit(None)
                return
            corners = mapper(right if swapped else left, right=swapped)
        self.linesReady.emit(corner_marks(corners, max(3.0, shown.shape[1] / 160)))
        self._marked = raw.left

    def frame_shown(self, result: FrameResult) -> None:
        """A new frame on screen: crosses drawn on an earlier one go (a live camera moves on)."""
        if self._marked is not None and (result.raw or result.pair).left is not self._marked:
            self._marked = None
            self.linesReady.emit(None)
        aside = self._aside
        raw = result.raw or result.pair
        # frames of its size without a calibration of their own (the synthetic scene's is its own)
        if aside is not None and self.controller.session.calibration is None:
            frame = raw.left
            if raw.calibration is None and aside[4] == (frame.shape[1], frame.shape[0]):
                self.apply(*aside)
                w, h = frame.shape[1], frame.shape[0]
                self.controller.view.show_status(f"{aside[2]} (made for {w}x{h} frames) is in use again")

    def calibrate(self) -> None:
        if self.image_size is None or len(self.views) < MIN_VIEWS:
            return
        key = (
            self.pattern.text().lower(),
            self.board.currentText(),
            self.square.value(),
            self.marker.value(),
        )
        if self._views_board is not None and key != self._views_board:
            pattern, board, square, _ = self._views_board
            self.board_status.setText(
                f"the {len(self.views)} views were captured with a {pattern} {board.lower()} of "
                f"{square * 1000:g} mm squares, not the board set now: set it back, or capture views "
                "of this board (the old views then go)"
            )
            return
        views, size = list(self.views), self.image_size
        last = self.controller.last
        if last is not None:
            frame = (last.raw or last.pair).left
            if (frame.shape[1], frame.shape[0]) != size:  # a rig for the old source, then set aside (review)
                w, h = size
                self.board_status.setText(
                    f"the {len(views)} views are of {w}x{h} frames, this source's are "
                    f"{frame.shape[1]}x{frame.shape[0]}: calibrate with the source they came from, or "
                    "capture views of this one (the old views then go)"
                )
                return

        def done(fit: StereoFit) -> None:
            rig = fit.rig
            worst = fit.view_errors_px.max(axis=1)
            self.outliers = [int(i) for i in np.flatnonzero(fit.outliers())]
            flagged = outlier_text([self._view_name(i, f"{worst[i]:.2f} px") for i in self.outliers])
            dropped, self._dropped_note = self._dropped_note, ""
            # 5 views over a tenth of the frame gave a rig that zoomed 1.9 x, unsaid (review)
            narrow = DESK.coverage(self.params).advice()
            self.board_status.setText(
                f"{dropped}RMS {fit.rms_px:.3f} px, baseline {rig.rectified().baseline_m:.4f} m over "
                f"{len(views)} views; per view {worst.min():.2f}-{worst.max():.2f} px; "
                f"{flagged}{f' (coverage: {narrow[2:]}, then calibrate again)' if narrow else ''}"
            )
            self.drop_button.setEnabled(
                bool(self.outliers) and len(self.views) - len(self.outliers) >= MIN_VIEWS
            )
            self._save_and_apply(rig, "board calibration")

        self._run(lambda: DESK.fit(views, size), done)

    def _view_name(self, index: int, figure: str = "") -> str:
        """'3 (frame 12)': the view's place in the capture order and the source frame it was;
        ``figure`` joins them in the brackets ('3 (frame 12, 0.52 px)')."""
        frame = self.view_frames[index] if index < len(self.view_frames) else ""
        said = ", ".join(x for x in (frame, figure) if x)
        return f"{index + 1} ({said})" if said else str(index + 1)

    def drop_outliers(self) -> None:
        """Forget the views the last calibration flagged, then calibrate again."""
        keep = [i for i in range(len(self.views)) if i not in set(self.outliers)]
        self._dropped_note = f"dropped view(s) {', '.join(self._view_name(i) for i in self.outliers)}; "
        self.views = [self.views[i] for i in keep]
        self.params = [self.params[i] for i in keep]
        self.frame_keys = [self.frame_keys[i] for i in keep]
        self.view_frames = [self.view_frames[i] for i in keep]
        self.outliers = []
        self.drop_button.setEnabled(False)
        self.calibrate()

    def _save_and_apply(
        self, rig: StereoRig, name: str, baseline_known: bool = True, estimated: bool = False
    ) -> None:
        calibration = dataclasses.replace(rig.rectified(), baseline_known=baseline_known)
        self.apply(calibration, rig, name, estimated)
        # kept in the output folder at once: a save dialog opened unasked, in the source's folder (review)
        try:
            path = self.controller.session.calibration_path(name)
            DESK.save(path, rig, self.baseline_known, self.rig_estimated)
        except (UserError, OSError) as exc:
            self._show_error(f"the {name} is in use but could not be kept ({exc}): Save… writes it elsewhere")
            return
        self.file_label.setText(f"{self.file_label.text()}; saved to {path}")
        self.controller.view.show_status(
            f"{name} in use, saved to {path} (Save… writes a copy elsewhere)", hold=True
        )

    def save(self, title: str = "Save the calibration") -> None:
        """Write the rig in use as OpenCV YAML; the label says where it went."""
        rig = self.rig
        if rig is None:
            self._show_error("no rig to save: load, calibrate or self-rectify one first")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, title, self.folders.start("stereo.yaml"), "OpenCV YAML (*.yaml *.yml);;OpenCV XML (*.xml)"
        )
        if not path:
            return
        try:
            DESK.save(path, rig, self.baseline_known, self.rig_estimated)
        except (UserError, OSError) as exc:
            self._show_error(f"could not save the calibration to {path}: {exc}")
            return
        self.folders.chose(path)
        self.file_label.setText(f"{self.file_label.text()}; saved to {path}")
        self.controller.view.show_status(f"calibration saved to {path}", hold=True)

    # ---- self-rectification ----------------------------------------------------------------
    def _raw_frame(self) -> tuple[np.ndarray, np.ndarray] | None:
        last = self.controller.last
        if last is None:
            self._show_error("open a source first: self-rectification needs stereo frames")
            return None
        raw = last.raw or last.pair
        return raw.left, raw.right

    def add_self_frame(self) -> None:
        frame = self._raw_frame()
        if frame is None:
            return
        if self.self_frames and self.self_frames[-1][0] is frame[0]:  # the same frame twice
            self.self_status.setText("this frame is added already: move the rig (or step on) between frames")
            return
        self.self_frames = [*self.self_frames, frame][-MAX_SELF_FRAMES:]
        count = len(self.self_frames)
        self.self_status.setText(f"{count} frame{'' if count == 1 else 's'} added; move the rig between them")

    def self_rectify(self) -> None:
        frame = self._raw_frame()
        if frame is None:
            return
        # the frame on screen, unless it was the last added (a still pair counted twice: review)
        added = bool(self.self_frames) and self.self_frames[-1][0] is frame[0]
        frames = (self.self_frames if added else [*self.self_frames, frame])[-MAX_SELF_FRAMES:]
        # a rig calibrated or loaded keeps its intrinsics and has its pose re-fitted; one this panel
        # self-rectified has made-up intrinsics: a pose fitted through them left its matches 1.6 px
        # apart where a fresh projective warp leaves 0.4 px (so it is done afresh)
        known = None if self.rig_estimated else self.rig
        measured = self.self_baseline.value() or None  # 0: the rig's (a projective re-do keeps it too)
        if measured is None and self.rig_estimated:
            measured = self.rig_baseline_m
        keeps_baseline = measured is not None or (known is not None and self.baseline_known)
        name = self.rig_name

        def work() -> tuple[EpipolarReport | None, SelfRectification | None, float]:
            if known is None:
                return None, DESK.self_rectify(frames, known, measured), math.nan
            # first what 'Check the current pair' finds of the rig in use
            report = DESK.check(*DESK.rectifier(known).rectify(*frames[-1]))
            if report.verdict == "rectified":
                return report, None, math.nan
            result = DESK.self_rectify(frames, known, measured)
            # its own matches can fit better while the check finds the frame worse (review)
            refitted = DESK.check(*DESK.rectifier(result.rig).rectify(*frames[-1])).vertical_rms_px
            return (report, None, refitted) if report.vertical_rms_px < refitted else (None, result, math.nan)

        def done(outcome: tuple[EpipolarReport | None, SelfRectification | None, float]) -> None:
            self.self_frames = []
            report, result, refitted = outcome
            if report is not None and not math.isnan(refitted):
                self.self_status.setText(
                    f"the re-fitted pose lines this frame up worse (vertical RMS {refitted:.2f} px) than "
                    f"{name} ({report.vertical_rms_px:.2f} px): nothing changed; add frames of a "
                    "textured, static scene and try again"
                )
                return
            if report is not None:
                self.self_status.setText(
                    f"{name} rectifies this frame already (the check: vertical RMS "
                    f"{report.vertical_rms_px:.2f} px over {report.matches} matches on the frame it "
                    f"rectifies, <= {DESK.RECTIFIED_RMS_PX} px): nothing changed"
                )
                return
            assert result is not None
            # "before" as the check measures it: on the frames the rig kept rectifies ('pose')
            with_rig = result.method == "pose"
            before = f"with {name}" if with_rig else "on the raw frames"
            if result.before_rms_px <= DESK.RECTIFIED_RMS_PX:  # a warp can only take its rows apart
                self.self_status.setText(
                    f"already rectified (vertical RMS {result.before_rms_px:.2f} px over {result.matches} "
                    f"matches {before}, <= {DESK.RECTIFIED_RMS_PX} px): nothing changed"
                )
                return
            how = {"pose": "pose re-fitted", "rows": "the right view's rows moved"}.get(
                result.method, "projective"
            )
            self.self_status.setText(
                f"vertical RMS {result.before_rms_px:.2f} px {before}, {result.after_rms_px:.2f} px after "
                f"({result.matches} matches, {plural(result.frames, 'frame')}, {how})"
                + (
                    ""
                    if keeps_baseline
                    else "; baseline unknown: depths in baselines (give it above for metres)"
                )
            )
            if with_rig:  # the loaded or calibrated rig's intrinsics, its pose fitted anew
                self._save_and_apply(result.rig, name.removesuffix(POSE_REFIT) + POSE_REFIT, keeps_baseline)
            else:
                self._save_and_apply(result.rig, SELF_RECTIFICATION, keeps_baseline, estimated=True)

        self._run(work, done)
