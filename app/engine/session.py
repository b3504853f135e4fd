"""The pipeline behind the UI: source -> rectify -> depth -> flow -> result, with timings.

A ``Session`` owns the engines and the current source. It does no threading itself: the
UI calls ``process`` from one worker thread (one call at a time) and pulls frames with
``grab``. Everything it returns is a plain value the GUI thread can draw.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from app.engine.depth.engines import DepthEngine, EngineOptions, build_engine
from app.engine.types import Calibration, DepthRequest, DepthResult, StereoPair

STAGES = ("capture", "rectify", "features", "planes", "refine", "flow", "draw")
AFTER_PLANES = ("refine", "readout", "subpixel", "check")  # engine stages the "refine" entry adds up


class FrameSource(Protocol):
    """What the session needs from a source: the next pair, or None when it has ended."""

    def read(self) -> StereoPair | None: ...

    def close(self) -> None: ...


class Rectifies(Protocol):
    def rectify(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class FlowBackend(Protocol):
    name: str

    def compute(self, previous: np.ndarray, current: np.ndarray) -> Any: ...


@dataclass
class FrameResult:
    """Everything the UI draws for one frame."""

    index: int
    generation: int
    pair: StereoPair
    request: DepthRequest
    depth: DepthResult
    baseline: DepthResult | None = None  # SGBM beside Bi3D when comparing
    flow: np.ndarray | None = None  # H x W x 2 pixels, left frame to left frame
    calibration: Calibration | None = None
    timings: dict[str, float] = field(default_factory=dict)
    engine_reason: str = ""
    display: Any = None  # display images prepared off the GUI thread (the UI's business)
    raw: StereoPair | None = None  # the pair before rectification (chessboard capture needs it)


class Session:
    def __init__(self, options: EngineOptions | None = None) -> None:
        self._lock = threading.Lock()
        # set to stop a long computation early (a closing window); engines check it between planes
        self.interrupt = threading.Event()
        self.options = options or EngineOptions()
        self.engine: DepthEngine
        self.engine_reason = ""
        self.engine, self.engine_reason = self._build(self.options)
        self.baseline: DepthEngine | None = None
        self.source: FrameSource | None = None
        self.calibration: Calibration | None = None
        self.rectifier: Rectifies | None = None
        self.flow: FlowBackend | None = None
        self._previous_left: np.ndarray | None = None
        self._last_pair: StereoPair | None = None
        self._frames = 0

    # ---- configuration (GUI thread; takes effect at the next process call) ---------------
    def set_engine(self, options: EngineOptions) -> str:
        """Build the engine the options describe; a ``UserError`` leaves the old one in place."""
        engine, reason = self._build(options)
        with self._lock:
            self.options, self.engine, self.engine_reason = options, engine, reason
        return reason

    def _build(self, options: EngineOptions) -> tuple[DepthEngine, str]:
        engine, reason = build_engine(options, "binary")
        if hasattr(engine, "interrupt"):
            engine.interrupt = self.interrupt
        return engine, reason

    def set_compare(self, compare: bool) -> None:
        """Run SGBM beside the main engine (when the main engine is not SGBM already)."""
        baseline = None
        if compare and self.engine.name != "sgbm":
            baseline, _ = build_engine(dataclasses.replace(self.options, engine="sgbm"))
        with self._lock:
            self.baseline = baseline

    def set_source(self, source: FrameSource) -> None:
        """Switch to a new, already opened source; the old one is closed."""
        with self._lock:
            old, self.source = self.source, source
            self._previous_left, self._last_pair = None, None
        if old is not None and old is not source:
            old.close()

    def set_calibration(self, calibration: Calibration | None, rectifier: Rectifies | None = None) -> None:
        with self._lock:
            self.calibration, self.rectifier = calibration, rectifier

    def set_flow(self, backend: FlowBackend | None) -> None:
        with self._lock:
            self.flow, self._previous_left = backend, None

    # ---- frames (worker thread) ------------------------------------------------------
    def grab(self) -> tuple[StereoPair | None, float]:
        """The newest pair from the source (None when it has ended) and the capture time in ms."""
        source = self.source
        if source is None:
            return None, 0.0
        t0 = time.perf_counter()
        latest: Callable[[], StereoPair | None] | None = getattr(source, "latest", None)
        pair = latest() if latest is not None else source.read()
        return pair, (time.perf_counter() - t0) * 1000

    @property
    def last_pair(self) -> StereoPair | None:
        return self._last_pair

    def process(
        self, pair: StereoPair, request: DepthRequest, generation: int = 0, capture_ms: float = 0.0
    ) -> FrameResult:
        """Rectify, compute depth (and the baseline, and flow), and time every stage."""
        with self._lock:
            engine, baseline, flow = self.engine, self.baseline, self.flow
            rectifier, calibration = self.rectifier, self.calibration or pair.calibration
        timings = {"capture": capture_ms}
        raw = pair
        t0 = time.perf_counter()
        left, right = pair.left, pair.right
        if rectifier is not None:
            left, right = rectifier.rectify(left, right)
            pair = dataclasses.replace(pair, left=left, right=right)
        timings["rectify"] = (time.perf_counter() - t0) * 1000
        if calibration is not None and request.calibration is None:
            request = dataclasses.replace(request, calibration=calibration)
        depth = engine.compute(left, right, request)
        for stage in ("features", "planes"):
            timings[stage] = depth.timings.get(stage, 0.0)
        # everything after the plane sweep: upsampling, readout, the sub-pixel refinement, the plane check
        timings["refine"] = sum(depth.timings.get(s, 0.0) for s in AFTER_PLANES)
        timings["depth_total"] = depth.timings.get("total", 0.0)
        if engine.name == "sgbm":
            timings["features"] = depth.timings.get("match", 0.0)
        base = baseline.compute(left, right, request) if baseline is not None else None
        flow_field = None
        t1 = time.perf_counter()
        if flow is not None:
            previous = self._previous_left
            if previous is not None and previous.shape == left.shape:
                flow_field = np.asarray(flow.compute(previous, left))
            self._previous_left = left
        timings["flow"] = (time.perf_counter() - t1) * 1000
        self._frames += 1
        self._last_pair = pair
        return FrameResult(
            self._frames, generation, pair, request, depth, base, flow_field, calibration, timings,
            self.engine_reason, raw=raw,
        )  # fmt: skip

    def close(self) -> None:
        with self._lock:
            source, self.source = self.source, None
        if source is not None:
            source.close()
