"""Per-frame latency by stage over the last few hundred frames, with frames per second and the
newest frame's time per stage, each in its curve's colour (a legend over the plot hid the lines
and gave no figures: review)."""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics

from app.engine.session import STAGES

HISTORY = 300
RATE_FRAMES = 10  # the frames per second said are the last ones' (the seek bar's speed: its last 10)
REDRAW_S = 0.1
COLOURS = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fccde5", "#fdb462", "#b3de69")
TITLE_SIZE = "9pt"
SPANS = (10, 30, 100, HISTORY)  # frames the x axis shows: the smallest that holds the frames seen


# how an engine's stages are named where they differ from Bi3D's (SGBM's matching is timed as
# "features", its readout as "refine": "features 72 refine 4" named stages SGBM has not: review)
ENGINE_STAGES = {"sgbm": {"features": "match", "refine": "readout"}}


class FramesAgoAxis(pg.AxisItem):
    """The x axis in frames before the newest, said in its ticks: "now" at 0 and "90 frames ago"
    at the leftmost major tick inside the plot (bare -9 .. -1 gave no unit; an axis title takes
    height a 150 px dock lacks). Minor ticks read their own values ("8" thrice was 7.5-8.5)."""

    _major: float | None = None  # the major ticks' spacing of the last layout
    _inside = 0.0  # a tick left of this is at the plot's edge, where its label is hidden
    _px_per_frame = 0.0  # of the last layout
    _named: tuple[float, float] | None = None  # the tick that says "frames ago", and its label's width
    _metrics: QFontMetrics  # the tick font's, set with ``_named``

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:
        levels = super().tickValues(minVal, maxVal, size)
        self._major = levels[0][0] if levels else None
        self._inside = minVal + 0.08 * (maxVal - minVal)
        self._px_per_frame = size / (maxVal - minVal) if maxVal > minVal else 0.0
        return levels

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if spacing != self._major:  # a minor tick's label under the long one is left out (review:
            # "2 25 frames ag24")
            return [self._minor(v, scale) for v in values]
        inside = [v for v in values if self._inside <= v < 0]
        named = min(inside) if inside else None
        strings = [
            "now" if v == 0 else f"{-v * scale:g} frames ago" if v == named else f"{-v * scale:g}"
            for v in values
        ]
        self._metrics = QFontMetrics(self.style.get("tickFont") or self.font())  # for the minor ticks next
        self._named = (
            None if named is None else (named, self._metrics.horizontalAdvance(strings[values.index(named)]))
        )
        return strings

    def _minor(self, value: float, scale: float) -> str:
        text = "now" if value == 0 else f"{-value * scale:g}"
        if self._named is None:
            return text
        named, width = self._named
        room = (width + self._metrics.horizontalAdvance(text)) / 2 + self._metrics.horizontalAdvance(" ")
        return "" if abs(value - named) * self._px_per_frame < room else text


class MsAxis(pg.AxisItem):
    """The y axis of a short plot: one labelled tick, the one nearest the middle (at the top or
    the bottom its label is cut), where two labels would not fit (a 70 px dock drew "200" over
    "100": review)."""

    ROOM_PX = 40  # height under which two tick labels overlap

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:
        levels = super().tickValues(minVal, maxVal, size)
        if size >= self.ROOM_PX or not levels:
            return levels
        spacing, values = levels[0]
        if not len(values):
            return levels[:1]
        middle = (minVal + maxVal) / 2
        return [(spacing, [min(values, key=lambda v: (abs(v - middle), -v))])]


