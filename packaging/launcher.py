"""Entry point of the desktop bundle (PyInstaller runs this file, not a console-script wrapper).

The bundle holds two executables built from it: ``bi3d-studio ARGS`` is the command line,
and ``bi3d-studio-gui ARGS`` means ``bi3d-studio gui ARGS`` (a windowed executable on
Windows and macOS, so double-clicking it opens no console).
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path


def launcher_argv(executable: str, args: list[str]) -> list[str]:
    stem = Path(executable).stem
    return ["gui", *args] if stem.endswith("-gui") else args


if __name__ == "__main__":
    multiprocessing.freeze_support()  # a frozen Windows process that spawns workers re-enters here
    from app.cli import main

    sys.exit(main(launcher_argv(sys.executable, sys.argv[1:])))
