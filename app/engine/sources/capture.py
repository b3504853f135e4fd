"""Live stereo cameras: two devices, or one side-by-side device, read on their own thread.

The capture thread writes into a ``LatestFrameSlot``: one lock-protected slot where a new
pair replaces the old one, so a slow consumer always gets the newest pair and stale ones are
dropped, never queued. A camera that stops delivering (unplugged, driver error) is reported
once as an event ("camera 1 stopped delivering frames; retrying") and reopened with
exponential backoff; nothing raises on the capture thread. ``close()`` joins it within 1 s.

Pairs from two devices are formed by reading both back to back: there is no hardware sync.
The backend is injectable: ``factory(index)`` returns an object with ``cv2.VideoCapture``'s
``isOpened``, ``read``, ``set`` and ``release``, so tests run on fakes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.sources.base import Frame, LatestFrameSlot, Layout, StereoSource, log, split_frame, to_rgb
from app.engine.sources.layout import layout_note
from app.engine.types import StereoPair
from app.engine.validation import Bounds, number


class CaptureBackend(Protocol):
    def isOpened(self) -> bool: ...

    def read(self) -> tuple[bool, Any]: ...

    def set(self, prop_id: int, value: float) -> bool: ...

    def release(self) -> None: ...


CaptureFactory = Callable[[int], CaptureBackend]


def open_device(index: int) -> CaptureBackend:
    """``cv2.VideoCapture`` on a device index, without OpenCV's warnings when it is missing."""
    # OpenCV prints WARN lines for a missing index; our own one-line error says it better
    level = cv2.utils.logging.getLogLevel()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    try:
        return cv2.VideoCapture(index)
    finally:
        cv2.utils.logging.setLogLevel(level)


@dataclass(frozen=True)
class CameraSettings:
    """Devices (one side-by-side device, or left and right) and the mode to ask them for.

    ``width`` and ``height`` are each device's frame size (a ZED over UVC: 2560 x 720).
    """

    devices: tuple[int, ...]
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    layout: Layout = "sbs"

    def __post_init__(self) -> None:
        if len(self.devices) not in (1, 2) or len(set(self.devices)) != len(self.devices):
            raise UserError(f"give one side-by-side camera or two different ones, got {self.devices}")
        if any(d < 0 for d in self.devices):
            raise UserError(f"camera indices start at 0, got {self.devices}")
        limits = {"width": (16384, "px"), "height": (16384, "px"), "fps": (1000, "frames/s")}
        for name, (top, unit) in limits.items():
            value = getattr(self, name)
            if value is not None:
                number(value, f"camera {name}", Bounds(0, top, low_open=True), unit)