class LatencyPlot(pg.PlotWidget):
    def __init__(self) -> None:
        super().__init__(axisItems={"bottom": FramesAgoAxis("bottom"), "left": MsAxis("left")})
        self.setMinimumHeight(70)  # a short window shrinks it (the images keep the room)
        self.setLabel("left", "ms")
        # no axis title below: the plot's own height is what a 150 px dock has to give (review: 50 px)
        self.getAxis("bottom").setToolTip("frames ago: the newest frame at 0")
        self.showGrid(y=True, alpha=0.3)
        # Axes that move in steps: an axis re-lays out and repaints its tick text whenever its
        # range moves, 5 ms a redraw each (measured offscreen). The newest frame stays at 0 on the
        # right; the span grows with the frames seen (300 put ten frames in the right thirtieth)
        self._span = 0
        self._show_span(SPANS[0])
        self._y_top = 0.0
        self.history: dict[str, deque[float]] = {s: deque(maxlen=HISTORY) for s in STAGES}
        self.arrivals: deque[float] = deque(maxlen=HISTORY)
        # the frames of the stream now running: a paused or ended source that plays again (a
        # seek, a resume) starts its rate afresh instead of counting the time it stood still
        self.streamed: deque[float] = deque(maxlen=HISTORY)
        self.curves = {
            s: self.plot([], [], name=s, pen=pg.mkPen(c, width=1.5))
            for s, c in zip(STAGES, COLOURS, strict=True)
        }
        self.frames = 0
        self.still = False
        self.ended = False  # the source ended: the next streamed frame starts a new rate
        self.names: dict[str, str] = {}
        self._drawn = 0.0
        self.first_total: float | None = None  # the first frame (start-up, warm-up) is marked apart
        self.first_marker = pg.ScatterPlotItem(size=9, symbol="t", brush=pg.mkBrush("#fb8072"))
        self.addItem(self.first_marker)

    def reset(self) -> None:
        """Forget every frame (a new source). Not ``clear``: PlotWidget binds that to its plot."""
        for values in self.history.values():
            values.clear()
        self.arrivals.clear()
        self.streamed.clear()
        self.ended = False
        self.frames = 0
        self.first_total = None
        self.first_marker.setData([], [])
        for curve in self.curves.values():
            curve.setData([], [])
        self._show_span(SPANS[0])
        self.setTitle("")

    def add(self, timings: dict[str, float], still: bool = False, engine: str = "") -> None:
        """One frame's stage times; ``still``: a held frame (an image pair, a paused source)
        answered again after a change, where frames per second would measure the user's clicks;
        ``engine``: the depth engine's name, whose stages the text names (``ENGINE_STAGES``)."""
        self.names = ENGINE_STAGES.get(engine, {})
        if (self.still or self.ended) and not still:  # playing again: its rate counts afresh (after
            self.streamed.clear()  # an end, Play's replay read 0.34 fps, the wait counted: review)
        self.still, self.ended = still, False
        self.frames += 1
        now = time.perf_counter()
        self.arrivals.append(now)
        self.streamed.append(now)
        for stage, values in self.history.items():
            values.append(float(timings.get(stage, 0.0)))
        if self.frames == 1:
            self.first_total = float(sum(timings.get(s, 0.0) for s in STAGES))
            self.first_marker.setData([0], [0])
            self.first_marker.setToolTip(
                f"first frame: {self.first_total:.0f} ms (start-up); the axis follows the later frames"
            )
        if now - self._drawn < REDRAW_S:  # redrawing seven curves every frame costs the GUI thread
            return
        self._drawn = now
        x = np.arange(1 - len(self.arrivals), 1)
        single = len(x) == 1  # one frame is a point, which a line does not draw: marked with dots
        for (stage, curve), colour in zip(self.curves.items(), COLOURS, strict=False):
            data = np.fromiter(self.history[stage], float)
            curve.setData(x, data, symbol="o" if single else None, symbolSize=7, symbolBrush=colour)
        if self.frames == len(self.arrivals):  # the first frame is still in the history
            self.first_marker.setData([x[0]], [0])
        else:
            self.first_marker.setData([], [])
        top = self.y_top()
        if top != self._y_top:
            self._y_top = top
            self.setYRange(0, top, padding=0)
        self._show_span(next(n for n in SPANS if n >= len(self.arrivals)))
        self.setTitle(f"{self.rate_text()} · {self.stage_text()}", size=TITLE_SIZE)

    def _show_span(self, frames: int) -> None:
        """The x axis over the last ``frames`` frames, set only when that changes."""
        if frames != self._span:
            self._span = frames
            self.setXRange(-frames, 0, padding=0)

    def stage_text(self) -> str:
        """The newest frame's stages that took time, in ms, each in its curve's colour."""
        parts = [
            f'<span style="color:{colour}">{self.names.get(stage, stage)} {values[-1]:.0f}</span>'
            for (stage, values), colour in zip(self.history.items(), COLOURS, strict=True)
            if values and values[-1] >= 0.5
        ]
        return " ".join(parts) + " ms" if parts else ""

    def mark_ended(self) -> None:
        """The source has ended: the rate shown is of the frames that were, not a live one."""
        running = self.frames >= 2 and not self.still
        self.ended = True
        self.setTitle(
            f"source ended · {self.rate_text()} while it ran" if running else "source ended", size=TITLE_SIZE
        )

    def y_top(self) -> float:
        """The y range: the 95th percentile of the stages after the first frame, with room above;
        while the first frame is the only one, its own stages (an image pair answered once
        showed an empty 0-10 ms plot with its 900 ms off the top)."""
        if len(self.arrivals) == 1:
            return _nice_ceiling(1.25 * max(v[0] for v in self.history.values())) or 10.0
        first = 1 if self.frames == len(self.arrivals) else 0
        later = [np.fromiter(v, float)[first:] for v in self.history.values()]
        values = np.concatenate([v for v in later if v.size]) if any(v.size for v in later) else np.zeros(0)
        if not values.size:
            return 10.0
        # the newest frame stays in view too (its 403 ms planes ran off a 170 ms axis: review)
        newest = max(v[-1] for v in self.history.values() if v)
        return _nice_ceiling(max(1.25 * float(np.percentile(values, 95)), newest))

    def rate_text(self) -> str:
        """Frames per second from the frames actually shown (one frame every N s when slow); for a
        held frame, what its last answer took."""
        if self.still:
            last = sum(values[-1] for values in self.history.values() if values)
            return f"held frame: answered in {last:.0f} ms"
        if self.frames < 2:
            return "one frame so far"
        if len(self.streamed) < 2:
            return "playing again: measuring the rate"
        fps = self.fps()
        if 0 < fps < 1:
            return f"{fps:.2f} fps (one frame every {1 / fps:.1f} s)"
        return f"{fps:.1f} fps"

    def fps(self) -> float:
        """Frames per second of the stream now running (since it last started to play), over its
        last ``RATE_FRAMES`` frames: over the whole history, "9.2 fps" stood beside "0.31x real
        time" of a 10 fps video for a minute after a slower setting (review)."""
        recent = list(self.streamed)[-RATE_FRAMES:]
        if len(recent) < 2:
            return 0.0
        span = recent[-1] - recent[0]
        return (len(recent) - 1) / span if span > 0 else 0.0


def _nice_ceiling(value: float) -> float:
    """The smallest of 10, 15, 20, 30, 50, 70, 100, 150 ... ms at or above ``value``: the y axis
    moves only when the latency changes by a step, not on every redraw."""
    for exponent in range(1, 8):
        for mantissa in (1.0, 1.5, 2.0, 3.0, 5.0, 7.0):
            if mantissa * 10**exponent >= value:
                return mantissa * 10**exponent
    return value
