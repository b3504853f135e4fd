"""The footage an adaptation learns from: frames of any source, held-back frames, pseudo-labels.

Frames come from whatever ``open_source`` opens (a recording, a video, a folder of pairs, a
dataset). At most ``frames`` are used, spread evenly over a source that can seek. Every
``HOLD_EVERY``-th frame is held back for the before/after report and never trained on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from app.engine.errors import Interrupted, UserError
from app.engine.sources.base import plural
from app.engine.sources.layout import NOT_STEREO_MARK, noise_note
from app.engine.sources.spec import open_source
from app.engine.training.pseudo import check_rectified, confident_disparity
from app.engine.types import StereoPair

HOLD_EVERY = 5  # frames 4, 9, 14, ... are held back
MIN_SIDE = 96  # the light model's smallest input, and the smallest crop


@dataclass
class Footage:
    description: str
    train: list[StereoPair]
    held: list[StereoPair]
    train_labels: list[np.ndarray]  # H x W float32 px, NaN unknown
    held_labels: list[np.ndarray]
    vertical_offset_px: float | None
    search_px: int  # the classical matcher's range

    @property
    def size(self) -> tuple[int, int]:
        h, w = self.train[0].left.shape[:2]
        return h, w

    def scene_range(self, model_max: int) -> int:
        """The disparity range (px) to train planes in and evaluate up to: a margin above the
        99.5th percentile of the confident pixels, never above the model's own range."""
        known = np.concatenate([lab[np.isfinite(lab)] for lab in self.train_labels])
        top = float(np.percentile(known, 99.5)) if known.size else float(self.search_px)
        return int(min(model_max, max(24, np.ceil(1.2 * top) + 6)))


def read_frames(
    spec: str, count: int, cancel: threading.Event | None = None, calib: str | None = None
) -> tuple[list[StereoPair], str]:
    """Up to ``count`` frames of the source ``spec`` (evenly spread when it can seek), rectified
    with the raw rig in ``calib`` when it holds one."""
    with open_source(spec) as source:
        what = source.describe()
        total = source.frame_count
        pairs: list[StereoPair] = []
        noise: list[str] = []  # the source's notes that its depth is noise (a mono video)

        def take(pair: StereoPair | None) -> None:
            if pair is not None:
                pairs.append(pair)
            noise.extend(n for n in source.notes if noise_note(n) and n not in noise)

        if source.seekable and total is not None and total > count:
            for index in np.linspace(0, total - 1, count).round().astype(int):
                _stop_if(cancel)
                source.seek(int(index))
                take(source.read())
        else:
            while len(pairs) < count:
                _stop_if(cancel)
                pair = source.read()
                if pair is None:
                    break
                take(pair)
    if noise:  # "does not look rectified" of a mono video, where depth and record say what it is (review)
        mono = NOT_STEREO_MARK in noise[0]  # else split the wrong way: its note says how to open it
        how = "only" if mono else "opened as it is split"
        raise UserError(f"{noise[0]}; adapt learns from a stereo rig's footage {how}")
    if len(pairs) < 2:
        raise UserError(
            f"{what} has {plural(len(pairs), 'frame')}; adaptation needs at least 2 (frames to learn from "
            "and frames held back to check the result): give a recording, a video or a folder of pairs"
        )
    h, w = pairs[0].left.shape[:2]
    if min(h, w) < MIN_SIDE:
        raise UserError(f"{what} has {w}x{h} frames; adaptation needs at least {MIN_SIDE} px a side")
    if any(p.left.shape != pairs[0].left.shape for p in pairs):
        raise UserError(f"{what} changes its frame size; adapt footage of one size")
    if calib is not None:
        pairs = rectified(pairs, calib)
    return pairs, what


def rectified(pairs: list[StereoPair], calib: str) -> list[StereoPair]:
    """``pairs`` rectified with the raw rig in the file ``calib`` (a raw camera's footage could not
    be adapted to: adapt refused it as unrectified and took no calibration: review); a file of a
    rectified pair (Middlebury's calib.txt) leaves them as they are."""
    import dataclasses

    from app.engine.calibration.files import load_for_frames
    from app.engine.calibration.rig import Rectifier

    h, w = pairs[0].left.shape[:2]
    _, rig, _ = load_for_frames(calib, None, (w, h))
    if rig is None:
        return pairs
    rectifier = Rectifier(rig)
    out = []
    for pair in pairs:
        left, right = rectifier.rectify(pair.left, pair.right)
        out.append(dataclasses.replace(pair, left=left, right=right))
    return out


