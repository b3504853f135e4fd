"""The calibration panel's board capture (chessboard and ChArUco) and self-rectification."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.calibration.charuco import CharucoTarget
from app.engine.calibration.files import load_calibration
from app.engine.depth.engines import EngineOptions
from app.engine.session import Session
from app.engine.types import Calibration, StereoPair
from app.ui import calibration_panel
from app.ui.main_window import MainWindow
from app.ui.settings import Settings
from tests.engine.calibration import test_charuco
from tests.engine.calibration.test_chessboard import BASELINE_M, POSES, render_pair, true_rig

HANDHELD = Path(__file__).resolve().parents[1] / "data" / "opencv_handheld"


class Still:
    frame_count = 1

    def __init__(self, pair: StereoPair) -> None:
        self.pair = pair

    def read(self) -> StereoPair:
        return self.pair

    def close(self) -> None:
        pass


def _window(qtbot, holder: list[StereoPair]) -> MainWindow:  # type: ignore[no-untyped-def]
    window = MainWindow(
        Session(EngineOptions(engine="sgbm")), Settings(max_disparity=64), lambda s: Still(holder[0])
    )
    qtbot.addWidget(window)
    window.show()
    return window


def _show(qtbot, window: MainWindow, holder: list[StereoPair], pair: StereoPair) -> None:  # type: ignore[no-untyped-def]
    holder[:] = [pair]
    opened: list[bool] = []
    window.controller.sourceChanged.connect(lambda _d: opened.append(True))
    # the first depth of *this* source: a refresh of the last one may still be on its way
    with qtbot.waitSignal(
        window.controller.resultShown, timeout=20_000, check_params_cb=lambda _r: bool(opened)
    ):
        window.open_spec("still")


def _no_dialog(monkeypatch: pytest.MonkeyPatch) -> None:
    """A save dialog must not open."""

    def dialog(*args: object, **kwargs: object) -> tuple[str, str]:
        raise AssertionError("a save dialog opened unasked")

    monkeypatch.setattr(calibration_panel.QFileDialog, "getSaveFileName", staticmethod(dialog))


def _sample_rig_window(qtbot, rig: Path) -> MainWindow:  # type: ignore[no-untyped-def]
    """A window showing the sample's first raw pair with ``rig`` loaded (its rectified answer shown)."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, _sample_pair())
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        window.calibration.load(rig)
    return window


def _save_to(monkeypatch: pytest.MonkeyPatch, path: Path | None) -> None:
    """The save dialog answers ``path``; None: it was cancelled (Qt gives an empty name)."""
    name = "" if path is None else str(path)

    def dialog(parent, title, start, kinds):  # type: ignore[no-untyped-def]
        # Qt's own signature: the Save button passed clicked's bool as the title, a TypeError there
        assert all(isinstance(text, str) for text in (title, start, kinds)), (title, start, kinds)
        return name, ""

    monkeypatch.setattr(calibration_panel.QFileDialog, "getSaveFileName", staticmethod(dialog))


