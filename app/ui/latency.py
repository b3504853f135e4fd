"""Per-frame latency by stage over the last few hundred frames, with frames per second."""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import pyqtgraph as pg

from app.engine.session import STAGES

HISTORY = 300
REDRAW_S = 0.1
COLOURS = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69")


class LatencyPlot(pg.PlotWidget):
    def __init__(self) -> None:
        super().__init__()
        self.setMinimumHeight(120)
        self.setLabel("left", "ms")
        self.setLabel("bottom", "frame")
        self.addLegend(offset=(-5, 5), colCount=len(STAGES))
        self.showGrid(y=True, alpha=0.3)
        self.history: dict[str, deque[float]] = {s: deque(maxlen=HISTORY) for s in STAGES}
        self.arrivals: deque[float] = deque(maxlen=HISTORY)
        self.curves = {
            s: self.plot([], [], name=s, pen=pg.mkPen(c, width=1.5))
            for s, c in zip(STAGES, COLOURS, strict=True)
        }
        self.frames = 0
        self._drawn = 0.0

    def add(self, timings: dict[str, float]) -> None:
        self.frames += 1
        now = time.perf_counter()
        self.arrivals.append(now)
        for stage, values in self.history.items():
            values.append(float(timings.get(stage, 0.0)))
        if now - self._drawn < REDRAW_S:  # redrawing seven curves every frame costs the GUI thread
            return
        self._drawn = now
        x = np.arange(self.frames - len(self.arrivals), self.frames)
        for stage, curve in self.curves.items():
            curve.setData(x, np.fromiter(self.history[stage], float))
        self.setXRange(max(0, self.frames - HISTORY), max(self.frames, 10), padding=0)
        self.setTitle(f"{self.fps():.1f} fps" if self.frames > 1 else "one frame so far")

    def fps(self) -> float:
        if len(self.arrivals) < 2:
            return 0.0
        span = self.arrivals[-1] - self.arrivals[0]
        return (len(self.arrivals) - 1) / span if span > 0 else 0.0
