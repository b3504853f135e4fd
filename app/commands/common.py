"""Pieces shared by the command modules: one-line usage errors, value parsing, engine options."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from app import vocabulary
from app.engine.depth.engines import EngineOptions
from app.engine.errors import UserError
from app.engine.types import Calibration, DepthRequest

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def parse_size(text: str) -> tuple[int, int]:
    """'480x640' -> (480, 640): height x width."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be HEIGHTxWIDTH, e.g. 480x640, got {text!r}") from None
    if h <= 0 or w <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return h, w


def parse_list(text: str, kind: type = float) -> list[Any]:
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s, got {text!r}") from None


def to_disparity(value: str, calibration: Calibration | None) -> float:
    """'12' -> 12 px; '2.5m' -> the disparity of a point 2.5 m away (needs a calibration)."""
    text = value.strip().lower()
    if text.endswith("m"):
        if calibration is None:
            raise UserError(f"{value!r} is in metres; give --calib FILE so metres can become pixels")
        return calibration.disparity_px(_number(text[:-1], value))
    return _number(text.removesuffix("px"), value)


def _number(text: str, original: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UserError(f"not a number: {original!r}; give pixels (12) or metres (2.5m)") from None


def engine_options(args: argparse.Namespace) -> EngineOptions:
    """The engine options the command's flags chose (flags a command lacks keep their defaults)."""
    values = {s.name: getattr(args, s.name) for s in vocabulary.ENGINE_SETTINGS if hasattr(args, s.name)}
    return vocabulary.engine_options(values)


def depth_request(args: argparse.Namespace, calibration: Calibration | None) -> DepthRequest:
    planes = tuple(to_disparity(v, calibration) for v in args.planes.split(",")) if args.planes else ()
    rng = None
    if args.range:
        a, b = (to_disparity(v, calibration) for v in args.range)
        rng = (min(a, b), max(a, b)) if args.range[0].lower().endswith("m") else (a, b)
    return vocabulary.depth_request(
        args.mode,
        planes=planes,
        levels=args.levels,
        spacing=args.spacing,
        range_px=rng,
        budget_ms=args.budget_ms,
        max_disparity=args.max_disparity,
        calibration=calibration,
    )


def argument_type(setting: vocabulary.Setting) -> Callable[[str], Any]:
    """An argparse ``type`` that checks a flag's value against its setting's range."""

    def convert(text: str) -> Any:
        value: Any = text
        if setting.kind in ("integer", "number"):
            try:
                value = float(text)
            except ValueError:
                pass  # check() says what is wrong with it
        try:
            return setting.check(value)
        except UserError as exc:
            raise argparse.ArgumentTypeError(exc.worded(vocabulary.cli_words)) from None

    convert.__name__ = setting.name  # argparse names the type in its messages
    return convert


def add_setting(p: argparse.ArgumentParser | argparse._ArgumentGroup, setting: vocabulary.Setting) -> None:
    """The flag of one setting, built from its description."""
    if setting.kind == "switch":
        action = "store_false" if setting.default else "store_true"
        p.add_argument(setting.flag, dest=setting.name, action=action, help=setting.help)
        return
    default = None if setting.kind == "path" and not setting.default else setting.default
    kwargs: dict[str, Any] = {"dest": setting.name, "default": default, "help": setting.help}
    if setting.kind == "choice":
        kwargs["choices"] = list(setting.choices)
    elif setting.kind != "path":
        kwargs["type"] = argument_type(setting)
        kwargs["help"] = f"{setting.help} (default {setting.default}{setting.unit})"
    p.add_argument(setting.flag, **kwargs)


def add_engine_args(p: argparse.ArgumentParser, *, engine: bool = False) -> None:
    """The engine's flags (``--engine`` too when ``engine``), and ``--max-disparity``."""
    sgbm = p.add_argument_group("SGBM baseline")
    for setting in vocabulary.ENGINE_SETTINGS:
        if setting.name == "engine" and not engine:
            continue
        add_setting(sgbm if setting.target.startswith("sgbm.") else p, setting)
    add_setting(p, vocabulary.MAX_DISPARITY)
