"""Value types passed between sources, engines and the UI.

Images are RGB uint8, H x W x 3. Disparities are float32 pixels, NaN where unknown.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from app.engine.errors import UserError, setting
from app.engine.validation import Bounds, integer, number

DEFAULT_MAX_DISPARITY = 192
# answers rated below this are unknown by default (chosen on held-out synthetic rooms: see depth.agreement)
DEFAULT_MIN_CONFIDENCE = 0.1
FLAT_NOTE = "no texture: the pair is flat"  # how a flat pair's note starts (the window's title reads it)
MAX_DISPARITY_LIMIT = 1024  # px: beyond any engine here (Bi3D models reach 192, SGBM searches W - 1)

# The values the engine's settings take (``app.vocabulary`` gives them labels, help and ranges)
ENGINES = ("bi3d", "sgbm")
DEVICES = ("cpu", "cuda")
PRECISIONS = ("auto", "fp32", "tf32", "bf16", "fp16", "int8")
RUNTIMES = ("auto", "torch", "onnxruntime", "tensorrt")
SHIFT_MODES = ("auto", "round", "interpolate")
SGBM_MODES = ("sgbm", "hh", "3way", "hh4")
FLOW_BACKENDS = ("auto", "nvof", "dis", "farneback")
SEARCHES = ("auto", "coarse-to-fine", "full")  # continuous/selective search (depth.searched)


class Mode(StrEnum):
    BINARY = "binary"
    QUANTIZED = "quantized"
    SELECTIVE = "selective"
    CONTINUOUS = "continuous"


class Spacing(StrEnum):
    """How quantized levels are spread: uniformly in disparity or in depth."""

    DISPARITY = "disparity"
    DEPTH = "depth"


@dataclass(frozen=True)
class Calibration:
    """Rectified stereo geometry. ``doffs`` is the principal-point x difference (Middlebury)."""

    focal_px: float
    baseline_m: float
    cx: float = 0.0
    cy: float = 0.0
    doffs: float = 0.0
    # False: the baseline is a 1 m placeholder (a self-rectification with no measured baseline),
    # so "metres" are baselines
    baseline_known: bool = True

    @property
    def depth_unit(self) -> str:
        return "m" if self.baseline_known else "baselines"

    def depth_m(self, disparity: np.ndarray) -> np.ndarray:
        """Metric depth Z = f * B / (d + doffs); NaN where the disparity is not positive."""
        d = np.asarray(disparity, dtype=np.float64) + self.doffs
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(d > 0, self.focal_px * self.baseline_m / d, np.nan)
        return z.astype(np.float32)

    def disparity_px(self, depth_m: float) -> float:
        if depth_m <= 0:
            raise UserError(f"depth must be positive, got {depth_m} m")
        return self.focal_px * self.baseline_m / depth_m - self.doffs


@dataclass(frozen=True)
class StereoPair:
    left: np.ndarray
    right: np.ndarray
    timestamp: float = 0.0
    calibration: Calibration | None = None
    gt_disparity: np.ndarray | None = None

    def __post_init__(self) -> None:
        check_pair(self.left, self.right)


def check_pair(left: np.ndarray, right: np.ndarray) -> None:
    """Both images H x W x 3 RGB uint8 of one size, or a ``UserError`` saying what is wrong."""
    for name, img in (("left", left), ("right", right)):
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise UserError(f"{name} image must be H x W x 3 uint8 RGB, got {img.shape} {img.dtype}")
    if left.shape != right.shape:
        raise UserError(
            f"left {left.shape[1]}x{left.shape[0]} and right {right.shape[1]}x{right.shape[0]} "
            "differ in size; give a rectified pair of equal size"
        )


@dataclass(frozen=True)
class DepthRequest:
    """What to compute. Planes and ranges are in pixels of disparity.

    binary: ``planes`` holds one plane. quantized: ``planes`` explicitly, or ``levels``
    planes spread by ``spacing``. selective: ``range`` (min, max). continuous: the whole
    range [0, max_disparity]. ``budget_ms`` lets the engine choose the plane count
    (quantized) or plane step (selective, continuous) that fits.
    """

    mode: Mode = Mode.CONTINUOUS
    planes: tuple[float, ...] = ()
    levels: int | None = None
    spacing: Spacing = Spacing.DISPARITY
    range: tuple[float, float] | None = None
    budget_ms: float | None = None
    max_disparity: int = DEFAULT_MAX_DISPARITY
    calibration: Calibration | None = None
    # continuous (and quantized levels): bound the sweep by a per-frame estimate of the scene's reach, at most
    # ``max_disparity`` (``depth.scene_range``; the front ends' default, ``--max-disparity auto``)
    auto_range: bool = False
    # continuous and selective: answers rated below this (``DepthResult.confidence``) are unknown
    min_confidence: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))
        object.__setattr__(self, "spacing", Spacing(self.spacing))
        object.__setattr__(self, "planes", tuple(float(p) for p in self.planes))
        self.validate()

    def validate(self) -> None:
        top = integer(self.max_disparity, "max disparity", Bounds(1, MAX_DISPARITY_LIMIT), "px")
        # where the top comes from: "outside [0, 192] px" did not say (review); at the default it
        # is also Bi3D's reach, which a larger maximum does not pass ("use --max-disparity 192")
        bound = (
            f"{setting('max_disparity')} ({top} px) bounds it"
            if top != DEFAULT_MAX_DISPARITY
            else f"{top} px is where {setting('max_disparity')} auto stops, and Bi3D's reach; SGBM "
            f"({setting('engine', 'sgbm')}) searches farther where {setting('max_disparity')} is raised"
        )
        for p in self.planes:
            number(p, "plane", Bounds(0, top), "px", f"choose planes inside the range ({bound})")
        if self.range is not None:
            lo = number(self.range[0], "range min", Bounds(0, top), "px", bound)
            hi = number(self.range[1], "range max", Bounds(0, top), "px", bound)
            if lo >= hi:
                raise UserError(f"range min {lo:g} must be below max {hi:g}")
        if self.levels is not None:
            span = (self.range[1] - self.range[0]) if self.range is not None else top
            # planes closer than 1 px cannot be told apart by any engine here (SGBM's fixed point
            # and Bi3D's interpolated shifts both resolve about 1 px); more would only cost time
            most = max(1, math.ceil(span) - 1)
            hint = f"a {span:g} px range holds at most {most} planes 1 px apart"
            integer(self.levels, "levels", Bounds(1, most), hint=hint)
        number(self.min_confidence, "min confidence", Bounds(0, 1))
        if self.budget_ms is not None:
            number(self.budget_ms, "budget", Bounds(0, 3_600_000, low_open=True), "ms")
        if self.mode is Mode.BINARY and len(self.planes) > 1:
            raise UserError(f"binary mode takes one plane; use {setting('mode', 'quantized')} for several")
        if self.mode is Mode.SELECTIVE and self.range is None:
            raise UserError(f"selective mode needs {setting('range')} (min and max, pixels)")
        if self.spacing is Spacing.DEPTH and self.calibration is None and self.mode is Mode.QUANTIZED:
            raise UserError("spacing in depth needs a calibration (focal length and baseline)")


@dataclass
class DepthResult:
    """Output of any engine, in the input image's size.

    ``probabilities`` (P x H x W) is P(disparity > plane) for each of ``planes``;
    ``range_state`` is -1 farther than the range, 0 inside, +1 closer (selective mode).
    """

    disparity: np.ndarray
    probabilities: np.ndarray
    planes: np.ndarray
    mode: Mode
    engine: str
    range_state: np.ndarray | None = None
    mask: np.ndarray | None = None
    # H x W in [0, 1]: how far to trust each answer (None: the engine does not rate its answers)
    confidence: np.ndarray | None = None
    timings: dict[str, float] = field(default_factory=dict)
    device: str = "cpu"
    runtime: str = "numpy"
    precision: str = "fp32"
    notes: list[str] = field(default_factory=list)
    choice: dict[str, float] = field(default_factory=dict)
    searched: tuple[float, float] | None = None  # px: the sweep of --max-disparity auto
    runtime_choice: str = ""  # --runtime auto: "cache" (an earlier run's decision) or "timed"
    # the answers before the min-confidence threshold left some unknown (None: no threshold): the
    # window applies another threshold without a new answer; not written to files
    unmasked: np.ndarray | None = None
    # notes read from the thresholded answers (how many reach the ceiling: code review), and how
    # to read them again from answers under another threshold (None: that needs a new answer)
    answer_notes: list[str] = field(default_factory=list)
    recount_notes: Callable[[DepthResult], list[str]] | None = None
    answer_notes_after: str | None = None  # the note they follow (None: they come first)

    def defer_probabilities(
        self, record: Callable[[], np.ndarray], plane: Callable[[int], np.ndarray]
    ) -> None:
        """Make ``probabilities`` when first read, by ``record()`` (P x H x W), instead of now;
        ``plane(k)`` gives one plane's H x W alone. A continuous frame's record is a by-product of
        its answer (65 planes: 80 MB at 480 x 640, 370 MB and a third of the frame at 1282 x 1110;
        2/3 of the frame on a GPU), and only files and the binary display read it."""
        self.__dict__["_probability_source"] = (record, plane, threading.Lock())

    def plane_probabilities(self, k: int) -> np.ndarray:
        """``probabilities[k]`` (H x W), without making the whole deferred record."""
        source = self.__dict__.get("_probability_source")
        return source[1](k) if source is not None else self.probabilities[k]

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays written to ``result.npz``."""
        h, w = self.disparity.shape
        state = self.range_state if self.range_state is not None else np.zeros((h, w), np.int8)
        return {
            "disparity": self.disparity.astype(np.float32),
            "probabilities": self.probabilities.astype(np.float32),
            "planes": self.planes.astype(np.float32),
            "range_state": state.astype(np.int8),
            "confidence": self.known_confidence(),
        }

    def known_confidence(self) -> np.ndarray:
        """The engine's confidence, or 1 where an engine that does not rate its answers gave one."""
        if self.confidence is not None:
            return self.confidence.astype(np.float32)
        return np.isfinite(self.disparity).astype(np.float32)


