"""Atomic file writes and the app's per-user folders (standard library only, so that every part
of the engine can use them)."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from app.engine.errors import UserError

PathLike = str | os.PathLike[str]


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


def user_dir(override_env: str, xdg_env: str, fallback: str) -> Path:
    """``$override_env`` if set, else ``$xdg_env/bi3d-studio``, else ``~/fallback/bi3d-studio``."""
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    base = os.environ.get(xdg_env) or str(Path.home() / fallback)
    return Path(base) / "bi3d-studio"


@functools.cache
def default_file_mode() -> int:
    """0666 minus the process umask: the mode ``open()`` would give a new file.

    Read once: reading the umask means setting it, which is not thread-safe.
    """
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


__all__ = ["atomic_write", "default_file_mode", "user_dir"]
