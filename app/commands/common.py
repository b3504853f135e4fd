"""Pieces shared by the command modules: one-line usage errors, value parsing, engine options."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any, NoReturn

from app.commands.arguments import whole
from app.engine.depth.engines import EngineOptions
from app.engine.depth.sgbm import SGBMParams
from app.engine.errors import UserError
from app.engine.runtimes.base import RUNTIMES
from app.engine.types import MAX_DISPARITY_LIMIT, Calibration, DepthRequest, Mode, Spacing
from app.engine.validation import POSITIVE, Bounds, number

EXIT_USAGE = 2
MAX_SIDE = 20000  # px: larger sizes are typing mistakes, and would not fit in memory anyway


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
        depth = number(text[:-1], f"{option} {value!r}", POSITIVE, "m", "give pixels (12) or metres (2.5m)")
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
    return number(text.removesuffix("px"), f"{option} {value!r}", Bounds(), "px", hint)


def engine_options(args: argparse.Namespace) -> EngineOptions:
    sgbm = SGBMParams(
        block_size=args.block_size,
        uniqueness=args.uniqueness,
        speckle_window=args.speckle_window,
        mode=args.sgbm_mode,
    )
    weights = Path(args.weights) if args.weights else None
    return EngineOptions(
        getattr(args, "engine", None),
        weights,
        args.device,
        args.precision,
        args.shift_mode,
        None,
        sgbm,
        runtime=args.runtime,
        cuda_graphs=args.cuda_graphs,
        subpixel=not args.no_subpixel,
        plane_check=not args.no_plane_check,
    )


def depth_request(args: argparse.Namespace, calibration: Calibration | None) -> DepthRequest:
    planes = (
        tuple(to_disparity(v, calibration, "--planes") for v in args.planes.split(",")) if args.planes else ()
    )
    rng = None
    if args.range:
        a, b = (to_disparity(v, calibration, "--range") for v in args.range)
        rng = (min(a, b), max(a, b)) if args.range[0].lower().endswith("m") else (a, b)
    return DepthRequest(
        mode=Mode(args.mode),
        planes=planes,
        levels=args.levels,
        spacing=Spacing(args.spacing),
        range=rng,
        budget_ms=args.budget_ms,
        max_disparity=args.max_disparity,
        calibration=calibration,
    )


def add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights", help="Bi3D checkpoint (published or project format)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "fp32", "tf32", "bf16", "fp16"],
        help="Bi3D precision (auto: bf16 on a CPU with native bf16, else fp32; tf32 and fp16 need "
        "CUDA; onnxruntime runs fp32 only)",
    )
    p.add_argument(
        "--runtime",
        default="auto",
        choices=list(RUNTIMES),
        help="Bi3D runtime: auto times those available on the first frame and runs the fastest; "
        "a named one falls back (tensorrt -> onnxruntime -> torch) and says why",
    )
    p.add_argument(
        "--cuda-graphs",
        action="store_true",
        help="torch runtime on CUDA: capture the network once per frame size and plane batch, then replay",
    )
    p.add_argument(
        "--shift-mode",
        default="auto",
        choices=["auto", "round", "interpolate"],
        help="planes off the 3 px grid: round to it (published models), or answer them exactly by "
        "interpolating features (auto: exact for the light model, which answers them as well)",
    )
    p.add_argument(
        "--no-subpixel",
        action="store_true",
        help="Bi3D continuous and selective modes: keep the network's plane readout, without the "
        "sub-pixel matching refinement (faster, coarser)",
    )
    p.add_argument(
        "--no-plane-check",
        action="store_true",
        help="Bi3D binary and quantized modes: keep the network's answers where it hesitates, "
        "without the matching check near each plane (about 1 ms per plane faster at 480x640)",
    )
    p.add_argument(
        "--max-disparity",
        type=whole("--max-disparity", 1, MAX_DISPARITY_LIMIT, "px"),
        default=192,
        help="disparity range in px (default 192)",
    )
    g = p.add_argument_group("SGBM baseline")
    g.add_argument("--block-size", type=whole("--block-size", 1, 255, "px"), default=5)
    g.add_argument("--uniqueness", type=whole("--uniqueness", 0, 100, "%"), default=10)
    g.add_argument("--speckle-window", type=whole("--speckle-window", 0, 100000, "px"), default=100)
    g.add_argument("--sgbm-mode", default="3way", choices=["sgbm", "hh", "3way", "hh4"])
