"""The command line on sources: record, depth on a source, eval on a source with ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.engine.sources.spec import open_source
from tests.cli_helpers import bad, run

SYNTH = "synthetic:48x80?frames=4&seed=2"


def test_record_frames_and_play_back(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "record", SYNTH, str(tmp_path / "rec"), "--frames", "3")
    assert code == 0 and f"wrote 3 frames to {tmp_path / 'rec'}" in out
    with open_source(str(tmp_path / "rec")) as rec, open_source(SYNTH) as synth:
        for a, b in zip(rec, synth, strict=False):
            np.testing.assert_array_equal(a.left, b.left)
            assert a.timestamp == b.timestamp
        assert rec.frame_number == 2


def test_record_seconds_and_until_the_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "record", "synthetic:16x16?fps=20", str(tmp_path / "a"), "--seconds", "0.2")
    assert code == 0 and "wrote 4 frames" in out
    code, out, _ = run(capsys, "record", SYNTH, str(tmp_path / "b"))
    assert code == 0 and "wrote 4 frames" in out


def test_record_refuses_to_overwrite(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "record", SYNTH, str(tmp_path / "r"), "--frames", "1")[0] == 0
    assert "already holds a recording" in bad(capsys, "record", SYNTH, str(tmp_path / "r"))
    code, out, _ = run(capsys, "record", SYNTH, str(tmp_path / "r"), "--frames", "2", "--overwrite")
    assert code == 0 and "wrote 2 frames" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("nowhere",), "source not found"),
        (("camera:63",), "camera 63 could not be opened"),
        (("synthetic", "--frames", "0"), "--frames must be at least 1"),
    ],
)
def test_record_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    source, *rest = args
    assert needle in bad(capsys, "record", source, str(tmp_path / "r"), *rest)


def test_depth_on_a_source_writes_one_folder_per_frame(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(
        capsys,
        "depth",
        SYNTH,
        "--frames",
        "2",
        "--engine",
        "sgbm",
        "--max-disparity",
        "32",
        "--out",
        str(out),
    )
    assert code == 0 and "wrote 2 frame(s)" in stdout
    for index in range(2):
        with np.load(out / f"{index:06d}" / "result.npz") as z:
            assert z["disparity"].shape == (48, 80)
        meta = json.loads((out / f"{index:06d}" / "result.json").read_text())
        assert meta["source"].startswith("synthetic") and meta["timestamp"] == index / 10
    assert not (out / "000002").exists()


def test_depth_on_a_recording_writes_the_contract_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert run(capsys, "record", SYNTH, str(tmp_path / "rec"), "--frames", "2")[0] == 0
    out = tmp_path / "out"
    code, _, _ = run(
        capsys, "depth", str(tmp_path / "rec"), "--engine", "sgbm", "--max-disparity", "32", "--out", str(out)
    )
    assert code == 0
    for name in ("result.npz", "disparity.pfm", "disparity.png", "disparity_color.png", "result.json"):
        assert (out / name).is_file()
    assert not (out / "000000").exists()


def test_depth_frames_needs_a_lone_source(capsys: pytest.CaptureFixture[str], demo_dir: Path) -> None:
    msg = bad(capsys, "depth", str(demo_dir / "im0.png"), str(demo_dir / "im1.png"), "--frames", "2")
    assert "--frames needs a source" in msg


def test_eval_on_sources_with_ground_truth(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "eval", SYNTH, "--frames", "2", "--engines", "sgbm", "--max-disparity", "32")
    assert code == 0
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("00000")] == [
        ["000000/sgbm", "dense"],
        ["000000/sgbm", "valid-only"],
        ["000001/sgbm", "dense"],
        ["000001/sgbm", "valid-only"],
    ]
    assert run(capsys, "record", SYNTH, str(tmp_path / "rec"), "--frames", "1")[0] == 0
    code, out, _ = run(capsys, "eval", str(tmp_path / "rec"), "--engines", "sgbm", "--max-disparity", "32")
    assert code == 0 and "000000/sgbm" in out


def test_eval_on_sources_without_an_end_or_ground_truth(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert "give --frames N" in bad(capsys, "eval", "synthetic:16x16", "--engines", "sgbm")
    rec = tmp_path / "rec"
    from app.engine.sources.recording import Recorder
    from app.engine.types import StereoPair

    with Recorder(rec) as recorder:
        recorder.write(StereoPair(np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 3), np.uint8)))
    assert "no ground-truth disparity" in bad(capsys, "eval", str(rec), "--engines", "sgbm")


def test_recording_a_video_in_the_other_layout_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.engine.sources.test_sources import demo_views, write_video

    left, right = demo_views()
    write_video(tmp_path / "tb.avi", [np.concatenate([left, right], axis=0)] * 2)
    code, stdout, _ = run(capsys, "record", str(tmp_path / "tb.avi"), str(tmp_path / "rec"))
    assert code == 0 and "wrote 2 frames" in stdout
    assert "note: video tb.avi was opened side by side, but its frames look top-bottom" in stdout


def _pairs_folder(root: Path, sizes: list[tuple[tuple[int, int], tuple[int, int]]]) -> Path:
    """left/NNN.png and right/NNN.png (three-digit names: a folder of pairs, not a recording)."""
    import cv2

    rng = np.random.default_rng(0)
    for sub in ("left", "right"):
        (root / sub).mkdir(parents=True)
    for i, (left, right) in enumerate(sizes):
        cv2.imwrite(str(root / "left" / f"{i:03d}.png"), rng.integers(0, 255, (*left, 3), dtype=np.uint8))
        cv2.imwrite(str(root / "right" / f"{i:03d}.png"), rng.integers(0, 255, (*right, 3), dtype=np.uint8))
    return root


def test_a_source_failing_on_its_first_frame_leaves_no_empty_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = _pairs_folder(tmp_path / "pairs", [((40, 60), (30, 60)), ((40, 60), (40, 60))])
    out = tmp_path / "rec"
    assert "differ in size" in bad(capsys, "record", str(source), str(out))
    assert not out.exists()  # a retry is not told "already holds a recording"
    empty = tmp_path / "empty"
    empty.mkdir()
    bad(capsys, "record", str(source), str(empty))
    assert empty.is_dir() and [p.name for p in empty.iterdir() if not p.name.startswith(".")] == []
    # a failure after frames were written keeps them, and says so
    later = _pairs_folder(tmp_path / "later", [((40, 60), (40, 60)), ((40, 60), (30, 60))])
    line = bad(capsys, "record", str(later), str(tmp_path / "kept"))
    assert "keeps the 1 frame recorded before it" in line
    assert (
        run(capsys, "depth", str(tmp_path / "kept"), "--engine", "sgbm", "--out", str(tmp_path / "d"))[0] == 0
    )


def test_reindex_refuses_a_folder_of_pairs_that_is_not_a_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = _pairs_folder(tmp_path / "pairs", [((40, 60), (40, 60))] * 3)
    assert "six-digit" in bad(capsys, "record", "--reindex", str(source))
    assert sorted(p.name for p in source.iterdir()) == ["left", "right"]  # nothing written into it
    assert run(capsys, "record", str(source), str(tmp_path / "rec"))[0] == 0  # still a source


def test_an_unwritable_recording_folder_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.engine.sources import recording_index

    real_open = recording_index.os.open

    def refuse(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).endswith(recording_index.LOCK):
            raise PermissionError(13, "Permission denied")  # root ignores folder modes
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(recording_index.os, "open", refuse)
    (tmp_path / "ro").mkdir()
    msg = bad(capsys, "record", SYNTH, str(tmp_path / "ro"), "--frames", "1")
    assert "cannot write into the recording folder" in msg and "Permission denied" in msg


def test_a_note_repeated_by_every_frame_is_printed_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "depth", SYNTH, "--frames", "3", "--engine", "sgbm", "--out", str(out))
    notes = [line for line in stdout.splitlines() if line.startswith("note: max disparity auto")]
    assert code == 0 and len(notes) == 1, stdout
    for index in range(3):  # each frame's result.json keeps its notes
        meta = json.loads((out / f"{index:06d}" / "result.json").read_text())
        assert any(n.startswith("max disparity auto") for n in meta["notes"])
