"""Drives the session from the GUI: one worker thread, newest frame wins.

- Parameter changes become a frozen ``DepthRequest`` (copied from the controls) and a new
  generation number; results of an older generation are dropped for still images.
- Live sources are pulled: a GUI timer asks for the newest frame and skips the tick while
  the worker is busy, so frames are dropped, never queued.
- The worker reports through one signal; results are applied on the GUI thread in one place.
- Errors become messages; closing interrupts the engine and joins the worker.
"""

from __future__ import annotations

import dataclasses
import gc
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from app.engine.errors import Interrupted, UserError
from app.engine.session import FrameSource, Session
from app.engine.types import DepthRequest, FrameResult, Mode, StereoPair
from app.ui.render import DisplaySpec, render
from app.vocabulary import window_words

TICK_MS = 30
QUICK_AFTER_MS = 300  # a full answer slower than this is preceded by a quick one
QUICK_LEVELS = 6  # the quick answer: quantized depth in this many planes (a few network passes)
PREVIEW_FOLLOWS = f"preview ({QUICK_LEVELS} levels), the full answer follows"
PREVIEW_REFUSED = f"preview ({QUICK_LEVELS} levels); the full answer was refused: see the message above"


class MainView(Protocol):
    def show_pair(self, pair: StereoPair) -> None: ...

    def show_result(self, result: FrameResult) -> None: ...

    def show_error(self, message: str) -> None: ...

    def clear_error(self, message: str) -> None: ...

    def show_status(self, message: str, hold: bool = False) -> None: ...

    def show_refused(self) -> None: ...

    def raise_budget(self, minimum_ms: float) -> bool: ...

    def show_pending(self) -> None: ...


@dataclass(frozen=True)
class Job:
    generation: int
    request: DepthRequest
    still: StereoPair | None  # reprocess this pair; None: grab the next frame
    display: DisplaySpec = field(default_factory=DisplaySpec)
    quick: bool = False  # a quick answer shown while the full one is computed


@dataclass(frozen=True)
class Outcome:
    job: Job
    result: FrameResult | None = None
    error: str | None = None
    ended: bool = False
    task: Callable[[Any], None] | None = None  # a background task's continuation
    value: Any = None  # the task's return value
    source: FrameSource | None = None  # a newly opened source
    first: StereoPair | None = None  # its only pair, for still sources
    description: str = ""
    refused: bool = False  # the engine refused the request (a setting): cleared by a later answer
    minimum_ms: float | None = None  # refused for a budget below this (the least that answers)
    pair: StereoPair | None = None  # a refused frame's images (shown: the view froze otherwise)
    failed_open: bool = False  # a source could not be opened: cleared when another one opens


