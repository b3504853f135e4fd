"""`bi3d-studio train`: train a Bi3D model (synthetic data or a dataset folder)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.commands.arguments import real, whole
from app.commands.common import parse_size
from app.engine.types import DEVICES


def run(args: argparse.Namespace) -> int:
    from app.engine.depth.bi3d import resolve_device
    from app.engine.errors import UserError
    from app.engine.training.trainer import TrainConfig, train

    for device in {args.device, args.data_device}:
        resolve_device(device)  # "CUDA is not available on this machine" in one line
    if args.precision == "fp16" and args.device != "cuda":  # as depth says it
        raise UserError("fp16 needs --device cuda; use bf16 or fp32 on the CPU")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise UserError(f"--out {args.out} is a file; give the run folder (new, or one to resume)")
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
        data_device=args.data_device,
        workers=args.workers,
        reuse=args.reuse,
        val_every=args.val_every,
        val_count=args.val_count,
        save_every=args.save_every,
        continuous_window=args.window,
        plane_step=args.plane_step,
        near_share=args.near_share,
        rooms_share=args.rooms_share,
        blank_share=args.blank_share,
        freeze_features=args.freeze_features,
    )
    result = train(cfg)
    print("\n" + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a Bi3D model",
        description=(
            "Train on synthetic scenes (default) or a dataset folder (SceneFlow left/right/disparity, "
            "Middlebury, KITTI 2015). Resumes from OUT/last.pt when present. Runs as it is on one "
            "device; under torchrun, one process per GPU (DistributedDataParallel). Writes "
            "OUT/last.pt, best.pt, state.pt and log.csv. The default 20000 steps take many hours on a CPU: "
            "give --steps for a short run."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--out", default="runs/train", help="run folder (resumed when it holds last.pt)")
    p.add_argument(
        "--kind",
        default="light",
        choices=["light", "binary", "continuous_2d", "continuous_3d"],
        help="the model to train: this project's light model, or a published Bi3D kind",
    )
    p.add_argument(
        "--width", type=real("--width", 0, 8, low_open=True), default=1.0, help="channel width multiplier"
    )
    p.add_argument(
        "--max-disparity",
        type=whole("--max-disparity", 3, 1024, "px"),
        default=192,
        help="the model's range (px)",
    )
    p.add_argument("--data", default="synthetic", help="'synthetic' or a dataset folder")
    p.add_argument("--crop", type=parse_size, default=(192, 384), help="HEIGHTxWIDTH, multiples of 96")
    p.add_argument("--batch", type=whole("--batch", 1, 4096), default=4, help="samples per step and process")
    p.add_argument(
        "--planes", type=whole("--planes", 1, 1024), default=8, help="planes per sample (binary kinds)"
    )
    p.add_argument(
        "--plane-step",
        type=int,
        default=3,
        choices=[1, 3],
        help="binary kinds: train planes every 3 px (whole feature columns, as published) or every "
        "1 px (also the fractional shifts that planes between columns use)",
    )
    p.add_argument(
        "--near-share",
        type=real("--near-share", 0, 1),
        default=None,
        help="binary kinds: share of each sample's planes drawn within a few px of the ground truth "
        "(default: the bundled recipe, near planes about twice as often as chance)",
    )
    p.add_argument(
        "--rooms-share",
        type=real("--rooms-share", 0, 1),
        default=0.5,
        help="synthetic data: share of scenes that are 3D rooms, corridors and outdoor scenes "
        "(the rest: layered planes); the bundled model was trained with 0",
    )
    p.add_argument(
        "--blank-share",
        type=real("--blank-share", 0, 1),
        default=0.0,
        help="synthetic data: share of the rooms drawn with every wall and ceiling blank",
    )
    p.add_argument(
        "--window",
        type=whole("--window", 1, 1024),
        default=17,
        help="contiguous planes per sample (continuous kinds)",
    )
    p.add_argument(
        "--steps", type=whole("--steps", 1), default=20000, help="optimizer steps of the whole run"
    )
    p.add_argument("--lr", type=real("--lr", 0, 10, low_open=True), default=1e-3, help="peak learning rate")
    p.add_argument(
        "--precision",
        default="bf16",
        choices=["fp32", "bf16", "fp16"],
        help="autocast precision (fp16: CUDA)",
    )
    p.add_argument("--no-tf32", action="store_true", help="disable TF32 matmuls on CUDA")
    p.add_argument("--no-channels-last", action="store_true", help="keep activations channels-first")
    p.add_argument("--init", help="start from this checkpoint (fine-tuning), same kind")
    p.add_argument(
        "--freeze-features",
        action="store_true",
        help="with --init: train everything but the feature network (the per-pixel SegNet of "
        "the checkpoint is kept as it is)",
    )
    p.add_argument("--seed", type=whole("--seed", 0), default=0, help="data and initialisation seed")
    p.add_argument("--device", default="cpu", choices=list(DEVICES), help="where the model trains")
    p.add_argument(
        "--data-device",
        default="cpu",
        choices=list(DEVICES),
        help="render synthetic scenes on the GPU (with --device cuda)",
    )
    p.add_argument("--workers", type=whole("--workers", 0, 256), default=0, help="data loader processes")
    p.add_argument("--threads", type=whole("--threads", 1, 1024), help="torch CPU threads")
    p.add_argument("--reuse", type=whole("--reuse", 1), default=3, help="times each synthetic scene is shown")
    p.add_argument(
        "--val-every", type=whole("--val-every", 1), default=1000, help="steps between validations"
    )
    p.add_argument("--val-count", type=whole("--val-count", 1), default=8, help="validation scenes")
    p.add_argument(
        "--save-every", type=whole("--save-every", 1), default=200, help="steps between saves of last.pt"
    )
    p.set_defaults(func=run)
