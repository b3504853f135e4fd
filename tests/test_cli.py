"""The command line: the depth contract, eval and bench, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from app.cli import main
from app.engine.bi3d.conformance import deterministic_state_dict
from app.engine.formats import read_kitti_png, read_pfm, write_pfm
from tests.cli_helpers import bad as _bad
from tests.cli_helpers import run


@pytest.fixture
def small_pair(tmp_path: Path, demo_dir: Path) -> tuple[Path, Path]:
    """A 200 x 300 crop of the demo pair, to keep SGBM and Bi3D quick."""
    paths = []
    for name in ("im0.png", "im1.png"):
        img = cv2.imread(str(demo_dir / name))[150:350, 300:600]
        path = tmp_path / name
        cv2.imwrite(str(path), img)
        paths.append(path)
    return paths[0], paths[1]


def test_depth_writes_the_contract_files(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    code, stdout, _ = run(
        capsys,
        "depth",
        str(small_pair[0]),
        str(small_pair[1]),
        "--engine",
        "sgbm",
        "--max-disparity",
        "64",
        "--out",
        str(out),
    )
    assert code == 0 and "engine: sgbm" in stdout
    with np.load(out / "result.npz") as z:
        # SGBM's probabilities over a range are 0 or 1 (disparity > plane): left out
        assert set(z.files) == {"disparity", "planes", "range_state", "confidence"}
        disparity = z["disparity"]
    assert disparity.shape == (200, 300)
    np.testing.assert_array_equal(read_pfm(out / "disparity.pfm"), disparity)
    png = read_kitti_png(out / "disparity.png")
    valid = np.isfinite(disparity) & (disparity > 0)
    np.testing.assert_allclose(png[valid], disparity[valid], atol=1 / 256)
    assert cv2.imread(str(out / "disparity_color.png")).shape == (200, 300, 3)
    meta = json.loads((out / "result.json").read_text())
    assert meta["engine"] == "sgbm" and meta["request"]["mode"] == "continuous"
    # as the summary says it: "65 every 3 from 0 to 192" read as a plane sweep (review)
    assert meta["planes_px"].startswith("every disparity from 0 to ") and "semi-global" in meta["planes_px"]
    assert meta["request"]["min_confidence"] == 0.1  # what left pixels unknown
    assert meta["inputs"] == {"left": str(small_pair[0].resolve()), "right": str(small_pair[1].resolve())}
    with np.load(out / "result.npz") as z:
        np.testing.assert_allclose(meta["planes"], z["planes"], atol=1e-4)  # numbers, not only text


def test_depth_defaults_to_sgbm_without_a_bundled_model(
    capsys, small_pair, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("app.engine.depth.engines.default_weights", lambda: None)
    code, stdout, _ = run(
        capsys,
        "depth",
        str(small_pair[0]),
        str(small_pair[1]),
        "--mode",
        "binary",
        "--planes",
        "30",
        "--max-disparity",
        "64",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 0 and "engine: sgbm (no bundled Bi3D model" in stdout
    assert (tmp_path / "o" / "mask.png").is_file()


def test_depth_with_published_checkpoint_reproduces_reference(  # type: ignore[no-untyped-def]
    capsys, tmp_path: Path, reference, key_specs
) -> None:
    paths = []
    for side in ("left", "right"):
        path = tmp_path / f"{side}.png"
        cv2.imwrite(str(path), cv2.cvtColor(reference[f"{side}_rgb_u8"], cv2.COLOR_RGB2BGR))
        paths.append(str(path))
    weights = tmp_path / "binary.pth.tar"
    torch.save({"state_dict": deterministic_state_dict(key_specs["binary"])}, weights)
    out = tmp_path / "q"
    code, stdout, _ = run(
        capsys,
        "depth",
        *paths,
        "--weights",
        str(weights),
        "--mode",
        "quantized",
        "--planes",
        "6,15,27",
        "--out",
        str(out),
    )
    assert code == 0 and "published format" in stdout
    with np.load(out / "result.npz") as z:
        np.testing.assert_allclose(z["probabilities"], reference["binary_3plane_refined"][0], atol=1e-4)
        np.testing.assert_array_equal(z["planes"], [6, 15, 27])


@pytest.mark.slow
def test_depth_continuous_published_checkpoint_disparity(  # type: ignore[no-untyped-def]
    capsys, tmp_path: Path, reference, key_specs
) -> None:
    paths = []
    for side in ("left", "right"):
        path = tmp_path / f"{side}.png"
        cv2.imwrite(str(path), cv2.cvtColor(reference[f"{side}_rgb_u8"], cv2.COLOR_RGB2BGR))
        paths.append(str(path))
    weights = tmp_path / "cont.pth.tar"
    torch.save({"state_dict": deterministic_state_dict(key_specs["continuous_2d"])}, weights)
    # the published continuous model always reads its whole trained range (auto has no effect);
    # --min-confidence 0 keeps every answer of the reference
    out = str(tmp_path / "c")
    code, _, _ = run(
        capsys, "depth", *paths, "--weights", str(weights), "--out", out, "--min-confidence", "0"
    )
    assert code == 0
    n = reference["cont2d_full_disp_normalized"][0, 0]
    expected = np.clip(n * 193 - 0.5, -0.5, 192.5)
    with np.load(tmp_path / "c" / "result.npz") as z:
        np.testing.assert_allclose(z["disparity"], expected, atol=193e-4)
        # planes every 3 px; those at multiples of 48 px are stored in the every-16-px reference
        seg = reference["cont2d_full_seg_every16"][0]
        np.testing.assert_allclose(z["probabilities"][::16], seg[::3], atol=1e-4)


def test_eval_on_demo_prints_dense_and_valid_only(capsys, demo_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, stdout, _ = run(
        capsys, "eval", str(demo_dir), "--engines", "sgbm", "--json", str(tmp_path / "e.json")
    )
    assert code == 0
    lines = [line for line in stdout.splitlines() if line.startswith("motorcycle/sgbm")]
    assert [line.split()[1] for line in lines] == ["dense", "valid-only"]
    assert "EPE: mean |d - truth| in px" in stdout and "--json holds fractions" in stdout  # the legend
    rows = json.loads((tmp_path / "e.json").read_text())
    dense, valid = rows[0]["dense"], rows[0]["valid_only"]
    # SGBM on Motorcycle: a usable baseline, and holes make the dense figures worse
    assert valid["bad2"] < 0.15 and dense["bad2"] >= valid["bad2"] and 0.6 < valid["density"] < 1.0
    # what ran and what it said, as the text gives them (the file had neither: review)
    assert rows[0]["runtime"] == "opencv" and rows[0]["precision"] == "fp32"
    assert all(f"note (motorcycle/sgbm): {n}" in stdout for n in rows[0]["notes"])


def test_eval_json_holds_the_means_and_the_scenes_left_out(capsys, demo_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    for name in ("a", "b", "c"):
        shutil.copytree(demo_dir, tmp_path / "mb" / name)
    (tmp_path / "mb" / "c" / "im1.png").write_bytes(b"damaged")
    out = tmp_path / "e.json"
    code, stdout, _ = run(capsys, "eval", str(tmp_path / "mb"), "--engines", "sgbm", "--json", str(out))
    assert code == 0 and "mean/sgbm" in stdout and "scene c left out" in stdout
    rows = json.loads(out.read_text())
    assert [r.get("scene") for r in rows] == ["a", "b", "mean", "c"]
    assert rows[2]["scenes"] == 2 and rows[2]["dense"]["bad2"] == rows[0]["dense"]["bad2"]
    assert "dense" not in rows[3] and "im1.png" in rows[3]["left_out"]  # the scene by its key (review)


def test_bench_writes_records(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "b.json"
    code, stdout, _ = run(
        capsys,
        "bench",
        "--modes",
        "binary,quantized",
        "--planes",
        "1,2",
        "--size",
        "192x288",
        "--max-disparity",
        "96",
        "--width",
        "0.25",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--json",
        str(path),
    )
    assert code == 0 and "x sgbm" in stdout
    records = json.loads(path.read_text())
    keys = {
        "engine",
        "mode",
        "planes",
        "height",
        "width",
        "device",
        "runtime",
        "precision",
        "median_ms",
        "p90_ms",
    }
    assert all(keys <= set(r) for r in records)
    assert {r["engine"] for r in records} == {"bi3d", "sgbm"}
    assert sorted(r["planes"] for r in records if r["engine"] == "bi3d" and r["mode"] == "quantized") == [
        1,
        2,
    ]
    assert {r["model_width"] for r in records if r["engine"] == "bi3d"} == {0.25}  # random, as asked


def test_bench_runs_the_bundled_model_by_default(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.engine.bi3d.checkpoint import save_checkpoint
    from app.engine.bi3d.factory import build_model

    weights = tmp_path / "light.pt"
    save_checkpoint(weights, build_model("light", 0.5), {"note": "test"})
    monkeypatch.setattr("app.engine.assets.default_weights", lambda: weights)
    monkeypatch.setattr("app.engine.depth.engines.default_weights", lambda: weights)
    path = tmp_path / "b.json"
    argv = ["bench", "--modes", "binary", "--planes", "1", "--size", "96x192", "--max-disparity", "48"]
    argv += ["--runtimes", "torch", "--repeat", "1", "--warmup", "0", "--json", str(path)]
    code, _, _ = run(capsys, *argv)
    records = [r for r in json.loads(path.read_text()) if r["engine"] == "bi3d"]
    assert code == 0 and len(records) == 1 and records[0]["model_width"] is None  # trained weights
    assert records[0]["check_ms"] is not None  # the light model's binary answer includes the plane check
    sgbm = [r for r in json.loads(path.read_text()) if r["engine"] == "sgbm"]
    assert sgbm and all(r["check_ms"] is None for r in sgbm)


def test_no_plane_check_reaches_the_engine_options() -> None:
    import argparse

    from app.commands.common import add_engine_args, engine_options

    parser = argparse.ArgumentParser()
    add_engine_args(parser)
    assert engine_options(parser.parse_args([])).plane_check is True
    assert engine_options(parser.parse_args(["--no-plane-check"])).plane_check is False


# ---- bad input: exit 2, one line on stderr, no traceback -------------------------------------


def test_missing_image(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    msg = _bad(capsys, "depth", str(tmp_path / "nope.png"), str(small_pair[1]), "--out", str(tmp_path))
    assert "not found" in msg


def test_images_of_different_sizes(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "small.png"
    cv2.imwrite(str(other), np.zeros((100, 100, 3), np.uint8))
    msg = _bad(capsys, "depth", str(small_pair[0]), str(other), "--engine", "sgbm", "--out", str(tmp_path))
    assert "differ in size" in msg
    # refused before the engine's line: it stood above the error (review)
    assert main(["depth", str(small_pair[0]), str(other), "--out", str(tmp_path)]) == 2
    assert "engine:" not in capsys.readouterr().out


def test_non_image_file(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = tmp_path / "notes.png"
    text.write_text("hello")
    msg = _bad(capsys, "depth", str(text), str(small_pair[1]), "--out", str(tmp_path))
    assert "not a readable image" in msg


@pytest.mark.parametrize(("content", "needle"), [(b"", "empty"), (b"garbage", "not a readable PyTorch")])
def test_bad_checkpoints(capsys, small_pair, tmp_path: Path, content: bytes, needle: str) -> None:  # type: ignore[no-untyped-def]
    weights = tmp_path / "w.pt"
    weights.write_bytes(content)
    msg = _bad(capsys, "depth", *map(str, small_pair), "--weights", str(weights), "--out", str(tmp_path))
    assert needle in msg


def test_checkpoint_of_the_wrong_kind(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.engine.bi3d.model import Bi3DModel

    state = Bi3DModel("continuous_2d", width=0.25).state_dict()
    state = {k: v for k, v in state.items() if not k.startswith("refinenet.")}  # fits no kind
    weights = tmp_path / "w.pt"
    torch.save({"state_dict": state}, weights)
    msg = _bad(capsys, "depth", *map(str, small_pair), "--weights", str(weights), "--out", str(tmp_path))
    assert "match no Bi3D kind" in msg


def test_planes_outside_the_range(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    msg = _bad(
        capsys, "depth", *map(str, small_pair), "--mode", "binary", "--planes", "250", "--out", str(tmp_path)
    )
    assert "outside [0, 192]" in msg


def test_an_output_folder_that_cannot_be_made_is_refused_before_the_work(  # type: ignore[no-untyped-def]
    capsys, small_pair, tmp_path: Path, monkeypatch
) -> None:
    from app.engine.depth import engines

    def no_engine(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the engine was built before --out was checked")

    monkeypatch.setattr(engines, "build_engine", no_engine)
    (tmp_path / "file.txt").write_text("x")
    msg = _bad(capsys, "depth", *map(str, small_pair), "--out", str(tmp_path / "file.txt" / "sub"))
    assert "file.txt is a file; give a folder" in msg
    assert not list(tmp_path.glob("*.tmp"))  # nothing left behind


def test_planes_given_twice_and_planes_with_levels(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pair = [*map(str, small_pair), "--engine", "sgbm", "--mode", "quantized"]
    code, stdout, _ = run(capsys, "depth", *pair, "--planes", "40,20,20", "--out", str(tmp_path / "o"))
    assert code == 0 and "planes: 20, 40 px" in stdout
    msg = _bad(capsys, "depth", *pair, "--planes", "20,40", "--levels", "4", "--out", str(tmp_path / "o"))
    assert "--planes and --levels both set the planes" in msg


def test_range_with_min_not_below_max(capsys, small_pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    msg = _bad(
        capsys,
        "depth",
        *map(str, small_pair),
        "--mode",
        "selective",
        "--range",
        "40",
        "20",
        "--out",
        str(tmp_path),
    )
    assert "must be below max" in msg


def test_usage_errors_are_one_line(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        main(["depth", "only-one-image"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "see --help" in err[0]


def test_python_dash_m_app_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    for command in ("depth", "eval", "bench"):
        assert command in proc.stdout


def test_output_read_no_further_still_lets_the_command_finish(tmp_path: Path) -> None:
    """`calib chessboard ... | head -1` exited 0 without writing its calibration: the print that met
    the closed pipe ended the command (review)."""
    out = tmp_path / "rec"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "record", "synthetic:48x64?frames=3&seed=1", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert (out / "timestamps.txt").read_text().count("\n") == 3 and "Traceback" not in err


def _scene(root: Path, left: np.ndarray, right: np.ndarray, gt: np.ndarray) -> None:
    from app.engine.formats import write_pfm

    root.mkdir(parents=True)
    cv2.imwrite(str(root / "im0.png"), left)
    cv2.imwrite(str(root / "im1.png"), right)
    write_pfm(root / "disp0GT.pfm", gt)


def _textured_pair(shift: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(shift)
    left = cv2.GaussianBlur(rng.integers(0, 255, (120, 240, 3), dtype=np.uint8), (3, 3), 0)
    right = np.zeros_like(left)
    right[:, : 240 - shift] = left[:, shift:]
    gt = np.full((120, 240), float(shift), np.float32)
    return left, right, gt


def test_eval_folder_of_middlebury_scenes(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for shift in (5, 9):
        _scene(tmp_path / f"scene{shift}", *_textured_pair(shift))
    code, stdout, _ = run(capsys, "eval", str(tmp_path), "--engines", "sgbm", "--max-disparity", "32")
    assert code == 0
    lines = stdout.splitlines()
    assert sum(line.startswith(("scene5/sgbm", "scene9/sgbm")) for line in lines) == 4
    # each figure's mean over the two scenes, per kind, and the legend says what it is
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in lines if "/sgbm" in line}
    epe = [float(rows[(name, "dense")][0]) for name in ("scene5/sgbm", "scene9/sgbm")]
    assert float(rows[("mean/sgbm", "dense")][0]) == pytest.approx(sum(epe) / 2, abs=1.5e-3)
    assert ("mean/sgbm", "valid-only") in rows
    assert "averaged over the 2 scenes" in stdout
    code, stdout, _ = run(capsys, "eval", str(tmp_path / "scene5"), "--engines", "sgbm")
    assert code == 0 and "mean/" not in stdout  # one scene: no mean
    # one scene that cannot be read no longer ends the run with no figures for the others
    write_pfm(tmp_path / "scene9" / "disp0GT.pfm", np.ones((10, 12), np.float32))
    code, stdout, _ = run(capsys, "eval", str(tmp_path), "--engines", "sgbm,sgbm", "--max-disparity", "32")
    assert code == 0 and sum(line.startswith("scene5/sgbm") for line in stdout.splitlines()) == 2
    assert "note: scene scene9 left out: ground truth" in stdout and "must match" in stdout


def test_depth_of_a_dataset_folder_gives_each_scene_its_own_calibration(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The first scene's calib.txt gave every scene its baseline, and a scene without one depth in
    metres (review)."""
    baselines = {"scene5": 193.0, "scene7": 100.0, "scene9": None}  # mm, as calib.txt gives them
    for name, baseline in baselines.items():
        _scene(tmp_path / "data" / name, *_textured_pair(int(name[-1])))
        if baseline is not None:
            (tmp_path / "data" / name / "calib.txt").write_text(
                "cam0=[500 0 120; 0 500 60; 0 0 1]\ncam1=[500 0 120; 0 500 60; 0 0 1]\ndoffs=0\n"
                f"baseline={baseline}\nwidth=240\nheight=120\nndisp=32\n"
            )
    out = tmp_path / "out"
    code, _, _ = run(
        capsys, "depth", str(tmp_path / "data"), "--frames", "3", "--engine", "sgbm", "--out", str(out)
    )
    assert code == 0
    found = [json.loads((out / f"{i:06d}" / "result.json").read_text()).get("calibration") for i in range(3)]
    assert found[0]["baseline_m"] == pytest.approx(0.193) and found[1]["baseline_m"] == pytest.approx(0.1)
    assert found[2] is None


