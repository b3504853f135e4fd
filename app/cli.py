"""Command line: a thin layer over the engine; each command lives in ``app.commands``.

Every problem with the user's input ends as one line on stderr and exit status 2. A disk that
refuses a write (full, a quota, a size limit) ends as one line with exit status 1: a failure
while running, not a usage error. Anything else (a bug, a library failing) ends as one line
naming what failed and the file holding the full report, with exit status 1; ``--debug`` shows
the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import errno
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

from app import __version__
from app.engine.allocator import tune_allocator
from app.engine.errors import DiskFailure, Terminated, UserError

EXIT_FAILURE = 1
# as ``app.commands.common``'s: the commands (and torch with them) load in ``main``, not here
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    from app.commands import COMMANDS
    from app.commands.common import Parser

    parser = Parser(prog="bi3d-studio", description="Stereo depth with Bi3D and an SGBM baseline.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of an unexpected failure"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line's entry point: ``_run`` with Ctrl-C said in one line wherever it lands
    (the libraries load for 1-2 s before a command runs; a traceback came out of that)."""
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("bi3d-studio: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(argv: Sequence[str] | None) -> int:
    tune_allocator()
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # FFmpeg's lines beside our one-line errors
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in words  # accepted anywhere on the line, not only before the command
    try:
        args = parser.parse_args([w for w in words if w != "--debug"])  # usage errors: SystemExit(2)
    except UserError as exc:  # raised by a type= callable that argparse does not catch itself
        print(f"bi3d-studio: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    args.debug = debug
    tool = getattr(args, "calib_command", None)  # "calib check", as argparse's own errors name it
    command = f"{args.command} {tool}" if tool else args.command
    try:
        with terminate_as_interrupt(args.command != "gui"), pipe_safe_stdout():
            return int(args.func(args))
    except DiskFailure as exc:  # the machine, not the command line
        print(f"bi3d-studio {command}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except UserError as exc:
        print(f"bi3d-studio {command}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # keeps interpreter shutdown from failing again
        return 0
    except MemoryError:
        print(
            f"bi3d-studio {command}: error: out of memory; use smaller images, fewer planes or "
            "a smaller synthetic size",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f" writing {exc.filename}" if exc.filename else ""
            print(f"bi3d-studio {command}: error: the disk is full{where}; free space", file=sys.stderr)
            return EXIT_FAILURE
        if args.debug:
            raise
        return _unexpected(args.command, exc)
    except Exception as exc:
        if args.debug:
            raise
        return _unexpected(args.command, exc)


class _PipeSafe:
    """Standard output that a reader closing early (``| head -1``) does not stop: the command goes
    on with its output dropped. A BrokenPipeError out of a print had ended `calib chessboard` with
    exit status 0 before it wrote its calibration (review)."""

    def __init__(self, stream: object) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return int(self.stream.write(text))  # type: ignore[attr-defined]
            except BrokenPipeError:
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()  # type: ignore[attr-defined]
            except BrokenPipeError:
                self.broken = True

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


@contextlib.contextmanager
def pipe_safe_stdout() -> Iterator[None]:
    """``sys.stdout`` as ``_PipeSafe`` while the block runs; a closed pipe leaves it on os.devnull
    (the interpreter's last flush would fail on it again)."""
    original, safe = sys.stdout, _PipeSafe(sys.stdout)
    sys.stdout = safe
    try:
        yield
    finally:
        sys.stdout = open(os.devnull, "w") if safe.broken else original


@contextlib.contextmanager
def terminate_as_interrupt(enabled: bool = True) -> Iterator[None]:
    """SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) in the main thread while the block
    runs: a recording stopped by a service manager closes and says what it kept, as on Ctrl-C."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only (tests call main() from others)
        return

    def handler(_signum: int, _frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _unexpected(command: str, exc: BaseException) -> int:
    """One line on stderr naming the failure and the report file; the report holds the traceback."""
    where = _where(exc)
    report = write_report(command, exc)
    saved = f"full report in {report}" if report else "no report could be written; rerun with --debug"
    message = one_line(exc)[:200]
    print(
        f"bi3d-studio {command}: internal error: {type(exc).__name__}{': ' + message if message else ''}"
        f" (in {where}); {saved}",
        file=sys.stderr,
    )
    return EXIT_FAILURE


def one_line(exc: BaseException) -> str:
    """An error's text on one line (a library's message may span several); the settings a
    ``UserError`` names are worded as flags."""
    from app.vocabulary import cli_words

    text = exc.worded(cli_words) if isinstance(exc, UserError) else str(exc)
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f"{os.sep}app{os.sep}" in f.filename] or frames
    if not ours:
        return "unknown place"
    last = ours[-1]
    return f"{Path(last.filename).name}:{last.lineno} {last.name}"


def report_dir() -> Path:
    """Crash reports live in the user's cache folder (``$BI3D_STUDIO_CACHE`` overrides it)."""
    from app.engine.runtimes.cache import cache_root

    return cache_root() / "reports"


def write_report(command: str, exc: BaseException) -> Path | None:
    """The traceback, the command line and versions, as a text file; None when it cannot be written."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    text = (
        f"bi3d-studio {__version__}, Python {sys.version.split()[0]}, {sys.platform}\n"
        f"command line: {' '.join(sys.argv)}\n\n" + "".join(traceback.format_exception(exc))
    )
    try:
        from app.engine.fileio import atomic_write

        folder = report_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"crash-{command}-{stamp}.txt"
        atomic_write(path, text.encode("utf-8", "replace"))
        return path
    except Exception:  # the report is a courtesy: its failure must not hide the first one
        return None


if __name__ == "__main__":
    sys.exit(main())