def test_chessboard_capture_calibrates_the_rig(qtbot, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    panel = window.calibration
    panel.pattern.setText("8x6")
    panel.square.setValue(0.03)
    for rvec, centre in POSES[:6]:
        _show(qtbot, window, holder, StereoPair(*render_pair(rvec, centre)))
        before = len(panel.views)
        panel.capture_view()
        qtbot.waitUntil(lambda b=before: len(panel.views) == b + 1, timeout=20_000)
    assert panel.calibrate_button.isEnabled() and "6 views" in panel.board_status.text()
    assert "need" not in panel.board_status.text()  # "(need 4)" stood beside 13 views
    # another board size: Calibrate does not reuse the 8x6 views as if they were of it, and a
    # capture names the board that is in view (it said "move it into view")
    panel.pattern.setText("7x5")
    panel.calibrate()
    assert "were captured with a 8x6 chessboard" in panel.board_status.text()
    panel.capture_view()
    qtbot.waitUntil(lambda: "no 7x5 chessboard" in panel.board_status.text(), timeout=30_000)
    assert "set Pattern to 8x6" in panel.board_status.text() and len(panel.views) == 6
    panel.pattern.setText("8x6")
    _no_dialog(monkeypatch)
    with qtbot.waitSignal(panel.calibrationChanged, timeout=30_000):
        panel.calibrate()
    assert "RMS" in panel.board_status.text() and "per view" in panel.board_status.text()
    # a range the views leave much of out is said with the fit (5 views over a tenth of the frame
    # gave a rig that zoomed 1.9 x, unsaid: review), as calib chessboard says it
    narrow = window.session.desk.coverage(panel.params).narrow()
    assert ("add views that vary it, then calibrate again" in panel.board_status.text()) == bool(narrow)
    # kept in the output folder at once, no dialog opened unasked (review)
    (out,) = (window.session.output_root / "calibrations").glob("*-board-calibration.yaml")
    assert f"saved to {out}" in panel.file_label.text()
    cal, rig = load_calibration(out)
    assert rig is not None and cal.baseline_m == pytest.approx(BASELINE_M, rel=0.01)
    # views of the last source's size on another source: refused, not a rig of the wrong camera
    # written and then set aside (review)
    small = StereoPair(*(np.ascontiguousarray(i[::2, ::2]) for i in render_pair(*POSES[0])))
    _show(qtbot, window, holder, small)
    panel.calibrate()
    assert "views are of 640x480 frames, this source's are 320x240" in panel.board_status.text()
    assert len(list((window.session.output_root / "calibrations").glob("*.yaml"))) == 1


def test_charuco_capture_finds_the_board(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = CharucoTarget(test_charuco.SQUARES, test_charuco.SQUARE_M, test_charuco.MARKER_M)
    rig = true_rig()
    r, t = test_charuco._pose(*POSES[0])
    left = test_charuco._render(target, rig.K1, r, t)
    right = test_charuco._render(target, rig.K2, rig.R @ r, rig.R @ t + rig.T)
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, StereoPair(*(np.repeat(i[:, :, None], 3, axis=2) for i in (left, right))))
    panel = window.calibration
    panel.board.setCurrentText("ChArUco")
    assert panel.pattern.text() == "7x5" and panel.marker.isEnabled()
    panel.pattern.setText("8x6")
    panel.square.setValue(test_charuco.SQUARE_M)
    panel.marker.setValue(test_charuco.MARKER_M)
    panel.capture_view()
    qtbot.waitUntil(lambda: len(panel.views) == 1, timeout=20_000)
    obj, pl, pr = panel.views[0]
    assert len(obj) == len(pl) == len(pr) >= 20 and "1 view (need" in panel.board_status.text()
    # the same frame again is not a second view (five presses made "5 views" of one image, and
    # a confident calibration of two)
    panel.capture_view()
    assert len(panel.views) == 1 and "this frame is view 1 already" in panel.board_status.text()


def test_a_capture_says_when_the_board_is_larger_than_the_pattern(qtbot) -> None:  # type: ignore[no-untyped-def]
    """OpenCV finds 8x6 inside the sample's 9x6 board: the calibration used part of it, unsaid."""
    sample = Path(__file__).resolve().parents[1] / "data" / "opencv_stereo"
    pair = StereoPair(
        *(cv2.cvtColor(cv2.imread(str(sample / n)), cv2.COLOR_BGR2RGB) for n in ("left02.jpg", "right02.jpg"))
    )
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, pair)
    panel = window.calibration
    panel.pattern.setText("8x6")
    panel.capture_view()
    qtbot.waitUntil(lambda: len(panel.views) == 1, timeout=20_000)
    words = "this board has 9x6 inner corners and Pattern 8x6 uses part of it; Pattern 9x6 uses all"
    assert words in panel.board_status.text()


