"""Calibration files (OpenCV, ROS, Middlebury, stereodemo), the raw rig and rectification."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.calibration.files import load_calibration, read_middlebury_calib, write_opencv_yaml
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.errors import UserError

K1 = np.array([[800.0, 0, 640], [0, 800, 360], [0, 0, 1]])
K2 = np.array([[805.0, 0, 630], [0, 804, 365], [0, 0, 1]])
D1 = np.array([[-0.08, 0.02, 0.001, -0.0005, 0.0]])
D2 = np.array([[-0.07, 0.015, 0.0, 0.0008, 0.0]])
R = cv2.Rodrigues(np.array([0.01, -0.02, 0.005]))[0]
T = np.array([-0.1, 0.002, -0.001])


def rig() -> StereoRig:
    return StereoRig((1280, 720), K1, D1, K2, D2, R, T)


def _one_line(exc: pytest.ExceptionInfo[UserError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_rectified_geometry_of_a_rig() -> None:
    raw = rig()
    cal = raw.rectified()
    full = raw.with_rectification()
    assert full.P1 is not None and full.P2 is not None
    assert cal.baseline_m == pytest.approx(np.linalg.norm(T), rel=1e-6)  # rectified baseline = |T|
    assert cal.focal_px == full.P1[0, 0] and cal.doffs == pytest.approx(0.0)  # zero-disparity rectification
    # Q from the file's P1/P2 agrees with OpenCV's own
    mine = StereoRig(
        raw.image_size, K1, D1, K2, D2, R, T, full.R1, full.R2, full.P1, full.P2
    ).with_rectification()
    np.testing.assert_allclose(mine.Q, full.Q, atol=1e-9)


def test_opencv_yaml_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "stereo.yaml"
    write_opencv_yaml(path, rig())
    assert not list(tmp_path.glob(".*tmp"))  # written through a temporary file, then renamed
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)  # OpenCV itself reads what we wrote
    np.testing.assert_allclose(fs.getNode("M2").mat(), K2)
    assert int(fs.getNode("image_width").real()) == 1280
    cal, back = load_calibration(path)
    assert back is not None and back.image_size == (1280, 720)
    for name in ("K1", "D1", "K2", "D2", "R", "T", "R1", "R2", "P1", "P2", "Q"):
        np.testing.assert_allclose(getattr(back, name), getattr(rig().with_rectification(), name), atol=1e-12)
    assert cal == rig().rectified()


def _stereo_calib_sample(folder: Path) -> None:
    """intrinsics.yml and extrinsics.yml as OpenCV's stereo_calib sample writes them (no size)."""
    full = rig().with_rectification()
    files = {
        "intrinsics.yml": ("M1", "D1", "M2", "D2"),
        "extrinsics.yml": ("R", "T", "R1", "R2", "P1", "P2", "Q"),
    }
    for name, keys in files.items():
        fs = cv2.FileStorage(str(folder / name), cv2.FILE_STORAGE_WRITE)
        for key in keys:
            value = {"M1": full.K1, "M2": full.K2}.get(key, getattr(full, key, None))
            fs.write(key, value.reshape(3, 1) if key == "T" else value)
        fs.release()


def test_opencv_sample_pair_of_files(tmp_path: Path) -> None:
    _stereo_calib_sample(tmp_path)
    expected = rig().rectified()
    # no image size in the files: the rectified geometry still comes from P1/P2, without a rig
    cal, no_rig = load_calibration(tmp_path / "intrinsics.yml")
    assert no_rig is None and cal.baseline_m == pytest.approx(expected.baseline_m)
    cal, found = load_calibration(tmp_path / "extrinsics.yml", image_size=(1280, 720))
    assert found is not None and found.image_size == (1280, 720)
    np.testing.assert_allclose(found.K2, K2)
    assert cal.focal_px == pytest.approx(expected.focal_px)


