"""Fixtures for the runtime tests: a private cache folder and a fake TensorRT module."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import fake_tensorrt
import pytest


@pytest.fixture(autouse=True)
def _private_cache(cache: Path) -> None:
    """Exports and engines go to a per-test folder (``cache``, from tests/conftest.py)."""


@pytest.fixture
def fake_trt() -> Callable[[str], types.ModuleType]:
    return fake_tensorrt.make
