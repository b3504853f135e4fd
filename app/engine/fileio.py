"""Atomic file writes and the app's per-user folders (from ``platformdirs``)."""

from __future__ import annotations

import errno
import functools
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import platformdirs

from app.engine.errors import DiskFailure, UserError

PathLike = str | os.PathLike[str]
APP_NAME = "bi3d-studio"


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def atomic_write(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` via a same-folder temporary file and ``os.replace``.

    A file already at ``path`` stays as it was unless the new one is complete. A full disk,
    a read-only folder or a folder that does not exist is a ``UserError`` naming the file.
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise UserError(f"output folder does not exist: {target.parent}; create it first")
    if target.is_dir():
        raise UserError(f"{target} is a folder; give a file name to write")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise _write_error(target, exc) from None
    try:
        os.chmod(tmp, default_file_mode())  # mkstemp creates 0600; finished files get the usual mode
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and (exc.errno in _FULL or exc.errno in (errno.EACCES, errno.EROFS)):
            raise _write_error(target, exc) from None
        raise


def check_can_write(path: PathLike) -> None:
    """A ``UserError`` before any work when ``path``'s folder takes no new file (read-only,
    no permission), as ``atomic_write`` would say it after the work: a temporary file is made
    there and removed."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise _write_error(target, exc) from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def _write_error(target: Path, exc: OSError) -> UserError:
    if exc.errno == errno.EFBIG:  # a size limit (ulimit -f, a FAT32 disk's 4 GB), not a full disk
        return DiskFailure(
            f"{target} is larger than this system lets a file be (ulimit -f, or a FAT32 disk's 4 GB); "
            "raise the limit or write elsewhere"
        )
    if exc.errno in _FULL:
        return DiskFailure(f"the disk is full: could not write {target}; free space and run again")
    return UserError(f"cannot write {target} ({exc.strerror}); choose a folder you can write to")


def make_folder(path: PathLike, what: str = "output folder") -> Path:
    """Create ``path`` (and its parents) as a folder, or a ``UserError`` saying why it cannot be."""
    folder = Path(path)
    if not str(path).strip():
        raise UserError(f"the {what} name is empty; give a folder")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"the {what} {folder} is a file; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise (
            _write_error(folder, exc)
            if exc.errno in _FULL
            else UserError(f"cannot create the {what} {folder} ({exc.strerror}); choose another")
        ) from None
    return folder


def write_json(path: PathLike, value: object) -> None:
    """``value`` as indented JSON, written atomically (a full disk keeps the earlier file whole)."""
    atomic_write(path, (json.dumps(value, indent=2) + "\n").encode())


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
def _umask() -> int:
    """The process umask, read once: reading it means setting it, which is not thread-safe."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


def default_file_mode() -> int:
    """0666 minus the process umask: the mode ``open()`` would give a new file."""
    return 0o666 & ~_umask()


def default_folder_mode() -> int:
    """0777 minus the process umask: the mode ``mkdir`` would give a new folder (``mkdtemp``
    gives 0700, which a folder that becomes the user's output must not keep)."""
    return 0o777 & ~_umask()


__all__ = [
    "atomic_write",
    "cache_dir",
    "config_dir",
    "default_file_mode",
    "default_folder_mode",
    "documents_dir",
    "make_folder",
    "write_json",
]
