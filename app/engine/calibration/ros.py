"""ROS ``camera_info``: calibration files (camera_calibration's YAML) and message dumps
(``rostopic echo`` / ``ros2 topic echo``), read with PyYAML's ``safe_load``.

Calibration files nest matrices as ``{rows, cols, data}`` under ``camera_matrix``,
``distortion_coefficients``, ``rectification_matrix`` and ``projection_matrix``; messages
carry flat lists ``K D R P`` (ROS 1) or ``k d r p`` (ROS 2) and ``width``/``height``, and
may hold several documents separated by ``---`` (the first one is read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from app.engine.calibration.rig import StereoRig, calibration_from_projections
from app.engine.calibration.validate import check_values
from app.engine.errors import UserError
from app.engine.types import Calibration

FIELDS = {  # ours -> calibration-file key, then ROS 1 and ROS 2 message keys
    "K": ("camera_matrix", "K", "k"),
    "D": ("distortion_coefficients", "D", "d"),
    "R": ("rectification_matrix", "R", "r"),
    "P": ("projection_matrix", "P", "p"),
}
SHAPES = {"K": (3, 3), "R": (3, 3), "P": (3, 4)}
_OPENCV_KEYS = {"M1", "K1", "M2", "K2"}


def read_yaml(path: Path) -> dict[str, Any] | None:
    """The first YAML document of ``path`` as a mapping, or None when it is not plain YAML
    (OpenCV's ``%YAML:1.0`` files with ``!!opencv-matrix`` tags are not)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not a text file"
        raise UserError(f"cannot read calibration {path}: {why}; check the path") from exc
    if text.lstrip().startswith("%YAML:"):  # OpenCV's own directive
        return None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return None
    return docs[0] if docs and isinstance(docs[0], dict) else None


def is_camera_info(data: dict[str, Any] | None) -> bool:
    """Whether a parsed YAML mapping is a camera_info rather than an OpenCV stereo file."""
    if data is None:
        return False
    keys = set(data)
    return bool(keys & {"camera_matrix", "projection_matrix", "K", "k", "P", "p"}) and not keys & _OPENCV_KEYS


def _matrix(data: dict[str, Any], name: str, path: Path) -> np.ndarray | None:
    for key in FIELDS[name]:
        if key not in data:
            continue
        value = data[key]
        if isinstance(value, dict):  # {rows, cols, data}
            value = value.get("data")
        if not isinstance(value, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            raise UserError(f"{path}: field {key!r} is malformed (expected a list of numbers); fix the file")
        a = np.asarray(value, np.float64)
        if not a.size:
            return None
        shape = SHAPES.get(name, (1, a.size))
        if a.size != shape[0] * shape[1]:
            raise UserError(f"{path}: field {key!r} must be {shape[0]}x{shape[1]} numbers, got {a.size}")
        if not np.all(np.isfinite(a)):
            raise UserError(f"{path}: field {key!r} has a non-finite number; fix the file")
        return a.reshape(shape)
    return None


def camera_info(path: Path) -> tuple[dict[str, np.ndarray], tuple[int, int] | None]:
    """One camera_info: K 3x3, D 1xN, R 3x3, P 3x4 (those present) and (width, height) or None."""
    data = read_yaml(path)
    if not is_camera_info(data):
        raise UserError(f"{path} is not a ROS camera_info YAML (no camera_matrix or K/P); check the file")
    assert data is not None
    info: dict[str, np.ndarray] = {}
    for name, keys in FIELDS.items():
        value = _matrix(data, name, path)
        if value is None and name in ("K", "P"):
            raise UserError(f"{path}: camera_info has no field {keys[0]!r} ({keys[1]}); check the file")
        if value is not None:
            info[name] = value
    size = None
    for wkey, hkey in (("image_width", "image_height"), ("width", "height")):
        w, h = data.get(wkey), data.get(hkey)
        if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0:
            size = (w, h)
            break
    return info, size


def read_ros_camera_info_pair(left: str | Path, right: str | Path) -> tuple[Calibration, StereoRig | None]:
    """Left and right ROS camera_info files of a stereo pair -> (geometry, raw rig or None).

    The projection matrices describe the rectified pair: B = -P_right[0,3] / P_right[0,0].
    The raw rig comes back when both files carry image sizes and proper rectification
    rotations R: then R_rig = R_right^T R_left and T = R_right^T t, t the rectified offset.
    """
    (li, lsize), (ri, rsize) = camera_info(Path(left)), camera_info(Path(right))
    if ri["P"][0, 3] == 0:
        raise UserError(
            f"{right}: P[0,3] is 0, so it gives no baseline; give the right camera's camera_info second"
        )
    if lsize and rsize and lsize != rsize:
        raise UserError(
            f"camera_info sizes differ: {left} is {lsize[0]}x{lsize[1]}, {right} {rsize[0]}x{rsize[1]}"
        )
    calibration = check_values(
        calibration_from_projections(li["P"], ri["P"]), f"{right}", "P[0,0]", "baseline (-P[0,3] / P[0,0])"
    )
    r1, r2 = li.get("R", np.eye(3)), ri.get("R", np.eye(3))
    proper = all(np.allclose(r @ r.T, np.eye(3), atol=1e-4) and np.linalg.det(r) > 0 for r in (r1, r2))
    if lsize is None or not proper:
        return calibration, None
    p2 = ri["P"]
    t_rect = np.array([p2[0, 3] / p2[0, 0], p2[1, 3] / p2[1, 1], p2[2, 3]])
    zeros = np.zeros((1, 5))
    rig = StereoRig(
        lsize, li["K"], li.get("D", zeros), ri["K"], ri.get("D", zeros), r2.T @ r1, r2.T @ t_rect,
        r1, r2, li["P"], p2,
    )  # fmt: skip
    return calibration, rig