class SessionController(QObject):
    workDone = Signal(object)  # Outcome, emitted on the worker thread, handled on the GUI thread
    progress = Signal(str)  # long preparations (an engine build) report here, from the worker
    pairGrabbed = Signal(object)  # StereoPair: shown at once, before its depth
    sourceChanged = Signal(str)
    sourceEnded = Signal()
    resultShown = Signal(object)

    def __init__(
        self,
        session: Session,
        view: MainView,
        request: Callable[[], DepthRequest],
        display: Callable[[], DisplaySpec] = DisplaySpec,
        tick_ms: int = TICK_MS,
    ) -> None:
        super().__init__()
        reserve_gui_core()
        settle_heap()
        self.session = session
        self.view = view
        self._request_fn = request
        self._display_fn = display
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bi3d-session")
        self._busy = False
        self._dirty = False
        self._closing = False
        self._generation = 0
        self._failed = -1  # the generation whose answer ended in an error (no answer is coming)
        self._request = request()
        self._still: StereoPair | None = None
        self._live = False
        self._resumable = False  # a live source that has not ended (pausing and stepping apply)
        self._paused = False
        self._step = False  # paused: pull one new frame
        self._full_ms: float | None = None  # how long the last full answer took
        self._quick_for = -1  # the generation whose quick answer was already asked for
        self.showing_quick = False  # the result shown last is a quick answer; the full one follows
        self._settle_after = False  # settle the heap once the first result of a source is shown
        self._pending: list[Callable[[], Outcome]] = []  # source openings and tasks, run in order
        self.last: FrameResult | None = None
        # the error on screen about the settings (the engine refused them), if any: it goes when
        # a later answer comes, so it does not stand beside that answer (nor hide later news)
        self._refusal: str | None = None
        self._open_error: str | None = None  # the last failed open's error, while it may be on screen
        self.workDone.connect(self._on_done)
        self.pairGrabbed.connect(self._pair_grabbed)
        self._timer = QTimer(self, interval=tick_ms)
        self._timer.timeout.connect(self._tick)

    # ---- inputs from the UI ---------------------------------------------------------------
    def request_changed(self, answered_again: bool = False) -> None:
        """The controls changed; ``answered_again``: a new answer even where only Min confidence
        moved (the engine or the calibration changed)."""
        try:
            request = self._request_fn()
        except UserError as exc:  # an impossible combination of controls: say so, keep the old one
            self.view.show_error(exc.worded(window_words))  # stays: answers still come from the old one
            return
        if not answered_again and self._rethreshold(request):
            return
        self._generation += 1
        self._request = request
        self._dirty = True
        self._kick()
        self.view.show_pending()  # a held frame's panes say their answer is of the settings before

    def _rethreshold(self, request: DepthRequest) -> bool:
        """Only Min confidence moved, over a held frame whose answer is of the settings before:
        that answer shown at the new threshold at once, without a new one (each move computed the
        whole frame again, 3 s on the aloe pair: review). True when done."""
        last = self.last
        if (
            last is None
            or request.min_confidence == self._request.min_confidence
            or not self.holds_still()
            or self._busy
            or self._dirty
            or self.showing_quick
            or last.generation != self._generation
        ):
            return False
        try:
            only = dataclasses.replace(self._request, min_confidence=request.min_confidence) == request
        except ValueError:  # a field that does not compare (arrays): answer afresh
            only = False
        if not only or not self.session.rethreshold(last, request.min_confidence):
            return False
        self._request = request
        self.view.show_result(last)
        self.resultShown.emit(last)
        return True

    def answer_pending(self, shown: FrameResult | None = None) -> bool:
        """Whether the frame held is being answered again for changed controls: the answer shown
        (``shown``, or the last) is of the settings before."""
        shown = shown or self.last
        return (
            self.holds_still()
            and shown is not None
            and shown.generation != self._generation
            and self._failed != self._generation
        )

    def holds_still(self) -> bool:
        """Whether the frame shown is held (an image pair, a paused or ended source): answered
        again when a setting changes, not as a stream."""
        return self._still is not None and not self._live

    def refresh(self) -> None:
        """Recompute the current frame (engine or calibration changed)."""
        self.request_changed(answered_again=True)

    def open_source(self, opener: Callable[[], FrameSource], description: str) -> None:
        """Open a source on the worker; on failure the current source keeps running."""
        job = Job(self._generation, self._request, None)

        def work() -> Outcome:
            try:
                source = opener()
            except UserError as exc:
                return Outcome(job, error=exc.worded(window_words), failed_open=True)
            first = source.read() if getattr(source, "frame_count", None) == 1 else None
            return Outcome(job, source=source, first=first, description=description)

        self._pending.append(work)
        self._kick()

    @property
    def gives_frames(self) -> bool:
        """Whether the source can still give new frames (paused or not): a still pair and an
        ended source cannot."""
        return self._resumable

    def run_task(self, fn: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Run ``fn`` on the worker between frames; ``done(value)`` runs on the GUI thread."""
        job = Job(self._generation, self._request, None)
        self._pending.append(lambda: Outcome(job, task=done, value=fn()))
        self._kick()

    def showing_held_frame(self) -> StereoPair | None:
        """The source's frame on screen while no newer one is being pulled (paused, or a seek
        shown before Play), as the source gave it (before rectification); None while playing."""
        if self._live or self.last is None or self.session.source is None:
            return None
        return self.last.raw or self.last.pair

    def set_paused(self, paused: bool) -> None:
        """Stop (or resume) pulling frames; while paused the frame shown stays live."""
        if self._paused == paused:
            return
        self._paused = paused
        self.session.hold_source(paused)
        if paused and self._live:
            self._live = False
            self._timer.stop()
            self._hold_last()
        elif not paused and self._resumable:
            self._live = True
            self._still = None
            self._timer.start()

    def step(self) -> None:
        """While paused: the next frame of the source."""
        if self._paused and self._resumable:
            self._step = True
            self._dirty = True
            self._kick()

    def seek(self, index: int) -> None:
        """Jump to frame ``index`` of a seekable source; paused or ended, that frame is shown."""

        def done(_value: Any) -> None:
            self._resumable = True
            if self._paused or not self._live:
                self._step = True
                self._dirty = True
            if not self._paused and not self._live:
                self._live = True
                self._timer.start()

        self.run_task(lambda: self.session.seek(index), done)

    def _hold_last(self) -> None:
        """Keep the last frame shown as a still pair that every control change recomputes."""
        if self.last is not None:
            self._still = self.last.raw or self.last.pair

    # ---- the loop ------------------------------------------------------------------------
    def _tick(self) -> None:
        if self._live:
            self._dirty = True
            self._kick()

    def _kick(self) -> None:
        if self._busy or self._closing:
            return
        if self._pending:
            self._submit(self._pending.pop(0))
            return
        if not self._dirty or (self.session.source is None and self._still is None):
            return
        pull = self._live or self._step
        still = None if pull else self._still
        if still is not None and self._wants_quick():
            self._quick_for = self._generation  # the full answer follows: stay dirty
            request = dataclasses.replace(
                self._request, mode=Mode.QUANTIZED, planes=(), levels=QUICK_LEVELS, range=None, budget_ms=None
            )
            job = Job(self._generation, request, still, self._display_fn(), quick=True)
        else:
            self._dirty = False
            self._step = False
            job = Job(self._generation, self._request, still, self._display_fn())
        self._submit(lambda: self._work(job))

    def _pair_grabbed(self, pair: StereoPair) -> None:
        """A grabbed frame's images, shown before its depth only while no depth of the source is
        shown, or when the source is not playing (a step, a seek): the first frame of a source waits
        for nothing, but a playing one showed frame N + 1's left image under frame N's red overlay,
        beside N's depth and counter (review)."""
        if self.last is None or not self._live:  # a step or seek shows its frame at once too
            self.view.show_pair(pair)

    def _wants_quick(self) -> bool:
        """A quick answer first when the full one will keep the user waiting (> 300 ms)."""
        request = self._request
        if self._quick_for == self._generation or request.budget_ms is not None:
            return False
        if self._full_ms is not None:
            return self._full_ms > QUICK_AFTER_MS
        return request.mode in (Mode.CONTINUOUS, Mode.SELECTIVE) and self.session.engine.name == "bi3d"

    def _submit(self, fn: Callable[[], Outcome]) -> None:
        self._busy = True
        future = self._executor.submit(fn)
        future.add_done_callback(self._finished)

    def _work(self, job: Job) -> Outcome:
        """Worker thread: grab (or reuse) a pair and process it."""
        capture = 0.0
        pair = job.still
        if pair is None:
            try:
                pair, capture = self.session.grab()  # the session records what it grabs
            except (UserError, OSError) as exc:  # the source broke (files deleted, a camera gone)
                message = exc.worded(window_words) if isinstance(exc, UserError) else str(exc)
                return Outcome(job, error=f"the source stopped: {message}", ended=True)
            if pair is None:
                return Outcome(job, ended=True)
            if not self._closing:
                self.pairGrabbed.emit(pair)
        try:
            result = self.session.process(pair, job.request, job.generation, capture, preview=job.quick)
        except UserError as exc:  # the engine refused the settings (a budget below its fastest answer)
            minimum = getattr(exc, "minimum_ms", None)  # a budget below the fastest answer
            return Outcome(job, error=exc.worded(window_words), refused=True, minimum_ms=minimum, pair=pair)
        result.display = render(result, job.display)
        if job.quick:
            # the mode in the title is the quick one's: say it stands in for the one asked for
            title = result.display.depth_title  # the preview said first: a narrow pane cut it off the end
            result.display.depth_title = f"{PREVIEW_FOLLOWS} · {title}"
        return Outcome(job, result=result)

    def _finished(self, future: Future[Outcome]) -> None:
        """Worker thread: turn whatever happened into one queued signal."""
        try:
            outcome = future.result()
        except Interrupted:
            outcome = Outcome(Job(-1, self._request, None))
        except UserError as exc:
            outcome = Outcome(Job(-1, self._request, None), error=exc.worded(window_words))
        except Exception as exc:  # a bug must not kill the window: report it
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            outcome = Outcome(Job(-1, self._request, None), error=f"unexpected error: {detail}")
        if not self._closing:
            self.workDone.emit(outcome)

    def _on_done(self, outcome: Outcome) -> None:
        """GUI thread: the one place results are applied."""
        self._busy = False
        if outcome.refused and outcome.job.generation < self._generation:
            # refused settings the user has changed since: their own answer follows (a late
            # refusal of 15 ms moved a budget raised to 100 back down to 44: code review)
            self._kick()
            return
        if outcome.minimum_ms is not None and self.view.raise_budget(outcome.minimum_ms):
            # the slider reached below anything that answers: it moves to the least that does
            # (the refusal stood, and the refused budget was kept for the next start: review);
            # the raised budget is the request at once (raise_budget), no refusal in between
            return
        if outcome.error:
            if not self._dirty:  # the answer asked for last ended here: none is coming
                self._failed = self._generation
            self.view.show_error(outcome.error)
            self.view.show_pending()  # computing no more (before a refusal marks the answer shown)
            if outcome.pair is not None:  # a playing source's images go on beside the last depth
                self.view.show_pair(outcome.pair)
            self._refusal = outcome.error if outcome.refused else None
            self._open_error = outcome.error if outcome.failed_open else self._open_error
            if outcome.refused:
                self.view.show_refused()  # what the controls say was chosen is no longer so
            if outcome.refused and self.showing_quick:
                self._preview_stays()
            if outcome.ended:  # a broken source stops where it is; its last frame stays live
                self._stop_pulling()
        elif outcome.task is not None:
            outcome.task(outcome.value)
        elif outcome.source is not None:
            self._adopt(outcome.source, outcome.first, outcome.description)
        elif outcome.ended:
            self._stop_pulling()
            self.sourceEnded.emit()
        elif outcome.result is not None:
            if not outcome.job.quick:
                self._full_ms = outcome.result.timings.get("depth_total") or None
            self.showing_quick = outcome.job.quick
            if self._refusal is not None and not outcome.job.quick:
                self.view.clear_error(self._refusal)  # the settings answer again: the refusal is over
                self._refusal = None
            self._show(outcome.result)
        self._kick()

    def _preview_stays(self) -> None:
        """The full answer was refused after its preview was shown: the preview's title no longer
        promises it (it said "the full answer follows" for good)."""
        last = self.last
        if last is None or last.display is None or PREVIEW_FOLLOWS not in last.display.depth_title:
            return
        last.display.depth_title = last.display.depth_title.replace(PREVIEW_FOLLOWS, PREVIEW_REFUSED)
        self.view.show_result(last)

    def _stop_pulling(self) -> None:
        """The source gives no more frames: the last one shown stays live for every control."""
        self._timer.stop()
        self._live = False
        self._resumable = False
        self._hold_last()

    def _adopt(self, source: FrameSource, first: StereoPair | None, description: str) -> None:
        self.session.set_source(source, description)
        self.session.hold_source(self._paused)  # opened while paused: it waits too
        if self._open_error is not None:  # a source opened after all: the last failure is over
            self.view.clear_error(self._open_error)
            self._open_error = None
        self._settle_after = True
        self._live = first is None and not self._paused
        self._resumable = first is None
        self._still = first
        self.last = None
        self._full_ms = None
        if first is not None:
            self.view.show_pair(first)  # the images at once; depth follows
        self.request_changed()  # the controls may have moved while the source opened
        if self._live:
            self._timer.start()
        else:
            self._timer.stop()
        self.sourceChanged.emit(description)

    def _show(self, result: FrameResult) -> None:
        stale = result.generation < self._generation and not self._live
        if stale:
            return  # a newer request is already on its way
        if self._paused and not self._live:
            self._still = result.raw or result.pair  # a stepped frame becomes the one held
        t0 = time.perf_counter()
        self.view.show_result(result)
        result.timings["draw"] = (time.perf_counter() - t0) * 1000
        self.last = result
        if self._settle_after:  # the engine has built and warmed up on this source by now
            self._settle_after = False
            settle_heap()
        self.resultShown.emit(result)

    # ---- shutdown ------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop the timer, interrupt the engine, join the worker, close the source."""
        self._closing = True
        self._timer.stop()
        self.session.interrupt.set()
        source = self.session.source
        if getattr(source, "live", False) and source is not None:
            source.close()  # a camera's close wakes a worker waiting in latest(); files close after
        self._executor.shutdown(wait=True, cancel_futures=True)
        self.session.close()  # finishes a recording too
        self.session.interrupt.clear()


def settle_heap() -> None:
    """Exempt what exists now (imported modules, the window, a loaded model) from the cyclic
    garbage collector's full passes.

    A full pass walks every tracked object while holding the GIL, so with torch, Qt and
    pyqtgraph loaded it stops the GUI thread for 70-130 ms now and then, whichever thread
    triggered it. Frozen objects are never freed by the collector (reference counting still
    frees them), which suits long-lived objects; frames and results made later stay collected.
    """
    gc.freeze()


def reserve_gui_core() -> None:
    """Leave one core to the GUI thread: the engines' thread pools would otherwise take them all
    and the window would stutter while a frame is computed."""
    import os

    import cv2
    import torch

    workers = max(1, (os.cpu_count() or 2) - 1)
    torch.set_num_threads(min(torch.get_num_threads(), workers))
    cv2.setNumThreads(workers)
