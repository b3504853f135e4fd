"""The main window: controls reach the engine, results reach the views, errors stay messages."""

from __future__ import annotations

import dataclasses
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt, QTimer

from app.engine.depth.engines import EngineOptions
from app.engine.errors import UserError
from app.engine.session import Session
from app.engine.types import DepthRequest, DepthResult, Mode, Spacing
from app.ui.main_window import MainWindow
from app.ui.render import render
from app.ui.settings import Settings, load_settings
from tests.ui.conftest import FakeSource, RecordingEngine


def _window(qtbot, opener, engine=None) -> MainWindow:  # type: ignore[no-untyped-def]
    session = Session(EngineOptions(engine="sgbm", sgbm=EngineOptions().sgbm))
    if engine is not None:
        session.engine = engine
    window = MainWindow(session, Settings(max_disparity=48, range_px=(10.0, 40.0)), opener)
    qtbot.addWidget(window)
    window.show()
    return window


def _wait_result(qtbot, window: MainWindow, timeout: int = 5000) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.controller.resultShown, timeout=timeout):
        pass


def test_every_control_changes_the_request_and_the_view(qtbot) -> None:  # type: ignore[no-untyped-def]
    engine = RecordingEngine()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    window.open_spec("pair")
    _wait_result(qtbot, window)
    c = window.controls
    checks = [
        (lambda: c.mode.setCurrentText("binary"), lambda r: r.mode is Mode.BINARY),
        (lambda: c.plane.setValue(21), lambda r: r.planes == (21.0,)),
        (lambda: c.mode.setCurrentText("quantized"), lambda r: r.mode is Mode.QUANTIZED),
        (lambda: c.levels.setValue(5), lambda r: r.levels == 5),
        (lambda: c.mode.setCurrentText("selective"), lambda r: r.mode is Mode.SELECTIVE),
        (lambda: c.range.set_values(10, 30), lambda r: r.range == (10.0, 30.0)),
        (lambda: c.budget_on.setChecked(True), lambda r: r.budget_ms is not None),
        (lambda: c.budget.set_number(77), lambda r: r.budget_ms == 77.0),
        (lambda: c.mode.setCurrentText("continuous"), lambda r: r.mode is Mode.CONTINUOUS),
    ]
    for change, check in checks:
        with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
            change()
        assert check(engine.requests[-1]), engine.requests[-1]
        assert blocker.args[0].request == engine.requests[-1]  # the result shown answers that request
    assert "took" in c.budget_label.text()