def _cross_centres(segments: np.ndarray) -> np.ndarray:
    """The corners ``corner_marks`` crossed: the midpoints of its first half (the horizontal arms)."""
    arms = np.asarray(segments).reshape(-1, 2, 2)
    return arms[: len(arms) // 2].mean(axis=1)


def test_a_capture_crosses_the_board_corners_where_the_view_shows_them(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A capture drew nothing: the user could not see what had been found (review)."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    panel = window.calibration
    panel.pattern.setText("8x6")
    drawn: list[np.ndarray] = []
    panel.linesReady.connect(lambda s: drawn.append(s) if s is not None else None)
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))
    panel.capture_view()
    qtbot.waitUntil(lambda: len(drawn) == 1, timeout=20_000)
    _obj, left, _right = panel.views[0]
    assert np.allclose(_cross_centres(drawn[0]), np.asarray(left).reshape(-1, 2))
    # with a rig loaded the view shows the rectified frame: the crosses move with the board
    panel.apply(true_rig().rectified(), true_rig(), "true rig")
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[1])))
    panel.capture_view()
    qtbot.waitUntil(lambda: len(drawn) == 2, timeout=20_000)
    shown = window.controller.last.pair.left
    found = panel._target().detect(cv2.cvtColor(shown, cv2.COLOR_RGB2GRAY))
    assert found is not None
    seen = np.asarray(found.points).reshape(-1, 2)
    crosses = _cross_centres(drawn[-1])
    raw_left = np.asarray(panel.views[-1][1]).reshape(-1, 2)
    assert len(crosses) == len(seen) == len(raw_left)
    assert np.abs(crosses - seen).max() < 1.0  # on the rectified image's own corners
    assert np.abs(raw_left - seen).max() > 3.0  # where the raw corners would have been wrong
    # the crosses are of that frame: a live camera's next frame takes them away, a refresh does not
    cleared: list[object] = []
    panel.linesReady.connect(lambda s: cleared.append(s) if s is None else None)
    last = window.controller.last
    panel.frame_shown(last)
    assert not cleared
    panel.frame_shown(dataclasses.replace(last, raw=StereoPair(*render_pair(*POSES[2]))))
    assert cleared == [None]


def _handheld_window(
    qtbot, monkeypatch: pytest.MonkeyPatch
) -> tuple[MainWindow, StereoPair, list[StereoPair]]:  # type: ignore[no-untyped-def]
    """A window showing OpenCV's hand-held pair (raw, 39 px apart), no save dialog allowed."""
    pair = StereoPair(
        *(cv2.cvtColor(cv2.imread(str(HANDHELD / n)), cv2.COLOR_BGR2RGB) for n in ("left.jpg", "right.jpg"))
    )
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, pair)
    _no_dialog(monkeypatch)
    return window, pair, holder


def test_self_rectify_button_on_the_hand_held_pair(qtbot, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window, _, holder = _handheld_window(qtbot, monkeypatch)
    panel = window.calibration
    with qtbot.waitSignals([panel.calibrationChanged, window.controller.resultShown], timeout=30_000):
        panel.self_rectify()  # then the frame is shown rectified by the new rig
    text = panel.self_status.text()
    after = float(text.split("on the raw frames, ")[1].split(" px after")[0])
    (out,) = (window.session.output_root / "calibrations").glob("*-self-rectification.yaml")
    assert (
        after <= 1.0
        and "projective" in text
        and panel.rig is not None
        and f"saved to {out}" in panel.file_label.text()
    )
    with qtbot.waitSignal(panel.linesReady, timeout=30_000):
        panel.run_check()
    assert "RECTIFIED" in panel.verdict.text() and "NOT" not in panel.verdict.text()
    panel.add_self_frame()
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))  # another source
    assert panel.self_status.text() == "" and panel.self_frames == []  # they were of the last one


def test_self_rectify_leaves_a_rectified_pair_alone_and_clear_drops_a_calibration(
    qtbot, monkeypatch, tmp_path: Path, demo_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    pair = StereoPair(
        *(cv2.cvtColor(cv2.imread(str(demo_dir / n)), cv2.COLOR_BGR2RGB) for n in ("im0.png", "im1.png"))
    )
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, pair)
    panel = window.calibration
    saves: list[object] = []
    monkeypatch.setattr(
        calibration_panel.QFileDialog, "getSaveFileName", lambda *a, **k: saves.append(a) or ("", "")
    )
    panel.self_rectify()
    qtbot.waitUntil(lambda: "already rectified" in panel.self_status.text(), timeout=30_000)
    assert (
        panel.rig is None and window.session.calibration is None and not saves
    )  # nothing asked, nothing applied
    # a calibration of one's own (here: the hand-held pair's self-rectification) can be dropped
    handheld = StereoPair(
        *(cv2.cvtColor(cv2.imread(str(HANDHELD / n)), cv2.COLOR_BGR2RGB) for n in ("left.jpg", "right.jpg"))
    )
    _show(qtbot, window, holder, handheld)
    with qtbot.waitSignal(panel.calibrationChanged, timeout=30_000):
        panel.self_rectify()
    assert panel.rig is not None and window.session.rectifier is not None
    with qtbot.waitSignal(panel.calibrationChanged, timeout=10_000):
        panel.clear_button.click()
    assert panel.rig is None and window.session.calibration is None and window.session.rectifier is None
    assert panel.file_label.text() == calibration_panel.NO_CALIBRATION