def split(pairs: list[StereoPair]) -> tuple[list[StereoPair], list[StereoPair]]:
    """Frames to learn from and frames held back (every 5th; the last one for short footage)."""
    held = [p for i, p in enumerate(pairs) if i % HOLD_EVERY == HOLD_EVERY - 1] or [pairs[-1]]
    ids = {id(p) for p in held}
    return [p for p in pairs if id(p) not in ids], held


def search_range(width: int, model_max: int) -> int:
    """SGBM's widest range: the model's, but narrower than half the frame (multiples of 16)."""
    return max(16, min(model_max, (width // 2) // 16 * 16))


def scene_search(pairs: list[StereoPair], model_max: int) -> int:
    """SGBM's range for this footage: a margin over what a wide search finds on a few frames.
    SGBM answers nothing in the first ``range`` columns, so a range wider than the scene's
    would leave a band of the frame without labels."""
    widest = search_range(pairs[0].left.shape[1], model_max)
    probes = [confident_disparity(p.left, p.right, widest) for p in pairs[:: max(1, len(pairs) // 3)][:3]]
    known = np.concatenate([d[np.isfinite(d)] for d in probes])
    if known.size < 100:
        return widest
    top = float(np.percentile(known, 99.5))
    return int(min(widest, max(16, np.ceil((1.25 * top + 8) / 16) * 16)))


def prepare(
    spec: str,
    count: int,
    model_max: int,
    cancel: threading.Event | None = None,
    on_label: Callable[[int, int], None] | None = None,
    calib: str | None = None,
) -> Footage:
    """Read (rectified with ``calib``'s raw rig, when given), check (rectified?), split and label
    the footage."""
    pairs, what = read_frames(spec, count, cancel, calib)
    step = max(1, len(pairs) // 3)
    offset = check_rectified([(p.left, p.right) for p in pairs[::step][:3]], what)
    train, held = split(pairs)
    search = scene_search(pairs, model_max)
    labels = []
    for i, pair in enumerate(train + held):
        _stop_if(cancel)
        labels.append(confident_disparity(pair.left, pair.right, search))
        if on_label is not None:
            on_label(i + 1, len(pairs))
    return Footage(what, train, held, labels[: len(train)], labels[len(train) :], offset, search)


def crop_size(height: int, width: int, limit: tuple[int, int] = (192, 384)) -> tuple[int, int]:
    """The largest multiples of 96 that fit the frame, at most ``limit`` (the training crops)."""
    return min(limit[0], height // 96 * 96), min(limit[1], width // 96 * 96)


def batch(
    footage: Footage, size: int, crop: tuple[int, int], g: torch.Generator
) -> tuple[Tensor, Tensor, Tensor]:
    """Random crops of random training frames, some flipped upside down (a valid stereo
    augmentation): B x 3 x h x w images in [0, 1] and B x h x w pseudo-labels."""
    h, w = footage.size
    lefts, rights, labels = [], [], []
    for _ in range(size):
        k = int(torch.randint(0, len(footage.train), (1,), generator=g))
        y = int(torch.randint(0, h - crop[0] + 1, (1,), generator=g))
        x = int(torch.randint(0, w - crop[1] + 1, (1,), generator=g))
        window = (slice(y, y + crop[0]), slice(x, x + crop[1]))
        pair, label = footage.train[k], footage.train_labels[k]
        left, right = _image(pair.left[window]), _image(pair.right[window])
        lab = torch.from_numpy(np.ascontiguousarray(label[window]))
        if bool(torch.rand((), generator=g) < 0.5):
            left, right, lab = left.flip(1), right.flip(1), lab.flip(0)
        lefts.append(left)
        rights.append(right)
        labels.append(lab)
    return torch.stack(lefts), torch.stack(rights), torch.stack(labels)


def _image(rgb: np.ndarray) -> Tensor:
    return torch.from_numpy(np.ascontiguousarray(rgb)).permute(2, 0, 1).float() / 255.0


def _stop_if(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Interrupted("adaptation cancelled")
