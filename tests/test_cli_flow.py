"""`bi3d-studio flow` and `bench --flow-backends`: files written, latency reported, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.cli import main
from app.engine.flow.nvof import opencv_has_cuda
from app.engine.formats import read_flo
from tests.cli_helpers import bad as _bad
from tests.cli_helpers import run

SHIFT = (1.5, -0.75)  # px, (u, v)


def _texture(h: int = 96, w: int = 128) -> np.ndarray:
    rng = np.random.default_rng(3)
    return cv2.GaussianBlur(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), (7, 7), 1.5)


def _shifted(image: np.ndarray, u: float, v: float) -> np.ndarray:
    m = np.float32([[1, 0, u], [0, 1, v]])
    size = (image.shape[1], image.shape[0])
    return cv2.warpAffine(image, m, size, flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT)


@pytest.fixture
def frames(tmp_path: Path) -> tuple[Path, Path]:
    first = _texture()
    paths = (tmp_path / "f0.png", tmp_path / "f1.png")
    cv2.imwrite(str(paths[0]), first)
    cv2.imwrite(str(paths[1]), _shifted(first, *SHIFT))
    return paths


def test_pair_writes_flo_and_pictures(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "flow", *map(str, frames), "--backend", "dis", "--out", str(out))
    assert code == 0 and "backend: dis" in stdout and "flow: 128x96" in stdout
    flow = read_flo(out / "flow.flo")
    assert flow.shape == (96, 128, 2)
    inner = flow[12:-12, 12:-12]
    assert np.linalg.norm(inner - np.float32(SHIFT), axis=2).mean() < 0.5
    colour = cv2.imread(str(out / "flow.png"))
    assert colour.shape[0] >= 96 and colour.shape[1] > 128  # the legend sits to the right
    assert cv2.imread(str(out / "flow_arrows.png")).shape == (96, 128, 3)


def test_auto_says_why_it_is_not_using_the_accelerator(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if opencv_has_cuda(cv2):
        pytest.skip("this OpenCV has CUDA")
    code, stdout, _ = run(capsys, "flow", *map(str, frames), "--out", str(tmp_path))
    assert code == 0 and "backend: dis (nvof unavailable: OpenCV" in stdout and "without CUDA" in stdout
    code, stdout, _ = run(capsys, "flow", "--probe")
    assert code == 0 and "nvof: unavailable (no_cuda_build)" in stdout


def test_video_reports_per_frame_latency(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    video = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (128, 96))
    if not writer.isOpened():
        pytest.skip("this OpenCV cannot write MJPG")
    first = _texture()
    for i in range(4):
        writer.write(_shifted(first, 1.0 * i, 0.0))
    writer.release()
    code, stdout, _ = run(capsys, "flow", str(video), "--backend", "farneback", "--out", str(tmp_path / "v"))
    assert code == 0
    assert [line.split(":")[0] for line in stdout.splitlines() if line.startswith("frames ")] == [
        "frames 0-1",
        "frames 1-2",
        "frames 2-3",
    ]
    assert "3 frame pairs on cpu: median" in stdout
    rows = (tmp_path / "v" / "latency.csv").read_text().splitlines()
    assert rows[0] == "from_frame,to_frame,latency_ms" and len(rows) == 4
    code, stdout, _ = run(capsys, "flow", str(video), "--backend", "dis", "--max-frames", "1")
    assert code == 0 and "1 frame pairs" in stdout
    code, stdout, _ = run(capsys, "flow", str(video), "--backend", "dis", "--frames", "2")  # as depth, record
    assert code == 0 and "2 frame pairs" in stdout


def test_a_stereo_video_gives_the_flow_of_its_left_view_and_a_flow_video(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A side-by-side video was timed on its whole frame (both views: flow across the seam), where
    `depth` splits it, and --out wrote only latency.csv."""
    video = tmp_path / "rig.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (512, 192))
    if not writer.isOpened():
        pytest.skip("this OpenCV cannot write MJPG")
    scene = _texture(192, 256)
    for i in range(3):
        left = _shifted(scene, 2.0 * i, 0.0)
        writer.write(np.hstack([left, _shifted(left, -10.0, 0.0)]))
    writer.release()

    def movie_width(out: Path) -> int:
        capture = cv2.VideoCapture(str(out / "flow.avi"))
        ok, picture = capture.read()
        frames = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        capture.release()
        assert ok and frames == 2
        return int(picture.shape[1])

    argv = ["flow", str(video), "--backend", "dis"]
    code, stdout, _ = run(capsys, *argv, "--out", str(tmp_path / "split"))
    assert code == 0 and "looks like a side by side stereo video" in stdout and "its left view" in stdout
    assert "flow.avi (colours: the wheel's rim is" in stdout
    code, stdout, _ = run(capsys, *argv, "--whole-frame", "--out", str(tmp_path / "whole"))
    assert code == 0 and "stereo video" not in stdout
    legend = movie_width(tmp_path / "whole") - 512
    assert legend > 0 and movie_width(tmp_path / "split") == 256 + legend
    # opened as video:PATH?layout=sbs, flow.avi keeps the video's rate too (it was 10 fps: review)
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 15, (512, 192))
    for i in range(3):
        left = _shifted(scene, 2.0 * i, 0.0)
        writer.write(np.hstack([left, _shifted(left, -10.0, 0.0)]))
    writer.release()
    for name, spec in (("path", str(video)), ("spec", f"video:{video}?layout=sbs")):
        assert run(capsys, "flow", spec, "--backend", "dis", "--out", str(tmp_path / name))[0] == 0
        capture = cv2.VideoCapture(str(tmp_path / name / "flow.avi"))
        assert capture.get(cv2.CAP_PROP_FPS) == pytest.approx(15.0), name
        capture.release()


