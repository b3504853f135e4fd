"""``--max-disparity auto``: a cheap estimate of how far a frame's disparities reach.

A sweep far beyond the scene's nearest point costs time linearly (every plane is a network
pass) and gives the network more chances to answer a false "closer". The estimate is a
classical semi-global match at a quarter of the resolution, checked left against right by
OpenCV (``disp12MaxDiff``) and by its uniqueness ratio, over the whole allowed range: a few
milliseconds at 480 x 640. Its ``percentile`` of the answered pixels, times ``margin`` plus
``pad_px``, rounded up to a whole plane step, bounds the sweep, never below ``minimum`` and
never above the request's ceiling. Frames with too few answered pixels (blank, dark) keep
the ceiling.

On live input a ``RangeTracker`` keeps the bound steady: it grows at once (something came
closer: never cut it off) and shrinks only after ``patience`` frames in a row all asked for
less than ``shrink_below`` of it.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field

import cv2
import numpy as np
from torch import Tensor

from app.engine.depth.exposure import gain_matched
from app.engine.errors import setting
from app.engine.types import DepthRequest, DepthResult, Mode, Spacing

STEP_PX = 3  # the sweep's plane step: bounds are multiples of it
AUTO_RANGE_WORDS = "max disparity auto: "  # how a frame's auto range note begins


@dataclass(frozen=True)
class RangeConfig:
    scale: int = 4  # the estimate runs at 1 / scale of the resolution
    # of the answered pixels' disparities: 99.5 until 2026-12-04. On the 32 held-out selection
    # scenes and Motorcycle, 99 moves 5 bounds by 3-12 px: four overshoots shrink and one bound
    # already short of its scene (90 px for 115) becomes 87; 2 % fewer planes in all. Aloe at half
    # size (repetitive curtain, truth 105 px): 0-138 px instead of 0-192 (benchmarks/RESULTS.md)
    percentile: float = 99.0
    margin: float = 1.25
    pad_px: float = 12.0
    minimum: int = 48  # px: the smallest bound
    min_answered: float = 0.02  # share of pixels the estimate must answer to be trusted
    shrink_below: float = 0.8
    patience: int = 10  # frames


DEFAULT_RANGE = RangeConfig()


@dataclass
class SceneRange:
    bound: int  # px: the sweep goes from 0 to this
    estimate: float | None  # px: the scene's estimated reach (None: too few answered pixels)
    note: str


def _grey(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image


def checked_disparity(left: np.ndarray, right: np.ndarray, num: int) -> np.ndarray:
    """A left-right-checked, unique-only SGBM (block 5, 3-way) of two H x W uint8 grey images over
    ``num`` disparities: H x W float32 px, 0 or below where it has no answer. The cheap estimates
    before depth (this range, ``alignment``) run it on downsampled frames, gain-matched
    (``gain_matched``)."""
    left, right = gain_matched(left, right)
    block = 5
    matcher = cv2.StereoSGBM_create(  # type: ignore[attr-defined]
        minDisparity=0,
        numDisparities=num,
        blockSize=block,
        P1=8 * block * block,
        P2=32 * block * block,
        disp12MaxDiff=1,
        uniquenessRatio=15,
        speckleWindowSize=50,
        speckleRange=2,
        mode=cv2.STEREO_SGBM_MODE_SGBM_3WAY,
    )
    return matcher.compute(left, right).astype(np.float32) / 16.0


def estimate_reach(
    left: np.ndarray, right: np.ndarray, ceiling: int, config: RangeConfig = DEFAULT_RANGE
) -> float | None:
    """The ``percentile`` of a quarter-resolution, left-right-checked SGBM's disparities (px of
    the full resolution), or None when it answers under ``min_answered`` of the pixels.
    ``left``, ``right`` H x W (x 3) uint8, rectified."""
    return _percentile_of_match(left, right, ceiling, config, config.percentile)


def estimate_far(
    left: np.ndarray, right: np.ndarray, ceiling: int, config: RangeConfig = DEFAULT_RANGE
) -> float | None:
    """The far end of the scene: the ``100 - percentile`` of the same match (px; None as above)."""
    return _percentile_of_match(left, right, ceiling, config, 100.0 - config.percentile)


def _percentile_of_match(
    left: np.ndarray, right: np.ndarray, ceiling: int, config: RangeConfig, percentile: float
) -> float | None:
    s = config.scale
    small_l, small_r = (
        cv2.resize(_grey(im), None, fx=1 / s, fy=1 / s, interpolation=cv2.INTER_AREA) for im in (left, right)
    )
    h, w = small_l.shape
    num = int(math.ceil(ceiling / s / 16.0) * 16)
    # at most half the small width, so that half the columns can answer (the left ``num`` have no
    # match): a frame narrower than about 384 px estimates reaches up to half its width
    num = min(num, max(16, (w - 8) // 16 * 16), max(16, w // 2 // 16 * 16))
    if w < num + 8 or h < 8:
        return None
    raw = checked_disparity(small_l, small_r, num)
    answered = raw[:, num:] > 0  # the left strip has no match in the right view
    if answered.mean() < config.min_answered:
        return None
    return float(np.percentile(raw[:, num:][answered], percentile)) * s


def bound_for(reach: float | None, ceiling: int, config: RangeConfig = DEFAULT_RANGE) -> int:
    """The sweep's top (px, a multiple of the plane step) for an estimated reach."""
    if reach is None:
        return ceiling
    want = math.ceil((reach * config.margin + config.pad_px) / STEP_PX) * STEP_PX
    return int(min(ceiling, max(config.minimum, want)))