def test_a_file_without_its_size_on_frames_of_another_size_is_said(tmp_path: Path) -> None:
    """OpenCV's sample writes no image size: a 1280x720 calibration on 2560x1440 frames was taken as
    made for them (every depth half as far as it is), in silence."""
    from app.engine.calibration.files import load_for_frames

    _stereo_calib_sample(tmp_path)
    _, found, note = load_for_frames(tmp_path / "intrinsics.yml", None, (1280, 720))
    assert found is not None and note is None  # its own size: nothing to say
    _, found, note = load_for_frames(tmp_path / "intrinsics.yml", None, (2560, 1440))
    assert found is not None and found.image_size == (2560, 1440)
    assert note is not None and "does not say its image size" in note
    assert "principal point (640, 360)" in note and "made for about 1281x721 images" in note
    write_opencv_yaml(tmp_path / "sized.yml", rig())  # a file with its size is rescaled, as before
    _, _, note = load_for_frames(tmp_path / "sized.yml", None, (2560, 1440))
    assert note is not None and "scaled its intrinsics by 2" in note


@pytest.mark.parametrize(
    ("drop", "corrupt", "needle"),
    [("T", None, "no field 'T'"), ("M1", None, "no field 'M1'"), (None, "M2", "field 'M2' has 5 values")],
)
def test_missing_or_malformed_opencv_field_is_named(
    tmp_path: Path, drop: str | None, corrupt: str | None, needle: str
) -> None:
    path = tmp_path / "stereo.yml"
    write_opencv_yaml(path, rig())
    lines = path.read_text().splitlines()
    if drop:  # remove the key and its matrix block
        i = lines.index(f"{drop}: !!opencv-matrix")
        lines = lines[:i] + lines[i + 5 :]
    if corrupt:
        i = lines.index(f"{corrupt}: !!opencv-matrix")
        lines[i + 4] = "   data: [ 1., 2., 3., 4., 5. ]"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError) as exc:
        load_calibration(path)
    assert needle in _one_line(exc)


