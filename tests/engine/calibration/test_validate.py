"""Range checks on load, and calibrations fitted to the frames' size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.engine.calibration.files import load_calibration, load_for_frames, write_opencv_yaml
from app.engine.calibration.rig import StereoRig
from app.engine.calibration.validate import fit_to_frames
from app.engine.errors import UserError
from tests.engine.calibration.test_chessboard import true_rig

DEMO = (
    "cam0=[994.978 0 311.193; 0 994.978 254.877; 0 0 1]\ndoffs=31.086\nbaseline={b}\nwidth={w}\nheight={h}\n"
)


def _middlebury(
    tmp_path: Path, b: str = "193.001", w: str = "741", h: str = "500", f: str = "994.978"
) -> Path:
    path = tmp_path / "calib.txt"
    path.write_text(DEMO.format(b=b, w=w, h=h).replace("[994.978", f"[{f}"))
    return path


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"b": "-193"}, "baseline 'baseline' is -193 mm: the right camera would be left of the left one"),
        ({"b": "0"}, "baseline 'baseline' is 0"),
        ({"f": "0"}, "focal length 'cam0' is 0"),
        ({"b": "nan"}, "field 'baseline' is nan"),
        ({"w": "-5"}, "field 'width' is '-5'"),
    ],
)
def test_bad_middlebury_values_are_refused(tmp_path: Path, kwargs: dict[str, str], needle: str) -> None:
    path = _middlebury(tmp_path, **kwargs)
    with pytest.raises(UserError) as exc:
        load_calibration(path)
    message = str(exc.value)
    assert needle in message and str(path) in message and "\n" not in message


def test_size_mismatch_is_rescaled_or_refused(tmp_path: Path) -> None:
    path = _middlebury(tmp_path)
    cal, _, note = load_for_frames(path, None, (741, 500))
    assert note is None and cal.focal_px == pytest.approx(994.978)
    half, _, note = load_for_frames(path, None, (370, 250))  # 0.4993 and 0.5: one aspect ratio
    assert note is not None and "scaled its intrinsics" in note
    assert half.focal_px == pytest.approx(994.978 * 370 / 741) and half.baseline_m == cal.baseline_m
    with pytest.raises(UserError, match=r"is for 741x500 images but the frames are 640x480 \(another aspect"):
        load_for_frames(path, None, (640, 480))


def test_rig_rescaled_to_half_size_rectifies_alike(tmp_path: Path) -> None:
    rig = true_rig().with_rectification()
    cal, small, note = fit_to_frames(rig.rectified(), rig, rig.image_size, (320, 240), "rig.yaml")
    assert small is not None and note is not None and small.image_size == (320, 240)
    assert cal.focal_px == pytest.approx(rig.rectified().focal_px / 2)
    assert cal.baseline_m == pytest.approx(rig.rectified().baseline_m)
    # a point seen at (x, y) at full size is at ((x + 0.5) / 2 - 0.5, ...) at half size
    assert small.K1[0, 2] == pytest.approx((rig.K1[0, 2] + 0.5) / 2 - 0.5)


def test_swapped_rig_is_explained(tmp_path: Path) -> None:
    r = true_rig()
    swapped = StereoRig(r.image_size, r.K1, r.D1, r.K2, r.D2, r.R, -r.T)
    path = tmp_path / "swapped.yaml"
    write_opencv_yaml(path, swapped)
    with pytest.raises(UserError, match="puts the right camera left of the left one"):
        load_calibration(path)
    zero_focal = StereoRig(r.image_size, np.diag([0.0, 700.0, 1.0]), r.D1, r.K2, r.D2, r.R, r.T)
    write_opencv_yaml(path, _with_good_rectification(zero_focal))
    with pytest.raises(UserError, match="field 'M1' has focal lengths 0"):
        load_calibration(path)


def _with_good_rectification(rig: StereoRig) -> StereoRig:
    """``rig`` with the true rig's rectification (stereoRectify would fail on it), to write it."""
    good = true_rig().with_rectification()
    return StereoRig(
        rig.image_size, rig.K1, rig.D1, rig.K2, rig.D2, rig.R, rig.T, good.R1, good.R2, good.P1, good.P2
    )


def test_stereodemo_checks(tmp_path: Path) -> None:
    import json

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"fx": 994.0, "cx0": 621.0, "cy": 187.5, "baseline_meters": 0.0}))
    with pytest.raises(UserError, match="baseline 'baseline_meters' is 0"):
        load_calibration(path)
