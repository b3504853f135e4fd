"""Is a one-file stereo frame (a video, a single camera device) in the layout it was opened with?

A side-by-side video opened as top-bottom (or the other way round) gives two "views" that are
halves of different images: every engine still answers them, with depth that is noise, and
nothing says why. Split as it really is, a stereo frame's two views share many features on
the same rows (a rectified pair, or nearly: a few px of vertical offset); split the other way,
its halves hardly match. ``layout_note`` compares the two splits of one frame and names the
better one when it is clearly better.

Frames are as OpenCV reads them (BGR, BGRA or grey; ``split_frame`` turns them into RGB views).
"""

from __future__ import annotations

import cv2
import numpy as np

from app.engine.epipolar import match_features
from app.engine.sources.base import LAYOUTS, Layout, split_frame

LAYOUT_NAMES: dict[Layout, str] = {"sbs": "side by side", "tb": "top-bottom"}
WORK_WIDTH = 640  # px: each view is matched at most this wide (a 2560 px ZED frame in ~30 ms)
ROW_PX = 4.0  # at the working scale: a match this close to its row counts as stereo
MIN_MATCHES = 25  # stereo matches the other split needs before it is named
# a raw (unrectified) rig's views sit up to a few percent of their height apart: a video of one,
# to be rectified with --calib, was called "not a stereo video, depth from it is noise" (review)
RAW_ROWS = 0.05  # share of the view's height a raw rig's rows may lie apart
RATIO = 3.0  # ... and this many times those of the split in use
MARK = "but its frames look"  # every note says this (the window finds it by it)
NOT_STEREO_MARK = "does not look like a stereo video"  # and every note of a mono video this


def noise_note(note: str) -> bool:
    """Whether a source's ``note`` says its frames are split the wrong way or are no stereo pair
    at all: its depth is noise."""
    return MARK in note or NOT_STEREO_MARK in note


def recording_words(note: str) -> str:
    """A ``noise_note`` as ``record`` says it: of the pairs recorded, not of a depth it never made
    ("so this depth is noise" after "wrote 2 frames": review)."""
    return note.replace(
        "so this depth is noise: open it as", "so the pairs recorded are split the wrong way: record it as"
    ).replace("so depth from it is noise;", "so the pairs recorded are no stereo pairs;")


def depth_is_noise(notes: list[str] | tuple[str, ...]) -> bool:
    """Whether any of a source's ``notes`` is a ``noise_note``: raising the range is then no
    advice (a mono video was called noise, then told to raise --max-disparity: review)."""
    return any(noise_note(n) for n in notes)


def stereo_matches(left: np.ndarray, right: np.ndarray, either_way: bool = False, raw: bool = False) -> int:
    """ORB matches between two RGB views that a rectified (or nearly rectified) pair makes:
    on the same row within ``ROW_PX`` and at a disparity between -2 px and the view's width
    (``either_way``: of either sign, as a pair given the wrong way round has them; ``raw``:
    within ``ROW_PX`` of the matches' median row offset, when that lies within ``RAW_ROWS`` of the
    view's height, as a raw rig's views are)."""
    scale = min(1.0, WORK_WIDTH / max(left.shape[1], 1))
    greys = []
    for view in (left, right):
        grey = cv2.cvtColor(view, cv2.COLOR_RGB2GRAY)
        if scale < 1.0:
            grey = cv2.resize(grey, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        greys.append(grey)
    if min(greys[0].shape) < 32:  # too small for ORB's patches
        return 0
    pl, pr = match_features(greys[0], greys[1], "orb", 2000)
    if len(pl) == 0:
        return 0
    dx, dy = pl[:, 0] - pr[:, 0], pl[:, 1] - pr[:, 1]
    low = -float(greys[0].shape[1]) if either_way else -2.0
    along = (dx >= low) & (dx <= greys[0].shape[1])
    offset = 0.0
    if raw and along.any():  # a raw rig's rows sit apart by about one offset: matched around it
        median = float(np.median(dy[along]))  # (a wide band let a mono video's chance matches in)
        offset = median if abs(median) <= RAW_ROWS * greys[0].shape[0] else 0.0
    return int(np.count_nonzero((np.abs(dy - offset) <= ROW_PX) & along))


def better_layout(frame: np.ndarray, layout: Layout) -> tuple[Layout, int, int] | None:
    """The other layout than ``layout`` with its stereo matches and those of ``layout``, when it is
    clearly the better split of ``frame`` (as read: BGR, BGRA or grey); else None."""
    other: Layout = next(name for name in LAYOUTS if name != layout)
    used = stereo_matches(*split_frame(frame, layout))
    found = stereo_matches(*split_frame(frame, other))
    if found < MIN_MATCHES or found < RATIO * max(used, 1):
        return None
    return other, found, used


def layout_matches(frame: np.ndarray, raw: bool = False) -> dict[Layout, int]:
    """Each split of ``frame`` (as read) with its stereo matches, the right way round or not
    (``raw``: as ``stereo_matches`` counts a raw rig's)."""
    return {name: stereo_matches(*split_frame(frame, name), either_way=True, raw=raw) for name in LAYOUTS}


def stereo_layout(frame: np.ndarray) -> tuple[Layout, int] | None:
    """The split of ``frame`` (as read) that makes a stereo pair, with its matches; None for a
    mono frame (neither split does)."""
    counts = layout_matches(frame)
    best = max(LAYOUTS, key=lambda name: counts[name])
    return (best, counts[best]) if counts[best] >= MIN_MATCHES else None


def not_stereo_note(frame: np.ndarray, what: str) -> str | None:
    """A note when neither split of ``frame`` looks like a stereo pair, the right way round or
    not (a mono video: its halves are parts of one image); None otherwise. Row-aligned matches
    were 554-1295 in the side-by-side and top-bottom test videos, 0-3 in mono ones. A raw rig's
    views, a few rows apart, count too: rectified (--calib), they are a stereo pair."""
    counts = layout_matches(frame, raw=True)
    if max(counts.values()) >= MIN_MATCHES:
        return None
    return (
        f"{what} {NOT_STEREO_MARK}: its halves share few features along rows "
        f"({counts['sbs']} side by side, {counts['tb']} top-bottom), so depth from it is noise; "
        "give a side-by-side or top-bottom stereo video, or two videos (LEFT,RIGHT)"
    )


def layout_note(frame: np.ndarray, layout: Layout, what: str, fix: str) -> str | None:
    """A note when ``frame`` (as read: BGR, BGRA or grey) looks like a stereo frame in the other layout than
    ``layout``; None when the layout in use is the better (or neither is clearly a stereo pair).
    ``what`` names the source ("video rig.mp4"), ``fix`` says how to open it in the other
    layout, given that layout ("video:rig.mp4?layout={layout}")."""
    better = better_layout(frame, layout)
    if better is None:
        return None
    other, found, used = better
    return (
        f"{what} was opened {LAYOUT_NAMES[layout]}, {MARK} {LAYOUT_NAMES[other]} ({found} features "
        f"match along rows that way, {used} this way), so this depth is noise: "
        f"open it as {fix.format(layout=other)}"
    )
