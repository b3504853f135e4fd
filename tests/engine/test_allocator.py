"""The glibc allocator settings: applied once, skipped where asked or where there is no glibc."""

from __future__ import annotations

import sys

import pytest

from app.engine import allocator


def test_opt_out_leaves_the_allocator_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("BI3D_STUDIO_DEFAULT_MALLOC", "1")
    assert allocator._apply() is False


def test_other_platforms_are_left_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "platform", "darwin")
    assert allocator._apply() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_glibc_takes_the_settings_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("BI3D_STUDIO_DEFAULT_MALLOC", raising=False)
    calls = []
    real = allocator._apply
    monkeypatch.setattr(allocator, "_tuned", None)
    monkeypatch.setattr(allocator, "_apply", lambda: calls.append(1) or real())
    first = allocator.tune_allocator()
    assert allocator.tune_allocator() is first
    assert calls == [1]
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc")
    assert first is True
    big = bytearray(80 << 20)  # above glibc's largest mmap threshold: served from the heap now
    big[-1] = 1
    assert sum(big[-4:]) == 1


def test_openmp_idle_threads_spin_briefly_unless_the_user_says_otherwise() -> None:
    """`import app` sets GOMP_SPINCOUNT before torch loads libgomp; a value already set stays."""
    import os
    import subprocess
    import sys

    import app

    code = "import app, os, torch; print(os.environ['GOMP_SPINCOUNT'])"
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == app.OPENMP_SPINCOUNT == "10000"
    env["GOMP_SPINCOUNT"] = "300000"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "300000"