def test_bench_adds_flow_latency_per_backend(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "b.json"
    argv = ["bench", "--engines", "sgbm", "--modes", "binary", "--size", "96x128", "--max-disparity", "32"]
    argv += [
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--json",
        str(path),
        "--flow-backends",
        "dis:ultrafast,farneback,nvof",
    ]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0 and "x sgbm" in stdout and "median" in stdout
    rows = json.loads((tmp_path / "b.flow.json").read_text())
    assert [(r["spec"], r["height"], r["width"]) for r in rows] == [
        ("dis:ultrafast", 96, 128),
        ("farneback", 96, 128),
        ("nvof", 96, 128),
    ]
    assert all(r["median_ms"] > 0 for r in rows[:2])
    nvof_line = next(line for line in stdout.splitlines() if line.startswith("nvof"))
    assert ("unavailable" in nvof_line) == (rows[2]["median_ms"] is None)
    assert isinstance(json.loads(path.read_text()), list)  # the depth records keep their format


# ---- bad input: exit 2, one line on stderr, no traceback -------------------------------------


def test_frames_of_different_sizes(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    small = tmp_path / "small.png"
    cv2.imwrite(str(small), _texture(40, 40))
    line = _bad(capsys, "flow", str(frames[0]), str(small), "--out", str(tmp_path))
    assert "differ in size; give two frames of one camera" in line and "rectified pair" not in line
    # refused before the backend's line, which stood above the error on stdout (review)
    assert main(["flow", str(frames[0]), str(tmp_path / "nope.png"), "--out", str(tmp_path)]) == 2
    assert "backend:" not in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["dis", "farneback"])
def test_frames_too_small_for_flow(capsys, tmp_path: Path, backend: str) -> None:  # type: ignore[no-untyped-def]
    tiny = [tmp_path / "a.png", tmp_path / "b.png"]
    for path in tiny:
        cv2.imwrite(str(path), _texture(8, 8))  # DIS: an OpenCV assertion inside, before
    msg = _bad(capsys, "flow", *map(str, tiny), "--backend", backend, "--out", str(tmp_path / "o"))
    assert "the frames are 8x8 px; flow needs at least 16x16 px" in msg


def test_the_accelerators_flags_are_named_when_the_cpu_runs(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    argv = ["flow", *map(str, frames), "--backend", "dis", "--grid", "4", "--cost", "--out", str(tmp_path)]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0 and "note: --grid 4, --cost apply to nvof only; dis runs without them" in stdout
    assert not (tmp_path / "cost.png").exists()


def test_an_unwritable_output_is_refused_before_the_work(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "is a file" in _bad(capsys, "flow", *map(str, frames), "--out", str(blocker / "sub"))


def test_missing_frame(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert "not found" in _bad(capsys, "flow", str(frames[0]), str(tmp_path / "nope.png"))


def test_wrong_number_of_inputs(capsys, frames) -> None:  # type: ignore[no-untyped-def]
    assert "FRAME0 FRAME1, or one VIDEO or SOURCE" in _bad(capsys, "flow", *map(str, frames), str(frames[0]))
    assert "FRAME0 FRAME1, or one VIDEO or SOURCE" in _bad(capsys, "flow")


def test_preset_of_another_backend(capsys, frames) -> None:  # type: ignore[no-untyped-def]
    assert "farneback has no preset" in _bad(
        capsys, "flow", *map(str, frames), "--backend", "farneback", "--preset", "fast"
    )
    assert "dis has no preset 'slow'" in _bad(
        capsys, "flow", *map(str, frames), "--backend", "dis", "--preset", "slow"
    )


def test_nvof_without_a_cuda_build(capsys, frames) -> None:  # type: ignore[no-untyped-def]
    if opencv_has_cuda(cv2):
        pytest.skip("this OpenCV has CUDA")
    msg = _bad(capsys, "flow", *map(str, frames), "--backend", "nvof")
    assert "nvof is not available" in msg and "--backend dis" in msg


def test_unreadable_video(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = tmp_path / "notes.mp4"
    text.write_text("not a video")
    assert "not a readable video" in _bad(capsys, "flow", str(text))
    assert "not found" in _bad(capsys, "flow", str(tmp_path / "missing.mp4"))
    assert "no stereo pairs in" in _bad(capsys, "flow", str(tmp_path))  # a folder, but not of pairs


def test_latency_over_the_left_view_of_a_stereo_source(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a folder of pairs (as a recording's cameras are kept) and the endless synthetic scene
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (64, 96, 3), np.uint8)
    for side in ("left", "right"):
        (tmp_path / "rig" / side).mkdir(parents=True)
        for i in range(3):
            cv2.imwrite(str(tmp_path / "rig" / side / f"{i:06d}.png"), np.roll(base, 2 * i, axis=1))
    assert main(["flow", str(tmp_path / "rig"), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "2 frame pairs on cpu" in out and (tmp_path / "o" / "latency.csv").read_text().count("\n") == 3
    assert main(["flow", "synthetic:64x96", "--frames", "2"]) == 0
    assert "2 frame pairs" in capsys.readouterr().out
    assert main(["flow", "synthetic:64x96?frames=4"]) == 0  # endless unless told: 100 pairs at most
    printed = capsys.readouterr().out
    assert "timing at most 100 frame pairs" in printed and "3 frame pairs" in printed


def test_a_source_with_a_damaged_frame_gives_no_flow_across_it(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A recording with frame 2 missing gave the flow from frame 1 to 3 as one step, unsaid; an
    output folder inside the source was written into it (depth refuses that)."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (64, 96, 3), np.uint8)
    for side in ("left", "right"):
        (tmp_path / "rig" / side).mkdir(parents=True)
        for i in range(5):
            cv2.imwrite(str(tmp_path / "rig" / side / f"{i:06d}.png"), np.roll(base, 2 * i, axis=1))
    (tmp_path / "rig" / "left" / "000002.png").write_bytes(b"damaged")
    assert main(["flow", str(tmp_path / "rig"), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "no flow from frame 1 to 3: the frames between are missing" in out
    assert "2 frame pairs on cpu" in out  # 0 -> 1 and 3 -> 4
    # latency.csv by the source's numbers (its 1, 2 hid the gap: review)
    rows = (tmp_path / "o" / "latency.csv").read_text().splitlines()
    assert [row.rsplit(",", 1)[0] for row in rows] == ["from_frame,to_frame", "0,1", "3,4"]
    assert main(["flow", str(tmp_path / "rig"), "--out", str(tmp_path / "rig" / "flow")]) == 2
    assert "overlaps" in capsys.readouterr().err and not (tmp_path / "rig" / "flow").exists()


def test_ctrl_c_keeps_the_latencies_timed(capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C during `flow SOURCE --out` kept flow.avi but lost latency.csv."""
    from app.engine.flow import cpu

    real, calls = cpu._CpuFlow.compute, [0]

    def compute(self, previous, current):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 4:
            raise KeyboardInterrupt
        return real(self, previous, current)

    monkeypatch.setattr(cpu._CpuFlow, "compute", compute)
    assert (
        main(["flow", "synthetic:64x96", "--frames", "50", "--backend", "dis", "--out", str(tmp_path / "o")])
        == 130
    )
    rows = (tmp_path / "o" / "latency.csv").read_text().splitlines()
    assert rows[0] == "from_frame,to_frame,latency_ms" and len(rows) == 4
    assert "stopped after 3 frame pair(s)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-magnitude", "0"],
        ["--arrow-step", "1"],
        ["--grid", "3"],
        ["--backend", "raft"],
    ],
)
def test_bad_options_are_usage_errors(capsys, frames, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        main(["flow", *map(str, frames), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "see --help" in err[0]


def test_bench_rejects_an_unknown_flow_backend_before_timing(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--flow-backends", "dis,raft"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "unknown flow backend 'raft'" in err[0]


def _clip(path: Path, frames: int, fps: float) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (128, 96))
    if not writer.isOpened():
        pytest.skip("this OpenCV cannot write MJPG")
    first = _texture()
    for i in range(frames):
        writer.write(_shifted(first, 0.5 * i, 0.0))
    writer.release()


def test_the_flow_video_keeps_the_source_rate_and_a_cut_short_file_is_said(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """flow.avi was always 10 fps, and a video cut short (its header announces 20 frames, 9 were
    readable) ended with exit 0 as if it were whole."""
    video = tmp_path / "clip.avi"
    _clip(video, 20, 25.0)
    code, stdout, _ = run(capsys, "flow", str(video), "--backend", "dis", "--out", str(tmp_path / "whole"))
    assert code == 0 and "cut short" not in stdout
    capture = cv2.VideoCapture(str(tmp_path / "whole" / "flow.avi"))
    assert capture.get(cv2.CAP_PROP_FPS) == pytest.approx(25.0)
    capture.release()
    data = video.read_bytes()
    cut = tmp_path / "cut.avi"
    cut.write_bytes(data[: len(data) // 2])
    code, stdout, _ = run(capsys, "flow", str(cut), "--backend", "dis")
    announced = [line for line in stdout.splitlines() if "looks cut short" in line]
    assert code == 0 and len(announced) == 1 and "of the 20 its header announces" in announced[0]
    code, stdout, _ = run(capsys, "flow", str(cut), "--backend", "dis", "--frames", "2")
    assert code == 0 and "cut short" not in stdout  # stopped by --frames: nothing is known of the end


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_folder_that_cannot_be_made_is_named(capsys, frames) -> None:  # type: ignore[no-untyped-def]
    """It said 'cannot write into /proc (No such file or directory)', as if /proc were missing."""
    msg = _bad(capsys, "flow", *map(str, frames), "--out", "/proc/nope")
    assert "cannot make /proc/nope: /proc takes no new folder" in msg


def test_flow_never_replaces_the_user_s_own_files(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """flow.png and latency.csv of the user's were replaced unsaid (review); an earlier flow run's
    files (its flow.json beside them) are replaced."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "flow.png").write_bytes(b"precious")
    args = ["flow", str(frames[0]), str(frames[1]), "--backend", "dis", "--out", str(mine)]
    assert "already holds flow.png, not written by bi3d-studio (no flow.json" in _bad(capsys, *args)
    assert (mine / "flow.png").read_bytes() == b"precious"
    out = tmp_path / "o"
    for _ in range(2):  # the second run replaces the first's files
        code, _stdout, _ = run(
            capsys, "flow", str(frames[0]), str(frames[1]), "--backend", "dis", "--out", str(out)
        )
        assert code == 0 and json.loads((out / "flow.json").read_text())["backend"] == "dis"


def test_flow_review_a_second_time(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A pair run after a video run in one folder left flow.json naming the pair beside the
    video's latency.csv; flow_arrows.png's scale was said nowhere; an arrow step past the frame
    drew no arrow; two videos were called unreadable images; --probe ignored inputs (review)."""
    video = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (128, 96))
    if not writer.isOpened():
        pytest.skip("this OpenCV cannot write MJPG")
    for i in range(3):
        writer.write(_shifted(_texture(), 1.0 * i, 0.0))
    writer.release()
    out = tmp_path / "mix"
    code, stdout, _ = run(capsys, "flow", str(video), "--backend", "dis", "--out", str(out))
    assert code == 0 and (out / "latency.csv").is_file() and "|flow| median" in stdout
    code, stdout, _ = run(capsys, "flow", *map(str, frames), "--backend", "dis", "--out", str(out))
    assert code == 0 and "note: removed latency.csv, flow.avi of an earlier run" in stdout
    assert not (out / "latency.csv").exists() and (out / "flow.flo").is_file()
    assert "arrows: one every 16 px;" in stdout and "is drawn 14.4 px long" in stdout
    assert "leaves no arrow on 128x96 frames; give at most 191" in _bad(
        capsys, "flow", *map(str, frames), "--backend", "dis", "--arrow-step", "400", "--out", str(out)
    )
    assert "is a video: give one video alone" in _bad(
        capsys, "flow", str(video), str(video), "--out", str(out)
    )
    assert "leave out the inputs" in _bad(capsys, "flow", "--probe", *map(str, frames))


def test_an_nvof_preset_under_auto_runs_dis_at_its_slowest_on_a_cpu(capsys, frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A GPU machine's script (--preset slow) failed here: 'dis has no preset' (review)."""
    if opencv_has_cuda(cv2):
        pytest.skip("this OpenCV has CUDA")
    code, stdout, _ = run(capsys, "flow", *map(str, frames), "--preset", "slow", "--out", str(tmp_path / "o"))
    assert code == 0 and "its preset 'slow' is nvof's: dis runs 'medium', its slowest" in stdout


def test_flow_help_names_every_file_it_writes(capsys) -> None:  # type: ignore[no-untyped-def]
    from app.commands.flow import FLOW_RECORD

    _code, out, _ = run(capsys, "flow", "--help")
    text = " ".join(out.split())
    assert FLOW_RECORD in text  # written by every run, and unnamed (review)
