"""Where exported graphs and built engines are kept between runs.

``$BI3D_STUDIO_CACHE`` if set, else the system's cache folder (``app.engine.fileio.cache_dir``).
Files are written to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

from pathlib import Path

from app.engine.fileio import atomic_write, cache_dir


def cache_root() -> Path:
    return cache_dir()


def write_cached(path: Path, data: bytes) -> None:
    """`atomic_write` into the cache, creating its folders first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
