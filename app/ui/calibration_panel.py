"""Calibration panel: load a file, check the rig without a target, calibrate with a chessboard.

Heavy work (feature matching, calibration) runs on the session's worker between frames.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.calibration.check import EpipolarReport, check_epipolar
from app.engine.calibration.chessboard import (
    MIN_VIEWS,
    Coverage,
    align_pair,
    calibrate_stereo,
    detect_corners,
    view_parameters,
)
from app.engine.calibration.files import load_calibration, load_for_frames, write_opencv_yaml
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.errors import UserError
from app.engine.types import Calibration
from app.ui.controller import SessionController

VERDICT_COLOURS = {
    "rectified": "#2e7d32",
    "marginal": "#f9a825",
    "not rectified": "#c62828",
    "unknown": "#777777",
}
LINE_GAIN = 10.0  # vertical offsets are drawn this many times larger, so sub-pixel errors show


def match_segments(report: EpipolarReport, gain: float = LINE_GAIN) -> np.ndarray:
    """N x 2 x 2 segments on the left image: from each match to where its partner's row is,
    with the vertical gap amplified by ``gain``."""
    pl, pr = report.points_left, report.points_right
    if len(pl) == 0:
        return np.zeros((0, 2, 2))
    end = pl.copy().astype(np.float64)
    end[:, 1] += gain * (pr[:, 1] - pl[:, 1])
    return np.stack([pl.astype(np.float64), end], axis=1)


class CalibrationPanel(QWidget):
    calibrationChanged = Signal(object, object)  # Calibration | None, StereoRig | None
    linesReady = Signal(object)  # segments to draw on the left view

    def __init__(self, controller: SessionController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.corners: list[tuple[np.ndarray, np.ndarray]] = []
        self.params: list[np.ndarray] = []
        self.image_size: tuple[int, int] | None = None
        self.rig: StereoRig | None = None
        layout = QVBoxLayout(self)
        layout.addWidget(self._file_group())
        layout.addWidget(self._check_group())
        layout.addWidget(self._board_group())
        layout.addStretch(1)

    # ---- groups --------------------------------------------------------------------------
    def _file_group(self) -> QGroupBox:
        box = QGroupBox("Calibration file")
        v = QVBoxLayout(box)
        load = QPushButton("Load…")
        load.clicked.connect(self._pick_file)
        self.file_label = QLabel("none: depth in pixels only")
        self.file_label.setWordWrap(True)
        v.addWidget(load)
        v.addWidget(self.file_label)
        return box

    def _check_group(self) -> QGroupBox:
        box = QGroupBox("Check (no target)")
        v = QVBoxLayout(box)
        run = QPushButton("Check the current pair")
        run.clicked.connect(self.run_check)
        self.verdict = QLabel("")
        self.figures = QLabel("")
        self.figures.setWordWrap(True)
        for w in (run, self.verdict, self.figures):
            v.addWidget(w)
        return box

    def _board_group(self) -> QGroupBox:
        box = QGroupBox("Chessboard calibration")
        form = QFormLayout(box)
        self.pattern = QLineEdit("9x6")
        self.square = QDoubleSpinBox(decimals=4, minimum=0.001, maximum=1.0, value=0.025, suffix=" m")
        capture = QPushButton("Capture view")
        capture.clicked.connect(self.capture_view)
        self.calibrate_button = QPushButton("Calibrate")
        self.calibrate_button.clicked.connect(self.calibrate)
        self.calibrate_button.setEnabled(False)
        self.board_status = QLabel("inner corners COLSxROWS; capture varied views")
        self.board_status.setWordWrap(True)
        form.addRow("Pattern", self.pattern)
        form.addRow("Square", self.square)
        form.addRow(capture, self.calibrate_button)
        form.addRow(self.board_status)
        return box

    # ---- file ----------------------------------------------------------------------------
    def _pick_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Calibration", "", "Calibration (*.yaml *.yml *.xml *.json *.txt);;All (*)"
        )
        if path:
            self.load(Path(path))

    def load(self, path: Path) -> None:
        last = self.controller.last
        frame = (last.raw or last.pair).left if last is not None else None
        try:
            if frame is None:
                calibration, rig, note = *load_calibration(path), None
            else:
                calibration, rig, note = load_for_frames(path, None, (frame.shape[1], frame.shape[0]))
        except UserError as exc:
            self.controller.view.show_error(str(exc))
            return
        self.apply(calibration, rig, path.name)
        if note:
            self.file_label.setText(f"{self.file_label.text()}; {note}")

    def apply(self, calibration: Calibration, rig: StereoRig | None, name: str) -> None:
        self.rig = rig
        rectifier = Rectifier(rig) if rig is not None else None
        self.controller.session.set_calibration(calibration, rectifier)
        kind = "raw rig, frames are rectified" if rig is not None else "rectified pair"
        mm = calibration.baseline_m * 1000
        self.file_label.setText(f"{name}: f {calibration.focal_px:.1f} px, baseline {mm:.1f} mm ({kind})")
        self.calibrationChanged.emit(calibration, rig)
        self.controller.refresh()

    def note_source_calibration(self, calibration: Calibration | None) -> None:
        """Say so when the depth is metric thanks to the source (a dataset's calib.txt)."""
        if calibration is None or self.rig is not None or not self.file_label.text().startswith("none"):
            return
        mm = calibration.baseline_m * 1000
        self.file_label.setText(f"from the source: f {calibration.focal_px:.1f} px, baseline {mm:.1f} mm")

    # ---- check ---------------------------------------------------------------------------
    def run_check(self) -> None:
        last = self.controller.last
        if last is None:
            self.controller.view.show_error("open a source first: the check needs a stereo pair")
            return
        pair = last.pair  # rectified when a rig is loaded

        def done(report: EpipolarReport) -> None:
            colour = VERDICT_COLOURS.get(report.verdict, "#777777")
            self.verdict.setText(f"<b style='color:{colour}'>{report.verdict.upper()}</b>")
            r = report
            if r.misalignment is None:
                self.figures.setText(f"{r.matches} matches. {r.reason}")
            else:
                self.figures.setText(
                    f"vertical offset: mean {r.vertical_mean_px:.2f} px, RMS {r.vertical_rms_px:.2f} px, "
                    f"p95 {r.vertical_p95_px:.2f} px over {r.matches} matches; {r.misalignment}. {r.reason}"
                )
            self.linesReady.emit(match_segments(report))

        self.controller.run_task(lambda: check_epipolar(pair.left, pair.right), done)

    # ---- chessboard ----------------------------------------------------------------------
    def _pattern(self) -> tuple[int, int] | None:
        try:
            cols, rows = (int(v) for v in self.pattern.text().lower().split("x"))
        except ValueError:
            self.controller.view.show_error("pattern must be COLSxROWS inner corners, e.g. 9x6")
            return None
        return cols, rows

    def capture_view(self) -> None:
        last, pattern = self.controller.last, self._pattern()
        if last is None or pattern is None:
            return
        raw = last.raw or last.pair

        def find() -> Any:
            import cv2

            grays = [cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) for img in (raw.left, raw.right)]
            cl, cr = (detect_corners(g, pattern) for g in grays)
            if cl is not None and cr is not None:
                cr = align_pair(cl, cr, pattern)  # the same physical corner first in both views
            return (cl, cr), (raw.left.shape[1], raw.left.shape[0])

        def done(value: Any) -> None:
            (cl, cr), size = value
            if cl is None or cr is None:
                self.board_status.setText(
                    f"no {pattern[0]}x{pattern[1]} board in both views; move it into view"
                )
                return
            if self.image_size not in (None, size):
                self.corners, self.params = [], []
            self.image_size = size
            self.corners.append((cl, cr))
            self.params.append(view_parameters(cl, pattern, size))
            cov = Coverage.of(self.params)
            self.board_status.setText(f"{len(self.corners)} views (need {MIN_VIEWS}); coverage {cov}")
            self.calibrate_button.setEnabled(len(self.corners) >= MIN_VIEWS)

        self.controller.run_task(find, done)

    def calibrate(self) -> None:
        pattern = self._pattern()
        if pattern is None or self.image_size is None:
            return
        left = [c[0] for c in self.corners]
        right = [c[1] for c in self.corners]
        square, size = self.square.value(), self.image_size

        def done(value: tuple[StereoRig, float]) -> None:
            rig, rms = value
            self.board_status.setText(f"RMS {rms:.3f} px, baseline {rig.rectified().baseline_m:.4f} m")
            path, _ = QFileDialog.getSaveFileName(
                self, "Save calibration", "stereo.yaml", "OpenCV YAML (*.yaml)"
            )
            if path:
                write_opencv_yaml(path, rig)
            self.apply(rig.rectified(), rig, Path(path).name if path else "chessboard calibration")

        self.controller.run_task(lambda: calibrate_stereo(left, right, pattern, square, size), done)
