"""Recording: lossless round trip, no accidental overwrite, and every completed frame survives a crash."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from app.engine.errors import UserError
from app.engine.sources.recording import Recorder, read_timestamps, record
from app.engine.sources.spec import open_source
from app.engine.types import Calibration, StereoPair

ROOT = Path(__file__).resolve().parents[3]


def pair(i: int, calibration: Calibration | None = None) -> StereoPair:
    rng = np.random.default_rng(i)
    left = rng.integers(0, 256, (8, 12, 3), dtype=np.uint8)
    return StereoPair(left, 255 - left, 0.5 * i + 1 / 3, calibration)


def play(folder: Path) -> list[StereoPair]:
    with open_source(str(folder)) as source:
        return list(source)


def test_record_then_play_back_gives_identical_frames(tmp_path: Path) -> None:
    spec = "synthetic:32x48?frames=5&fps=30"
    with open_source(spec) as source, Recorder(tmp_path / "rec", source=source.describe()) as recorder:
        assert record(source, recorder) == 5
    with open_source(spec) as again:
        originals = list(again)
    with open_source(str(tmp_path / "rec")) as playback:
        assert playback.frame_count == 5 and playback.describe() == "recording rec (5 frames)"
        copies = list(playback)
    for a, b in zip(originals, copies, strict=True):
        np.testing.assert_array_equal(a.left, b.left)
        np.testing.assert_array_equal(a.right, b.right)
        np.testing.assert_array_equal(a.gt_disparity, b.gt_disparity)
        assert a.timestamp == b.timestamp and a.calibration == b.calibration
    meta = json.loads((tmp_path / "rec" / "session.json").read_text())
    assert meta["source"].startswith("synthetic 48 x 32 px") and meta["calibration"]["focal_px"] == 48


def test_record_stops_after_seconds_of_source_time(tmp_path: Path) -> None:
    with open_source("synthetic:16x16?fps=10") as source, Recorder(tmp_path / "r") as recorder:
        assert record(source, recorder, seconds=0.35) == 4  # frames at 0, 0.1, 0.2, 0.3 s
    with open_source("synthetic:16x16?fps=10") as source, Recorder(tmp_path / "f") as recorder:
        assert record(source, recorder, frames=2) == 2


def test_calibration_from_the_first_frame_is_kept(tmp_path: Path) -> None:
    cal = Calibration(700.0, 0.12, 320.0, 240.0)
    with Recorder(tmp_path / "r") as recorder:
        recorder.write(pair(0))
        recorder.write(pair(1, cal))
    assert [p.calibration for p in play(tmp_path / "r")] == [cal, cal]


def test_an_existing_recording_is_not_overwritten_unless_asked(tmp_path: Path) -> None:
    with Recorder(tmp_path / "r") as recorder:
        recorder.write(pair(0))
        recorder.write(pair(1))
    with pytest.raises(UserError, match="already holds a recording"):
        Recorder(tmp_path / "r")
    assert len(play(tmp_path / "r")) == 2
    with Recorder(tmp_path / "r", overwrite=True) as recorder:
        recorder.write(pair(5))
    (again,) = play(tmp_path / "r")
    np.testing.assert_array_equal(again.left, pair(5).left)
    assert not (tmp_path / "r" / "left" / "000001.png").exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not an empty folder"):
        Recorder(tmp_path / "other", overwrite=True)


def test_a_closed_recorder_refuses_frames(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "r")
    recorder.close()
    with pytest.raises(UserError, match="closed"):
        recorder.write(pair(0))


CRASH = """
import os, signal, sys, time
from pathlib import Path
import numpy as np
import app.engine.sources.recording as rec
from app.engine.types import StereoPair

folder, stage = sys.argv[1], sys.argv[2]
written = []
real_png, real_commit = rec.write_color_png, rec.Recorder._commit

def png(path, rgb):
    path = Path(path)
    if stage == "right" and path.parent.name == "right" and path.name == "000003.png":
        # the two images encode at once: frame 3's left image is in place, not its right
        while not (path.parent.parent / "left" / path.name).is_file():
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGKILL)
    real_png(path, rgb)
    written.append(path)

