"""The command line on sources: record, depth on a source, eval on a source with ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.engine.sources.spec import open_source
from tests.cli_helpers import bad, run
from tests.folders import pairs_folder

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
    # it names the frame's files (it said only "recording rec (2 frames)": review)
    inputs = json.loads((out / "result.json").read_text())["inputs"]
    assert inputs == {
        "left": str((tmp_path / "rec" / "left" / "000000.png").resolve()),
        "right": str((tmp_path / "rec" / "right" / "000000.png").resolve()),
    }


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
    assert "note: video tb.avi looks top-bottom" in stdout  # opened so, and recorded as pairs
    # session.json names the layout recorded, decided on the first frame (it read "side by side")
    meta = json.loads((tmp_path / "rec" / "session.json").read_text())
    assert meta["source"] == "video tb.avi (top-bottom)"
    spec = f"video:{tmp_path / 'tb.avi'}?layout=sbs"  # a layout given is kept, and called out
    code, stdout, _ = run(capsys, "record", spec, str(tmp_path / "rec2"))
    # its pairs are split the wrong way: said of them, not of a depth record never made (review)
    assert code == 1 and "wrote 2 frames" in stdout
    assert "note: video tb.avi was opened side by side, but its frames look top-bottom" in stdout
    assert "so the pairs recorded are split the wrong way: record it as video:" in stdout
    assert "depth is noise" not in stdout


def test_a_source_failing_on_its_first_frame_leaves_no_empty_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one = pairs_folder(tmp_path / "one", 1, size=(40, 60), right_sizes={0: (30, 60)})
    out = tmp_path / "rec"
    assert "differ in size" in bad(capsys, "record", str(one), str(out))
    assert not out.exists()  # a retry is not told "already holds a recording"
    # every frame of many damaged: each is named, then one error; nothing left behind
    every = pairs_folder(tmp_path / "every", 2, size=(40, 60), right_sizes={0: (30, 60), 1: (30, 60)})
    code, stdout, err = run(capsys, "record", str(every), str(out))
    (line,) = err.strip().splitlines()
    skips = [s for s in stdout.splitlines() if s.startswith("note: frame")]
    assert code == 2 and len(skips) == 2 and all("skipped" in s for s in skips)
    assert "no frame of" in line and "nothing recorded" in line and not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    bad(capsys, "record", str(one), str(empty))
    assert empty.is_dir() and [p.name for p in empty.iterdir() if not p.name.startswith(".")] == []


def test_a_damaged_frame_of_many_is_skipped_and_said_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = pairs_folder(tmp_path / "pairs", 3, size=(40, 60), right_sizes={0: (30, 60), 2: (30, 60)})
    code, out, err = run(capsys, "record", str(source), str(tmp_path / "kept"))
    assert code == 0 and "wrote 1 frame to" in out
    # notes, said once as it happened (the prefix errors use, on stderr, read as failures: review)
    assert out.count("note: frame 0 (000) skipped") == 1 and out.count("note: frame 2 (002) skipped") == 1
    assert "skipped" not in err
    assert (
        run(capsys, "depth", str(tmp_path / "kept"), "--engine", "sgbm", "--out", str(tmp_path / "d"))[0] == 0
    )


def test_reindex_refuses_a_folder_of_pairs_that_is_not_a_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = pairs_folder(tmp_path / "pairs", 3, size=(40, 60))
    assert "six-digit" in bad(capsys, "record", "--reindex", str(source))
    assert sorted(p.name for p in source.iterdir()) == ["left", "right"]  # nothing written into it
    assert run(capsys, "record", str(source), str(tmp_path / "rec"))[0] == 0  # still a source


def test_a_source_that_ends_before_the_frames_asked_for_is_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = pairs_folder(tmp_path / "pairs", 3, size=(40, 60))
    code, out, _ = run(capsys, "record", str(source), str(tmp_path / "rec"), "--frames", "50")
    # "wrote 3 frames" alone, where depth says it ended short (review)
    assert code == 0 and "ended after 3 frames of the 50 asked for" in out and "wrote 3 frames" in out
    hidden = tmp_path / "rec2"
    hidden.mkdir()
    (hidden / ".DS_Store").write_bytes(b"finder")  # an empty folder to a user (refused: review)
    code, out, _ = run(capsys, "record", str(source), str(hidden), "--frames", "2")
    assert code == 0 and "asked for" not in out and (hidden / ".DS_Store").read_bytes() == b"finder"


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


def test_ctrl_c_before_the_first_frame_leaves_no_empty_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty recording blocked the folder ('already holds a recording') and played as no frames."""
    from app.engine.sources import recording

    def interrupted(*_args: object, **_kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(recording, "record", interrupted)
    code, _, err = run(capsys, "record", SYNTH, str(tmp_path / "rec"))
    assert code == 130 and "stopped before the first frame: nothing recorded" in err
    assert not (tmp_path / "rec").exists()
    monkeypatch.undo()
    assert run(capsys, "record", SYNTH, str(tmp_path / "rec"), "--frames", "1")[0] == 0


def test_sigterm_stops_a_recording_as_ctrl_c_does(tmp_path: Path) -> None:
    """A service manager's SIGTERM ended the process silently; now the recording is closed, what
    it kept is said, and it plays back."""
    import signal
    import subprocess
    import sys
    import time

    rec = tmp_path / "rec"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "record", "synthetic:24x32?fps=1000", str(rec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (rec / "timestamps.txt").exists():
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err  # stopped, as Ctrl-C: not the 0 of a recording that finished
    assert "terminated (SIGTERM)" in out and "wrote " in out and "Traceback" not in err
    written = int(out.split("wrote ")[1].split()[0])
    with open_source(str(rec)) as played:
        assert sum(1 for _ in played) == written > 0


def test_overwrite_keeps_the_old_recording_until_the_new_one_has_a_frame(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record BAD DIR --overwrite` deleted DIR's recording, then failed on BAD's first pair."""
    from app.engine.sources import recording
    from app.engine.sources.recording import Recorder
    from app.engine.sources.recording_index import REPLACED

    rec = tmp_path / "rec"
    assert run(capsys, "record", SYNTH, str(rec), "--frames", "3")[0] == 0
    broken = pairs_folder(tmp_path / "pairs", 1, size=(40, 60), right_sizes={0: (30, 60)})
    line = bad(capsys, "record", str(broken), str(rec), "--overwrite")
    assert "differ in size" in line and f"{rec} keeps the recording it held before" in line

    def frames() -> int:
        with open_source(str(rec)) as played:
            return sum(1 for _ in played)

    assert frames() == 3 and not (rec / REPLACED).exists()

    def interrupted(*_args: object, **_kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(recording, "record", interrupted)
    code, _, err = run(capsys, "record", SYNTH, str(rec), "--overwrite")
    assert code == 130 and "keeps the recording it held before" in err and frames() == 3
    monkeypatch.undo()
    # killed before its first frame (no discard ran): the next reader puts the old one back
    Recorder(rec, overwrite=True).close()
    assert (rec / REPLACED).is_dir() and frames() == 3 and not (rec / REPLACED).exists()
    # a replacement with frames drops the old one
    code, _, _ = run(capsys, "record", SYNTH, str(rec), "--frames", "2", "--overwrite")
    assert code == 0 and frames() == 2 and not (rec / REPLACED).exists()


class _Camera:
    """A fake device at ``fps`` (cv2.VideoCapture's interface) showing a noisy 48 x 64 view."""

    def __init__(self, _index: int, fps: float = 200.0) -> None:
        import time

        self.interval, self.next = 1.0 / fps, time.monotonic()
        self.rng = np.random.default_rng(_index)

    def isOpened(self) -> bool:
        return True

    def read(self) -> tuple[bool, np.ndarray]:
        import time

        self.next += self.interval
        time.sleep(max(0.0, self.next - time.monotonic()))
        return True, self.rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)

    def set(self, *_args: object) -> bool:
        return True

    def release(self) -> None:
        pass


def test_a_camera_recording_keeps_every_frame_the_camera_delivered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record camera:0,1` wrote the newest pair after each write: at 1280 x 720 and 30 fps on 2
    cores, 51 of 121 frames, said as 'wrote 51 frames'. Now every pair the capture thread delivers
    is queued and written; with the queue full, the dropped ones are counted and said."""
    import functools
    import time

    from app.engine.formats import write_color_png
    from app.engine.sources import recording, spec
    from app.engine.sources.capture import CameraSettings, CameraSource

    monkeypatch.setattr(spec, "open_source", functools.partial(spec.open_source, camera_factory=_Camera))
    code, out, _ = run(capsys, "record", "camera:0,1", str(tmp_path / "rec"), "--frames", "40")
    assert code == 0 and "wrote 40 frames" in out and "dropped" not in out
    with open_source(str(tmp_path / "rec")) as played:
        stamps = [pair.timestamp for pair in played]
    assert len(stamps) == 40 and max(np.diff(stamps)) < 0.05  # consecutive frames at 200 fps, none skipped

    def slow_png(path: Path, rgb: np.ndarray) -> None:
        time.sleep(0.02)
        write_color_png(path, rgb)

    monkeypatch.setattr(recording, "write_color_png", slow_png)
    source = CameraSource(CameraSettings((0, 1)), factory=_Camera)
    recorder = recording.Recorder(tmp_path / "slow")
    pair_bytes = 2 * 48 * 64 * 3
    with source:
        writer = recording.record_live(source, recorder, frames=30)
        recorder_small = recording.Recorder(tmp_path / "small")
        writer_small = recording.QueuedWriter(recorder_small, frames=None, max_bytes=3 * pair_bytes)
        source.add_capture_listener(writer_small.offer)
        time.sleep(0.5)
        source.remove_capture_listener(writer_small.offer)
        writer_small.close()
    recorder.close()
    recorder_small.close()
    assert writer.dropped == 0 and recorder.frames_written == 30  # a queue absorbs a slow disk
    assert (
        writer_small.dropped > 0
        and recorder_small.frames_written + writer_small.dropped == writer_small.captured
    )
    note = recording.dropped_note(writer_small, "cameras 0 + 1")
    assert note.startswith(
        f"{writer_small.dropped} of the {writer_small.captured} frames cameras 0 + 1 delivered"
    )
    assert "pairs of 64 x 48 px" in note and "smaller camera mode" in note


def test_a_damaged_frame_of_a_recording_is_skipped_and_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One truncated PNG stopped `depth REC --frames N` (and a re-recording) at that frame: the
    frames after it were out of reach. A truncated ground truth stopped depth, which needs none."""
    rec = tmp_path / "rec"
    assert run(capsys, "record", "synthetic:48x80?frames=6&seed=2", str(rec))[0] == 0
    left3 = rec / "left" / "000003.png"
    left3.write_bytes(left3.read_bytes()[: left3.stat().st_size // 2])
    gt2 = rec / "disparity" / "000002.pfm"
    gt2.write_bytes(gt2.read_bytes()[:100])
    out = tmp_path / "d"
    code, stdout, _ = run(capsys, "depth", str(rec), "--engine", "sgbm", "--frames", "6", "--out", str(out))
    assert code == 0, stdout
    # the 5 good frames of 6, each in the folder of its own number
    assert sorted(p.name for p in out.iterdir()) == [f"{i:06d}" for i in (0, 1, 2, 4, 5)]
    assert "frame 3 (000003) skipped: " in stdout and "truncated" in stdout
    assert "frame 2 (000002) played without its ground truth" in stdout
    code, stdout, err = run(capsys, "record", str(rec), str(tmp_path / "again"))
    assert code == 0 and "wrote 5 frames" in stdout
    assert "note: frame 3 (000003) skipped: " in stdout and "skipped" not in err
    single = tmp_path / "one"
    assert run(capsys, "record", "synthetic:48x80?frames=1&seed=2", str(single))[0] == 0
    (single / "left" / "000000.png").write_bytes(b"not a png")
    assert "not a readable image" in bad(capsys, "depth", str(single), "--engine", "sgbm", "--out", str(out))


def test_depth_refuses_to_write_into_the_source_it_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`depth REC --frames 3 --out REC/o` wrote frame folders into the recording (review)."""
    rec = tmp_path / "rec"
    assert run(capsys, "record", SYNTH, str(rec), "--frames", "2")[0] == 0
    for out in (rec / "o", rec, tmp_path):
        line = bad(capsys, "depth", str(rec), "--engine", "sgbm", "--frames", "2", "--out", str(out))
        assert "overlaps the source" in line and "write into a folder outside the source" in line
    before = sorted(p.name for p in rec.iterdir())
    assert "o" not in before and not [p for p in before if p.isdigit()]  # no result folder written


def test_depth_on_a_folder_numbers_its_results_as_the_source_numbers_its_frames(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """After a damaged frame was skipped, frame 2's result went to out/000001 (review)."""
    source = pairs_folder(tmp_path / "pairs", 3, damaged={1})
    out = tmp_path / "out"
    code, stdout, _ = run(
        capsys, "depth", str(source), "--engine", "sgbm", "--frames", "3", "--out", str(out)
    )
    assert code == 0 and "frame 2:" in stdout and "frame 1:" not in stdout
    assert sorted(p.name for p in out.iterdir()) == ["000000", "000002"]


def test_a_synthetic_scene_is_recorded_at_the_rate_it_announces(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record synthetic OUT` said "@ 10 fps" and wrote 130 frames a second (13 GB in 10 min); it
    goes at its rate, as a camera would. Files go as fast as they can, announcing no rate."""
    from app.engine.sources import recording

    now = [0.0]
    paces: list[recording.Pace] = []

    def sleep(seconds: float) -> None:
        now[0] += seconds

    class FakeClock(recording.Pace):
        def __init__(self) -> None:
            super().__init__(clock=lambda: now[0], sleep=sleep)
            paces.append(self)

    monkeypatch.setattr(recording, "Pace", FakeClock)
    code, out, _ = run(capsys, "record", "synthetic:16x16?fps=5&frames=4", str(tmp_path / "rec"))
    assert code == 0 and "synthetic 16 x 16 px @ 5 fps" in out and "wrote 4 frames" in out
    assert len(paces) == 1 and now[0] == pytest.approx(0.6)  # the 4th frame 3 intervals after the 1st
    source = pairs_folder(tmp_path / "pairs", 3, size=(40, 60))
    code, out, _ = run(capsys, "record", str(source), str(tmp_path / "copy"))
    assert code == 0 and "wrote 3 frames" in out and "fps" not in out and len(paces) == 1


def test_ctrl_c_mid_recording_keeps_the_frames_and_exits_130(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C ended `record` with exit 0, as if the source had ended; the frames stay, and say so."""
    from app.engine.sources import recording

    real_record = recording.record

    def interrupted_after_two(source, recorder, *_args: object, **_kwargs: object) -> int:  # type: ignore[no-untyped-def]
        real_record(source, recorder, frames=2)
        raise KeyboardInterrupt

    monkeypatch.setattr(recording, "record", interrupted_after_two)
    code, out, err = run(capsys, "record", SYNTH, str(tmp_path / "rec"))
    assert code == 130 and "stopped" in out and f"wrote 2 frames to {tmp_path / 'rec'}" in out, err
    with open_source(str(tmp_path / "rec")) as played:
        assert sum(1 for _ in played) == 2


def test_a_full_disk_while_recording_exits_1_not_the_usage_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk ended `record` with 2, argparse's code for a mistyped command line."""
    import errno

    from app.engine.sources import recording

    real_commit = recording.Recorder._commit

    def commit(self, line: str) -> None:  # type: ignore[no-untyped-def]
        if line.startswith("000002"):
            raise OSError(errno.ENOSPC, "No space left on device", str(self.folder / "timestamps.txt"))
        real_commit(self, line)

    monkeypatch.setattr(recording.Recorder, "_commit", commit)
    code, _, err = run(capsys, "record", SYNTH, str(tmp_path / "rec"))
    (line,) = err.strip().splitlines()
    assert code == 1 and line.startswith("bi3d-studio record: error: cannot write ")
    assert "No space left on device" in line and "keeps the 2 frames recorded before it" in line
    # on the first frame (a file-size limit): the folder goes, and that is said (review)
    monkeypatch.setattr(recording.Recorder, "_commit", lambda self, line: commit(self, "000002"))
    code, _, err = run(capsys, "record", SYNTH, str(tmp_path / "first"))
    (line,) = err.strip().splitlines()
    assert code == 1 and line.endswith("; nothing was recorded") and not (tmp_path / "first").exists()


def test_recording_into_another_recording_or_nowhere_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`record synthetic REC/left` nested a recording in another's frames folder; an empty DIR was
    refused as '. exists and is not an empty folder'."""
    rec = tmp_path / "rec"
    assert run(capsys, "record", SYNTH, str(rec), "--frames", "2")[0] == 0
    for inner in (rec / "left", rec / "left" / "new", rec / "sub"):
        line = bad(capsys, "record", SYNTH, str(inner))
        assert f"{inner} lies inside the recording {rec}; record into a folder outside it" in line
    assert not (rec / "sub").exists() and not (rec / "left" / "new").exists()
    assert "DIR is empty; give the folder to record into" in bad(capsys, "record", SYNTH, "")
    assert "no source given" in bad(capsys, "record", "", str(tmp_path / "other"))  # not "overlaps ."
    assert "DIR is empty" in bad(capsys, "record", "--reindex", " ")


def test_reindex_says_where_the_damaged_session_file_went(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rec = tmp_path / "rec"
    assert run(capsys, "record", SYNTH, str(rec), "--frames", "2")[0] == 0
    (rec / "session.json").write_text("{ damaged")
    code, out, _ = run(capsys, "record", "--reindex", str(rec))
    assert code == 0 and "the old one is kept as session.json.bak" in out
    assert "rewritten without a calibration" in out
    assert (rec / "session.json.bak").read_text() == "{ damaged"


def test_reindex_keeps_the_calibration_a_damaged_session_file_still_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A session file cut short after its calibration was rebuilt without it: the rig's metres
    were gone from the recording (only the .bak, hand-mended, had them)."""
    rec = tmp_path / "rec"
    assert run(capsys, "record", SYNTH, str(rec), "--frames", "2")[0] == 0
    whole = json.loads((rec / "session.json").read_text())
    assert whole["calibration"]
    (rec / "session.json").write_bytes((rec / "session.json").read_bytes()[:-3])  # the final brace gone
    code, out, _ = run(capsys, "record", "--reindex", str(rec))
    assert code == 0 and "rewritten with the calibration read from it" in out
    rebuilt = json.loads((rec / "session.json").read_text())
    assert rebuilt["calibration"] == whole["calibration"] and rebuilt["source"] == whole["source"]
    with open_source(str(rec)) as source:
        pair = source.read()
        assert pair is not None and pair.calibration is not None
    broken = json.dumps({**whole, "calibration": {"focal_px": "x"}})[:-1]  # no numbers: not kept
    (rec / "session.json").write_text(broken)
    code, out, _ = run(capsys, "record", "--reindex", str(rec))
    assert code == 0 and "rewritten without a calibration" in out


def test_eval_of_a_recording_names_a_frames_missing_ground_truth(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A deleted disparity/000001.pfm read "no ground truth (disp0GT.pfm or disp0.pfm, KITTI's
    disp_occ_0)": a dataset's file names, not the one that is missing."""
    from app.cli import main

    rec = tmp_path / "rec"
    assert main(["record", "synthetic:48x64?frames=2", str(rec)]) == 0
    (rec / "disparity" / "000001.pfm").unlink()
    capsys.readouterr()
    assert main(["eval", str(rec), "--engines", "sgbm"]) == 0  # the other frame is scored
    out = capsys.readouterr().out
    assert f"frame 000001 has no ground truth ({rec / 'disparity' / '000001.pfm'} is missing)" in out


def test_recording_a_recording_says_so_once(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Recording a recording printed "recording recording rec (2 frames) to ..."."""
    from app.cli import main

    assert main(["record", "synthetic:48x64?frames=2", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert main(["record", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert (
        "recording recording" not in out
        and f"recording from recording a (2 frames) into {tmp_path / 'b'}" in out
    )


def test_results_are_never_written_into_a_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A pair's depth and flow were written into a recording's left/, read as its frames (review)."""
    rec = tmp_path / "rec"
    assert run(capsys, "record", "synthetic:48x64", str(rec), "--frames", "2")[0] == 0
    left, right = str(rec / "left" / "000000.png"), str(rec / "right" / "000000.png")
    for out in (rec / "left", rec):
        msg = bad(capsys, "depth", left, right, "--engine", "sgbm", "--out", str(out))
        assert f"lies in the recording {rec.resolve()}" in msg
    msg = bad(capsys, "flow", left, str(rec / "left" / "000001.png"), "--out", str(rec / "left"))
    assert "results written there would be read as its frames" in msg
    assert sorted(p.name for p in (rec / "left").iterdir()) == ["000000.png", "000001.png"]
    # a second many-frame run into the same folder says it replaced the first's frames (review)
    out = tmp_path / "d"
    assert run(capsys, "depth", str(rec), "--frames", "1", "--engine", "sgbm", "--out", str(out))[0] == 0
    code, stdout, _ = run(capsys, "depth", str(rec), "--frames", "2", "--engine", "sgbm", "--out", str(out))
    assert code == 0 and f"note: this replaced the results of 1 frame(s) of an earlier run in {out}" in stdout
    # a pair's result into that folder, and frames into a pair's: the other run's results are said
    # (one folder read as one run's: review), and kept
    code, stdout, _ = run(capsys, "depth", left, right, "--engine", "sgbm", "--out", str(out))
    assert (
        code == 0 and "also holds the results of an earlier run of 2 frame(s) (000000/ to 000001/)" in stdout
    )
    assert (out / "000001" / "result.json").is_file()
    code, stdout, _ = run(capsys, "depth", str(rec), "--frames", "2", "--engine", "sgbm", "--out", str(out))
    assert code == 0 and "result.json and its files are an earlier single pair's" in stdout
    code, stdout, _ = run(capsys, "depth", left, right, "--engine", "sgbm", "--out", str(tmp_path / "new"))
    assert code == 0 and "earlier" not in stdout


def test_a_dataset_whose_scenes_have_their_own_calibrations_is_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """session.json keeps one calibration, the first scene's: played back, every scene got it
    unsaid (review)."""
    import cv2

    rng = np.random.default_rng(0)
    for name, baseline in (("a", 193.0), ("b", 100.0), ("c", None)):
        scene = tmp_path / "data" / name
        scene.mkdir(parents=True)
        for image in ("im0.png", "im1.png"):
            cv2.imwrite(str(scene / image), rng.integers(0, 255, (40, 60, 3), dtype=np.uint8))
        if baseline is not None:
            (scene / "calib.txt").write_text(
                "cam0=[50 0 30; 0 50 20; 0 0 1]\ncam1=[50 0 30; 0 50 20; 0 0 1]\ndoffs=0\n"
                f"baseline={baseline}\nwidth=60\nheight=40\nndisp=16\n"
            )
    code, out, _ = run(capsys, "record", str(tmp_path / "data"), str(tmp_path / "rec"))
    assert code == 0 and "note: 2 frames of" in out and "record such scenes one by one" in out
    code, out, _ = run(capsys, "record", str(tmp_path / "data" / "a"), str(tmp_path / "rec_a"))
    assert code == 0 and "calibration than" not in out  # one scene: nothing to say


def test_a_raw_rig_is_recorded_raw_with_its_rig_and_plays_rectified(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """record took no calibration, and the window recorded a raw rig's frames with the rectified
    geometry alone: played back anywhere else they were matched unrectified (review)."""
    from app.engine.calibration.files import write_opencv_yaml
    from app.engine.calibration.rig import Rectifier
    from tests.engine.calibration.test_chessboard import SIZE, true_rig

    rig = true_rig()
    raw = pairs_folder(tmp_path / "raw", 2, size=(SIZE[1], SIZE[0]))
    write_opencv_yaml(tmp_path / "rig.yml", rig)
    rec = tmp_path / "rec"
    code, out, _ = run(capsys, "record", str(raw), str(rec), "--calib", str(tmp_path / "rig.yml"))
    assert code == 0 and "wrote 2 frames" in out
    assert (rec / "rig.yml").is_file() and json.loads((rec / "session.json").read_text())["rig"] == "rig.yml"
    rectifier = Rectifier(rig)
    with open_source(str(raw)) as plain, open_source(str(rec)) as played:
        assert played.rectifies_frames  # type: ignore[attr-defined]
        for a, b in zip(plain, played, strict=True):
            expected = rectifier.rectify(a.left, a.right)
            np.testing.assert_array_equal(b.left, expected[0])
            np.testing.assert_array_equal(b.right, expected[1])
            assert b.calibration is not None
            assert b.calibration.focal_px == pytest.approx(rectifier.calibration.focal_px)
            assert b.calibration.baseline_m == pytest.approx(rectifier.calibration.baseline_m)
    # the raw frames themselves are what is kept
    with open_source(str(raw)) as plain:
        first = next(iter(plain))
    import cv2

    kept = cv2.cvtColor(cv2.imread(str(rec / "left" / "000000.png")), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(kept, first.left)
    # rectified once: a rig given again is refused, not applied twice
    assert "leave out --calib" in bad(capsys, "depth", str(rec), "--calib", str(tmp_path / "rig.yml"))
    # its depth is in the rectified left image's pixels, said and kept as with --calib (review)
    code, out, _ = run(capsys, "depth", str(rec), "--out", str(tmp_path / "played"), "--mode", "continuous")
    assert code == 0 and "rectified with the recording's rig.yml" in out and "not its left/ frames'" in out
    kept = cv2.cvtColor(cv2.imread(str(tmp_path / "played" / "left_rectified.png")), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(kept, rectifier.rectify(first.left, first.right)[0])
    assert any(
        "left_rectified.png" in n
        for n in json.loads((tmp_path / "played" / "result.json").read_text())["notes"]
    )
    # an index rebuilt from the frames keeps the rig (it is found by its file)
    (rec / "timestamps.txt").unlink()
    assert run(capsys, "record", "--reindex", str(rec))[0] == 0
    with open_source(str(rec)) as played:
        assert played.rectifies_frames  # type: ignore[attr-defined]
    # replaced by a recording without a rig: the old rig goes with the old frames
    code, out, _ = run(capsys, "record", SYNTH, str(rec), "--frames", "1", "--overwrite")
    assert code == 0 and not (rec / "rig.yml").exists()


def test_a_rig_of_another_size_is_refused_before_anything_is_recorded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from app.engine.calibration.files import write_opencv_yaml
    from tests.engine.calibration.test_chessboard import true_rig

    write_opencv_yaml(tmp_path / "rig.yml", true_rig())
    message = bad(capsys, "record", SYNTH, str(tmp_path / "rec"), "--calib", str(tmp_path / "rig.yml"))
    assert "the calibration is for 640x480 images but the frames are 80x48 (another aspect ratio)" in message
    assert not (tmp_path / "rec").exists()
    assert "give --calib too" in bad(capsys, "record", SYNTH, str(tmp_path / "r2"), "--calib2", "x.yml")


def test_a_rig_of_another_size_of_the_same_shape_is_rescaled_as_depth_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`depth --calib` scaled a 640x480 rig to 320x240 frames, `record --calib` refused it
    (review): the recording keeps the rig rescaled, and plays back rectified with it."""
    from app.engine.calibration.files import load_calibration, load_for_frames, write_opencv_yaml
    from app.engine.calibration.rig import Rectifier
    from tests.engine.calibration.test_chessboard import true_rig

    write_opencv_yaml(tmp_path / "rig.yml", true_rig())
    raw = pairs_folder(tmp_path / "raw", 2, size=(240, 320))
    rec = tmp_path / "rec"
    code, out, _ = run(capsys, "record", str(raw), str(rec), "--calib", str(tmp_path / "rig.yml"))
    assert code == 0 and "wrote 2 frames" in out
    assert "scaled its intrinsics by 0.5 to the 320x240 frames" in out
    _, kept = load_calibration(rec / "rig.yml")
    assert kept is not None and kept.image_size == (320, 240)
    _, scaled, _ = load_for_frames(tmp_path / "rig.yml", None, (320, 240))  # as depth fits it
    assert scaled is not None
    rectifier = Rectifier(scaled)
    with open_source(str(raw)) as plain, open_source(str(rec)) as played:
        for a, b in zip(plain, played, strict=True):
            np.testing.assert_array_equal(b.left, rectifier.rectify(a.left, a.right)[0])
            assert b.calibration is not None
            assert b.calibration.focal_px == pytest.approx(rectifier.calibration.focal_px)


def test_a_rectified_pairs_calibration_is_kept_as_the_recordings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "calib.txt").write_text(
        "cam0=[50 0 40; 0 50 24; 0 0 1]\ncam1=[50 0 40; 0 50 24; 0 0 1]\ndoffs=0\n"
        "baseline=120\nwidth=80\nheight=48\nndisp=16\n"
    )
    code, _, _ = run(capsys, "record", SYNTH, str(tmp_path / "rec"), "--calib", str(tmp_path / "calib.txt"))
    assert code == 0 and not (tmp_path / "rec" / "rig.yml").exists()
    with open_source(str(tmp_path / "rec")) as played:
        pair = next(iter(played))
    assert pair.calibration is not None and pair.calibration.baseline_m == pytest.approx(0.12)


def test_a_recording_says_how_far_it_has_come_as_it_runs(tmp_path: Path) -> None:
    """record said nothing for ten minutes while it wrote 15 GB (review): a progress line on a
    terminal each second, a line every half minute into a log."""
    import io

    from app.commands.record import Progress
    from app.engine.sources.recording import Recorder

    class _Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    with Recorder(tmp_path / "rec") as recorder:
        terminal = _Terminal()
        progress = Progress(recorder, terminal)
        assert progress.every == 1.0
        progress.say()
        progress.say()
        assert (
            terminal.getvalue().count("\r") == 2
            and "recording: 0 frames · 0.0 MB · 0:00" in terminal.getvalue()
        )
        progress.stop()  # not started: stops cleanly, and blanks its line for what follows
        assert terminal.getvalue().endswith("\r")
        log = io.StringIO()
        logged = Progress(recorder, log)
        assert logged.every == Progress.LOG_EVERY_S
        logged.say()
        assert log.getvalue() == "recording: 0 frames · 0.0 MB · 0:00\n"


def test_a_recording_of_a_mono_video_says_so_when_it_plays(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Its replay looked like a stereo source: the note that the video is none went unsaid (review)."""
    import cv2

    from app.engine.sources.recording import open_recording
    from tests.engine.sources.test_sources import write_video

    board = cv2.cvtColor(
        cv2.imread(str(Path(__file__).parent / "data" / "opencv_stereo" / "left01.jpg")), cv2.COLOR_BGR2RGB
    )
    video = tmp_path / "mono.avi"
    write_video(video, [board] * 3)  # one camera's frames, split side by side
    rec = tmp_path / "rec"
    code, out, _ = run(capsys, "record", str(video), str(rec), "--frames", "2")
    assert code == 1 and "does not look like a stereo video" in out
    assert "so the pairs recorded are no stereo pairs" in out and "noise" not in out
    with open_recording(rec) as source:
        source.read()
        assert any(
            "does not look like a stereo video" in n and "recording was made from it" in n
            for n in source.notes
        )


def test_depth_over_frames_stopped_says_what_it_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during `depth SOURCE --frames 20` said only "interrupted"; its finished frames' results
    were whole on disk, unsaid (review)."""
    from app.engine.depth import sgbm

    real, calls = sgbm.SGBMEngine.compute, [0]

    def compute(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    out = tmp_path / "out"
    assert run(capsys, "depth", SYNTH, "--frames", "3", "--engine", "sgbm", "--out", str(out))[0] == 0
    monkeypatch.setattr(sgbm.SGBMEngine, "compute", compute)
    code, stdout, err = run(capsys, "depth", SYNTH, "--frames", "4", "--engine", "sgbm", "--out", str(out))
    assert code == 130 and "bi3d-studio: interrupted" in err
    # frame 000002 is the earlier run's: said, not left mixed in unsaid (code review)
    said = f"note: stopped after 2 frame(s); their results in {out} are whole"
    assert f"{said} (1 other frame(s) there are an earlier run's)" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["000000", "000001", "000002"]


def test_each_frame_s_result_names_its_source_and_frame(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A video's result.json named its file alone ("video sbs.avi"), and no frame (review)."""
    from tests.engine.sources.test_sources import demo_views, write_video

    left, right = demo_views()
    write_video(tmp_path / "sbs.avi", [np.concatenate([left, right], axis=1)] * 3)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code, _, _ = run(
        capsys, "depth", "video:sbs.avi?layout=sbs", "--frames", "2", "--engine", "sgbm", "--out", str(out)
    )
    metas = [json.loads((out / f"{i:06d}" / "result.json").read_text()) for i in (0, 1)]
    assert code == 0 and [m["frame"] for m in metas] == [0, 1]
    assert metas[0]["source_spec"] == f"video:{tmp_path / 'sbs.avi'}?layout=sbs"


def test_a_recording_of_a_ros_export_keeps_the_time_its_stamps_count_from(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The names' nanoseconds since 1970 became 0.0, 0.1 s and the start was lost (review)."""
    from app.engine.formats import write_color_png

    start = 1_700_000_000_000_000_000
    rng = np.random.default_rng(0)
    for side in ("left", "right"):
        (tmp_path / "ros" / side).mkdir(parents=True)
        for i in range(2):
            image = rng.integers(0, 255, (40, 60, 3), dtype=np.uint8)
            write_color_png(tmp_path / "ros" / side / f"{start + i * 100_000_000}.png", image)
    code, _, _ = run(capsys, "record", str(tmp_path / "ros"), str(tmp_path / "rec"))
    meta = json.loads((tmp_path / "rec" / "session.json").read_text())
    assert code == 0 and meta["start_time_ns"] == start and "since 1970" in meta["timestamps_from"]


def test_depth_over_frames_checks_every_frame_s_folder_before_writing_any(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A user's disparity.png in the third frame's folder stopped the run there, after it had
    replaced the first two frames' results of an earlier run, and said "nothing was written"
    (review)."""
    out = tmp_path / "out"
    argv = ("depth", SYNTH, "--engine", "sgbm", "--out", str(out))
    assert run(capsys, *argv, "--frames", "2", "--mode", "binary", "--planes", "8")[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "000002").mkdir()
    (out / "000002" / "disparity.png").write_bytes(b"mine")
    code, _, err = run(capsys, *argv, "--frames", "4")
    assert code == 2 and "000002 already holds disparity.png, not written by bi3d-studio" in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.parent.name != "000002"} == before


def test_a_recording_of_frames_without_times_says_its_timestamps_are_frame_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A folder of pairs without times in its names was recorded with timestamps 0, 1, 2 as if
    seconds, unsaid, and played back as "6.00 s" (review)."""
    from app.engine.sources.recording import FRAME_NUMBER_TIMES

    folder = pairs_folder(tmp_path / "pairs", 3)
    assert run(capsys, "record", str(folder), str(tmp_path / "rec"))[0] == 0
    meta = json.loads((tmp_path / "rec" / "session.json").read_text())
    assert meta["timestamps_from"] == FRAME_NUMBER_TIMES
    with open_source(str(tmp_path / "rec")) as played:
        assert not played.has_times and played.frame_count == 3
    for given in (folder, tmp_path / "rec"):  # depth's result.json: no seconds made of their numbers
        assert (
            run(
                capsys, "depth", str(given), "--frames", "2", "--engine", "sgbm", "--out", str(tmp_path / "d")
            )[0]
            == 0
        )
        assert json.loads((tmp_path / "d" / "000001" / "result.json").read_text())["timestamp"] is None
    (tmp_path / "rec" / "timestamps.txt").unlink()  # rebuilt: frame numbers again, not 10 fps seconds
    assert run(capsys, "record", "--reindex", str(tmp_path / "rec"))[0] == 0
    assert (tmp_path / "rec" / "timestamps.txt").read_text().split() == [
        "000000",
        "0.0",
        "000001",
        "1.0",
        "000002",
        "2.0",
    ]
    assert run(capsys, "record", SYNTH, str(tmp_path / "timed"), "--frames", "2")[0] == 0
    assert "timestamps_from" not in json.loads((tmp_path / "timed" / "session.json").read_text())


def test_depth_over_frames_says_the_auto_range_note_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each frame printed its "max disparity auto: ..." note beside its own "searched:" line
    (review): the note is said with the first frame, the range each frame."""
    import cv2

    rng = np.random.default_rng(3)
    for side in ("left", "right"):
        (tmp_path / "pairs" / side).mkdir(parents=True)
    for i, shift in enumerate((4, 12, 24)):  # a nearer scene each frame: another range note each
        image = cv2.resize(rng.integers(0, 255, (24, 40, 3), dtype=np.uint8), (160, 96))
        cv2.imwrite(str(tmp_path / "pairs" / "left" / f"{i:03d}.png"), image)
        cv2.imwrite(str(tmp_path / "pairs" / "right" / f"{i:03d}.png"), np.roll(image, -shift, axis=1))
    argv = ("depth", str(tmp_path / "pairs"), "--frames", "3", "--out", str(tmp_path / "d"))
    code, stdout, _ = run(capsys, *argv)
    assert code == 0 and stdout.count("note: max disparity auto: ") == 1, stdout
    assert stdout.count("searched: ") == 3
