"""Measuring on the depth view: two clicks for a 3D distance, a rectangle for its fill rate,
mean distance and plane-fit RMS, and a histogram of the depth (the
region's with the rectangle, else the whole frame's)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from app.engine.errors import UserError
from app.engine.session import Session
from app.engine.types import FrameResult
from app.ui.views import DepthPane
from app.vocabulary import window_words

TOOLS = ("off", "distance", "region")
HINTS = {
    "off": "choose a tool",
    "distance": "click two pixels of the depth view",
    "region": "drag on the depth view to draw a rectangle; drag it or its corner to change it "
    "(the middle button pans)",
}


def on_box(box: pg.ViewBox, item: pg.GraphicsObject) -> bool:
    """Whether ``item`` is drawn in ``box`` (an item kept out of its fit is not in ``addedItems``)."""
    return item.parentItem() is box.childGroup


class MeasurePanel(QWidget):
    def __init__(self, pane: DepthPane, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pane = pane
        self.result: FrameResult | None = None
        self.clicks: list[tuple[int, int]] = []
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.tool = QComboBox()
        self.tool.addItems(TOOLS)
        self.tool.currentTextChanged.connect(self._on_tool)
        form.addRow("Tool", self.tool)
        layout.addLayout(form)
        self.figures = QLabel(HINTS["off"])
        self.figures.setWordWrap(True)
        layout.addWidget(self.figures)
        self.histogram = pg.PlotWidget()
        # a figure, not a view to zoom: the wheel meant to scroll the dock zoomed it, and the zoom
        # stayed over every later frame and tool (review); the wheel goes to the dock
        self.histogram.setMouseEnabled(x=False, y=False)
        self.histogram.setMenuEnabled(False)
        self.histogram.hideButtons()
        self.histogram.setMinimumHeight(110)
        self.histogram.setLabel("left", "pixels")
        self.bars = pg.BarGraphItem(x=[], height=[], width=1.0, brush="#80b1d3")
        self.histogram.addItem(self.bars)
        layout.addWidget(self.histogram, 1)
        self.marks = pg.ScatterPlotItem(size=10, symbol="+", pen=pg.mkPen("w", width=2))
        self.line = pg.PlotDataItem(pen=pg.mkPen((255, 255, 255, 220), width=2))
        self.roi = pg.RectROI((20, 20), (60, 40), pen=pg.mkPen("#ffeb3b", width=2))
        self.roi.sigRegionChangeFinished.connect(self._measure_region)
        self._roi_placed = False  # the rectangle was put where the pane looks for this source
        self._drawn_from: tuple[float, float] | None = None  # where a drag drawing the rectangle began
        pane.box.addItem(self.marks)
        pane.box.addItem(self.line)
        pane.clicked.connect(self._clicked)
        pane.box.draw_drag = self._draw

    def set_pane(self, pane: DepthPane) -> None:
        """Measure on ``pane`` from now on (the main engine's pane of the compare view, or the
        depth view): the marks, the line and the rectangle move there with the clicks."""
        if pane is self.pane:
            return
        old = self.pane
        old.clicked.disconnect(self._clicked)
        old.box.draw_drag = None
        for item in (self.marks, self.line, self.roi):
            if on_box(old.box, item):
                old.box.removeItem(item)
        self.pane = pane
        pane.box.addItem(self.marks)
        pane.box.addItem(self.line)
        if self.tool.currentText() == "region":
            pane.box.addItem(self.roi, ignoreBounds=True)
        pane.clicked.connect(self._clicked)
        pane.box.draw_drag = self._draw

    # ---- inputs ---------------------------------------------------------------------------
    def set_result(self, result: FrameResult) -> None:
        """A new frame: the histogram and the current measurement follow it."""
        self.result = result
        h, w = result.depth.disparity.shape[:2]
        self.roi.maxBounds = QRectF(0, 0, w, h)  # a drag stops at the image's edges
        tool = self.tool.currentText()
        if tool == "region":
            self._measure_region()  # its histogram is the region's
        else:
            self._frame_histogram()
        if tool == "distance" and len(self.clicks) == 2:
            self._measure_distance()

    def _frame_histogram(self) -> None:
        """The whole frame's histogram, computed with the display images on the worker."""
        shown = None if self.result is None else getattr(self.result.display, "histogram", None)
        self._show_histogram(shown, "whole frame")

    def _show_histogram(self, shown: tuple[np.ndarray, np.ndarray, str] | None, where: str) -> None:
        if shown is not None:
            counts, edges, unit = shown
            centres = (edges[:-1] + edges[1:]) / 2
            self.bars.setOpts(x=centres, height=counts, width=float(edges[1] - edges[0]))
            what = "depth" if unit == "m" else "disparity"
            # the region tool's figures sat above the whole frame's bars, and nothing said so (review)
            self.histogram.setLabel("bottom", f"{what}, {where}", units=unit)
        else:  # binary: no depth to count (the last continuous frame's bars stood unchanged)
            self.bars.setOpts(x=[], height=[], width=1.0)
            self.histogram.setLabel("bottom", "no depth in binary mode", units=None)

    def reset(self) -> None:
        """A new source: the marks and figures were of the last one's pixels."""
        self.result = None
        self._roi_placed = False  # another image, perhaps of another size
        self.figures.setText(HINTS[self.tool.currentText()])
        self._on_tool(self.tool.currentText())
        self.bars.setOpts(x=[], height=[], width=1.0)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.result is not None:  # it skipped frames while hidden
            self.set_result(self.result)

    def _on_tool(self, tool: str) -> None:
        self.clicks = []
        self.marks.setData([], [])
        self.line.setData([], [])
        if tool == "region":
            if not on_box(self.pane.box, self.roi):
                # not counted in the pane's fit: dragged past the image's edge, it widened the view
                # (the image moved under the mouse: review)
                self.pane.box.addItem(self.roi, ignoreBounds=True)
            self._measure_region()
        else:
            if on_box(self.pane.box, self.roi):
                self.pane.box.removeItem(self.roi)
            self.figures.setText(HINTS[tool])
            self._frame_histogram()

    def _place_roi(self) -> None:
        """The rectangle in the middle of the part of the image the pane shows, a third of it
        wide and high (it stood 60 x 40 px at the image's top-left corner: review)."""
        if self.result is None:
            return
        h, w = self.result.depth.disparity.shape[:2]
        (x0, x1), (y0, y1) = self.pane.box.viewRange()
        x0, x1 = max(0.0, x0), min(float(w), x1)
        y0, y1 = max(0.0, y0), min(float(h), y1)
        # a fitted pane shows the whole image, though its range may still be the last source's
        # until it is drawn (a new source's rectangle stood at the last one's pixels: review)
        fitted = all(self.pane.box.autoRangeEnabled())
        if fitted or x1 - x0 < 3 or y1 - y0 < 3:  # the image is out of view: its middle
            x0, x1, y0, y1 = 0.0, float(w), 0.0, float(h)
        width, height = max(2, round((x1 - x0) / 3)), max(2, round((y1 - y0) / 3))
        centre_x, centre_y = (x0 + x1) / 2, (y0 + y1) / 2
        self.roi.setPos((round(centre_x - width / 2), round(centre_y - height / 2)), finish=False)
        self.roi.setSize((width, height), finish=False)
        self._roi_placed = True

    def _draw(self, event: object) -> bool:
        """A left drag on the depth view draws the rectangle from where it began, in image pixels
        (it panned the image, and the rectangle stood where it was put: review); True when taken."""
        if self.tool.currentText() != "region" or self.result is None:
            return False
        box = self.pane.box
        h, w = self.result.depth.disparity.shape[:2]
        here = box.mapSceneToView(event.scenePos())  # type: ignore[attr-defined]
        if event.isStart():  # type: ignore[attr-defined]
            start = box.mapSceneToView(event.buttonDownScenePos())  # type: ignore[attr-defined]
            self._drawn_from = (start.x(), start.y())
        if self._drawn_from is None:
            return False
        (ax, ay), (bx, by) = self._drawn_from, (here.x(), here.y())
        x0, x1 = (min(max(round(v), 0), w) for v in sorted((ax, bx)))
        y0, y1 = (min(max(round(v), 0), h) for v in sorted((ay, by)))
        finish = bool(event.isFinish())  # type: ignore[attr-defined]
        self.roi.setPos((x0, y0), finish=False)
        self.roi.setSize((max(1, x1 - x0), max(1, y1 - y0)), finish=False)
        self._roi_placed = True
        if finish:
            self._drawn_from = None
            self._measure_region()
        return True

    def _clicked(self, x: int, y: int) -> None:
        if self.tool.currentText() != "distance":
            return
        # a third click starts a new measurement (it had paired with the second)
        self.clicks = [(x, y)] if len(self.clicks) == 2 else [*self.clicks, (x, y)]
        xs, ys = zip(*self.clicks, strict=True)
        self.marks.setData(list(xs), list(ys))
        self.line.setData(list(xs), list(ys))
        if len(self.clicks) == 2:
            self._measure_distance()
        else:
            self.figures.setText("click a second pixel")

    # ---- figures --------------------------------------------------------------------------
    def _measure_distance(self) -> None:
        if self.result is None:
            return
        a, b = self.clicks
        try:
            metres = Session.distance_m(self.result, a, b)
        except UserError as exc:
            self.figures.setText(exc.worded(window_words))
            # the line stood drawn to a pixel without depth (review): the clicks with depth stay,
            # waiting for a second
            d = self.result.depth.disparity
            with_depth = [(x, y) for x, y in (a, b) if np.isfinite(d[y, x]) and d[y, x] > 0]
            if len(with_depth) < 2:
                self.clicks = with_depth
                self.marks.setData([x for x, _ in with_depth], [y for _, y in with_depth])
                self.line.setData([], [])
            return
        self.figures.setText(f"distance {metres:.3f} m between ({a[0]}, {a[1]}) and ({b[0]}, {b[1]})")

    def _measure_region(self) -> None:
        if self.result is None or self.tool.currentText() != "region":
            return
        if not self._roi_placed:
            self._place_roi()
        (x, y), (w, h) = self.roi.pos(), self.roi.size()
        x0, y0 = round(x), round(y)
        box = (x0, y0, x0 + round(w), y0 + round(h))
        binary = getattr(self.result.display, "histogram", None) is None
        self._show_histogram(None if binary else Session.histogram(self.result, box=box), "in the region")
        try:
            stats = Session.region_stats(self.result, *box)
        except UserError as exc:
            self.figures.setText(exc.worded(window_words))
            return
        off = f" ({stats.plane_outliers} px far off the plane left out)" if stats.plane_outliers else ""
        if stats.mean_distance_m is None or stats.plane_rms_mm is None:  # no calibration: pixels alone
            self.figures.setText(
                f"{stats.pixels} px · fill rate {100 * stats.fill_rate:.1f} % · median disparity "
                f"{stats.median_disparity_px:.2f} px · disparity-plane RMS "
                f"{stats.disparity_plane_rms_px:.2f} px{off} · depths need a calibration"
            )
            return
        self.figures.setText(
            f"{stats.pixels} px · fill rate {100 * stats.fill_rate:.1f} % · mean depth (Z) "
            f"{stats.mean_distance_m:.3f} m · plane-fit RMS {stats.plane_rms_mm:.1f} mm{off} · "
            f"median disparity {stats.median_disparity_px:.2f} px"
        )

    def measured_text(self) -> str:
        return self.figures.text()
