"""The hover readout: what the window says about the pixel under the mouse (no widgets)."""

from __future__ import annotations

import numpy as np

from app.engine.session import range_side
from app.engine.types import FrameResult, Mode
from app.engine.validation import tenth


def readout(result: FrameResult, x: int, y: int, baseline: bool = False) -> str:
    """'x, y, disparity, depth, probability' for the pixel under the mouse, from the main
    engine's answer or (``baseline``) from the SGBM answer beside it."""
    depth = result.baseline if baseline and result.baseline is not None else result.depth
    if not (0 <= y < depth.disparity.shape[0] and 0 <= x < depth.disparity.shape[1]):
        return ""
    parts = [f"x {x}  y {y}", f"{depth.engine}:"]
    d = float(depth.disparity[y, x])
    # continuous depth at the sweep's last plane is "that near or nearer", not a measurement (a
    # bike 51 px away read "32.00 px, 3.04 m" under a 32 px maximum)
    top = np.inf
    if depth.mode is Mode.CONTINUOUS and len(depth.planes):  # the grid's last plane may lie past
        reach = depth.searched[1] if depth.searched is not None else result.request.max_disparity
        top = min(float(depth.planes[-1]), float(reach))  # the maximum the answers are held to
    clipped = np.isfinite(d) and d >= top - 0.5
    if np.isfinite(d) and depth.mode is Mode.QUANTIZED and len(depth.planes):
        # a level is a span, not a measurement: "23.33 px, 3.53 m" read as exact where the truth
        # was 20.84 px (3.70 m), and the farthest level reaches to infinity (review)
        parts.extend(_level_words(d, depth.planes, result))
    elif np.isfinite(d):
        parts.append(f"disparity ≥ {top:g} px (the search's end)" if clipped else f"disparity {d:.2f} px")
        if result.calibration is not None:
            z = float(result.calibration.depth_m(np.array([top if clipped else d]))[0])
            unit = result.calibration.depth_unit
            parts.append(
                ("depth ≤ " if clipped else "depth ") + f"{z:.2f} {unit}" if np.isfinite(z) else "depth ∞"
            )
    outside = range_side(result, depth, x, y)
    if outside is not None:  # its side is the answer (it read "disparity unknown   closer ...")
        where, edge, edge_m = outside
        words = f"disparity {'above' if where == 'closer' else 'below'} {edge:g} px"
        if edge_m is not None and result.calibration is not None:
            words += f", {where} than {edge_m:.2f} {result.calibration.depth_unit}"
        parts.append(f"{where} than the range: {words}")
    elif not np.isfinite(d) and depth.mode is not Mode.BINARY:
        parts.append("disparity unknown")
    if depth.mode is Mode.BINARY:
        p = float(depth.probabilities[0, y, x])
        # SGBM's unanswered columns read "P(d > 30 px) nan" (review)
        parts.append(f"P(d > {depth.planes[0]:g} px) {p:.2f}" if np.isfinite(p) else "no answer here")
    return "   ".join(parts)


def _level_words(d: float, planes: np.ndarray, result: FrameResult) -> list[str]:
    """A quantized answer's level: the disparity span between its planes, and its depths."""
    edges = [float(p) for p in planes]
    below = [p for p in edges if p <= d]
    above = [p for p in edges if p > d]
    lo, hi = (below[-1] if below else None), (above[0] if above else None)
    if lo is None:
        assert hi is not None  # a quantized answer has planes
        words = [f"disparity below {tenth(hi)} px (the farthest level)"]
    elif hi is None:
        words = [f"disparity above {tenth(lo)} px (the nearest level)"]
    else:  # "46.6667-56 px" read raw (review)
        words = [f"disparity {tenth(lo)}-{tenth(hi)} px (a level)"]
    if result.calibration is not None:
        unit = result.calibration.depth_unit
        z = [
            float(result.calibration.depth_m(np.array([v], np.float32))[0]) if v is not None else None
            for v in (lo, hi)
        ]
        if lo is None and z[1] is not None:
            words.append(f"depth farther than {z[1]:.2f} {unit}")
        elif hi is None and z[0] is not None:
            words.append(f"depth nearer than {z[0]:.2f} {unit}")
        elif z[0] is not None and z[1] is not None:
            words.append(f"depth {z[1]:.2f}-{z[0]:.2f} {unit}")
    return words
