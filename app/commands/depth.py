"""`bi3d-studio depth`: depth for one image pair, written as the command-line contract says."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.commands.common import add_engine_args, depth_request, engine_options
from app.engine.engines import ENGINES
from app.engine.types import Mode, Spacing


def run(args: argparse.Namespace) -> int:
    from app.engine.calibration import read_middlebury_calib
    from app.engine.engines import build_engine
    from app.engine.formats import read_image_rgb
    from app.engine.outputs import format_summary, write_result

    calibration = read_middlebury_calib(args.calib).calibration if args.calib else None
    request = depth_request(args, calibration)
    left, right = read_image_rgb(args.left), read_image_rgb(args.right)
    engine, reason = build_engine(engine_options(args), "binary")
    print(f"engine: {engine.name} ({reason})")
    result = engine.compute(left, right, request)
    print(format_summary(result, calibration))
    written = write_result(Path(args.out), result, request, {"engine_reason": reason})
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
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
    add_engine_args(p)
    p.set_defaults(func=run)
