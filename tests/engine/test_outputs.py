"""The output set moves in whole: the old set stays on any failure, stale members go."""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from app.engine import outputs
from app.engine.types import Calibration, DepthRequest, DepthResult, Mode


def _result(mode: Mode, value: float) -> tuple[DepthResult, DepthRequest]:
    disparity = np.full((6, 8), value, np.float32)
    probs = np.full((1, 6, 8), 0.7, np.float32)
    mask = probs[0] > 0.5 if mode is Mode.BINARY else None
    result = DepthResult(disparity, probs, np.array([4.0], np.float32), mode, "sgbm", mask=mask)
    request = DepthRequest(mode=mode, planes=(4.0,)) if mode is not Mode.CONTINUOUS else DepthRequest()
    return result, request


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_new_folder_appears_whole_and_a_later_set_replaces_every_member(tmp_path: Path) -> None:
    out = tmp_path / "out"
    written = outputs.write_result(out, *_result(Mode.BINARY, 3.0), {})
    binary_set = {"result.npz", "mask.png", "result.json"}  # no all-black pictures of a NaN disparity
    assert {p.name for p in written} == binary_set == {p.name for p in out.iterdir()}
    outputs.write_result(out, *_result(Mode.CONTINUOUS, 5.0), {})
    assert not (out / "mask.png").exists()  # the binary run's mask is not left beside the new set
    continuous = set(outputs.OUTPUT_NAMES) - {"mask.png", outputs.RECTIFIED_LEFT}  # no raw rig here
    assert sorted(p.name for p in out.iterdir()) == sorted(continuous)
    outputs.write_result(out, *_result(Mode.BINARY, 3.0), {})
    assert {p.name for p in out.iterdir()} == binary_set  # nor the continuous run's disparity beside a mask


def test_a_new_result_folder_gets_the_usual_folder_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        from app.engine.fileio import _umask

        _umask.cache_clear()
        outputs.write_result(tmp_path / "out", *_result(Mode.CONTINUOUS, 5.0), {})
        assert (tmp_path / "out").stat().st_mode & 0o777 == 0o755  # not mkdtemp's 0700
    finally:
        os.umask(old)
        _umask.cache_clear()


