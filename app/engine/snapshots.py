"""What a user keeps of a frame: a snapshot folder and a point cloud file."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.errors import UserError
from app.engine.formats import write_ply
from app.engine.outputs import write_result
from app.engine.pointcloud import point_cloud
from app.engine.types import FrameResult


def new_folder(root: Path, kind: str) -> Path:
    """``root/kind/YYYYmmdd-HHMMSS``, with ``_`` appended until it does not exist yet."""
    folder = root / kind / time.strftime("%Y%m%d-%H%M%S")
    while folder.exists():
        folder = folder.with_name(folder.name + "_")
    return folder


def write_snapshot(result: FrameResult, root: Path) -> Path:
    """Colour PNG, PFM, 16-bit PNG and JSON (request, calibration, timings) in a new folder."""
    folder = new_folder(root, "snapshots")
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


def frame_point_cloud(result: FrameResult) -> tuple[np.ndarray, np.ndarray]:
    """The frame's points and colours (``pointcloud.point_cloud`` on its disparity)."""
    return point_cloud(result.depth.disparity, result.calibration, result.pair.left)


PLY_COMMENTS = (
    "units: metres",
    "frame: the left camera's (OpenCV): x right, y down, z forward along its axis",
    "written by Bi3D Studio: every pixel with a known depth",
)


def export_point_cloud(result: FrameResult, path: Path) -> int:
    """The frame's points as a binary PLY at ``path``; how many were written."""
    points, colours = frame_point_cloud(result)
    if len(points) == 0:
        raise UserError("no pixel has a known depth in this frame; nothing to export")
    try:
        write_ply(path, points, colours, PLY_COMMENTS)
    except OSError as exc:
        raise UserError(f"could not write the point cloud to {path} ({exc.strerror})") from exc
    return len(points)
