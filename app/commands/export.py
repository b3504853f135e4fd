"""`bi3d-studio export`: ONNX files per stage, and TensorRT engines built ahead of time."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from app.commands.arguments import real, whole
from app.commands.common import parse_size
from app.engine.errors import UserError
from app.engine.types import DEVICES

if TYPE_CHECKING:
    from app.engine.bi3d.model import SweepModel

KINDS = ("binary", "continuous_2d", "continuous_3d", "light")
MAX_PLANES = 32  # the SegNet engine's largest plane batch, unless --max-planes


def run(args: argparse.Namespace) -> int:
    if not args.onnx and not args.tensorrt:
        args.usage_error("give --onnx DIR, --tensorrt, or both")
    from app.engine.runtimes.base import RuntimeUnavailable

    _check_flags(args)
    if args.onnx and args.width is not None and args.weights is None:
        _check_onnx_size(args.kind or "binary", args.width)
    model, described = _model(args)
    print(f"model: {described}")
    try:
        if args.onnx:
            _export_onnx(model, Path(args.onnx), args.onnx_precision)
        if args.tensorrt:
            _build_tensorrt(model, args)
    except RuntimeUnavailable as exc:  # a missing package, TensorRT or CUDA, a failed build
        raise UserError(str(exc)) from exc
    return 0


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that would be ignored are refused, before a minute of export."""
    from app.engine.bi3d.model import SIZE_MULTIPLE

    random_only = [
        flag for flag, value in (("--kind", args.kind), ("--max-disparity", args.max_disparity)) if value
    ]
    if args.width is None and random_only:
        verb = "shape" if len(random_only) > 1 else "shapes"
        raise UserError(
            f"{' and '.join(random_only)} {verb} a random model: give --width too (a checkpoint keeps "
            "its own kind and range)"
        )
    if args.width is not None and args.weights:
        raise UserError("--width makes a random model and --weights loads one: give one of them")
    if args.max_disparity is not None and args.max_disparity % SIZE_MULTIPLE:
        raise UserError(
            f"--max-disparity {args.max_disparity} px: a model's range is a multiple of {SIZE_MULTIPLE} px "
            f"(96, 192, 288, ...); give one of those"
        )
    if not args.tensorrt:
        trt_only = [
            flag
            for flag, value in (
                ("--size", args.size),
                ("--device", args.device),
                ("--precision", args.precision),
                ("--max-planes", args.max_planes),
            )
            if value
        ]
        if trt_only:
            raise UserError(
                f"{', '.join(trt_only)} {'chooses' if len(trt_only) == 1 else 'choose'} how TensorRT "
                "engines are built: give --tensorrt too (the ONNX export runs on the CPU; use "
                "--onnx-precision for its graphs)"
            )


ONNX_LIMIT_BYTES = 2 << 30  # protobuf's limit on one file, which holds the weights too


def _check_onnx_size(kind: str, width: float) -> None:
    """A random model whose weights alone would pass the ONNX file limit is refused before it is
    built (the binary kind at --width 8 took 9 GB and failed after a minute and a half). Weights
    grow with the width squared: estimated from the kind at width 1."""
    from app.engine.bi3d.factory import build_model

    unit = sum(p.numel() * p.element_size() for p in build_model(kind, 1.0, 192).parameters())
    weights = unit * width * width
    if weights >= 0.9 * ONNX_LIMIT_BYTES:
        widest = (0.9 * ONNX_LIMIT_BYTES / unit) ** 0.5
        raise UserError(
            f"the {kind} model at --width {width:g} has about {weights / 1e9:.1f} GB of weights; an ONNX "
            f"file stops at 2 GB: give --width {math.floor(widest * 100) / 100:g} or less"
        )


def _model(args: argparse.Namespace) -> tuple[SweepModel, str]:
    from app.engine.assets import default_weights
    from app.engine.bi3d.checkpoint import load_model
    from app.engine.bi3d.factory import build_model

    if args.width is not None and args.weights is None:
        kind, top = args.kind or "binary", args.max_disparity or 192
        return build_model(kind, args.width, top), (
            f"random {kind} weights at width {args.width:g}, {top} px (timing only)"
        )
    weights = Path(args.weights) if args.weights else default_weights()
    if weights is None:
        raise UserError("no model to export: give --weights FILE (or --kind and --width for random weights)")
    model, info = load_model(weights)
    return model, f"{weights}: {info.kind.value}, width {info.width:g}, {info.max_disparity} px"


