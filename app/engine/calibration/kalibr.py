"""Kalibr camchain files (``camchain-*.yaml``, what ``kalibr_calibrate_cameras`` writes), read
with PyYAML.

A camchain holds ``cam0``, ``cam1``, ... each with ``camera_model`` (``pinhole``),
``intrinsics`` ``[fu, fv, pu, pv]``, ``distortion_model`` and ``distortion_coeffs``,
``resolution`` ``[width, height]``, and from ``cam1`` on ``T_cn_cnm1``: the 4 x 4 transform that
takes points of the previous camera's frame to this camera's (metres). ``cam0`` and ``cam1`` are
taken as the left and right camera, so OpenCV's ``R``, ``T`` (left points to the right camera)
are ``T_cn_cnm1``'s rotation and translation. ``radtan`` distortion is OpenCV's ``k1 k2 p1 p2``;
``none`` none; ``equidistant`` (fisheye) and other camera models are refused with what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from app.engine.calibration.rig import StereoRig
from app.engine.errors import UserError


def is_kalibr(data: dict[str, Any] | None) -> bool:
    """Whether a parsed YAML mapping is a Kalibr camchain."""
    return (
        data is not None
        and isinstance(data.get("cam0"), dict)
        and {"intrinsics", "resolution"} <= set(data["cam0"])
    )


def _numbers(cam: dict[str, Any], key: str, count: int | None, where: str) -> np.ndarray:
    value = cam.get(key)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.zeros(0)
    if value is None or not np.all(np.isfinite(array)) or (count is not None and array.size != count):
        wanted = f"{count} numbers" if count is not None else "numbers"
        raise UserError(f"{where}: {key!r} must be {wanted}, got {value!r}; fix the file")
    return array


def _camera(data: dict[str, Any], name: str, path: Path) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    where = f"{path} ({name})"
    cam = data.get(name)
    if not isinstance(cam, dict):
        raise UserError(f"{path} is a Kalibr camchain without {name}; a stereo pair needs cam0 and cam1")
    model = cam.get("camera_model", "pinhole")
    if model != "pinhole":
        raise UserError(f"{where}: camera model {model!r} is not supported; calibrate with 'pinhole'")
    fu, fv, pu, pv = _numbers(cam, "intrinsics", 4, where)
    k = np.array([[fu, 0.0, pu], [0.0, fv, pv], [0.0, 0.0, 1.0]])
    distortion = cam.get("distortion_model", "radtan")
    if distortion == "radtan":
        d = np.zeros((1, 5))
        d[0, :4] = _numbers(cam, "distortion_coeffs", 4, where)
    elif distortion == "none":
        d = np.zeros((1, 5))
    else:
        raise UserError(
            f"{where}: distortion model {distortion!r} is not supported (radtan or none are); "
            "calibrate with pinhole-radtan, or rectify the images first"
        )
    w, h = _numbers(cam, "resolution", 2, where)
    if w < 1 or h < 1:
        raise UserError(f"{where}: resolution {[w, h]} must be positive; fix the file")
    return k, d, (int(w), int(h))


def read_kalibr(data: dict[str, Any], path: Path) -> StereoRig:
    """cam0 and cam1 of a camchain as a raw ``StereoRig`` (T in metres)."""
    k1, d1, size1 = _camera(data, "cam0", path)
    k2, d2, size2 = _camera(data, "cam1", path)
    if size1 != size2:
        raise UserError(
            f"{path}: cam0 is {size1[0]}x{size1[1]} and cam1 {size2[0]}x{size2[1]}; a stereo pair needs "
            "one resolution"
        )
    transform = _numbers(data["cam1"], "T_cn_cnm1", 16, f"{path} (cam1)").reshape(4, 4)
    rotation, translation = transform[:3, :3], transform[:3, 3]
    if not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-4) or np.linalg.det(rotation) <= 0:
        raise UserError(f"{path} (cam1): T_cn_cnm1's rotation is not a rotation; fix the file")
    return StereoRig(size1, k1, d1, k2, d2, rotation, translation)