@dataclass
class RangeTracker:
    """Frame-to-frame bound of one stream (module docstring)."""

    config: RangeConfig = DEFAULT_RANGE
    bound: int | None = None
    ceiling: int | None = None
    size: tuple[int, ...] | None = None
    _lower: list[int] = field(default_factory=list)
    _stale: bool = field(default=False, repr=False, compare=False)  # new_stream() asked for a reset

    def state(self) -> dict[str, object]:
        """A copy of what the tracker carries from frame to frame (not a new stream's mark)."""
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if k != "_stale"}

    def restore(self, state: dict[str, object]) -> None:
        """Carry ``state`` (``state()``) on, in place: a new stream asked for meanwhile still holds."""
        vars(self).update(copy.deepcopy(state))

    def update(
        self, left: np.ndarray, right: np.ndarray, ceiling: int, size: tuple[int, ...] = ()
    ) -> SceneRange:
        """The bound for this frame (a new ceiling, frame size or stream starts afresh)."""
        if self._stale:
            self.reset()
        reach = estimate_reach(left, right, ceiling, self.config)
        want = bound_for(reach, ceiling, self.config)
        if self.bound is None or (ceiling, size) != (self.ceiling, self.size) or want >= self.bound:
            self.bound, self.ceiling, self.size, self._lower = want, ceiling, size, []
        elif want < self.config.shrink_below * self.bound:
            self._lower.append(want)
            if len(self._lower) >= self.config.patience:
                self.bound, self._lower = max(self._lower), []
        else:
            self._lower = []
        seen = (
            f"scene reaches about {reach:.0f} px" if reach is not None else "too little texture to estimate"
        )
        return SceneRange(self.bound, reach, f"{AUTO_RANGE_WORDS}0-{self.bound} px ({seen})")

    def grow(self, bound: int) -> None:
        """The sweep had to reach ``bound`` after all: keep it from the next frame on."""
        self.bound, self._lower = max(self.bound or 0, bound), []

    def reset(self) -> None:
        self.bound, self.ceiling, self.size, self._lower = None, None, None, []
        self._stale = False

    def new_stream(self) -> None:
        """Start afresh at the next ``update``: another thread may be inside one now, and the
        thread that updates resets."""
        self._stale = True


EDGE_PX = 24  # px from the frame's edges (and its padding) whose answers see the padding