def _export_onnx(model: SweepModel, folder: Path, precision: str) -> None:
    import torch

    from app.engine.runtimes.onnx_export import stale_exports, write_onnx
    from app.engine.runtimes.ort_runtime import OrtRuntime
    from app.engine.runtimes.verify import FP32_TOLERANCE, compare_with_torch

    try:
        stale = stale_exports(model, folder, precision)
        paths = write_onnx(model, folder, precision)
        for path, what in stale:  # removed once the new files stand (a failed write left them)
            path.unlink()
            print(f"note: removed {path}: {what}, which this model has not")
    except OSError as exc:
        raise UserError(f"cannot write into {folder}: {exc.strerror}; choose another --onnx folder") from exc
    for path in paths:
        print(f"wrote {path} ({_size(path.stat().st_size)})")
    if precision != "fp32":
        print("fp16 graphs are for TensorRT 11 (strongly typed); not compared on the CPU")
        return
    runtime = OrtRuntime.from_directory(folder, model, torch.device("cpu"))
    agreement = compare_with_torch(model, runtime)
    verdict = "ok" if agreement.probabilities < FP32_TOLERANCE else f"ABOVE {FP32_TOLERANCE:g}"
    print(f"{agreement.line('onnxruntime')}: {verdict}")


def _build_tensorrt(model: SweepModel, args: argparse.Namespace) -> None:
    import torch

    from app.engine.bi3d.padding import Padder
    from app.engine.runtimes.tensorrt_runtime import open_tensorrt

    device = torch.device(args.device or "cuda")
    precision, max_planes = args.precision or "fp16", args.max_planes or MAX_PLANES
    runtime = open_tensorrt(model, device, precision, max_planes=max_planes)
    model.to(device).eval()
    for height, width in args.size or [(576, 960)]:
        padded = Padder(height, width, minimum=model.min_size).padded_size
        with torch.inference_mode():
            notes = runtime.prepare(*padded)
        print(f"TensorRT engines ready for {height}x{width} (padded {padded[0]}x{padded[1]})")
        for note in notes:
            print(f"note: {note}")
    print(f"engine cache: {runtime.root}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="ONNX files per stage; TensorRT engines for the sizes in use",
        description=(
            "Write FeatNet (with FeatNetHR), SegNet (plane-sweep volume built inside from a shift "
            "vector) and the refinement stages as separate ONNX files with dynamic batch, height, "
            "width and plane count, metadata in the model properties, checked against torch with "
            "onnxruntime. --tensorrt builds engines into the cache (needs TensorRT and CUDA) so the "
            "first frame does not wait minutes."
        ),
    )
    p.add_argument("--onnx", metavar="DIR", help="write <stage>.onnx files here")
    p.add_argument("--onnx-precision", default="fp32", choices=["fp32", "fp16"], help="fp16: for TensorRT 11")
    p.add_argument("--tensorrt", action="store_true", help="build TensorRT engines for each --size")
    p.add_argument("--weights", help="checkpoint to export (default: the bundled model)")
    p.add_argument("--kind", choices=KINDS, help="with --width: the random model's kind (default binary)")
    p.add_argument(
        "--width",
        type=real("--width", 0, 8, low_open=True),
        help="random-initialised model of this width (timing only)",
    )
    p.add_argument(
        "--max-disparity",
        type=whole("--max-disparity", 96, 960, "px"),
        help="with --width: the random model's range, a multiple of 96 px (default 192)",
    )
    p.add_argument("--size", type=parse_size, action="append", help="HEIGHTxWIDTH, repeatable (TensorRT)")
    p.add_argument("--device", choices=list(DEVICES), help="where TensorRT engines are built (default cuda)")
    p.add_argument("--precision", choices=["fp32", "fp16"], help="TensorRT precision (default fp16)")
    p.add_argument(
        "--max-planes",
        type=whole("--max-planes", 1, 1024),
        help=f"largest plane batch of the SegNet engine (default {MAX_PLANES})",
    )
    p.set_defaults(func=run, usage_error=p.error)


def _size(nbytes: int) -> str:
    """A file's size in the unit that shows it: "21 KB", not "0.0 MB" (review)."""
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 100_000 else f"{max(1, round(nbytes / 1e3))} KB"
