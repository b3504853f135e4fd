"""The hover readout: what the window says about the pixel under the mouse (no widgets)."""

from __future__ import annotations

import numpy as np

from app.engine.types import FrameResult, Mode


def readout(result: FrameResult, x: int, y: int) -> str:
    """'x, y, disparity, depth, probability' for the pixel under the mouse."""
    depth = result.depth
    parts = [f"x {x}  y {y}"]
    d = float(depth.disparity[y, x])
    if np.isfinite(d):
        parts.append(f"disparity {d:.2f} px")
        if result.calibration is not None:
            z = float(result.calibration.depth_m(np.array([d]))[0])
            parts.append(f"depth {z:.2f} m" if np.isfinite(z) else "depth ∞")
    elif depth.mode is not Mode.BINARY:
        parts.append("disparity unknown")
    if depth.mode is Mode.BINARY:
        parts.append(f"P(d > {depth.planes[0]:g} px) {float(depth.probabilities[0, y, x]):.2f}")
    if depth.range_state is not None and depth.range_state[y, x] != 0:
        parts.append("closer than the range" if depth.range_state[y, x] > 0 else "farther than the range")
    return "   ".join(parts)
