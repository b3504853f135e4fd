"""What the user sees happen: messages, the source's life cycle, readouts that are true."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSlider

from app.engine.depth.engines import EngineOptions
from app.engine.errors import UserError
from app.engine.session import Session
from app.engine.types import Mode, StereoPair
from app.ui import measure_panel
from app.ui.latency import LatencyPlot
from app.ui.main_window import MainWindow
from app.ui.settings import Settings
from tests.folders import pairs_folder
from tests.ui.conftest import FakeSource, RecordingEngine


def _window(qtbot, opener, engine=None, compare=False) -> MainWindow:  # type: ignore[no-untyped-def]
    session = Session(EngineOptions(engine="sgbm"))
    if engine is not None:
        session.engine = engine
    window = MainWindow(session, Settings(max_disparity=48, range_px=(10.0, 40.0), compare=compare), opener)
    qtbot.addWidget(window)
    window.show()
    return window


def _shown(qtbot, window: MainWindow, timeout: int = 10_000):  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.controller.resultShown, timeout=timeout) as blocker:
        pass
    return blocker.args[0]


def test_a_snapshot_says_where_it_went(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.session.output_root = tmp_path
    window.open_spec("pair")
    _shown(qtbot, window)
    window.snapshot()
    folders = list((tmp_path / "snapshots").iterdir())
    assert len(folders) == 1 and (folders[0] / "result.json").is_file()
    # the depth as drawn on screen too (disparity_color.png has its own colours and black unknowns)
    shown = window.controller.last.display.depth_rgb  # type: ignore[union-attr]
    import cv2

    saved = cv2.cvtColor(cv2.imread(str(folders[0] / "depth_shown.png")), cv2.COLOR_BGR2RGB)
    assert np.array_equal(saved, shown)
    assert window.notices.isVisible() and str(folders[0]) in window.notices.text.text()
    size = sum(p.stat().st_size for p in folders[0].rglob("*") if p.is_file()) / 1e6
    assert window.notices.text.text().endswith(f", {size:.1f} MB")  # its result.npz was unsaid (review)


def test_a_snapshot_keeps_sgbm_beside_it_as_drawn(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """SGBM's saved colour image was coloured from 0 px (orange where the window drew it red); the
    main engine's was saved as drawn (review)."""
    import cv2

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine(), compare=True)
    window.session.set_compare(True)
    window.session.output_root = tmp_path
    window.open_spec("pair")
    last = _shown(qtbot, window)
    assert last.baseline is not None
    window.snapshot()
    (folder,) = (tmp_path / "snapshots").iterdir()
    assert json.loads((folder / "result.json").read_text())["files"]["sgbm_shown"] == "sgbm/depth_shown.png"
    saved = cv2.cvtColor(cv2.imread(str(folder / "sgbm" / "depth_shown.png")), cv2.COLOR_BGR2RGB)
    assert np.array_equal(saved, window.controller.last.display.baseline_rgb)  # type: ignore[union-attr]


def test_errors_stay_until_dismissed_and_news_fades(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.show_error("the camera went away")
    window.show_status("opened something")  # routine news does not push the error away
    assert window.notices.level == "error" and "camera went away" in window.notices.text.text()
    window.notices.dismiss()
    assert not window.notices.isVisible()
    window.show_status("opened something")
    assert window.notices.level == "info"
    qtbot.waitUntil(lambda: not window.notices.isVisible(), timeout=10_000)


def test_a_finished_source_still_answers_the_controls(qtbot) -> None:  # type: ignore[no-untyped-def]
    engine = RecordingEngine()
    window = _window(qtbot, lambda spec: FakeSource(3), engine)
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec("clip")
    assert "ended" in window.notices.text.text()
    seen = len(engine.requests)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controls.mode.setCurrentText("binary")
    assert len(engine.requests) == seen + 1 and blocker.args[0].request.mode is Mode.BINARY


def test_a_new_source_clears_what_came_from_the_old_one(qtbot) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    gate.set()

    class Gated(RecordingEngine):
        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            gate.wait(10)
            return super().compute(left, right, request)

    window = _window(qtbot, lambda spec: FakeSource(1), Gated())
    window.open_spec("first")
    _shown(qtbot, window)
    window.left_view.show_lines(np.array([[[0, 0], [10, 10]]], float))
    window.latency.add({"planes": 5.0})
    # the last source's error scores stood beside the new images while its depth was computed
    window.error_main.set_title("bi3d: bad-2 16.3 %, EPE 2.30 px")
    window.error_base.show_rgb(np.zeros((4, 4, 3), np.uint8), (0.0, 4.0))
    gate.clear()
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=5000):
        window.open_spec("second")
    assert "bad-2" not in window.error_main.title.full_text
    assert window.error_base.image.image is None
    gate.set()
    qtbot.waitUntil(lambda: window.latency.frames == 1, timeout=10_000)
    assert window.left_view.lines.xData is None or len(window.left_view.lines.xData) == 0


def test_a_source_that_opens_takes_away_the_last_failed_opens_error(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A pair of two sizes failed to open; the grey pair opened next but the size error stayed,
    with no "opened" line: it looked as if that one had failed too."""

    def opener(spec: str) -> FakeSource:
        if spec == "bad":
            raise UserError("left 600x480 and right 400x300 differ in size")
        return FakeSource(1)

    window = _window(qtbot, opener, RecordingEngine())
    window.show_error("the disk is full")  # not an open's error: it stays
    window.notices.dismiss()
    window.open_spec("bad")
    qtbot.waitUntil(lambda: "differ in size" in window.notices.text.text(), timeout=5000)
    window.open_spec("good")
    _shown(qtbot, window)
    assert window.notices.level == "info" and "opened good" in window.notices.text.text()


def test_a_new_source_takes_away_the_last_source_s_error_and_saved_files_news_lasts(qtbot) -> None:  # type: ignore[no-untyped-def]
    """vtest.avi's "does not look like a stereo video" stood over the next video's whole run and
    hid its recording's path; a snapshot's path was gone in 3 s (review)."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("mono video")
    _shown(qtbot, window)
    window.show_error("Video vtest.avi does not look like a stereo video")  # as _warn_layout does
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=5000):
        window.open_spec("stereo video")
    assert window.notices.level == "info" and "opened stereo video" in window.notices.text.text()
    window.show_status("snapshot saved in /tmp/x, 1.0 MB", hold=True)
    assert window.notices._timer.interval() >= 20_000  # time to read its path
    window.show_error("the disk is full")  # an error does
    assert window.notices.level == "error"


def test_pause_holds_the_frame_and_step_moves_on(qtbot) -> None:  # type: ignore[no-untyped-def]
    source = FakeSource(1000)
    window = _window(qtbot, lambda spec: source, RecordingEngine())
    window.open_spec("live")
    _shown(qtbot, window)
    # the keys belong to the window, not only to the playback toolbar (which can be hidden)
    assert {window.pause_action, window.step_action} <= set(window.actions())
    window.pause_action.setChecked(True)
    qtbot.wait(200)
    reads = source.reads
    qtbot.wait(300)
    assert source.reads == reads  # nothing pulled while paused
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.mode.setCurrentText("binary")  # the held frame stays live
    assert source.reads == reads
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.step_action.trigger()
    assert source.reads == reads + 1
    window.pause_action.setChecked(False)
    qtbot.waitUntil(lambda: source.reads > reads + 3, timeout=5000)


