"""Work actions: calibration panel, snapshot, point cloud, readout."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.depth.engines import EngineOptions
from app.engine.formats import read_image_rgb, read_kitti_png, read_pfm
from app.engine.session import Session
from app.engine.types import Calibration, StereoPair
from app.ui import work
from app.ui.main_window import MainWindow
from app.ui.settings import Settings


class DemoPair:
    frame_count = 1

    def __init__(self, demo_dir: Path) -> None:
        self.pair = StereoPair(
            *(cv2.cvtColor(cv2.imread(str(demo_dir / n)), cv2.COLOR_BGR2RGB) for n in ("im0.png", "im1.png"))
        )

    def read(self) -> StereoPair:
        return self.pair

    def close(self) -> None:
        pass


def _window(qtbot, demo_dir: Path) -> MainWindow:  # type: ignore[no-untyped-def]
    window = MainWindow(
        Session(EngineOptions(engine="sgbm")), Settings(max_disparity=96), lambda s: DemoPair(demo_dir)
    )
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.open_spec("demo")
    return window


def test_calibration_panel_loads_checks_and_draws(qtbot, demo_dir: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, demo_dir)
    panel = window.calibration
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        panel.load(demo_dir / "calib.txt")
    assert "baseline 193.0 mm" in panel.file_label.text()
    assert "\u00a0m)" in window.controls.plane_label.text()  # metres next to pixels, kept on one line
    # a placeholder baseline's depths are in baselines there too (the label said metres)
    window.controls.set_calibration(
        dataclasses.replace(window.controller.last.calibration, baseline_known=False)
    )
    assert (
        "baselines)" in window.controls.plane_label.text()
        and "\u00a0m)" not in window.controls.plane_label.text()
    )
    assert window.controller.last is not None and window.controller.last.calibration is not None
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert "RECTIFIED" in panel.verdict.text() and "matches" in panel.figures.text()
    assert window.left_view.lines.xData is not None and len(window.left_view.lines.xData) > 40
    # a rectified pair's lines are near zero long: ringed to be seen, and their meaning said (1 px
    # yellow dots were lost on a yellow cloth; lines ran below the image: review)
    assert "drawn 10 times longer" in panel.figures.text()
    assert len(window.left_view.line_starts.data) > 20
    h = window.controller.last.pair.left.shape[0]
    window.left_view.show_lines(np.array([[[5.0, h - 20.0], [5.0, h + 400.0]]]))
    assert window.left_view.lines.yData.max() <= h - 1 and len(window.left_view.line_starts.data) == 0


def test_snapshot_and_point_cloud(qtbot, demo_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, demo_dir)
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.calibration.load(demo_dir / "calib.txt")
    last = window.controller.last
    assert last is not None
    window.session.output_root = tmp_path
    folder = window.session.snapshot(last)
    assert folder.parent == tmp_path / "snapshots"
    meta = json.loads((folder / "result.json").read_text())
    assert meta["calibration"]["baseline_m"] == 0.193001 and "stage_timings_ms" in meta
    np.testing.assert_array_equal(read_pfm(folder / "disparity.pfm"), last.depth.disparity)
    assert read_kitti_png(folder / "disparity.png").shape == last.depth.disparity.shape
    # the pair as it was matched, and where it came from: enough to show or redo the answer
    np.testing.assert_array_equal(read_image_rgb(folder / "left.png"), last.pair.left)
    np.testing.assert_array_equal(read_image_rgb(folder / "right.png"), last.pair.right)
    assert "source_time_s" in meta and meta["files"]["sgbm"] is None
    assert meta["engine_reason"] == last.engine_reason != ""  # which engine and weights made it
    window.snapshot()  # the window's: with its source and how it showed the depth
    newest = max((tmp_path / "snapshots").iterdir())
    meta = json.loads((newest / "result.json").read_text())
    assert meta["source"] == window.settings.source and meta["view"]["colormap"] == window.settings.colormap
    assert str(newest) in window.notices.text.text() and window.notices.text.text().endswith(" MB")
    _, count = window.session.export_point_cloud(last, tmp_path / "cloud.ply")
    assert count == int(np.isfinite(last.depth.disparity).sum())
    header = (tmp_path / "cloud.ply").read_bytes()[:600].decode("ascii", "replace")
    assert f"element vertex {count}" in header and "comment units: metres" in header
    points, _ = Session.point_cloud(last)
    assert 1.5 < float(np.median(points[:, 2])) < 4.0  # the motorcycle stands 2-3 m away


def test_the_output_folder_is_chosen_in_the_window_and_kept(
    qtbot, demo_dir: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Errors said "choose another" folder, with no way in the window to choose one; Record had no
    button or key; a point cloud saved as "cloud" had no .ply for a viewer to find."""
    from PySide6.QtGui import QKeySequence

    from app.ui import main_window

    window = _window(qtbot, demo_dir)
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.calibration.load(demo_dir / "calib.txt")
    window.ask_output_folder = lambda: str(tmp_path / "missing")
    window.choose_output_folder()
    assert "cannot write into" in window.notices.text.text() and window.session.output_root != tmp_path
    window.ask_output_folder = lambda: str(tmp_path)
    window.choose_output_folder()
    assert window.session.output_root == tmp_path and window.settings.output_folder == str(tmp_path)
    assert "now go under" in window.notices.text.text()
    window.snapshot()
    assert len(list((tmp_path / "snapshots").iterdir())) == 1
    again = main_window.MainWindow(window.session, window.settings)  # the next start keeps it
    qtbot.addWidget(again)
    assert again.session.output_root == tmp_path
    assert window.record_action.shortcut() == QKeySequence("Ctrl+R")
    assert window.record_action in window.findChild(main_window.QToolBar, "playback").actions()
    offered: list[str] = []
    window.folders.chose(str(demo_dir / "im0.png"))  # the last source's folder: no place for a cloud

    def save(_parent: object, _title: str, start: str, _kinds: str) -> tuple[str, str]:
        offered.append(start)
        return str(tmp_path / "cloud"), ""

    monkeypatch.setattr(main_window.QFileDialog, "getSaveFileName", staticmethod(save))
    window.export_ply()
    assert (tmp_path / "cloud.ply").is_file() and not (tmp_path / "cloud").exists()
    # it started in the last source's folder (a 5.5 MB cloud went into a dataset), and moved it
    assert Path(offered[0]).parent == tmp_path and offered[0].endswith(".ply")
    assert window.settings.last_folder == str(demo_dir)
    hint = main_window._output_folder_hint("cannot create the recording folder X (Read-only); choose another")
    assert hint.endswith("choose another with File > Output folder…")


