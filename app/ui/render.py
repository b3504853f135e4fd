"""Turning a frame result into display images (numpy only: runs on the worker thread).

Colour-mapping a full frame costs milliseconds; doing it next to the computation keeps the
GUI thread free to paint and respond.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.engine.session import Display, Session, plural
from app.engine.types import FLAT_NOTE, DepthResult, FrameResult, Mode, level_edges

colorize = Display.colorize
ERROR_MAX_PX = 4.0  # the error colour bar's top: bad-2 pixels sit in its upper half


@dataclass(frozen=True)
class DisplaySpec:
    colormap: str = "turbo"
    fixed_max: float | None = None  # None: automatic range
    flow_view: str = "colour"  # "colour" (wheel coding with legend) or "arrows" over the left image
    flow_max: float | None = None  # clamp for flow colours and arrows (px); None: automatic


@dataclass
class Rendered:
    spec: DisplaySpec
    depth_rgb: np.ndarray
    depth_levels: tuple[float, float]
    depth_title: str
    tint: np.ndarray | None  # mask tinted over the left image
    baseline_rgb: np.ndarray | None = None
    flow_rgb: np.ndarray | None = None
    flow_scale: float | None = None  # px the colour wheel's rim stands for (said in the pane's title)
    flow_arrows: bool = False  # drawn as arrows: flow_scale is the longest arrow's flow
    # (title, rgb, whether a 0-4 px colour bar reads it: not a binary answer's right or wrong side)
    errors: list[tuple[str, np.ndarray, bool]] = field(default_factory=list)
    histogram: tuple[np.ndarray, np.ndarray, str] | None = None  # counts, edges, unit (m or px)
    answered: bool = True  # some pixel has a value: the colour bar means something


def auto_levels(values: np.ndarray) -> tuple[float, float]:
    """2nd to 98th percentile of the finite values (0, 1 when there are none)."""
    valid = values[np.isfinite(values)]
    if not valid.size:
        return 0.0, 1.0
    lo, hi = float(np.percentile(valid, 2)), float(np.percentile(valid, 98))
    if hi - lo < FLAT_SPAN_PX:  # one value: a 1e-3 px bar had no numbers, its colour the lowest (review)
        lo = max(0.0, (lo + hi - FLAT_SPAN_PX) / 2)  # no negative disparity on the bar
        return lo, lo + FLAT_SPAN_PX
    return lo, hi


FLAT_SPAN_PX = 1.0  # the narrowest automatic colour range: a flat answer is drawn mid-scale


def level_span(edges: np.ndarray) -> tuple[float, float]:
    """A quantized answer's colour range: its nearest and farthest levels' values (the middles of
    the bins between its ``edges``, ``level_edges``), so each level keeps its colour frame to frame
    and a scene in one level is not one colour under a bar without numbers (review)."""
    mids = (edges[:-1] + edges[1:]) / 2
    return float(mids[0]), float(max(mids[-1], mids[0] + FLAT_SPAN_PX))


UNKNOWN_RGB = (48, 48, 48)  # pixels without a value: grey, so they stand apart from the background
NEARER_RGB = (205, 205, 205)  # selective depth: nearer than the range
FARTHER_RGB = (120, 120, 120)  # selective depth: farther than the range


UNKNOWN_ON_GREY_RGB = (150, 40, 170)  # the grey colour map's unknown: its own dark grey was a far pixel's


def _unknown_grey(rgb: np.ndarray, values: np.ndarray, colormap: str = "") -> np.ndarray:
    rgb[~np.isfinite(values)] = UNKNOWN_ON_GREY_RGB if colormap == "gray" else UNKNOWN_RGB
    return rgb


def _outside_greys(rgb: np.ndarray, depth: DepthResult) -> np.ndarray:
    """Selective depth: the pixels nearer and farther than the range in two greys of their own."""
    if depth.mode is not Mode.BINARY and depth.range_state is not None:
        rgb[depth.range_state == 1] = NEARER_RGB
        rgb[depth.range_state == -1] = FARTHER_RGB
    return rgb


def _plane_depth(result: FrameResult) -> str:
    """' (nearer than 3.14 m)': a binary plane as a depth, with a calibration ('' without)."""
    if result.calibration is None:
        return ""
    z = float(result.calibration.depth_m(np.array([result.depth.planes[0]]))[0])
    return (
        f" (nearer than {z:.2f} {result.calibration.depth_unit})" if np.isfinite(z) else ""
    )  # as the plane label


def _depth_span(result: FrameResult, levels: tuple[float, float]) -> str:
    """', depth 1.21-∞ m': the colour bar's ends as depths, near to far, with a calibration ('' without)."""
    if result.calibration is None:
        return ""
    far, near = (float(result.calibration.depth_m(np.array([v]))[0]) for v in levels)
    words = [f"{z:.3g}" if np.isfinite(z) else "∞" for z in (near, far)]
    return f", depth {words[0]}-{words[1]} {result.calibration.depth_unit}"


