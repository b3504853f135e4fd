"""Image panes: an RGB view with overlays and a colour-mapped depth view with a colour bar.

Both map mouse positions to image pixels and emit ``hovered(x, y)``; the controller turns
that into a readout from the latest result.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QGraphicsItem

from app.engine.session import Display


def _image_axes(item: pg.ImageItem) -> None:
    # pyqtgraph's ImageItem indexes [x, y]; images are [row, col]
    item.setOpts(axisOrder="row-major")


class _Title(pg.LabelItem):
    """A pane's title that never widens the pane: a title longer than the pane ends in "…"
    (its whole text in the tooltip) instead (pyqtgraph's label asks for its text's width as a
    minimum, which pushed the image and the colour bar past the pane's edge)."""

    def __init__(self, text: str) -> None:
        self._full = text
        self._eliding = False
        super().__init__(text)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape)

    @property
    def full_text(self) -> str:
        """The title as set, whether or not it is shown whole."""
        return self._full

    def setText(self, text: str, **args: object) -> None:
        if not self._eliding:
            self._full = text
        super().setText(text, **args)
        if not self._eliding:
            self._elide()

    def updateMin(self) -> None:
        super().updateMin()
        height = self._sizeHint[Qt.SizeHint.MinimumSize][1]
        self._sizeHint[Qt.SizeHint.MinimumSize] = (0, height)
        self.setMinimumWidth(0)

    def resizeEvent(self, ev: object) -> None:
        super().resizeEvent(ev)
        self._elide()

    def _elide(self) -> None:
        """Show as much of the title as fits: on a second line, broken between its " · " parts,
        when one is too narrow (the legend at its end, "grey: unknown", was cut at 1366 x 768), and
        with "…" in the last line's middle (its end if it is one part) when two lines do not hold
        it all."""
        width = int(self.rect().width()) - 8  # the label's own margins
        if width <= 0 or self._eliding:
            return
        metrics = QFontMetrics(self.item.font())
        lines = title_lines(self._full, width, metrics.horizontalAdvance)
        # a last line of several parts keeps its end, where the legend is ("grey: unknown" was cut
        # at 1024 x 600: review): the "…" goes in its middle
        last = len(lines) - 1
        lines = [
            metrics.elidedText(
                line,
                Qt.TextElideMode.ElideMiddle if i == last and " · " in line else Qt.TextElideMode.ElideRight,
                width,
            )
            for i, line in enumerate(lines)
        ]
        shown = "<br>".join(html.escape(line, quote=False) for line in lines)
        self._eliding = True
        try:
            if shown != self.text:
                super().setText(shown)
        finally:
            self._eliding = False
        whole = " · ".join(lines) == self._full
        self.setToolTip("" if whole else self._full)


TITLE_LINES = 2  # a pane's title takes at most this many lines


def title_lines(text: str, width: float, advance: Callable[[str], float]) -> list[str]:
    """``text`` in at most ``TITLE_LINES`` lines of ``width`` (``advance``: a string's width), broken
    only between its " · " parts; the last line holds the rest, however long."""
    lines: list[str] = []
    for part in text.split(" · "):
        joined = f"{lines[-1]} · {part}" if lines else part
        if lines and advance(joined) > width and len(lines) < TITLE_LINES:
            lines.append(part)
        elif lines:
            lines[-1] = joined
        else:
            lines.append(part)
    return lines


def link_views(panes: list[ImagePane]) -> None:
    """Zoom and pan of ``panes`` (showing images of one size) kept alike: a view the mouse zooms
    or moves gives its range to the others as it is; a view fitted to its image (``ImagePane.fit``)
    has the others fitted too. Only the mouse's changes are passed on: a pane that resized (the
    message bar, another tab) widened its range to its own shape and passed it on, each pane did
    the same in turn, and a zoom drifted out to a thumbnail (review). (pyqtgraph's own links line
    views up by their screen positions, which shrank the images of stacked, tabbed panes.)"""
    syncing = False

    def follow(source: ImagePane) -> None:
        nonlocal syncing
        if syncing:
            return
        syncing = True
        try:
            fitted = all(source.box.autoRangeEnabled())
            x, y = source.box.viewRange()
            for pane in panes:
                if pane is source:
                    continue
                if fitted:
                    pane.fit()
                else:
                    pane.box.setRange(xRange=x, yRange=y, padding=0)
        finally:
            syncing = False

    for pane in panes:
        pane.box.sigRangeChangedManually.connect(lambda *_, pane=pane: follow(pane))


