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
