"""Plane choice and readouts shared by every engine (Bi3D and the SGBM baseline).

Planes are disparities in pixels. Probabilities are P(disparity > plane).
"""

from __future__ import annotations

import math

import numpy as np

from app.engine.errors import UserError, setting
from app.engine.types import Calibration, DepthRequest, Mode, Spacing

PLANE_STEP_PX = 3  # one feature column of Bi3D's 1/3-resolution features


def quantized_disparity(probabilities: np.ndarray, planes: np.ndarray, max_disparity: float) -> np.ndarray:
    """Published quantized readout: P x H x W probabilities at sorted planes -> H x W bins.

    Stack [1, p_1, ..., p_N, 0], read 1 - stack as a cumulative distribution, difference
    it into N + 1 bin probabilities, take the arg-max bin and report its midpoint; the
    outer bin edges are 0 and ``max_disparity``. NaN probabilities give NaN.
    """
    p = np.asarray(probabilities, dtype=np.float32)
    n, h, w = p.shape
    edges = np.concatenate([[0.0], np.asarray(planes, np.float64), [float(max_disparity)]])
    mids = ((edges[:-1] + edges[1:]) / 2).astype(np.float32)
    # bin k = cdf[k + 1] - cdf[k], streamed over the planes: the same float32 arithmetic as
    # stacking and differencing, without N + 2 frame-sized temporaries (3x faster at 16 planes)
    below = np.zeros((h, w), np.float32)  # cdf[0] = 1 - 1
    best = np.full((h, w), -np.inf, np.float32)
    index = np.zeros((h, w), np.intp)
    for k in range(n + 1):
        above = 1.0 - p[k] if k < n else np.ones((h, w), np.float32)  # cdf[N + 1] = 1 - 0
        bins = above - below
        np.copyto(index, k, where=bins > best)  # strictly: the first of equal bins wins
        np.maximum(best, bins, out=best)  # NaN sticks, and NaN pixels are reported as NaN
        below = above
    out = mids[index]
    out[np.isnan(best)] = np.nan
    return out


STEP_WINDOW = 6  # bins either side of the best step among which the published arg-max chooses


def hold_far_planes(probabilities: np.ndarray, planes: np.ndarray, start: float) -> None:
    """In place on P x H x W probabilities at sorted ``planes``: each plane of ``start`` px or more
    is held to the farthest-reaching plane at no more than half its disparity ("closer than P"
    implies "closer than P / 2"), where the sweep has one. The light model's false "closer" on
    planes far beyond a pixel, in quantized mode: the Aloe pair (8 levels over 0-192 px) put 18 %
    of its pixels in the nearest bin, where the truth has 0.2 %; level accuracy 71.5 -> 85.4 %,
    on the 16 + 16 held-out selection scenes (layered / rooms) 90.42 / 68.66 -> 90.46 / 68.70 %
    (8 levels), 85.86 / 58.68 -> 85.86 / 58.67 % (16), 88.82 / 70.07 -> 88.82 / 70.01 % (every 12 px
    to 180), Motorcycle unchanged or +0.13 (``benchmarks/RESULTS.md``)."""
    values = np.asarray(planes, np.float64)
    for k, plane in enumerate(values):
        if plane < start:
            continue
        below = np.flatnonzero(values <= plane / 2 + 1e-6)
        if below.size:
            np.minimum(probabilities[k], probabilities[below[-1]], out=probabilities[k])


def quantized_step(
    probabilities: np.ndarray, planes: np.ndarray, max_disparity: float, window: int | None = STEP_WINDOW
) -> np.ndarray:
    """Quantized readout near each pixel's best step: P x H x W probabilities at sorted planes ->
    H x W bin midpoints (bins and edges as ``quantized_disparity``), NaN where a probability is.

    The bin after the first ``k`` planes is the one whose step (closer than those ``k``, farther
    than the rest) disagrees least with the curve: ``sum_{i<k} (1 - p_i) + sum_{i>=k} p_i``, i.e.
    the ``k`` maximising ``C_k - k / 2`` with ``C_k = sum_{i<k} p_i`` (of equal fits the farther,
    smaller ``k``), as ``readout.step_fit`` reads continuous curves. A per-plane classifier's
    false "closer" answers on planes far beyond a pixel then cost less to ignore than to follow
    while they are fewer than its true "closer" run; the published arg-max of the bins follows
    them (Motorcycle, planes every 12 px to 180: a quarter of the pixels in bins beyond 80 px,
    where no pixel is). Among the bins within ``window`` of that step (None: the step's own bin)
    the published arg-max then chooses, which places the bin more precisely where the curve's
    steepest fall is near its step.

    Level accuracy (the share of pixels whose bin holds the truth) on the 16 + 16 held-out
    selection scenes (``training.data.selection_scenes``, layered / rooms), published arg-max ->
    this with the window of 6 (``benchmarks/RESULTS.md``): planes every 12 px to 180 px 87.30 /
    69.75 -> 88.82 / 70.07 %; every 6 px to 96 px 84.70 / 61.82 -> 84.32 / 61.55 %; 8 levels over
    the automatic range 90.10 / 68.91 -> 90.16 / 68.92 %; 16 levels 86.02 / 58.85 -> 86.01 / 58.93 %.
    The step alone (no window) lost 0.7-1.7 points where the planes stay within the scene."""
    p = np.asarray(probabilities, dtype=np.float32)
    n, h, w = p.shape
    edges = np.concatenate([[0.0], np.asarray(planes, np.float64), [float(max_disparity)]])
    mids = ((edges[:-1] + edges[1:]) / 2).astype(np.float32)
    prefix = np.zeros((h, w), np.float32)  # C_k
    best = np.zeros((h, w), np.float32)  # k = 0: C_0 - 0 = 0
    index = np.zeros((h, w), np.intp)
    for k in range(1, n + 1):
        prefix += p[k - 1]
        gain = prefix - k / 2
        np.copyto(index, k, where=gain > best)  # strictly: of equal fits the farther step wins
        np.maximum(best, gain, out=best)
    if window is not None:  # the published arg-max among the bins near the step
        cdf_lo = np.zeros((h, w), np.float32)
        top = np.full((h, w), -np.inf, np.float32)
        pick = index.copy()
        for k in range(n + 1):
            cdf_hi = 1.0 - p[k] if k < n else np.ones((h, w), np.float32)
            bins = np.where(np.abs(index - k) <= window, cdf_hi - cdf_lo, -np.inf)
            np.copyto(pick, k, where=bins > top)
            np.maximum(top, bins, out=top)
            cdf_lo = cdf_hi
        index = pick
    out = mids[index]
    out[np.isnan(prefix)] = np.nan
    return out


