"""Kalibr camchain files read as the rig they describe, and what is not supported said so."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from app.engine.calibration.files import load_calibration, load_for_frames, write_opencv_yaml
from app.engine.calibration.rig import StereoRig
from app.engine.errors import UserError
from tests.engine.calibration.test_chessboard import true_rig


def camchain(rig: StereoRig) -> dict[str, Any]:
    """The rig as kalibr_calibrate_cameras writes it (cam0 left, cam1 right)."""

    def cam(k: np.ndarray, d: np.ndarray) -> dict[str, Any]:
        return {
            "camera_model": "pinhole",
            "intrinsics": [float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2])],
            "distortion_model": "radtan",
            "distortion_coeffs": [float(v) for v in d.ravel()[:4]],
            "resolution": list(rig.image_size),
            "rostopic": "/stereo/left/image_raw",
            "cam_overlaps": [1],
        }

    transform = np.eye(4)
    transform[:3, :3], transform[:3, 3] = rig.R, np.ravel(rig.T)
    right = cam(rig.K2, rig.D2) | {"T_cn_cnm1": transform.tolist()}
    return {"cam0": cam(rig.K1, rig.D1), "cam1": right}


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "camchain-stereo.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_camchain_reads_as_the_same_rig_in_opencv_yaml(tmp_path: Path) -> None:
    rig = true_rig()
    rig = StereoRig(
        rig.image_size, rig.K1, np.array([[0.05, -0.01, 0.001, 0.0005, 0.0]]), rig.K2, rig.D2, rig.R, rig.T
    )
    write_opencv_yaml(tmp_path / "rig.yaml", rig)
    want, _ = load_calibration(tmp_path / "rig.yaml")
    got, raw = load_calibration(_write(tmp_path, camchain(rig)))
    assert raw is not None and raw.image_size == rig.image_size
    np.testing.assert_allclose(raw.D1, rig.D1)
    for field in ("focal_px", "baseline_m", "cx", "cy", "doffs"):
        assert getattr(got, field) == pytest.approx(getattr(want, field), rel=1e-9, abs=1e-9)
    w, h = rig.image_size
    scaled, _, note = load_for_frames(_write(tmp_path, camchain(rig)), None, (w // 2, h // 2))
    assert (
        note is not None
        and "scaled" in note
        and scaled.focal_px == pytest.approx(want.focal_px / 2, rel=1e-3)
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda d: d["cam0"].update(distortion_model="equidistant"), "distortion model 'equidistant'"),
        (lambda d: d["cam1"].update(camera_model="omni"), "camera model 'omni'"),
        (lambda d: d.pop("cam1"), "without cam1"),
        (lambda d: d["cam0"].update(intrinsics=[500, 500, 320]), "'intrinsics' must be 4 numbers"),
        (lambda d: d["cam1"].update(resolution=[320, 240]), "one resolution"),
        (
            lambda d: d["cam1"].update(T_cn_cnm1=[[2, 0, 0, 0.1], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
            "not a rotation",
        ),
    ],
)
def test_what_a_camchain_cannot_give_is_one_line(tmp_path: Path, change: Any, needle: str) -> None:
    data = copy.deepcopy(camchain(true_rig()))
    change(data)
    with pytest.raises(UserError, match=needle):
        load_calibration(_write(tmp_path, data))