def test_a_shorter_many_frame_run_leaves_no_frames_of_the_longer_one(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for i in range(3):
        outputs.write_result(outputs.frame_folder(out, i), *_result(Mode.CONTINUOUS, float(i)), {})
    (out / "notes").mkdir()  # not a frame folder
    (out / "000009").mkdir()  # a frame folder's name, but no result set in it: not ours
    outputs.write_result(outputs.frame_folder(out, 0), *_result(Mode.CONTINUOUS, 7.0), {})
    (out / "000002" / "my_notes.txt").write_text("mine")  # the user's, beside a result set
    assert outputs.remove_stale_frames(out, 1) == 2
    assert sorted(p.name for p in out.iterdir()) == ["000000", "000002", "000009", "notes"]
    # only the set went: the user's file stays (the whole folder was deleted with it: review)
    assert [p.name for p in (out / "000002").iterdir()] == ["my_notes.txt"]
    assert outputs.remove_stale_frames(tmp_path / "missing", 0) == 0


def test_a_failure_while_writing_leaves_the_earlier_set_and_no_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    outputs.write_result(out, *_result(Mode.BINARY, 3.0), {})
    before = _files(out)

    def broken(path: object, image: object) -> None:
        raise RuntimeError("killed half-way")

    monkeypatch.setattr(outputs, "write_color_png", broken)
    with pytest.raises(RuntimeError):
        outputs.write_result(out, *_result(Mode.CONTINUOUS, 5.0), {})
    assert _files(out) == before


def test_staging_left_by_a_killed_run_is_removed_later(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    old = out / ".result.dead.tmp"
    old.mkdir()
    (old / "result.npz").write_bytes(b"half")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    fresh = out / ".result.live.tmp"  # another process may be writing this one now
    fresh.mkdir()
    outputs.write_result(out, *_result(Mode.CONTINUOUS, 5.0), {})
    assert not old.exists() and fresh.exists()


def test_result_npz_stores_large_arrays_as_they_are_and_compresses_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outputs, "STORED_BYTES", 300)  # the 2 x 6 x 8 probabilities are "large" here
    result, _ = _result(Mode.CONTINUOUS, 3.0)
    result.probabilities = np.random.default_rng(0).random((2, 6, 8)).astype(np.float32)
    data = outputs.npz_bytes(result.arrays())
    path = tmp_path / "result.npz"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as zf:
        kinds = {i.filename: i.compress_type for i in zf.infolist()}
    assert kinds["probabilities.npy"] == zipfile.ZIP_STORED
    assert kinds["disparity.npy"] == zipfile.ZIP_DEFLATED
    with np.load(path, allow_pickle=False) as back:
        for name, array in result.arrays().items():
            np.testing.assert_array_equal(back[name], array)
    assert outputs.npz_bytes(result.arrays()) == data  # the same arrays, the same bytes


def test_the_summary_says_when_nothing_was_answered_or_the_depth_is_unknown() -> None:
    def result(d: np.ndarray) -> DepthResult:
        return DepthResult(
            d, np.zeros((1, *d.shape), np.float32), np.array([4.0], np.float32), Mode.CONTINUOUS, "bi3d"
        )

    text = outputs.format_summary(result(np.full((4, 4), np.nan, np.float32)))
    assert "no pixel kept an answer (0% valid)" in text and "--min-confidence" in text
    sgbm = result(np.full((4, 4), np.nan, np.float32))
    sgbm.engine = "sgbm"  # rates nothing: --min-confidence is no advice there (review)
    assert "--min-confidence" not in outputs.format_summary(sgbm)
    assert "time (bi3d, " in text  # what ran, said on the terminal too (named by --runtime or not)
    # a selective range that nothing lies in is not a texture problem
    outside = result(np.full((4, 4), np.nan, np.float32))
    outside.mode, outside.range_state = Mode.SELECTIVE, np.full((4, 4), -1, np.int8)
    text = outputs.format_summary(outside)
    assert "no pixel lies inside the range" in text and "lacks texture" not in text
    outside.range_state[0, 0] = 0  # inside, but without an answer (masked): the texture line
    assert "lacks texture" in outputs.format_summary(outside)
    calibration = Calibration(focal_px=100.0, baseline_m=0.1, doffs=0.0)
    text = outputs.format_summary(result(np.zeros((4, 4), np.float32)), calibration)
    assert "median depth unknown" in text and "nan" not in text
    assert "median depth 2.50 m" in outputs.format_summary(
        result(np.full((4, 4), 4.0, np.float32)), calibration
    )


def test_the_summary_of_semi_global_matching_names_no_planes() -> None:
    d = np.full((4, 4), 20.0, np.float32)
    planes = np.arange(0, 87, 3, dtype=np.float32)  # the sweep grid a continuous request reports
    sgbm = DepthResult(d, np.zeros((0, 4, 4), np.float32), planes, Mode.CONTINUOUS, "sgbm")
    first = outputs.format_summary(sgbm).splitlines()[0]
    assert first == "mode continuous, every disparity from 0 to 84 px (semi-global matching)"
    bi3d = DepthResult(d, np.zeros((29, 4, 4), np.float32), planes, Mode.CONTINUOUS, "bi3d")
    assert outputs.format_summary(bi3d).startswith("mode continuous, planes: 29 every 3 from 0 to 84 px")
    uneven = DepthResult(d, np.zeros((9, 4, 4), np.float32), np.geomspace(2, 90, 9), Mode.QUANTIZED, "bi3d")
    assert outputs.format_summary(uneven).startswith("mode quantized, planes: 9 from 2 to 90 px")


def test_notes_name_settings_as_the_front_end_words_them() -> None:
    """A note naming a setting reached the command line and result.json with the engine's
    invisible markers around a bare name; each front end now words it."""
    from app.engine.errors import setting
    from app.vocabulary import cli_words

    result, _ = _result(Mode.CONTINUOUS, 5.0)
    result.notes = [f"set {setting('max_disparity')} above it"]
    assert "note: set --max-disparity above it" in outputs.format_summary(result, words=cli_words)
    assert "note: set max_disparity above it" in outputs.format_summary(result)
    assert outputs.summary(result)["notes"] == ["set max_disparity above it"]


def test_depth_figures_count_the_pixels_at_infinity() -> None:
    """Half a scene at 0 px: the printed median depth was "unknown", result.json's 190 m (the
    median of the other half alone)."""
    disparity = np.zeros((10, 10), np.float32)
    disparity[:4] = 24.0
    disparity[0, 0] = np.nan  # unknown: not counted
    stats = outputs.calibration_json(Calibration(300.0, 0.1), disparity)["depth_m"]
    assert stats["median"] is None and stats["p95"] is None and "infinitely far" in stats["null"]
    assert stats["p5"] == pytest.approx(300.0 * 0.1 / 24.0, abs=1e-4)
    disparity[:] = 10.0
    stats = outputs.calibration_json(Calibration(300.0, 0.1), disparity)["depth_m"]
    assert stats == {"median": 3.0, "p5": 3.0, "p95": 3.0}


def test_the_colour_picture_is_not_scaled_by_a_few_outliers(tmp_path: Path) -> None:
    """546 outlier pixels at 130 px set the top colour of a 0-74 px scene: every surface read blue,
    and nothing said what the colours stood for."""
    import json

    import cv2

    disparity = np.full((100, 100), 40.0, np.float32)
    disparity[0, :50] = 130.0  # 0.5 % outliers
    result = DepthResult(
        disparity, np.zeros((1, 100, 100), np.float32), np.array([4.0]), Mode.CONTINUOUS, "sgbm"
    )
    outputs.write_result(tmp_path, result, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=192), {})
    info = json.loads((tmp_path / "result.json").read_text())
    assert info["disparity_color_range_px"] == [0.0, 40.0]
    picture = cv2.imread(str(tmp_path / "disparity_color.png"))
    assert np.array_equal(picture[50, 50], picture[0, 0])  # the scene has the top colour; outliers too