def commit(self, line):
    if line.startswith("000003"):
        if stage == "half-line":  # the timestamp append itself is cut short
            os.write(os.open(self.folder / rec.TIMESTAMPS, os.O_WRONLY | os.O_APPEND), line[:9].encode())
        os.kill(os.getpid(), signal.SIGKILL)
    real_commit(self, line)

rec.write_color_png, rec.Recorder._commit = png, commit
recorder = rec.Recorder(folder)
for i in range(6):
    rng = np.random.default_rng(i)
    left = rng.integers(0, 256, (8, 12, 3), dtype=np.uint8)
    recorder.write(StereoPair(left, 255 - left, 0.5 * i + 1 / 3))
"""


@pytest.mark.parametrize("stage", ["right", "commit", "half-line"])
def test_a_crash_mid_recording_leaves_every_completed_frame(tmp_path: Path, stage: str) -> None:
    folder = tmp_path / "rec"
    script = textwrap.dedent(CRASH)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(folder), stage], cwd=ROOT, capture_output=True, check=False
    )
    assert proc.returncode == -9, proc.stderr.decode()  # killed, not a clean exit
    assert (folder / "left" / "000003.png").is_file()
    assert (folder / "right" / "000003.png").is_file() == (stage != "right")
    frames = play(folder)
    assert len(frames) == 3
    for i, got in enumerate(frames):
        np.testing.assert_array_equal(got.left, pair(i).left)
        np.testing.assert_array_equal(got.right, pair(i).right)
        assert got.timestamp == pair(i).timestamp
    assert [i for i, _ in read_timestamps(folder)] == [0, 1, 2]


def test_a_damaged_timestamp_line_is_reported(tmp_path: Path) -> None:
    with Recorder(tmp_path / "r") as recorder:
        recorder.write(pair(0))
    with (tmp_path / "r" / "timestamps.txt").open("a") as f:
        f.write("garbage\n000001 2.0\n")
    said: list[str] = []
    with open_source(str(tmp_path / "r")) as source:  # one bad line refused the whole recording
        first = next(iter(source))
        said += source.notes
        rest = list(source)
    assert any("line 2 is damaged ('garbage')" in n for n in said)
    assert first is not None and rest == []  # frame 1's files are not on disk: its line cannot play


def test_a_frame_listed_twice_is_reported_and_reindexing_mends_it(tmp_path: Path) -> None:
    """A duplicated index line played its frame twice (review)."""
    from app.engine.sources.recording_index import rebuild_index

    with Recorder(tmp_path / "r") as recorder:
        recorder.write(pair(0))
        recorder.write(pair(1))
    index = tmp_path / "r" / "timestamps.txt"
    lines = index.read_text().splitlines(keepends=True)
    index.write_text(lines[0] + lines[1] + lines[1])
    with open_source(str(tmp_path / "r")) as source:
        assert source.frame_count == 2  # type: ignore[attr-defined]
        next(iter(source))
        assert any(re.search(r"line 3 lists frame 1 again .line 2 did.*--reindex", n) for n in source.notes)
    assert rebuild_index(tmp_path / "r")[0] == 2
    assert len(play(tmp_path / "r")) == 2


def test_timestamps_keep_growing_when_the_source_starts_again(tmp_path: Path) -> None:
    """A looped or sought-back video repeats its media times; the recording's clock goes on."""
    image = np.zeros((4, 6, 3), np.uint8)
    with Recorder(tmp_path / "rec") as recorder:
        for t in (0.0, 0.5, 1.0, 0.0, 0.5, 0.2):  # a loop after 1.0 s, then a seek back
            recorder.write(StereoPair(image, image, t))
    stamps = [t for _, t in read_timestamps(tmp_path / "rec")]
    assert stamps == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
    assert all(b > a for a, b in itertools.pairwise(stamps))