def test_binary_mode_tints_the_left_view_and_shows_the_probability(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.controls.mode.setCurrentText("binary")
    window.open_spec("pair")
    _wait_result(qtbot, window)
    assert window.left_view.overlay.image is not None
    assert "binary · P(disparity" in window.depth_view.title.full_text.replace("&gt;", ">")


def test_display_controls_redraw(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _wait_result(qtbot, window)
    window.controls.auto_range.setChecked(False)
    window.controls.display_max.setValue(40)
    assert window.depth_view.levels == (0.0, 40.0)
    window.controls.colormap.setCurrentText("magma")
    assert window.depth_view.cmap == "magma"


def test_hover_reads_out_disparity(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _wait_result(qtbot, window)
    window._hover("depth", 5, 7)
    assert "x 5  y 7" in window.readout.text() and "disparity" in window.readout.text()


def test_bad_file_shows_an_error_and_the_previous_source_keeps_running(qtbot) -> None:  # type: ignore[no-untyped-def]
    good = FakeSource(10**6)

    def opener(spec: str):  # type: ignore[no-untyped-def]
        if spec == "bad.png":
            raise UserError("bad.png is not a readable image (PNG, JPEG, ...); check the file")
        return good

    window = _window(qtbot, opener)
    window.open_spec("good")
    _wait_result(qtbot, window)
    window.open_spec("bad.png")
    qtbot.waitUntil(lambda: "not a readable image" in window.last_error, timeout=5000)
    reads = good.reads
    qtbot.waitUntil(lambda: good.reads > reads + 3, timeout=5000)  # still streaming
    assert window.session.source is good


def test_engine_error_in_the_worker_becomes_a_message(qtbot) -> None:  # type: ignore[no-untyped-def]
    class Broken(RecordingEngine):
        def compute(self, left, right, request):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    window = _window(qtbot, lambda spec: FakeSource(1), Broken())
    window.open_spec("pair")
    qtbot.waitUntil(lambda: "unexpected error: RuntimeError: boom" in window.last_error, timeout=5000)
    assert window.isVisible()


def test_settings_are_remembered(qtbot, fresh_settings: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.controls.mode.setCurrentText("quantized")
    window.controls.levels.setValue(11)
    window.close()
    saved, warning = load_settings()
    assert warning is None and saved.mode == "quantized" and saved.levels == 11


def test_bad_settings_file_falls_back_to_defaults(fresh_settings: Path) -> None:
    fresh_settings.mkdir(parents=True)
    (fresh_settings / "settings.json").write_text('{"mode": "sideways"}')
    settings, warning = load_settings()
    assert settings == Settings() and warning is not None and "mode" in warning
    (fresh_settings / "settings.json").write_text('{"colour": "red"}')
    assert "unknown setting 'colour'" in (load_settings()[1] or "")
    (fresh_settings / "settings.json").write_text('{"flow_max": -1}')
    assert "flow_max" in (load_settings()[1] or "")
    (fresh_settings / "settings.json").write_text('{"flow_view": "streamlines"}')
    assert "flow_view" in (load_settings()[1] or "")


WARM_FRAMES = 3  # the first results lay out and paint every pane once (60-90 ms measured on a quiet CPU)


@pytest.mark.slow
def test_300_frames_live_without_blocking_or_leaking(qtbot) -> None:  # type: ignore[no-untyped-def]
    source = FakeSource(300, size=(192, 288))
    window = _window(qtbot, lambda spec: source)
    gaps: list[float] = []
    every: list[float] = []
    last = [time.perf_counter()]

    def beat() -> None:
        now = time.perf_counter()
        every.append(now - last[0])
        if window.latency.frames >= WARM_FRAMES:  # live from here on; the first displays set up the panes
            gaps.append(now - last[0])
        last[0] = now

    heartbeat = QTimer(interval=10)
    heartbeat.timeout.connect(beat)
    heartbeat.start()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    window.open_spec("synthetic")
    qtbot.waitUntil(lambda: window.latency.frames >= 300, timeout=120_000)
    heartbeat.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # A frame's display costs the GUI thread 10-20 ms here; gaps stay under 50 ms on a quiet
    # 2-core machine. A shared CI machine may stall a process once for 100-200 ms whatever it
    # runs, so one such stall is tolerated; a GUI thread that blocks on work fails either bound.
    live = sorted(gaps[1:], reverse=True)
    assert live[1] < 0.100, f"GUI thread blocked for {[round(g * 1000) for g in live[:5]]} ms"
    assert live[0] < 0.300, f"GUI thread blocked for {live[0] * 1000:.0f} ms"
    assert max(every[5:]) < 0.5, f"GUI thread blocked for {max(every[5:]) * 1000:.0f} ms at the start"
    assert (rss1 - rss0) / 1024 < 50, f"memory grew by {(rss1 - rss0) / 1024:.0f} MB"
    t0 = time.perf_counter()
    window.close()
    assert time.perf_counter() - t0 < 1.0
    assert source.closed


def test_flow_backend_and_its_parameters(qtbot) -> None:  # type: ignore[no-untyped-def]
    source = FakeSource(10**6)
    window = _window(qtbot, lambda spec: source, RecordingEngine())
    window.open_spec("live")
    _wait_result(qtbot, window)
    window.controls.flow.setCurrentText("dis")
    boxes = window.controls.flow_param_boxes
    assert any(w.currentText() == "fast" for w in boxes)  # DIS preset offered
    # a row of the panel's own form, aligned with the others (its own form set it apart: review)
    form = window.controls.flow.parentWidget().layout()
    assert form.getWidgetPosition(boxes[0])[0] == form.getWidgetPosition(window.controls.flow)[0] + 1
    qtbot.waitUntil(
        lambda: window.controller.last is not None and window.controller.last.flow is not None, timeout=10_000
    )
    assert window.controller.last.flow.shape == (120, 200, 2)
    assert window.controller.last.timings["flow"] > 0
    last = window.controller.last
    colour = render(last, window.display_spec()).flow_rgb
    assert colour.shape[0] == 120 and colour.shape[1] > 200  # the wheel coding plus its legend
    # the legend's figure shrinks with the pane past reading: the title says what the rim stands for
    qtbot.waitUntil(lambda: "colour wheel's rim = " in window.flow_view.title.full_text, timeout=10_000)
    assert window.flow_view.image.image is not None
    # a frame without flow (a seek, a skipped frame) clears the last pair's picture (review: it stood)
    window.show_result(dataclasses.replace(window.controller.last, flow=None, display=None))
    assert window.flow_view.image.image is None
    window.controls.flow_view.setCurrentText("arrows")
    window.controls.flow_max.setValue(2.5)
    spec = window.display_spec()
    assert spec.flow_view == "arrows" and spec.flow_max == 2.5 and window.settings.flow_max == 2.5
    arrows = render(last, spec).flow_rgb
    assert arrows.shape == (120, 200, 3)  # drawn over the left image
    assert not np.array_equal(arrows, last.pair.left)
    window.show_result(dataclasses.replace(last, display=None))  # the arrows had no scale (review)
    assert "the longest arrows = 2.5 px" in window.flow_view.title.full_text
    window.controls.flow_max.setValue(0)
    assert window.display_spec().flow_max is None  # 0 px: automatic
    window.controls.flow.setCurrentText("nvof")  # no CUDA OpenCV here: a readable reason, no crash
    assert window.controls.flow_status.text() != ""
    if window.session.flow is None:  # the pane said "off: choose a method" beside nvof chosen (review)
        assert window.flow_view.title.full_text.startswith("Optical flow could not start: nvof is not")
        texts = [w.currentText() for w in window.controls.flow_param_boxes]
        assert "off" in texts and "False" not in texts  # a switch reads off / on


def test_a_saved_flow_method_runs_from_the_start(qtbot) -> None:  # type: ignore[no-untyped-def]
    """With "auto" saved, the next start showed Optical flow: auto while the Flow tab said it was
    off and no flow was computed."""
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = RecordingEngine()
    window = MainWindow(session, Settings(flow="dis"), lambda spec: FakeSource(10**6))
    qtbot.addWidget(window)
    window.show()
    assert window.session.flow is not None and window.controls.flow.currentText() == "dis"
    window.open_spec("live")
    qtbot.waitUntil(
        lambda: window.controller.last is not None and window.controller.last.flow is not None, timeout=10_000
    )


def test_engine_compare_spacing_and_range_controls(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import Calibration

    engine = RecordingEngine()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    window.open_spec("pair")
    _wait_result(qtbot, window)
    c = window.controls
    assert c.compare.isEnabled() and "beside Bi3D's" in c.compare.toolTip()
    # SGBM side by side: a baseline result arrives and is drawn
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        c.compare.setChecked(True)
    assert blocker.args[0].baseline is not None and blocker.args[0].baseline.engine == "sgbm"
    assert window.extra.currentWidget() is not window.compare_tab  # no ground truth: no errors to show
    # continuous depth opens with the automatic range, up to the default ceiling
    assert engine.requests[-1].auto_range and engine.requests[-1].max_disparity == 192
    assert 0 < engine.requests[-1].min_confidence < 1
    # a fixed maximum disparity reaches the request and bounds the plane slider
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        c.max_disparity_auto.setChecked(False)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        c.max_disparity.setValue(32)
    assert not engine.requests[-1].auto_range
    assert engine.requests[-1].max_disparity == 32 and c.plane.maximum() == 32
    # the binary plane and the selective range show it, but are not cut to it for good (review:
    # a 32 typed for continuous depth was saved as the plane and the range's end)
    plane, chosen = window.settings.plane_px, window.settings.range_px
    assert c.shown_plane() == min(plane, 32) and c.shown_range()[1] <= 32
    assert window.settings.range_px == chosen and window.settings.plane_px == plane
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        c.max_disparity.setValue(96)
    assert c.shown_range() == tuple(min(v, 96) for v in chosen) and c.plane.value() == round(min(plane, 96))
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        c.max_disparity.setValue(32)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        c.min_confidence.setValue(40)
    assert engine.requests[-1].min_confidence == 0.4
    # spacing in depth needs a calibration: offered once one is known
    assert c.min_confidence.isEnabled()
    c.mode.setCurrentText("quantized")
    assert not c.min_confidence.isEnabled()  # a plane's side is not masked by a rating (review)
    window.session.set_calibration(Calibration(focal_px=500.0, baseline_m=0.1))
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        window.controller.refresh()
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000):
        c.spacing.setCurrentText("depth")
    assert engine.requests[-1].spacing is Spacing.DEPTH
    # the sub-pixel refinement switch reaches the engine options
    assert window.engine_options().subpixel is True
    c.engine_controls["subpixel"].setChecked(False)
    assert window.settings.subpixel is False and window.engine_options().subpixel is False
    # and so does the plane check of binary answers
    assert window.engine_options().plane_check is True
    c.engine_controls["plane_check"].setChecked(False)
    assert window.settings.plane_check is False and window.engine_options().plane_check is False
    # switching the engine goes through the session and recomputes
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        c.engine_controls["engine"].setCurrentText("sgbm")
    assert blocker.args[0].depth.engine == "sgbm"
    assert "sgbm" in window.engine_label.text()


def test_the_auto_reach_shows_beside_the_greyed_maximum(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.ui.controls import ControlsPanel
    from app.ui.settings import Settings
    from tests.engine.fake_results import empty_result

    panel = ControlsPanel(Settings(mode="continuous"))
    qtbot.addWidget(panel)
    assert not panel.max_disparity.isEnabled()  # auto sweeps each frame's reach, not the number
    image = np.zeros((8, 8, 3), np.uint8)
    panel.show_choice(empty_result(image, "bi3d", Mode.CONTINUOUS, searched=(0.0, 84.0)))
    assert panel.max_disparity_auto.text() == "auto: 84 px"
    assert "searched 0-84 px" in panel.budget_label.text()
    panel.show_choice(empty_result(image, "sgbm", Mode.CONTINUOUS))
    assert panel.max_disparity_auto.text() == "auto"
    assert "planes" not in panel.budget_label.text()  # SGBM matches every disparity
    panel.mode.setCurrentText("quantized")  # its levels spread over the auto reach too
    assert not panel.max_disparity.isEnabled()
    panel.mode.setCurrentText("binary")  # the plane slider's bound
    assert panel.max_disparity.isEnabled()
    # it does not apply here: not beside the number (greyed out and ticked it still read as applying)
    assert panel.max_disparity_auto.isHidden() and "plane slider" in panel.max_disparity.toolTip()
    panel.mode.setCurrentText("continuous")
    assert not panel.max_disparity_auto.isHidden() and panel.max_disparity_auto.isChecked()
    assert not panel.budget.isEnabled()  # the budget's slider is live only with Budget ticked
    panel.budget_on.setChecked(True)
    assert panel.budget.isEnabled()


def test_the_window_opens_within_the_screen(qapp) -> None:  # type: ignore[no-untyped-def]
    from app.ui.app import WINDOW_SIZE, window_size

    free = qapp.primaryScreen().availableGeometry()  # offscreen: 800 x 800, under the default size
    assert window_size() == (min(WINDOW_SIZE[0], free.width()), min(WINDOW_SIZE[1], free.height()))


def test_the_window_frame_stays_on_the_screen(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A window manager's title bar pushed the status bar 25 px below a 1366 x 768 screen (review):
    the window shrinks and moves until its frame fits the free area."""
    from PySide6.QtCore import QRect

    from app.ui.main_window import fitted

    assert fitted((0, 0, 1366, 768), (0, 0), (1366, 768), (0, 25)) == ((1366, 743), (0, 0))
    assert fitted((0, 0, 1366, 768), (200, 100), (1366, 700), (2, 27)) == ((1364, 700), (0, 41))
    assert fitted((0, 30, 1920, 1050), (100, 120), (1500, 950), (4, 30)) == ((1500, 950), (100, 100))
    assert fitted((0, 0, 1920, 1080), (10, 40), (800, 600), (4, 30)) == ((800, 600), (10, 40))  # fits
    window = _window(qtbot, None)
    free = window.screen().availableGeometry()
    window.resize(free.width(), free.height())
    inner = window.geometry()
    # the window manager's frame, as it would report it: 25 px of title bar above the window
    framed = QRect(inner.x(), inner.y(), inner.width(), inner.height() + 25)
    monkeypatch.setattr(window, "frameGeometry", lambda: framed)
    window.keep_on_screen()
    assert window.height() == free.height() - 25


def test_controls_that_do_not_apply_are_greyed(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.ui.controls import ControlsPanel
    from app.ui.settings import Settings

    panel = ControlsPanel(Settings(device="cpu", mode="binary"))
    qtbot.addWidget(panel)
    c = panel.engine_controls
    assert not c["cuda_graphs"].isEnabled() and c["plane_check"].isEnabled()  # CUDA graphs need CUDA
    assert not c["subpixel"].isEnabled()  # continuous and selective answers only
    panel.mode.setCurrentText("continuous")  # the plane check changed nothing there, unsaid (review)
    assert not c["plane_check"].isEnabled() and c["subpixel"].isEnabled()
    panel.mode.setCurrentText("binary")
    assert not panel.display_max.isEnabled()  # the automatic colour range decides the maximum
    c["engine"].setCurrentText("sgbm")  # type: ignore[attr-defined]
    assert not c["plane_check"].isEnabled() and not c["search"].isEnabled()
    assert c["align"].isEnabled() and c["block_size"].isEnabled()  # both engines / SGBM's own
    c["engine"].setCurrentText("bi3d")  # type: ignore[attr-defined]
    c["device"].setCurrentText("cuda")  # type: ignore[attr-defined]
    assert c["cuda_graphs"].isEnabled() and c["plane_check"].isEnabled()
    panel.auto_range.setChecked(False)
    assert panel.display_max.isEnabled()


def test_an_arrow_click_on_an_engine_number_applies_it(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The SGBM block's arrows showed 9 px while SGBM's pane and scores stayed at 5 px until Enter
    (review): only editingFinished applied the box."""
    from PySide6.QtWidgets import QSpinBox

    from app.ui.controls import ControlsPanel
    from app.ui.settings import Settings

    panel = ControlsPanel(Settings(device="cpu", mode="binary"))
    qtbot.addWidget(panel)
    spin = panel.engine_controls["block_size"]
    assert isinstance(spin, QSpinBox)
    with qtbot.waitSignal(panel.engineChanged, timeout=1000):
        spin.stepBy(1)  # what an arrow click or the Up key does
    assert panel.settings.block_size == spin.value() == 7
    assert not spin.keyboardTracking()  # typed digits apply on Enter, not one by one


def test_the_side_panels_are_never_squeezed_below_their_contents(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QDockWidget

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    for name, panel in (("calibration", window.calibration), ("measure", window.measure)):
        dock = window.findChild(QDockWidget, name)
        # the dock was squeezed to 123 px at 1366 x 768, its buttons cut (no horizontal scroll bar)
        assert dock.widget().minimumWidth() >= panel.minimumSizeHint().width()
    assert window.minimumSizeHint().width() <= 1366  # still fits a laptop screen


def test_open_image_pair_puts_the_left_named_image_left(qtbot, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import cv2
    from PySide6.QtWidgets import QFileDialog

    specs: list[str] = []

    def opener(spec: str):  # type: ignore[no-untyped-def]
        specs.append(spec)
        return FakeSource()

    window = _window(qtbot, opener)
    solo, text = tmp_path / "solo.png", tmp_path / "notes.png"
    cv2.imwrite(str(solo), np.zeros((8, 8, 3), np.uint8))
    text.write_text("not an image")
    chosen = [["/d/zleft.png", "/d/aright.png"], ["/d/b.png", "/d/a.png"], [str(solo)], [str(text)]]
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: (chosen.pop(0), ""))
    monkeypatch.setattr(
        QFileDialog, "getOpenFileName", lambda *a, **k: (asked.append(a[1]), ("/d/other.png", ""))[1]
    )
    for n in range(1, 4):
        window._pick_pair()
        qtbot.waitUntil(lambda n=n: len(specs) == n, timeout=5000)
    # named sides win; else the order chosen; one image chosen asks for the right one
    assert specs == ["/d/zleft.png,/d/aright.png", "/d/b.png,/d/a.png", f"{solo},/d/other.png"]
    assert asked == ["Right image"]
    # a left file that is no image is refused at once: it was said only after the right was chosen
    window._pick_pair()
    assert asked == ["Right image"] and len(specs) == 3
    assert "notes.png is not a readable image" in window.last_error
    # the right view named alike is chosen already; the left one chosen again is refused (it
    # opened as a pair of one image, depth 0 px everywhere: review)
    aloe_left, aloe_right = tmp_path / "aloeL.png", tmp_path / "aloeR.png"
    for path in (aloe_left, aloe_right):
        cv2.imwrite(str(path), np.zeros((8, 8, 3), np.uint8))
    starts: list[str] = []
    answers = [str(aloe_left), str(aloe_right)]
    chosen.extend([[str(aloe_left)], [str(aloe_left)]])
    monkeypatch.setattr(
        QFileDialog, "getOpenFileName", lambda *a, **k: (starts.append(a[2]), (answers.pop(0), ""))[1]
    )
    window._pick_pair()
    assert starts == [str(aloe_right)] and len(specs) == 3
    assert "aloeL.png was chosen as both views" in window.last_error
    window._pick_pair()
    qtbot.waitUntil(lambda: len(specs) == 4, timeout=5000)
    assert specs[-1] == f"{aloe_left},{aloe_right}"


def test_a_screenshot_run_whose_source_fails_says_so_and_fails(qapp, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.ui.app import run_gui

    shot = tmp_path / "shot.png"
    QTimer.singleShot(60_000, qapp.quit)  # a guard: the run must end by itself long before
    code = run_gui(str(tmp_path / "nope.png"), str(shot))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not shot.exists()
    assert err[-1].startswith("bi3d-studio gui: error: no screenshot saved: ") and "nope.png" in err[-1]
    from app.ui.app import _qt_message

    _qt_message(None, None, "This plugin does not support propagateSizeHints()")  # the offscreen
    _qt_message(None, None, "a Qt warning worth reading")  # platform's line, printed before it
    assert capsys.readouterr().err == "a Qt warning worth reading\n"


def test_a_screenshot_run_closes_once_the_shot_is_saved_quit_after_being_the_longest_wait(
    qapp, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from app.ui import app as app_module

    real = app_module.create_window
    monkeypatch.setattr(app_module, "create_window", lambda source=None: real(source, tmp_path / "s.json"))
    shot = tmp_path / "shot.png"
    t0 = time.monotonic()
    assert app_module.run_gui(None, str(shot), quit_after=120) == 0
    assert shot.exists() and time.monotonic() - t0 < 100  # it waited the full 120 s before
    assert f"wrote {shot}" in capsys.readouterr().out


def test_gui_calib_loads_the_rig_or_refuses_a_bad_file_in_one_line(
    qapp, capsys, tmp_path: Path, demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from app import cli
    from app.ui import app as app_module

    assert cli.main(["gui", "--calib", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "calibration file not found" in err[0]
    loaded: list[Path] = []
    real = app_module.create_window

    def create(source=None, settings_path=None):  # type: ignore[no-untyped-def]
        window = real(source, tmp_path / "settings.json")
        original = window.calibration.load
        window.calibration.load = lambda *paths: (loaded.append(paths), original(*paths))[1]  # type: ignore[method-assign]
        QTimer.singleShot(300, window.close)
        return window

    monkeypatch.setattr(app_module, "create_window", create)
    assert app_module.run_gui(None, calibration=str(demo_dir / "calib.txt")) == 0
    assert loaded == [(demo_dir / "calib.txt", None)]


def test_gui_calib2_takes_a_ros_camera_info_pair(
    qapp, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """`depth --calib cam0.yaml --calib2 cam1.yaml` worked; the window had no --calib2 and the
    left file alone is refused (its partner is not named alike)."""
    from app import cli
    from app.ui import app as app_module
    from tests.engine.calibration.test_calibration import D1, D2, K1, K2, _ros_yaml, rig

    full = rig().with_rectification()
    assert full.R1 is not None and full.R2 is not None and full.P1 is not None and full.P2 is not None
    cam0, cam1 = tmp_path / "cam0.yaml", tmp_path / "cam1.yaml"
    cam0.write_text(_ros_yaml(K1, D1, full.R1, full.P1, "stereo/left"))
    cam1.write_text(_ros_yaml(K2, D2, full.R2, full.P2, "stereo/right"))
    assert cli.main(["gui", "--calib2", str(cam1)]) == 2
    assert "give --calib too" in capsys.readouterr().err
    assert cli.main(["gui", "--calib", str(cam0)]) == 2
    assert "--calib2" in capsys.readouterr().err
    labels: list[str] = []
    real = app_module.create_window

    def create(source=None, settings_path=None):  # type: ignore[no-untyped-def]
        window = real(source, tmp_path / "settings.json")
        load = window.calibration.load

        # read the label as the load leaves it: the demo's first frame (640 px, not this rig's
        # 1280) sets the rig aside a moment later, sooner or later by the machine (CI read it
        # after that at a fixed 300 ms)
        def loaded(path, second=None):  # type: ignore[no-untyped-def]
            try:
                load(path, second)
                labels.append(window.calibration.file_label.text())
            finally:  # a failed load must not leave the window open (the test would hang)
                QTimer.singleShot(0, window.close)

        window.calibration.load = loaded  # type: ignore[method-assign]
        return window

    monkeypatch.setattr(app_module, "create_window", create)
    monkeypatch.setattr(sys, "argv", ["bi3d-studio"])
    assert cli.main(["gui", "--calib", str(cam0), "--calib2", str(cam1)]) == 0
    assert labels and labels[0].startswith("cam0.yaml: f ") and "raw rig" in labels[0]


def test_a_title_too_long_for_its_pane_ends_in_an_ellipsis(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.ui.views import DepthPane

    pane = DepthPane("Disparity")
    qtbot.addWidget(pane)
    pane.resize(220, 200)
    pane.show()
    title = "Disparity in px (bi3d, continuous, 29 planes every 3 px, searched 0-84 px)"
    pane.set_title(title)
    qtbot.waitUntil(lambda: pane.title.text.endswith("…"), timeout=5_000)
    assert pane.title.full_text == title and pane.title.toolTip() == title
    assert title.startswith(pane.title.text[:-1])  # the start of the title, cut
    pane.resize(1400, 200)  # room for all of it: shown whole, no tooltip
    qtbot.waitUntil(lambda: pane.title.text == title, timeout=5_000)
    assert pane.title.toolTip() == ""


def test_a_title_too_long_for_one_line_takes_a_second_between_its_parts(qtbot) -> None:  # type: ignore[no-untyped-def]
    """At 1366 x 768 the depth title read "bi3d continuous · disparity in px · grey: unk…": the
    legend of the grey pixels was lost."""
    from app.ui.views import DepthPane, title_lines

    assert title_lines("a · bb · ccc", 6, len) == ["a · bb", "ccc"]
    assert title_lines("a · bb · ccc · dddd", 6, len) == ["a · bb", "ccc · dddd"]  # the rest: elided
    assert title_lines("abcdefgh · b", 6, len) == ["abcdefgh", "b"]
    pane = DepthPane("Disparity")
    qtbot.addWidget(pane)
    pane.resize(420, 300)
    pane.show()
    title = "bi3d continuous · disparity in px, depth 1.21-3.3 m · grey: unknown"
    pane.set_title(title)
    qtbot.waitUntil(lambda: "<br>" in pane.title.text, timeout=5_000)
    assert pane.title.text.endswith("grey: unknown") and pane.title.toolTip() == ""  # all of it shown
    # two lines too few: the "…" goes in the last line's middle, and the legend at its end stays
    # ("· purple: unknown" was cut at 1024 x 600: review)
    longer = "budget 125 ms: 1 quantized level; continuous needs about 290 ms · " + title
    pane.resize(260, 300)
    pane.set_title(longer)
    qtbot.waitUntil(lambda: pane.title.toolTip() == longer, timeout=5_000)
    assert pane.title.text.endswith("grey: unknown") and "…" in pane.title.text


def test_a_budget_frame_says_when_it_went_over_and_when_it_fell_back_to_quantized(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.ui.controls import ControlsPanel
    from app.ui.settings import Settings
    from tests.engine.fake_results import empty_result

    panel = ControlsPanel(Settings(mode="continuous", budget_on=True, budget_ms=200.0))
    qtbot.addWidget(panel)
    # two lines kept for it before the first answer: the controls below did not jump 14 px then
    assert panel.budget_label.minimumHeight() >= 2 * panel.budget_label.fontMetrics().lineSpacing()
    image = np.zeros((8, 8, 3), np.uint8)
    result = empty_result(image, "bi3d", Mode.QUANTIZED, timings={"total": 281.0})
    result.choice = {"planes": 7.0, "quantized": 1.0, "budget_ms": 200.0}
    panel.show_choice(result)
    text = panel.budget_label.text()
    assert "chose 7 quantized planes, took 281 ms, over the 200 ms budget" in text
    # the slider moved on while this answer was planned: it names the budget it was planned for
    panel.settings.budget_ms = 1650.0
    result.timings = {"total": 281.0}
    panel.show_choice(result)
    assert "over the 200 ms budget" in panel.budget_label.text()
    result.timings = {"total": 190.0}
    panel.show_choice(result)
    assert "over" not in panel.budget_label.text()
    result.choice = {"planes": 1.0, "budget_ms": 200.0}  # one plane: not "1 planes"
    panel.show_choice(result)
    assert panel.budget_label.text().startswith("chose 1 plane, took 190 ms")
    # a search: its coarse planes and passes (it read "9 planes every 3 px": review)
    result.choice = {"planes": 9.0, "step_px": 3.0, "coarse_px": 24.0, "passes": 3.0, "budget_ms": 200.0}
    panel.show_choice(result)
    assert panel.budget_label.text().startswith(
        "chose coarse-to-fine, 9 planes every 24 px and 3 per-pixel passes, took 190 ms"
    )
    result.choice = {"planes": 1.0, "budget_ms": 200.0}
    # SGBM side by side is said apart: the frame took more than the budgeted answer (review)
    panel.show_choice(result, {"depth_total": 190.0, "sgbm": 285.0})
    assert panel.budget_label.text().endswith("; SGBM beside it 285 ms more")
    # the fastest answer chosen already: no "the next answer fits better" under every frame (review)
    from app.ui.controls import NEXT_FITS

    result.timings = {"total": 56.0}
    result.choice = {"planes": 2.0, "step_px": 42.0, "budget_ms": 15.0, "predicted_ms": 51.6}
    panel.show_choice(result)
    text = panel.budget_label.text()
    assert (
        NEXT_FITS not in text
        and "over the 15 ms budget (the coarsest answer here was predicted at 52 ms)" in text
    )
    result.choice = {"planes": 9.0, "step_px": 9.0, "budget_ms": 200.0, "predicted_ms": 150.0}
    result.timings = {"total": 281.0}
    panel.show_choice(result)
    assert f"over the 200 ms budget ({NEXT_FITS})" in panel.budget_label.text()


def test_the_budget_label_says_why_and_what_came_before_the_answer(qtbot) -> None:  # type: ignore[no-untyped-def]
    """At 1366 px "continuous needs about 174 ms" was cut off the pane's title, the label said only
    "chose 3 quantized planes, took 52 ms"; "took 330 ms" stood beside a frame answered in 483 ms
    with the pair's alignment; mid-drag, "Budget 3000 ms" beside the choice made for 90 ms (review)."""
    from app.ui.controls import ControlsPanel
    from app.ui.settings import Settings
    from tests.engine.fake_results import empty_result

    panel = ControlsPanel(Settings(mode="continuous", budget_on=True, budget_ms=200.0))
    qtbot.addWidget(panel)
    image = np.zeros((8, 8, 3), np.uint8)
    result = empty_result(image, "bi3d", Mode.QUANTIZED, timings={"total": 52.0, "align": 153.2})
    result.choice = {"planes": 3.0, "quantized": 1.0, "budget_ms": 200.0, "cheapest_ms": 174.4}
    panel.show_choice(result)
    assert panel.budget_label.text() == (
        "the cheapest continuous depth needs about 174 ms: chose 3 quantized planes, took 52 ms "
        "(+153 ms before it: the pair's vertical alignment)"
    )
    selective = empty_result(image, "bi3d", Mode.SELECTIVE, timings={"total": 88.0, "probe": 354.0})
    selective.choice = {
        "planes": 7.0,
        "step_px": 27.0,
        "subpixel": 0.0,
        "cheapest_ms": 183.0,
        "budget_ms": 200.0,
    }
    panel.show_choice(selective)
    assert panel.budget_label.text() == (
        "selective depth every 12 px or finer needs about 183 ms: chose 7 planes every 27 px without "
        "sub-pixel matching, took 88 ms (+354 ms before it: measuring this size's costs)"
    )
    # the alignment's per-frame check, a few ms, is not said under every answer
    small = empty_result(image, "bi3d", Mode.CONTINUOUS, timings={"total": 300.0, "align": 4.0})
    panel.show_choice(small)
    assert "before it" not in panel.budget_label.text()
    panel.budget.set_number(1150)
    assert panel.budget_label.text() == "answering within 1150 ms…"


def test_ticking_compare_moves_the_answer_shown_beside_an_sgbm_pane_computing(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Both panes read "depth of the new source: computing…" for a second, and the Errors tab
    "tick SGBM side by side" with it ticked; a redraw added the held frame's timings again to the
    latency plot (review)."""
    from app.ui.main_window import NEW_SOURCE_DEPTH

    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    _wait_result(qtbot, window)
    frames = len(window.latency.arrivals)
    window.controls.compare.setChecked(True)  # the redraw is at once, before SGBM's answer
    assert window.compare_main.title.full_text != NEW_SOURCE_DEPTH
    assert window.baseline_view.title.full_text == "sgbm: computing…"
    assert len(window.latency.arrivals) == frames  # a redraw is no new frame
    _wait_result(qtbot, window)  # the answer with SGBM beside it
    frames = len(window.latency.arrivals)
    window.controls.colormap.setCurrentText("magma")
    qtbot.wait(300)
    assert len(window.latency.arrivals) == frames


def test_the_tabs_below_the_images_can_be_made_large_and_back(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The 3D view had 130 px of height at 1366 x 768 and no way to enlarge it that anything
    pointed to (review): View > Large tabs below the images (T) gives them three quarters."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.resize(1366, 768)
    qtbot.wait(50)
    before = window.central_split.sizes()
    window.large_tabs_action.trigger()
    images, tabs = window.central_split.sizes()
    assert tabs >= 0.7 * (images + tabs)
    window.large_tabs_action.trigger()
    assert window.central_split.sizes() == before
    assert window.full_screen_action.shortcut().toString() == "F11"


class _OverBudgetEngine(RecordingEngine):
    """Answers every budget 2.5 times over, the first frame's costs being unknown to it."""

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        result = super().compute(left, right, request)
        if request.budget_ms is not None:
            result.choice = {"planes": 3.0, "budget_ms": request.budget_ms}
            result.timings = {**result.timings, "total": 2.5 * request.budget_ms}
        return result


def test_a_held_frame_over_the_budget_is_answered_again_once(qtbot) -> None:  # type: ignore[no-untyped-def]
    """On an image pair "over the 200 ms budget (costs now measured: the next answer fits better)"
    promised an answer that never came: a held frame has no next one (review)."""
    engine = _OverBudgetEngine()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    window.open_spec("pair")
    _wait_result(qtbot, window)
    qtbot.waitUntil(window.controller.holds_still, timeout=5000)
    before = len(engine.requests)
    window.controls.mode.setCurrentText("continuous")
    window.controls.budget_on.setChecked(True)
    qtbot.waitUntil(lambda: len(engine.requests) >= before + 2, timeout=5000)  # the answer, and once again
    qtbot.wait(300)
    assert len(engine.requests) == before + 2
    text = window.controls.budget_label.text()
    assert "over the 200 ms budget" in text and "next answer" not in text and "again" not in text


def _bi3d_window(qtbot):  # type: ignore[no-untyped-def]
    """A window on a fake pair, its engine switched to the bundled Bi3D from the controls."""
    window = _window(qtbot, lambda spec: FakeSource(1), RecordingEngine())
    window.open_spec("pair")
    qtbot.waitUntil(lambda: window.controller.last is not None, timeout=10_000)
    window.controls.engine_controls["engine"].setCurrentText("bi3d")  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: window.session.engine.name == "bi3d", timeout=30_000)
    return window


def test_a_device_that_cannot_run_goes_back_and_its_error_goes_with_the_next_good_change(qtbot) -> None:  # type: ignore[no-untyped-def]
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine can run cuda")
    window = _bi3d_window(qtbot)
    c = window.controls.engine_controls
    c["device"].setCurrentText("cuda")  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: window.notices.level == "error", timeout=10_000)
    assert "CUDA" in window.last_error
    assert c["device"].currentText() == "cpu" and window.settings.device == "cpu"  # type: ignore[attr-defined]
    assert window.notices.level == "error"  # the error stays until something good replaces it
    c["precision"].setCurrentText("fp32")  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: window.notices.level != "error", timeout=30_000)
    assert window.session.options.precision == "fp32"


def test_every_engine_choice_that_cannot_run_goes_back_and_is_not_saved(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """fp16 on the CPU stayed in its box while fp32 ran, and a picture given as weights stayed in
    the field, was saved, and broke the next start ("saved engine settings did not load")."""
    from PySide6.QtWidgets import QLineEdit

    window = _bi3d_window(qtbot)
    c = window.controls.engine_controls
    c["precision"].setCurrentText("fp16")  # type: ignore[attr-defined]
    assert "fp16 needs" in window.last_error
    assert c["precision"].currentText() == window.settings.precision == window.session.options.precision  # type: ignore[attr-defined]
    picture = tmp_path / "picture.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n not a checkpoint")
    field = c["weights"].findChild(QLineEdit)
    field.setText(str(picture))
    field.editingFinished.emit()
    assert "not a readable PyTorch checkpoint" in window.last_error
    assert field.text() == "" and window.settings.weights == ""  # the bundled model, as runs
    assert window.last_error and window.notices.level == "error"  # the error stays on screen


class _BudgetFloorEngine(RecordingEngine):
    """Refuses budgets under 50 ms, as the Bi3D engine refuses one below its fastest answer."""

    def compute(self, left, right, request):  # type: ignore[no-untyped-def]
        if request.budget_ms is not None and request.budget_ms < 50:
            raise UserError(
                f"the latency budget {request.budget_ms:g} ms is below the fastest answer; use at least 50"
            )
        return super().compute(left, right, request)


def test_a_refused_setting_is_no_longer_shown_once_a_valid_one_answers(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, lambda spec: FakeSource(1), _BudgetFloorEngine())
    window.open_spec("pair")
    _wait_result(qtbot, window)
    c = window.controls
    c.budget_on.setChecked(True)
    _wait_result(qtbot, window)
    c.budget.set_number(20)
    qtbot.waitUntil(lambda: window.notices.level == "error" and window.notices.isVisible(), timeout=5000)
    assert "below the fastest answer" in window.notices.text.text()
    assert c.budget_label.text().startswith("no answer at these settings")  # not the last answer's choice
    # the pane itself says the depth is the last answer (on a live source it stayed as frames went on)
    assert window.depth_view.title.full_text.startswith("last answer (these settings were refused) · ")
    c.budget.set_number(200)
    _wait_result(qtbot, window)
    assert not window.notices.isVisible()  # it stood beside the new answer and hid later news
    assert not window.depth_view.title.full_text.startswith("last answer")
    assert not c.budget_label.text().startswith("no answer")
    window.show_status("snapshot saved")
    assert window.notices.isVisible() and window.notices.level == "info"
    # another error (not about the settings) stays until dismissed
    window.show_error("cannot open nope: not found")
    c.budget.set_number(300)
    _wait_result(qtbot, window)
    assert window.notices.level == "error" and "cannot open" in window.notices.text.text()


class _FastestAnswerEngine(RecordingEngine):
    """Refuses budgets under 44 ms as the Bi3D engine does, naming that minimum (``BudgetTooLow``)."""

    def compute(self, left, right, request):  # type: ignore[no-untyped-def]
        from app.engine.errors import BudgetTooLow

        if request.budget_ms is not None and request.budget_ms < 44:
            message = f"the latency budget {request.budget_ms:g} ms is below the fastest answer"
            raise BudgetTooLow(message, 44.0)
        return super().compute(left, right, request)


def test_a_budget_below_the_fastest_answer_moves_the_slider_to_the_least_that_answers(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The slider went down to 5 ms and the refusal stood ("use at least 44 ms"), the refused
    budget kept for the next start (review): it moves up to the least budget that answers, with
    room over the prediction (raised to a predicted 29 ms, an answer took 37: review)."""
    engine = _FastestAnswerEngine()
    window = _window(qtbot, lambda spec: FakeSource(1), engine)
    window.open_spec("pair")
    _wait_result(qtbot, window)
    c = window.controls
    c.budget_on.setChecked(True)
    _wait_result(qtbot, window)
    c.budget.set_number(15)
    qtbot.waitUntil(lambda: engine.requests[-1].budget_ms == 58.0, timeout=5000)
    assert c.budget.number() == 58 and window.settings.budget_ms == 58.0
    assert "budget raised to 58 ms" in window.notices.text.text() and window.notices.level == "info"
    assert not window.last_error
    # a late refusal of settings changed since moves nothing back (a budget raised to 100 went
    # down to 44, and the stale refusal was shown: code review)
    from app.ui.controller import Job, Outcome

    c.budget.set_number(100)
    c.apply_now()
    stale = Outcome(
        Job(0, DepthRequest(budget_ms=15.0), None), error="15 ms refused", refused=True, minimum_ms=44.0
    )
    window.controller._on_done(stale)
    assert c.budget.number() == 100 and not window.last_error


def test_a_playing_source_under_a_too_low_budget_raises_it_without_a_refusal(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Ticks sent the refused request again while the raised one waited out the debounce: the
    refusal flashed five times (code review)."""
    engine = _FastestAnswerEngine()
    window = _window(qtbot, lambda spec: FakeSource(1000), engine)
    errors: list[str] = []
    window.notices.error = lambda message: errors.append(message)  # type: ignore[method-assign]
    window.open_spec("live")
    _wait_result(qtbot, window)
    window.controls.budget_on.setChecked(True)
    window.controls.budget.set_number(15)
    qtbot.waitUntil(lambda: engine.requests[-1].budget_ms == 58.0, timeout=5000)
    qtbot.wait(300)
    assert errors == [] and window.controls.budget.number() == 58


def test_a_closed_panel_comes_back_from_the_view_menu_and_file_loads_a_calibration(
    qtbot, monkeypatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A closed dock had no way back that anything pointed to; loading a calibration was only a
    button of the Calibration panel (review)."""
    from app.engine.calibration.files import write_opencv_yaml
    from app.ui import calibration_panel
    from tests.engine.calibration.test_chessboard import true_rig

    window = _window(qtbot, lambda spec: FakeSource(1))
    view = window.view_menu
    names = [a.text() for a in view.actions() if not a.isSeparator()]
    assert names == [
        "Fit images",
        "Large tabs below the images",
        "Full screen",
        "Notes on the last frame",
        "Controls",
        "Calibration",
        "Measure",
        "Latency",
        "Playback",
        "Reset settings to defaults…",
    ]
    controls = window.docks[0]
    controls.close()
    assert not controls.isVisible()
    next(a for a in view.actions() if a.text() == "Controls").trigger()
    assert controls.isVisible()
    rig = tmp_path / "rig.yaml"
    write_opencv_yaml(rig, true_rig())
    monkeypatch.setattr(
        calibration_panel.QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(rig), ""))
    )
    window.docks[2].raise_()  # the Measure tab in front of the Calibration one
    window.load_calibration_action.trigger()
    assert window.calibration.file_label.text().startswith("rig.yaml: f ")
    assert window.calibration.isVisible()  # its dock was brought to the front, where it says so


def test_a_laptop_first_opening_puts_the_side_docks_beside_controls(qtbot) -> None:  # type: ignore[no-untyped-def]
    """At 1366 px the three docks side by side left the images about 300 px wide (review)."""
    from PySide6.QtCore import Qt

    from app.ui.main_window import WIDE_LAYOUT_PX

    window = _window(qtbot, lambda spec: FakeSource(1))
    controls, calibration, measure, _ = window.docks
    window.layout_restored = True  # a layout the user arranged: left as it is
    window.fit_width(1366)
    assert window.dockWidgetArea(calibration) == Qt.DockWidgetArea.RightDockWidgetArea
    window.layout_restored = False
    window.fit_width(WIDE_LAYOUT_PX)  # wide enough: as built
    assert window.dockWidgetArea(calibration) == Qt.DockWidgetArea.RightDockWidgetArea
    window.fit_width(1366)
    left = Qt.DockWidgetArea.LeftDockWidgetArea
    assert window.dockWidgetArea(calibration) == left and window.dockWidgetArea(measure) == left
    assert set(window.tabifiedDockWidgets(controls)) == {calibration, measure}


def test_comparing_with_sgbm_as_the_main_engine_says_so(qtbot) -> None:  # type: ignore[no-untyped-def]
    """SGBM main and SGBM side by side: the second pane kept an earlier frame's answer (another
    colour range) or nothing, without a word."""
    window = _window(qtbot, lambda spec: FakeSource(1))  # the real SGBM engine
    window.open_spec("pair")
    _wait_result(qtbot, window)
    with qtbot.waitSignal(window.controller.resultShown, timeout=5000) as blocker:
        window.controls.compare.setChecked(True)
    assert blocker.args[0].baseline is None and window.top.currentIndex() == 1
    assert "SGBM is the main engine" in window.baseline_view.title.full_text
    assert window.baseline_view.image.image is None
    # the tick compares nothing here: greyed, and why (it stayed live: review); kept for Bi3D
    compare = window.controls.compare
    assert not compare.isEnabled() and "choose bi3d" in compare.toolTip() and compare.isChecked()


def test_play_and_pause_do_not_move_the_buttons_beside_them(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QToolBar

    window = _window(qtbot, lambda spec: FakeSource(1))
    bar = window.findChild(QToolBar, "playback")
    step = bar.widgetForAction(window.step_action)
    before = step.x()
    window._show_paused(True)  # the label reads Play
    qtbot.wait(50)
    assert window.pause_action.text() == "Play" and step.x() == before
    window._show_paused(False)
    qtbot.wait(50)
    assert step.x() == before


def test_a_runtime_asked_for_that_cannot_run_is_said_when_chosen(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Runtime onnxruntime with bf16 ran torch, said only in the status bar's tooltip (review)."""
    window = _bi3d_window(qtbot)
    c = window.controls.engine_controls
    c["precision"].setCurrentText("bf16")  # type: ignore[attr-defined]
    c["runtime"].setCurrentText("onnxruntime")  # type: ignore[attr-defined]
    text = window.notices.text.text()
    assert "Runtime onnxruntime cannot run here (runs fp32 only, not bf16)" in text, text
    c["precision"].setCurrentText("fp32")  # type: ignore[attr-defined]
    assert "cannot run here" not in window.notices.text.text()


def test_a_short_window_gives_the_images_the_room(qtbot) -> None:  # type: ignore[no-untyped-def]
    """At 800 x 500 the depth was 120 x 80 px beside a larger right image and a full-height
    latency plot (review)."""
    from app.ui import main_window

    window = _window(qtbot, lambda spec: FakeSource(1))
    window.resize(1366, 768)
    window.central_split.setSizes([300, 300])  # dragged: the tabs as tall as the images
    qtbot.wait(50)
    window.resize(1024, 600)
    qtbot.waitUntil(lambda: window.height() <= 600, timeout=2000)
    qtbot.wait(50)
    top, bottom = window.central_split.sizes()
    assert bottom <= (top + bottom) // 3 + 1
    assert window.latency_dock.height() <= max(main_window.LATENCY_MIN_PX, window.height() // 7) + 8
    assert window.minimumWidth() == main_window.MIN_WINDOW[0]


def test_reset_settings_writes_the_defaults_keeps_the_output_folder_and_restarts(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Settings carried over from run to run with no way back to the defaults (review)."""
    from app.ui.settings import load_settings

    window = _window(qtbot, lambda spec: FakeSource(1))
    window.settings.output_folder = str(tmp_path)
    window.controls.mode.setCurrentText("quantized")
    restarted: list[bool] = []
    window.restart = lambda: restarted.append(True)
    window.confirm_reset = lambda: False  # cancelled: nothing happens
    window.reset_settings()
    assert not restarted and window.isVisible()
    window.confirm_reset = lambda: True
    window.reset_settings()
    saved, _ = load_settings()
    assert restarted and not window.isVisible()
    assert saved.mode == "continuous" and saved.output_folder == str(tmp_path)  # closing kept the defaults


def test_a_reset_starts_the_window_again_on_the_source_open_now() -> None:
    """It reopened the folder given on the command line, not the demo opened since (review)."""
    from app.ui.main_window import restart_args

    script = ["/v/bin/bi3d-studio"]
    assert restart_args([*script, "gui", "pairs", "--calib", "c.yaml"], "demo") == [*script, "gui", "demo"]
    assert restart_args(["-m", "app", "--debug", "gui"], "a.png,b.png") == [
        "-m",
        "app",
        "--debug",
        "gui",
        "a.png,b.png",
    ]
    assert restart_args([*script, "gui", "pairs"], "") == [*script, "gui"]
    assert restart_args(script, "rec") == [*script, "gui", "rec"]


def test_min_confidence_can_be_typed_back_to_its_default(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Dragging the slider gave 0.09 or 0.11, never 0.10 again (review): a number box beside it."""
    from app.ui.controls import ControlsPanel

    panel = ControlsPanel(Settings())
    qtbot.addWidget(panel)
    panel.min_confidence.setValue(37)
    assert panel.min_confidence_box.value() == 0.37 and panel.settings.min_confidence == 0.37
    panel.min_confidence_box.setValue(0.1)
    assert panel.min_confidence.value() == 10 and panel.settings.min_confidence == 0.1
    # typed key by key: the first digit was answered at once and rewritten to "0.00" under the
    # cursor, and "0.25" ended as 0.20 or 0.00 (review)
    box = panel.min_confidence_box
    box.lineEdit().selectAll()
    qtbot.keyClicks(box.lineEdit(), "0.25")
    qtbot.keyClick(box.lineEdit(), Qt.Key.Key_Return)
    assert box.value() == 0.25 and panel.settings.min_confidence == 0.25
    assert panel.min_confidence.value() == 25


def test_playback_keys_are_found_in_a_menu(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Space and → were in no menu, only in the playback bar's tooltips (review)."""
    window = _window(qtbot, lambda spec: FakeSource(1))
    names = {a.text(): a.shortcut().toString() for a in window.playback_menu.actions()}
    assert "Pause\tSpace" in names and names["Step"] == "Right" and "Loop" in names
    # paused, the menu's entry says Play without a check mark ("✓ Play" read as playing: review)
    entry = window.pause_menu_action
    entry.trigger()
    assert window.pause_action.isChecked() and entry.text() == "Play\tSpace" and not entry.isCheckable()
    entry.trigger()
    assert not window.pause_action.isChecked() and entry.text() == "Pause\tSpace"


def test_pause_holds_a_source_whose_time_can_wait(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The synthetic scene went on while paused: Step after 10 s jumped 250 frames (review)."""

    class _Held(FakeSource):
        def __init__(self) -> None:
            super().__init__(50)
            self.held: list[bool] = []

        def hold(self, held: bool) -> None:
            self.held.append(held)

    source = _Held()
    window = _window(qtbot, lambda spec: source)
    window.open_spec("synthetic")
    _wait_result(qtbot, window)
    window.controller.set_paused(True)
    window.controller.set_paused(False)
    assert source.held[-2:] == [True, False]


def test_a_still_pair_greys_pause_step_and_loop(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A still pair showed a live Pause button (and Step, Loop) that did nothing (review)."""
    sources = {"pair": lambda: FakeSource(1), "video": lambda: FakeSource(5)}
    window = _window(qtbot, lambda spec: sources[spec]())
    window.open_spec("pair")
    _wait_result(qtbot, window)
    for action in (window.pause_action, window.step_action, window.loop_action, window.pause_menu_action):
        assert not action.isEnabled()
    assert window.pause_action.toolTip().startswith("a still pair: nothing to play")
    window.open_spec("video")  # a moving source: each comes back with its own tooltip
    _wait_result(qtbot, window)
    for action in (window.pause_action, window.step_action, window.loop_action, window.pause_menu_action):
        assert action.isEnabled()
    assert window.pause_action.toolTip().startswith("pause a video")
    window.pause_action.setChecked(True)


def test_enter_in_a_number_box_gives_the_keys_back_to_the_window(qtbot) -> None:  # type: ignore[no-untyped-def]
    """After a typed 0.10 in Min confidence, T (Large tabs) did nothing: the box kept the keys
    (review). Enter applies the value and lets go of the focus."""
    from PySide6.QtCore import Qt

    window = _window(qtbot, lambda spec: FakeSource(1))
    box = window.controls.min_confidence_box
    window.activateWindow()
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=2000)
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert not box.hasFocus()


def test_loading_a_model_gives_sgbm_side_by_side_back(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Load model switched the engine to Bi3D with the Engine box's signals held: the tick stayed
    greyed as under SGBM (code review)."""
    from app.engine.assets import default_weights

    window = _window(qtbot, lambda spec: FakeSource(1))  # SGBM runs
    assert not window.controls.compare.isEnabled()
    assert window.load_model(str(default_weights()))
    assert window.session.engine.name == "bi3d" and window.controls.compare.isEnabled()
