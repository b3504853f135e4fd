"""The interface every stereo source implements, and the helpers sources share.

A source is opened, read until it ends, and closed::

    with open_source("camera:0,1") as source:
        for pair in source:
            ...

``read()`` returns every frame in order and None once the source has ended. ``latest()`` is
what a GUI timer pulls: the newest frame, skipping frames the consumer was too slow to take
(for files, which have no clock, it is the next frame); cameras keep it in a
``LatestFrameSlot``, where a new frame replaces the old one. Sources report what happens to them
(a camera lost and found again, the end of a video) as ``SourceEvent``s through ``on_event``
and keep the last message in ``status``. Pairs are RGB uint8 copies, never capture buffers.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal, NamedTuple, Self

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.types import StereoPair

Layout = Literal["sbs", "tb"]  # side by side (left | right) or top-bottom (left over right)
LAYOUTS: tuple[Layout, ...] = ("sbs", "tb")
log = logging.getLogger(__name__)


class Frame(NamedTuple):
    """A pair and its number: frames the source produced since it opened, from 0."""

    pair: StereoPair
    number: int  # a gap between consecutive numbers means frames were dropped


@dataclass(frozen=True)
class SourceEvent:
    kind: str  # "lost", "recovered", "error", "skipped" (a damaged frame of a sequence) or "ended"
    message: str
    time: float = field(default_factory=time.monotonic)


EventHandler = Callable[[SourceEvent], None]


class StereoSource(ABC):
    """Base of all sources: open/read/close, iteration, ``latest()`` and events."""

    live = False  # True when frames arrive on the source's own clock (cameras)

    def __init__(self) -> None:
        self.on_event: EventHandler | None = None  # called on the capture thread for live sources
        self.status = ""
        # what the source found wrong with its own frames (a video in the other layout), for
        # the front ends to show beside the depth; the frames are still given as asked
        self.notes: list[str] = []
        self.frame_number = -1  # number of the last frame returned
        self._opened = False
        self._closed = False
        self._ended = threading.Event()

    @abstractmethod
    def describe(self) -> str:
        """One line for status bars and logs, e.g. 'video rig.mp4 (side by side)'."""

    @abstractmethod
    def _next(self) -> Frame | None:
        """The next frame, or None when there is none left."""

    def _open(self) -> None:
        """Acquire files or devices; raise ``UserError`` when that is impossible."""
        return None

    def _close(self) -> None:
        """Release what ``_open`` acquired."""
        return None

    @property
    def frame_count(self) -> int | None:
        """Frames in the source, or None when unknown or endless."""
        return None

    def frame_files(self, index: int) -> tuple[Path, Path] | None:
        """The left and right image files of frame ``index`` (None: frames not read from files)."""
        return None

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    @property
    def seekable(self) -> bool:
        """Whether ``seek`` can jump to any frame (files, datasets, recordings, most videos)."""
        return False

    def seek(self, index: int) -> None:
        """Make frame ``index`` (0-based) the next one ``read`` returns, even after the end."""
        count = self.frame_count
        if not self.seekable or count is None:
            raise UserError(
                f"{self.describe()} cannot seek: it has no numbered frames; pause and step instead"
            )
        if not 0 <= index < count:
            raise UserError(f"frame {index} is outside {self.describe()} (frames 0 to {count - 1})")
        self.open()
        self._seek(index)
        self.frame_number = index - 1
        self._ended.clear()

    def _seek(self, index: int) -> None:
        """Position the underlying files so that ``_next`` returns frame ``index``."""
        raise NotImplementedError

    def timestamp_of(self, index: int) -> float:
        """The timestamp (s) of frame ``index``, for a seek bar's label."""
        return float(index)

    @property
    def has_times(self) -> bool:
        """Whether ``timestamp_of`` gives times the frames were taken at (a video's, a recording's),
        not frame numbers (a folder of pairs): only then is playback slower than real time."""
        return False

    def open(self) -> None:
        """Acquire files or devices (once); a closed source stays closed: open a new one."""
        if not self._opened and not self._closed:
            self._open()
            self._opened = True

    def close(self) -> None:
        self._closed = True
        if self._opened:
            self._opened = False
            self._close()

    def read(self) -> StereoPair | None:
        """The next frame; None once the source has ended (never an exception for that)."""
        self.open()
        frame = None if self.ended or self._closed else self._next()
        if frame is None:
            self._finish()
            return None
        self.frame_number = frame.number
        return frame.pair

    def latest(self) -> StereoPair | None:
        """The newest frame (None once ended). Sources without a clock return the next one."""
        return self.read()

    def latest_frame(self) -> Frame | None:
        """``latest()`` with its frame number, so a consumer can tell what it skipped."""
        pair = self.latest()
        return None if pair is None else Frame(pair, self.frame_number)

    def _finish(self) -> None:
        if not self._ended.is_set():
            self._ended.set()
            self._emit("ended", f"{self.describe()} ended after {plural(self.frame_number + 1, 'frame')}")

    def _emit(self, kind: str, message: str) -> None:
        self.status = message
        log.info("%s: %s", kind, message)
        handler = self.on_event
        if handler is None:
            return
        try:
            handler(SourceEvent(kind, message))
        except Exception:  # a faulty handler must not stop a capture thread
            log.exception("source event handler failed")

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[StereoPair]:
        while (pair := self.read()) is not None:
            yield pair


