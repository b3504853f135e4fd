"""GUI tests run offscreen, with a fresh settings store each, and fail on leaked threads or windows."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

from app.engine.types import DepthRequest, DepthResult, StereoPair


@pytest.fixture(autouse=True)
def fresh_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("BI3D_STUDIO_CONFIG_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # snapshots and QSettings stay in the test
    monkeypatch.setenv("BI3D_STUDIO_DOCUMENTS", str(tmp_path / "documents"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return folder


@pytest.fixture(autouse=True)
def no_leaks(qapp) -> Iterator[None]:  # type: ignore[no-untyped-def]
    before = {t.ident for t in threading.enumerate()}
    yield
    qapp.processEvents()
    # the plane check's worker pool lives as long as the process, by design (depth.planecheck)
    left = [
        t.name
        for t in threading.enumerate()
        if t.ident not in before and t.is_alive() and not t.name.startswith("plane-check")
    ]
    windows = [w for w in qapp.topLevelWidgets() if w.isVisible()]
    for w in windows:
        w.close()
    assert not left, f"threads left running: {left}"
    assert not windows, f"windows left open: {windows}"


class FakeSource:
    """``count`` frames of a shifted random texture (``count`` 1 behaves as an image pair)."""

    def __init__(self, count: int = 1, size: tuple[int, int] = (120, 200), shift: int = 6) -> None:
        self.frame_count = count if count == 1 else None
        self.remaining = count
        rng = np.random.default_rng(0)
        self.left = rng.integers(0, 255, (*size, 3), dtype=np.uint8)
        self.right = np.roll(self.left, -shift, axis=1)
        self.closed = False
        self.reads = 0

    def read(self) -> StereoPair | None:
        if self.remaining <= 0:
            return None
        self.remaining -= 1
        self.reads += 1
        return StereoPair(
            np.roll(self.left, self.reads, axis=0), np.roll(self.right, self.reads, axis=0), float(self.reads)
        )

    def close(self) -> None:
        self.closed = True


class RecordingEngine:
    """Records every request it receives and answers with a constant disparity."""

    name = "fake"

    def __init__(self) -> None:
        self.requests: list[DepthRequest] = []
        self.streams = 0

    def new_stream(self) -> None:
        self.streams += 1

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        self.requests.append(request)
        h, w = left.shape[:2]
        planes = np.asarray(request.planes or (12.0,), np.float32)
        probs = np.full((len(planes), h, w), 0.7, np.float32)
        disp = np.full((h, w), 10.0 + len(self.requests), np.float32)
        return DepthResult(
            disp,
            probs,
            planes,
            request.mode,
            self.name,
            mask=probs[0] > 0.5,
            timings={"features": 1.0, "planes": 2.0, "total": 3.0},
        )
