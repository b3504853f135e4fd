"""Pieces shared by the command modules: one-line usage errors, value parsing, engine options."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from app import vocabulary
from app.engine.depth.engines import EngineOptions
from app.engine.errors import UserError
from app.engine.types import Calibration, DepthRequest
from app.engine.validation import POSITIVE, Bounds, number

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
MAX_SIDE = 20000  # px: larger sizes are typing mistakes, and would not fit in memory anyway


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        extra = message.partition("unrecognized arguments: ")[2].split()
        if extra and not any(word.startswith("-") for word in extra):
            # 'depth LEFT --calib FILE RIGHT': RIGHT came after an option, so argparse took LEFT
            # alone and named RIGHT as unknown, which read as if the file were wrong
            message += (
                "; give the inputs together, before or after the options (e.g. LEFT RIGHT --calib FILE)"
            )
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def parse_size(text: str) -> tuple[int, int]:
    """'480x640' -> (480, 640): height x width."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be HEIGHTxWIDTH, e.g. 480x640, got {text!r}") from None
    if not (0 < h <= MAX_SIDE and 0 < w <= MAX_SIDE):
        raise argparse.ArgumentTypeError(f"size sides must lie in [1, {MAX_SIDE}] px, got {text!r}")
    return h, w


def parse_list(text: str, kind: type = float) -> list[Any]:
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s, got {text!r}") from None


def to_disparity(value: str, calibration: Calibration | None, option: str = "disparity") -> float:
    """'12' -> 12 px; '2.5m' -> the disparity of a point 2.5 m away (needs a calibration)."""
    text = value.strip().lower()
    if text.endswith("m"):
        if calibration is None:
            raise UserError(f"{value!r} is in metres; give --calib FILE so metres can become pixels")
        if not calibration.baseline_known:  # a 1 m placeholder would make metres a made-up disparity
            raise UserError(
                f"{option} {value!r} is in metres, but the calibration has no measured baseline (its "
                "depths are in baselines); give it in pixels, or a calibration with a baseline "
                "('calib rectify --baseline METRES')"
            )
        depth = number(
            text[:-1], f"{option} value {value!r}", POSITIVE, "m", "give pixels (12) or metres (2.5m)"
        )
        focal, baseline = calibration.focal_px, calibration.baseline_m
        if not (focal > 0 and baseline > 0):  # no depth in metres maps to a disparity then
            raise UserError(
                f"{value} cannot become pixels: the calibration's focal length is {focal:g} px and its "
                f"baseline {baseline:g} m (both must be positive); check the calibration file"
            )
        disparity = calibration.disparity_px(depth)
        if not (math.isfinite(disparity) and disparity >= 0):
            raise UserError(
                f"{value} becomes {disparity:g} px of disparity with this calibration (focal length "
                f"{calibration.focal_px:g} px, baseline {calibration.baseline_m:g} m, doffs "
                f"{calibration.doffs:g} px); check those values in the calibration file"
            )
        return disparity
    hint = "give pixels (12) or metres (2.5m)"
    return number(text.removesuffix("px"), f"{option} value", Bounds(), "px", hint)


def engine_options(args: argparse.Namespace) -> EngineOptions:
    """The engine options the command's flags chose (flags a command lacks keep their defaults)."""
    values = {s.name: getattr(args, s.name) for s in vocabulary.ENGINE_SETTINGS if hasattr(args, s.name)}
    return vocabulary.engine_options(values)


def depth_request(args: argparse.Namespace, calibration: Calibration | None) -> DepthRequest:
    given = (
        [(v, to_disparity(v, calibration, "--planes")) for v in args.planes.split(",")] if args.planes else []
    )
    asked = getattr(args, "max_disparity", None)
    top = asked if isinstance(asked, int) else vocabulary.DEFAULT_MAX_DISPARITY
    for value, plane in given:
        if value.strip().lower().endswith("m") and plane > top and calibration is not None:
            # "plane 430.506 px is outside [0, 192] px" of --planes 0.1m named no metres (review)
            import numpy as np

            nearest = float(calibration.depth_m(np.array([float(top)]))[0])
            raise UserError(
                f"--planes {value.strip()} is {plane:.0f} px of disparity with this calibration, past the "
                f"{top} px searched: the nearest plane it reaches is {nearest:.2f} m; give a farther one"
            )
    planes = tuple(dict.fromkeys(p for _, p in given))  # a plane given twice is one plane
    if args.mode == "binary" and not planes:  # said before the model is loaded, not after
        raise UserError("binary mode needs one plane: give --planes (pixels, or metres with --calib)")
    if planes and args.levels is not None:
        raise UserError("--planes and --levels both set the planes; give one of them")
    # ignored unsaid, where --range was refused: a user who gave them thinks they applied
    if planes and args.mode not in ("binary", "quantized"):
        raise UserError(
            f"--planes sets the binary plane or the quantized levels, not {args.mode} depth's sweep; use "
            "--mode binary or --mode quantized (--max-disparity bounds the sweep)"
        )
    if args.levels is not None and args.mode != "quantized":
        raise UserError(f"--levels applies to quantized depth, not {args.mode}; use --mode quantized")
    spacing = getattr(args, "spacing", vocabulary.SPACING.default)
    if spacing != vocabulary.SPACING.default and args.mode != "quantized":
        raise UserError(
            f"--spacing {spacing} spreads quantized levels, not {args.mode} depth's planes; "
            "use --mode quantized, or leave --spacing out"
        )
    if getattr(args, "min_confidence", None) is not None:  # given: the flag's default is None
        if args.mode in ("binary", "quantized"):
            raise UserError(
                f"--min-confidence masks Bi3D's continuous and selective depth, not a {args.mode} answer "
                "(each pixel's side of a plane is given); leave it out, or use --mode continuous"
            )
        if getattr(args, "engine", None) == "sgbm":
            raise UserError("--min-confidence masks Bi3D's answers; SGBM rates none: leave it out")
    if getattr(args, "budget_ms", None) is not None and args.mode == "binary":
        raise UserError(
            "--budget-ms trades planes for time, and a binary answer is one plane; "
            "leave --budget-ms out, or use --mode quantized or continuous"
        )
    if getattr(args, "budget_ms", None) is not None and getattr(args, "engine", None) == "sgbm":
        # it was ignored unsaid, result.json keeping it (the window greys it for SGBM: review)
        raise UserError("--budget-ms trades Bi3D's planes for time; SGBM has none to trade: leave it out")
    rng = None
    if args.range:
        metres = [v.strip().lower().endswith("m") for v in args.range]
        if metres[0] != metres[1]:  # "8m 40" read as 8 m down to 40 px = 7.5 m (review)
            raise UserError(
                f"--range {' '.join(args.range)} mixes metres and pixels; give both in one unit "
                "(e.g. 8m 40m, or 20 60)"
            )
        a, b = (to_disparity(v, calibration, "--range") for v in args.range)
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
        min_confidence=getattr(args, "min_confidence", None),
    )


