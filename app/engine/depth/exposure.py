"""Exposure stretch before Bi3D: an underexposed pair brought to the contrast the network knows.

The network's first layers are not invariant to contrast (a biased convolution and a ReLU come
before the features' normalisation), and the matching stages after it judge texture in grey
levels. Measured on Motorcycle at the defaults: the pair at 35 % or 20 % of its brightness gave
24.3 / 27.5 % dense bad-2 against 16.2 % as shot (``benchmarks/camera_variants.py``).

Only an underexposed pair is stretched: one whose ``high_percent`` level (all channels of both
images) is at most ``max_high``, so that its highlights leave more than a third of the scale
unused. Bright but flat pairs are not: on blank-room renders (bright walls, smooth shading,
sensor noise) stretching them raised the phantom near answers (2.54 -> 2.90 % of low-texture
pixels, kept 55.2 -> 49.7 %) and held-out rooms' bad-2 (40.7 -> 41.0 %).

Both images get one mapping (the same for both, so they stay photometrically alike): a linear
stretch about the middle of the pair's ``low_percent`` .. ``high_percent`` levels that makes that
span ``target_span`` levels, never by less than 1 nor by more than ``max_gain``; the middle moves
towards mid-grey by as much as the stretch allows, so that the mapping is the identity at a
gain of 1 and the dark end stays on the scale. Images are H x W x 3 RGB uint8.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from app.engine.types import FLAT_NOTE, DepthResult


@dataclass(frozen=True)
class ExposureConfig:
    low_percent: float = 0.5
    high_percent: float = 99.5
    target_span: float = 192.0  # grey levels between the two percentiles after the stretch (at least)
    max_gain: float = 8.0
    max_high: int = 160  # the high percentile's level at most which a pair counts as underexposed


DEFAULT_EXPOSURE = ExposureConfig()


def pair_histogram(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The 256 grey-level counts of both images (every channel, every ``ROW_STEP``-th row): what
    ``levels`` reads, computed once for the flatness test and the stretch of one frame."""
    left_counts, right_counts = view_histograms(left, right)
    return left_counts + right_counts