class LatestFrameSlot:
    """A single frame slot: ``put`` replaces what is there; readers take the newest."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._frame: Frame | None = None
        self._closed = False
        # called with every pair put, on the capturing thread (a recorder keeps every frame)
        self.listeners: list[Callable[[StereoPair], object]] = []

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, pair: StereoPair) -> int:
        with self._cond:
            number = self._frame.number + 1 if self._frame else 0
            self._frame = Frame(pair, number)
            self._cond.notify_all()
        for listener in list(self.listeners):
            listener(pair)
        return number

    def get(self) -> Frame | None:
        with self._cond:
            return self._frame

    def wait_newer(self, number: int, timeout: float) -> Frame | None:
        """The newest frame if it is newer than ``number``, waiting up to ``timeout`` s for one."""

        def newer() -> bool:
            return self._frame is not None and self._frame.number > number

        with self._cond:
            self._cond.wait_for(lambda: self._closed or newer(), timeout)
            return self._frame if newer() else None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def to_rgb(frame: np.ndarray) -> np.ndarray:
    """A capture frame (BGR, BGRA or grey; 8 or 16 bit) as a new H x W x 3 RGB uint8 array."""
    if frame.dtype == np.uint16:
        frame = (frame >> 8).astype(np.uint8)
    if frame.dtype != np.uint8:
        raise UserError(f"frames of type {frame.dtype} are not supported; use an 8- or 16-bit source")
    if frame.ndim == 2 or frame.shape[2] == 1:
        return cv2.cvtColor(frame, cv2.COLOR_GRAY2RGB)
    code = cv2.COLOR_BGRA2RGB if frame.shape[2] == 4 else cv2.COLOR_BGR2RGB
    return cv2.cvtColor(frame, code)


def split_frame(frame: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Left and right views of one stereo frame, as separate RGB copies.

    An odd width (or height, top-bottom) loses its middle column (row) so the views match.
    """
    rgb = to_rgb(frame)
    h, w = rgb.shape[:2]
    if layout == "sbs":
        half = w // 2
        left, right = rgb[:, :half], rgb[:, w - half :]
    else:
        half = h // 2
        left, right = rgb[:half], rgb[h - half :]
    return np.ascontiguousarray(left), np.ascontiguousarray(right)


def plural(count: int, noun: str) -> str:
    """'1 frame', '2 frames'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts frame2 before frame10 (digit runs compare as numbers)."""
    parts = re.split(r"(\d+)", name.lower())
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts if p)
