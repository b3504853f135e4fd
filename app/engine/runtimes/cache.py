"""Where exported graphs and built engines are kept between runs.

``$BI3D_STUDIO_CACHE`` if set, else ``$XDG_CACHE_HOME/bi3d-studio``, else ``~/.cache/bi3d-studio``.
Files are written to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("BI3D_STUDIO_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bi3d-studio"


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
