"""What a user keeps of a frame: a snapshot folder and a point cloud file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.errors import UserError
from app.engine.formats import write_color_png, write_ply
from app.engine.outputs import calibration_json, write_result
from app.engine.pointcloud import point_cloud, require_metric
from app.engine.types import FrameResult, Mode, farthest_level, farthest_plane


def new_folder(root: Path, kind: str) -> Path:
    """``root/kind/YYYYmmdd-HHMMSS``, with ``_`` appended until it does not exist yet."""
    folder = root / kind / time.strftime("%Y%m%d-%H%M%S")
    while folder.exists():
        folder = folder.with_name(folder.name + "_")
    return folder


def write_snapshot(
    result: FrameResult,
    root: Path,
    source: str = "",
    view: dict[str, Any] | None = None,
    timed: bool = True,
    start_s: float | None = None,
) -> Path:
    """What is needed to show or redo a frame's answer, in a new folder: the depth (colour PNG,
    PFM, 16-bit PNG, result.npz; a binary or quantized answer's plane probabilities, which are
    that answer, not a continuous or selective one's), the pair as it was matched (``left.png``,
    ``right.png``, after rectification), SGBM's answer beside it when comparing (``sgbm/``), and
    ``result.json`` (request, calibration, timings, the source and the frame's time in it, ``view``: how the
    window showed it); ``timed`` False: the source's frames carry no times (``source_time_s`` null);
    ``start_s``: the time of the source's first frame, where it has one (a file's, a recording's):
    ``time_into_source_s`` is then the seek bar's seconds."""
    folder = new_folder(root, "snapshots")
    cal = result.calibration
    extra: dict[str, Any] = {
        # the frame's own (a source's, or the rig's rectified), once: not the request's over it
        "calibration": None
        if cal is None
        else calibration_json(cal, result.depth.disparity, farthest_plane(result.depth)),
        "stage_timings_ms": {k: round(v, 2) for k, v in result.timings.items()},
        "engine_reason": result.engine_reason,  # which weights made it, as depth's result.json says
        "source": source,
        # null where the source's frames carry no times (their numbers read as seconds: review)
        "source_time_s": round(float(result.pair.timestamp), 6) if timed else None,
        "time_into_source_s": (
            round(float(result.pair.timestamp) - start_s, 6) if timed and start_s is not None else None
        ),
        "answer_number": result.index,  # answers the window computed this session, this one's
        "files": {"left": "left.png", "right": "right.png", "sgbm": "sgbm/" if result.baseline else None},
    }
    # the depth as the window drew it (its colour map, colour range and greys): disparity_color.png
    # is coloured from 0 px with unknown pixels black, and did not match the screen it captured
    shown = getattr(result.display, "depth_rgb", None)
    # SGBM's answer as drawn beside it, on the same colour range: its disparity_color.png is
    # coloured from 0 px, orange where the window drew red (review)
    beside = getattr(result.display, "baseline_rgb", None) if result.baseline is not None else None
    if isinstance(beside, np.ndarray):
        extra["files"]["sgbm_shown"] = "sgbm/depth_shown.png"
    if isinstance(shown, np.ndarray):
        extra["files"]["shown"] = "depth_shown.png"
        levels = getattr(result.display, "depth_levels", None)
        if levels is not None:
            extra["files"]["shown_range_px"] = [round(float(v), 3) for v in levels]
    if view:
        extra["view"] = view
    # a dense answer's plane probabilities were 70 of a selective snapshot's 73.6 MB (review): its
    # disparity and confidence are the answer, and `depth` on left.png and right.png writes them
    dense = result.depth.mode in (Mode.CONTINUOUS, Mode.SELECTIVE)
    planes = len(result.depth.planes)
    if dense and planes:
        extra["probabilities"] = (
            f"left out ({planes} planes): `bi3d-studio depth left.png right.png` with this request "
            "writes them"
        )
    try:
        write_result(folder, result.depth, result.request, extra, probabilities=not dense)
        if isinstance(shown, np.ndarray):
            write_color_png(folder / "depth_shown.png", shown)
        write_color_png(folder / "left.png", result.pair.left)
        write_color_png(folder / "right.png", result.pair.right)
        if result.baseline is not None:
            write_result(folder / "sgbm", result.baseline, result.request, {"source": source})
            if isinstance(beside, np.ndarray):
                write_color_png(folder / "sgbm" / "depth_shown.png", beside)
    except OSError as exc:
        raise UserError(f"could not write the snapshot to {folder} ({exc.strerror})") from exc
    return folder


def frame_point_cloud(result: FrameResult) -> tuple[np.ndarray, np.ndarray]:
    """The frame's points and colours (``pointcloud.point_cloud`` on its disparity)."""
    require_metric(result, "a point cloud")
    depth = result.depth
    far = farthest_level(depth)
    # farther than the farthest plane reaches to infinity: its level's middle put a wall of points
    # at 5.37 m where the scene reached 4.8 m and beyond (review); left out
    keep = None if far is None else ~far
    return point_cloud(depth.disparity, result.calibration, result.pair.left, keep)


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
    comments: tuple[str, ...] = PLY_COMMENTS
    if result.depth.mode is Mode.QUANTIZED:
        comments = (
            *comments,
            "quantized: each depth is its level's middle; farther than the farthest plane left out",
        )
    try:
        write_ply(path, points, colours, comments)
    except OSError as exc:
        raise UserError(f"could not write the point cloud to {path} ({exc.strerror})") from exc
    return len(points)