def level_edges(result: DepthResult, max_disparity: float) -> np.ndarray:
    """A quantized answer's level edges (px, ascending): 0, its planes, and the top of its sweep
    (its auto range's, else ``max_disparity``, at least its last plane)."""
    planes = np.asarray(result.planes, np.float64)
    top = result.searched[1] if result.searched else max_disparity
    return np.concatenate([[0.0], planes, [max(float(top), float(planes[-1]))]])


def farthest_plane(result: DepthResult) -> float | None:
    """A quantized answer's first plane (px): below it, its farthest level reaches to infinity in
    depth; None for other answers."""
    return float(result.planes[0]) if result.mode is Mode.QUANTIZED and len(result.planes) else None


def farthest_level(result: DepthResult) -> np.ndarray | None:
    """A quantized answer's pixels in its farthest level (below its first plane: 0 px to it, so
    to infinity in depth), or None for other answers."""
    plane = farthest_plane(result)
    if plane is None:
        return None
    with np.errstate(invalid="ignore"):
        return result.disparity < plane


def _probabilities(result: DepthResult) -> np.ndarray:
    source = result.__dict__.get("_probability_source")
    if source is not None:
        with source[2]:  # one thread makes it; another reading meanwhile waits for it
            if "_probability_source" in result.__dict__:
                result.__dict__["_probabilities"] = np.ascontiguousarray(source[0](), np.float32)
                del result.__dict__["_probability_source"]
    value: np.ndarray = result.__dict__["_probabilities"]
    return value


def _set_probabilities(result: DepthResult, value: np.ndarray) -> None:
    result.__dict__.pop("_probability_source", None)
    result.__dict__["_probabilities"] = value


# ``probabilities`` stays a field of the constructor and of ``dataclasses.replace``; reading it
# makes a deferred record (``DepthResult.defer_probabilities``)
setattr(DepthResult, "probabilities", property(_probabilities, _set_probabilities))  # noqa: B010


@dataclass
class FrameResult:
    """Everything the UI draws for one frame."""

    index: int
    generation: int
    pair: StereoPair
    request: DepthRequest
    depth: DepthResult
    baseline: DepthResult | None = None  # SGBM beside Bi3D when comparing
    flow: np.ndarray | None = None  # H x W x 2 pixels, left frame to left frame
    calibration: Calibration | None = None
    timings: dict[str, float] = field(default_factory=dict)
    engine_reason: str = ""
    display: Any = None  # display images prepared off the GUI thread (the UI's business)
    raw: StereoPair | None = None  # the pair before rectification (chessboard capture needs it)
