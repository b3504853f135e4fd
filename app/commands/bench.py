"""`bi3d-studio bench`: in-process latency per engine, runtime, precision, mode, plane count and
size; ``--report`` adds the PLASTER table (throughput, accuracy, size, energy)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.commands.arguments import names, numbers, real, report_file, whole
from app.commands.common import add_engine_args, engine_options, parse_list, parse_size
from app.commands.flow import flow_specs
from app.engine.errors import UserError
from app.engine.fileio import write_json
from app.engine.runtimes.base import RUNTIMES
from app.engine.types import Mode


def run(args: argparse.Namespace) -> int:
    from app.engine.assets import default_weights
    from app.engine.bench.depth import bench_table, run_bench

    if args.weights and args.width is not None:  # --width was dropped unsaid (export refuses the pair)
        raise UserError("--width times random models and --weights loads one: give one of them")
    # the weights given, else the bundled model, else (or with --width) random weights for timing
    trained = args.weights or (args.width is None and default_weights() is not None)
    widths: list[float | None] = [None] if trained else (args.width or [1.0])
    sizes = list(dict.fromkeys(args.size or [(480, 640)]))  # a size given twice is timed once
    from app.engine.depth.limits import MIN_IMAGE_SIDE

    small = [f"{h}x{w}" for h, w in sizes if min(h, w) < MIN_IMAGE_SIDE]
    if small:  # the engines' "give a larger pair" named no pair of the bench's (review)
        raise UserError(
            f"--size {', '.join(small)} is too small: the engines need at least "
            f"{MIN_IMAGE_SIDE}x{MIN_IMAGE_SIDE} px; give a larger --size"
        )
    records = run_bench(
        args.engines,
        args.modes,
        args.planes,
        sizes,
        engine_options(args),
        widths,
        args.repeat,
        args.warmup,
        args.max_disparity,
        args.runtimes,
        args.precisions,
    )
    print(bench_table(records))
    plaster_rows = []
    if args.report:
        from app.engine.bench.plaster import plaster_table, run_plaster

        plaster_rows = run_plaster(
            args.engines,
            sizes,
            engine_options(args),
            widths,
            args.runtimes,
            args.precisions,
            max(args.planes),
            args.max_disparity,
            args.repeat,
        )
        print(
            "\nPLASTER: latency above; throughput, accuracy (continuous answer on the demo pair resized "
            f"to the bench size, 0-{args.max_disparity} px: not eval's figures at its own size), size on "
            "disk, energy"
        )
        if not trained:
            print("note: random weights (--width) are timed only: no accuracy")
        print(plaster_table(plaster_rows))
    flow_records = []
    if args.flow_backends:
        from app.engine.bench.flow import flow_bench_table, run_flow_bench

        flow_records = run_flow_bench(args.flow_backends, sizes, args.repeat, args.warmup)
        print()
        print(flow_bench_table(flow_records))
    if args.json:
        write_json(args.json, [r.to_json() for r in records])
        print(f"wrote {args.json}")
        if flow_records:  # a separate file keeps the depth records' format as it was
            flow_json = Path(args.json).with_suffix(".flow.json")
            write_json(flow_json, [r.to_json() for r in flow_records])
            print(f"wrote {flow_json}")
        if plaster_rows:
            plaster_json = Path(args.json).with_suffix(".plaster.json")
            write_json(plaster_json, [r.to_json() for r in plaster_rows])
            print(f"wrote {plaster_json}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="latency per engine, mode, plane count and size",
        description=(
            "Time engines in-process: warm-up, then median and p90 of --repeat runs. SGBM is always "
            "included as the baseline. Bi3D runs the --weights given, else the bundled default model; "
            "with --width (or no bundled model) the published architecture with random weights."
        ),
    )
    p.add_argument(
        "--engines",
        type=lambda s: parse_list(s, str),
        default=["bi3d", "sgbm"],
        help="comma-separated: bi3d, sgbm (default both; SGBM is always timed as the baseline)",
    )
    p.add_argument(
        "--modes",
        type=names("--modes", [m.value for m in Mode]),
        default=["binary", "quantized"],
        help="comma-separated: binary, quantized, selective, continuous (default binary,quantized)",
    )
    p.add_argument(
        "--planes",
        type=numbers("--planes", whole("--planes", 1, 1024)),
        default=[1, 4, 16],
        help="plane counts of quantized and selective rows, comma-separated (default 1,4,16); the "
        "'x sgbm' column divides each row's median by SGBM's at the same size, mode and plane count",
    )
    p.add_argument("--size", type=parse_size, action="append", help="HEIGHTxWIDTH, repeatable")
    p.add_argument(
        "--width",
        type=numbers("--width", real("--width", 0, 8, low_open=True)),
        help="model width(s), e.g. 1.0,0.5",
    )
    p.add_argument(
        "--repeat", type=whole("--repeat", 1, 10000), default=5, help="timed calls per row (default 5)"
    )
    p.add_argument(
        "--warmup",
        type=whole("--warmup", 0, 1000),
        default=1,
        help="untimed calls first, at least (default 1)",
    )
    p.add_argument("--json", type=report_file("bench"), help="write records as JSON")
    p.add_argument(
        "--runtimes",
        type=names("--runtimes", list(RUNTIMES)),
        help="Bi3D runtimes to compare, e.g. torch,onnxruntime (default: --runtime)",
    )
    p.add_argument(
        "--precisions",
        type=names("--precisions", ["auto", "fp32", "tf32", "bf16", "fp16", "int8"]),
        help="Bi3D precisions, e.g. fp32,bf16 (default: --precision)",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="PLASTER table: throughput at batch 1 and the best batch, accuracy on the demo pair, "
        "size on disk, energy per frame (nvidia-smi)",
    )
    p.add_argument(
        "--flow-backends",
        type=flow_specs,
        nargs="?",
        const=["nvof", "dis", "farneback"],
        help="also time optical flow at each --size: backend[:preset[:grid]],... "
        "(e.g. dis:ultrafast,nvof:fast:4); alone: nvof,dis,farneback",
    )
    add_engine_args(p)
    p.set_defaults(func=run)