def view_histograms(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pair_histogram``'s counts of each image apart (``exposure_mismatch_note`` compares them)."""
    return _histogram(left), _histogram(right)


EXPOSURE_MISMATCH = 1.5  # one view's mean grey this many times the other's: said (real pairs: 1.00-1.09)
EXPOSURE_GAP = 10.0  # ... and at least this many grey levels above it


EXPOSURE_MISMATCH_WORDS = "so depth is less reliable"  # how the note is found again (the window)


OVEREXPOSED = 0.15  # this share of a view's samples at level 255 is said (blank-room renders: up to 0.11)
OVEREXPOSED_WORDS = "at 255 (clipped white)"


def overexposed_note(left_counts: np.ndarray, right_counts: np.ndarray) -> str | None:
    """A note when much of a view is clipped white (``OVEREXPOSED``), else None: its depth there
    is unknown or guessed (Motorcycle at 1.5 x its exposure, 20 % clipped, read 23.5 % dense bad-2
    against 16.2 % as shot; aloe, 48 % clipped, 25.9 % against 19.6 %: review)."""
    shares = [float(c[255]) / max(float(c.sum()), 1.0) for c in (left_counts, right_counts)]
    if max(shares) < OVEREXPOSED:
        return None
    if min(shares) >= OVEREXPOSED:
        which = f"{100 * shares[0]:.0f} and {100 * shares[1]:.0f} % of the left and right images'"
    else:
        which = f"{100 * max(shares):.0f} % of the {'left' if shares[0] > shares[1] else 'right'} image's"
    return (
        f"exposure: {which} channel values are {OVEREXPOSED_WORDS}, so depth is unknown or guessed "
        "there; lower the exposure or gain"
    )


def mean_level(counts: np.ndarray) -> float:
    """The mean grey level of a 256-level histogram (0 for an empty one)."""
    return float((counts * np.arange(256)).sum() / max(counts.sum(), 1))


def exposure_mismatch_note(left_counts: np.ndarray, right_counts: np.ndarray) -> str | None:
    """A note when one image of the pair is much darker than the other (cameras exposed apart: a
    right image at 0.4 x the left's read a scene 100 px deep as 184 px, unsaid: review), else None."""
    means = [mean_level(c) for c in (left_counts, right_counts)]
    darker, brighter = min(means), max(means)
    # and grey levels apart: a night scene's 6 against 9 is no mismatch (code review)
    if brighter - darker < EXPOSURE_GAP or brighter < EXPOSURE_MISMATCH * darker:
        return None
    dark, light = ("right", "left") if means[1] < means[0] else ("left", "right")
    how = "black" if darker < 1 else f"{brighter / darker:.1f} x darker than the {light}"
    return (
        f"exposure: the {dark} image is {how} (mean grey {darker:.0f} against {brighter:.0f}), "
        f"{EXPOSURE_MISMATCH_WORDS}; give both cameras the same exposure and gain"
    )


def levels(
    left: np.ndarray,
    right: np.ndarray,
    config: ExposureConfig = DEFAULT_EXPOSURE,
    counts: np.ndarray | None = None,
) -> tuple[int, int]:
    """The pair's ``low_percent`` and ``high_percent`` levels (0-255), from one histogram
    (``counts``: the pair's ``pair_histogram``, when it is at hand)."""
    counts = pair_histogram(left, right) if counts is None else counts
    cumulative = np.cumsum(counts) / counts.sum()
    lo = int(np.searchsorted(cumulative, config.low_percent / 100.0))
    hi = int(np.searchsorted(cumulative, config.high_percent / 100.0))
    return lo, max(hi, lo)


ROW_STEP = 4  # the histogram reads every 4th row: 230 k samples of a 480 x 640 image


def _histogram(image: np.ndarray) -> np.ndarray:
    """Counts of the 256 levels of a uint8 image (every channel) on every ``ROW_STEP``-th row:
    OpenCV's histogram (float32 counts hold integers to 2^24), 4x faster than ``np.bincount``,
    which took 3.5 ms of a 50 ms binary frame at 480 x 640; the rows a quarter of it again (1 ms
    an image). The 0.5 and 99.5 % levels of a photograph do not need every pixel."""
    rows = np.ascontiguousarray(image)[::ROW_STEP]
    flat = rows.reshape(rows.shape[0], -1)  # a view: whole rows of channels
    return cv2.calcHist([flat], [0], None, [256], [0, 256]).ravel().astype(np.int64)


def stretch_table(lo: int, hi: int, config: ExposureConfig = DEFAULT_EXPOSURE) -> tuple[np.ndarray, float]:
    """The 256-entry uint8 lookup table and its gain for a pair spanning ``lo`` .. ``hi``."""
    gain = float(np.clip(config.target_span / max(hi - lo, 1), 1.0, config.max_gain))
    middle = (lo + hi) / 2
    target = middle + (127.5 - middle) * (1 - 1 / gain)
    table = np.clip((np.arange(256) - middle) * gain + target + 0.5, 0, 255).astype(np.uint8)
    return table, gain


def stretch(
    left: np.ndarray,
    right: np.ndarray,
    config: ExposureConfig = DEFAULT_EXPOSURE,
    counts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The pair stretched (or as it is, with None) and a note of what was done."""
    lo, hi = levels(left, right, config, counts)
    if hi > config.max_high:
        return left, right, None
    table, gain = stretch_table(lo, hi, config)
    if gain <= 1.0:
        return left, right, None
    note = (
        f"exposure: the pair is underexposed (grey levels {lo}-{hi}); Bi3D matched it with contrast "
        f"x{gain:.2f} (--no-exposure-stretch turns this off)"
    )
    return cv2.LUT(left, table), cv2.LUT(right, table), note


GAIN_MATCHED = 1.15  # one view's mean grey this many times the other's: brought to it before matching
# the views' channel ratios this far apart (colours set apart): read as grey (Motorcycle's are
# 1.016 x apart, the blank-room renders' 1.00-1.04 x)
TINT_MATCHED = 1.06
# ... and once a stream's views were apart, until their ratios come within this: a stream near the
# threshold read colour and grey levels frame by frame (its depth flickered between the two readings)
TINT_RELEASE = 1.03
TINT_WORDS = "so depth is read from their grey levels"  # how the note is found again


TINT_FLOOR = 16.0  # grey levels: a channel darker than this on average has no colour to read


def colour_stats(image: np.ndarray) -> tuple[np.ndarray, bool, bool]:
    """An H x W x 3 image's channel means, whether it is readable (not dark: ``TINT_FLOOR``, a dark
    stream's one-level black differences read 1.14 x apart; not one level: a lens cap's black, a
    blown-out white read as a grey camera: code review) and whether it holds a grey camera's three
    equal channels; every ``ROW_STEP``-th row read, in one pass but for a grey-looking image."""
    rows = image[::ROW_STEP]
    mean, std = cv2.meanStdDev(rows)
    means, spread = mean.ravel()[:3], std.ravel()[:3]
    readable = bool(means.min() >= TINT_FLOOR and spread.max() > 0)
    # equal channels have equal means and spreads: only then are the pixels compared
    grey = bool(
        np.ptp(means) < 1e-6
        and np.ptp(spread) < 1e-6
        and np.array_equal(rows[..., 0], rows[..., 1])
        and np.array_equal(rows[..., 1], rows[..., 2])
    )
    return means, readable, grey


def colour_mismatch(left: np.ndarray, right: np.ndarray, apart: float = TINT_MATCHED) -> str | None:
    """What differs between the views' colours where they should be read as grey: one view grey
    (a grey camera's three equal channels) and the other in colour, or their channels' mean
    ratios ``apart`` x apart or more (white balance, saturation, gamma or channel order set apart;
    ``TintHold`` gives a stream's threshold); None where they are alike."""
    if left.ndim == 2 or right.ndim == 2 or left.shape[2] != 3 or right.shape[2] != 3:
        return None
    (cl, readable_l, grey_l), (cr, readable_r, grey_r) = colour_stats(left), colour_stats(right)
    if not (readable_l and readable_r):
        return None
    if grey_l != grey_r:
        grey_one, colour_one = ("left", "right") if grey_l else ("right", "left")
        return f"the {grey_one} image is grey and the {colour_one} in colour"
    ratios = cr / cl
    if grey_l or ratios.max() < apart * ratios.min():
        return None
    each = ", ".join(f"{name} {r:.2f} x" for name, r in zip(("red", "green", "blue"), ratios, strict=True))
    return f"the right image's colours differ from the left's (mean {each} the left's)"


def tint_note(left: np.ndarray, right: np.ndarray, apart: float = TINT_MATCHED) -> str | None:
    """A note when the views' colours differ (``colour_mismatch``), else None."""
    what = colour_mismatch(left, right, apart)
    if what is None:
        return None
    advice = (
        "set the colour camera to grey (mono)"
        if "is grey" in what
        else "give both cameras the same colour settings (white balance, saturation, gamma, channel order)"
    )
    return f"colour: {what}, {TINT_WORDS}; {advice}"


def as_grey(image: np.ndarray) -> np.ndarray:
    """An H x W x 3 RGB uint8 image's grey levels in all three channels."""
    return cv2.cvtColor(cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)


def white_balanced(
    left: np.ndarray, right: np.ndarray, apart: float = TINT_MATCHED
) -> tuple[np.ndarray, np.ndarray]:
    """Both views as grey (``as_grey``) where their colours differ (``colour_mismatch``), else both
    as they are (``gain_matched`` says why)."""
    if colour_mismatch(left, right, apart) is None:
        return left, right
    return as_grey(left), as_grey(right)


def gain_matched(
    left: np.ndarray,
    right: np.ndarray,
    views: tuple[np.ndarray, np.ndarray] | None = None,
    apart: float = TINT_MATCHED,
) -> tuple[np.ndarray, np.ndarray]:
    """Two uint8 images (grey or RGB) brought to one white balance and exposure where they differ.

    - Colours apart (``colour_mismatch``: white balance, saturation, gamma or channel order set
      apart, or a grey camera beside a colour one): both read as grey. The network is not
      invariant to colour (a grey left view beside a colour right one read aloe at 42.7 % dense
      bad-2, 20.0 % as grey: review): Motorcycle with the right view's red at 0.8 x and blue
      at 1.25 x gave 28.9 % dense bad-2 with each channel matched to the other view's mean (72.8 %
      unmatched; 16.2 % as shot), and 17.2 % as grey (16.98 % for the pair as shot in grey).
    - Exposed apart (mean grey ``GAIN_MATCHED`` x or more; real pairs differ by 1.00-1.09): the
      brighter view scaled to the other's mean level. Matching costs are not invariant to gain:
      Motorcycle with its right view at half brightness estimated a reach of 168 px where the truth
      stops at 60, the sweep went to 192 px, and its top read as a near wall (review). Darkening,
      not brightening: no highlight is clipped, and no noise is raised (both views brought to their
      geometric mean, per channel, on every pair, raised the blank-room renders' phantoms 2.52 ->
      2.64 % with 55.0 -> 52.8 % kept).

    Otherwise both are returned as they are. ``views``: the images' ``view_histograms`` where
    known, whose means cost nothing more (the images' own means took 0.5 ms of a 15 ms binary
    frame). ``apart``: the colours' threshold (``colour_mismatch``)."""
    balanced = white_balanced(left, right, apart)
    if balanced[0] is not left:
        (left, right), views = balanced, None
    if views is None:
        ml, mr = float(left.mean()), float(right.mean())
    else:
        ml, mr = mean_level(views[0]), mean_level(views[1])
    if min(ml, mr) < 1.0 or max(ml, mr) < GAIN_MATCHED * min(ml, mr):
        return left, right
    if ml > mr:
        return cv2.convertScaleAbs(left, alpha=mr / ml), right
    return left, cv2.convertScaleAbs(right, alpha=ml / mr)


FLAT_LEVELS = 2  # grey levels: a pair whose 0.05-99.95 % span is no wider has nothing to match
FLATNESS = ExposureConfig(low_percent=0.05, high_percent=99.95)


def flat_pair_note(left: np.ndarray, right: np.ndarray, counts: np.ndarray | None = None) -> str | None:
    """A note when the pair is flat (a black, blank or saturated frame: no depth can be read
    from it), else None. Texture covering more than about 0.05 % of the pixels counts."""
    lo, hi = levels(left, right, FLATNESS, counts)
    if hi - lo > FLAT_LEVELS:
        return None
    return (
        f"{FLAT_NOTE} (grey levels {lo}-{hi}), so no pixel has an answer; "
        "check the exposure, the lens caps and the source"
    )


def flat_answer(result: DepthResult) -> None:
    """Every pixel of ``result`` unknown, in place: no disparity, confidence 0, no pixel "closer"
    than a binary plane nor inside, closer or farther than a selective range."""
    result.disparity[:] = np.nan
    result.unmasked = None  # no answers under another threshold either (code review)
    result.confidence = np.zeros(result.disparity.shape, np.float32)
    if result.probabilities is not None:  # SGBM's 0/1 planes of a black frame were drawn (code review)
        result.probabilities[:] = np.nan
    if result.mask is not None:
        result.mask[:] = False
    if result.range_state is not None:
        result.range_state[:] = 0


def pair_notes(
    left: np.ndarray, right: np.ndarray, apart: float = TINT_MATCHED
) -> tuple[str | None, list[str], tuple[np.ndarray, np.ndarray]]:
    """What a pair's grey levels say before any matching, as both engines read them: the flat
    note (None: the pair has texture), the other notes (one image twice, the views exposed apart,
    clipped white, or in colours set apart)
    and the views' ``view_histograms`` (``gain_matched`` reads them; their sum, ``levels`` and
    ``stretch``)."""
    views = view_histograms(left, right)
    flat = flat_pair_note(left, right, views[0] + views[1])
    if flat is not None:
        return flat, [], views
    notes = (
        identical_pair_note(left, right),
        exposure_mismatch_note(*views),
        overexposed_note(*views),
        tint_note(left, right, apart),
    )
    return None, [n for n in notes if n], views


IDENTICAL_NOTE = (
    "the left and right images are identical, so every pixel reads 0 px (infinitely far): give the "
    "two cameras' images (the same file or frame twice?)"
)


def identical_pair_note(left: np.ndarray, right: np.ndarray) -> str | None:
    """A note when the two images are the same pixels (one file given twice, a duplicated
    frame), else None."""
    return IDENTICAL_NOTE if np.array_equal(left, right) else None


@dataclass
class TintHold:
    """One stream's threshold for colours set apart (``colour_mismatch``): ``TINT_MATCHED`` until
    its views were apart, then ``TINT_RELEASE`` until they come within it (hysteresis)."""

    held: bool = False
    _stale: bool = field(default=False, repr=False, compare=False)  # new_stream() asked for a reset

    def new_stream(self) -> None:
        """From the next frame on (reset in the thread that computes)."""
        self._stale = True

    def threshold(self) -> float:
        """This frame's threshold."""
        if self._stale:
            self.held, self._stale = False, False
        return TINT_RELEASE if self.held else TINT_MATCHED

    def update(self, notes: list[str]) -> None:
        """Whether this frame's views were apart, from its ``pair_notes``."""
        self.held = any(TINT_WORDS in note for note in notes)
