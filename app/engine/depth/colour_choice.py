"""Colour or grey levels: which of the two the network reads a colour pair in (no learned weights).

The bundled network is not invariant to a colour balance both cameras share. Motorcycle as shot
reads 16.24 % dense bad-2 in colour and 16.95 % in grey levels, but with both views' red at 0.8 x
29.66 % in colour and 17.37 % in grey; a blue cast (R 0.7, G 0.9, B 1.3) 38.82 % against 17.57 %.
No check between the views can see such a cast, and no fixed rule on the colours tells which
reading wins: Motorcycle brought to a neutral balance (grey world) reads 31.99 %.

The images can tell, where the difference is large. On the first colour frame of a stream, depth
is read twice: with the network reading the colours, and with it reading the grey levels (the
matching stages after it, sub-pixel and agreement, read the colours both times, so the readings
differ by the network's input alone). Each answer is scored by how well it matches the images:
the mean zero-mean normalised cross-correlation (grey levels, 7 x 7) of each textured left patch
with the right image read at ``x - d``, over the pixels both answers keep. Grey levels are kept for
the stream when their score is higher by more than ``GREY_MARGIN``; else colour, the network's own
reading. Measured (``benchmarks/RESULTS.md``, forty-third session; dense bad-2):

- Motorcycle and aloe (Middlebury, ground truth; fp32), as shot and under eight casts of both
  views: the casts that cost colour 1.5-21 points moved the score 0.015-0.088 towards grey (grey
  chosen); as shot and the casts colour reads as well or better, -0.011 to +0.0002 (colour kept).
  Left in colour: casts that moved it 0.0013-0.0057 (Motorcycle B 0.8 x: 18.71 % against 17.18 %
  in grey; G 1.1 x: 19.48 % against 16.86 %).
- 16 held-out layered synthetic scenes (bf16): one read 10.3 % in colour and 16.3 % in grey levels
  moved the score +0.0095 towards grey; with the margin the mean is 0.1806 (0.1810 in colour).
  16 held-out 3D rooms: 0.4192 against 0.4383 in colour.

The score must be read at the frame's own size: at half size it chose grey for Motorcycle as shot.

It is chosen again when the left view's colour balance moves (its channels' mean ratios
``REDECIDE`` x from those it was chosen on, ``REDECIDE_AFTER`` frames later at the soonest: a
camera's automatic white balance; not where a channel is too dark to read), when the frame size
changes and on a new stream. The frame that chooses costs two readings more than its own (three in
all when the request is not a plain continuous one, or grey levels win); a preview frame (the
window's quick answer of a still pair) leaves it to the frame answered in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from app.engine.depth.agreement import DEFAULT_AGREEMENT, Matcher
from app.engine.depth.exposure import colour_stats

SCORE_WINDOW = 7  # px: the ZNCC window of the score (the agreement stage's)
REDECIDE = 1.06  # the left view's channel mean ratios this far from those chosen on: choose again
REDECIDE_AFTER = 30  # frames: at the soonest after the last choice
TRIES = 3  # frames whose answers share nothing to score are tried; then colour is kept
GREY_MARGIN = 0.01  # grey is chosen when its score is higher by more than this (module docstring)
GREY_WORDS = "read better in grey levels than in colour"  # how the note is found again


def is_colour(image: np.ndarray) -> bool:
    """Whether an H x W x 3 image holds colour (not a grey camera's three equal channels)."""
    return image.ndim == 3 and image.shape[2] == 3 and not colour_stats(image)[2]


def balance(image: np.ndarray) -> np.ndarray | None:
    """An RGB image's channel means over their mean (3,), or None where its colours cannot be read
    (``exposure.colour_stats``: a channel too dark, whose noise moves the ratios by up to 1.14 x, or
    a single level)."""
    means, readable, _ = colour_stats(image)
    return means / float(means.mean()) if readable else None


def match_scores(left: np.ndarray, right: np.ndarray, answers: tuple[np.ndarray, ...]) -> tuple[float, ...]:
    """Each H x W disparity answer's mean ZNCC with the images (module docstring): over the textured
    left pixels every answer keeps (finite) and reads inside the right image; NaN if there are none."""
    matcher = Matcher(torch.from_numpy(left).float(), torch.from_numpy(right).float(), SCORE_WINDOW)
    common = matcher.texture > DEFAULT_AGREEMENT.min_std
    scored = []
    for d in answers:
        known = torch.from_numpy(np.isfinite(d))
        zncc, inside = matcher.score(torch.from_numpy(np.nan_to_num(d, nan=0.0)).float())
        common &= known & inside
        scored.append(zncc)
    if not bool(common.any()):
        return tuple(float("nan") for _ in answers)
    return tuple(float(z[common].double().mean()) for z in scored)


@dataclass
class ColourChoice:
    """One stream's reading of colour pairs: colour or grey levels (module docstring)."""

    grey: bool | None = None  # None: not chosen for this stream yet
    scores: tuple[float, float] | None = None  # (colour, grey) at the last choice
    size: tuple[int, int] | None = None
    chosen_on: np.ndarray | None = None  # the left view's ``balance`` at the last choice
    since: int = 0  # frames since the last choice
    tries: int = 0  # frames tried since the last choice without anything to score
    _stale: bool = field(default=False, repr=False, compare=False)  # new_stream() asked for a reset

    def new_stream(self) -> None:
        """Choose again on the next frame (reset in the thread that computes)."""
        self._stale = True

    def due(self, left: np.ndarray) -> bool:
        """Whether this colour frame must choose: a new stream or size, none chosen yet, or the
        colour balance moved (``REDECIDE``) at least ``REDECIDE_AFTER`` frames after the last choice."""
        size = (left.shape[0], left.shape[1])
        if self._stale or size != self.size:
            self.grey, self.scores, self.size, self.chosen_on, self.since = None, None, size, None, 0
            self.tries, self._stale = 0, False
        if self.grey is None:
            return True
        self.since += 1
        if self.since < REDECIDE_AFTER:
            return False
        now = balance(left)
        if now is None or self.chosen_on is None:  # too dark to tell, then or now: no new choice
            self.chosen_on = now if self.chosen_on is None else self.chosen_on
            return False
        ratio = now / self.chosen_on
        return bool(ratio.max() >= REDECIDE * ratio.min())

    def choose(
        self,
        left: np.ndarray,
        right: np.ndarray,
        colour: np.ndarray,
        grey: np.ndarray,
        as_shot: np.ndarray | None = None,
    ) -> bool:
        """Score the colour and the grey answers of this frame (``left``, ``right`` its colour
        images; ``as_shot``: its left image before any stage, whose balance is kept, else
        ``left``), keep the better reading for the stream, and answer whether it is grey. Answers
        that share nothing to score read this frame in colour and leave the choice to the next
        (``TRIES`` frames, then colour is kept)."""
        scores = match_scores(left, right, (colour, grey))
        self.scores = (scores[0], scores[1])
        if np.isnan(scores[0]) and self.tries + 1 < TRIES:
            self.tries += 1
            self.grey = None
            return False
        self.grey = bool(scores[1] > scores[0] + GREY_MARGIN)  # NaN (nothing to score) keeps colour
        self.chosen_on, self.since, self.tries = balance(left if as_shot is None else as_shot), 0, 0
        return self.grey

    def settle(self, as_shot: np.ndarray) -> None:
        """Keep colour for the stream without a choice (one that this frame could not take)."""
        self.grey, self.scores, self.chosen_on, self.since, self.tries = False, None, balance(as_shot), 0, 0

    def note(self) -> str | None:
        """The note of a stream read in grey levels, else None."""
        if not self.grey or self.scores is None:
            return None
        c, g = self.scores
        return (
            f"colour: this pair {GREY_WORDS} (they match the images at a mean ZNCC of {g:.3f} "
            f"against {c:.3f}: a colour balance unlike the network's training), so depth is read "
            "from their grey levels"
        )