def test_mask_png_tells_unknown_from_farther(tmp_path: Path) -> None:
    """SGBM's holes were black in mask.png, as "farther" is, and binary result.json read
    "valid_fraction": 0.0 (review)."""
    import cv2

    result, request = _result(Mode.BINARY, 3.0)
    result.probabilities[0, :2] = 0.2  # farther
    result.probabilities[0, 2:4] = np.nan  # no match
    result.mask = result.probabilities[0] > 0.5
    outputs.write_result(tmp_path / "out", result, request, {})
    mask = cv2.imread(str(tmp_path / "out" / "mask.png"), cv2.IMREAD_UNCHANGED)
    assert mask.ndim == 2 and mask.dtype == np.uint8
    assert (mask[:2] == 0).all() and (mask[2:4] == 128).all() and (mask[4:] == 255).all()
    info = outputs.summary(result)
    assert "valid_fraction" not in info and info["unknown_fraction"] == round(2 / 6, 4)
    assert "2 / 6" not in outputs.format_summary(result) and "33.3% unknown" in outputs.format_summary(result)


def test_planes_read_to_a_tenth_of_a_pixel() -> None:
    """Levels spaced in depth read "23.3064, 26.1818, ... 100.8 px" (review)."""
    from app.engine.outputs import _planes_text

    assert _planes_text(np.array([23.3064, 26.1818, 100.8, 48.0])) == "23.3, 26.2, 100.8, 48"
    assert _planes_text(np.arange(0, 30, 3.0)) == "10 every 3 from 0 to 27"


