"""3D points from disparity and a calibration (pinhole camera, metres, the left camera's frame)."""

from __future__ import annotations

import numpy as np

from app.engine.errors import UserError
from app.engine.types import Calibration, FrameResult, Mode


def require_metric(result: FrameResult, what: str) -> None:
    """``UserError`` naming why ``what`` (a distance, a point cloud) cannot be had from ``result``:
    binary mode gives no depth, and metres need a calibration."""
    if result.depth.mode is Mode.BINARY:
        raise UserError(
            f"{what} needs depth, and binary mode only answers nearer or farther than its plane; "
            "choose the quantized, selective or continuous mode"
        )
    if result.calibration is None:
        raise UserError(f"{what} needs a calibration (focal length and baseline); load one first")


def point_cloud(
    disparity: np.ndarray,
    calibration: Calibration | None,
    colours: np.ndarray,
    keep: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """N x 3 points (x right, y down, z forward, metres) and their N x 3 uint8 colours.

    ``disparity`` is H x W pixels (NaN unknown), ``colours`` H x W x 3, ``keep`` an optional
    H x W mask of pixels to use (a confidence mask). Pixels without a finite depth are left out.
    """
    if calibration is None:
        raise UserError("a point cloud needs a calibration (focal length and baseline); load one first")
    d = np.asarray(disparity, np.float32)
    h, w = d.shape
    if colours.shape[:2] != (h, w):
        raise ValueError(f"colours {colours.shape[:2]} do not match the disparity's {h} x {w}")
    z = calibration.depth_m(d)
    valid = np.isfinite(z) & (z > 0)
    if keep is not None:
        valid &= keep
    ys, xs = np.nonzero(valid)
    cal = calibration
    cx, cy = (cal.cx, cal.cy) if cal.cx or cal.cy else (w / 2, h / 2)
    zv = z[ys, xs]
    points = np.stack([(xs - cx) * zv / cal.focal_px, (ys - cy) * zv / cal.focal_px, zv], -1)
    return points.astype(np.float32), colours[ys, xs]