def closer_than_top(
    lowres_logits: Tensor, padded_size: tuple[int, int], offset: tuple[int, int], top_px: float
) -> float:
    """Share of pixels still "closer" at the top of the sweep: the bound cut something off when
    this is more than a trace. ``lowres_logits`` 1 x P x h x w at any resolution of the
    ``padded_size`` network input, whose image starts at ``offset`` rows and columns.

    A pixel counts when it is "closer" at every plane of the sweep's upper third (and at least its
    last two: a coarse-to-fine search sweeps few), as something
    nearer than the whole range answers, and not at the last plane only: the network's false
    "closer" on planes far beyond a pixel comes after "farther" answers nearer its truth. On
    Motorcycle enlarged 1.8 times (true reach 122 px, bound 144 px) 4.4 % of the pixels were
    "closer" at the last plane, on the far wall (truth 22-44 px), and none at the whole upper
    third. Only pixels that can match there count: inside the image, ``EDGE_PX`` from its edges,
    right of the strip the last plane's shift (``top_px``) moves the right view out of (the
    zero padding matches itself at every shift). A frame too small for that region is counted
    whole."""
    _, planes, h, w = lowres_logits.shape
    fy, fx = padded_size[0] / h, padded_size[1] / w
    top = math.ceil((offset[0] + EDGE_PX) / fy)
    left = math.ceil((offset[1] + top_px + EDGE_PX) / fx)
    bottom, right = h - math.ceil(EDGE_PX / fy), w - math.ceil(EDGE_PX / fx)
    upper = lowres_logits[:, planes - max(min(2, planes), planes // 3) :]  # two at least
    if bottom > top and right > left:
        upper = upper[..., top:bottom, left:right]
    return float((upper > 0).all(1).float().mean())


AT_CEILING_SHARE = 0.05  # share of the answered pixels at an auto range's ceiling that a note points out


CEILING_WORDS = "the top of the range"  # in both of ceiling_note's notes (an unrectified pair drops them)


def without_ceiling_notes(notes: list[str]) -> list[str]:
    """``notes`` less ``ceiling_note``'s: where the depth is noise (an unrectified pair, a stereo
    video split the wrong way) raising the range is no advice."""
    return [note for note in notes if CEILING_WORDS not in note]


def drop_ceiling_notes(result: DepthResult) -> None:
    """``without_ceiling_notes`` on an answer's notes, and on those another min confidence counts
    again (``DepthResult.recount_notes``): a mono video's "raise the range" came back with a move
    of the slider (code review)."""
    result.notes = without_ceiling_notes(result.notes)
    result.answer_notes = without_ceiling_notes(result.answer_notes)
    count = result.recount_notes
    if count is not None:
        result.recount_notes = lambda answer: without_ceiling_notes(count(answer))


def ceiling_note(disparity: np.ndarray, top: float, remedy: str, estimate: float | None = None) -> list[str]:
    """``--max-disparity auto`` that reached its ceiling, ``top`` px, and found no room above: a
    note when the estimate (``SceneRange.estimate``, px) reaches past it, or when
    ``AT_CEILING_SHARE`` of the answered pixels of H x W ``disparity`` read within one plane step
    of it (a scene nearer than the range reaches piles up there: the demo at 720p moved 140 px
    nearer, truth 160-235 px, read a median 176 px, 45 % of it at the top, without a word).
    ``remedy``: what to do, for this engine."""
    if estimate is not None and estimate > top:
        return [f"the scene reaches about {estimate:.0f} px, past {CEILING_WORDS} ({top:g} px); {remedy}"]
    answered = np.isfinite(disparity)
    share = float(np.mean(disparity[answered] >= top - STEP_PX)) if answered.any() else 0.0
    if share >= AT_CEILING_SHARE:
        return [
            f"{100 * share:.0f} % of the answers read {CEILING_WORDS} ({top:g} px): the scene is "
            f"likely nearer than that; {remedy}"
        ]
    if estimate is not None and DEFAULT_RANGE.margin * estimate + DEFAULT_RANGE.pad_px > top:
        # the room the bound keeps above an estimate did not fit under the ceiling: aloe read about
        # 148 px where its leaves reach 211, and 4 % past 192 px were answered 190 unsaid (review)
        return [
            f"the scene may reach past {CEILING_WORDS} ({top:g} px): its estimate is about "
            f"{estimate:.0f} px, and such estimates run up to a third short; {remedy}"
        ]
    return []


def ceiling_remedy(model_top: int | None, top: float | None = None, width: int | None = None) -> str:
    """What to do about a scene nearer than an auto range's ceiling: a Bi3D model reaching
    ``model_top`` px cannot sweep further; SGBM searches up to the image's width. A ceiling
    ``top`` set by the images' ``width`` leaves nothing to do (a 20 px pair was told to halve
    its images, under the 16 px they must have)."""
    if top is not None and width is not None and top >= widest_search(width):
        return f"the images are only {width} px wide, so no search reaches further in them"
    if model_top is None:
        return f"set {setting('max_disparity')} above it (SGBM searches up to the image width)"
    return (
        f"this model reaches {model_top} px: give the images at half size or smaller, or use "
        f"{setting('engine', 'sgbm')} and raise {setting('max_disparity')}"  # "with a larger the Max
        # disparity control" in the window (review)
    )


def widest_search(width: int) -> int:
    """The widest search of images ``width`` px wide: the largest numDisparities OpenCV accepts
    (a multiple of 16 below the width; 16 at least). No match lies farther than the image is wide."""
    return max(16, (width - 1) // 16 * 16)


def fit_levels(levels: int | None, lo: float, hi: float) -> int | None:
    """``levels`` at most as many as fit 1 px apart in [lo, hi] px (``DepthRequest.validate``)."""
    return None if levels is None else min(levels, max(1, math.ceil(hi - lo) - 1))


def bounded(
    request: DepthRequest, tracker: RangeTracker, left: np.ndarray, right: np.ndarray
) -> tuple[DepthRequest, SceneRange | None]:
    """The request with its sweep bounded by the tracker, for continuous and quantized requests
    that ask for ``auto_range``; others are returned as they are (with None). Quantized levels
    without explicit planes spread over the bound; explicit planes keep their places and the
    bound closes their top bin (whose midpoint is the answer there: planes 12,24 read a 25 px
    scene as 108 px, halfway to the 192 px default maximum)."""
    spread = request.mode is Mode.QUANTIZED and not request.planes
    if not request.auto_range or request.mode not in (Mode.CONTINUOUS, Mode.QUANTIZED):
        return request, None
    ceiling = min(request.max_disparity, widest_search(left.shape[1]))  # no match lies farther
    found = tracker.update(left, right, ceiling, left.shape[:2])
    if request.mode is Mode.QUANTIZED and request.planes:
        top = max(float(p) for p in request.planes)
        closing = max(found.bound, math.ceil(top / STEP_PX) * STEP_PX + STEP_PX)  # past the top plane
        if closing >= request.max_disparity:
            return dataclasses.replace(request, auto_range=False), None
        found = dataclasses.replace(
            found, bound=closing, note=f"{found.note}; the top level ends at {closing} px"
        )
    # levels at least 1 px apart over what is swept (``DepthRequest.validate``): 150 levels over
    # the demo's 84 px bound failed as "levels 150 is outside [1, 83]"
    levels = request.levels if request.range is not None else fit_levels(request.levels, 0, found.bound)
    bounded_request = dataclasses.replace(request, max_disparity=found.bound, auto_range=False, levels=levels)
    if spread and request.spacing is Spacing.DEPTH and request.range is None:
        # levels even in depth need the scene's far end too: from 0 px (infinitely far) most of
        # them would lie beyond the farthest thing in view (Motorcycle: 6-60 px for a 20-70 px scene)
        far = estimate_far(left, right, ceiling, tracker.config)
        if far is not None:
            lo = max(STEP_PX, math.floor(far / tracker.config.margin / STEP_PX) * STEP_PX)
            if lo < found.bound:
                levels = fit_levels(levels, lo, found.bound)
                bounded_request = dataclasses.replace(
                    bounded_request, range=(float(lo), float(found.bound)), levels=levels
                )
                found = dataclasses.replace(
                    found, note=f"{found.note}; levels from {lo} px, the scene's far end"
                )
    if request.levels is not None and levels is not None and levels < request.levels:
        found = dataclasses.replace(
            found, note=f"{found.note}; {request.levels} levels asked, {levels} fit 1 px apart"
        )
    return bounded_request, found
