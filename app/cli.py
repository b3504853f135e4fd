"""Command line: a thin layer over the engine.

Every problem with the user's input ends as one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from app import __version__
from app.engine.calibration import read_middlebury_calib
from app.engine.classical import SGBMParams
from app.engine.engines import ENGINES, EngineOptions, build_engine
from app.engine.errors import UserError
from app.engine.types import Calibration, DepthRequest, Mode, Spacing

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


# ---- value parsing --------------------------------------------------------------------
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


# ---- commands -------------------------------------------------------------------------
def _engine_options(args: argparse.Namespace) -> EngineOptions:
    sgbm = SGBMParams(
        block_size=args.block_size,
        uniqueness=args.uniqueness,
        speckle_window=args.speckle_window,
        mode=args.sgbm_mode,
    )
    weights = Path(args.weights) if args.weights else None
    return EngineOptions(
        getattr(args, "engine", None), weights, args.device, args.precision, args.shift_mode, None, sgbm
    )


def _request(args: argparse.Namespace, calibration: Calibration | None) -> DepthRequest:
    planes = tuple(to_disparity(v, calibration) for v in args.planes.split(",")) if args.planes else ()
    rng = None
    if args.range:
        a, b = (to_disparity(v, calibration) for v in args.range)
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


def cmd_depth(args: argparse.Namespace) -> int:
    from app.engine.formats import read_image_rgb
    from app.engine.outputs import format_summary, write_result

    calibration = read_middlebury_calib(args.calib).calibration if args.calib else None
    request = _request(args, calibration)
    left, right = read_image_rgb(args.left), read_image_rgb(args.right)
    engine, reason = build_engine(_engine_options(args), "binary")
    print(f"engine: {engine.name} ({reason})")
    result = engine.compute(left, right, request)
    print(format_summary(result, calibration))
    written = write_result(Path(args.out), result, request, {"engine_reason": reason})
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from app.engine.assets import default_weights
    from app.engine.evaluation import eval_table, evaluate_scenes
    from app.engine.sources import Scene, find_scenes

    if args.right is not None:
        if args.gt is None:
            raise UserError("evaluating a pair needs --gt FILE (PFM or KITTI PNG)")
        scenes = [Scene(Path(args.path).stem, Path(args.path), Path(args.right), Path(args.gt))]
    else:
        scenes = find_scenes(args.path)
    if args.engines:
        engines = parse_list(args.engines, str)
    else:
        engines = ["sgbm"] + (["bi3d"] if args.weights or default_weights() else [])
    for name in engines:
        if name not in ENGINES:
            raise UserError(f"unknown engine {name!r}; use one of {', '.join(ENGINES)}")
    rows = evaluate_scenes(scenes, engines, _engine_options(args), args.max_disparity)
    print(eval_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in rows], indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from app.engine.bench import bench_table, run_bench

    widths: list[float | None] = [None] if args.weights else (args.width or [1.0])
    records = run_bench(
        args.engines,
        args.modes,
        args.planes,
        args.size or [(480, 640)],
        _engine_options(args),
        widths,
        args.repeat,
        args.warmup,
        args.max_disparity,
    )
    print(bench_table(records))
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in records], indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from app.engine.training.trainer import TrainConfig, train

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    cfg = TrainConfig(
        out=args.out,
        kind=args.kind,
        width=args.width,
        max_disparity=args.max_disparity,
        data=args.data,
        crop=args.crop,
        batch=args.batch,
        planes=args.planes,
        steps=args.steps,
        lr=args.lr,
        precision=args.precision,
        tf32=not args.no_tf32,
        channels_last=not args.no_channels_last,
        init=args.init,
        seed=args.seed,
        device=args.device,
        workers=args.workers,
        reuse=args.reuse,
        val_every=args.val_every,
        val_count=args.val_count,
        save_every=args.save_every,
        continuous_window=args.window,
    )
    result = train(cfg)
    print("\n" + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


# ---- parser ---------------------------------------------------------------------------
def _add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights", help="Bi3D checkpoint (published or project format)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument(
        "--precision",
        default="fp32",
        choices=["fp32", "bf16", "fp16"],
        help="autocast precision for Bi3D (fp16 needs CUDA)",
    )
    p.add_argument(
        "--shift-mode",
        default="round",
        choices=["round", "interpolate"],
        help="planes off the 3 px grid: round to it (published) or interpolate features",
    )
    p.add_argument("--max-disparity", type=int, default=192, help="disparity range in px (default 192)")
    g = p.add_argument_group("SGBM baseline")
    g.add_argument("--block-size", type=int, default=5)
    g.add_argument("--uniqueness", type=int, default=10)
    g.add_argument("--speckle-window", type=int, default=100)
    g.add_argument("--sgbm-mode", default="3way", choices=["sgbm", "hh", "3way", "hh4"])


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bi3d-studio", description="Stereo depth with Bi3D and an SGBM baseline.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser(
        "depth",
        help="depth for one image pair",
        description=(
            "Compute depth for a rectified pair. Writes OUT/result.npz, disparity.pfm, disparity.png "
            "(KITTI 16-bit), disparity_color.png and result.json. Planes and ranges are pixels of "
            "disparity, or metres with an 'm' suffix when --calib is given."
        ),
    )
    p.add_argument("left")
    p.add_argument("right")
    p.add_argument("--mode", default="continuous", choices=[m.value for m in Mode])
    p.add_argument("--planes", help="comma-separated planes, e.g. 12,24 or 2.5m")
    p.add_argument("--levels", type=int, help="quantized: number of planes spread by --spacing")
    p.add_argument("--spacing", default="disparity", choices=[s.value for s in Spacing])
    p.add_argument("--range", nargs=2, metavar=("MIN", "MAX"), help="selective range (px or metres)")
    p.add_argument("--budget-ms", type=float, help="latency budget: the engine picks the plane count")
    p.add_argument("--engine", choices=list(ENGINES), help="default: Bi3D with the bundled model, else SGBM")
    p.add_argument("--calib", help="Middlebury calib.txt (focal length, baseline) for metres")
    p.add_argument("--out", default="out", help="output folder (default ./out)")
    _add_engine_args(p)
    p.set_defaults(func=cmd_depth)

    p = sub.add_parser(
        "eval",
        help="metrics against ground truth",
        description=(
            "Evaluate engines on a pair (LEFT RIGHT --gt FILE) or a folder of scenes in Middlebury "
            "(im0.png, im1.png, disp0GT.pfm, calib.txt) or KITTI 2015 layout. Every figure is given "
            "dense (holes count as errors) and valid-only (holes excluded)."
        ),
    )
    p.add_argument("path", help="scene folder, dataset folder, or left image")
    p.add_argument("right", nargs="?", help="right image when PATH is a left image")
    p.add_argument("--gt", help="ground-truth disparity for a pair (PFM or KITTI PNG)")
    p.add_argument("--engines", help="comma-separated engines (default: sgbm, plus bi3d if weights exist)")
    p.add_argument("--json", help="write the figures as JSON")
    _add_engine_args(p)
    p.set_defaults(func=cmd_eval, max_disparity=None)

    p = sub.add_parser(
        "bench",
        help="latency per engine, mode, plane count and size",
        description=(
            "Time engines in-process: warm-up, then median and p90 of --repeat runs. SGBM is always "
            "included as the baseline. Without --weights Bi3D runs with random weights at --width."
        ),
    )
    p.add_argument("--engines", type=lambda s: parse_list(s, str), default=["bi3d", "sgbm"])
    p.add_argument("--modes", type=lambda s: parse_list(s, str), default=["binary", "quantized"])
    p.add_argument("--planes", type=lambda s: parse_list(s, int), default=[1, 4, 16])
    p.add_argument("--size", type=parse_size, action="append", help="HEIGHTxWIDTH, repeatable")
    p.add_argument("--width", type=lambda s: parse_list(s, float), help="model width(s), e.g. 1.0,0.5")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--json", help="write records as JSON")
    _add_engine_args(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "train",
        help="train a Bi3D model",
        description=(
            "Train on synthetic scenes (default) or a dataset folder (SceneFlow left/right/disparity, "
            "Middlebury, KITTI 2015). Resumes from OUT/last.pt when present. Runs under torchrun "
            "with DistributedDataParallel. Writes OUT/last.pt, best.pt, state.pt and log.csv."
        ),
    )
    p.add_argument("--out", default="runs/train", help="run folder (resumed when it holds last.pt)")
    p.add_argument("--kind", default="light", choices=["light", "binary", "continuous_2d", "continuous_3d"])
    p.add_argument("--width", type=float, default=1.0, help="channel width multiplier")
    p.add_argument("--max-disparity", type=int, default=192)
    p.add_argument("--data", default="synthetic", help="'synthetic' or a dataset folder")
    p.add_argument("--crop", type=parse_size, default=(192, 384), help="HEIGHTxWIDTH, multiples of 96")
    p.add_argument("--batch", type=int, default=4, help="samples per step and process")
    p.add_argument("--planes", type=int, default=8, help="planes per sample (binary kinds)")
    p.add_argument("--window", type=int, default=17, help="contiguous planes per sample (continuous kinds)")
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--precision", default="bf16", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--no-tf32", action="store_true", help="disable TF32 matmuls on CUDA")
    p.add_argument("--no-channels-last", action="store_true")
    p.add_argument("--init", help="start from this checkpoint (fine-tuning), same kind")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--workers", type=int, default=0, help="data loader processes")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument("--reuse", type=int, default=3, help="times each synthetic scene is shown")
    p.add_argument("--val-every", type=int, default=1000)
    p.add_argument("--val-count", type=int, default=8)
    p.add_argument("--save-every", type=int, default=200)
    p.set_defaults(func=cmd_train)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"bi3d-studio {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # keeps interpreter shutdown from failing again
        return 0


if __name__ == "__main__":
    sys.exit(main())