def test_readout_gives_metres_when_calibrated(qtbot, demo_dir: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, demo_dir)
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.calibration.load(demo_dir / "calib.txt")
    last = window.controller.last
    assert last is not None
    ys, xs = np.nonzero(np.isfinite(last.depth.disparity))
    text = work.readout(last, int(xs[100]), int(ys[100]))
    assert "disparity" in text and "depth" in text and " m" in text


def test_the_depth_title_gives_the_unit_and_what_grey_means() -> None:
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import UNKNOWN_ON_GREY_RGB, DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.zeros((8, 8, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.CONTINUOUS)
    frame = FrameResult(1, 0, StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS), depth)
    assert render(frame, DisplaySpec()).depth_title == "bi3d continuous · disparity in px"
    depth.disparity[2:4, 2:4] = np.nan  # masked: unknown, drawn grey
    assert render(frame, DisplaySpec()).depth_title.endswith("· grey: unknown")
    # the grey colour map's far end is a dark grey too: its unknown pixels are purple (review)
    grey = render(frame, DisplaySpec(colormap="gray"))
    assert grey.depth_title.endswith("· purple: unknown")
    assert tuple(grey.depth_rgb[2, 2]) == UNKNOWN_ON_GREY_RGB
    # selective: nearer and farther than the range in greys of their own (one grey read alike)
    from app.ui import render as render_module

    state = np.zeros((8, 8), np.int8)
    state[0], state[1] = 1, -1
    picked = dataclasses.replace(depth, mode=Mode.SELECTIVE, range_state=state)
    shown = render(dataclasses.replace(frame, depth=picked), DisplaySpec())
    assert tuple(shown.depth_rgb[0, 0]) == render_module.NEARER_RGB
    assert tuple(shown.depth_rgb[1, 0]) == render_module.FARTHER_RGB
    assert tuple(shown.depth_rgb[2, 2]) == render_module.UNKNOWN_RGB
    assert shown.depth_title.endswith("· grey: light nearer, mid farther than the range, dark unknown")
    # continuous asked, quantized answered under the budget: said first (review)
    chosen = {"quantized": 1.0, "budget_ms": 200.0, "cheapest_ms": 340.0}
    levels = dataclasses.replace(
        depth, mode=Mode.QUANTIZED, planes=np.array([10.0, 20.0, 30.0], np.float32), choice=chosen
    )
    title = render(dataclasses.replace(frame, depth=levels), DisplaySpec()).depth_title
    assert title.startswith("budget 200 ms: 3 quantized planes · bi3d quantized")
    # an unrectified pair's depth is marked in its own pane, not only in the error above (review)
    from app.engine.depth.alignment import unrectified_note

    crooked = dataclasses.replace(depth, notes=[unrectified_note(5.1)])
    title = render(dataclasses.replace(frame, depth=crooked), DisplaySpec()).depth_title
    assert title.startswith(f"{render_module.UNRECTIFIED_TITLE} · bi3d continuous")
    # with a calibration the colour bar's ends are given as depths (the title said px alone)
    metric = dataclasses.replace(frame, calibration=Calibration(focal_px=100.0, baseline_m=0.12))
    assert render(metric, DisplaySpec(fixed_max=48.0)).depth_title.startswith(
        "bi3d continuous · disparity in px, depth 0.25-∞ m"
    )
    # binary: which engine first, the plane as a depth, and what the red tint means
    binary = dataclasses.replace(
        empty_result(image, "bi3d", Mode.BINARY), planes=np.array([24.0], np.float32)
    )
    plane = dataclasses.replace(metric, depth=binary, request=DepthRequest(mode=Mode.BINARY))
    title = render(plane, DisplaySpec()).depth_title
    assert title.startswith("bi3d binary · P(disparity > 24 px) (nearer than 0.50 m)")  # as the plane label
    assert title.endswith("nearer: red on the left image")


