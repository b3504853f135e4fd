"""Running the command line in-process, as the CLI tests do."""

from __future__ import annotations

import pytest

from app.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``bi3d-studio ARGV``."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors (one line, exit 2), --help, --version
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def bad(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one stderr line of a command that must fail on bad input (exit 2, no traceback)."""
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