def test_eval_scales_a_calibration_made_at_another_size_with_its_ndisp(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A 240 x 120 scene with the calib.txt of its 480 x 240 original: the intrinsics were halved,
    unsaid, and the search kept the full size's ndisp (review)."""
    _scene(tmp_path / "half", *_textured_pair(5))
    (tmp_path / "half" / "calib.txt").write_text(
        "cam0=[1000 0 240; 0 1000 120; 0 0 1]\ncam1=[1000 0 240; 0 1000 120; 0 0 1]\ndoffs=0\n"
        "baseline=100\nwidth=480\nheight=240\nndisp=64\n"
    )
    code, stdout, _ = run(
        capsys, "eval", str(tmp_path / "half"), "--engines", "sgbm", "--json", str(tmp_path / "e.json")
    )
    assert (
        code == 0
        and "is for 480x240; scaled its intrinsics by 0.5 to the 240x120 frames, and its ndisp to 32 px"
        in stdout
    )
    row = json.loads((tmp_path / "e.json").read_text())[0]
    assert row["max_disparity"] == 32  # the scaled ndisp (64 before)


def test_a_video_split_the_wrong_way_is_not_told_to_raise_its_range(
    capsys, demo_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Beside "this depth is noise: open it as ...?layout=sbs" came "13 % of the answers read the
    top of the range: set --max-disparity above it" (review)."""
    left, right = (
        cv2.resize(cv2.imread(str(demo_dir / name)), (370, 250), interpolation=cv2.INTER_AREA)
        for name in ("im0.png", "im1.png")
    )
    video = tmp_path / "rig.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (740, 250))
    if not writer.isOpened():
        pytest.skip("this OpenCV cannot write MJPG")
    writer.write(np.hstack([left, right]))
    writer.release()
    spec = f"video:{video}?layout=tb"
    code, stdout, _ = run(capsys, "depth", spec, "--engine", "sgbm", "--out", str(tmp_path / "o"))
    assert code == 0 and "this depth is noise" in stdout and "top of the range" not in stdout


def _kitti_scene(root: Path, shift: int) -> None:
    """One KITTI 2015 frame (image_2, image_3, disp_occ_0) of a ``shift`` px textured pair."""
    from app.engine.formats import write_kitti_png

    for sub in ("image_2", "image_3", "disp_occ_0"):
        (root / sub).mkdir()
    left, right, gt = _textured_pair(shift)
    cv2.imwrite(str(root / "image_2" / "000000_10.png"), left)
    cv2.imwrite(str(root / "image_3" / "000000_10.png"), right)
    write_kitti_png(root / "disp_occ_0" / "000000_10.png", gt)


def test_eval_kitti_layout(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _kitti_scene(tmp_path, 7)
    code, stdout, _ = run(capsys, "eval", str(tmp_path), "--engines", "sgbm", "--max-disparity", "32")
    assert code == 0 and "000000_10/sgbm" in stdout
    valid_line = next(line for line in stdout.splitlines() if "valid-only" in line)
    assert float(valid_line.split()[2]) < 0.5  # EPE on a clean 7 px shift


def test_eval_of_a_kitti_download_root_with_8bit_maps(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`eval kitti` (the root holding training/) found no scenes; an 8-bit dataset map said "give
    --gt-scale", which was then refused as going with --gt FILE only."""
    (tmp_path / "training").mkdir()
    _kitti_scene(tmp_path / "training", 7)
    gt_png = tmp_path / "training" / "disp_occ_0" / "000000_10.png"
    gt = cv2.imread(str(gt_png), cv2.IMREAD_UNCHANGED).astype(np.float32) / 256
    cv2.imwrite(str(gt_png), (gt * 4).astype(np.uint8))
    args = ["eval", str(tmp_path), "--engines", "sgbm", "--max-disparity", "32"]
    assert "--gt-scale" in _bad(capsys, *args)
    code, stdout, _ = run(capsys, *args, "--gt-scale", "4")
    valid_line = next(line for line in stdout.splitlines() if "valid-only" in line)
    assert code == 0 and "000000_10/sgbm" in stdout and float(valid_line.split()[2]) < 0.5


def test_eval_refuses_a_ground_truth_wider_than_the_image(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """KITTI's x256 map read with --gt-scale 4 gave a truth of ~1000 px in a 240 px image, and
    figures of 100 % bad, exit 0 (review)."""
    _kitti_scene(tmp_path, 7)
    msg = _bad(capsys, "eval", str(tmp_path), "--engines", "sgbm", "--gt-scale", "4")
    assert "reaches 448 px of disparity, more than the images' 240 px width: check --gt-scale" in msg


def test_eval_reads_an_8bit_ground_truth_given_its_scale(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    left, right, gt = _textured_pair(7)
    for name, image in (("l.png", left), ("r.png", right)):
        cv2.imwrite(str(tmp_path / name), image)
    cv2.imwrite(str(tmp_path / "disp2.png"), (gt * 4).astype(np.uint8))  # Middlebury 2003's x4 in 8 bits
    pair = [str(tmp_path / "l.png"), str(tmp_path / "r.png"), "--gt", str(tmp_path / "disp2.png")]
    msg = _bad(capsys, "eval", *pair, "--engines", "sgbm")
    assert "8-bit" in msg and "--gt-scale" in msg  # not a bare "need 16-bit"
    json_path = tmp_path / "e.json"
    code, _, _ = run(
        capsys,
        "eval",
        *pair,
        "--gt-scale",
        "4",
        "--engines",
        "sgbm",
        "--max-disparity",
        "32",
        "--json",
        str(json_path),
    )
    assert code == 0
    assert json.loads(json_path.read_text())[0]["valid_only"]["epe"] < 0.5  # read as 7 px, not 28
    assert "drop --gt-scale" in _bad(capsys, "eval", *pair[:3], str(_pfm(tmp_path, gt)), "--gt-scale", "4")
    assert "--gt-scale" in _bad(capsys, "eval", str(tmp_path), "--gt-scale", "0")


def _pfm(folder: Path, gt: np.ndarray) -> Path:
    write_pfm(folder / "gt.pfm", gt)
    return folder / "gt.pfm"


def test_a_pair_given_the_wrong_way_round_is_refused_before_the_work(
    capsys, demo_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    left, right = demo_dir / "im0.png", demo_dir / "im1.png"
    msg = _bad(capsys, "depth", str(right), str(left), "--engine", "sgbm", "--out", str(tmp_path / "o"))
    assert "look swapped" in msg and "left camera's image first, or --swap-views" in msg
    assert not (tmp_path / "o").exists()  # nothing written as if it were depth
    # the same pair as one source (LEFT,RIGHT), and as a side-by-side video, was written in silence
    msg = _bad(capsys, "depth", f"{right},{left}", "--engine", "sgbm", "--out", str(tmp_path / "o"))
    assert "the left view and the right view look swapped" in msg and "--swap-views" in msg
    video = tmp_path / "swapped.avi"
    images = [cv2.imread(str(p)) for p in (right, left)]
    writer = cv2.VideoWriter(
        str(video), cv2.VideoWriter_fourcc(*"MJPG"), 5, (2 * images[0].shape[1], images[0].shape[0])
    )
    writer.write(np.hstack(images))
    writer.release()
    assert "look swapped" in _bad(
        capsys, "depth", str(video), "--engine", "sgbm", "--out", str(tmp_path / "o")
    )
    assert not (tmp_path / "o").exists()
    # --swap-views: the cameras are the wrong way round, and the depth is the scene's
    for given in ([str(right), str(left)], [str(video)]):
        code, stdout, _ = run(
            capsys, "depth", *given, "--swap-views", "--engine", "sgbm", "--out", str(tmp_path / "s")
        )
        assert code == 0, stdout
        median = float(stdout.split("disparity: median ")[1].split(" px")[0])
        assert 40 < median < 50  # Motorcycle's median: about 44 px
    # --swap-views on a pair in the right order: refused, saying to drop it (it wrote noise and
    # advised swapping the cameras: review)
    for given in ([str(left), str(right)], [f"{left},{right}"]):
        msg = _bad(capsys, "depth", *given, "--swap-views", "--engine", "sgbm", "--out", str(tmp_path / "u"))
        assert "look swapped" in msg and "drop --swap-views" in msg
    assert not (tmp_path / "u").exists()


def test_an_unrectified_pair_is_computed_with_a_note_not_refused_as_swapped(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    handheld = Path(__file__).resolve().parent / "data" / "opencv_handheld"
    args = [str(handheld / "left.jpg"), str(handheld / "right.jpg"), "--engine", "sgbm"]
    assert main(["depth", *args, "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "note: the pair does not look rectified" in out and "calib rectify" in out
    notes = json.loads((tmp_path / "o" / "result.json").read_text())["notes"]
    assert any("does not look rectified" in n for n in notes)


def test_eval_reads_a_2014_scene_and_says_when_its_range_is_guessed(
    capsys, demo_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import shutil

    scene = tmp_path / "Motorcycle-perfect"
    scene.mkdir()
    for name in ("im0.png", "im1.png"):
        shutil.copy(demo_dir / name, scene / name)
    shutil.copy(demo_dir / "disp0GT.pfm", scene / "disp0.pfm")  # 2014's name; no calib.txt
    assert main(["eval", str(scene), "--engines", "sgbm"]) == 0
    out = capsys.readouterr().out
    assert "note: no calib.txt in Motorcycle-perfect" in out and "Motorcycle-perfect/sgbm" in out
    pair = [
        str(scene / "im0.png"),
        str(scene / "im1.png"),
        "--gt",
        str(scene / "disp0.pfm"),
        "--engines",
        "sgbm",
    ]
    assert main(["eval", *pair]) == 0
    assert "note: no calib.txt in im0" in capsys.readouterr().out
    shutil.copy(demo_dir / "calib.txt", scene / "calib.txt")  # the pair's calib.txt beside it is read
    assert main(["eval", *pair]) == 0
    out = capsys.readouterr().out
    assert "no calib.txt" not in out and "im0/sgbm" in out
    (scene / "calib.txt").unlink()
    (scene / "disp0.pfm").unlink()
    msg = _bad(capsys, "eval", str(scene), "--engines", "sgbm")
    assert "disp0GT.pfm or disp0.pfm" in msg and "--gt FILE" in msg


def test_eval_pair_needs_ground_truth(capsys, small_pair) -> None:  # type: ignore[no-untyped-def]
    msg = _bad(capsys, "eval", str(small_pair[0]), str(small_pair[1]))
    assert "--gt" in msg
    msg = _bad(capsys, "eval", str(small_pair[0]), "--gt", str(small_pair[1]))  # RIGHT forgotten
    assert "the right image is missing" in msg


def test_eval_refuses_what_it_would_ignore_and_a_swapped_pair(capsys, small_pair, demo_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """--gt with a folder and --frames with a pair were ignored; a swapped pair was scored, exit 0,
    where depth refuses it (review)."""
    gt = str(demo_dir / "disp0GT.pfm")
    assert "goes with a pair" in _bad(capsys, "eval", str(demo_dir), "--gt", gt)
    left, right = str(demo_dir / "im0.png"), str(demo_dir / "im1.png")
    assert "a pair is one" in _bad(capsys, "eval", left, right, "--gt", gt, "--frames", "2")
    assert "look swapped" in _bad(capsys, "eval", right, left, "--gt", gt, "--engines", "sgbm")


def test_eval_prints_what_the_engines_noted(capsys, demo_dir: Path) -> None:  # type: ignore[no-untyped-def]
    left, right = str(demo_dir / "im0.png"), str(demo_dir / "im1.png")
    code, stdout, _ = run(
        capsys, "eval", left, right, "--gt", str(demo_dir / "disp0GT.pfm"), "--engines", "sgbm",
        "--max-disparity", "auto",
    )  # fmt: skip
    assert code == 0 and "note (im0/sgbm): max disparity auto: 0-" in stdout


def test_eval_folder_without_scenes(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    msg = _bad(capsys, "eval", str(tmp_path))
    assert "no stereo scenes" in msg


def test_eval_without_ndisp_searches_the_automatic_range_as_depth_does(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _kitti_scene(tmp_path, 7)
    for extra in ([], ["--max-disparity", "auto"]):
        out = tmp_path / f"eval{len(extra)}.json"
        code, _, _ = run(capsys, "eval", str(tmp_path), "--engines", "sgbm", "--json", str(out), *extra)
        assert code == 0
        (row,) = json.loads(out.read_text())
        assert row["max_disparity"] == 48  # the automatic range's floor, not 192 on a 240 px image


def test_depth_notes_a_video_in_the_other_layout_and_transparent_pixels(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.engine.sources.test_sources import demo_views, write_video

    left, right = demo_views()
    write_video(tmp_path / "tb.avi", [np.concatenate([left, right], axis=0)] * 2)
    out = tmp_path / "out"
    # opened by its path, the layout is the first frame's: top-bottom, said with how to override it
    code, stdout, _ = run(capsys, "depth", str(tmp_path / "tb.avi"), "--engine", "sgbm", "--out", str(out))
    assert code == 0
    assert "source: video tb.avi (top-bottom)" in stdout
    assert "note: video tb.avi looks top-bottom" in stdout and "?layout=sbs opens it side by side" in stdout
    median = float(stdout.split("disparity: median ")[1].split(" px")[0])
    assert 15 < median < 25  # the demo at 320 px: about 19 px
    # a layout given is kept: the note says the depth is noise and how to open it
    spec = f"video:{tmp_path / 'tb.avi'}?layout=sbs"
    code, stdout, _ = run(capsys, "depth", spec, "--engine", "sgbm", "--out", str(out))
    assert code == 0
    assert "note: video tb.avi was opened side by side, but its frames look top-bottom" in stdout
    assert f"open it as video:{tmp_path / 'tb.avi'}?layout=tb" in stdout
    assert "layout=tb" in " ".join(json.loads((out / "result.json").read_text())["notes"])
    rgba = np.dstack([cv2.cvtColor(left, cv2.COLOR_RGB2BGR), np.full(left.shape[:2], 255, np.uint8)])
    rgba[:10, :10, 3] = 0
    cv2.imwrite(str(tmp_path / "l.png"), rgba)
    cv2.imwrite(str(tmp_path / "r.png"), cv2.cvtColor(right, cv2.COLOR_RGB2BGR))
    pair = (str(tmp_path / "l.png"), str(tmp_path / "r.png"))
    code, stdout, _ = run(capsys, "depth", *pair, "--engine", "sgbm", "--out", str(out))
    assert code == 0 and "note: l.png: 0." in stdout and "transparent (alpha channel)" in stdout


def test_an_unwritable_json_file_is_refused_before_the_benchmark(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.commands import arguments
    from app.engine.bench import depth as bench_depth

    monkeypatch.setattr(arguments.os, "access", lambda path, mode: False)  # root ignores folder modes
    monkeypatch.setattr(bench_depth, "run_bench", lambda *a, **k: pytest.fail("the benchmark ran"))
    msg = _bad(capsys, "bench", "--size", "96x96", "--engines", "sgbm", "--json", str(tmp_path / "b.json"))
    assert "cannot write into the folder" in msg


def test_ctrl_c_while_the_libraries_load_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands (and torch) load for 1-2 s before one runs: Ctrl-C there printed a traceback."""
    from app import cli

    def loading() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", loading)
    assert cli.main(["depth", "a.png", "b.png"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["bi3d-studio: interrupted"]


def test_depth_says_after_the_last_frame_that_a_video_was_cut_short(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The note comes when reading fails at the end, after the last frame's lines were printed:
    the command line never said it."""
    from tests.engine.sources.test_sources import demo_views, write_video

    left, right = demo_views(160)
    whole = tmp_path / "whole.avi"
    write_video(whole, [np.concatenate([left, right], axis=1)] * 30)
    data = whole.read_bytes()
    (tmp_path / "cut.avi").write_bytes(data[: len(data) // 2])
    args = [
        "depth",
        str(tmp_path / "cut.avi"),
        "--frames",
        "30",
        "--engine",
        "sgbm",
        "--out",
        str(tmp_path / "o"),
    ]
    code, stdout, _ = run(capsys, *args)
    assert code == 0
    lines = stdout.splitlines()
    assert "the file looks cut short" in lines[-2] and lines[-1].startswith("wrote ")


def test_sgbm_binary_and_selective_search_to_the_scene_not_to_192_px(  # type: ignore[no-untyped-def]
    capsys, demo_dir: Path, tmp_path: Path
) -> None:
    """A 320 px wide crop of the demo, its right view 20 px along: SGBM searched 0-192 px in
    binary and selective mode, left the 192 left columns unknown and counted them "not closer"
    (40 % closer than an 18 px plane where all of it is; an obstacle there went unseen)."""
    image = cv2.imread(str(demo_dir / "im0.png"))
    left, right = tmp_path / "l.png", tmp_path / "r.png"
    cv2.imwrite(str(left), image[150:390, 200:520])
    cv2.imwrite(str(right), image[150:390, 220:540])
    sgbm = [str(left), str(right), "--engine", "sgbm"]
    code, out, _ = run(
        capsys, "depth", *sgbm, "--mode", "binary", "--planes", "18", "--out", str(tmp_path / "b")
    )
    info = json.loads((tmp_path / "b" / "result.json").read_text())
    assert code == 0 and info["closer_than_plane_fraction"] > 0.8 and info["max_disparity_auto_px"][1] < 96
    assert f"{100 * info['unknown_fraction']:.1f}% unknown (no match found)" in out  # not "farther"
    code, out, _ = run(
        capsys, "depth", *sgbm, "--mode", "selective", "--range", "10", "30", "--out", str(tmp_path / "s")
    )
    fractions = json.loads((tmp_path / "s" / "result.json").read_text())["range_state_fraction"]
    assert code == 0 and fractions["inside"] > 0.8 and abs(sum(fractions.values()) - 1) < 1e-3
    code, out, _ = run(capsys, "depth", *sgbm, "--mode", "binary", "--planes", "18", "--max-disparity", "192")
    assert code == 0 and "closer than the plane: 40.0% of pixels, 60.0% unknown" in out  # as asked: said


def test_result_json_keeps_the_geometry_its_metres_come_from(capsys, demo_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """result.json named the calibration file only: a raw rig's rectified focal length (not its
    M1's) and the baseline, needed to turn the saved disparity into metres, were nowhere."""
    out = tmp_path / "o"
    pair = [str(demo_dir / "im0.png"), str(demo_dir / "im1.png")]
    argv = [*pair, "--engine", "sgbm", "--calib", str(demo_dir / "calib.txt"), "--out", str(out)]
    code, stdout, _ = run(capsys, "depth", *argv)
    geometry = json.loads((out / "result.json").read_text())["calibration"]
    assert (
        code == 0 and geometry["baseline_m"] == pytest.approx(0.193, abs=1e-3) and geometry["baseline_known"]
    )
    printed = float(stdout.split("median depth ")[1].split(" m")[0])
    assert geometry["depth_m"]["median"] == pytest.approx(printed, abs=0.006)
    disparity = read_pfm(out / "disparity.pfm")
    z = geometry["focal_px"] * geometry["baseline_m"] / (np.nanmedian(disparity) + geometry["doffs"])
    assert z == pytest.approx(printed, rel=0.05)  # the formula it gives, on the disparity it saved


def test_a_source_that_ends_before_frames_says_so(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--frames 5 of a 3-frame source said only 'wrote 3 frame(s)'."""
    argv = [
        "depth",
        "synthetic:48x80?frames=3",
        "--engine",
        "sgbm",
        "--frames",
        "5",
        "--out",
        str(tmp_path / "o"),
    ]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "ended after 3 frame(s) of the 5 asked for" in out and "wrote 3 frame(s)" in out
    code, out, _ = run(capsys, *argv[:-3], "2", "--out", str(tmp_path / "p"))
    assert code == 0 and "ended after" not in out


def test_a_widened_auto_sweep_stays_within_the_image(capsys, demo_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A 64 px wide pair: the automatic bound was widened to 192 px when pixels were still
    'closer' at its last plane, though no match lies past the image (README: 0-48 px)."""
    for name in ("im0.png", "im1.png"):
        cv2.imwrite(str(tmp_path / name), cv2.imread(str(demo_dir / name))[200:296, 300:364])
    pair = [str(tmp_path / "im0.png"), str(tmp_path / "im1.png")]
    code, out, _ = run(capsys, "depth", *pair, "--mode", "continuous", "--out", str(tmp_path / "o"))
    searched = json.loads((tmp_path / "o" / "result.json").read_text())["max_disparity_auto_px"]
    assert code == 0 and searched[1] <= 48, out


def test_a_calibrations_warning_is_kept_in_result_json(capsys, demo_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The terminal warned of a baseline in the wrong unit; result.json, read by scripts, did not."""
    calib = tmp_path / "calib.txt"
    calib.write_text((demo_dir / "calib.txt").read_text().replace("baseline=193.001", "baseline=193001"))
    pair = [str(demo_dir / "im0.png"), str(demo_dir / "im1.png")]
    out = tmp_path / "o"
    code, stdout, _ = run(
        capsys, "depth", *pair, "--engine", "sgbm", "--calib", str(calib), "--out", str(out)
    )
    notes = json.loads((out / "result.json").read_text())["notes"]
    assert code == 0 and any("longer than a stereo rig's" in n for n in notes)
    assert stdout.count("longer than a stereo rig's") == 1  # said once
    # Middlebury's millimetres written as metres read "median depth 0.00 m", unsaid
    calib.write_text((demo_dir / "calib.txt").read_text().replace("baseline=193.001", "baseline=0.193001"))
    code, stdout, _ = run(
        capsys, "depth", *pair, "--engine", "sgbm", "--calib", str(calib), "--out", str(out)
    )
    assert code == 0 and "the baseline reads 0.193001 mm, shorter than a stereo rig's" in stdout
    assert "multiply it by 1000 (193.001)" in stdout


def test_a_scenes_pair_reads_its_calib_txt_and_writes_depth_in_metres(
    capsys, demo_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """depth im0.png im1.png gave pixels where depth DIR and the window gave metres for the same
    images, and no output held a depth per pixel (review)."""
    from app.engine.calibration.files import load_calibration

    pair = [str(demo_dir / "im0.png"), str(demo_dir / "im1.png")]
    out = tmp_path / "o"
    code, stdout, _ = run(capsys, "depth", *pair, "--engine", "sgbm", "--out", str(out))
    assert code == 0 and "median depth" in stdout and "the scene's own (--calib FILE gives another)" in stdout
    meta = json.loads((out / "result.json").read_text())
    assert meta["calibration"]["doffs"] == pytest.approx(31.086)
    arrays = np.load(out / "result.npz")
    cal, _ = load_calibration(demo_dir / "calib.txt")
    np.testing.assert_allclose(arrays["depth"], cal.depth_m(arrays["disparity"]), equal_nan=True)
    assert np.nanmedian(arrays["depth"]) == pytest.approx(meta["calibration"]["depth_m"]["median"], rel=0.01)
    # images outside a scene folder: pixels, as before
    other = tmp_path / "pair"
    other.mkdir()
    for name in ("im0.png", "im1.png"):
        (other / f"x_{name}").write_bytes((demo_dir / name).read_bytes())
    code, stdout, _ = run(
        capsys,
        "depth",
        str(other / "x_im0.png"),
        str(other / "x_im1.png"),
        "--engine",
        "sgbm",
        "--out",
        str(tmp_path / "p"),
    )
    assert (
        code == 0
        and "median depth" not in stdout
        and "depth" not in np.load(tmp_path / "p" / "result.npz").files
    )


def test_a_raw_rigs_output_keeps_the_rectified_left_image_it_is_in(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A raw rig's rectification moved the disparity's pixels unsaid, and the image they are in
    was not written (review)."""
    from app.engine.calibration.files import write_opencv_yaml
    from app.engine.calibration.rig import Rectifier
    from tests.engine.calibration.test_chessboard import SIZE, true_rig
    from tests.folders import pairs_folder

    rig = true_rig()
    folder = pairs_folder(tmp_path / "raw", 1, size=(SIZE[1], SIZE[0]))
    write_opencv_yaml(tmp_path / "rig.yml", rig)
    left, right = sorted((folder / "left").iterdir())[0], sorted((folder / "right").iterdir())[0]
    out = tmp_path / "o"
    code, stdout, _ = run(
        capsys, "depth", str(left), str(right), "--engine", "sgbm", "--max-disparity", "32",
        "--calib", str(tmp_path / "rig.yml"), "--out", str(out),
    )  # fmt: skip
    assert code == 0 and "the disparity is in the rectified left image's pixels (left_rectified.png" in stdout
    raw = cv2.cvtColor(cv2.imread(str(left)), cv2.COLOR_BGR2RGB)
    expected = Rectifier(rig).rectify(raw, cv2.cvtColor(cv2.imread(str(right)), cv2.COLOR_BGR2RGB))[0]
    kept = cv2.cvtColor(cv2.imread(str(out / "left_rectified.png")), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(kept, expected)
    # the next result in the folder without a rig: the old rectified image goes with its set
    code, _, _ = run(
        capsys, "depth", str(left), str(right), "--engine", "sgbm", "--max-disparity", "32", "--out", str(out)
    )
    assert code == 0 and not (out / "left_rectified.png").exists()


def test_bench_refuses_width_with_weights(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--width was dropped unsaid beside --weights (export refuses the pair: review)."""
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"")
    msg = _bad(capsys, "bench", "--weights", str(weights), "--width", "0.5")
    assert "--width times random models and --weights loads one" in msg


def test_eval_notes_name_settings_in_words_not_marks() -> None:
    """eval printed "(\\x1eprecision=fp32\\x1f times onnxruntime too)" where depth printed
    "(--precision fp32 ...)", and its JSON held the same marks (review)."""
    import json as _json

    from app.engine.bench.evaluation import EvalRow, eval_notes
    from app.engine.errors import setting
    from app.engine.metrics import evaluate
    from app.vocabulary import cli_words

    note = f"onnxruntime skipped ({setting('precision', 'fp32')} times onnxruntime too)"
    metrics = evaluate(np.full((4, 4), 5.0, np.float32), np.full((4, 4), 5.0, np.float32))
    row = EvalRow("demo", "bi3d", metrics, 1.0, 48, (note,), "torch", "bf16")
    (line,) = eval_notes([row], cli_words)
    assert "--precision fp32 times" in line and "\x1e" not in line and "\x1f" not in line
    # a note both engines were given is the scene's, not one engine's (review)
    shared = "exposure: the right image is 2.1 x darker"
    rows = [EvalRow("demo", e, metrics, 1.0, 48, (shared,), "torch", "bf16") for e in ("bi3d", "sgbm")]
    other = EvalRow("demo", "sgbm", metrics, 1.0, 48, (note,), "opencv", "fp32")
    assert eval_notes([*rows, other], cli_words)[0] == f"note (demo): {shared}"
    assert eval_notes([rows[1], other], cli_words)[0] == f"note (demo/sgbm): {shared}"
    held = _json.dumps(row.to_json())
    assert "\\u001e" not in held and "\\u001f" not in held


def test_bench_names_a_size_too_small_and_export_sizes_read_in_their_unit(capsys) -> None:  # type: ignore[no-untyped-def]
    """bench --size 8x8 said "give a larger pair" of no pair; export wrote "refine.onnx (0.0 MB)"
    for 21 KB (review)."""
    from app.commands.export import _size

    message = _bad(capsys, "bench", "--size", "8x8", "--repeat", "1")
    assert "--size 8x8 is too small" in message and "pair" not in message
    assert (_size(21_000), _size(2_500_000)) == ("21 KB", "2.5 MB")


def test_a_quantized_answer_s_farthest_level_is_infinitely_deep_in_result_npz(
    capsys, demo_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The farthest level (0 px to its first plane: 15 m to infinity) read 30.03 m, its middle's
    depth, in result.npz (review); the 3D view and the PLY leave it out."""
    from app.engine.calibration.files import load_calibration

    pair = [str(demo_dir / "im0.png"), str(demo_dir / "im1.png")]
    out = tmp_path / "q"
    code, _, _ = run(
        capsys,
        "depth",
        *pair,
        "--engine",
        "sgbm",
        "--mode",
        "quantized",
        "--planes",
        "40,60",
        "--out",
        str(out),
    )
    arrays = np.load(out / "result.npz")
    far = arrays["disparity"] < 40
    assert code == 0 and far.any() and (~far & np.isfinite(arrays["disparity"])).any()
    assert np.isposinf(arrays["depth"][far]).all()
    cal, _ = load_calibration(demo_dir / "calib.txt")
    near = ~far & np.isfinite(arrays["disparity"])
    np.testing.assert_allclose(arrays["depth"][near], cal.depth_m(arrays["disparity"][near]))
    # result.json's depths say so too: its p95 depth is the farthest level's, with no end
    stats = json.loads((out / "result.json").read_text())["calibration"]["depth_m"]
    assert stats["p95"] is None and "the farthest level (below 40 px)" in stats["null"]
    assert stats["median"] is not None