def test_the_readout_says_an_answer_at_the_search_s_end_is_that_near_or_nearer() -> None:
    """Under a 32 px maximum a bike 51 px away read 'disparity 32.00 px depth 3.04 m' (review)."""
    from app.engine.types import Calibration, DepthRequest, FrameResult, Mode
    from tests.engine.fake_results import empty_result

    image = np.zeros((4, 4, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.CONTINUOUS)
    depth.planes = np.arange(0, 34, 3, dtype=np.float32)  # the sweep: 0, 3, ..., 33 px
    depth.disparity[:] = 20.0
    depth.disparity[0, 0] = 33.0
    calibration = Calibration(focal_px=500.0, baseline_m=0.1)
    frame = FrameResult(
        1, 0, StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS), depth, calibration=calibration
    )
    assert "disparity ≥ 33 px (the search's end)" in work.readout(frame, 0, 0)
    assert "depth ≤ 1.52 m" in work.readout(frame, 0, 0)
    assert "disparity 20.00 px" in work.readout(frame, 1, 1) and "depth 2.50 m" in work.readout(frame, 1, 1)
    # the grid's last plane (33 px) past a 32 px maximum, the answers held to 32: seen in the window
    depth.disparity[0, 0] = 32.0
    held = FrameResult(
        1, 0, StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS, max_disparity=32), depth,
        calibration=calibration,
    )  # fmt: skip
    assert "disparity ≥ 32 px (the search's end)" in work.readout(held, 0, 0)


