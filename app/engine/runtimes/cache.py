"""Where exported graphs, built engines and ``auto``'s runtime choices are kept between runs.

``$BI3D_STUDIO_CACHE`` if set, else the system's cache folder (``app.engine.fileio.cache_dir``).
Files are written to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from app.engine.errors import UserError
from app.engine.fileio import atomic_write, cache_dir

CHOICES = "runtime-choices.json"
CHOICES_FORMAT = "bi3d-studio runtime choices"
RETIME_ENV = "BI3D_STUDIO_RETIME"  # =1: ``auto`` times the runtimes again and caches the new choice


def cache_root() -> Path:
    return cache_dir()


def write_cached(path: Path, data: bytes) -> None:
    """`atomic_write` into the cache, creating its folders first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


class ChoiceStore:
    """``auto``'s decisions, one per device, precision, model and frame size, in one JSON file.

    Timing the runtimes anew on every run let the load of the moment decide, so identical runs
    picked different runtimes (and gave outputs up to 0.66 px apart); the first decision is
    kept instead. A damaged or foreign file is ignored, said in a note, and rewritten.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_root() / CHOICES
        self.notes: list[str] = []

    def get(self, key: str) -> dict[str, Any] | None:
        """The decision for ``key``; None when there is none (or ``$BI3D_STUDIO_RETIME`` is 1: a
        decision timed under a passing load would otherwise hold forever)."""
        if os.environ.get(RETIME_ENV) == "1":
            return None
        entry = self._read().get(key)
        return entry if isinstance(entry, dict) and isinstance(entry.get("runtime"), str) else None

    def put(self, key: str, runtime: str, timings_ms: dict[str, float]) -> None:
        choices = self._read()
        choices[key] = {
            "runtime": runtime,
            "timings_ms": {k: round(v, 2) for k, v in timings_ms.items()},
            "timed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        data = {"format": CHOICES_FORMAT, "version": 1, "choices": choices}
        try:
            write_cached(self.path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
        except (OSError, UserError) as exc:  # a read-only cache: the choice holds for this run only
            self.notes.append(f"runtime choice not cached ({exc})")

    def _read(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self.notes.append(f"runtime choice cache {self.path} unreadable ({exc.strerror}); timed again")
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
            if not (isinstance(data, dict) and data.get("format") == CHOICES_FORMAT):
                raise ValueError("not this app's runtime choices")
            choices = data.get("choices")
            if not isinstance(choices, dict):
                raise ValueError("no choices in it")
            return choices
        except ValueError as exc:
            note = f"runtime choice cache {self.path} was damaged or foreign ({exc}); timed again and rebuilt"
            if note not in self.notes:
                self.notes.append(note)
            return {}
