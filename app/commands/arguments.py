"""argparse ``type=`` callables over ``app.engine.validation``: every number on the command line
is finite, in range and of the right kind before a command starts, and a bad one is one line
(argparse's usage error, exit 2) naming the option, its unit and the allowed range."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path

from app.engine.errors import UserError
from app.engine.validation import Bounds, integer, number


def real(
    name: str, low: float | None = None, high: float | None = None, unit: str = "", *, low_open: bool = False
) -> Callable[[str], float]:
    """A finite float in [low, high] (``low_open``: strictly above ``low``)."""
    bounds = Bounds(low, high, low_open=low_open)

    def parse(text: str) -> float:
        try:
            return number(text, name, bounds, unit)
        except UserError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def whole(name: str, low: int | None = None, high: int | None = None, unit: str = "") -> Callable[[str], int]:
    """An int in [low, high]."""
    bounds = Bounds(low, high)

    def parse(text: str) -> int:
        try:
            return integer(text, name, bounds, unit)
        except UserError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def numbers(name: str, kind: Callable[[str], float] | Callable[[str], int]) -> Callable[[str], list]:
    """Comma-separated values, each checked by ``kind``."""

    def parse(text: str) -> list:
        values = [kind(v.strip()) for v in text.split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"{name} needs at least one value, got {text!r}")
        return values

    return parse


def names(name: str, allowed: tuple[str, ...] | list[str]) -> Callable[[str], list[str]]:
    """Comma-separated names, each one of ``allowed``."""

    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        unknown = [v for v in values if v not in allowed]
        if unknown or not values:
            raise argparse.ArgumentTypeError(
                f"{name} takes comma-separated names from {', '.join(allowed)}; got {text!r}"
            )
        return values

    return parse


def report_file(command: str) -> Callable[[str], str]:
    """``command``'s JSON report to write (``bench``, ``eval``, ``calib check``): its folder must
    exist, it must not be a folder itself, and a file already there is replaced only when it is
    a report of the same command (``calib check --json right01.jpg`` wrote over the input image;
    ``calib check --json ev.json`` over an eval's figures: review)."""

    def parse(text: str) -> str:
        path = Path(text)
        if path.is_dir():
            raise argparse.ArgumentTypeError(
                f"{text} is a folder; give a file name, e.g. {path / 'out.json'}"
            )
        kind = report_kind(path) if path.exists() else command
        if kind is None:
            raise argparse.ArgumentTypeError(
                f"{text} exists and is not a JSON report (an image, or a file of yours?); it is kept: "
                "choose another name"
            )
        if kind != command:
            raise argparse.ArgumentTypeError(
                f"{text} holds a '{kind}' report; it is kept: choose another name (--json replaces only "
                f"an earlier '{command}' report)"
            )
        if not path.parent.is_dir():
            raise argparse.ArgumentTypeError(f"the folder {path.parent} does not exist; create it first")
        # said before the work (a benchmark's minutes), not when its figures are written
        if not os.access(path.parent, os.W_OK | os.X_OK):
            why = _why_not_writable(path.parent)
            raise argparse.ArgumentTypeError(
                f"cannot write into the folder {path.parent} ({why}); choose another"
            )
        return text

    return parse


def _why_not_writable(folder: Path) -> str:
    """As the other commands say it: a read-only mount ("permission denied" there: review)."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        read_only = False
    return "Read-only file system" if read_only else "permission denied"


REPORT_BYTES = 64 << 20  # a file larger than this is no report of ours


def report_kind(path: Path) -> str | None:
    """The command whose JSON report ``path`` holds: ``calib check``'s figures (a mapping with a
    verdict), ``eval``'s records (each a scene's, a mean's or a scene left out) or ``bench``'s
    (each an engine's or a flow backend's); None for any other file (a stereodemo calibration
    was replaced by eval --json: review)."""
    try:
        if path.stat().st_size > REPORT_BYTES:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict):
        return "calib check" if "verdict" in data else None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        return None
    if data and all(r.keys() & {"scene", "left_out"} for r in data):
        return "eval"
    if all(r.keys() & {"engine", "backend"} for r in data):
        return "bench"
    return None


def output_folder(text: str) -> str:
    """An output folder's name: not blank (``.`` is the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "the output folder name is empty; give --out FOLDER (. for this folder)"
        )
    return text


__all__ = ["names", "numbers", "output_folder", "real", "report_file", "whole"]