def test_a_depth_with_no_answer_left_says_so_instead_of_a_span() -> None:
    """At Min confidence 1.00 every pixel was grey under 'depth 5.98-6.18 m' and a 0-1 bar."""
    from app.engine.types import Calibration, DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.zeros((8, 8, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.CONTINUOUS)
    depth.disparity[:] = np.nan
    request = DepthRequest(mode=Mode.CONTINUOUS, min_confidence=1.0)
    frame = FrameResult(1, 0, StereoPair(image, image), request, depth, calibration=Calibration(500.0, 0.1))
    title = render(frame, DisplaySpec()).depth_title
    assert title == "bi3d continuous · no pixel kept an answer (Min confidence 1.00: lower it)"


def test_a_flat_pair_names_its_cause_not_the_confidence_threshold() -> None:
    """A grey pair's title said 'lower Min confidence'; at 0.00 there was still no answer."""
    from app.engine.depth.exposure import flat_pair_note
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.full((8, 8, 3), 128, np.uint8)
    depth = empty_result(image, "bi3d", Mode.CONTINUOUS)
    depth.disparity[:] = np.nan
    note = flat_pair_note(image, image)
    assert note is not None
    depth.notes.insert(0, note)
    frame = FrameResult(1, 0, StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS), depth)
    title = render(frame, DisplaySpec()).depth_title
    assert title == "bi3d continuous · no pixel kept an answer: the pair has no texture (flat)"


def test_the_window_title_names_a_pairs_folder_once() -> None:
    from app.ui.main_window import short_description

    assert short_description("/data/scene/im0.png,/data/scene/im1.png") == "im0.png, im1.png — /data/scene"
    assert short_description("l.png,r.png") == "l.png, r.png"
    assert short_description("/a/l.png,/b/r.png") == "/a/l.png,/b/r.png"  # two folders: both said
    assert short_description("camera:0,1") == "camera:0,1"
    assert short_description("synthetic") == "synthetic"


def test_the_colour_bar_shows_only_beside_an_answer(qtbot) -> None:  # type: ignore[no-untyped-def]
    """An empty pane, and an answer with no pixel kept, showed a 0-96 (or 0-1) px colour bar that
    read as an answer (review)."""
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from app.ui.views import DepthPane
    from tests.engine.fake_results import empty_result

    pane = DepthPane("Depth")
    qtbot.addWidget(pane)
    assert not pane.bar.isVisible()
    image = np.zeros((8, 8, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.CONTINUOUS)
    frame = FrameResult(1, 0, StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS), depth)
    shown = render(frame, DisplaySpec())
    pane.show_rgb(shown.depth_rgb, shown.depth_levels, shown.answered)
    assert shown.answered and pane.bar.isVisible()
    depth.disparity[:] = np.nan
    shown = render(frame, DisplaySpec())
    pane.show_rgb(shown.depth_rgb, shown.depth_levels, shown.answered)
    assert not shown.answered and not pane.bar.isVisible()
    pane.show_rgb(shown.depth_rgb, shown.depth_levels)
    pane.clear_image()
    assert not pane.bar.isVisible()


