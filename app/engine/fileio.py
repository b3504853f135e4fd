"""Atomic file writes and the app's per-user folders (from ``platformdirs``)."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import platformdirs

from app.engine.errors import UserError

PathLike = str | os.PathLike[str]
APP_NAME = "bi3d-studio"


def atomic_write(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` via a same-folder temporary file and ``os.replace``."""
    target = Path(path)
    if not target.parent.is_dir():
        raise UserError(f"Output folder does not exist: {target.parent}; create it first")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.chmod(tmp, default_file_mode())  # mkstemp creates 0600; finished files get the usual mode
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def config_dir() -> Path:
    """Where settings live: ``$BI3D_STUDIO_CONFIG_DIR``, else the system's place for them
    (``~/.config/bi3d-studio`` on Linux, ``~/Library/Application Support/bi3d-studio`` on macOS,
    ``%LOCALAPPDATA%\\bi3d-studio`` on Windows)."""
    return _user_path("BI3D_STUDIO_CONFIG_DIR", platformdirs.user_config_path)


def cache_dir() -> Path:
    """Where caches live (runtime choices, engine builds): ``$BI3D_STUDIO_CACHE``, else the system's."""
    return _user_path("BI3D_STUDIO_CACHE", platformdirs.user_cache_path)


def documents_dir() -> Path:
    """Where snapshots and recordings go: ``$BI3D_STUDIO_DOCUMENTS``, else ``Documents/Bi3D Studio``."""
    override = os.environ.get("BI3D_STUDIO_DOCUMENTS")
    return Path(override) if override else platformdirs.user_documents_path() / "Bi3D Studio"


def _user_path(override_env: str, system: Callable[..., Path]) -> Path:
    override = os.environ.get(override_env)
    return Path(override) if override else system(APP_NAME, appauthor=False)


@functools.cache
def default_file_mode() -> int:
    """0666 minus the process umask: the mode ``open()`` would give a new file.

    Read once: reading the umask means setting it, which is not thread-safe.
    """
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


__all__ = ["atomic_write", "cache_dir", "config_dir", "default_file_mode", "documents_dir"]