def range_state(disparity: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """-1 farther than [lo, hi] (smaller disparity), +1 closer, 0 inside; 0 where unknown."""
    state = np.zeros(disparity.shape, np.int8)
    with np.errstate(invalid="ignore"):
        state[disparity < lo] = -1
        state[disparity > hi] = 1
    return state


def uniform_planes(levels: int, lo: float, hi: float) -> np.ndarray:
    """``levels`` planes splitting [lo, hi] into levels + 1 equal bins."""
    return np.linspace(lo, hi, levels + 2)[1:-1]


def depth_uniform_planes(levels: int, calibration: Calibration, lo: float, hi: float) -> np.ndarray:
    """``levels`` planes splitting the depth interval seen by disparities [lo, hi] evenly.

    The far end uses max(lo, one plane step) so that it stays at a finite depth.
    """
    near = calibration.depth_m(np.array([hi]))[0]
    far = calibration.depth_m(np.array([max(lo, PLANE_STEP_PX)]))[0]
    if not (np.isfinite(near) and np.isfinite(far)) or far <= near:
        raise UserError("calibration gives no usable depth range; check focal length and baseline")
    depths = np.linspace(near, far, levels + 2)[1:-1]
    return np.sort(np.array([calibration.disparity_px(float(z)) for z in depths]))


def requested_planes(request: DepthRequest) -> np.ndarray:
    """Planes (px, ascending) for binary and quantized requests, before any budget."""
    top = float(request.max_disparity)
    if request.planes:
        return np.sort(np.asarray(request.planes, np.float64))
    if request.mode is Mode.BINARY:
        raise UserError(f"binary mode needs one plane: give {setting('planes')} (pixels)")
    lo, hi = request.range if request.range is not None else (0.0, top)
    levels = request.levels if request.levels is not None else 8
    if request.spacing is Spacing.DEPTH:
        assert request.calibration is not None  # checked by DepthRequest
        return depth_uniform_planes(levels, request.calibration, lo, hi)
    return uniform_planes(levels, lo, hi)


BEYOND_NOTE_SHARE = 0.01  # share of pixels nearer than a fixed range's top that a note points out


def beyond_text(share: float, top: float) -> str:
    """The note on ``share`` of the pixels nearer than a fixed continuous range reaches, read at
    its top, ``top`` px (both engines)."""
    return (
        f"{100 * share:.1f} % of the pixels are nearer than the range reaches ({top:g} px) and read "
        f"{top:g} px; raise the maximum disparity, or set it to auto"
    )


def dense_span(lo: float, hi: float, step: int, top: int) -> tuple[int, int]:
    """Plane grid [first, last] (multiples of ``step``, inside [0, top]) covering [lo, hi]."""
    first = math.floor(lo / step) * step
    last = math.ceil(hi / step) * step
    last = min(last, (top // step) * step)
    if last <= first:
        last = min(first + step, (top // step) * step)
        first = last - step
    return first, last


def edge_planes(lo: float, hi: float, step: int, top: int, column: int = 3) -> np.ndarray:
    """Planes every ``step`` px (a multiple of ``column``) from the ``column`` multiple at or
    below ``lo`` to the first at or past ``hi``, within [0, top]: a selective range's edges are
    planes, whatever the step (``dense_span``'s multiples of the step began 20-174 px at 0 px
    for a 99 px step). A grid that would pass ``top`` ends there, its last gap shorter."""
    first = math.floor(lo / column) * column
    count = max(1, math.ceil((hi - first) / step))
    planes = first + step * np.arange(count + 1, dtype=np.float64)
    end = (top // column) * column
    if planes[-1] > end:
        planes = np.append(planes[planes < end], float(end))
    return planes


def continuous_range(request: DepthRequest) -> tuple[float, float]:
    """The disparity interval a selective or continuous request asks for."""
    if request.mode is Mode.SELECTIVE:
        assert request.range is not None
        return float(request.range[0]), float(request.range[1])
    return 0.0, float(request.max_disparity)