def test_closing_while_recording_asks_first_and_says_what_was_kept(
    qtbot, demo_dir: Path, tmp_path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """File > Quit while recording closed the window at once, with nothing said (review)."""
    window = _window(qtbot, demo_dir)
    window.session.output_root = tmp_path
    recorder = window.session.start_recording(window.controller.last.pair)
    asked: list[int] = []
    monkeypatch.setattr(window, "ask_stop_recording", lambda r: asked.append(r.frames_written) or False)
    window.close()
    assert asked == [1] and window.isVisible() and window.session.recorder is recorder  # kept recording
    monkeypatch.setattr(window, "ask_stop_recording", lambda r: True)
    window.close()
    assert not window.isVisible() and window.session.recorder is None
    assert f"recording stopped: 1 frame in {recorder.folder}" in capsys.readouterr().out
    assert len(list((recorder.folder / "left").iterdir())) == 1


def test_the_quit_question_counts_the_frames_recorded_while_it_is_asked(
    qtbot, demo_dir: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """It said "10 frames" beside the REC badge's 12, and the folder held 24 (review): it records on."""
    from types import SimpleNamespace

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    from app.ui import main_window

    window = _window(qtbot, demo_dir)
    monkeypatch.setattr(main_window, "REC_BADGE_MS", 50)
    recorder = SimpleNamespace(frames_written=10, folder=Path("/tmp/rec"))
    seen: list[str] = []

    def box() -> QMessageBox:
        return next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible())

    def later() -> None:
        seen.append(box().text())
        recorder.frames_written = 12
        QTimer.singleShot(300, lambda: (seen.append(box().text()), box().buttons()[1].click()))

    QTimer.singleShot(200, later)
    assert window.ask_stop_recording(recorder) is False  # Keep recording
    assert "under way: 10 frames" in seen[0] and "under way: 12 frames" in seen[1]


def test_binary_and_selective_answers_are_scored_by_their_sides_and_read_as_such() -> None:
    """Selective's pixels outside the range, rightly answered there, counted as wrong in the Errors
    tab (84 % bad-2 at 20-40 px); binary mode said "no ground truth" of the demo; hovering read
    "disparity unknown   closer than the range" and SGBM's unanswered strip "P(d > 30 px) nan"
    (review)."""
    from app.engine.session import Session
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.zeros((4, 4, 3), np.uint8)
    gt = np.array([[10.0, 30.0, 50.0, np.nan]] * 4, np.float32)  # farther, inside, closer, unknown
    pair = StereoPair(image, image, gt_disparity=gt)
    state = np.array([[-1, 0, 1, 0]] * 4, np.int8)
    selective = empty_result(image, "bi3d", Mode.SELECTIVE, range_state=state)
    selective.disparity[:] = np.nan
    selective.disparity[:, 1] = 31.0
    request = DepthRequest(mode=Mode.SELECTIVE, range=(20.0, 40.0))
    frame = FrameResult(
        1, 0, pair, request, selective, calibration=Calibration(focal_px=500.0, baseline_m=0.1)
    )
    (truth,) = Session.truth_errors(frame)
    assert truth.side == 1.0 and truth.bad2 == 0.0 and truth.epe == pytest.approx(1.0)
    title = render(frame, DisplaySpec()).errors[0][0]
    assert title.startswith("bi3d: 100.0 % right side of 20-40 px · inside bad-2 0.0 %, EPE 1.00 px")
    assert "closer than the range: disparity above 40 px, closer than 1.25 m" in work.readout(frame, 2, 0)
    assert "farther than the range: disparity below 20 px" in work.readout(frame, 0, 0)
    assert "unknown" not in work.readout(frame, 0, 0)
    # binary: the side of the plane, an unanswered pixel wrong
    binary = empty_result(image, "sgbm", Mode.BINARY)
    binary.planes = np.array([20.0], np.float32)
    binary.probabilities[0] = np.array([[0.0, 1.0, 0.0, 1.0]] * 4, np.float32)  # the third is wrong
    binary.probabilities[0, 0, 0] = np.nan
    plane = FrameResult(1, 0, pair, DepthRequest(mode=Mode.BINARY, planes=(20.0,)), binary)
    (truth,) = Session.truth_errors(plane)
    assert truth.side == pytest.approx(7 / 12)  # 12 pixels with truth: 4 + 4 right, 1 of them unanswered
    assert render(plane, DisplaySpec()).errors[0][0].startswith("sgbm: 58.3 % on the right side of 20 px")
    # right or wrong: no 0-4 px colour bar reads it (review); a selective map's does
    assert render(plane, DisplaySpec()).errors[0][2] is False and render(frame, DisplaySpec()).errors[0][2]
    assert "no answer here" in work.readout(plane, 0, 0) and "nan" not in work.readout(plane, 0, 0)
    # quantized: in the right level or not (dense bad-2 of the levels' middles read 64 % wrong: review)
    levels = empty_result(image, "bi3d", Mode.QUANTIZED)
    levels.planes = np.array([20.0, 40.0], np.float32)  # levels 0-20, 20-40, 40-60 px: middles 10, 30, 50
    levels.disparity[:] = np.array([[10.0, 30.0, 30.0, 50.0]] * 4, np.float32)  # the third: truth 50 px
    levels.disparity[0, 0] = np.nan
    quantized = FrameResult(1, 0, pair, DepthRequest(mode=Mode.QUANTIZED, levels=3, max_disparity=60), levels)
    (truth,) = Session.truth_errors(quantized)
    assert truth.side == pytest.approx(7 / 12) and truth.what == "3 levels"
    assert truth.error[1, 2] == pytest.approx(10.0) and truth.error[1, 0] == 0.0
    title = render(quantized, DisplaySpec()).errors[0][0]
    assert title.startswith("bi3d: 58.3 % in the right level of 3 levels")
    # the nearest level reads "nearer than its plane", open as the farthest is (code review)
    levels.disparity[:, 2] = 45.0
    levels.planes = np.array([20.0, 30.0], np.float32)  # 30-60 px, and the truth's 50 px in it
    quantized = FrameResult(1, 0, pair, DepthRequest(mode=Mode.QUANTIZED, levels=3, max_disparity=40), levels)
    (truth,) = Session.truth_errors(quantized)
    assert truth.error[1, 2] == 0.0  # truth 50 px past the 40 px top: still in the nearest level


def test_a_selective_answer_is_coloured_over_its_range() -> None:
    """A coarse answer under a tight budget set a 20-38 px colour scale, and SGBM beside it, 20-60
    px, went one colour (review)."""
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.zeros((4, 4, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.SELECTIVE, range_state=np.zeros((4, 4), np.int8))
    depth.disparity[:] = np.linspace(20.0, 38.0, 16, dtype=np.float32).reshape(4, 4)
    frame = FrameResult(
        1, 0, StereoPair(image, image), DepthRequest(mode=Mode.SELECTIVE, range=(20, 60)), depth
    )
    assert render(frame, DisplaySpec()).depth_levels == (20.0, 60.0)
    assert render(frame, DisplaySpec(fixed_max=48.0)).depth_levels == (0.0, 48.0)  # a maximum set stands


def test_measuring_says_what_quantized_and_selective_answers_hold() -> None:
    """A quantized level read "disparity 23.33 px depth 3.53 m" where the truth was 3.70 m, and its
    farthest level put a wall of points at 5.37 m in the PLY; a distance to a pixel outside a
    selective range said "has no depth; pick a pixel with a colour"; binary mode's refusals left
    selective out (review)."""
    from app.engine.errors import UserError
    from app.engine.session import Session
    from app.engine.types import DepthRequest, FrameResult, Mode
    from tests.engine.fake_results import empty_result

    image = np.zeros((4, 4, 3), np.uint8)
    calibration = Calibration(focal_px=500.0, baseline_m=0.1)
    depth = empty_result(image, "bi3d", Mode.QUANTIZED)
    depth.planes = np.array([10.0, 20.0, 30.0], np.float32)
    depth.disparity[:] = 25.0  # the middle of the 20-30 px level
    depth.disparity[0] = 5.0  # the farthest level, 0-10 px: to infinity
    frame = FrameResult(
        1, 0, StereoPair(image, image), DepthRequest(mode=Mode.QUANTIZED), depth, calibration=calibration
    )
    assert "disparity 20-30 px (a level)   depth 1.67-2.50 m" in work.readout(frame, 1, 1)
    # levels between whole pixels read to a tenth: "46.6667-56 px" read raw (review)
    from app.engine.validation import tenth

    assert (tenth(46.6667), tenth(56.0), tenth(0.04)) == ("46.7", "56", "0")
    assert "disparity below 10 px (the farthest level)   depth farther than 5.00 m" in work.readout(
        frame, 0, 0
    )
    points, _ = Session.point_cloud(frame)
    assert len(points) == 12  # the farthest level's row is left out
    selective = empty_result(image, "bi3d", Mode.SELECTIVE, range_state=np.zeros((4, 4), np.int8))
    selective.range_state[0, 0] = -1  # type: ignore[index]
    selective.disparity[0, 0] = np.nan
    picked = FrameResult(
        1, 0, StereoPair(image, image), DepthRequest(mode=Mode.SELECTIVE, range=(20, 40)), selective,
        calibration=calibration,
    )  # fmt: skip
    with pytest.raises(UserError, match=r"pixel \(0, 0\) is farther than the range \(farther than 2.50 m\)"):
        Session.distance_m(picked, (0, 0), (2, 2))
    binary = FrameResult(1, 0, StereoPair(image, image), DepthRequest(mode=Mode.BINARY, planes=(9.0,)),
                         empty_result(image, "bi3d", Mode.BINARY), calibration=calibration)  # fmt: skip
    with pytest.raises(UserError, match="choose the quantized, selective or continuous mode"):
        Session.require_metric(binary, "a point cloud")


def test_a_selective_range_holding_nothing_says_so_not_the_confidence_threshold() -> None:
    """Selective 93-141 px on a scene of 84 px read 'no pixel kept an answer (Min confidence 0.10:
    lower it)' over a pane all mid grey (review)."""
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.zeros((8, 8, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.SELECTIVE)
    depth.disparity[:] = np.nan
    depth.range_state = np.full((8, 8), -1, np.int8)
    request = DepthRequest(mode=Mode.SELECTIVE, range=(93.0, 141.0), min_confidence=0.1)
    frame = FrameResult(1, 0, StereoPair(image, image), request, depth)
    title = render(frame, DisplaySpec()).depth_title
    assert title == ("bi3d selective · nothing lies in 93-141 px: the scene is farther (move the range)")
    assert "Min confidence" not in title
    depth.range_state[:] = 1
    assert "the scene is nearer" in render(frame, DisplaySpec()).depth_title


def test_a_one_level_or_flat_answer_is_drawn_mid_scale_under_a_bar_with_numbers() -> None:
    """A quantized answer whose scene lay in one level, or any flat answer, drew one colour (the
    lowest) under a colour bar 1e-3 px wide, without numbers (review)."""
    from app.engine.types import DepthRequest, FrameResult, Mode
    from app.ui.render import DisplaySpec, render
    from tests.engine.fake_results import empty_result

    image = np.zeros((8, 8, 3), np.uint8)
    depth = empty_result(image, "bi3d", Mode.QUANTIZED)
    depth.planes = np.array([21.3, 42.7, 64.0], np.float32)
    request = DepthRequest(mode=Mode.QUANTIZED, levels=4, max_disparity=85)
    frame = FrameResult(1, 0, StereoPair(image, image), request, depth)
    colours = {}
    for level in (10.65, 53.35):  # the nearest level, then every pixel in the 42.7-64 px one
        depth.disparity[:] = level
        shown = render(frame, DisplaySpec())
        assert shown.depth_levels == pytest.approx((10.65, 74.5))  # the nearest and farthest levels
        colours[level] = tuple(shown.depth_rgb[0, 0])
    assert colours[53.35] != colours[10.65]
    flat = empty_result(image, "bi3d", Mode.CONTINUOUS)
    flat.disparity[:] = 30.0
    frame = FrameResult(1, 0, StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS), flat)
    assert render(frame, DisplaySpec()).depth_levels == (29.5, 30.5)
    flat.disparity[:] = 0.2  # no negative disparity on the bar (code review)
    assert render(frame, DisplaySpec()).depth_levels == (0.0, 1.0)


def test_the_budget_s_words_do_not_move_the_controls_below_them_frame_by_frame(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Said in 2 lines, then 6, then 2, the budget's choice moved every control below it each
    frame (review): its label grows, and shrinks only when emptied (a new source)."""
    from app.ui.controls import SteadyLabel

    label = SteadyLabel(lines=2)
    qtbot.addWidget(label)
    label.resize(200, label.minimumHeight())
    label.show()
    floor = label.minimumHeight()
    label.setText("chose 1 quantized plane, took 57 ms; " * 6)
    grown = label.minimumHeight()
    assert grown > floor
    label.setText("chose 3 quantized planes")
    assert label.minimumHeight() == grown
    label.setText("")
    assert label.minimumHeight() == floor
