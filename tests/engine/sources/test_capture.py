"""Live cameras on fake devices: newest frame wins, lost cameras are retried, stop is prompt."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator

import cv2
import numpy as np
import pytest

from app.engine.errors import UserError
from app.engine.sources.base import LatestFrameSlot, SourceEvent
from app.engine.sources.capture import CameraSettings, CameraSource
from app.engine.sources.spec import open_source
from app.engine.types import StereoPair

H, W = 6, 16  # one side-by-side frame: two 6 x 8 views


def numbered(marker: int, count: int | None = None) -> Iterator[np.ndarray]:
    """BGR frames: blue = frame number % 256, green = marker (+1 in the right half), red = 200."""
    n = 0
    while count is None or n < count:
        frame = np.empty((H, W, 3), np.uint8)
        frame[..., 0], frame[..., 1], frame[..., 2] = n % 256, marker, 200
        frame[:, W // 2 :, 1] = marker + 1
        yield frame
        n += 1


class FakeCamera:
    """A device behind cv2.VideoCapture's interface; it stops delivering when ``frames`` run out."""

    def __init__(
        self, frames: Iterator[np.ndarray] | None = None, interval: float = 0.002, fail: str = "false"
    ):
        self.frames = frames
        self.interval = interval
        self.fail = fail  # how a dead device answers: read() -> (False, None), or "raise"
        self.props: dict[int, float] = {}
        self.released = False

    def isOpened(self) -> bool:
        return self.frames is not None and not self.released

    def read(self) -> tuple[bool, np.ndarray | None]:
        time.sleep(self.interval)
        frame = next(self.frames, None) if self.frames is not None else None
        if frame is None and self.fail == "raise":
            raise cv2.error("device disappeared")
        return frame is not None, frame

    def set(self, prop_id: int, value: float) -> bool:
        self.props[prop_id] = value
        return True

    def release(self) -> None:
        self.released = True


class Devices:
    """The capture factory: each index hands out its planned cameras in turn, then absent ones."""

    def __init__(self, plan: dict[int, list[FakeCamera]]) -> None:
        self.plan = plan
        self.calls: Counter[int] = Counter()

    def __call__(self, index: int) -> FakeCamera:
        self.calls[index] += 1
        queue = self.plan.get(index, [])
        return queue.pop(0) if queue else FakeCamera(None)


def wait_for(condition: Callable[[], bool], timeout: float = 3.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.005)
    return False


def test_latest_returns_the_newest_frame_and_drops_stale_ones() -> None:
    camera = FakeCamera(numbered(marker=7), interval=0.001)
    source = CameraSource(CameraSettings((0,)), Devices({0: [camera]}))
    with source:
        first = source.latest_frame()
        time.sleep(0.05)  # a slow consumer: the camera runs on
        newest = source.latest_frame()
        assert first is not None and newest is not None
        assert newest.number >= first.number + 5  # frames in between were dropped, not queued
        # it is the newest: frame n carries n in its blue channel, and views are split and RGB
        assert newest.pair.left[0, 0].tolist() == [200, 7, newest.number % 256]
        assert newest.pair.right[0, 0].tolist() == [200, 8, newest.number % 256]
        after = source.latest_frame()
        assert after is not None and after.number > newest.number  # waits for a newer one
        t0 = time.monotonic()
        assert source.stop()
        assert time.monotonic() - t0 < 1.0
    assert camera.released and source.read() is None and source.ended


@pytest.mark.parametrize("fail", ["false", "raise"])
def test_a_camera_that_stops_is_reported_and_retried(fail: str) -> None:
    dying = FakeCamera(numbered(marker=30, count=5), fail=fail)
    devices = Devices({0: [FakeCamera(numbered(marker=10))], 1: [dying, FakeCamera(None), FakeCamera(None)]})
    devices.plan[1].append(FakeCamera(numbered(marker=50)))  # plugged in again on the 4th try
    events: list[SourceEvent] = []

    def handler(event: SourceEvent) -> None:
        events.append(event)
        raise RuntimeError("a faulty handler must not stop capture")

    source = CameraSource(CameraSettings((0, 1)), devices, backoff=(0.01, 0.05))
    source.on_event = handler
    with source:
        assert wait_for(lambda: any(e.kind == "recovered" for e in events))
        assert [e.message for e in events[:2]] == [
            "camera 1 stopped delivering frames; retrying",
            "camera 1 is delivering frames again",
        ]
        assert devices.calls[1] == 4 and dying.released
        pair = source.latest()
        assert pair is not None and int(pair.right[0, 0, 1]) == 50  # frames from the new device
        t0 = time.monotonic()
        assert source.stop()
        assert time.monotonic() - t0 < 1.0


