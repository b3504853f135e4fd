"""Command line: a thin layer over the engine; each command lives in ``app.commands``.

Every problem with the user's input ends as one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from app import __version__
from app.commands import COMMANDS
from app.commands.common import EXIT_USAGE, Parser
from app.engine.allocator import tune_allocator
from app.engine.errors import UserError
from app.vocabulary import cli_words


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="bi3d-studio", description="Stereo depth with Bi3D and an SGBM baseline.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    tune_allocator()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"bi3d-studio {args.command}: error: {exc.worded(cli_words)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # keeps interpreter shutdown from failing again
        return 0


if __name__ == "__main__":
    sys.exit(main())