def test_a_playing_source_shows_each_frame_s_images_with_its_own_depth(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The images of a grabbed frame went up at once while its depth was computed: a playing
    folder showed frame N + 1's left image under frame N's red overlay, beside N's depth and
    counter (review). Only a source's first frame shows its images before its depth."""
    source = FakeSource(1000)
    window = _window(qtbot, lambda spec: source, RecordingEngine())
    early: list[np.ndarray] = []
    real = window.show_pair
    window.show_pair = lambda pair: (early.append(pair.left), real(pair))[1]  # type: ignore[method-assign]
    window.open_spec("live")
    _shown(qtbot, window)
    for _ in range(4):
        result = _shown(qtbot, window)
        np.testing.assert_array_equal(window.left_view.image.image, result.pair.left)
    assert len(early) == 1  # the first frame's, before any depth of the source
    # a step shows its frame at once, without the last depth's overlay (code review)
    window.pause_action.setChecked(True)
    qtbot.wait(200)
    shown = len(early)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.step_action.trigger()
    assert len(early) == shown + 1


def test_hover_reads_the_pane_under_the_mouse_and_follows_new_results(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine(), compare=True)
    window.session.set_compare(True)
    window.open_spec("pair")
    result = _shown(qtbot, window)
    assert result.baseline is not None
    window._hover("baseline", 50, 40)
    assert "sgbm:" in window.readout.text()
    window._hover("depth", 50, 40)
    assert (
        "fake:" in window.readout.text() and f"{result.depth.disparity[40, 50]:.2f}" in window.readout.text()
    )
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controls.mode.setCurrentText("selective")
    assert f"{blocker.args[0].depth.disparity[40, 50]:.2f}" in window.readout.text()  # refreshed


def test_frames_per_second_come_from_frames_shown(qtbot) -> None:  # type: ignore[no-untyped-def]
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    for i in range(5):
        plot.add({"planes": 4000.0 if i == 0 else 20.0})
    plot.streamed.clear()
    plot.streamed.extend([0.0, 4.0, 8.0, 12.0])  # a frame every 4 s
    assert abs(plot.fps() - 0.25) < 1e-9 and "0.25 fps" in plot.rate_text()
    assert plot.y_top() < 100  # the 4-s first frame does not pin the axis
    plot.mark_ended()  # the source ended: the rate was, it is not live
    assert plot.plotItem.titleLabel.text.startswith("source ended · 0.25 fps")
    plot.add({"planes": 30.0, "refine": 12.0}, still=True)  # a held pair answered again after a click
    assert plot.rate_text() == "held frame: answered in 42 ms"  # not the clicks' rate
    # the rate now, not the stream's average: "9.2 fps" beside "0.31x real time" of a 10 fps video
    # after a slower setting (review)
    plot.add({"planes": 20.0})
    plot.streamed.clear()
    plot.streamed.extend([0.1 * i for i in range(100)] + [9.9 + 0.5 * i for i in range(1, 11)])
    assert abs(plot.fps() - 2.0) < 1e-6


def test_a_stream_that_plays_again_counts_its_rate_afresh(qtbot) -> None:  # type: ignore[no-untyped-def]
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    for _ in range(5):
        plot.add({"planes": 20.0})
    plot.streamed.clear()
    plot.streamed.extend([0.0, 0.1, 0.2, 0.3, 0.4])  # 10 fps, then the source ended
    plot.add({"planes": 20.0}, still=True)  # a control changed on the ended source's last frame
    plot.add({"planes": 20.0})  # seeked: playing again, a minute later
    assert plot.rate_text() == "playing again: measuring the rate" and plot.fps() == 0.0
    plot.add({"planes": 20.0})
    assert plot.fps() > 1  # the frames since it played again, not the minute it stood still
    # ended, then played again with Play (no held frame between): the wait counted, 0.34 fps
    # where 2.7 frames a second played (review)
    plot.streamed.clear()
    plot.streamed.extend([0.0, 0.1, 0.2])
    plot.mark_ended()
    plot.add({"planes": 20.0})
    assert plot.rate_text() == "playing again: measuring the rate"
    plot.add({"planes": 20.0})
    assert plot.fps() > 1


def test_a_single_first_frame_sets_the_axis(qtbot) -> None:  # type: ignore[no-untyped-def]
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    plot.add({"planes": 700.0, "refine": 200.0})  # an image pair answered once
    assert plot.y_top() == 1000.0  # the 0-10 ms axis it had drew nothing
    plot.add({"planes": 20.0})
    assert plot.y_top() == 20.0  # from the second frame on, the first no longer pins it


def test_a_still_pair_shows_its_answer_time_not_a_frame_rate(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _shown(qtbot, window)
    assert window.controller.holds_still() and window.latency.still
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.mode.setCurrentText("binary")
    qtbot.waitUntil(lambda: "held frame" in window.latency.rate_text(), timeout=5000)


def test_the_latency_axes_hold_still_while_latency_jitters(qtbot) -> None:  # type: ignore[no-untyped-def]
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    tops = set()
    for i in range(60):
        plot.add({"planes": 40.0 + 3.0 * np.sin(i)})
        if i >= 10:
            tops.add(plot.y_top())
    assert tops == {70.0}  # one step above 1.25 x 43 ms, whatever the jitter
    plot._drawn = 0.0  # redrawn at most every 0.1 s: the next frame redraws
    plot.add({"planes": 43.0})
    assert plot.getViewBox().viewRange()[0] == [-100, 0]  # the newest frame at 0, frames ago to the left
    # the span grew with the frames seen, in steps (ten frames sat in the right thirtieth of 300)
    title = plot.plotItem.titleLabel.text
    assert "planes 4" in title and '<span style="color:' in title and title.endswith(" ms")
    for _ in range(100):
        plot.add({"planes": 400.0})
    assert plot.y_top() == 500.0  # a real change moves it


def test_the_newest_frame_stays_in_view_and_sgbm_s_stages_are_its_own(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A frame's 403 ms planes ran off the 170 ms axis of the frames before; SGBM's matching read
    "features 72 refine 4", stages SGBM has not (review)."""
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    for _ in range(20):
        plot.add({"planes": 100.0})
    plot.add({"planes": 403.0})
    assert plot.y_top() >= 403.0
    plot.add({"features": 72.0, "refine": 4.0}, engine="sgbm")
    assert "match 72" in plot.stage_text() and "readout 4" in plot.stage_text()
    assert "features" not in plot.stage_text()
    plot.add({"features": 9.0, "planes": 20.0}, engine="bi3d")
    assert "features 9" in plot.stage_text()


class _Camera:
    """A live camera whose frames arrive on a capture thread faster than they are read (the engine
    drops some); ``capture(n)`` delivers ``n`` of them to the recording's listeners."""

    live = True

    def __init__(self) -> None:
        self.listeners: list = []  # type: ignore[type-arg]
        self.pair = StereoPair(np.zeros((8, 12, 3), np.uint8), np.zeros((8, 12, 3), np.uint8), 0.0)

    def add_capture_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        self.listeners.append(listener)

    def remove_capture_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        self.listeners.remove(listener)

    def capture(self, n: int) -> None:
        for i in range(n):
            for listener in list(self.listeners):
                listener(StereoPair(self.pair.left, self.pair.right, float(i)))

    def latest(self) -> StereoPair:
        return self.pair

    def read(self) -> StereoPair:
        return self.pair

    def describe(self) -> str:
        return "a camera"

    def close(self) -> None:
        pass


def test_recording_a_camera_keeps_every_captured_frame(tmp_path: Path) -> None:
    session = Session(EngineOptions(engine="sgbm"))
    session.output_root = tmp_path
    camera = _Camera()
    camera.live = False  # written as it arrives (a live one goes through a queue: the test below)
    session.set_source(camera)
    recorder = session.start_recording()
    camera.capture(7)
    session.grab()  # the engine took one of them
    stopped = session.stop_recording()
    assert stopped is recorder and recorder.frames_written == 7 and not camera.listeners
    import json as _json

    meta = _json.loads((recorder.folder / "session.json").read_text())
    assert meta["source"] == "a camera"  # what was recorded, not ""


def test_a_slow_full_answer_is_preceded_by_a_quick_one(qtbot) -> None:  # type: ignore[no-untyped-def]
    import time as _time

    class SlowBi3D(RecordingEngine):
        name = "bi3d"

        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            if request.mode is not Mode.QUANTIZED:
                _time.sleep(0.4)
            return super().compute(left, right, request)

    engine = SlowBi3D()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    shown: list = []  # type: ignore[type-arg]
    quick_flags: list[bool] = []  # what a screenshot run (gui --screenshot) reads to wait for the full one
    window.controller.resultShown.connect(shown.append)
    window.controller.resultShown.connect(lambda _r: quick_flags.append(window.controller.showing_quick))
    window.open_spec("pair")
    qtbot.waitUntil(lambda: len(shown) >= 2, timeout=10_000)
    assert quick_flags[:2] == [True, False]
    quick, full = shown[0], shown[1]
    assert quick.request.mode is Mode.QUANTIZED and quick.display.depth_title.startswith(
        "preview (6 levels), the full answer follows · "
    )
    assert full.request.mode is Mode.CONTINUOUS and "preview" not in full.display.depth_title
    assert window.left_view._shape is not None  # the images were up before the depth


def test_a_preview_whose_full_answer_is_refused_says_so(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Max disparity past the model's reach: the preview showed "the full answer follows" for
    good beside the refusal."""

    class RefusingBi3D(RecordingEngine):
        name = "bi3d"

        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            if request.mode is not Mode.QUANTIZED:
                raise UserError("this model reaches 192 px of disparity, the request asks for 288")
            return super().compute(left, right, request)

    window = _window(qtbot, lambda spec: FakeSource(1), RefusingBi3D())
    window.open_spec("pair")
    qtbot.waitUntil(lambda: window.notices.level == "error", timeout=10_000)
    qtbot.waitUntil(lambda: "refused" in window.depth_view.title.full_text, timeout=10_000)
    title = window.depth_view.title.full_text
    assert title.startswith("preview (6 levels); the full answer was refused") and "follows" not in title


def test_a_region_without_a_calibration_is_measured_in_pixels(qtbot) -> None:  # type: ignore[no-untyped-def]
    """It said "measuring a region needs a calibration" and gave a histogram alone (review)."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    result = _shown(qtbot, window)
    window.measure.tool.setCurrentText("region")
    text = window.measure.figures.text()
    d = float(result.depth.disparity[0, 0])
    assert f"fill rate 100.0 % · median disparity {d:.2f} px · disparity-plane RMS 0.00 px" in text
    assert text.endswith("depths need a calibration")


def test_measuring_distance_region_and_histogram(qtbot, demo_dir: Path) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import Calibration

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.session.set_calibration(Calibration(focal_px=500.0, baseline_m=0.1))
    window.open_spec("pair")
    result = _shown(qtbot, window)
    panel = window.measure
    assert panel.bars.opts["height"].sum() == np.isfinite(result.depth.disparity).sum()
    panel.tool.setCurrentText("distance")
    panel._clicked(10, 10)
    panel._clicked(110, 10)
    # constant disparity d: z = f B / d, 100 px apart at that depth is 100 z / f metres
    z = 500.0 * 0.1 / float(result.depth.disparity[10, 10])
    assert f"distance {100 * z / 500.0:.3f} m" in panel.figures.text()
    panel.tool.setCurrentText("region")
    text = panel.figures.text()
    # in the middle of the image shown, a third of it (it stood 60 x 40 px at the corner: review)
    h, w = result.depth.disparity.shape
    (x, y), (rw, rh) = panel.roi.pos(), panel.roi.size()
    assert abs(x + rw / 2 - w / 2) <= 1 and abs(y + rh / 2 - h / 2) <= 1 and abs(rw - w / 3) <= 1
    assert "fill rate 100.0 %" in text and "plane-fit RMS 0.0 mm" in text and f"{z:.3f} m" in text
    # the histogram is the region's, and says so (the whole frame's stood under its figures: review)
    assert panel.bars.opts["height"].sum() == round(rw) * round(rh)
    assert "in the region" in panel.histogram.getAxis("bottom").labelText
    panel.tool.setCurrentText("off")
    assert panel.bars.opts["height"].sum() == np.isfinite(result.depth.disparity).sum()
    assert "whole frame" in panel.histogram.getAxis("bottom").labelText
    panel.tool.setCurrentText("region")
    # SGBM side by side: the rectangle and the clicks move to the pane that shows the depth
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.compare.setChecked(True)
    assert panel.pane is window.compare_main and measure_panel.on_box(window.compare_main.box, panel.roi)
    assert not measure_panel.on_box(window.depth_view.box, panel.roi)
    panel.tool.setCurrentText("distance")
    window.compare_main.clicked.emit(10, 10)
    window.compare_main.clicked.emit(110, 10)
    z = 500.0 * 0.1 / float(panel.result.depth.disparity[10, 10])  # type: ignore[union-attr]  # the newer answer's
    assert f"distance {100 * z / 500.0:.3f} m" in panel.figures.text()
    # a third click starts a new measurement (it paired with the second: review)
    window.compare_main.clicked.emit(50, 50)
    assert panel.clicks == [(50, 50)] and panel.figures.text() == "click a second pixel"
    # binary mode has no depth: it says so, and the histogram does not keep the last frame's bars
    window.compare_main.clicked.emit(60, 50)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.mode.setCurrentText("binary")
    assert "binary mode" in panel.figures.text() and "calibration" not in panel.figures.text()
    assert len(panel.bars.opts["height"]) == 0
    # a new source: the marks were of the last one's pixels
    at_change: list[tuple[object, str]] = []  # connected after the window's own slot
    window.controller.sourceChanged.connect(lambda _d: at_change.append((panel.clicks, panel.figures.text())))
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=5000):
        window.open_spec("pair")
    assert at_change == [([], measure_panel.HINTS["distance"])]


def test_a_drag_on_the_depth_view_draws_the_measured_rectangle(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Dragging across the bike panned the image, and the rectangle stayed where it was put
    (review): a left drag in region mode draws it; in other modes it pans."""
    from PySide6.QtCore import QPointF, Qt

    from app.engine.types import Calibration

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.session.set_calibration(Calibration(focal_px=500.0, baseline_m=0.1))
    window.open_spec("pair")
    _shown(qtbot, window)
    panel, box = window.measure, window.depth_view.box

    class Drag:  # pyqtgraph's MouseDragEvent, as far as the tool reads it
        def __init__(self, start: tuple[float, float], end: tuple[float, float], stage: str) -> None:
            self.start, self.end, self.stage = start, end, stage

        def button(self):  # type: ignore[no-untyped-def]
            return Qt.MouseButton.LeftButton

        def buttonDownScenePos(self):  # type: ignore[no-untyped-def]
            return box.mapViewToScene(QPointF(*self.start))

        def scenePos(self):  # type: ignore[no-untyped-def]
            return box.mapViewToScene(QPointF(*self.end))

        def isStart(self) -> bool:
            return self.stage == "start"

        def isFinish(self) -> bool:
            return self.stage == "finish"

        def accept(self) -> None:
            pass

    assert box.draw_drag is not None and not box.draw_drag(Drag((5, 5), (20, 20), "start"))  # tool off: pans
    panel.tool.setCurrentText("region")
    for stage, end in (("start", (12.0, 9.0)), ("move", (30.0, 20.0)), ("finish", (50.0, 40.0))):
        box.mouseDragEvent(Drag((10.0, 8.0), end, stage))
    (x, y), (w, h) = panel.roi.pos(), panel.roi.size()
    assert (x, y, w, h) == (10, 8, 40, 32)
    assert "fill rate 100.0 %" in panel.figures.text()


def test_the_measured_rectangle_stays_on_the_image_and_moves_to_a_new_source(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Dragged past the image's edge, the rectangle widened the pane's fit (the image moved under
    the mouse); a new source's rectangle stood at the last one's pixels (review)."""
    from app.engine.types import Calibration

    sizes = {"big": (120, 200), "small": (60, 80)}
    window = _window(qtbot, lambda spec: FakeSource(1, size=sizes[spec]), RecordingEngine())
    window.session.set_calibration(Calibration(focal_px=500.0, baseline_m=0.1))
    window.open_spec("big")
    _shown(qtbot, window)
    panel, box = window.measure, window.depth_view.box
    panel.tool.setCurrentText("region")
    box.updateAutoRange()
    fitted = box.viewRange()
    panel.roi.translate((1000.0, 1000.0))  # as a drag of its body does
    (x, y), (w, h) = panel.roi.pos(), panel.roi.size()
    assert x + w <= 200 and y + h <= 120  # stopped at the image's edges
    box.updateAutoRange()
    assert box.viewRange() == fitted
    window.open_spec("small")
    _shown(qtbot, window)
    (x, y), (w, h) = panel.roi.pos(), panel.roi.size()
    assert (x, y, w, h) == (26, 20, 27, 20)  # the middle third of the new image


def test_the_3d_view_builds_from_depth_and_calibration(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import Calibration
    from app.ui import cloud_view

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _shown(qtbot, window)
    window.extra.setCurrentWidget(window.cloud_view)
    assert "calibration" in window.cloud_view.message.text()  # says what it needs
    assert not window.cloud_view.max_depth.isEnabled()  # it floated live over nothing (review)
    window.session.set_calibration(Calibration(focal_px=500.0, baseline_m=0.1))
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controller.refresh()
    assert window.cloud_view.max_depth.isEnabled()
    cloud = window.cloud_view
    d = float(window.controller.last.depth.disparity[0, 0])  # type: ignore[union-attr]
    assert len(cloud.positions) == 120 * 200 and np.allclose(cloud.positions[:, 1], 500.0 * 0.1 / d)
    assert cloud.message.text().startswith(f"{120 * 200} points nearer than 5.0 m ·")  # not thinned
    if cloud.scatter is not None:  # OpenGL here: points in their own colours, not summed to white
        from pyqtgraph.opengl.GLGraphicsItem import GLOptions

        assert cloud.scatter._GLGraphicsItem__glOpts == GLOptions["opaque"]
    monkeypatch.setattr(cloud_view, "MAX_POINTS", 1000)
    cloud.max_depth.setValue(49)
    assert (
        len(cloud.positions) == 1000
        and f"{120 * 200} points nearer than 4.9 m, 1000 shown" in cloud.message.text()
    )
    cloud.max_depth.setValue(1)  # 0.1 m: nothing that near
    assert len(cloud.positions) == 0 and "0 points" in cloud.message.text()
    # binary mode: no depth, said (it read "0 points nearer than ..."); a new source: its own
    # cloud, aimed afresh, not the last one's under the words that there is none (review)
    cloud.max_depth.setValue(50)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.mode.setCurrentText("binary")
    assert len(cloud.positions) == 0 and "binary mode" in cloud.message.text()
    cloud._aimed = True
    at_change: list[tuple[object, bool, str]] = []  # connected after the window's own slot
    window.controller.sourceChanged.connect(
        lambda _d: at_change.append((cloud.result, cloud._aimed, cloud.message.text()))
    )
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=5000):
        window.open_spec("pair")
    assert at_change == [(None, False, "no depth yet")]


def test_compare_shows_errors_against_ground_truth_linked(qtbot) -> None:  # type: ignore[no-untyped-def]
    class WithTruth(FakeSource):
        def read(self):  # type: ignore[no-untyped-def]
            pair = super().read()
            if pair is None:
                return None
            gt = np.full(pair.left.shape[:2], 6.0, np.float32)
            return StereoPair(pair.left, pair.right, pair.timestamp, None, gt)

    window = _window(qtbot, lambda spec: WithTruth(1), RecordingEngine())
    window.open_spec("pair")
    _shown(qtbot, window)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controls.compare.setChecked(True)  # with ground truth: the errors come to the front
    result = blocker.args[0]
    assert window.extra.currentWidget() is window.compare_tab
    assert window.error_main.isVisible() and window.error_base.isVisible()
    expected = abs(float(result.depth.disparity[0, 0]) - 6.0)
    assert (
        "bad-2 100.0 %, EPE" in window.error_main.title.full_text
        and f"EPE {expected:.2f} px" in window.error_main.title.full_text
    )
    assert window.error_main.title.full_text.index("bad-2") < window.error_main.title.full_text.index(
        "|d - truth|"
    )
    assert "sgbm" in window.error_base.title.full_text
    # the SGBM pane says what it shows (it said "SGBM" alone, beside a preview's banded answer too)
    assert window.baseline_view.title.full_text.startswith("sgbm ")
    assert window.baseline_view.title.full_text.endswith("the colours of the pane beside")
    window.compare_main.box.setRange(
        xRange=(10, 60), yRange=(30, 60), padding=0
    )  # zooming one zooms the others
    window.compare_main.box.sigRangeChangedManually.emit([True, True])  # as the mouse's zoom says
    lo, hi = window.baseline_view.box.viewRange()[0]
    assert (lo + hi) / 2 == pytest.approx(35, abs=0.5) and hi - lo < 100  # same place, zoomed in
    # panes that resize (the message bar, another tab) no longer pass their widened range on: a zoom
    # drifted out to a thumbnail after a snapshot and a tab or two (review)
    widths: dict[str, list[float]] = {"main": [], "baseline": []}
    for _ in range(3):
        for tab in range(window.extra.count()):
            window.extra.setCurrentIndex(tab)
            window.show_error("a message bar above the views")
            qtbot.wait(30)
            window.notices.dismiss()
            qtbot.wait(30)
        for name, pane in (("main", window.compare_main), ("baseline", window.baseline_view)):
            x0, x1 = pane.box.viewRange()[0]
            widths[name].append(x1 - x0)
    for seen in widths.values():  # each pane's zoom held (their aspect ratios may differ), not drifting out
        assert max(seen) < 1.01 * min(seen) and max(seen) < 200, widths
    window.fit_action.trigger()  # View > Fit images (F): the whole image again
    assert all(window.compare_main.box.autoRangeEnabled()) and all(
        window.baseline_view.box.autoRangeEnabled()
    )
    window.extra.setCurrentWidget(window.compare_tab)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.compare.setChecked(False)
    assert 'tick "SGBM side by side"' in window.error_base.title.full_text  # not an empty pane


def test_seeking_a_folder_after_it_ended(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = pairs_folder(tmp_path / "pairs")
    window = _window(qtbot, None, RecordingEngine())
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec(str(folder))
    assert window.seek_bar.isEnabled() and window.seek_bar.maximum() == 4
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controller.seek(2)
    assert blocker.args[0].pair.timestamp == 2.0 and "frame 3 / 5" in window.seek_label.text()
    assert " s" not in window.seek_label.text()  # its frames carry no times: "2.00 s" was made up (review)
    # a click on the groove (a page step) seeks too, not only a drag of the handle
    window.seek_bar.setPageStep(2)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.seek_bar.triggerAction(QSlider.SliderAction.SliderPageStepAdd)
    assert blocker.args[0].pair.timestamp == 4.0 and "frame 5 / 5" in window.seek_label.text()
    # a mouse click lands on the frame under it (it paged, away from the frame aimed at)
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    bar = window.seek_bar
    bar.resize(400, bar.height())
    style = bar.style()
    handle = style.pixelMetric(style.PixelMetric.PM_SliderLength, None, bar)
    x = handle // 2 + round((bar.width() - handle) * 1 / 4)  # the second of five frames
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        QTest.mouseClick(
            bar, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(x, bar.height() // 2)
        )
    assert blocker.args[0].pair.timestamp == 1.0 and "frame 2 / 5" in window.seek_label.text()


def test_play_at_the_end_of_a_folder_starts_it_again(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """At the end the button still read "Pause"; pressed, then Play did nothing, unsaid (review)."""
    folder = pairs_folder(tmp_path / "pairs")
    window = _window(qtbot, None, RecordingEngine())
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec(str(folder))
    assert window.pause_action.text() == "Play" and "Play starts it again" in window.notices.text.text()
    window.step_action.trigger()  # Step has no next frame: it says what does
    assert "the source has ended" in window.notices.text.text()
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.pause_action.trigger()  # Play
    assert blocker.args[0].pair.timestamp == 0.0 and window.pause_action.text() == "Pause"
    assert "Play starts it again" not in window.notices.text.text() or not window.notices.isVisible()
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        pass  # it plays to the end again
    # a seek after the end plays on from there: the button offers Pause again
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controller.seek(2)
    assert window.pause_action.text() == "Pause" and not window.pause_action.isChecked()


def test_a_source_that_cannot_seek_says_so(qtbot) -> None:  # type: ignore[no-untyped-def]
    class Counted(FakeSource):  # numbers its frames, as a source does
        frame_number = -1

        def read(self):  # type: ignore[no-untyped-def]
            self.frame_number += 1
            return super().read()

    window = _window(qtbot, lambda spec: Counted(1000), RecordingEngine())
    window.open_spec("live")
    _shown(qtbot, window)
    assert not window.seek_bar.isEnabled()
    # no end to seek in, but which frame is shown is said (paused and stepped, it said nothing)
    assert window.seek_label.text().strip().startswith("frame ")
    window.controller.seek(3)
    qtbot.waitUntil(lambda: "cannot seek" in window.last_error, timeout=5000)


def test_a_folder_deleted_while_playing_gives_a_message(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil
    import time as _time

    class Slow(RecordingEngine):
        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            _time.sleep(0.05)
            return super().compute(left, right, request)

    folder = pairs_folder(tmp_path / "pairs", 40)
    window = _window(qtbot, None, Slow())
    window.open_spec(str(folder))
    _shown(qtbot, window)
    shutil.rmtree(folder)
    qtbot.waitUntil(lambda: window.last_error != "", timeout=10_000)
    assert window.notices.level == "error"
    window.resize(window.minimumSizeHint())  # the smallest window still lays out
    qtbot.wait(200)
    window.controls.mode.setCurrentText("binary")  # and still answers the controls
    qtbot.waitUntil(
        lambda: window.controller.last is not None and window.controller.last.request.mode is Mode.BINARY,
        timeout=5000,
    )


def _textured_pair(shift: int) -> FakeSource:
    """A still pair of a blurred random texture (corners the swapped-images check can match), the
    right view ``shift`` px to the left: a disparity of ``shift`` everywhere."""
    import cv2

    source = FakeSource(1, size=(240, 320), shift=shift)
    source.left = cv2.GaussianBlur(source.left, (0, 0), 1.5)
    source.right = np.roll(source.left, -shift, axis=1)
    return source


def test_swapped_images_are_called_out_and_the_switch_swaps_them(qtbot) -> None:  # type: ignore[no-untyped-def]
    source = _textured_pair(8)
    source.left, source.right = source.right, source.left  # the cameras the wrong way round
    window = _window(qtbot, lambda spec: source)
    window.open_spec("pair")
    _shown(qtbot, window)
    assert window.notices.level == "error" and "look swapped" in window.notices.text.text()
    window.notices.dismiss()
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000) as blocker:
        window.controls.swap_views.setChecked(True)
    result = blocker.args[0]
    assert window.settings.swap_views and window.session.swap_views
    # the panes show the cameras as they are (a still pair is read once: rows moved by one)
    assert np.array_equal(result.pair.left, np.roll(source.right, 1, axis=0))
    assert np.nanmedian(result.depth.disparity) == pytest.approx(8, abs=0.5)
    assert window.notices.level == "info" and "look swapped" not in window.notices.text.text()
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.controls.swap_views.setChecked(False)  # swapped again: warned again
    qtbot.waitUntil(lambda: "look swapped" in window.notices.text.text(), timeout=10_000)
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.controls.swap_views.setChecked(True)  # and the warning goes with the cause
    assert window.notices.level != "error" and "look swapped" not in window.notices.text.text()
    # another source: its cameras are not the last one's, so the swap does not carry over
    source.left, source.right = source.right, source.left
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=10_000):
        window.open_spec("another pair")
    assert not window.controls.swap_views.isChecked() and not window.session.swap_views
    assert "was for the last source: off" in window.notices.text.text()


def test_one_image_given_twice_is_an_error_while_it_holds(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The depth pane drew a plausible colour map of a pair of one image, and the engine's note
    that both are the same sat cut off in the status bar (review)."""
    same = _textured_pair(8)
    same.right = same.left.copy()
    window = _window(qtbot, lambda spec: same if spec == "same" else _textured_pair(8))
    window.open_spec("same")
    _shown(qtbot, window)
    assert window.notices.level == "error" and "images are identical" in window.notices.text.text()
    window.notes_action.trigger()  # the notes whole, from the View menu (a click on them alone did)
    dialog = window.engine_label.dialog
    assert dialog is not None and dialog.isVisible() and "images are identical" in dialog.text()
    dialog.close()
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=10_000):
        window.open_spec("a real pair")
    _shown(qtbot, window)
    assert "images are identical" not in window.notices.text.text() or not window.notices.isVisible()


def test_a_camera_exposed_darker_is_an_error_while_it_holds(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A right view at 0.4 x the left's read the pot 90 px for 115; the note was one of "4 notes"
    at the end of the status bar (review)."""
    dark = _textured_pair(8)
    dark.right = (dark.right * 0.4).astype(np.uint8)
    window = _window(qtbot, lambda spec: dark if spec == "dark" else _textured_pair(8))
    window.open_spec("dark")
    _shown(qtbot, window)
    assert window.notices.level == "error" and "Exposure: the right image is 2.5 x darker" in (
        window.notices.text.text()
    )
    with qtbot.waitSignal(window.controller.sourceChanged, timeout=10_000):
        window.open_spec("even")
    _shown(qtbot, window)
    assert window.notices.level != "error"


class _UnrectifiedEngine(RecordingEngine):
    """Answers as the engines do for a pair whose rows disagree: with the note that says so."""

    def __init__(self) -> None:
        super().__init__()
        self.unrectified = True

    def compute(self, left, right, request):  # type: ignore[no-untyped-def]
        from app.engine.depth.alignment import unrectified_note

        result = super().compute(left, right, request)
        if self.unrectified:
            result.notes.append(unrectified_note(11.2))
        return result


def test_an_unrectified_pair_is_called_out_until_it_is_rectified(qtbot) -> None:  # type: ignore[no-untyped-def]
    engine = _UnrectifiedEngine()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    window.open_spec("pair")
    _shown(qtbot, window)
    text = window.notices.text.text()
    assert window.notices.level == "error" and "The pair does not look rectified" in text
    assert "Calibration panel" in text and "Self-rectify" in text  # the window's way, not the CLI's
    assert "--calib" not in text and "bi3d-studio" not in text
    engine.unrectified = False  # a calibration loaded: the pair is rectified now
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.controller.refresh()
    assert not window.notices.isVisible() or "rectified" not in window.notices.text.text()


def test_a_video_in_the_other_layout_is_called_out_once_a_source(qtbot) -> None:  # type: ignore[no-untyped-def]
    note = (
        "video rig.avi was opened top-bottom, but its frames look side by side (400 features match "
        "along rows that way, 0 this way), so this depth is noise: open it as video:rig.avi?layout=sbs"
    )
    sources = []

    def opener(spec: str) -> FakeSource:
        source = FakeSource(3)
        source.notes = [note] if spec == "wrong" else []  # type: ignore[attr-defined]
        sources.append(source)
        return source

    window = _window(qtbot, opener, RecordingEngine())
    window.open_spec("wrong")
    _shown(qtbot, window)
    assert window.notices.level == "error"
    assert "Video rig.avi was opened top-bottom" in window.notices.text.text()
    window.notices.dismiss()
    _shown(qtbot, window)  # the next frame of the same source: said once
    assert not window.notices.isVisible() or window.notices.level != "error"
    window.open_spec("right")
    _shown(qtbot, window)
    assert window.notices.level != "error"
    # how a source was opened is said with its name (a video's layout was not)
    opened = FakeSource(3)
    opened.describe = lambda: "video rig.avi (side by side)"  # type: ignore[attr-defined]
    window._open_source = lambda spec: opened
    window.open_spec("rig.avi")
    qtbot.waitUntil(
        lambda: "opened rig.avi: video rig.avi (side by side)" in window.notices.text.text(), timeout=10_000
    )


def test_compared_views_keep_the_whole_image_over_new_sources(qtbot) -> None:  # type: ignore[no-untyped-def]
    # pyqtgraph's own view links halved the images on every File > Open (tabbed, stacked panes)
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine(), compare=True)
    window.session.set_compare(True)
    window.resize(1300, 760)
    spans = []
    for i in range(4):
        window.open_spec("pair")
        _shown(qtbot, window)
        window.show_error("a message bar above the views")  # the panes resize, as on a failed open
        window.resize(1300 - 60 * (i % 2), 760)
        qtbot.wait(50)
        for pane in (window.compare_main, window.baseline_view):
            (x0, x1), (y0, y1) = pane.box.viewRange()
            spans.append((x1 - x0, y1 - y0))
            # the whole 200 x 120 image in view, and not lost in a far wider range
            assert x0 <= 0.5 and x1 >= 199.5 and y0 <= 0.5 and y1 >= 119.5, (x0, x1, y0, y1)
            assert min(x1 - x0 - 200, y1 - y0 - 120) < 1.0  # fitted along one axis at least
    assert max(s[0] for s in spans) < 1.05 * min(s[0] for s in spans) * 3  # no runaway growth


def test_a_new_source_takes_back_the_old_ones_calibration_and_errors(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import Calibration

    class Measured(FakeSource):  # a dataset scene: its calib.txt and ground truth
        def read(self):  # type: ignore[no-untyped-def]
            pair = super().read()
            if pair is None:
                return None
            gt = np.full(pair.left.shape[:2], 6.0, np.float32)
            return StereoPair(pair.left, pair.right, pair.timestamp, Calibration(995.0, 0.193), gt)

    sources = {"dataset": lambda: Measured(1), "plain": lambda: FakeSource(1)}
    window = _window(qtbot, lambda spec: sources[spec](), RecordingEngine(), compare=True)
    window.session.set_compare(True)
    window.open_spec("dataset")
    _shown(qtbot, window)
    qtbot.waitUntil(lambda: window.calibration.file_label.text().startswith("from the source"), timeout=5000)
    assert window.error_main.image.image is not None
    window.open_spec("plain")
    _shown(qtbot, window)
    qtbot.waitUntil(lambda: window.calibration.file_label.text().startswith("none"), timeout=5000)
    assert window.error_main.image.image is None
    assert window.error_main.title.full_text == "no ground truth for this source"


def test_a_recording_ends_with_its_source_and_says_where_it_went(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path
) -> None:
    from app.engine.formats import write_color_png
    from app.engine.sources.recording import read_timestamps
    from app.engine.sources.spec import open_source

    rng = np.random.default_rng(0)
    for side in ("left", "right"):
        (tmp_path / "pairs" / side).mkdir(parents=True)
    for i in range(3):
        left = rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)
        for side, image in (("left", left), ("right", np.roll(left, -4, axis=1))):
            write_color_png(tmp_path / "pairs" / side / f"{i}.png", image)
    window = _window(qtbot, open_source, RecordingEngine())
    window.session.output_root = tmp_path / "out"
    window.open_spec(str(tmp_path / "pairs"))
    _shown(qtbot, window)
    window.loop_action.setChecked(True)
    window.record_action.setChecked(True)
    recorder = window.session.recorder
    assert recorder is not None
    # over Loop, 6 pairs became 194 recorded frames and more, the same ones again (review): the
    # recording ends with the source's last frame, and Loop plays on
    qtbot.waitUntil(lambda: not window.record_action.isChecked(), timeout=20_000)
    assert window.session.recorder is None and 1 <= recorder.frames_written <= 3
    said = window.notices.text.text()
    assert "recording stopped at the end of the source" in said and str(recorder.folder) in said
    assert window.notices._timer.interval() >= 20_000  # time to read where it went (5 s: review)
    stamps = [t for _, t in read_timestamps(recorder.folder)]
    assert all(b > a for a, b in itertools.pairwise(stamps)), stamps
    qtbot.wait(300)
    assert window.loop_action.isChecked() and not window._ended  # the source plays on
    # a recording ended by a change of source says where its frames went
    window.record_action.setChecked(True)
    second = window.session.recorder
    assert second is not None
    window.loop_action.setChecked(False)
    window.open_spec(str(tmp_path / "pairs"))
    qtbot.waitUntil(lambda: not window.record_action.isChecked(), timeout=10_000)
    said = window.notices.text.text()
    assert "recording stopped" in said and str(second.folder) in said


def test_without_loop_the_end_of_a_recorded_source_says_where_the_recording_went(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path
) -> None:
    """The end's news came after the recording's and hid where it went (code review)."""
    source = FakeSource(1000)
    window = _window(qtbot, lambda spec: source, RecordingEngine())
    window.session.output_root = tmp_path / "out"
    window.open_spec("live")
    _shown(qtbot, window)
    window.record_action.setChecked(True)
    recorder = window.session.recorder
    assert recorder is not None
    qtbot.waitUntil(lambda: recorder.frames_written >= 1, timeout=10_000)
    window.controller._stop_pulling()
    window._source_ended()
    said = window.notices.text.text()
    assert not window.record_action.isChecked() and "at the end of the source" in said
    assert str(recorder.folder) in said


def test_hovering_the_right_image_does_not_read_the_left_images_disparity(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _shown(qtbot, window)
    window._hover("right", 10, 20)
    assert window.readout.text().startswith("x 10  y 20   right image") and "px" not in window.readout.text()
    window._hover("left", 10, 20)
    assert "disparity" in window.readout.text()
    assert window.flow_view.title.full_text.startswith("Optical flow is off")  # not a silent black pane
    window.controls.flow.setCurrentText("dis")  # the held pair is not answered again: the title follows
    assert window.flow_view.title.full_text.startswith("Optical flow needs a moving source")


def test_another_flow_method_on_an_ended_source_computes_its_flow_again(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The last method's image stayed under the new method's title on an ended video (review)."""
    window = _window(qtbot, lambda spec: FakeSource(3), RecordingEngine())
    window.controls.flow.setCurrentText("farneback")
    window.open_spec("clip")
    qtbot.waitUntil(lambda: window._ended, timeout=10_000)
    assert window.controller.last is not None and window.controller.last.flow is not None
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000) as shown:
        window.controls.flow.setCurrentText("dis")
    redone = shown.args[0]
    assert redone.flow is not None and window.session.flow is not None
    # off, then on again at the end: the frame before is kept with flow off too (it said "no
    # previous frame to compare this one with": review); off answers again without a flow time
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000) as shown:
        window.controls.flow.setCurrentText("off")
    assert shown.args[0].flow is None and shown.args[0].timings["flow"] < 0.5
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000) as shown:
        window.controls.flow.setCurrentText("farneback")
    assert shown.args[0].flow is not None


def test_the_seek_label_counts_time_from_the_recordings_first_frame(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.cli import main

    rec = tmp_path / "rec"
    assert main(["record", "synthetic:48x64?frames=5", str(rec)]) == 0
    stamps = rec / "timestamps.txt"  # a camera's clock: the first frame at 23.8 s
    lines = [line.split() for line in stamps.read_text().splitlines()]
    stamps.write_text("".join(f"{i} {float(t) + 23.8!r}\n" for i, t in lines))
    window = _window(qtbot, None, RecordingEngine())
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec(str(rec))
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controller.seek(2)
    assert "frame 3 / 5 · 0.20 s" in window.seek_label.text()


def test_a_full_disk_stops_the_recording_not_the_source(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk filling while recording read 'the source stopped: the disk is full', stopped the
    live view and left Record checked; the recording is what stops, saying what it kept."""
    from app.engine.sources import recording

    real_write = recording.Recorder.write

    def write(self, pair):  # type: ignore[no-untyped-def]
        if self.frames_written >= 2:
            raise UserError(f"the disk is full: could not write {self.folder}/left/000002.png; free space")
        return real_write(self, pair)

    monkeypatch.setattr(recording.Recorder, "write", write)
    window = _window(qtbot, lambda spec: FakeSource(400), RecordingEngine())
    window.session.output_root = tmp_path
    window.open_spec("video")
    _shown(qtbot, window)
    window.record_action.setChecked(True)
    recorder = window.session.recorder
    assert recorder is not None
    qtbot.waitUntil(lambda: not window.record_action.isChecked(), timeout=10_000)
    text = window.notices.text.text()
    assert text.startswith("Error: recording stopped: the disk is full") and "keeps the 2 frames" in text
    assert "source stopped" not in text and recorder.frames_written == 2
    _shown(qtbot, window)  # the source plays on
    with recording.open_recording(recorder.folder) as played:
        assert sum(1 for _ in played) == 2


def test_a_recording_stopped_before_any_frame_leaves_no_folder(qtbot, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Record pressed after a video ended left an empty recording in the recordings folder."""
    window = _window(qtbot, lambda spec: FakeSource(1000), RecordingEngine())
    window.session.output_root = tmp_path
    window.open_spec("video")
    _shown(qtbot, window)
    window.pause_action.setChecked(True)  # nothing comes while paused
    monkeypatch.setattr(window.controller, "showing_held_frame", lambda: None)  # none on screen either
    window.record_action.setChecked(True)
    recorder = window.session.recorder
    assert recorder is not None and recorder.folder.is_dir()
    window.record_action.setChecked(False)
    assert not recorder.folder.exists()
    assert window.notices.text.text() == "recording stopped before any frame came: nothing was recorded"


def test_recording_from_a_paused_frame_starts_with_that_frame(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Record pressed on a video paused at its first frame, then Play: the recording began at the
    second frame (review)."""
    window = _window(qtbot, lambda spec: FakeSource(1000), RecordingEngine())
    window.session.output_root = tmp_path
    window.open_spec("video")
    _shown(qtbot, window)
    window.pause_action.setChecked(True)
    shown = window.controller.last
    assert shown is not None
    window.record_action.setChecked(True)
    recorder = window.session.recorder
    window.record_action.setChecked(False)
    assert recorder is not None and recorder.frames_written == 1
    import cv2

    first = sorted((recorder.folder / "left").iterdir())[0]
    written = cv2.cvtColor(cv2.imread(str(first)), cv2.COLOR_BGR2RGB)
    assert np.array_equal(written, (shown.raw or shown.pair).left)


def test_a_live_cameras_recording_queues_its_frames_and_counts_the_ones_it_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The capture thread wrote each pair itself: a camera whose frames came faster than the disk
    took them was held up, and its driver dropped frames unsaid. Now they queue to a writer thread;
    those that find the queue full are counted."""
    import threading
    import time as _time

    from app.engine import session as session_module
    from app.engine.sources import recording

    real_write = recording.Recorder.write

    def slow_write(self, pair):  # type: ignore[no-untyped-def]
        _time.sleep(0.01)
        return real_write(self, pair)

    monkeypatch.setattr(recording.Recorder, "write", slow_write)
    pair_bytes = 2 * 8 * 12 * 3
    monkeypatch.setattr(session_module, "LIVE_QUEUE_BYTES", 10 * pair_bytes)

    session = Session(EngineOptions(engine="sgbm"))
    session.output_root = tmp_path
    camera = _Camera()
    session.set_source(camera)
    recorder = session.start_recording()
    t0 = _time.perf_counter()
    camera.capture(60)
    took = _time.perf_counter() - t0
    assert took < 0.3  # 60 pairs offered without waiting on 60 x 10 ms of writing
    stopped = session.stop_recording()
    writer = session.stopped_writer
    assert stopped is recorder and writer is not None and writer.recorder is recorder
    assert writer.captured == 60 and writer.dropped > 0
    deadline = _time.monotonic() + 10
    while recorder.frames_written < 60 - writer.dropped and _time.monotonic() < deadline:
        _time.sleep(0.01)
    assert recorder.frames_written == 60 - writer.dropped and not camera.listeners
    while (
        any(t.name.startswith("bi3d-record") for t in threading.enumerate()) and _time.monotonic() < deadline
    ):
        _time.sleep(0.01)
    assert not [t for t in threading.enumerate() if t.name == "bi3d-record"]  # the writer ended
    note = session_module.dropped_note(writer, "the camera")
    assert note.startswith(f"{writer.dropped} of the 60 frames the camera delivered were dropped")


def test_a_video_cut_short_is_said_when_it_ends(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A truncated video played its first half and ended as if whole (review)."""
    from tests.engine.sources.test_sources import write_video

    rng = np.random.default_rng(3)
    whole = tmp_path / "whole.avi"
    write_video(whole, [rng.integers(0, 255, (32, 96, 3), dtype=np.uint8) for _ in range(40)])
    data = whole.read_bytes()
    cut = tmp_path / "cut.avi"
    cut.write_bytes(data[: len(data) // 2])
    window = _window(qtbot, None, RecordingEngine())
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=20_000):
        window.open_spec(f"video:{cut}?layout=sbs")
    assert window.notices.level == "error" and "looks cut short" in window.last_error


def test_a_focused_control_keeps_its_own_keys_from_the_playback_shortcuts(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Right (Step) kept a focused slider from moving right, and Space (Pause) paused the source
    instead of ticking the focused checkbox (review at 1920 x 1080)."""
    from PySide6.QtCore import Qt

    window = _window(qtbot, lambda spec: FakeSource(5))
    window.open_spec("pair")
    _shown(qtbot, window)
    qtbot.waitExposed(window)
    window.activateWindow()
    steps: list[bool] = []
    window.step_action.triggered.connect(lambda *_: steps.append(True))
    slider = window.controls.min_confidence
    slider.setFocus()
    qtbot.waitUntil(slider.hasFocus, timeout=5_000)
    before = slider.value()
    qtbot.keyClick(slider, Qt.Key.Key_Right)
    assert slider.value() == before + slider.singleStep() and not steps
    swap = window.controls.swap_views
    swap.setFocus()
    qtbot.waitUntil(swap.hasFocus, timeout=5_000)
    paused = window.pause_action.isChecked()
    qtbot.keyClick(swap, Qt.Key.Key_Space)
    assert swap.isChecked() and window.pause_action.isChecked() == paused
    window.left_view.setFocus()  # an image: the keys are the window's
    qtbot.keyClick(window.left_view, Qt.Key.Key_Space)
    assert window.pause_action.isChecked() != paused
    # the selective range is reached with Tab too, and keeps Left and Right (re-check)
    window.controls.mode.setCurrentText("selective")
    rng_slider = window.controls.range
    assert rng_slider.focusPolicy() & Qt.FocusPolicy.TabFocus
    rng_slider.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(rng_slider.hasFocus, timeout=5_000)
    low, high = rng_slider.values()
    paused = window.pause_action.isChecked()
    qtbot.keyClick(rng_slider, Qt.Key.Key_Right)
    assert rng_slider.values() == (low + 1, high + 1) and window.pause_action.isChecked() == paused
    # a list chosen with the mouse keeps the focus, not Space: it opened the Mode list (review); the
    # focus back after a dialog or another window is still the mouse's (code review); brought there
    # by the keyboard, Space is the list's
    mode = window.controls.mode
    for reason, pauses in (
        (Qt.FocusReason.MouseFocusReason, True),
        (Qt.FocusReason.ActiveWindowFocusReason, True),
        (Qt.FocusReason.TabFocusReason, False),
    ):
        mode.clearFocus()
        mode.setFocus(reason)
        qtbot.waitUntil(mode.hasFocus, timeout=5_000)
        paused = window.pause_action.isChecked()
        qtbot.keyClick(mode, Qt.Key.Key_Space)
        assert (window.pause_action.isChecked() != paused) == pauses, reason


def test_record_on_a_still_pair_or_an_ended_source_says_there_is_nothing_to_record(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path
) -> None:
    """On the demo pair Record said "recording every captured frame", showed "REC 0 frames" and
    ended with "nothing was recorded"."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.session.output_root = tmp_path
    window.open_spec("pair")
    _shown(qtbot, window)
    window.record_action.setChecked(True)
    assert not window.record_action.isChecked() and window.session.recorder is None
    assert window.notices.level == "info" and "Snapshot (Ctrl+S)" in window.notices.text.text()
    assert not (tmp_path / "recordings").exists()
    window.notices.dismiss()
    window = _window(qtbot, lambda spec: FakeSource(3), RecordingEngine())
    window.session.output_root = tmp_path
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec("clip")
    window.record_action.setChecked(True)
    assert not window.record_action.isChecked() and "the source has ended" in window.notices.text.text()


def test_the_status_bars_notes_are_all_readable(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The engine's notes ran past the status bar at any width ("(scene reache…" at 1920 px)."""
    from app.ui.notices import NotesLabel

    label = NotesLabel(300)
    qtbot.addWidget(label)
    label.show()
    notes = ["max disparity auto: 0-96 px (scene reaches about 73 px)", "runtime torch: auto: from the cache"]
    label.show_notes("bi3d · torch · cpu · fp32", notes)
    assert label.text().startswith("bi3d · torch · cpu · fp32 · 2 notes: max")
    assert label.text().endswith("…") and label.toolTip().splitlines()[1:3] == notes
    qtbot.mouseClick(label, Qt.MouseButton.LeftButton)
    assert label.dialog is not None and label.dialog.isVisible() and not label.dialog.isModal()
    assert all(note in label.dialog.text() for note in notes)
    label.show_notes("sgbm · opencv · cpu · fp32", [])  # a frame without notes: nothing to open
    assert label.text() == "sgbm · opencv · cpu · fp32" and "click" not in label.toolTip()
    label.dialog.close()


def test_clear_with_only_the_sources_calibration_is_greyed(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Calibration > Clear on the demo did nothing, silently (its calib.txt comes with the source);
    then it said so; now it is greyed while nothing of one's own is in use (review)."""
    from app.engine.types import Calibration

    class Measured(FakeSource):
        def read(self):  # type: ignore[no-untyped-def]
            pair = super().read()
            return (
                None
                if pair is None
                else StereoPair(pair.left, pair.right, pair.timestamp, Calibration(995.0, 0.193))
            )

    window = _window(qtbot, lambda spec: Measured(1), RecordingEngine())
    window.open_spec("scene")
    _shown(qtbot, window)
    assert not window.calibration.clear_button.isEnabled()
    assert window.calibration.file_label.text().startswith("from the source")
    window.calibration.apply(Calibration(500.0, 0.1), None, "typed")
    assert window.calibration.clear_button.isEnabled()
    window.calibration.clear_button.click()
    assert not window.calibration.clear_button.isEnabled()


def test_a_new_source_does_not_show_the_last_one_s_depth(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The last scene's depth stood under its own title for seconds beside the new images (review)."""
    from app.ui.main_window import NEW_SOURCE_DEPTH

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _shown(qtbot, window)
    assert window.depth_view.image.image is not None
    window._source_changed("another")
    assert window.depth_view.image.image is None and window.depth_view.title.full_text == NEW_SOURCE_DEPTH
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        window.controller.refresh()
    assert window.depth_view.image.image is not None and window.depth_view.title.full_text != NEW_SOURCE_DEPTH


def test_how_flow_is_drawn_is_greyed_while_flow_is_off(qtbot) -> None:  # type: ignore[no-untyped-def]
    """ "Flow shown as" and "Max flow" stood enabled with Optical flow off (review)."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    c = window.controls
    assert c.flow.currentText() == "off"
    assert not c.flow_view.isEnabled() and not c.flow_max.isEnabled()
    c.flow.setCurrentText("dis")
    assert c.flow_view.isEnabled() and c.flow_max.isEnabled()


def test_cuda_is_greyed_where_there_is_none(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Device offered "cuda" on a machine without CUDA; picking it gave an error (review)."""
    from app.engine.session import Session

    monkeypatch.setattr(Session, "cuda_available", staticmethod(lambda: False))
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    combo = window.controls.engine_controls["device"]
    item = combo.model().item(combo.findText("cuda"))
    assert not item.isEnabled() and "no CUDA device" in item.toolTip()


def test_a_notice_does_not_move_the_images(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Every image pane jumped 30-40 px down and back when a message came and went (review): the
    bar lies over the tabs below the images, at their bottom (at their top it hid the 3D view's
    Max depth slider and the Errors tab's bad-2 and EPE: review)."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    qtbot.wait(50)
    before = (window.left_view.geometry(), window.depth_view.geometry())
    window.show_error("a long message " * 20)
    qtbot.wait(50)
    assert (window.left_view.geometry(), window.depth_view.geometry()) == before
    from PySide6.QtCore import QPoint

    bar = window.notices.geometry()
    extra = window.extra
    below_tab_bar = extra.mapTo(window.centralWidget(), QPoint(0, 0)).y() + extra.tabBar().height()
    tabs_bottom = extra.mapTo(window.centralWidget(), extra.rect().bottomLeft()).y()
    assert bar.top() == max(below_tab_bar, tabs_bottom + 1 - bar.height())  # no lower than the tabs
    assert window.notices.isVisible() and bar.height() >= window.notices.text.fontMetrics().lineSpacing() * 2


def test_playback_slower_than_real_time_is_said_on_the_seek_bar(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A video played at the depth's pace ran at a third of its speed, and nothing said so (review)."""
    import time as clock

    from app.engine.sources.recording import Recorder
    from app.engine.types import StereoPair

    class Slow(RecordingEngine):
        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            clock.sleep(0.1)  # 10 frames a second of a 30 fps recording
            return super().compute(left, right, request)

    image = np.random.default_rng(0).integers(0, 255, (60, 80, 3), dtype=np.uint8)
    with Recorder(tmp_path / "rec") as recorder:
        for i in range(30):
            recorder.write(StereoPair(image, np.roll(image, -4, axis=1), i / 30))
    window = _window(qtbot, None, Slow())
    window.open_spec(str(tmp_path / "rec"))
    qtbot.waitUntil(lambda: "real time" in window.seek_label.text(), timeout=10_000)
    speed = float(window.seek_label.text().split(" · ")[-1].split("x")[0])
    assert 0.1 < speed < 0.6


def test_step_while_a_file_plays_pauses_it(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Step (or Right) while a recording played did nothing, and playback went on (review)."""
    folder = pairs_folder(tmp_path / "pairs", count=40)
    window = _window(qtbot, None, RecordingEngine())
    window.open_spec(str(folder))
    _shown(qtbot, window)
    assert not window.pause_action.isChecked()
    window.step_action.trigger()
    assert window.pause_action.isChecked() and window.pause_action.text() == "Play"


def test_a_recording_whose_index_hides_frames_says_so_in_the_banner(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The CLI said that frames after an index cut short are not played; the window said it in
    the first frame's notes only, which went by unseen (review)."""
    from app.cli import main

    rec = tmp_path / "rec"
    assert main(["record", "synthetic:48x64?frames=6", str(rec)]) == 0
    stamps = rec / "timestamps.txt"
    stamps.write_text("".join(stamps.read_text().splitlines(True)[:3]))
    window = _window(qtbot, None, RecordingEngine())
    window.open_spec(str(rec))
    qtbot.waitUntil(lambda: "record --reindex" in window.notices.text.text(), timeout=10_000)
    assert window.notices.level == "error" and "3 frame pairs on disk after" in window.notices.text.text()


def test_the_errors_beside_say_sgbm_is_the_main_engine(qtbot) -> None:  # type: ignore[no-untyped-def]
    """With SGBM side by side ticked and SGBM as the engine, the pane read "SGBM's errors:
    computing…" for good (review)."""
    from app.ui.render import DisplaySpec, Rendered

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.settings.compare = True
    shown = Rendered(DisplaySpec(), np.zeros((4, 4, 3), np.uint8), (0.0, 1.0), "sgbm continuous", None)
    shown.errors = [("sgbm: bad-2 20.0 %", np.zeros((4, 4, 3), np.uint8), True)]
    window._show_errors(shown, sgbm_main=True)
    assert window.error_base.title.full_text.startswith("SGBM is the main engine")
    window._show_errors(shown)
    assert window.error_base.title.full_text == "SGBM's errors: computing…"


def test_the_latency_axis_says_its_unit_in_its_ticks(qtbot) -> None:  # type: ignore[no-untyped-def]
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    axis = plot.getAxis("bottom")
    # bare "-9 .. -1" under the plot named no unit (its tooltip alone did: review); the unit goes
    # on the leftmost major tick inside the plot (at its edge a label is hidden), minor ticks read
    # their own values ("9 8 8 8 7" was 9, 8.5, 8, 7.5, 7 rounded)
    levels = axis.tickValues(-100.0, 0.0, 900)
    major, minor = levels[0][0], levels[1][0]
    assert axis.tickStrings([-100.0, -80.0, -60.0, 0.0], 1.0, major) == ["100", "80 frames ago", "60", "now"]
    assert axis.tickStrings([-9.5, -8.5], 1.0, minor) == ["9.5", "8.5"]
    # a dense axis: the minor labels beside the long one are left out ("2 25 frames ag24": review)
    (major, majors), (minor, minors) = axis.tickValues(-30.0, 0.0, 300)[:2]
    named = axis.tickStrings(list(majors), 1.0, major)
    (where,) = [v for v, text in zip(majors, named, strict=True) if text.endswith("frames ago")]
    minor_texts = dict(zip(minors, axis.tickStrings(list(minors), 1.0, minor), strict=True))
    assert minor_texts[where - minor] == "" and minor_texts[where + minor] == ""
    assert any(text for v, text in minor_texts.items() if abs(v - where) > major)


def test_a_short_latency_plot_labels_one_tick(qtbot) -> None:  # type: ignore[no-untyped-def]
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    axis = plot.getAxis("left")
    # 20 px of height drew "200" over "100" (review): one label, near the middle, not cut at an end
    assert [values for _, values in axis.tickValues(0.0, 300.0, 20.0)] == [[200.0]]
    assert len(axis.tickValues(0.0, 300.0, 120.0)[0][1]) > 1  # room: the usual ticks


class _RatedEngine(RecordingEngine):
    """Answers with a confidence that grows from left to right, thresholded as Bi3D does."""

    def compute(self, left, right, request):  # type: ignore[no-untyped-def]
        from app.engine.depth.border import leave_unknown

        result = super().compute(left, right, request)
        h, w = result.disparity.shape
        result.confidence = np.tile(np.linspace(0.0, 1.0, w, dtype=np.float32), (h, 1))
        result.unmasked = leave_unknown(result.disparity, result.confidence, request.min_confidence)
        return result


def test_min_confidence_over_a_held_frame_answers_at_once_without_computing_again(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Each move of Min confidence computed the whole frame again (3 s on the aloe pair: review);
    the threshold applies to the answer already made."""
    engine = _RatedEngine()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    window.controls.mode.setCurrentText("continuous")
    window.open_spec("pair")
    _shown(qtbot, window)
    asked = len(engine.requests)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controls.min_confidence_box.setValue(0.5)
    result = blocker.args[0]
    assert len(engine.requests) == asked  # no new answer
    unknown = np.isnan(result.depth.disparity)
    assert result.request.min_confidence == 0.5 and 0.45 < unknown.mean() < 0.55
    assert unknown[:, 0].all() and not unknown[:, -1].any()
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controls.min_confidence_box.setValue(0.0)  # back to every answer
    assert not np.isnan(blocker.args[0].depth.disparity[:, 1:]).any() and len(engine.requests) == asked
    # another engine (or calibration) with the same request answers afresh (auto -> sgbm showed the
    # bi3d answer on: re-check)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controller.refresh()
    assert len(engine.requests) == asked + 1
    asked += 1
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controls.mode.setCurrentText("selective")  # any other setting answers afresh
    qtbot.waitUntil(lambda: len(engine.requests) > asked, timeout=5000)


def test_a_held_frame_answered_again_says_so_until_its_answer_comes(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The Mode box said selective for 1-3 s over the binary answer, nothing marking it as the
    settings before (review)."""
    from app.ui.main_window import RECOMPUTING

    gate = threading.Event()

    class Held(RecordingEngine):
        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            if self.requests:  # the first answer at once, the next when let through
                gate.wait(10)
            if request.mode is Mode.SELECTIVE:
                raise UserError("selective refused here")
            if request.mode is Mode.QUANTIZED:
                raise RuntimeError("a bug")
            return super().compute(left, right, request)

    window = _window(qtbot, lambda spec: FakeSource(1), Held())
    window.open_spec("pair")
    _shown(qtbot, window)
    assert not window.depth_view.title.full_text.startswith(RECOMPUTING)
    window.controls.mode.setCurrentText("binary")
    window.controls.apply_now()
    assert window.depth_view.title.full_text.startswith(f"{RECOMPUTING} · ")
    window._redraw()  # drawn again meanwhile (a colour map): still the settings before
    assert window.depth_view.title.full_text.startswith(f"{RECOMPUTING} · ")
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        gate.set()
    assert window.depth_view.title.full_text.startswith("fake binary")
    gate.clear()
    window.controller.refresh()  # an engine or calibration change answers the frame again too
    assert window.depth_view.title.full_text.startswith(f"{RECOMPUTING} · ")
    with qtbot.waitSignal(window.controller.resultShown, timeout=10_000):
        gate.set()
    window.controls.mode.setCurrentText("quantized")  # an engine's failure: no answer is coming
    window.controls.apply_now()
    qtbot.waitUntil(lambda: "a bug" in window.notices.text.text(), timeout=10_000)
    assert not window.depth_view.title.full_text.startswith(RECOMPUTING)
    window.controls.mode.setCurrentText("selective")
    window.controls.apply_now()
    qtbot.waitUntil(lambda: window.depth_view.title.full_text.startswith("last answer"), timeout=10_000)
    assert RECOMPUTING not in window.depth_view.title.full_text  # refused: computing no more


def test_the_seek_bar_does_not_change_length_as_its_label_changes(qtbot, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ "· 0.22x real time" came and went frame by frame, and the seek bar's end moved 110 px with
    it (re-check): the label keeps its widest text's width until another source opens."""
    folder = pairs_folder(tmp_path / "pairs")
    window = _window(qtbot, None, RecordingEngine())
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec(str(folder))
    source = window.session.source
    monkeypatch.setattr(type(source), "has_times", property(lambda self: True))
    # the room is kept from the first frame, before the speed is first said (review)
    monkeypatch.setattr(window, "_playback_speed", lambda index: None)
    window._seek_label_text(0)
    before = window.seek_label.minimumWidth()
    monkeypatch.setattr(window, "_playback_speed", lambda index: 0.22)
    window._seek_label_text(3)
    assert "0.22x real time" in window.seek_label.text()
    wide = window.seek_label.minimumWidth()
    assert wide == before
    monkeypatch.setattr(window, "_playback_speed", lambda index: None)
    window._seek_label_text(4)
    assert "real time" not in window.seek_label.text() and window.seek_label.minimumWidth() == wide
    monkeypatch.undo()
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=10_000):
        window.open_spec(str(folder))
    assert window.seek_label.minimumWidth() < wide


def test_the_wheel_over_the_histogram_does_not_zoom_it(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A wheel meant to scroll the Measure dock zoomed the histogram, and the zoom stayed over every
    later frame (review)."""
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _shown(qtbot, window)
    plot = window.measure.histogram
    before = plot.getViewBox().viewRange()
    centre = QPointF(plot.width() / 2, plot.height() / 2)
    wheel = QWheelEvent(
        centre,
        plot.mapToGlobal(centre),
        QPoint(0, 0),
        QPoint(0, 240),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(plot.viewport(), wheel)
    assert plot.getViewBox().viewRange() == before


def test_a_second_click_without_depth_draws_no_line(qtbot) -> None:  # type: ignore[no-untyped-def]
    """ "pixel (563, 39) has no depth" was said, and the line stood drawn to it (review)."""
    from app.engine.types import Calibration

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.session.set_calibration(Calibration(focal_px=500.0, baseline_m=0.1))
    window.open_spec("pair")
    result = _shown(qtbot, window)
    result.depth.disparity[40, 50] = np.nan
    panel = window.measure
    panel.tool.setCurrentText("distance")
    panel._clicked(10, 10)
    panel._clicked(50, 40)
    assert "has no depth" in panel.figures.text() and panel.clicks == [(10, 10)]
    assert len(panel.line.getData()[0] or []) == 0
    panel._clicked(60, 10)  # the second click the first was waiting for
    assert panel.figures.text().startswith("distance ")


def test_the_seek_bar_rests_while_a_recording_runs(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A seek back while recording a video recorded frames 5-9, then 6-30 again, with times that
    went back (review): a recording keeps the frames in the order they play."""
    from app.engine.sources.recording import read_timestamps
    from app.engine.sources.spec import open_source

    window = _window(qtbot, open_source, RecordingEngine())
    window.session.output_root = tmp_path / "out"
    window.open_spec(str(pairs_folder(tmp_path / "pairs", 6)))
    _shown(qtbot, window)
    window.pause_action.setChecked(True)
    qtbot.waitUntil(lambda: window.seek_bar.isEnabled(), timeout=5000)
    window.record_action.setChecked(True)
    recorder = window.session.recorder
    assert recorder is not None
    assert not window.seek_bar.isEnabled() and "stop recording" in window.seek_bar.toolTip()
    with pytest.raises(UserError, match="stop recording"):
        window.session.seek(0)
    window.step_action.trigger()  # the next frame is recorded, in order
    qtbot.waitUntil(lambda: recorder.frames_written >= 2, timeout=5000)
    window.record_action.setChecked(False)
    assert window.seek_bar.isEnabled() and "stop recording" not in window.seek_bar.toolTip()
    # the next file dialog starts beside it (it started in the last video's folder: review)
    assert window.folders.start() == str(recorder.folder.parent)
    stamps = [t for _, t in read_timestamps(recorder.folder)]
    assert all(b > a for a, b in itertools.pairwise(stamps)), stamps


def test_notes_on_the_cameras_images_are_said_once_a_source(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The colour note showed only in the notes dialog; the notes line read "3 notes: max disparity
    auto: ..." (re-check). It is said in the bar once a source."""
    from app.engine.depth.exposure import tint_note

    rng = np.random.default_rng(0)
    image = rng.integers(0, 200, (40, 50, 3), dtype=np.uint8)
    note = tint_note(image, (image * np.float32([0.8, 1.0, 1.25])).astype(np.uint8))
    assert note is not None

    class NotedEngine(RecordingEngine):
        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            result = super().compute(left, right, request)
            result.notes = ["max disparity auto: 0-48 px", note]
            return result

    window = _window(qtbot, lambda spec: FakeSource(1000), NotedEngine())
    window.open_spec("video")
    qtbot.waitUntil(lambda: window.notices.text.text().startswith("Colour: the right image"), timeout=10_000)
    window.notices.dismiss()
    _shown(qtbot, window)
    _shown(qtbot, window)
    shown_again = window.notices.isVisible() and window.notices.text.text().startswith("Colour")
    assert not shown_again  # once a source, not every frame
