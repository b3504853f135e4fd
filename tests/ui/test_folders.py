"""The window's file dialogs start in the folder of the last file chosen, across sessions."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog

from app.engine.depth.engines import EngineOptions
from app.engine.session import Session
from app.ui.folders import FolderMemory
from app.ui.main_window import MainWindow
from app.ui.settings import Settings, load_settings, save_settings
from tests.ui.conftest import FakeSource


def test_the_folder_of_the_last_choice_is_where_the_next_starts(tmp_path: Path) -> None:
    settings = Settings()
    folders = FolderMemory(settings)
    assert folders.start() == "" and folders.start("stereo.yaml") == "stereo.yaml"  # as before
    folders.chose(str(tmp_path / "rig" / "left.png"))
    (tmp_path / "rig").mkdir()
    assert folders.start() == str(tmp_path / "rig")
    assert folders.start("points.ply") == str(tmp_path / "rig" / "points.ply")
    folders.chose(str(tmp_path), folder=True)
    assert folders.start() == str(tmp_path)
    folders.chose("")  # a cancelled dialog changes nothing
    assert folders.start() == str(tmp_path)
    (tmp_path / "gone").mkdir()
    folders.chose(str(tmp_path / "gone" / "a.pt"))
    (tmp_path / "gone").rmdir()
    assert folders.start() == ""  # a folder since removed: the working folder again
    path = tmp_path / "settings.json"
    folders.chose(str(tmp_path / "b.png"))
    save_settings(settings, path)
    assert load_settings(path)[0].last_folder == str(tmp_path)  # the next session starts there too


def test_the_dialogs_of_the_window_share_the_folder(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    session = Session(EngineOptions(engine="sgbm"))
    window = MainWindow(session, Settings(), lambda spec: FakeSource(1))
    qtbot.addWidget(window)
    rig = tmp_path / "rig"
    rig.mkdir()
    starts: list[str] = []

    def pick_two(parent, title, start, kinds):  # type: ignore[no-untyped-def]
        starts.append(start)
        return [str(rig / "left.png"), str(rig / "right.png")], ""

    def pick_one(parent, title, start, kinds):  # type: ignore[no-untyped-def]
        starts.append(start)
        return "", ""  # cancelled

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", staticmethod(pick_two))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(pick_one))
    window._pick_pair()
    window.calibration.pick_file()  # the calibration panel's dialog starts where the pair was
    window._pick_model()
    assert starts == ["", str(rig), str(rig)] and window.settings.last_folder == str(rig)


def test_the_layout_is_kept_beside_the_settings_with_the_central_split(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def window() -> MainWindow:
        w = MainWindow(
            Session(EngineOptions(engine="sgbm")), Settings(), lambda spec: FakeSource(1), tmp_path / "s.json"
        )
        qtbot.addWidget(w)
        w.resize(1000, 700)
        w.show()
        return w

    first = window()
    first.central_split.setSizes([200, 400])  # the 3D view made tall
    sizes = first.central_split.sizes()
    first.close()
    assert (tmp_path / "layout.ini").is_file()  # in the config folder, not Qt's own place
    second = window()
    assert second.central_split.sizes() == sizes


def test_the_window_opens_at_the_size_it_closed_at(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """It opened at the opening size whatever the user had made it (review); a size the screen no
    longer holds gives way to the opening size."""
    from app.ui.app import create_window, window_size

    first = create_window(None, tmp_path / "settings.json")
    qtbot.addWidget(first)
    first.show()
    first.resize(800, 650)
    qtbot.waitUntil(lambda: first.height() == 650, timeout=5000)
    first.close()
    second = create_window(None, tmp_path / "settings.json")
    qtbot.addWidget(second)
    assert (second.width(), second.height()) == (800, 650) != window_size()
    second.close()