def test_a_check_result_goes_with_the_source_and_the_calibration_it_was_of(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import Calibration

    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))
    panel = window.calibration
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert panel.verdict.text()
    panel.apply(Calibration(focal_px=500.0, baseline_m=0.1), None, "typed")
    assert panel.verdict.text() == "" and panel.figures.text() == ""
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert panel.verdict.text()
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[1])))  # another source
    assert panel.verdict.text() == ""


def test_the_check_says_where_its_lines_are_when_sgbm_is_side_by_side(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The comparison shows no left image, so the check's match lines were drawn out of sight (review)."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))
    window.settings.compare = True
    window.notices.dismiss()  # the pair's own "not rectified" error stays, and news waits behind it
    with qtbot.waitSignal(window.calibration.linesReady, timeout=20_000):
        window.calibration.run_check()
    assert window.notices.level == "info", window.notices.text.text()
    assert 'the marks are drawn on the left image: untick "SGBM side by side"' in window.notices.text.text()


def test_the_check_adds_the_board_in_view(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A repetitive board fools feature matches; its own corners cannot be fooled (review)."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))
    panel = window.calibration
    panel.pattern.setText("8x6")
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert "Board in view" in panel.verdict.text() and "corners lie" in panel.verdict.text()
    panel.pattern.setText("not a size")  # the board's fields are only needed for a capture
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert panel.verdict.text() and "Board in view" not in panel.verdict.text()


def test_a_self_rectification_without_a_baseline_is_in_baselines_saved_later_and_set_aside(
    qtbot, monkeypatch, tmp_path: Path, demo_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    """The review: a 1 m placeholder shown as "baseline 1000.0 mm" and "6.66 m", saved unmarked
    (it reloaded as a 1 m rig), no way to save after a cancelled dialog, and a rig kept for the
    demo's frames of another size refused every frame."""
    from app.ui import work

    handheld = StereoPair(
        *(cv2.cvtColor(cv2.imread(str(HANDHELD / n)), cv2.COLOR_BGR2RGB) for n in ("left.jpg", "right.jpg"))
    )
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, handheld)
    panel = window.calibration
    assert not panel.save_button.isEnabled()
    _save_to(monkeypatch, None)  # the dialog after Self-rectify cancelled
    with qtbot.waitSignals([panel.calibrationChanged, window.controller.resultShown], timeout=30_000):
        panel.self_rectify()
    assert "baseline unknown" in panel.file_label.text() and "mm" not in panel.file_label.text()
    last = window.controller.last
    assert last is not None and last.calibration is not None and not last.calibration.baseline_known
    ys, xs = np.nonzero(np.isfinite(last.depth.disparity) & (last.depth.disparity > 1))
    assert "baselines" in work.readout(last, int(xs[0]), int(ys[0]))
    out = tmp_path / "later.yaml"
    _save_to(monkeypatch, out)
    assert panel.save_button.isEnabled()
    panel.save_button.click()
    assert out.exists() and f"saved to {out}" in panel.file_label.text()
    reloaded, _, _ = window.session.desk.load(out, None)
    assert not reloaded.baseline_known  # marked: it reloads in baselines, not as a 1 m rig
    # a measured baseline gives metres
    panel.self_baseline.setValue(0.075)
    _save_to(monkeypatch, None)
    with qtbot.waitSignal(panel.calibrationChanged, timeout=30_000):
        panel.self_rectify()
    assert "baseline 75.0 mm" in panel.file_label.text()
    # the demo's frames are another size: the rig is set aside, said, and depth goes on in pixels
    demo = StereoPair(
        *(cv2.cvtColor(cv2.imread(str(demo_dir / n)), cv2.COLOR_BGR2RGB) for n in ("im0.png", "im1.png"))
    )
    _show(qtbot, window, holder, demo)
    assert window.session.rectifier is None and panel.rig is None and not panel.save_button.isEnabled()
    assert "set aside" in panel.file_label.text() and "set aside" in window.last_error
    assert window.controller.last is not None and window.controller.last.pair.left.shape == demo.left.shape
    # the error was of that source: the next source takes it away (it stayed, naming the old size)
    _show(qtbot, window, holder, handheld)
    assert "set aside" not in window.notices.text.text()
    # and the rig set aside comes back with frames of its size (it stayed away for good: review)
    qtbot.waitUntil(lambda: panel.rig is not None, timeout=10_000)
    assert window.session.rectifier is not None and "baseline 75.0 mm" in panel.file_label.text()
    assert "is in use again" in window.notices.text.text()
    # a source with its own calibration: the rig still goes, but depth is metric, so it is news,
    # not an error that says "depth in pixels" (review)
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))  # the rig's frame size
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.apply(true_rig().rectified(), true_rig(), "true rig")
    _show(qtbot, window, holder, dataclasses.replace(demo, calibration=Calibration(995.0, 0.193)))
    assert window.notices.level == "info" and "the source's own calibration" in window.notices.text.text()
    assert "pixels" not in window.notices.text.text()
    # frames of the rig's size with a calibration of their own (the synthetic scene): the source's
    # wins, where the rig warped them into noise; its figures are the panel's (review)
    _show(qtbot, window, holder, StereoPair(*render_pair(*POSES[0])))
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.apply(true_rig().rectified(), true_rig(), "true rig")
    assert window.session.rectifier is not None  # in use on frames of its size
    own = Calibration(640.0, 0.12)
    _show(qtbot, window, holder, dataclasses.replace(StereoPair(*render_pair(*POSES[0])), calibration=own))
    assert window.session.rectifier is None  # (these raw frames are then said to be unrectified)
    last = window.controller.last
    assert last is not None and last.calibration == own
    qtbot.waitUntil(
        lambda: panel.file_label.text().startswith(f"{calibration_panel.SOURCE_CALIBRATION}: f 640.0 px"),
        timeout=5000,
    )


