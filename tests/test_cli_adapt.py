"""`bi3d-studio adapt`: end to end, bad input in one line, Ctrl-C keeps the progress."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from app.engine.bi3d.checkpoint import load_model
from tests.cli_helpers import bad, run

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_adapt_writes_a_model_that_loads_as_weights(capsys, footage: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "adapted.pt"
    code, stdout, err = run(
        capsys, "adapt", str(footage), "--out", str(out), "--steps", "2", "--eval-frames", "1"
    )
    assert code == 0, err
    assert "the 1 held-back frame, before -> after:" in stdout
    assert "  frames: " not in stdout  # "frames: 5 -> 5" read as a figure that did not move (review)
    # said once, with the training's whole time (a resumed run gave its own minutes as the whole)
    assert stdout.count(f"wrote {out}") == 1 and "min of training; this run " in stdout
    assert "  dense bad-2 against ground truth (%, lower is better): " in stdout
    report = json.loads((tmp_path / "adapted.json").read_text())
    assert "dense_bad2" in report["report"]["after"]
    _model, info = load_model(out)
    assert info.training["steps"] == 2
    # a finished adaptation is replaced only when asked
    again = ["adapt", str(footage), "--out", str(out), "--steps", "2", "--eval-frames", "1"]
    assert "already exists" in bad(capsys, *again) and load_model(out)[1].training["steps"] == 2
    assert run(capsys, *again, "--overwrite")[0] == 0
    code, _, err = run(
        capsys,
        "depth",
        str(footage / "left" / "000000.png"),
        str(footage / "right" / "000000.png"),
        "--mode",
        "binary",
        "--planes",
        "12",
        "--weights",
        str(out),
        "--out",
        str(tmp_path / "d"),
    )
    assert code == 0, err


def test_bad_inputs_are_one_line(capsys, footage: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pair = f"{footage / 'left' / '000000.png'},{footage / 'right' / '000000.png'}"
    assert "at least 2" in bad(capsys, "adapt", pair, "--out", str(tmp_path / "a.pt"))
    # a refusal takes back the folders --out made (an empty one was left behind)
    assert "at least 2" in bad(capsys, "adapt", pair, "--out", str(tmp_path / "new" / "sub" / "a.pt"))
    assert not (tmp_path / "new").exists()
    (tmp_path / "notes.txt").write_text("a file")
    under_a_file = str(tmp_path / "notes.txt" / "a.pt")
    assert "cannot create the folder" in bad(capsys, "adapt", str(footage), "--out", under_a_file)
    assert "is a folder" in bad(capsys, "adapt", str(footage), "--out", str(tmp_path))
    state = tmp_path / "state.pt"
    torch.save({"step": 1, "optimizer": {"state": {}, "param_groups": []}}, state)
    line = bad(capsys, "adapt", str(footage), "--out", str(tmp_path / "a.pt"), "--weights", str(state))
    assert "training state" in line
    assert "--steps" in bad(capsys, "adapt", str(footage), "--out", str(tmp_path / "a.pt"), "--steps", "0")
    # the report goes beside the checkpoint as NAME.json: a .json --out wrote the report over the
    # checkpoint, and a file of the user's there was replaced unasked (review)
    assert "names the checkpoint" in bad(capsys, "adapt", str(footage), "--out", str(tmp_path / "a.json"))
    (tmp_path / "mine.json").write_text('{"my": "notes"}')
    line = bad(capsys, "adapt", str(footage), "--out", str(tmp_path / "mine.pt"))
    assert "mine.json already exists" in line and (tmp_path / "mine.json").read_text() == '{"my": "notes"}'
    # inside the footage it reads: a recorded frame was replaced by the checkpoint (review)
    frame = footage / "left" / "000003.png"
    before = frame.read_bytes()
    line = bad(capsys, "adapt", str(footage), "--out", str(frame), "--overwrite")
    assert "overlaps the source" in line and frame.read_bytes() == before
    assert "overlaps the source" in bad(capsys, "adapt", str(footage), "--out", str(footage / "a.pt"))
    assert not (footage / "a.pt").exists() and not (footage / "a.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_cleanly_and_the_same_command_resumes(
    footage: Path, tmp_path: Path, kind: signal.Signals
) -> None:
    """Ctrl-C, and SIGTERM alike (a scheduler's, ``kill``'s, ``timeout``'s: it ended the run at
    once, "interrupted", the steps since the last periodic save lost: review)."""
    out = tmp_path / "adapted.pt"
    partial = Path(str(out) + ".partial")
    command = [
        sys.executable,
        "-m",
        "app",
        "adapt",
        str(footage),
        "--out",
        str(out),
        "--steps",
        "100000",
        "--eval-frames",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 240
    while not partial.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)  # the partial checkpoint appears once the report before training is done
    time.sleep(1.0)
    proc.send_signal(kind)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err  # stopped as asked: not an input error (it exited 2)
    last = err.strip().splitlines()[-1]
    assert last.startswith("bi3d-studio adapt: adaptation stopped at step") and "error" not in last
    assert "stopped at step" in last and "run the same adaptation again (same command" in last, err
    assert "Traceback" not in err and partial.is_file() and not out.exists()
    step = torch.load(partial, weights_only=True)["step"]
    resumed = subprocess.run(
        [*command[:-4], "--steps", str(step + 1), "--eval-frames", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    # other --steps: the partial checkpoint belongs to another run and is refused, not overwritten
    assert resumed.returncode == 2 and "other settings" in resumed.stderr
    assert partial.is_file()


def test_a_log_hears_from_a_long_stage(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Outside a terminal it printed one line per stage, then nothing for minutes of training."""
    from app.commands import adapt as command

    clock = [0.0]
    monkeypatch.setattr(command.time, "monotonic", lambda: clock[0])
    bar = command._Bar()
    bar.tty = False
    for step in range(1, 5):
        clock[0] = 20.0 * step
        bar.show("training", step, 4, f"step {step} of 4")
    assert capsys.readouterr().out.splitlines() == ["adapt: step 1 of 4", "adapt: step 3 of 4"]


def test_adapt_on_a_mono_video_says_it_is_no_stereo_video(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import cv2

    from tests.engine.sources.test_sources import write_video

    board = cv2.cvtColor(
        cv2.imread(str(ROOT / "tests" / "data" / "opencv_stereo" / "left01.jpg")), cv2.COLOR_BGR2RGB
    )
    video = tmp_path / "mono.avi"
    write_video(video, [board] * 4)
    # "does not look rectified ... give the rig's calibration", where depth and record say what it is
    line = bad(capsys, "adapt", str(video), "--out", str(tmp_path / "a.pt"), "--frames", "4")
    assert "does not look like a stereo video" in line and "stereo rig's footage only" in line