class DrawingBox(pg.ViewBox):
    """A view box whose left-button drags a tool may take (the Measure dock draws its rectangle
    with them); the others pan, as in any view box."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        # called with each left drag event; True: the tool took it (no pan)
        self.draw_drag: Callable[[object], bool] | None = None

    def mouseDragEvent(self, ev: object, axis: int | None = None) -> None:
        button = ev.button()  # type: ignore[attr-defined]
        if self.draw_drag is not None and button == Qt.MouseButton.LeftButton and self.draw_drag(ev):
            ev.accept()  # type: ignore[attr-defined]
            return
        super().mouseDragEvent(ev, axis)


RINGED_PX = 3.0  # match lines shorter than this (a rectified pair's) get a ring to be seen


class ImagePane(pg.GraphicsLayoutWidget):
    """An RGB image with an optional tint overlay and line overlay (matches, epipolar lines)."""

    hovered = Signal(int, int)
    clicked = Signal(int, int)  # a left click on an image pixel

    def __init__(self, title: str) -> None:
        super().__init__()
        self.setMinimumSize(200, 150)
        self.title = _Title(title)
        self.addItem(self.title, row=0, col=0)
        self.box = DrawingBox(lockAspect=True, invertY=True, enableMenu=False)
        self.addItem(self.box, row=1, col=0)
        self.box.setDefaultPadding(0.0)  # fitted: the image's edges touch the pane's
        self.image = pg.ImageItem()
        self.overlay = pg.ImageItem()
        # match lines and board corners: yellow over a dark edge, each line's start ringed, so that
        # a rectified pair's near-zero lines show as marks (1 px yellow dots were lost on a yellow
        # cloth: review)
        self.lines_edge = pg.PlotDataItem(connect="pairs", pen=pg.mkPen((0, 0, 0, 170), width=3))
        self.lines = pg.PlotDataItem(connect="pairs", pen=pg.mkPen((255, 230, 0, 230), width=1.5))
        self.line_starts = pg.ScatterPlotItem(
            size=7, symbol="o", pen=pg.mkPen((255, 230, 0, 230), width=1.5), brush=None
        )
        for item in (self.image, self.overlay):
            _image_axes(item)
            self.box.addItem(item)
        for item in (self.lines_edge, self.lines, self.line_starts):
            self.box.addItem(item)
        self.scene().sigMouseMoved.connect(self._moved)
        self.scene().sigMouseClicked.connect(self._clicked)
        self._shape: tuple[int, int] | None = None

    def set_title(self, text: str) -> None:
        if text != self.title.full_text:  # LabelItem re-lays out HTML on every set: milliseconds a frame
            self.title.setText(text)

    def show_image(self, rgb: np.ndarray) -> None:
        first = self._shape != rgb.shape[:2]
        # uint8 without levels is shown as it is; levels (0, 255) would rescale every pixel
        # on every frame (2 ms an image at 480 x 640)
        self.image.setImage(rgb, autoLevels=False)
        if first:
            self._shape = rgb.shape[:2]
            self.fit()

    def clear_image(self) -> None:
        """No image (and none of its overlays) until the next one; nothing to do when already clear
        (a pane without ground truth is told so every frame)."""
        if self._shape is None and self.image.image is None:
            return
        for item in (self.image, self.overlay):
            item.clear()
        self.show_lines(None)
        self._shape = None

    def fit(self) -> None:
        """Show the whole image, and keep it whole as the pane resizes, until the user zooms or
        pans (pyqtgraph's auto range, which a mouse zoom turns off)."""
        self.box.enableAutoRange(enable=True)

    def show_tint(self, mask: np.ndarray | None, colour: tuple[int, int, int] = (255, 40, 40)) -> None:
        """Tint the pixels where ``mask`` is true (semi-transparent); None clears it."""
        if mask is None:
            self.overlay.clear()
            return
        rgba = np.zeros((*mask.shape, 4), np.uint8)
        rgba[mask] = (*colour, 110)
        self.overlay.setImage(rgba, autoLevels=False)

    def show_lines(self, segments: np.ndarray | None) -> None:
        """N x 2 x 2 segments ((x0, y0), (x1, y1)) in pixels, ends kept inside the image (lines ran
        below it: review); a segment shorter than ``RINGED_PX`` (a match on its row) is ringed.
        None clears them."""
        if segments is None or len(segments) == 0:
            for item in (self.lines_edge, self.lines):
                item.setData([], [])
            self.line_starts.setData([], [])
            return
        pts = np.asarray(segments, np.float64).reshape(-1, 2).copy()
        if self._shape is not None:
            pts[:, 0] = np.clip(pts[:, 0], 0, self._shape[1] - 1)
            pts[:, 1] = np.clip(pts[:, 1], 0, self._shape[0] - 1)
        for item in (self.lines_edge, self.lines):
            item.setData(pts[:, 0], pts[:, 1])
        short = np.hypot(*(pts[1::2] - pts[0::2]).T) < RINGED_PX
        starts = pts[0::2][short]
        self.line_starts.setData(starts[:, 0], starts[:, 1])

    def pixel_at(self, pos: QPointF) -> tuple[int, int] | None:
        """The image pixel (x, y) under a scene position, or None off the image."""
        if self._shape is None or not self.box.sceneBoundingRect().contains(pos):
            return None
        p = self.box.mapSceneToView(pos)
        x, y = int(p.x()), int(p.y())
        return (x, y) if 0 <= x < self._shape[1] and 0 <= y < self._shape[0] else None

    def _moved(self, pos: QPointF) -> None:
        pixel = self.pixel_at(pos)
        if pixel is not None:
            self.hovered.emit(*pixel)

    def _clicked(self, event: object) -> None:
        if getattr(event, "button", lambda: None)() != Qt.MouseButton.LeftButton:
            return
        pixel = self.pixel_at(event.scenePos())  # type: ignore[attr-defined]
        if pixel is not None:
            self.clicked.emit(*pixel)


class DepthPane(ImagePane):
    """Disparity through a colour map, NaN black, with a colour bar (fixed or automatic range)."""

    def __init__(self, title: str) -> None:
        super().__init__(title)
        self.cmap = "turbo"
        self.bar = pg.ColorBarItem(values=(0, 96), colorMap=_colormap(self.cmap), interactive=False, width=14)
        self.addItem(self.bar, row=1, col=1)
        self.bar.setVisible(False)  # until there is an image whose colours it explains
        self.levels: tuple[float, float] = (0.0, 96.0)

    def set_colormap(self, name: str) -> None:
        self.cmap = name
        self.bar.setColorMap(_colormap(name))

    def show_rgb(self, rgb: np.ndarray, levels: tuple[float, float], answered: bool = True) -> None:
        """Show an already colour-mapped image and the range its colour bar spans; ``answered``
        False (no pixel has a value) hides the bar, whose 0-1 would read as an answer."""
        if levels != self.levels:  # the bar's axis re-lays out and repaints on every set
            self.levels = levels
            self.bar.setLevels(levels)
        self.bar.setVisible(answered)
        self.show_image(rgb)

    def clear_image(self) -> None:
        """No image, and no colour bar (an empty pane showed a 0-96 px bar: review)."""
        super().clear_image()
        self.bar.setVisible(False)


def _colormap(name: str) -> pg.ColorMap:
    """A pyqtgraph colour map sampled from the same colouring the images use."""
    samples = Display.colorize(np.linspace(0, 1, 256)[None], 0, 1, name)[0]
    return pg.ColorMap(np.linspace(0, 1, 256), samples)