class CameraSource(StereoSource):
    """Stereo pairs from live cameras; ``latest()`` gives the newest, ``read()`` the next new one."""

    live = True

    def __init__(
        self,
        settings: CameraSettings,
        factory: CaptureFactory = open_device,
        backoff: tuple[float, float] = (0.1, 2.0),
        latest_timeout: float = 1.0,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.slot = LatestFrameSlot()
        self.latest_timeout = latest_timeout
        self._factory = factory
        self._backoff = backoff
        self._delay = backoff[0]
        self._backends: list[CaptureBackend | None] = []
        self._failing: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._layout_checked = False

    def describe(self) -> str:
        s = self.settings
        which = (
            f"cameras {s.devices[0]} + {s.devices[1]}" if len(s.devices) == 2 else f"camera {s.devices[0]}"
        )
        mode = f" {s.width}x{s.height}" if s.width and s.height else ""
        return which + mode + (f" @ {s.fps:g} fps" if s.fps else "")

    # ---- consumer side ---------------------------------------------------------------------
    def _next(self) -> Frame | None:
        while not self.slot.closed:
            frame = self.slot.wait_newer(self.frame_number, timeout=0.1)
            if frame is not None:
                return frame
        return None

    def latest(self) -> StereoPair | None:
        """The newest pair, waiting up to ``latest_timeout`` s for one newer than the last taken.

        Returns the same pair again when the camera is merely slow, None once closed, and a
        ``UserError`` with the status while a camera is lost or before the first frame.
        """
        self.open()
        frame = self.slot.wait_newer(self.frame_number, self.latest_timeout)
        if self.slot.closed:
            self._finish()
            return None
        if frame is None and not self._failing:
            frame = self.slot.get()
        if frame is None:
            raise UserError(self.status or f"{self.describe()} has delivered no frame yet; check the camera")
        self.frame_number = frame.number
        return frame.pair

    # ---- opening and stopping --------------------------------------------------------------
    def _open(self) -> None:
        for device in self.settings.devices:
            backend = self._connect(device)
            if backend is None:
                self._release_all()
                raise UserError(
                    f"camera {device} could not be opened; check that it is connected and not in use"
                )
            self._backends.append(backend)
        self._thread = threading.Thread(target=self._run, name="bi3d-capture", daemon=True)
        self._thread.start()

    def _close(self) -> None:
        self.stop()

    def add_capture_listener(self, listener: Callable[[StereoPair], object]) -> None:
        """Call ``listener`` with every captured pair, on the capture thread (frames the
        consumer skips included)."""
        self.slot.listeners.append(listener)

    def remove_capture_listener(self, listener: Callable[[StereoPair], object]) -> None:
        if listener in self.slot.listeners:
            self.slot.listeners.remove(listener)

    def stop(self, timeout: float = 1.0) -> bool:
        """Stop the capture thread; False when a driver call kept it from ending in time."""
        self._stop.set()
        self.slot.close()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():  # stuck in a driver read; it is a daemon and ends with the process
            self._emit("error", f"{self.describe()} did not stop within {timeout:g} s; a driver call blocks")
            return False
        return True

    def _connect(self, device: int) -> CaptureBackend | None:
        try:
            backend = self._factory(device)
            if not backend.isOpened():
                backend.release()
                return None
            s = self.settings
            for prop, value in ((cv2.CAP_PROP_FRAME_WIDTH, s.width), (cv2.CAP_PROP_FRAME_HEIGHT, s.height)):
                if value:
                    backend.set(prop, float(value))
            if s.fps:
                backend.set(cv2.CAP_PROP_FPS, float(s.fps))
            return backend
        except Exception as exc:  # a driver error while probing counts as "not there (yet)"
            log.debug("opening camera %s failed: %s", device, exc)
            return None

    def _release_all(self) -> None:
        for backend in self._backends:
            if backend is not None:
                backend.release()
        self._backends = []

    # ---- the capture thread ----------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._capture_once()
                except Exception as exc:  # the thread must outlive any single bad frame
                    self._emit("error", f"{self.describe()}: {exc}; retrying")
                    self._wait_backoff()
        finally:
            self._release_all()

    def _capture_once(self) -> None:
        frames = []
        for position, backend in enumerate(self._backends):
            frame = _read(backend)
            if frame is None:
                self._reconnect(position)
                return
            frames.append(frame)
        if len(frames) == 2:
            left, right = to_rgb(frames[0]), to_rgb(frames[1])
        else:
            self._check_layout(frames[0])
            left, right = split_frame(frames[0], self.settings.layout)
        self.slot.put(StereoPair(left, right, time.monotonic()))
        self._delay = self._backoff[0]
        for device in sorted(self._failing):
            self._emit("recovered", f"camera {device} is delivering frames again")
        self._failing.clear()

    def _check_layout(self, frame: np.ndarray) -> None:
        """Once, on the first frame of a one-device camera: does it look like the other layout?"""
        if self._layout_checked:
            return
        self._layout_checked = True
        device = self.settings.devices[0]
        fix = f"camera:{device}?layout={{layout}} (with the other options as before)"
        note = layout_note(frame, self.settings.layout, f"camera {device}", fix)
        if note is not None:
            self.notes.append(note)

    def _reconnect(self, position: int) -> None:
        """Report a lost camera once, then reopen it with growing pauses until it answers."""
        device = self.settings.devices[position]
        if device not in self._failing:
            self._failing.add(device)
            self._emit("lost", f"camera {device} stopped delivering frames; retrying")
        old, self._backends[position] = self._backends[position], None
        if old is not None:
            old.release()
        while self._wait_backoff():
            backend = self._connect(device)
            if backend is not None:
                self._backends[position] = backend
                return

    def _wait_backoff(self) -> bool:
        """Pause before the next attempt (doubling up to the maximum); False when stopping."""
        stopping = self._stop.wait(self._delay)
        self._delay = min(self._delay * 2, self._backoff[1])
        return not stopping


def _read(backend: CaptureBackend | None) -> Any:
    """A frame, or None when the device failed (a vanished device may also raise)."""
    if backend is None:
        return None
    try:
        ok, frame = backend.read()
    except Exception:
        return None
    return frame if ok and frame is not None else None