def test_stop_is_prompt_while_waiting_to_retry() -> None:
    devices = Devices({0: [FakeCamera(numbered(marker=1, count=2))]})
    source = CameraSource(CameraSettings((0,)), devices, backoff=(5.0, 5.0), latest_timeout=0.05)
    source.open()
    assert wait_for(lambda: source.status.startswith("camera 0 stopped"))
    assert source.latest() is not None  # the last frame before it died is still news once
    with pytest.raises(UserError, match="camera 0 stopped delivering frames; retrying"):
        source.latest()  # while lost, the old frame is not passed off as a new one
    t0 = time.monotonic()
    assert source.stop()
    assert time.monotonic() - t0 < 1.0


def test_no_frame_yet_is_a_clear_message() -> None:
    never = FakeCamera(iter(()))  # opens, then delivers nothing
    source = CameraSource(
        CameraSettings((2,)), Devices({2: [never]}), backoff=(5.0, 5.0), latest_timeout=0.05
    )
    with source:
        assert wait_for(lambda: bool(source.status))
        with pytest.raises(UserError, match="camera 2 stopped delivering frames; retrying"):
            source.latest()


def test_a_missing_camera_is_a_user_error_at_open() -> None:
    left = FakeCamera(numbered(marker=1))
    with pytest.raises(UserError, match="camera 5 could not be opened"):
        open_source("camera:4,5", camera_factory=Devices({4: [left]}))
    assert left.released  # the camera that did open is let go


def test_a_missing_camera_with_opencv() -> None:
    if cv2.VideoCapture(63).isOpened():
        pytest.skip("this machine has a camera 63")
    with pytest.raises(UserError, match="camera 63 could not be opened"):
        open_source("camera:63")


def test_mode_reaches_the_device_and_top_bottom_splits() -> None:
    camera = FakeCamera(numbered(marker=3))
    with open_source(
        "camera:0?width=1280&height=720&fps=30&layout=tb", camera_factory=Devices({0: [camera]})
    ) as s:
        assert s.describe() == "camera 0 1280x720 @ 30 fps"
        pair = s.read()
        assert pair is not None and pair.left.shape == (H // 2, W, 3)
    expected = {cv2.CAP_PROP_FRAME_WIDTH: 1280, cv2.CAP_PROP_FRAME_HEIGHT: 720, cv2.CAP_PROP_FPS: 30}
    assert camera.props == expected


def test_latest_frame_slot_keeps_only_the_newest() -> None:
    slot = LatestFrameSlot()
    pairs = [StereoPair(np.full((2, 2, 3), i, np.uint8), np.zeros((2, 2, 3), np.uint8)) for i in range(3)]
    assert [slot.put(p) for p in pairs] == [0, 1, 2]
    frame = slot.get()
    assert frame is not None and frame.number == 2 and frame.pair is pairs[2]
    assert slot.wait_newer(2, timeout=0.01) is None
    slot.close()
    t0 = time.monotonic()
    assert slot.wait_newer(2, timeout=5.0) is None and time.monotonic() - t0 < 1.0


def test_a_one_device_camera_in_the_other_layout_says_so() -> None:
    """A top-bottom device opened side by side (the default) gets a note on its first frame."""
    from tests.engine.sources.test_sources import demo_views

    left, right = demo_views()
    frame = cv2.cvtColor(np.concatenate([left, right], axis=0), cv2.COLOR_RGB2BGR)
    devices = Devices({0: [FakeCamera(iter([frame] * 50))]})
    source = CameraSource(CameraSettings((0,)), factory=devices)
    with source:
        assert source.latest() is not None
        assert wait_for(lambda: bool(source.notes))
    (note,) = source.notes
    assert "camera 0 was opened side by side" in note and "camera:0?layout=tb" in note