UNRECTIFIED_TITLE = "unreliable: the pair is not rectified"


def render(result: FrameResult, spec: DisplaySpec) -> Rendered:
    depth = result.depth
    # what a narrow pane must not cut first: which engine and mode, then what the colours are
    if depth.mode is Mode.BINARY:
        shown, levels = depth.probabilities[0], (0.0, 1.0)
        answered = bool(np.isfinite(shown).any())
        nearer = f"P(disparity > {depth.planes[0]:g} px){_plane_depth(result)}"
        title = f"{depth.engine} binary · {nearer} · nearer: red on the left image"
        tint = depth.mask
    else:
        shown = depth.disparity
        answered = bool(np.isfinite(shown).any())
        if spec.fixed_max:
            levels = (0.0, spec.fixed_max)
        elif depth.mode is Mode.QUANTIZED and len(depth.planes):
            levels = level_span(level_edges(depth, result.request.max_disparity))
        elif depth.mode is Mode.SELECTIVE and result.request.range is not None:
            # the range's ends: a coarse answer under a tight budget (2 planes every 42 px) set a
            # 20-38 px scale that SGBM beside it, 20-60 px, overran in one colour (review)
            levels = (float(result.request.range[0]), float(result.request.range[1]))
        else:  # percentiles over every pixel: only where no rule above sets the range
            levels = auto_levels(shown)
        title = f"{depth.engine} {depth.mode.value} · disparity in px{_depth_span(result, levels)}"
        if depth.choice.get("quantized") and result.request.mode is not depth.mode:
            # the budget answered another mode than the one chosen: said first (it read "bi3d
            # quantized" under Mode: continuous, with nothing saying why: review)
            # the planes, as the budget's label under the slider counts them (this said "1 quantized
            # level" beside "chose 1 quantized plane"); what continuous needs is said there, not
            # here (the title was cut at 1366 px: review)
            planes_text = plural(len(depth.planes), "quantized plane")
            title = f"budget {depth.choice.get('budget_ms', 0):g} ms: {planes_text} · {title}"
        state = depth.range_state
        if not answered and state is not None and state.size and not (state == 0).any():
            # the range holds nothing of the scene: lowering Min confidence would not help (review)
            lo, hi = result.request.range or (0.0, 0.0)
            side = "nearer" if (state == 1).sum() > (state == -1).sum() else "farther"
            # no legend: one grey (it pushed "is farther (move the range)" out of a 1366 px title: re-check)
            title = (
                f"{depth.engine} {depth.mode.value} · nothing lies in {lo:g}-{hi:g} px: the scene is {side} "
                "(move the range)"
            )
        elif not answered:  # the colour bar's 0-1 and its depths would read as an answer
            title = f"{depth.engine} {depth.mode.value} · no pixel kept an answer" + (
                ": the pair has no texture (flat)"  # lowering the threshold would not help
                if any(note.startswith(FLAT_NOTE) for note in depth.notes)
                else f" (Min confidence {result.request.min_confidence:.2f}: lower it)"
                if result.request.min_confidence > 0
                else ""
            )
        elif depth.range_state is not None:  # one grey for both sides read alike (review)
            unknown = "purple" if spec.colormap == "gray" else "dark"
            title += f" · grey: light nearer, mid farther than the range, {unknown} unknown"
        elif not np.isfinite(shown).all():  # the grey has no place on the colour bar: say what it is
            title += " · purple: unknown" if spec.colormap == "gray" else " · grey: unknown"
        tint = depth.range_state == 1 if depth.range_state is not None else None
    if Session.unrectified_note(result) is not None:  # the error said so, the pane did not (review)
        title = f"{UNRECTIFIED_TITLE} · {title}"
    rgb = _outside_greys(_unknown_grey(colorize(shown, *levels, spec.colormap), shown, spec.colormap), depth)
    out = Rendered(spec, rgb, levels, title, tint, answered=answered)
    if result.baseline is not None:
        base = result.baseline
        binary = base.mode is Mode.BINARY
        shown_base = base.probabilities[0] if binary else base.disparity
        out.baseline_rgb = _outside_greys(
            _unknown_grey(
                colorize(shown_base, *((0.0, 1.0) if binary else levels), spec.colormap),
                shown_base,
                spec.colormap,
            ),
            base,
        )
    if depth.mode is not Mode.BINARY:
        out.histogram = Session.histogram(result)  # a percentile over every pixel: not on the GUI thread
    for truth in Session.truth_errors(result):
        rgb = _unknown_grey(colorize(truth.error, 0.0, ERROR_MAX_PX, "magma"), truth.error)
        # the figures first (a narrow pane cuts the title's end); dense: an unknown pixel counts
        # as wrong, so masking more by confidence raises bad-2, and the title says why
        if truth.side is not None and truth.mode is Mode.BINARY:
            title = (
                f"{truth.engine}: {100 * truth.side:.1f} % on the right side of {truth.what} · bright: "
                "the wrong side · a pixel without an answer counts as wrong"
            )
        elif truth.side is not None and truth.mode is Mode.QUANTIZED:
            title = (  # short: a second line cut in its middle left a ")" without its "(" (re-check)
                f"{truth.engine}: {100 * truth.side:.1f} % in the right level of {truth.what} · "
                f"truth outside its level 0-{ERROR_MAX_PX:g} px · levels' bad-2 {100 * truth.bad2:.1f} %"
            )
        elif truth.side is not None:
            inside = (
                f"inside bad-2 {100 * truth.bad2:.1f} %, EPE {truth.epe:.2f} px"
                if np.isfinite(truth.bad2)
                else "no truth inside"
            )
            title = (  # the figures first, parts a line may break between (the EPE was cut at 1366 px)
                f"{truth.engine}: {100 * truth.side:.1f} % right side of {truth.what} · {inside} · "
                f"|d - truth| 0-{ERROR_MAX_PX:g} px, bright: the wrong side"
            )
        else:
            title = (
                f"{truth.engine}: bad-2 {100 * truth.bad2:.1f} %, EPE {truth.epe:.2f} px · |d - truth| "
                f"0-{ERROR_MAX_PX:g} px · a pixel without an answer counts as wrong"
            )
        out.errors.append((title, rgb, depth.mode is not Mode.BINARY))
    if result.flow is not None:
        flow = np.asarray(result.flow)
        if spec.flow_view == "arrows":
            step = max(16, min(flow.shape[:2]) // 12)  # about 12 arrows across the short side: visible
            out.flow_rgb = Display.flow_arrows(result.pair.left, flow, step, spec.flow_max)
            out.flow_scale = Display.flow_scale(flow, spec.flow_max)  # the longest arrow's flow (title)
            out.flow_arrows = True
        else:
            # the pane shows the frame shrunk: the legend's figure shrinks with it, so the title says it
            out.flow_rgb = Display.flow_color(flow, spec.flow_max, max(80, flow.shape[0] // 2))
            out.flow_scale = Display.flow_scale(flow, spec.flow_max)
    return out