def test_opencv_file_without_size_or_projections(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    for key, value in (("M1", K1), ("D1", D1), ("M2", K2), ("D2", D2), ("R", R), ("T", T.reshape(3, 1))):
        fs.write(key, value)
    fs.release()
    with pytest.raises(UserError) as exc:
        load_calibration(path)
    assert "image_width" in _one_line(exc)
    assert load_calibration(path, image_size=(1280, 720))[1] is not None


def _ros_yaml(k: np.ndarray, d: np.ndarray, r: np.ndarray, p: np.ndarray, name: str) -> str:
    def block(key: str, m: np.ndarray) -> str:
        rows, cols = m.shape
        return (
            f"{key}:\n  rows: {rows}\n  cols: {cols}\n  data: [{', '.join(f'{v:.17g}' for v in m.ravel())}]\n"
        )

    return (
        f"image_width: 1280\nimage_height: 720\ncamera_name: {name}\n"
        + block("camera_matrix", k)
        + "distortion_model: plumb_bob\n"
        + block("distortion_coefficients", d)
        + block("rectification_matrix", r)
        + block("projection_matrix", p)
    )


def test_ros_camera_info_pair(tmp_path: Path) -> None:
    full = rig().with_rectification()
    assert full.R1 is not None and full.R2 is not None and full.P1 is not None and full.P2 is not None
    left, right = tmp_path / "left.yaml", tmp_path / "right.yaml"
    left.write_text(_ros_yaml(K1, D1, full.R1, full.P1, "stereo/left"))
    right.write_text(_ros_yaml(K2, D2, full.R2, full.P2, "stereo/right"))
    cal, back = load_calibration(left, right)
    assert cal.baseline_m == pytest.approx(-full.P2[0, 3] / full.P2[0, 0])
    assert cal.baseline_m == pytest.approx(np.linalg.norm(T), rel=1e-6)
    # the raw rig comes back from R_left, R_right and P_right
    assert back is not None
    np.testing.assert_allclose(back.R, R, atol=1e-9)
    np.testing.assert_allclose(back.T, T, atol=1e-9)
    # the left file alone: its partner is found beside it, named alike
    assert load_calibration(left)[0].baseline_m == pytest.approx(cal.baseline_m)
    lonely = tmp_path / "cam0.yaml"
    lonely.write_text(left.read_text())
    with pytest.raises(UserError) as exc:
        load_calibration(lonely)
    assert "right camera" in _one_line(exc) and "--calib2" in _one_line(exc)
    # the right camera's file alone: named as such, not "give the right camera's file" (review)
    with pytest.raises(UserError) as exc:
        load_calibration(right)
    assert "is the right camera's ROS camera_info" in _one_line(exc)
    assert "give the left camera's file as --calib and this one as --calib2" in _one_line(exc)


def test_ros_message_dump(tmp_path: Path) -> None:
    """`rostopic echo` output: flat K/D/R/P lists, width/height, a trailing '---'."""

    def dump(p: np.ndarray) -> str:
        flat = lambda m: "[" + ", ".join(str(v) for v in np.ravel(m)) + "]"  # noqa: E731
        return (
            'header:\n  seq: 3\n  frame_id: "cam"\nheight: 480\nwidth: 640\ndistortion_model: "plumb_bob"\n'
            f"D: []\nK: {flat([[700, 0, 320], [0, 700, 240], [0, 0, 1]])}\nR: {flat(np.eye(3))}\n"
            f"P: {flat(p)}\nroi:\n  x_offset: 0\n  do_rectify: False\n---\n"
        )

    p1 = np.array([[700.0, 0, 320, 0], [0, 700, 240, 0], [0, 0, 1, 0]])
    p2 = p1.copy()
    p2[0, 3] = -700.0 * 0.12
    left, right = tmp_path / "l.yaml", tmp_path / "r.yaml"
    left.write_text(dump(p1))
    right.write_text(dump(p2))
    cal, back = load_calibration(left, right)
    assert cal.baseline_m == pytest.approx(0.12) and cal.focal_px == 700
    assert back is not None and back.image_size == (640, 480)
    with pytest.raises(UserError) as exc:
        load_calibration(right, left)  # swapped: the second file has no baseline
    assert "P[0,3]" in _one_line(exc)
    right.write_text(dump(p2).replace("K: [700", "K: [seven"))
    with pytest.raises(UserError) as exc:
        load_calibration(left, right)
    assert "field 'K' is malformed" in _one_line(exc)


def test_middlebury(demo_dir: Path, tmp_path: Path) -> None:
    cal, no_rig = load_calibration(demo_dir / "calib.txt")
    assert no_rig is None
    assert (cal.focal_px, cal.baseline_m, cal.doffs) == pytest.approx((994.978, 0.193001, 31.086))
    assert read_middlebury_calib(demo_dir / "calib.txt").ndisp == 68
    bad = tmp_path / "calib.txt"
    bad.write_text("cam0=[994.978 0 311.193; 0 994.978 254.877; 0 0 1]\ndoffs=31.086\n")
    with pytest.raises(UserError) as exc:
        load_calibration(bad)
    assert "'baseline'" in _one_line(exc)


def test_stereodemo_json(tmp_path: Path) -> None:
    path = tmp_path / "stereodemo_calibration.json"
    fields = {"width": 1242, "height": 375, "fx": 994.0, "fy": 994.0, "cx0": 621.0, "cx1": 640.0, "cy": 187.5}
    fields |= {
        "baseline_meters": 0.54,
        "depth_range": [1.0, 100.0],
        "left_image_rect_normalized": [0, 0, 1, 1],
    }
    path.write_text(json.dumps(fields))
    cal, no_rig = load_calibration(path)
    assert no_rig is None and (cal.focal_px, cal.baseline_m, cal.cx, cal.cy) == (994.0, 0.54, 621.0, 187.5)
    # stereodemo's depth: Z = B * fx / (d - (cx0 - cx1))
    assert cal.depth_m(np.array([20.0]))[0] == pytest.approx(0.54 * 994 / (20 - (621 - 640)), rel=1e-6)
    del fields["baseline_meters"]
    path.write_text(json.dumps(fields))
    with pytest.raises(UserError) as exc:
        load_calibration(path)
    assert "'baseline_meters'" in _one_line(exc)


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("c.yaml", b"foo: [1, 2\n  bar", "not a readable YAML"),
        ("c.yml", b"\x00\xff\xfe binary", "cannot read calibration"),
        ("c.json", b"{not json", "as JSON"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, content: bytes, needle: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UserError) as exc:
        load_calibration(path)
    assert needle in _one_line(exc)
    with pytest.raises(UserError, match="not found"):
        load_calibration(tmp_path / "missing.yaml")


def test_rectifier_checks_frame_size() -> None:
    frame = np.zeros((480, 640, 3), np.uint8)
    with pytest.raises(UserError) as exc:
        Rectifier(rig()).rectify(frame, frame)
    assert "calibration is for 1280x720 but frames are 640x480" in _one_line(exc)


def test_rectifier_makes_rows_agree() -> None:
    """A point seen by the raw rig lands on the same row in both rectified images."""
    raw = rig()
    point = np.array([[0.15, -0.08, 1.7]])
    pl = cv2.projectPoints(point, np.zeros(3), np.zeros(3), K1, D1)[0].ravel()
    pr = cv2.projectPoints(point, cv2.Rodrigues(R)[0], T, K2, D2)[0].ravel()
    images = []
    for p in (pl, pr):
        img = np.zeros((720, 1280, 3), np.uint8)
        cv2.circle(
            img, (round(p[0] * 16), round(p[1] * 16)), 6 * 16, (255, 255, 255), -1, cv2.LINE_AA, shift=4
        )
        images.append(img)
    left, right = Rectifier(raw).rectify(*images)
    rows = [np.average(np.arange(720), weights=im[:, :, 0].sum(axis=1).astype(float)) for im in (left, right)]
    assert abs(rows[0] - rows[1]) < 0.1
    cal = raw.rectified()
    disparity = np.average(np.arange(1280), weights=left[:, :, 0].sum(axis=0).astype(float)) - np.average(
        np.arange(1280), weights=right[:, :, 0].sum(axis=0).astype(float)
    )
    assert cal.depth_m(np.array([disparity]))[0] == pytest.approx(point[0, 2], rel=0.01)


def test_ros2_echo_with_several_messages(tmp_path: Path) -> None:
    """`ros2 topic echo` of two messages (lowercase keys): the first is read, and a bad list is named."""

    def message(p: np.ndarray, seq: int) -> str:
        flat = lambda m: "\n".join(f"- {v}" for v in np.ravel(m))  # noqa: E731  block lists
        return (
            f"header:\n  stamp:\n    sec: {seq}\n  frame_id: cam\nheight: 480\nwidth: 640\n"
            f"distortion_model: plumb_bob\nd: []\nk:\n{flat([[700, 0, 320], [0, 700, 240], [0, 0, 1]])}\n"
            f"r:\n{flat(np.eye(3))}\np:\n{flat(p)}\nbinning_x: 0\n---\n"
        )

    p1 = np.array([[700.0, 0, 320, 0], [0, 700, 240, 0], [0, 0, 1, 0]])
    p2 = p1.copy()
    p2[0, 3] = -700.0 * 0.12
    other = p2.copy()
    other[0, 3] = -700.0 * 0.5
    left, right = tmp_path / "l.yaml", tmp_path / "r.yaml"
    left.write_text(message(p1, 1) + message(p1, 2))
    right.write_text(message(p2, 1) + message(other, 2))
    cal, back = load_calibration(left, right)
    assert cal.baseline_m == pytest.approx(0.12) and back is not None and back.image_size == (640, 480)
    right.write_text(message(p2, 1).replace("- -84.0", "- minus"))
    with pytest.raises(UserError) as exc:
        load_calibration(left, right)
    assert "field 'p' is malformed" in _one_line(exc)


def test_an_unrelated_json_and_a_one_camera_file_are_named_for_what_they_are(tmp_path: Path) -> None:
    """They were told "stereodemo calibration has no field 'cx0'; add it" and "no field 'M1'"."""
    other = tmp_path / "settings.json"
    other.write_text(json.dumps({"name": "x", "version": 2}))
    with pytest.raises(UserError, match="is JSON but not a calibration this app reads"):
        load_calibration(other)
    mono = tmp_path / "left_camera.yaml"
    fs = cv2.FileStorage(str(mono), cv2.FILE_STORAGE_WRITE)
    fs.write("camera_matrix", np.eye(3))
    fs.write("distortion_coefficients", np.zeros((1, 5)))
    fs.release()
    with pytest.raises(UserError, match=r"one camera's calibration .* not a stereo rig's"):
        load_calibration(mono)


def _folder_error(folder: Path) -> str:
    with pytest.raises(UserError) as exc:
        load_calibration(folder)
    return _one_line(exc)


def test_a_folder_given_as_a_calibration_is_named_a_folder(tmp_path: Path) -> None:
    """``--calib FOLDER`` said "calibration file not found": the folder is there (review)."""
    msg = _folder_error(tmp_path)
    assert f"{tmp_path} is a folder, not a calibration file; give the calibration file (OpenCV YAML" in msg
    assert "not found" not in msg
    write_opencv_yaml(tmp_path / "stereo.yaml", rig())  # the file meant is named
    (tmp_path / "notes.txt").write_text("not a calibration")
    assert _folder_error(tmp_path).endswith(f"give the calibration file: {tmp_path / 'stereo.yaml'}")
    with pytest.raises(UserError, match="calibration file not found"):
        load_calibration(tmp_path / "missing.yaml")


def test_a_ros_baseline_in_millimetres_is_mended_in_the_ros_field_not_t(tmp_path: Path) -> None:
    """A camera_info pair has no T: "write T in metres" left its user looking for one (review)."""
    from app.engine.calibration.files import load_for_frames

    full = rig().with_rectification()
    assert full.R1 is not None and full.R2 is not None and full.P1 is not None and full.P2 is not None
    p2 = full.P2.copy()
    p2[0, 3] *= 1000  # -fx x baseline written with the baseline in millimetres
    left, right = tmp_path / "left.yaml", tmp_path / "right.yaml"
    left.write_text(_ros_yaml(K1, D1, full.R1, full.P1, "stereo/left"))
    right.write_text(_ros_yaml(K2, D2, full.R2, p2, "stereo/right"))
    _, _, note = load_for_frames(left, right, (1280, 720))
    assert note is not None and "write T" not in note and "T must" not in note
    assert "the right camera's projection_matrix P[0,3], -fx x baseline, must be in metres" in note
    assert "divide it by 1000 (0.1" in note


def test_a_placeholder_baseline_loads_as_unknown_also_rescaled(tmp_path: Path) -> None:
    """'calib rectify' without --baseline writes 1 m: every loader says the baseline is unknown."""
    from app.engine.calibration.files import load_for_frames

    path = tmp_path / "self.yaml"
    write_opencv_yaml(path, rig(), baseline_known=False)
    assert not load_calibration(path)[0].baseline_known
    assert not load_for_frames(path, None, (1280, 720))[0].baseline_known
    assert not load_for_frames(path, None, (640, 360))[0].baseline_known  # rescaled to the frames
    write_opencv_yaml(path, rig())
    assert load_for_frames(path, None, (640, 360))[0].baseline_known


def test_a_bad_ndisp_is_named_not_passed_over(demo_dir: Path, tmp_path: Path) -> None:
    """`ndisp=abc` was ignored unsaid (the search went to auto); `ndisp=5000` read "max disparity
    5008 px is outside [1, 1024] px", naming neither the file nor the field."""
    from app.engine.bench.evaluation import scene_max_disparity

    calib = tmp_path / "calib.txt"
    calib.write_text((demo_dir / "calib.txt").read_text().replace("ndisp=68", "ndisp=abc"))
    with pytest.raises(UserError, match=r"calib.txt: field 'ndisp' is 'abc'; it must be a positive number"):
        read_middlebury_calib(calib)
    with pytest.raises(
        UserError, match=r"scene s1: calib.txt's ndisp=5000 is beyond the 1024 px.*--max-disparity"
    ):
        scene_max_disparity(5000, None, "s1")
    assert scene_max_disparity(5000, 256, "s1") == (256, False)  # the user's range stands


def test_a_rig_file_whose_t_and_p2_disagree_is_said(tmp_path: Path) -> None:
    """T scaled or negated in a full rig file (R1..Q kept) gave the same depth, unsaid: P2 wins."""
    import dataclasses

    from app.engine.calibration.files import load_for_frames
    from tests.engine.calibration.test_chessboard import true_rig

    rig = true_rig().with_rectification()
    good = tmp_path / "good.yaml"
    write_opencv_yaml(good, rig)
    size = rig.image_size
    assert load_for_frames(good, None, size)[2] is None
    edited = tmp_path / "edited.yaml"
    write_opencv_yaml(edited, dataclasses.replace(rig, T=rig.T * 2))
    note = load_for_frames(edited, None, size)[2]
    assert note is not None and "its T gives a" in note and "depths follow P2" in note


def test_a_missing_or_disagreeing_doffs_is_said(demo_dir: Path, tmp_path: Path) -> None:
    """A calib.txt without its doffs line read doffs as 0: every depth of the demo ~1.8x too far,
    unsaid (review). It is cam1's cx - cam0's cx, which the file still says."""
    from app.engine.calibration.files import load_for_frames

    text = (demo_dir / "calib.txt").read_text()
    assert read_middlebury_calib(demo_dir / "calib.txt").note is None
    no_doffs = tmp_path / "a" / "calib.txt"
    no_doffs.parent.mkdir()
    no_doffs.write_text("\n".join(line for line in text.splitlines() if not line.startswith("doffs")))
    meta = read_middlebury_calib(no_doffs)
    assert meta.calibration.doffs == pytest.approx(342.279 - 311.193, abs=1e-3)
    assert meta.note is not None and "no doffs line: taken as cam1's cx - cam0's cx = 31.086 px" in meta.note
    wrong = tmp_path / "b" / "calib.txt"
    wrong.parent.mkdir()
    wrong.write_text(text.replace("doffs=31.086", "doffs=-31.086"))
    meta = read_middlebury_calib(wrong)
    assert meta.calibration.doffs == pytest.approx(-31.086) and "disagrees" in str(meta.note)
    _, _, note = load_for_frames(wrong, None, (741, 497))
    assert note is not None and "disagrees with its cameras' principal points" in note
    alone = tmp_path / "c" / "calib.txt"  # no cam1 to tell: 0 as before, unsaid
    alone.parent.mkdir()
    alone.write_text("cam0=[50 0 30; 0 50 20; 0 0 1]\nbaseline=100\n")
    assert read_middlebury_calib(alone).calibration.doffs == 0 and read_middlebury_calib(alone).note is None


def test_a_scene_calibration_without_a_size_far_off_the_frames_centre_is_said(
    demo_dir: Path, tmp_path: Path
) -> None:
    """The window used a size-less calib.txt of the full-size scene on half-size images unsaid;
    depth --calib said its principal point lay far off the centre (review)."""
    import cv2

    from app.engine.sources.files import image_pair_scene

    scene = tmp_path / "half"
    scene.mkdir()
    for name in ("im0.png", "im1.png"):
        image = cv2.imread(str(demo_dir / name))
        cv2.imwrite(str(scene / name), cv2.resize(image, (image.shape[1] // 2, image.shape[0] // 2)))
    text = (demo_dir / "calib.txt").read_text()
    (scene / "calib.txt").write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith(("width", "height")))
    )
    notes: list[str] = []
    image_pair_scene(scene / "im0.png", scene / "im1.png").load(notes)
    assert any("far from" in n for n in notes), notes


def test_the_extrinsics_half_alone_says_how_to_give_the_other(tmp_path: Path) -> None:
    """An extrinsics-only file said "OpenCV stereo files need M1 D1 M2 D2 R T" and not how to
    pair it with its intrinsics (review)."""
    import cv2

    path = tmp_path / "rig_extrinsics_only.yml"
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    fs.write("R", np.eye(3))
    fs.write("T", np.array([[-0.1], [0.0], [0.0]]))
    fs.release()
    with pytest.raises(UserError, match=r"no field 'M1'; this is the extrinsics half.*--calib2"):
        load_calibration(path)
