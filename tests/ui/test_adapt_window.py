"""Adapting the model from the window: in the background, cancellable, then offered to load."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.depth.engines import EngineOptions
from app.engine.session import AdaptResult, Session
from app.ui.main_window import MainWindow
from app.ui.settings import Settings


def _window(qtbot, steps: int) -> MainWindow:  # type: ignore[no-untyped-def]
    session = Session(EngineOptions(engine="sgbm"))
    adapt = session.adapt
    session.adapt = lambda spec, out, **kw: adapt(spec, out, steps=steps, eval_frames=1)  # type: ignore[method-assign]
    window = MainWindow(session, Settings(max_disparity=48, range_px=(10.0, 40.0)))
    qtbot.addWidget(window)
    window.show()
    return window


def _open(qtbot, window: MainWindow, footage: Path) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.controller.resultShown, timeout=20000):
        window.open_spec(str(footage))


@pytest.mark.slow
def test_adapt_runs_in_the_background_and_loads_the_result(qtbot, footage: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, steps=2)
    _open(qtbot, window, footage)
    out = tmp_path / "adapted.pt"
    offered: list[AdaptResult] = []
    window.ask_adapt_path = lambda: str(out)
    window.ask_load_adapted = lambda result: offered.append(result) or True
    news: list[str] = []
    shown_info = window.notices.info
    window.notices.info = lambda message, **kw: (news.append(message), shown_info(message, **kw))[1]  # type: ignore[method-assign]
    window.adapt_action.trigger()
    assert window.adapt_runner.running and window.adapt_runner.dialog is not None
    with qtbot.waitSignal(window.controller.resultShown, timeout=20000):
        window.controller.refresh()  # the frame worker answers while the model adapts
    qtbot.waitUntil(lambda: bool(offered), timeout=180000)
    # the figures in words, as `adapt` prints them ("photometric_l1 33.400 -> 30.100": review)
    written = next(m for m in news if m.startswith("adapted model written to"))
    assert "photometric error (grey levels, lower is better): " in written and "photometric_l1" not in written
    assert offered[0].out == out and out.is_file()
    assert window.session.options.weights == out and window.session.engine.name == "bi3d"
    assert window.settings.weights == str(out)
    assert not window.adapt_runner.running and window.adapt_runner.dialog is None


@pytest.mark.slow
def test_cancel_stops_the_job_and_keeps_its_progress(qtbot, footage: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, steps=100000)
    _open(qtbot, window, footage)
    out = tmp_path / "adapted.pt"
    window.ask_adapt_path = lambda: str(out)
    news: list[str] = []  # every piece of news: the footage may end (and say so) after the cancel
    shown_info = window.notices.info
    window.notices.info = lambda message, **kw: (news.append(message), shown_info(message, **kw))[1]  # type: ignore[method-assign]
    window.adapt_action.trigger()
    dialog = window.adapt_runner.dialog
    assert dialog is not None
    qtbot.waitUntil(lambda: dialog.labelText().startswith("training"), timeout=180000)
    dialog.canceled.emit()  # what its Cancel button sends
    qtbot.waitUntil(
        lambda: not window.adapt_runner.running and window.adapt_runner.dialog is None, timeout=60000
    )
    # news, not an error: a cancel is what the user asked for
    text = next((m for m in news if "stopped at step" in m), "")
    assert window.notices.level == "info" and "to resume" in text and window.last_error == ""
    assert Path(str(out) + ".partial").is_file() and not out.exists()


def test_adapt_without_a_source_says_what_to_open(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, steps=1)
    window.settings.source = ""
    window.adapt_action.trigger()
    assert "open a recording" in window.last_error and not window.adapt_runner.running


def test_a_bad_model_file_is_a_message_and_keeps_the_engine(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = _window(qtbot, steps=1)
    bad = tmp_path / "bad.pt"
    bad.write_text("not a model")
    assert not window.load_model(str(bad))
    assert "not a readable PyTorch checkpoint" in window.last_error and window.session.engine.name == "sgbm"
    # a good model next: the bad one's error goes, and the load is said (the error stayed, unsaid)
    from app.engine.assets import default_weights

    good = default_weights()
    assert good is not None and window.load_model(str(good))
    assert window.notices.level == "info" and f"model {good.name} loaded" in window.notices.text.text()


def test_adapt_on_a_still_pair_is_refused_before_the_file_dialog(qtbot, demo_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """It asked where to write adapted.pt, then refused the one-frame source (review)."""
    window = _window(qtbot, steps=2)
    _open(qtbot, window, demo_dir)
    asked: list[bool] = []
    window.ask_adapt_path = lambda: asked.append(True) or ""  # type: ignore[func-returns-value]
    window.adapt_action.trigger()
    assert not asked and "this source is one pair" in window.last_error
