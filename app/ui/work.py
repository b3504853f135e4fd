"""What the window does with results: readouts, snapshots, point clouds, recording, flow.

Plain functions (no widgets) so they are easy to test and reuse.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.assets import demo_scene
from app.engine.errors import UserError
from app.engine.formats import write_ply
from app.engine.outputs import request_json, write_result
from app.engine.session import FrameResult, Session
from app.engine.types import Mode

SNAPSHOT_ROOT = Path.home() / "Bi3D Studio"


def demo_pair_spec() -> str:
    """The bundled Middlebury scene: a folder, so its calibration and ground truth come along."""
    return str(demo_scene())


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


def snapshot(result: FrameResult, root: Path = SNAPSHOT_ROOT) -> Path:
    """Colour PNG, PFM, 16-bit PNG and JSON (request, calibration, timings) in a new folder."""
    folder = root / "snapshots" / time.strftime("%Y%m%d-%H%M%S")
    while folder.exists():
        folder = folder.with_name(folder.name + "_")
    cal = result.calibration
    extra: dict[str, Any] = {
        "calibration": None if cal is None else dataclasses.asdict(cal),
        "stage_timings_ms": {k: round(v, 2) for k, v in result.timings.items()},
        "frame": result.index,
    }
    try:
        write_result(folder, result.depth, result.request, extra)
    except OSError as exc:
        raise UserError(f"could not write the snapshot to {folder} ({exc.strerror})") from exc
    return folder


def point_cloud(result: FrameResult) -> tuple[np.ndarray, np.ndarray]:
    """N x 3 points (metres, camera frame) and N x 3 colours from disparity and calibration."""
    cal = result.calibration
    if cal is None:
        raise UserError("a point cloud needs a calibration (focal length and baseline)")
    d = result.depth.disparity
    h, w = d.shape
    z = cal.depth_m(d)
    ys, xs = np.mgrid[0:h, 0:w]
    valid = np.isfinite(z)
    cx, cy = (cal.cx, cal.cy) if cal.cx or cal.cy else (w / 2, h / 2)
    pts = np.stack([(xs - cx) * z / cal.focal_px, (ys - cy) * z / cal.focal_px, z], -1)[valid]
    return pts.astype(np.float32), result.pair.left[valid]


def export_ply(result: FrameResult, path: Path) -> int:
    points, colours = point_cloud(result)
    if len(points) == 0:
        raise UserError("no pixel has a known depth in this frame; nothing to export")
    write_ply(path, points, colours)
    return len(points)


def start_recording(session: Session, root: Path = SNAPSHOT_ROOT) -> Any:
    from app.engine.sources.recording import Recorder

    folder = root / "recordings" / time.strftime("%Y%m%d-%H%M%S")
    return Recorder(folder, session.calibration)


def make_flow(name: str, options: Any = None) -> tuple[Any, str]:
    """A flow backend for the session (None when off) and a status line for the UI."""
    if name == "off":
        return None, ""
    from app.engine.flow.choose import create_flow

    try:
        backend = create_flow(name, options)
    except UserError as exc:
        return None, str(exc)
    return backend, getattr(backend, "status", backend.name)


def draw_flow(flow: np.ndarray, left: np.ndarray) -> np.ndarray:
    from app.engine.flow.draw import flow_to_color

    return flow_to_color(flow)


def request_summary(result: FrameResult) -> str:
    return json.dumps(request_json(result.request))
