"""The settings file: a validated model, migrated from older versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app import vocabulary
from app.engine.errors import UserError
from app.ui.settings import SETTINGS_VERSION, Settings, engine_values, load_settings, save_settings


def test_engine_switches_are_fields_from_the_vocabulary() -> None:
    settings = Settings()
    assert engine_values(settings) == {s.name: s.default for s in vocabulary.ENGINE_SETTINGS}
    options = vocabulary.engine_options(engine_values(settings))
    assert options.engine is None and options.subpixel is True and options.sgbm.block_size == 5


def test_the_window_opens_with_the_command_lines_disparity_ceiling(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import DEFAULT_MAX_DISPARITY
    from app.ui.controls import ControlsPanel

    settings = Settings()
    assert settings.max_disparity == DEFAULT_MAX_DISPARITY and settings.max_disparity_auto
    panel = ControlsPanel(settings)
    qtbot.addWidget(panel)
    # the greyed number beside "auto" is the most auto sweeps to; binary planes and a selective
    # range reach as far as the command line's
    assert panel.max_disparity.value() == DEFAULT_MAX_DISPARITY
    assert panel.plane.maximum() == DEFAULT_MAX_DISPARITY == panel.range.maximum


def test_assignments_are_validated() -> None:
    settings = Settings()
    with pytest.raises(ValueError, match="device"):
        settings.device = "tpu"
    with pytest.raises(ValueError, match="budget_ms"):
        settings.budget_ms = float("nan")
    settings.update(max_disparity=32, plane_px=20.0, range_px=(5.0, 30.0))
    assert settings.max_disparity == 32


def test_unknown_and_bad_fields_are_named() -> None:
    with pytest.raises(UserError, match="unknown setting 'colour'"):
        Settings.from_dict({"colour": "red"})
    with pytest.raises(UserError, match=r"setting levels: .*outside"):
        Settings.from_dict({"levels": 5000})


def test_a_file_of_an_earlier_version_is_migrated_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"mode": "binary", "plane_px": 12.0, "device": "cpu", "subpixel": False}))
    settings, note = load_settings(path)
    assert settings.mode == "binary" and settings.subpixel is False and settings.version == SETTINGS_VERSION
    assert note is not None and "migrated" in note
    save_settings(settings, path)
    again, note = load_settings(path)
    assert note is None and again == settings


def test_a_bad_file_falls_back_to_defaults_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"version": 2, "max_disparity": "lots"}')
    settings, note = load_settings(path)
    assert settings == Settings() and note is not None and "max_disparity" in note
    assert (tmp_path / "settings.json.bad").read_text() == '{"version": 2, "max_disparity": "lots"}'
    assert f"kept as {tmp_path / 'settings.json.bad'}" in note  # the defaults are saved over it on exit
    path.write_bytes(b"\xff\xfe[")
    assert load_settings(path)[0] == Settings()


def test_a_window_opened_on_a_bad_settings_file_says_so_until_dismissed(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.ui.app import create_window

    path = tmp_path / "settings.json"
    path.write_text('{"version": 2, "mode": "quantized", "colormap": ')
    window = create_window("synthetic:96x128?frames=2", path)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.controller.resultShown, timeout=20000):
        pass
    text = window.notices.text.text()
    assert window.notices.level == "error" and "ignored" in text and "settings.json.bad" in text


def test_saved_engine_settings_that_do_not_load_give_way_to_every_default(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A bad weights file reset engine, weights, device and precision, but the Runtime box still
    read "onnxruntime" while torch ran (review)."""
    from app.ui.app import create_window
    from app.ui.settings import engine_values, save_settings

    path = tmp_path / "settings.json"
    picture = tmp_path / "picture.png"
    picture.write_bytes(b"not a checkpoint")
    save_settings(Settings(engine="bi3d", weights=str(picture), runtime="onnxruntime"), path)
    window = create_window("synthetic:96x128?frames=2", path)
    qtbot.addWidget(window)
    assert "saved engine settings did not load" in window.notices.text.text()
    assert engine_values(window.settings) == engine_values(Settings())
    assert window.controls.engine_controls["runtime"].currentText() == "auto"  # type: ignore[attr-defined]


def test_the_budget_checkbox_keeps_its_width_as_the_value_changes(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.ui.controls import ControlsPanel

    panel = ControlsPanel(Settings(budget_ms=5.0))
    qtbot.addWidget(panel)
    width = panel.budget_on.minimumWidth()
    assert width >= panel.budget_on.sizeHint().width()  # "Budget 5 ms": the slider beside stays put
    panel.budget.set_number(3000)
    assert panel.budget_on.text() == "Budget 3000 ms" and panel.budget_on.sizeHint().width() <= width


def test_depth_spacing_comes_back_with_a_calibration(qtbot) -> None:  # type: ignore[no-untyped-def]
    from app.engine.types import Calibration
    from app.ui.controls import ControlsPanel

    panel = ControlsPanel(Settings(mode="quantized"))
    qtbot.addWidget(panel)
    calibration = Calibration(focal_px=500.0, baseline_m=0.1)
    panel.set_calibration(calibration)
    panel.spacing.setCurrentText("depth")
    panel.set_calibration(None)  # a source without one: shown (and asked) in disparity
    assert panel.spacing.currentText() == "disparity" and panel.request().spacing.value == "disparity"
    panel.set_calibration(calibration)  # the next calibrated source: the user's choice again
    assert panel.spacing.currentText() == "depth" and panel.settings.spacing == "depth"
    panel.spacing.setCurrentText("disparity")  # chosen by the user: stays
    panel.set_calibration(None)
    panel.set_calibration(calibration)
    assert panel.spacing.currentText() == "disparity"


def test_the_budget_is_live_only_where_it_picks_something(qtbot) -> None:  # type: ignore[no-untyped-def]
    """In binary mode and with SGBM the budget stayed live: every move computed the frame again and
    changed nothing ("Budget 5 ms", "1 plane, took 26 ms": review)."""
    from app.ui.controls import ControlsPanel

    panel = ControlsPanel(Settings(mode="continuous", budget_on=True, budget_ms=200.0))
    qtbot.addWidget(panel)
    assert panel.budget_on.isEnabled() and panel.budget.isEnabled()
    assert panel.request().budget_ms == 200.0
    panel.mode.setCurrentText("binary")
    assert not panel.budget_on.isEnabled() and not panel.budget.isEnabled()
    assert panel.request().budget_ms is None and "quantized, selective" in panel.budget_on.toolTip()
    panel.mode.setCurrentText("quantized")
    assert panel.budget_on.isEnabled() and panel.budget.isEnabled()
    panel.budget_on.setChecked(False)
    assert panel.budget_on.isEnabled() and not panel.budget.isEnabled()
    panel.budget_on.setChecked(True)
    panel.engine_controls["engine"].setCurrentText("sgbm")  # type: ignore[attr-defined]
    assert not panel.budget_on.isEnabled() and not panel.budget.isEnabled()
    assert panel.request().budget_ms is None  # greyed, and not sent (it cost SGBM its quick preview)
