"""A live coloured point cloud of the current depth (pyqtgraph's OpenGL view: drag to orbit,
wheel to zoom), cut at a maximum depth. Built only while its tab is shown."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QVBoxLayout, QWidget

from app.engine.errors import UserError
from app.engine.session import Session
from app.engine.types import FrameResult
from app.vocabulary import window_words

MAX_POINTS = 150_000  # enough for a 640 x 480 frame at every second pixel; keeps orbiting smooth


def cloud_arrays(result: FrameResult, max_depth_m: float) -> tuple[np.ndarray, np.ndarray, int]:
    """N x 3 positions in the GL view's frame (x right, y forward along the camera's axis, z up:
    pyqtgraph orbits around a z-up world) and N x 4 colours in [0, 1], of the points nearer
    than ``max_depth_m`` (at most ``MAX_POINTS``, evenly taken), and how many points that is
    before the thinning."""
    points, colours = Session.point_cloud(result)
    near = points[:, 2] <= max_depth_m
    points, colours = points[near], colours[near]
    total = len(points)
    if len(points) > MAX_POINTS:
        keep = np.linspace(0, len(points) - 1, MAX_POINTS).astype(np.int64)
        points, colours = points[keep], colours[keep]
    pos = np.stack([points[:, 0], points[:, 2], -points[:, 1]], axis=1).astype(np.float32)
    rgba = np.concatenate([colours.astype(np.float32) / 255.0, np.ones((len(colours), 1), np.float32)], 1)
    return pos, rgba, total


class CloudView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Max depth"))
        self.max_depth = QSlider(Qt.Orientation.Horizontal)
        self.max_depth.setRange(1, 200)  # tenths of a metre: 0.1 to 20 m
        self.max_depth.setValue(50)
        self.max_depth.valueChanged.connect(self._redraw)
        self.max_label = QLabel("5.0 m")
        row.addWidget(self.max_depth, 1)
        row.addWidget(self.max_label)
        layout.addLayout(row)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        # the row and its words stay at the top until the 3D view takes the room below (without a
        # calibration the slider floated mid-pane, live over nothing: review)
        layout.addStretch(1)
        self._layout = layout
        self.view = None  # the GL widget, created when first needed
        self.scatter = None
        self.result: FrameResult | None = None
        self.positions = np.zeros((0, 3), np.float32)
        self._aimed = False
        self.colours = np.zeros((0, 4), np.float32)

    def max_depth_m(self) -> float:
        return self.max_depth.value() / 10.0

    def set_result(self, result: FrameResult) -> None:
        self.result = result
        if self.isVisible():
            self._redraw()

    def reset(self) -> None:
        """A new source: its cloud is aimed afresh, and the last source's does not stay."""
        self.result = None
        self._aimed = False
        self.positions, self.colours = np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32)
        self._clear_points()
        self.message.setText("no depth yet")

    def _clear_points(self) -> None:
        if self.scatter is not None:
            self.scatter.setData(pos=self.positions, color=self.colours)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._redraw()

    def _redraw(self) -> None:
        self.max_label.setText(f"{self.max_depth_m():.1f} m")
        if self.result is None:
            self.message.setText("no depth yet")
            return
        try:
            self.positions, self.colours, total = cloud_arrays(self.result, self.max_depth_m())
        except UserError as exc:
            self.message.setText(exc.worded(window_words))
            self.positions, self.colours = np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32)
            self._clear_points()  # the last cloud stood under the words that there is none
            self.max_depth.setEnabled(False)  # nothing for it to limit
            return
        self.max_depth.setEnabled(True)
        shown = len(self.positions)
        thinned = f", {shown} shown" if shown < total else ""
        self.message.setText(
            f"{total} points nearer than {self.max_depth_m():.1f} m{thinned} · drag to orbit, wheel to "
            "zoom · File > Export point cloud (PLY) writes every point"
        )
        self._ensure_view()
        if self.scatter is not None and self.view is not None:
            self.scatter.setData(pos=self.positions, color=self.colours, size=2, pxMode=True)
            if len(self.positions) and not self._aimed:  # look at the scene from the camera's side
                centre = np.median(self.positions, axis=0)
                self.view.setCameraPosition(
                    pos=pg.Vector(*centre), distance=float(1.5 * centre[1] + 1.0), elevation=8, azimuth=-90
                )
                self._aimed = True

    def _ensure_view(self) -> None:
        if self.view is not None:
            return
        try:
            import pyqtgraph.opengl as gl

            view = gl.GLViewWidget()
            view.setCameraPosition(distance=6.0, elevation=10, azimuth=-90)
            # opaque: depth-tested points in their own colours (pyqtgraph's default, additive
            # blending, summed 150 000 overlapping points of the demo to a white blob)
            scatter = gl.GLScatterPlotItem(glOptions="opaque")
            view.addItem(scatter)
        except Exception as exc:  # no OpenGL here (a remote desktop, a bare server)
            self.message.setText(f"the 3D view needs OpenGL, which is not available here ({exc})")
            return
        self.view, self.scatter = view, scatter
        self._layout.insertWidget(self._layout.count() - 1, view, 1)  # above the stretch, which it outgrows
        self._layout.setStretch(self._layout.count() - 1, 0)
