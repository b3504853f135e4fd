"""Colour-invariant features by distillation (an experiment; its result is not bundled).

python benchmarks/distill_colour.py --out runs/colour.pt [--weights W] [--steps 3225]
    [--identity-weight 1.5] [--lr 2e-4] [--seed 0]

The light model's feature net answers a colour cast both cameras share very differently from the
same scene as shot (Motorcycle with both views' red at 0.8 x: 29.7 % dense bad-2 against 16.2 %),
which no check between the views can see. Here a copy of the feature net (the student) learns to
give, for a colour-changed image, the features the bundled net (the teacher, frozen) gives the
image as it was: loss = MSE(student(aug(x)), teacher(x)) + identity-weight x MSE(student(x),
teacher(x)). Everything after the features (SegNet, the per-pixel SegNet, the upsampling guide)
is kept. Images: synthetic training-stream scenes (seeds from 6 x 10^8, 30 % rooms; never the demo
pair or any real pair), both views of 4 scenes a step (8 images, 192 x 384). Changes, per image
(one in five kept as it is): per-channel gains in linear light (log-normal, sigma 0.22, clipped to
0.55-1.8), a channel permutation (15 %), saturation 0.3-1.6 x (40 %), chroma noise up to 0.04
(30 %). AdamW, constant learning rate, fp32, 2 threads: about 3.6 steps/s on the 2-core EPYC.

Measured (benchmarks/RESULTS.md, forty-second session): 3225 steps (15 min) held the Motorcycle
and held-out synthetic figures and halved the cost of single-channel casts, but not of a tungsten
cast nor of chroma noise; the 20 px binary mask fell 0.1 point and the blank-room phantoms rose
0.1 point.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.allocator import tune_allocator  # noqa: E402
from app.engine.assets import default_weights  # noqa: E402
from app.engine.bi3d.checkpoint import load_model, save_checkpoint  # noqa: E402
from app.engine.training.data import CropConfig, SyntheticStream  # noqa: E402

LUMA = torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)
SEED_BASE = 6 * 10**8


def changed(img: Tensor, g: torch.Generator) -> Tensor:
    """One 3 x H x W image in [0, 1] as another camera's colours might give it (or as it is)."""

    def uniform(lo: float, hi: float) -> float:
        return lo + (hi - lo) * float(torch.rand((), generator=g))

    if uniform(0, 1) < 0.2:
        return img
    linear = img.clamp(0, 1) ** 2.2
    gains = torch.exp(torch.randn(3, generator=g) * 0.22).clamp(0.55, 1.8)
    img = (linear * gains.view(3, 1, 1) / gains.max().clamp_min(1.0)).clamp(0, 1) ** (1 / 2.2)
    if uniform(0, 1) < 0.15:
        img = img[torch.randperm(3, generator=g)]
    if uniform(0, 1) < 0.4:
        y = (img * LUMA).sum(0, keepdim=True)
        img = y + uniform(0.3, 1.6) * (img - y)
    if uniform(0, 1) < 0.3:
        sigma = uniform(0.0, 0.04)
        n = torch.randn(2, *img.shape[1:], generator=g) * sigma  # Cb, Cr
        img = img + torch.stack([1.402 * n[1], -0.344 * n[0] - 0.714 * n[1], 1.772 * n[0]])
    return (img.clamp(0, 1) * 255).round() / 255


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--weights", type=Path, default=default_weights())
    p.add_argument("--steps", type=int, default=3225)
    p.add_argument("--identity-weight", type=float, default=1.5)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    tune_allocator()
    torch.manual_seed(args.seed)
    model, info = load_model(args.weights)
    teacher = model.featnet.eval()  # type: ignore[attr-defined]
    for param in teacher.parameters():
        param.requires_grad_(False)
    student = copy.deepcopy(teacher).train()
    for param in student.parameters():
        param.requires_grad_(True)
    stream = iter(SyntheticStream(CropConfig(192, 384), seed_base=SEED_BASE, reuse=1, rooms_share=0.3))
    opt = torch.optim.AdamW(student.parameters(), lr=args.lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(args.seed + 1)
    t0, smooth = time.time(), None
    for step in range(1, args.steps + 1):
        images: list[Tensor] = []
        while len(images) < 8:
            left, right, _ = next(stream)
            images += [left, right]
        x = torch.stack(images)
        with torch.no_grad():
            target = teacher(x * 2 - 1)
        aug = torch.stack([changed(img, g) for img in x])
        loss = F.mse_loss(student(aug * 2 - 1), target)
        loss = loss + args.identity_weight * F.mse_loss(student(x * 2 - 1), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        smooth = loss.item() if smooth is None else 0.98 * smooth + 0.02 * loss.item()
        if step % 100 == 0:
            print(f"step {step}/{args.steps} loss {smooth:.4f} {time.time() - t0:.0f} s", flush=True)
    model.featnet = student.eval()  # type: ignore[attr-defined]
    training = dict(
        info.training,
        colour_distillation={
            "from": str(args.weights),
            "steps": args.steps,
            "identity_weight": args.identity_weight,
            "lr": args.lr,
            "seed": args.seed,
            "seed_base": SEED_BASE,
        },
    )
    save_checkpoint(args.out, model, training, half=True)
    print(f"wrote {args.out} ({args.steps} steps, {time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