def argument_type(setting: vocabulary.Setting) -> Callable[[str], Any]:
    """An argparse ``type`` that checks a flag's value against its setting's range."""

    def convert(text: str) -> Any:
        try:
            return setting.check(text)  # the validation layer parses and judges the text
        except UserError as exc:
            raise argparse.ArgumentTypeError(exc.worded(vocabulary.cli_words)) from None

    convert.__name__ = setting.name  # argparse names the type in its messages
    return convert


def add_setting(p: argparse.ArgumentParser | argparse._ArgumentGroup, setting: vocabulary.Setting) -> None:
    """The flag of one setting, built from its description."""
    if setting.kind == "switch":
        action = "store_false" if setting.default else "store_true"
        # a --no-... flag turns off what the setting's help describes (the window's tick box)
        text = f"turn off (on by default): {setting.help}" if setting.default else setting.help
        p.add_argument(setting.flag, dest=setting.name, action=action, help=text.replace("%", "%%"))
        return
    default = None if setting.kind == "path" and not setting.default else setting.default
    kwargs: dict[str, Any] = {
        "dest": setting.name,
        "default": default,
        "help": setting.help.replace("%", "%%"),
    }
    if setting.kind == "choice":
        kwargs["choices"] = list(setting.choices)
        # --help left the default out
        kwargs["help"] = f"{setting.help} (default {setting.default})".replace("%", "%%")
    elif setting.kind != "path":
        kwargs["type"] = argument_type(setting)
        kwargs["help"] = f"{setting.help} (default {setting.default}{setting.unit})".replace("%", "%%")
    p.add_argument(setting.flag, **kwargs)


def add_engine_args(p: argparse.ArgumentParser, *, engine: bool = False, auto_range: bool = False) -> None:
    """The engine's flags (``--engine`` too when ``engine``), and ``--max-disparity`` (which
    also takes ``auto``, its default, when ``auto_range``)."""
    sgbm = p.add_argument_group("SGBM baseline")
    for setting in vocabulary.ENGINE_SETTINGS:
        if setting.name == "engine" and not engine:
            continue
        add_setting(sgbm if setting.target.startswith("sgbm.") else p, setting)
    if not auto_range:
        add_setting(p, vocabulary.MAX_DISPARITY)
        return
    number_type = argument_type(vocabulary.MAX_DISPARITY)

    def auto_or_number(text: str) -> Any:
        if text.strip().lower() == AUTO:
            return AUTO
        try:
            return number_type(text)
        except argparse.ArgumentTypeError as exc:  # "it must be a finite number" left auto unsaid (review)
            raise argparse.ArgumentTypeError(f"{exc}; or auto (the default)") from None

    auto_or_number.__name__ = vocabulary.MAX_DISPARITY.name
    p.add_argument(
        vocabulary.MAX_DISPARITY.flag,
        dest=vocabulary.MAX_DISPARITY.name,
        type=auto_or_number,
        default=AUTO,
        help=f"{vocabulary.MAX_DISPARITY.help}: auto (default) estimates each frame's reach and sweeps "
        f"up to it (at most {vocabulary.DEFAULT_MAX_DISPARITY} px), or a number of px "
        f"({vocabulary.MAX_DISPARITY.minimum}-{vocabulary.MAX_DISPARITY.maximum}; the bundled Bi3D model "
        f"reaches {vocabulary.DEFAULT_MAX_DISPARITY}, SGBM more)",
    )


AUTO = "auto"


def refuse_inside_recording(out: Path) -> None:
    """--out in or inside a recording: the results written there would be read as its frames (a
    pair's results were written into a recording's left/: review); a source's own --out is
    refused by ``record.refuse_overlap``."""
    from app.engine.sources.recording import is_recording, recording_around

    inside = out if out.is_dir() and is_recording(out) else recording_around(out)
    if inside is not None:
        raise UserError(
            f"--out {out} lies in the recording {inside}: results written there would be read as "
            "its frames; choose a folder outside it"
        )
