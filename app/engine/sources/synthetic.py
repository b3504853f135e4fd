"""A moving synthetic stereo scene with exact ground truth, to show the live path without cameras.

One wide scene is rendered once when the source opens (``app.engine.synthetic.layered``); each
frame is a window that pans across it along a smooth path. Both views and the disparity are
cropped with the same integer offset, so a left pixel and its match in the right view stay
``d`` pixels apart and the cropped disparity is still exact. Frames cost one array copy,
far below 100 ms at 480 x 640, and frame ``i`` is the same for every source with the seed.

``read()`` returns frames 0, 1, 2, ... at once, timestamped ``i / fps``; ``latest()``
follows the wall clock at ``fps`` like a camera, so a slow consumer skips frames.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.engine.errors import UserError
from app.engine.memory import require
from app.engine.sources.base import Frame, StereoSource
from app.engine.types import Calibration, StereoPair
from app.engine.validation import Bounds, integer, number

PAN_PERIOD_S = 6.0  # one sweep across the wide scene and back
BASELINE_M = 0.12  # a nominal rig, so depth in metres can be shown


@dataclass(frozen=True)
class SyntheticConfig:
    height: int = 480
    width: int = 640
    fps: float = 10.0
    seed: int = 0
    frames: int | None = None  # None: endless
    max_disparity: float | None = None  # None: a quarter of the width, at most 192 px
    photometric: bool = True  # gain, gamma, blur and noise differ between the views

    def __post_init__(self) -> None:
        if self.height < 16 or self.width < 16:
            raise UserError(f"synthetic size must be at least 16x16, got {self.height}x{self.width}")
        number(self.fps, "synthetic fps", Bounds(0, 1000, low_open=True), "frames/s")
        integer(self.seed, "synthetic seed", Bounds(-(2**63), 2**63 - 1))  # what torch's generator takes
        if self.frames is not None and self.frames < 0:
            raise UserError(f"synthetic frames must be 0 or more, got {self.frames}")
        if self.max_disparity is not None:
            number(self.max_disparity, "synthetic max_disparity", Bounds(0, 1024, low_open=True), "px")

    @property
    def disparity_range(self) -> float:
        return self.max_disparity or min(192.0, self.width / 4)


def render_bytes(height: int, width: int) -> float:
    """Peak bytes of the one-off render: the wide scene (a tenth taller, a third wider) holds
    about 32 float32 values a pixel at once (views, depth tests, a layer's texture and mask,
    sampling grids)."""
    return 32 * 4 * (height + height // 10) * (width + width // 3)


class SyntheticSource(StereoSource):
    """Pans a window across a pre-rendered wide scene; ``gt_disparity`` is attached."""

    def __init__(self, config: SyntheticConfig = SyntheticConfig()) -> None:
        super().__init__()
        self.config = config
        w, h = float(config.width), float(config.height)  # a nominal pinhole, 53 degrees across
        self.calibration = Calibration(focal_px=w, baseline_m=BASELINE_M, cx=w / 2, cy=h / 2)
        self._left = self._right = np.zeros((0, 0, 3), np.uint8)
        self._disparity = np.zeros((0, 0), np.float32)
        self._clock_start: float | None = None
        self._held = False  # paused in the window: the scene waits (``hold``)
        self._listeners: list[Callable[[StereoPair], object]] = []

    @property
    def frame_count(self) -> int | None:
        return self.config.frames

    def describe(self) -> str:
        c = self.config
        # width x height, as images are named (the spec is HEIGHTxWIDTH: "480x640" read as 480 wide)
        return f"synthetic {c.width} x {c.height} px @ {c.fps:g} fps, seed {c.seed}"

    def _open(self) -> None:
        from app.engine.synthetic.layered import SceneConfig, render_scene, to_uint8  # torch: only when used

        c = self.config
        require(
            render_bytes(c.height, c.width),
            f"rendering a synthetic {c.height}x{c.width} scene",
            "ask for a smaller size, e.g. synthetic:480x640",
        )
        # room to pan: a third of a width sideways, a tenth of a height up and down; five
        # layers at most keep the one-off render near a second on a small CPU
        wide = SceneConfig(
            c.height + c.height // 10,
            c.width + c.width // 3,
            c.disparity_range,
            max_layers=5,
            photometric=c.photometric,
        )
        sample = render_scene(c.seed, wide)
        self._left, self._right = to_uint8(sample.left), to_uint8(sample.right)
        self._disparity = sample.disparity.numpy().astype(np.float32)

    def offset(self, index: int) -> tuple[int, int]:
        """Top-left corner (y, x) of frame ``index``'s window in the wide scene."""
        h, w = self._disparity.shape
        room_y, room_x = h - self.config.height, w - self.config.width
        phase = 2 * math.pi * index / (self.config.fps * PAN_PERIOD_S)
        # start in the middle at full speed, so even the first frames move
        x = room_x * (0.5 + 0.5 * math.sin(phase))
        y = room_y * (0.5 + 0.5 * math.sin(1.5 * phase))
        return round(y), round(x)  # integer: views and disparity are cropped without resampling

    def frame(self, index: int) -> StereoPair:
        """Frame ``index``: the same for every source with this config."""
        self.open()
        y, x = self.offset(index)
        window = (slice(y, y + self.config.height), slice(x, x + self.config.width))
        return StereoPair(
            self._left[window].copy(),
            self._right[window].copy(),
            index / self.config.fps,
            self.calibration,
            self._disparity[window].copy(),
        )

    def _next(self) -> Frame | None:
        return self._frame_or_end(self.frame_number + 1)

    def latest(self) -> StereoPair | None:
        """The frame due now at ``fps``, waiting for the next one if the last is already taken."""
        self.open()
        if self._held:  # paused: a step is the next frame (it was the one due by the clock)
            due = self.frame_number + 1
        else:
            start = self._clock_start  # read once: ``hold`` on the GUI thread may clear it meanwhile
            if start is None:
                start = self._clock_start = time.monotonic() - (self.frame_number + 1) / self.config.fps
            due = int((time.monotonic() - start) * self.config.fps)
            if due <= self.frame_number:  # nothing new yet: wait at most one frame interval
                due = self.frame_number + 1
                time.sleep(max(0.0, start + due / self.config.fps - time.monotonic()))
        frame = None if self.ended or self._closed else self._frame_or_end(due)
        for listener in list(self._listeners):  # a recorder keeps the frames a slow reader skips
            for index in range(self.frame_number + 1, due):
                skipped = self._frame_or_end(index)
                if skipped is not None:
                    listener(skipped.pair)
            if frame is not None:
                listener(frame.pair)
        if frame is None:
            self._finish()
            return None
        self.frame_number = frame.number
        return frame.pair

    def hold(self, held: bool) -> None:
        """Paused (``held``): the scene waits, and ``latest`` gives the next frame; resumed, its
        clock starts again from the frame shown. A camera's world goes on, a rendered one need
        not: Step after a 10 s pause jumped 250 frames, and its flow compared frames 25 s apart
        (review)."""
        self._held = held
        self._clock_start = None

    def add_capture_listener(self, listener: Callable[[StereoPair], object]) -> None:
        """Call ``listener`` with every frame due on the clock, the ones ``latest`` skips included."""
        self._listeners.append(listener)

    def remove_capture_listener(self, listener: Callable[[StereoPair], object]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _frame_or_end(self, index: int) -> Frame | None:
        if self.config.frames is not None and index >= self.config.frames:
            return None
        return Frame(self.frame(index), index)
