"""Where exported graphs and built engines are kept between runs.

``$BI3D_STUDIO_CACHE`` if set, else ``$XDG_CACHE_HOME/bi3d-studio``, else ``~/.cache/bi3d-studio``.
Files are written to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.engine.fileio import atomic_write


def cache_root() -> Path:
    explicit = os.environ.get("BI3D_STUDIO_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bi3d-studio"


def write_cached(path: Path, data: bytes) -> None:
    """`atomic_write` into the cache, creating its folders first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
