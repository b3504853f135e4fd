"""Stereo video files: one side-by-side (or top-bottom) file, or two files played together.

Frames are decoded with OpenCV (FFmpeg) and converted from BGR to RGB. The end of a video
is not an error: ``read()`` returns None and the source reports ``ended``. Two files stop
together when either ends. Timestamps are the frame index over the file's frame rate.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.sources.base import Frame, Layout, StereoSource, split_frame, to_rgb
from app.engine.sources.layout import LAYOUT_NAMES, better_layout, layout_note, not_stereo_note
from app.engine.types import StereoPair

VIDEO_SUFFIXES = frozenset(
    {".mp4", ".avi", ".mkv", ".mov", ".webm", ".m4v", ".mpg", ".mpeg", ".wmv", ".flv", ".ts", ".mts"}
)
DEFAULT_FPS = 30.0  # when a container does not say
BLANK_STD = 2.0  # grey levels: a frame this uniform (black, a fade) shows no layout to judge
MAX_BLANK_FRAMES = 300  # blank frames the layout check waits past (10 s at 30 fps) before judging

# FFmpeg's own log lines ("moov atom not found") would sit beside the one-line error that says
# what is wrong; read when the first capture opens. A user's own setting wins.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")

VideoFactory = Callable[[str], Any]  # returns an object with cv2.VideoCapture's methods


CUT_SHORT_WORDS = "looks cut short"  # the note of a video that ends before its header says


def cut_short_note(what: str, read: int, count: int | None) -> str | None:
    """The note for a video that ended at frame ``read`` of the ``count`` its header announces
    (an interrupted copy or recording), or None. Containers' counts may be estimates, so a
    shortfall of a few frames (or 2 %) is no sign; an unknown count (None or 0) says nothing."""
    if not count or count - read <= max(2, count // 50):
        return None
    return (
        f"{what} ended at frame {read} of the {count} its header announces: the file "
        f"{CUT_SHORT_WORDS} (an interrupted copy or recording); the frames after it are missing"
    )


class VideoSource(StereoSource):
    """One stereo video (``layout`` sbs or tb), or two mono videos (left, right). ``explicit``
    False: the layout is a default, and the first frame may show the other (``_check_layout``)."""

    def __init__(
        self,
        paths: Sequence[str | Path],
        layout: Layout = "sbs",
        factory: VideoFactory = cv2.VideoCapture,
        explicit: bool = True,
    ) -> None:
        super().__init__()
        if len(paths) not in (1, 2):
            raise UserError(f"a stereo video is one file or two, got {len(paths)}")
        self.paths = [Path(p) for p in paths]
        self.layout = layout
        self.explicit = explicit
        self._factory = factory
        self._captures: list[Any] = []
        self._fps = DEFAULT_FPS
        self._count: int | None = None
        self._layout_checked = False
        self._blank_frames = 0  # blank first frames (a fade-in) the layout check waited past
        self._cut_noted = False

    @property
    def frame_count(self) -> int | None:
        return self._count

    @property
    def fps(self) -> float:
        return self._fps

    @property
    def seekable(self) -> bool:
        return self._count is not None

    def _seek(self, index: int) -> None:
        for capture in self._captures:
            capture.set(cv2.CAP_PROP_POS_FRAMES, index)

    def timestamp_of(self, index: int) -> float:
        return index / self._fps

    @property
    def has_times(self) -> bool:
        return True

    def describe(self) -> str:
        if len(self.paths) == 2:
            return f"videos {self.paths[0].name} + {self.paths[1].name}"
        return f"video {self.paths[0].name} ({LAYOUT_NAMES[self.layout]})"

    def _open(self) -> None:
        try:
            for path in self.paths:
                self._captures.append(self._open_one(path))
            self._check_sizes()
        except BaseException:
            self._close()
            raise
        fps = self._captures[0].get(cv2.CAP_PROP_FPS)
        self._fps = float(fps) if fps and np.isfinite(fps) and fps > 0 else DEFAULT_FPS
        counts = [int(c.get(cv2.CAP_PROP_FRAME_COUNT) or 0) for c in self._captures]
        self._count = min(counts) if min(counts) > 0 else None  # containers may not know
        if len(self._captures) == 2:
            self._note_mismatch([float(c.get(cv2.CAP_PROP_FPS) or 0.0) for c in self._captures], counts)

    def _note_mismatch(self, rates: list[float], counts: list[int]) -> None:
        """Two videos are paired frame by frame: a different frame rate or length is said (a 30 and
        a 15 fps camera paired unsaid drifted apart by a frame in every two)."""
        names = [p.name for p in self.paths]
        if min(rates) > 0 and abs(rates[0] - rates[1]) > 0.01 * max(rates):
            self.notes.append(
                f"{names[0]} runs at {rates[0]:g} fps but {names[1]} at {rates[1]:g} fps: frames are "
                "paired by number, not by time, so the views drift apart; give two videos of one rig"
            )
        if min(counts) > 0 and abs(counts[0] - counts[1]) > max(1, max(counts) // 50):
            self.notes.append(
                f"{names[0]} has {counts[0]} frames but {names[1]} {counts[1]}: the pairs end after "
                f"{min(counts)}, with the shorter"
            )

    def _open_one(self, path: Path) -> Any:
        if not path.is_file():
            raise UserError(f"video not found: {path}; check the path")
        capture = self._factory(str(path))
        if not capture.isOpened():
            capture.release()
            raise UserError(f"cannot open video {path}; check that it is a video OpenCV's FFmpeg can decode")
        return capture

    def _check_sizes(self) -> None:
        if len(self._captures) < 2:
            return
        sizes = [
            (int(c.get(cv2.CAP_PROP_FRAME_WIDTH)), int(c.get(cv2.CAP_PROP_FRAME_HEIGHT)))
            for c in self._captures
        ]
        if sizes[0] != sizes[1]:
            (w0, h0), (w1, h1) = sizes
            raise UserError(
                f"{self.paths[0].name} is {w0}x{h0} but {self.paths[1].name} is {w1}x{h1}; "
                "give two videos of the same size"
            )

    def _check_layout(self, frame: np.ndarray) -> None:
        """Once per source, on its first frame: does the video look like the other layout? A
        layout the user chose is kept, with a note; the default gives way to the other when that
        is clearly the better split, and says so. Neither looking like a stereo pair is said too."""
        if self._layout_checked:
            return
        if self._blank_frames < MAX_BLANK_FRAMES and float(frame.std()) < BLANK_STD:
            # a black first frame matched nothing either way: "not a stereo video" (review)
            self._blank_frames += 1
            return
        self._layout_checked = True
        path = self.paths[0]
        what = f"video {path.name}"
        if self.explicit or self._blank_frames:  # frames already split this way: said, not switched
            note = layout_note(frame, self.layout, what, f"video:{path}?layout={{layout}}")
        else:
            better = better_layout(frame, self.layout)
            note = None
            if better is not None:
                other, found, used = better
                note = (
                    f"{what} looks {LAYOUT_NAMES[other]} ({found} features match along rows that way, "
                    f"{used} {LAYOUT_NAMES[self.layout]}): opened {LAYOUT_NAMES[other]} "
                    f"(video:{path}?layout={self.layout} opens it {LAYOUT_NAMES[self.layout]})"
                )
                self.layout = other
        if note is None:
            note = not_stereo_note(frame, what)
        if note is not None:
            self.notes.append(note)

    def _close(self) -> None:
        for capture in self._captures:
            capture.release()
        self._captures = []

    def _note_cut_short(self, read: int) -> None:
        """A file cut short is said once, not played as if it were whole (``cut_short_note``)."""
        note = None if self._cut_noted else cut_short_note(self.describe(), read, self._count)
        if note is not None:
            self._cut_noted = True
            self.notes.append(note)

    def _next(self) -> Frame | None:
        frames = []
        for capture in self._captures:
            ok, frame = capture.read()
            if not ok or frame is None:
                self._note_cut_short(self.frame_number + 1)
                return None  # the end of either file ends the pair
            frames.append(frame)
        if len(frames) == 2:
            left, right = to_rgb(frames[0]), to_rgb(frames[1])
        else:
            self._check_layout(frames[0])
            left, right = split_frame(frames[0], self.layout)
        index = self.frame_number + 1
        return Frame(StereoPair(left, right, index / self._fps), index)