def test_a_quantized_answer_mostly_in_its_farthest_level_says_its_median_depth_has_no_end() -> None:
    """It printed "median depth 30.00 m" for the level "15 m or more" (code review)."""
    from tests.engine.fake_results import empty_result

    image = np.zeros((4, 4, 3), np.uint8)
    result = empty_result(image, "bi3d", Mode.QUANTIZED)
    result.planes = np.array([40.0, 60.0], np.float32)
    result.disparity[:] = 20.0  # the middle of 0-40 px
    result.probabilities = np.zeros((2, 4, 4), np.float32)
    cal = Calibration(focal_px=500.0, baseline_m=0.1)
    text = outputs.format_summary(result, cal, "m")
    assert "median depth beyond 1.25 m (the farthest level)" in text and "2.50 m" not in text


def test_frames_of_a_users_own_result_json_are_not_an_earlier_run_s(tmp_path: Path) -> None:
    """A frame folder holding a result.json of the user's (no request in it) was removed with its
    files as an earlier run's (review)."""
    out = tmp_path / "out"
    outputs.write_result(outputs.frame_folder(out, 0), *_result(Mode.CONTINUOUS, 1.0), {})
    mine = outputs.frame_folder(out, 9)
    mine.mkdir()
    (mine / "result.json").write_text('{"my": "notes"}')
    (mine / "disparity.png").write_bytes(b"mine")
    assert outputs.frame_results(out) == [outputs.frame_folder(out, 0)]
    assert outputs.remove_stale_frames(out, []) == 1
    assert sorted(p.name for p in mine.iterdir()) == ["disparity.png", "result.json"]
    with pytest.raises(outputs.UserError, match=r"its result\.json is not one"):
        outputs.refuse_foreign_frames(out, range(12))


def test_a_binary_result_npz_holds_its_mask_not_an_empty_disparity(tmp_path: Path) -> None:
    """A binary result.npz held an all-NaN disparity, an all-inside range state and an all-zero
    confidence, which read "nothing known" (review)."""
    result, request = _result(Mode.BINARY, 3.0)
    result.probabilities[0, 0, 0] = np.nan  # no match there
    outputs.write_result(tmp_path / "out", result, request, {})
    with np.load(tmp_path / "out" / "result.npz") as z:
        assert set(z.files) == {"mask", "probabilities", "planes"}
        mask = z["mask"]
    assert mask[0, 0] == outputs.MASK_UNKNOWN and (mask.ravel()[1:] == outputs.MASK_CLOSER).all()


def test_depth_in_baselines_is_named_so_in_result_npz(tmp_path: Path) -> None:
    """A self-rectified pair without a measured baseline: result.json said depth_baselines, the
    npz's "depth" read as metres (review)."""
    result, _ = _result(Mode.CONTINUOUS, 5.0)
    for known, name in ((True, "depth"), (False, "depth_baselines")):
        calibration = Calibration(focal_px=100.0, baseline_m=1.0, baseline_known=known)
        out = tmp_path / name
        outputs.write_result(out, result, DepthRequest(calibration=calibration), {})
        with np.load(out / "result.npz") as z:
            assert name in z.files and {"depth", "depth_baselines"} - {name} & set(z.files) == set()
            np.testing.assert_allclose(z[name], 20.0)


def test_answers_past_what_a_kitti_png_holds_are_unknown_there_and_said(tmp_path: Path) -> None:
    """disparity.png wrote every answer of 256 px or more as 255.996 px, unsaid (review)."""
    from app.engine.formats import read_kitti_png

    result, request = _result(Mode.CONTINUOUS, 300.0)
    result.disparity[0, :2] = (255.5, 10.0)
    assert outputs.beyond_kitti_notes(result) == [outputs.BEYOND_KITTI_NOTE]
    outputs.write_result(tmp_path / "out", result, request, {})
    assert outputs.BEYOND_KITTI_NOTE in json.loads((tmp_path / "out" / "result.json").read_text())["notes"]
    png = read_kitti_png(tmp_path / "out" / "disparity.png")
    assert png[0, 0] == pytest.approx(255.5, abs=1 / 256) and png[0, 1] == pytest.approx(10.0)
    assert np.isnan(png.ravel()[2:]).all()
    result.disparity[:] = 255.9
    assert outputs.beyond_kitti_notes(result) == []