SAMPLE = Path(__file__).resolve().parents[1] / "data" / "opencv_stereo"
DOCK_WIDTH_PX = 330  # the Calibration dock's width on a first, wide opening (MainWindow._build_docks)


def _sample_pair(number: str = "01") -> StereoPair:
    return StereoPair(
        *(
            cv2.cvtColor(cv2.imread(str(SAMPLE / f"{s}{number}.jpg")), cv2.COLOR_BGR2RGB)
            for s in ("left", "right")
        )
    )


@pytest.fixture(scope="module")
def sample_rig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's own calibration (9x6, 25 mm squares: baseline 83 mm), as a file."""
    from app.engine.calibration.chessboard import ChessboardTarget
    from app.engine.calibration.files import write_opencv_yaml
    from app.engine.calibration.folder import calibrate_folder

    path = tmp_path_factory.mktemp("rig") / "sample.yaml"
    write_opencv_yaml(path, calibrate_folder(SAMPLE, ChessboardTarget((9, 6), 0.025)).rig)
    return path


def test_a_long_check_verdict_wraps_inside_the_dock(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The verdict with the board line did not wrap: the panel grew to 610 px, cut off by the dock."""
    from PySide6.QtWidgets import QScrollArea

    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, _sample_pair())
    panel = window.calibration
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert "Board in view (9x6 chessboard)" in panel.verdict.text()
    qtbot.wait(50)  # the layout takes in the new text
    scroll = next(s for s in window.findChildren(QScrollArea) if s.widget() is panel)
    assert panel.verdict.wordWrap() and panel.figures.wordWrap()
    assert panel.minimumSizeHint().width() <= DOCK_WIDTH_PX  # readable at the dock's first width
    assert panel.width() <= scroll.viewport().width()  # nothing cut off at the right edge


def test_the_check_advises_the_window_s_own_self_rectify(qtbot) -> None:  # type: ignore[no-untyped-def]
    """An unrectified pair's figures said "self-rectify with 'calib rectify'", a command."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, _sample_pair())  # OpenCV's raw chessboard pair: not rectified
    panel = window.calibration
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    text = panel.figures.text()
    assert "self-rectify with the Calibration panel's Self-rectify" in text, text
    assert "calib rectify" not in text and "\x1e" not in text


def test_self_rectify_with_a_good_rig_agrees_with_the_check(qtbot, monkeypatch, sample_rig: Path) -> None:  # type: ignore[no-untyped-def]
    """With the sample's own rig loaded the check said RECTIFIED (0.35 px) and Self-rectify
    "10.96 px before" (of the raw frames), then replaced the rig; its Baseline read "unknown"."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, _sample_pair())
    panel = window.calibration
    assert panel.self_baseline.text() == "not given"
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.load(sample_rig)
    loaded = panel.rig
    assert panel.self_baseline.value() == 0 and "the rig's, 83." in panel.self_baseline.text()
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert "RECTIFIED" in panel.verdict.text() and "NOT" not in panel.verdict.text()
    checked = panel.figures.text().split("RMS ")[1].split(" px")[0]
    saves: list[object] = []
    monkeypatch.setattr(
        calibration_panel.QFileDialog, "getSaveFileName", lambda *a, **k: saves.append(a) or ("", "")
    )
    panel.self_rectify()
    qtbot.waitUntil(lambda: "nothing changed" in panel.self_status.text(), timeout=30_000)
    text = panel.self_status.text()
    assert (
        text.startswith("sample.yaml rectifies this frame already") and f"vertical RMS {checked} px" in text
    )
    assert panel.rig is loaded and not saves and "before" not in text
    panel.clear()
    assert panel.self_baseline.text() == "not given"


def test_a_pose_re_fit_keeps_the_rig_s_name_and_its_intrinsics_count_as_measured(  # type: ignore[no-untyped-def]
    qtbot, monkeypatch, sample_rig: Path
) -> None:
    """Self-rectify with a rig that no longer fits (a camera knocked by 1 degree) re-fits its pose
    and keeps its intrinsics, but the result was named "self-rectification" and marked as made-up
    intrinsics: the next Self-rectify threw the real intrinsics away for a projective warp."""
    window = _sample_rig_window(qtbot, sample_rig)
    panel = window.calibration
    loaded = panel.rig
    assert loaded is not None
    knock = cv2.Rodrigues(np.array([0.0, 0.0, np.radians(1.0)]))[0]
    bent = dataclasses.replace(loaded, R=knock @ loaded.R, R1=None, R2=None, P1=None, P2=None, Q=None)
    bent = bent.with_rectification()
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.apply(bent.rectified(), bent, "sample.yaml")
    _save_to(monkeypatch, None)
    with qtbot.waitSignal(panel.calibrationChanged, timeout=60_000):
        panel.self_rectify()
    assert "pose re-fitted" in panel.self_status.text(), panel.self_status.text()
    assert panel.file_label.text().startswith("sample.yaml, pose re-fitted: ")
    assert not panel.rig_estimated and panel.rig is not None
    assert np.allclose(panel.rig.K1, loaded.K1)  # the measured intrinsics, kept
    assert "baseline 83." in panel.file_label.text()


def test_self_rectify_keeps_a_rig_the_re_fit_would_make_worse(qtbot, monkeypatch, sample_rig: Path) -> None:  # type: ignore[no-untyped-def]
    """A pose re-fitted to its own matches can line the frame up worse than the rig it replaces
    ('calib rectify' on pair 06 of the sample: 0.24 px on its matches, 0.50 px by the check,
    against 0.32 px with the rig given); it replaced the rig."""
    window = _sample_rig_window(qtbot, sample_rig)
    panel = window.calibration
    loaded = panel.rig
    real_check = calibration_panel.DESK.check
    figures = iter([0.8, 1.3])  # the rig in use, then the re-fit: marginal, then worse

    def check(left, right):  # type: ignore[no-untyped-def]
        report = real_check(left, right)
        rms = next(figures)
        return dataclasses.replace(report, vertical_rms_px=rms, verdict="marginal")

    monkeypatch.setattr(calibration_panel.DESK, "check", check)
    _save_to(monkeypatch, None)
    panel.self_rectify()
    qtbot.waitUntil(lambda: "nothing changed" in panel.self_status.text(), timeout=60_000)
    text = panel.self_status.text()
    assert text.startswith(
        "the re-fitted pose lines this frame up worse (vertical RMS 1.30 px) than sample.yaml"
    )
    assert "(0.80 px)" in text and panel.rig is loaded


def test_the_not_rectified_banner_names_the_calibration_in_use(qtbot, sample_rig: Path) -> None:  # type: ignore[no-untyped-def]
    """With a calibration loaded, the banner still advised loading one (review); a calibration
    changed takes back the advice given for the one before."""
    from app.engine.depth.alignment import unrectified_note

    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, _sample_pair())
    last = window.controller.last
    assert last is not None
    crooked = dataclasses.replace(last, depth=dataclasses.replace(last.depth, notes=[unrectified_note(5.0)]))
    window.notices.dismiss()
    window._unrectified_warned = None
    window._warn_if_unrectified(crooked)
    assert "load the rig's calibration" in window.notices.text.text()
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        window.calibration.load(sample_rig)
    assert window._unrectified_warned is None  # the advice of before is taken back
    window._warn_if_unrectified(crooked)
    assert "the calibration in use (sample.yaml) does not rectify these frames" in window.notices.text.text()


def test_a_calibration_in_use_takes_back_the_errors_it_supersedes(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path, sample_rig: Path, demo_dir: Path
) -> None:
    """A failed load's error stayed on screen after the next file loaded (review)."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, _sample_pair())
    panel = window.calibration
    bad = tmp_path / "calib.txt"
    bad.write_text("cam0=[1 0 1; 0 1 1; 0 0 1]\n")
    panel.load(bad)
    assert window.notices.level == "error" and "field 'baseline' is missing" in window.notices.text.text()
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.load(sample_rig)
    assert not window.notices.isVisible()
    # a rig set aside for another frame size: the calibration loaded next supersedes that error too
    _show(
        qtbot,
        window,
        holder,
        StereoPair(*(cv2.imread(str(demo_dir / n))[:, :, ::-1].copy() for n in ("im0.png", "im1.png"))),
    )
    assert window.notices.level == "error" and "set aside" in window.notices.text.text()
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.load(demo_dir / "calib.txt")
    assert not window.notices.isVisible()


def test_a_capture_of_another_size_keeps_the_views(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A frame of another size dropped every view captured so far, unsaid (review)."""
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    panel = window.calibration
    for count, number in enumerate(("01", "02"), start=1):
        _show(qtbot, window, holder, _sample_pair(number))
        panel.capture_view()
        qtbot.waitUntil(lambda c=count: len(panel.views) == c, timeout=20_000)
    small = _sample_pair("03")
    _show(qtbot, window, holder, StereoPair(*(cv2.resize(i, (320, 240)) for i in (small.left, small.right))))
    status = panel.board_status.text()
    panel.capture_view()
    qtbot.waitUntil(lambda: panel.board_status.text() != status, timeout=20_000)
    assert len(panel.views) == 2 and panel.image_size == (640, 480)
    assert panel.board_status.text().startswith(
        "this frame is 320x240, not the 640x480 of the 2 views captured"
    )
    panel.capture_view()  # again: the user means it
    qtbot.waitUntil(lambda: panel.image_size == (320, 240), timeout=20_000)
    assert len(panel.views) == 1


def test_a_self_rectifications_guessed_focal_length_is_said_wherever_its_metres_are_read(
    qtbot, monkeypatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """With a measured baseline, a projective self-rectification's metres read as measured ones
    (7.3 m where 3.8 m was right), in the window and from its saved file; a still pair added
    and then self-rectified counted twice ("1130 matches, 2 frames") (review)."""
    from app.engine.calibration.files import focal_guessed, load_for_frames

    window, pair, _ = _handheld_window(qtbot, monkeypatch)
    panel = window.calibration
    panel.add_self_frame()
    assert panel.self_status.text().startswith("1 frame added")
    panel.add_self_frame()
    assert "added already" in panel.self_status.text() and len(panel.self_frames) == 1
    panel.self_baseline.setValue(0.1)
    with qtbot.waitSignal(panel.calibrationChanged, timeout=30_000):
        panel.self_rectify()
    assert " matches, 1 frame, " in panel.self_status.text()  # the frame added is the one on screen: once
    assert "f is a guess, so metres are rough" in panel.file_label.text()
    (out,) = (window.session.output_root / "calibrations").glob("*-self-rectification.yaml")
    assert focal_guessed(out)
    _, _, note = load_for_frames(out, None, (pair.left.shape[1], pair.left.shape[0]))
    assert note is not None and "is a self-rectification's guess, so its depths in metres are rough" in note
    panel.load(out)  # loaded again: still said
    assert "f is a guess" in panel.file_label.text()


def test_outlier_views_are_named_as_views_with_their_figures() -> None:
    from app.ui.calibration_panel import outlier_text

    # "outlier views: 2 (frame 2) (0.50 px)" read as two views or view 2 (review)
    assert outlier_text([]) == "outlier views: none"
    assert outlier_text(["2 (frame 2, 0.50 px)"]) == "outlier view: view 2 (frame 2, 0.50 px)"
    assert outlier_text(["2 (0.5 px)", "5 (0.6 px)"]) == "outlier views: views 2 (0.5 px), 5 (0.6 px)"


def test_a_rectified_pair_s_calibration_is_set_aside_by_another_size_and_comes_back(  # type: ignore[no-untyped-def]
    qtbot, tmp_path
) -> None:
    """A 641 x 555 pair's calib.txt stayed in use over a 640 x 480 folder, in metres, unsaid
    (re-check); set aside, it never came back as a rig does (code review)."""
    rng = np.random.default_rng(0)

    def pair(w: int, h: int) -> StereoPair:
        left = cv2.GaussianBlur(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), (0, 0), 1.5)
        return StereoPair(left, np.roll(left, -6, axis=1))

    calib = tmp_path / "calib.txt"
    calib.write_text(
        "cam0=[500 0 80; 0 500 60; 0 0 1]\ncam1=[500 0 80; 0 500 60; 0 0 1]\ndoffs=0\nbaseline=100\n"
        "width=160\nheight=120\nndisp=64\n"
    )
    holder: list[StereoPair] = []
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, pair(160, 120))
    panel = window.calibration
    with qtbot.waitSignal(window.controller.resultShown, timeout=20_000):
        panel.load(calib)
    assert window.controller.last is not None and window.controller.last.calibration is not None
    _show(qtbot, window, holder, pair(128, 96))
    assert window.controller.last.calibration is None and window.session.calibration is None
    assert "for 160x120 frames but this source's are 128x96: it is set aside" in panel.file_label.text()
    _show(qtbot, window, holder, pair(160, 120))
    qtbot.waitUntil(lambda: window.session.calibration is not None, timeout=10_000)
    assert "calib.txt (made for 160x120 frames) is in use again" in window.notices.text.text()
    # given before any frame (gui --calib): the size the file says it is for
    assert window.session.desk.declared_size(calib) == (160, 120)


def test_board_views_of_another_source_are_cleared_and_the_same_source_keeps_them(qtbot) -> None:  # type: ignore[no-untyped-def]
    """One view of a second rig was calibrated with the first rig's 13, and the result put in use
    (review): views are of one source."""
    holder: list[StereoPair] = [_sample_pair("01")]
    window = _window(qtbot, holder)
    panel = window.calibration

    def open_source(spec: str) -> None:
        opened: list[bool] = []
        window.controller.sourceChanged.connect(lambda _d: opened.append(True))
        with qtbot.waitSignal(
            window.controller.resultShown, timeout=20_000, check_params_cb=lambda _r: bool(opened)
        ):
            window.open_spec(spec)

    open_source("rig_a")
    panel.capture_view()
    qtbot.waitUntil(lambda: len(panel.views) == 1, timeout=20_000)
    open_source("rig_a")  # the same source again (a looped video is opened afresh): kept
    assert len(panel.views) == 1
    open_source("rig_b")
    assert panel.views == [] and not panel.calibrate_button.isEnabled()
    assert panel.board_status.text().startswith("the 1 board view of the last source were cleared")


def test_a_calibration_that_looks_made_for_another_size_is_an_error_not_a_panel_line(
    qtbot, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A file without its size whose principal point lies far off the frames' centre was said in
    the panel alone, under a zoomed-in corner as the left view and an empty 3D view (review)."""
    from tests.engine.calibration.test_calibration import _stereo_calib_sample

    _stereo_calib_sample(tmp_path)  # a 1280x720 rig's files, which say no size
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (360, 640, 3), dtype=np.uint8)
    holder = [StereoPair(image, np.roll(image, -4, axis=1))]
    window = _window(qtbot, holder)
    _show(qtbot, window, holder, holder[0])
    window.calibration.load(tmp_path / "intrinsics.yml")
    assert window.notices.level == "error" and "looks made for about 1281x721" in window.notices.text.text()


def test_a_check_of_one_frame_of_many_names_the_frame(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """After a seek, the check of frame 13 stood beside other frames, with no frame number (review)."""
    from tests.folders import pairs_folder

    folder = pairs_folder(tmp_path / "pairs", 3, size=(120, 160))
    window = MainWindow(Session(EngineOptions(engine="sgbm")), Settings(max_disparity=32))
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.controller.sourceEnded, timeout=20_000):
        window.open_spec(str(folder))
    panel = window.calibration
    with qtbot.waitSignal(panel.linesReady, timeout=20_000):
        panel.run_check()
    assert "</b> (frame 3)" in panel.verdict.text()
