"""`bi3d-studio train-pixel-pass`: train the light model's per-pixel passes for the
coarse-to-fine search (``training.pixel_pass``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.commands.arguments import real, whole
from app.commands.common import parse_size


def run(args: argparse.Namespace) -> int:
    from app.engine.errors import UserError
    from app.engine.training.pixel_pass import PixelPassConfig, train_pixel_pass

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise UserError(f"--out {args.out} is a file; give the run folder (new, or one to resume)")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    cfg = PixelPassConfig(
        out=args.out,
        weights=args.weights,
        steps=args.steps,
        batch=args.batch,
        crop=args.crop,
        lr=args.lr,
        coarse_step=args.coarse_step,
        gt_weight=args.gt_weight,
        rooms_share=args.rooms_share,
        seed=args.seed,
        save_every=args.save_every,
    )
    result = train_pixel_pass(cfg)
    print("\n" + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train-pixel-pass",
        help="train the light model's per-pixel passes (the coarse-to-fine search)",
        description=(
            "Give a light model (the bundled one by default) its own SegNet for the per-pixel passes "
            "of the coarse-to-fine continuous search, trained on synthetic scenes to answer each "
            "pixel's plane as the model's uniform sweep does; the features and the uniform planes stay "
            "as they are. Resumes from OUT/last.pt and OUT/state.pt. Writes OUT/last.pt (the whole "
            "model), state.pt and log.csv."
        ),
    )
    p.add_argument(
        "--out",
        default="runs/pixel_pass",
        help="run folder, resumed when it holds last.pt (default: runs/pixel_pass)",
    )
    p.add_argument("--weights", help="the light model to complete (default: the bundled one)")
    p.add_argument("--steps", type=whole("--steps", 1), default=2500, help="training steps (default: 2500)")
    p.add_argument("--batch", type=whole("--batch", 1, 4096), default=4, help="crops a step (default: 4)")
    p.add_argument(
        "--crop", type=parse_size, default=(192, 384), help="HEIGHTxWIDTH, multiples of 96 (default: 192x384)"
    )
    p.add_argument(
        "--lr", type=real("--lr", 0, 10, low_open=True), default=3e-4, help="learning rate (default: 3e-4)"
    )
    p.add_argument(
        "--coarse-step",
        type=whole("--coarse-step", 6, 192, "px"),
        default=24,
        help="the coarse sweep's plane step in px (default: 24)",
    )
    p.add_argument(
        "--gt-weight",
        type=real("--gt-weight", 0, 100),
        default=0.3,
        help="weight of the ground-truth loss next to the uniform sweep's answers (default: 0.3)",
    )
    p.add_argument(
        "--rooms-share",
        type=real("--rooms-share", 0, 1),
        default=0.3,
        help="share of room renders among the synthetic scenes (default: 0.3)",
    )
    p.add_argument("--seed", type=whole("--seed", 0), default=0, help="random seed (default: 0)")
    p.add_argument("--threads", type=whole("--threads", 1, 1024), help="torch CPU threads")
    p.add_argument(
        "--save-every",
        type=whole("--save-every", 1),
        default=100,
        help="steps between checkpoints (default: 100)",
    )
    p.set_defaults(func=run)
