"""Classical baseline: OpenCV semi-global block matching with Bi3D's result type.

The matcher searches the same disparity range as the request (0 to ``max_disparity``,
rounded up to a multiple of 16, as OpenCV requires) so that comparisons with Bi3D are
fair. Every mode is answered from SGBM's disparity: plane probabilities are 0 or 1,
holes (pixels SGBM rejects) are NaN.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from app.engine.depth.alignment import VerticalAligner, with_alignment
from app.engine.depth.decoding import (
    BEYOND_NOTE_SHARE,
    beyond_text,
    continuous_range,
    quantized_disparity,
    range_state,
    requested_planes,
)
from app.engine.depth.exposure import TintHold, flat_answer, gain_matched, pair_notes
from app.engine.depth.limits import check_image_size, require_frame, sgbm_bytes
from app.engine.depth.scene_range import (
    STEP_PX,
    RangeTracker,
    SceneRange,
    bounded,
    ceiling_note,
    ceiling_remedy,
    estimate_reach,
    fit_levels,
    widest_search,
    without_ceiling_notes,
)
from app.engine.errors import UserError, setting
from app.engine.types import DEFAULT_MAX_DISPARITY, SGBM_MODES, DepthRequest, DepthResult, Mode, check_pair

SGBM_MODE_IDS = {  # OpenCV ids of the SGBM_MODES names
    "sgbm": cv2.STEREO_SGBM_MODE_SGBM,
    "hh": cv2.STEREO_SGBM_MODE_HH,
    "3way": cv2.STEREO_SGBM_MODE_SGBM_3WAY,
    "hh4": cv2.STEREO_SGBM_MODE_HH4,
}


@dataclass(frozen=True)
class ParamSpec:
    """How a UI should offer one parameter."""

    name: str
    minimum: int
    maximum: int
    step: int = 1
    odd_only: bool = False


@dataclass(frozen=True)
class SGBMParams:
    block_size: int = 5
    p1: int | None = None  # default 8 * 3 * block_size^2 (OpenCV's recommendation)
    p2: int | None = None  # default 32 * 3 * block_size^2
    uniqueness: int = 10
    speckle_window: int = 100
    speckle_range: int = 2
    disp12_max_diff: int = 1
    pre_filter_cap: int = 63
    mode: str = "3way"

    def __post_init__(self) -> None:
        if self.block_size < 1 or self.block_size % 2 == 0:
            raise UserError(f"SGBM block size must be odd and positive, got {self.block_size}")
        if self.mode not in SGBM_MODES:
            raise UserError(f"unknown SGBM mode {self.mode!r}; use one of {', '.join(SGBM_MODES)}")
        p1, p2 = self.penalties()
        if not 0 <= p1 < p2:
            raise UserError(f"SGBM needs 0 <= P1 < P2, got P1={p1}, P2={p2}")

    def penalties(self) -> tuple[int, int]:
        area = 3 * self.block_size**2
        return (self.p1 if self.p1 is not None else 8 * area, self.p2 if self.p2 is not None else 32 * area)

    @staticmethod
    def describe() -> tuple[ParamSpec, ...]:
        return (
            ParamSpec("block_size", 1, 15, 2, odd_only=True),
            ParamSpec("uniqueness", 0, 50),
            ParamSpec("speckle_window", 0, 400, 10),
            ParamSpec("speckle_range", 0, 16),
            ParamSpec("disp12_max_diff", -1, 32),
        )


def search_range(max_disparity: float) -> int:
    """OpenCV's numDisparities: the request's range rounded up to a multiple of 16."""
    return int(np.ceil(max_disparity / 16.0) * 16)


@dataclass
class SGBMEngine:
    params: SGBMParams = field(default_factory=SGBMParams)
    name: str = "sgbm"
    ranges: RangeTracker = field(default_factory=RangeTracker, repr=False, compare=False)
    align: bool = True  # cancel the pair's measured vertical misalignment first (depth.alignment)
    aligner: VerticalAligner = field(default_factory=VerticalAligner, repr=False, compare=False)
    # views in colours set apart, frame to frame (``exposure.TintHold``)
    tint: TintHold = field(default_factory=TintHold, repr=False, compare=False)

    def disparity(self, left: np.ndarray, right: np.ndarray, max_disparity: float) -> np.ndarray:
        """H x W float32 disparity from RGB uint8 images; NaN where SGBM finds no match."""
        p = self.params
        p1, p2 = p.penalties()
        num = search_range(max_disparity)
        if left.shape[1] <= num:
            raise UserError(
                f"SGBM needs images wider than its search range ({num} px), got "
                f"{left.shape[1]} px; lower {setting('max_disparity')}"
            )
        matcher = cv2.StereoSGBM_create(  # type: ignore[attr-defined]
            minDisparity=0,
            numDisparities=num,
            blockSize=p.block_size,
            P1=p1,
            P2=p2,
            disp12MaxDiff=p.disp12_max_diff,
            preFilterCap=p.pre_filter_cap,
            uniquenessRatio=p.uniqueness,
            speckleWindowSize=p.speckle_window,
            speckleRange=p.speckle_range,
            mode=SGBM_MODE_IDS[p.mode],
        )
        raw = matcher.compute(cv2.cvtColor(left, cv2.COLOR_RGB2GRAY), cv2.cvtColor(right, cv2.COLOR_RGB2GRAY))
        disp = raw.astype(np.float32) / 16.0  # fixed point with 4 fractional bits
        disp[raw < 0] = np.nan  # OpenCV marks rejected pixels with minDisparity - 1
        return disp

    def new_stream(self) -> None:
        """``DepthEngine.new_stream``: from the next frame on (the trackers reset themselves in the
        thread that computes)."""
        self.ranges.new_stream()
        self.aligner.new_stream()
        self.tint.new_stream()

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        """OpenCV SGBM on one rectified pair (H x W x 3 RGB uint8), read out in the request's mode:
        disparity H x W px (NaN where SGBM has no answer), probabilities P x H x W (0 or 1)."""
        check_pair(left, right)
        check_image_size(left.shape[0], left.shape[1])
        right, notes, align_ms = self.aligner.align(left, right) if self.align else (right, [], 0.0)
        apart = self.tint.threshold()
        flat, seen, views = pair_notes(left, right, apart)
        self.tint.update(seen)
        notes = [*notes, *seen]
        # views exposed apart matched first, as Bi3D's are: SGBM's costs see gain (Motorcycle with
        # the left view at half brightness: 59 % dense bad-2, against 23 % as shot; review)
        left, right = gain_matched(left, right, views, apart)
        t0 = time.perf_counter()
        ceiling = request.max_disparity
        request, found = bounded(request, self.ranges, left, right)  # --max-disparity auto
        if found is None:
            request, found = self._bounded_planes(request, left, right)
        fit = widest_search(left.shape[1])
        narrow = search_range(request.max_disparity) > fit
        if narrow:  # no match lies farther than the image is wide: search what fits
            request = narrowed(request, fit, left.shape[1])
        self._check_memory(left.shape[:2], request)
        disp = self.disparity(left, right, request.max_disparity)
        if found is None and request.mode is Mode.CONTINUOUS:
            # OpenCV searched up to a multiple of 16: nothing reads past the maximum the user set
            # (20 px searched 0-31 px), as Bi3D's sweep reads its last plane there
            top = np.float32(request.max_disparity)
            with np.errstate(invalid="ignore"):
                beyond = float(np.mean(disp > top))
            np.minimum(disp, top, out=disp)
            if beyond >= BEYOND_NOTE_SHARE:
                notes.append(beyond_text(beyond, float(top)))
            elif top < DEFAULT_MAX_DISPARITY:  # a maximum set below the default may miss the scene:
                # matched wrongly inside the search, not piled at its top (20 px read 13, unsaid)
                notes.extend(self._short_search_note(left, right, float(top)))
        t1 = time.perf_counter()
        result = self._answer(disp, request)
        t2 = time.perf_counter()
        result.timings = {"match": (t1 - t0) * 1000, "readout": (t2 - t1) * 1000, "total": (t2 - t0) * 1000}
        if found is not None:
            result.searched = (0.0, float(request.max_disparity))
            result.notes.insert(0, found.note)
            if request.mode is Mode.CONTINUOUS and request.max_disparity >= ceiling:  # no room left
                remedy = ceiling_remedy(None, ceiling, left.shape[1])
                result.notes.extend(
                    ceiling_note(result.disparity, request.max_disparity, remedy, found.estimate)
                )
        if narrow:
            result.notes.append(f"SGBM searched 0-{fit} px: the images are {left.shape[1]} px wide")
        if flat is not None:  # a black frame read "70 % valid" and "identical" (review), as Bi3D does
            flat_answer(result)
            result.notes = [flat, *without_ceiling_notes(result.notes)]
        return with_alignment(result, notes, align_ms)

    def _short_search_note(self, left: np.ndarray, right: np.ndarray, top: float) -> list[str]:
        """A fixed maximum short of the scene: the quarter-resolution estimate of the automatic
        range says how far the scene reaches (a few ms). SGBM answers such pixels with wrong
        matches inside the search, so they do not pile up at its end to be noticed (a 20 px wall
        under --max-disparity 16 read a median 13 px, unsaid; Bi3D said so)."""
        reach = estimate_reach(left, right, widest_search(left.shape[1]), self.ranges.config)
        if reach is None or reach <= top + STEP_PX:
            return []
        return [
            f"the scene reaches about {reach:.0f} px, past the {top:g} px searched: SGBM's answers there "
            f"are wrong matches; raise {setting('max_disparity')} (or give auto)"
        ]

    def _bounded_planes(
        self, request: DepthRequest, left: np.ndarray, right: np.ndarray
    ) -> tuple[DepthRequest, SceneRange | None]:
        """Binary and selective requests under ``--max-disparity auto``: SGBM searches to the
        scene's bound or one block (16 px) past the top plane or range end, whichever is farther,
        not to the 192 px maximum. OpenCV leaves the left ``search`` columns without an answer, so
        at 192 px a 320 px wide pair lost 60 % of its pixels, which binary counted as "not closer"
        (an obstacle there went unseen; Bi3D answered them)."""
        if not request.auto_range or request.mode not in (Mode.BINARY, Mode.SELECTIVE):
            return request, None
        top = max(requested_planes(request)) if request.mode is Mode.BINARY else continuous_range(request)[1]
        ceiling = min(request.max_disparity, widest_search(left.shape[1]))
        if top > ceiling:  # beyond what the pair's width holds (the request's own maximum is checked)
            narrowed(request, ceiling, left.shape[1])
        found = self.ranges.update(left, right, ceiling, left.shape[:2])
        bound = min(ceiling, max(found.bound, search_range(float(top) + 1.0) + 16))
        if bound >= request.max_disparity:
            return request, None
        found = dataclasses.replace(
            found, bound=bound, note=found.note.replace(f"0-{found.bound} px", f"0-{bound} px")
        )
        return dataclasses.replace(request, max_disparity=int(bound), auto_range=False), found

    def _check_memory(self, size: tuple[int, int], request: DepthRequest) -> None:
        if request.mode in (Mode.BINARY, Mode.QUANTIZED):
            planes = len(requested_planes(request))
        else:
            planes = len(range_planes(*continuous_range(request)))
        full_dp = self.params.mode == "hh"  # OpenCV: only HH keeps the whole H x W x D volume
        needed = sgbm_bytes(size, search_range(request.max_disparity), planes, full_dp)
        require_frame(needed, planes, size, "SGBM")

    def _answer(self, disp: np.ndarray, request: DepthRequest) -> DepthResult:
        if request.mode in (Mode.BINARY, Mode.QUANTIZED):
            planes = requested_planes(request)
            probs = plane_probabilities(disp, planes)
            if request.mode is Mode.BINARY:
                mask = probs[0] > 0.5  # NaN compares False: holes are not "closer"
                return self._result(request, np.full_like(disp, np.nan), probs, planes, mask=mask)
            disparity = quantized_disparity(probs, planes, request.max_disparity)
            return self._result(request, disparity, probs, planes)
        lo, hi = continuous_range(request)
        planes = range_planes(lo, hi)
        probs = plane_probabilities(disp, planes)
        if request.mode is Mode.SELECTIVE:
            state = range_state(disp, lo, hi)
            inside = disp.copy()
            inside[state != 0] = np.nan
            return self._result(request, inside, probs, planes, range_state=state)
        return self._result(request, disp, probs, planes)

    def _result(
        self,
        request: DepthRequest,
        disparity: np.ndarray,
        probs: np.ndarray,
        planes: np.ndarray,
        **extra: np.ndarray | None,
    ) -> DepthResult:
        return DepthResult(
            disparity=disparity.astype(np.float32),
            probabilities=probs,
            planes=np.asarray(planes, np.float32),
            mode=request.mode,
            engine=self.name,
            runtime="opencv",
            **extra,  # type: ignore[arg-type]
        )


def range_planes(lo: float, hi: float) -> np.ndarray:
    """The planes of the probability record over a continuous or selective range: every 3 px from
    ``floor(lo)``, and ``hi`` itself where the grid stops short of it (0, 3, ..., 18, 20 for 0-20 px)."""
    planes = np.arange(np.floor(lo), np.ceil(hi) + 1, 3, dtype=np.float64)
    return planes if planes[-1] >= hi else np.append(planes, float(hi))


def plane_probabilities(disp: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """P x H x W: 1 where disparity > plane, 0 where not, NaN at holes."""
    closer = disp[None] > np.asarray(planes, np.float32)[:, None, None]
    return np.where(np.isnan(disp)[None], np.float32(np.nan), closer.astype(np.float32))


def narrowed(request: DepthRequest, fit: int, width: int) -> DepthRequest:
    """``request`` searching ``fit`` px, what a pair ``width`` px wide holds: planes or a range
    beyond it are one line naming the width (a 32 px pair's plane at 48 px read "outside [0, 16]
    px ... --max-disparity (16 px) bounds it", a maximum not given); levels are as many as fit."""
    beyond = [p for p in request.planes if p > fit]
    if request.range is not None and request.range[1] > fit:
        beyond.append(request.range[1])
    if beyond:
        raise UserError(
            f"{max(beyond):g} px is farther than SGBM can match in a {width} px wide pair (it searches "
            f"0-{fit} px there): choose planes or a range below {fit} px"
        )
    levels = fit_levels(request.levels, 0, fit)
    return dataclasses.replace(request, max_disparity=fit, levels=levels)
