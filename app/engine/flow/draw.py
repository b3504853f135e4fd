"""Pictures of optical flow as RGB uint8 images (no Qt): the Middlebury colour coding with a
legend wheel and its magnitude scale, and arrows on a regular grid over a frame.

Flow is float32 H x W x 2 (u, v) pixels; NaN or infinite vectors are unknown and drawn black.
``max_magnitude`` is the user's clamp: vectors at least that long get full saturation (colour)
or full arrow length (arrows); None uses the 99th percentile of the known vectors' lengths (the
longest one let a few stray vectors at an edge wash a whole frame's colours out: review).
"""

from __future__ import annotations

import functools

import cv2
import numpy as np

# Baker et al., "A Database and Evaluation Methodology for Optical Flow" (Middlebury): colour
# wheel segments red-yellow, yellow-green, green-cyan, cyan-blue, blue-magenta, magenta-red.
_SEGMENTS = (15, 6, 4, 11, 13, 6)
_TEXT = (40, 40, 40)
_PANEL = (255, 255, 255)


@functools.cache
def _wheel() -> np.ndarray:
    """55 x 3 float64 RGB in [0, 1]: one channel ramps while the next stays full."""
    rows = []
    for i, n in enumerate(_SEGMENTS):
        ramp = np.floor(255 * np.arange(n) / n) / 255
        seg = np.zeros((n, 3))
        # even segments raise the next channel, odd ones lower the previous: R, Y, G, C, B, M
        if i % 2 == 0:
            full, moving = i // 2, (i // 2 + 1) % 3
            seg[:, full], seg[:, moving] = 1.0, ramp
        else:
            full, moving = (i // 2 + 1) % 3, i // 2
            seg[:, full], seg[:, moving] = 1.0, 1.0 - ramp
        rows.append(seg)
    return np.concatenate(rows)


def _magnitude(flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(flow, dtype=np.float32)
    if f.ndim != 3 or f.shape[2] != 2:
        raise ValueError(f"flow must be H x W x 2, got shape {f.shape}")
    known = np.asarray(np.isfinite(f).all(axis=2), dtype=bool)
    return np.where(known, np.hypot(f[..., 0], f[..., 1]), 0.0), known


SCALE_PERCENTILE = 99.0  # of the known vectors' lengths: the automatic scale (longer ones saturate)


def flow_scale(flow: np.ndarray, max_magnitude: float | None = None) -> float:
    """The magnitude (px) that gets full saturation: the clamp, else the 99th percentile of the
    known vectors' lengths (the longest, when that percentile is 0)."""
    if max_magnitude is not None:
        if not max_magnitude > 0:
            raise ValueError(f"max_magnitude must be positive, got {max_magnitude}")
        return float(max_magnitude)
    mag, known = _magnitude(flow)
    if not known.any():
        return 1.0
    lengths = mag[known]
    top = float(np.percentile(lengths, SCALE_PERCENTILE, method="lower"))
    top = top if top > 0 else float(lengths.max())
    return top if top > 0 else 1.0


def flow_to_color(flow: np.ndarray, max_magnitude: float | None = None) -> np.ndarray:
    """H x W x 2 flow -> H x W x 3 uint8 RGB: hue is direction, saturation is magnitude
    (white at rest, full colour at ``flow_scale``), black where unknown."""
    mag, known = _magnitude(flow)
    f = np.where(known[..., None], np.asarray(flow, np.float32), 0.0)
    rad = np.clip(mag / flow_scale(flow, max_magnitude), 0.0, 1.0)
    wheel = _wheel()
    n = len(wheel)
    position = (np.arctan2(-f[..., 1], -f[..., 0]) / np.pi + 1) / 2 * (n - 1)
    k0 = np.floor(position).astype(int)
    k1 = (k0 + 1) % n
    t = (position - k0)[..., None]
    col = (1 - t) * wheel[k0] + t * wheel[k1]
    col = 1 - rad[..., None] * (1 - col)
    rgb = np.rint(255 * col).astype(np.uint8)
    rgb[~known] = 0
    return rgb


def color_wheel(diameter: int) -> np.ndarray:
    """diameter x diameter RGB legend: the colour of every flow up to the scale, rim = scale."""
    r = (diameter - 1) / 2
    ys, xs = np.mgrid[0:diameter, 0:diameter].astype(np.float32)
    flow = np.stack([(xs - r) / r, (ys - r) / r], axis=2)
    rgb = flow_to_color(flow, 1.0)
    outside = np.hypot(flow[..., 0], flow[..., 1]) > 1.0
    rgb[outside] = _PANEL
    centre = (round(r), round(r))
    cv2.circle(rgb, centre, int(r), _TEXT, 1, cv2.LINE_AA)
    return rgb


def legend_panel(height: int, scale: float, width: int | None = None) -> np.ndarray:
    """A white panel with the colour wheel and the magnitude its rim stands for."""
    w = width or int(np.clip(height // 3, 80, 200))
    diameter = w - 16
    font = 0.35 + 0.1 * (w // 80)
    lines = ("rim =", f"{scale:.3g} px")
    line_h = int(22 * font) + 6
    h = max(height, diameter + 16 + line_h * len(lines) + 8)
    panel = np.full((h, w, 3), _PANEL, np.uint8)
    panel[8 : 8 + diameter, 8 : 8 + diameter] = color_wheel(diameter)
    for i, text in enumerate(lines):
        y = 8 + diameter + 8 + line_h * (i + 1) - 6
        thick = 2 if font >= 0.6 else 1  # a legend drawn large for a window stays legible when shrunk
        cv2.putText(panel, text, (8, y), cv2.FONT_HERSHEY_SIMPLEX, font, _TEXT, thick, cv2.LINE_AA)
    return panel


def flow_color_with_legend(
    flow: np.ndarray, max_magnitude: float | None = None, legend_width: int | None = None
) -> np.ndarray:
    """The colour coding with the legend panel to its right (what ``flow.png`` holds);
    ``legend_width`` px wide (default: a third of the height, 80 to 200 px)."""
    rgb = flow_to_color(flow, max_magnitude)
    panel = legend_panel(rgb.shape[0], flow_scale(flow, max_magnitude), legend_width)
    if panel.shape[0] > rgb.shape[0]:  # tiny frames: pad below rather than squash the legend
        rgb = np.pad(rgb, ((0, panel.shape[0] - rgb.shape[0]), (0, 0), (0, 0)))
    return np.concatenate([rgb, panel], axis=1)


def draw_flow_arrows(
    image: np.ndarray,
    flow: np.ndarray,
    step: int = 16,
    max_magnitude: float | None = None,
    scale: float | None = None,
    color: tuple[int, int, int] = (0, 255, 0),
) -> np.ndarray:
    """Arrows from the centre of every ``step`` x ``step`` cell of ``image`` (RGB uint8, or gray)
    along the flow there. Vectors are clamped to ``max_magnitude``; ``scale`` px per px of flow
    (None: the scale makes the longest allowed arrow 0.9 ``step``). Resting cells get a dot."""
    if step < 2:
        raise ValueError(f"arrow step must be at least 2 px, got {step}")
    mag, known = _magnitude(flow)
    if image.shape[:2] != mag.shape:
        raise ValueError(f"image {image.shape[:2]} and flow {mag.shape} differ in size")
    out = np.ascontiguousarray(image if image.ndim == 3 else np.repeat(image[..., None], 3, axis=2))
    out = out.copy()
    limit = flow_scale(flow, max_magnitude)
    px_per_px = 0.9 * step / limit if scale is None else scale
    f = np.asarray(flow, np.float32)
    for y in range(step // 2, mag.shape[0], step):
        for x in range(step // 2, mag.shape[1], step):
            if not known[y, x]:
                continue
            shrink = min(1.0, limit / mag[y, x]) if mag[y, x] > 0 else 0.0
            dx, dy = f[y, x] * shrink * px_per_px
            length = float(np.hypot(dx, dy))
            # each mark over a dark edge: green arrows were lost on a green scene (review)
            if length < 1.0:
                cv2.circle(out, (x, y), 2, _EDGE, -1, cv2.LINE_AA)
                cv2.circle(out, (x, y), 1, color, -1, cv2.LINE_AA)
                continue
            tip = (round(x + dx), round(y + dy))
            tip_length = min(0.4, 4.0 / length)
            cv2.arrowedLine(out, (x, y), tip, _EDGE, 3, cv2.LINE_AA, tipLength=tip_length)
            cv2.arrowedLine(out, (x, y), tip, color, 1, cv2.LINE_AA, tipLength=tip_length)
    return out


_EDGE = (0, 0, 0)  # the dark edge under every arrow and dot
