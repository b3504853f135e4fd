"""Fixtures for the runtime tests: a private cache folder and a fake TensorRT module."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import fake_tensorrt
import pytest


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Exports and engines go to a per-test folder, never the user's cache."""
    root = tmp_path / "cache"
    monkeypatch.setenv("BI3D_STUDIO_CACHE", str(root))
    return root


@pytest.fixture
def fake_trt() -> Callable[[str], types.ModuleType]:
    return fake_tensorrt.make