def test_the_recorder_counts_the_bytes_it_wrote(tmp_path: Path) -> None:
    """The window's badge walked the whole folder every second for its size (a second a tick at
    100k files, on the GUI thread); the recorder keeps the count as it writes."""
    cal = Calibration(700.0, 0.12, 320.0, 240.0)
    with Recorder(tmp_path / "r") as recorder:
        assert recorder.bytes_written == sum(p.stat().st_size for p in recorder.folder.rglob("*.*"))
        recorder.write(pair(0))
        recorder.write(StereoPair(pair(1).left, pair(1).right, 1.0, cal, np.ones((8, 12), np.float32)))
        on_disk = sum(p.stat().st_size for p in recorder.folder.rglob("*") if p.is_file())
        assert recorder.bytes_written == on_disk > 0  # the session grew with the calibration


def test_a_write_that_fails_is_a_write_failure_and_the_frame_is_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk on the index's append was a raw OSError (the CLI said it with exit 2, as bad
    input); it is a ``WriteFailed`` naming what to do, and the frame is not counted."""
    import errno

    from app.engine.sources.recording import WriteFailed

    def full(self: Recorder, line: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.folder / "timestamps.txt"))

    with Recorder(tmp_path / "r") as recorder:
        recorder.write(pair(0))
        monkeypatch.setattr(Recorder, "_commit", full)
        with pytest.raises(WriteFailed, match=r"timestamps.txt \(No space left on device\); free space"):
            recorder.write(pair(1))
        assert recorder.frames_written == 1
    assert len(play(tmp_path / "r")) == 1
    # none of the failed frame's files stay unindexed (the next open advised a repair: review)
    assert sorted(p.name for p in (tmp_path / "r" / "left").iterdir()) == ["000000.png"]
    assert sorted(p.name for p in (tmp_path / "r" / "right").iterdir()) == ["000000.png"]


def test_pace_holds_pairs_to_their_timestamps_and_never_catches_up_faster(tmp_path: Path) -> None:
    from app.engine.sources.recording import Pace

    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pace = Pace(clock=lambda: now[0], sleep=sleep)
    for stamp in (0.0, 0.1, 0.2):
        pace.wait(stamp)
    assert slept == pytest.approx([0.1, 0.1])
    now[0] += 0.5  # a slow write: the next pair is late and goes at once
    pace.wait(0.3)
    assert len(slept) == 2
    pace.wait(0.4)  # the one after waits its full interval: no burst to catch up
    assert slept[2:] == pytest.approx([0.1])


def test_record_paced_by_a_synthetic_scenes_rate(tmp_path: Path) -> None:
    from app.engine.sources.recording import Pace

    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with open_source("synthetic:16x16?fps=4&frames=5") as source, Recorder(tmp_path / "r") as recorder:
        assert record(source, recorder, pace=Pace(clock=lambda: now[0], sleep=sleep)) == 5
    assert now[0] == pytest.approx(1.0)  # 5 frames at 4 fps: the last one second after the first


def test_a_recording_inside_another_is_refused(tmp_path: Path) -> None:
    """`record synthetic REC/left` (or REC/sub) nested a recording in another one's folders."""
    with Recorder(tmp_path / "rec") as recorder:
        recorder.write(pair(0))
    for inner in (tmp_path / "rec" / "left" / "new", tmp_path / "rec" / "sub", tmp_path / "rec" / "left"):
        with pytest.raises(UserError, match=f"lies inside the recording {tmp_path / 'rec'}; record into"):
            Recorder(inner)
    assert sorted(p.name for p in (tmp_path / "rec").iterdir() if not p.name.startswith(".")) == [
        "left",
        "right",
        "session.json",
        "timestamps.txt",
    ]
    (tmp_path / "rec" / "session.json").unlink()  # damaged, yet still a recording with frames
    with pytest.raises(UserError, match="lies inside the recording"):
        Recorder(tmp_path / "rec" / "sub")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "timestamps.txt").write_text("a user's notes\n")  # no frames: not a recording
    Recorder(tmp_path / "plain" / "rec").close()


def test_the_progress_counts_one_frame_in_the_singular() -> None:
    """The REC badge read "REC 1 frames · 0.6 MB" (review)."""
    from app.engine.sources.recording import progress_text

    assert progress_text(1, 600_000, 1.0).startswith("1 frame · 0.6 MB")
    assert progress_text(2, 600_000, 1.0).startswith("2 frames · ")
