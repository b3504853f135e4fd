"""The recording badge: counts, rate, and how long the disk lasts."""

from __future__ import annotations


def test_the_rec_badge_says_the_rate_and_when_the_disk_fills(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.ui import notices
    from app.ui.notices import RecBadge

    badge = RecBadge()
    qtbot.addWidget(badge)
    now = [100.0]
    monkeypatch.setattr(notices.time, "monotonic", lambda: now[0])
    badge.start()
    now[0] = 110.0  # 10 s at 24 MB/s
    badge.update_counts(200, 240_000_000, free_bytes=24_000_000 * 60 * 12)
    assert badge.text().endswith("· 24 MB/s · disk full in 12 min")
    badge.update_counts(200, 240_000_000, free_bytes=10**13)  # hours of room: not said
    assert badge.text().endswith("· 24 MB/s")


def test_the_window_badge_reads_the_recorders_count_not_the_folder(qtbot, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The badge summed the folder's files with rglob each second on the GUI thread: about a
    second a tick at 108k files, the window frozen. It reads the recorder's running count."""
    import pathlib

    import numpy as np

    from app.engine.depth.engines import EngineOptions
    from app.engine.session import Session
    from app.engine.sources.recording import Recorder
    from app.engine.types import StereoPair
    from app.ui.main_window import MainWindow
    from app.ui.settings import Settings

    window = MainWindow(Session(EngineOptions(engine="sgbm")), Settings())
    qtbot.addWidget(window)
    image = np.random.default_rng(0).integers(0, 255, (600, 800, 3), dtype=np.uint8)
    with Recorder(tmp_path / "rec") as recorder:
        recorder.write(StereoPair(image, image[:, ::-1].copy(), 0.0))
        window.session.recorder = recorder
        window.rec_badge.start()

        def walked(*_args: object) -> None:
            raise AssertionError("the badge walked the recording folder")

        monkeypatch.setattr(pathlib.Path, "rglob", walked)
        window._update_rec_badge()
        window.session.recorder = None
    assert recorder.bytes_written > 2_000_000
    assert f"· {recorder.bytes_written / 1e6:.1f} MB ·" in window.rec_badge.text()
