"""Train (or fine-tune) the light model on one GPU for a fixed time, without Qt. Writes the run
(``RUN/last.pt``, ``best.pt``, ``log.csv``) and ``RUN/train_gpu.json`` under --out.

python benchmarks/train_gpu.py --out $OUT/run [--minutes 6] [--init resources/models/bi3d_default.pt]
    [--crop 288x576] [--rooms-share 0.3] [--blank-share 0.3] [--freeze-features] [--workers 7]

The learning-rate schedule is fitted to the time given: after a short measurement the run's
step count is set so that its cosine decay ends at the deadline (re-estimated every 100 steps),
so a run stopped by the clock still ends at its low rate. Scenes are rendered on the CPU by
``--workers`` loader processes, on the GPU with ``--data-device cuda`` (spawned processes, each
with its own CUDA context; without workers, in the training process). If the GPU loaders fail
at the start or later, the run says why and renders on the CPU instead.
A validation that fails on the GPU is retried on a CPU copy of the model, with the GPU's
error printed, so a fault in the engine's CUDA path does not lose the run.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from app.engine.training.trainer import TrainConfig, Trainer  # noqa: E402


def parse_size(text: str) -> tuple[int, int]:
    """HEIGHTxWIDTH, as ``bi3d-studio train --crop`` takes it."""
    height, width = (int(v) for v in text.lower().split("x"))
    return height, width


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="run folder")
    p.add_argument("--minutes", type=float, default=6.0, help="training time (validation included)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--planes", type=int, default=12)
    p.add_argument("--crop", type=parse_size, default=(288, 576), help="HEIGHTxWIDTH, multiples of 96")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--rooms-share", type=float, default=0.3)
    p.add_argument("--blank-share", type=float, default=0.0)
    p.add_argument("--freeze-features", action="store_true")
    p.add_argument("--reuse", type=int, default=4)
    p.add_argument("--workers", type=int, default=7)
    p.add_argument("--seed", type=int, default=21)
    p.add_argument("--threads", type=int, default=0, help="CPU threads of the training process (0: torch's)")
    p.add_argument("--val-every", type=int, default=400)
    p.add_argument("--val-count", type=int, default=16)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--data-device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--init", help="fine-tune this checkpoint (default: train from scratch)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    start = time.monotonic()
    deadline = start + args.minutes * 60
    cfg = TrainConfig(
        out=str(out), kind="light", steps=10**6, batch=args.batch, planes=args.planes, crop=args.crop,
        lr=args.lr, warmup=args.warmup, precision="bf16" if args.device == "cuda" else "fp32",
        device=args.device, data_device=args.data_device, workers=args.workers, reuse=args.reuse,
        val_every=args.val_every, val_count=args.val_count, save_every=200, init=args.init,
        seed=args.seed, rooms_share=args.rooms_share, blank_share=args.blank_share,
        freeze_features=args.freeze_features, log_every=20,
    )  # fmt: skip
    trainer = Trainer(cfg)
    _guard_validation(trainer)
    _guard_rendering(trainer, args.workers)
    _fit_schedule(trainer, start, deadline)
    result = trainer.run()
    report = {
        "result": result,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "minutes": round((time.monotonic() - start) / 60, 2),
        "args": {k: list(v) if isinstance(v, tuple) else v for k, v in vars(args).items()},
    }
    (out / "train_gpu.json").write_text(json.dumps(report, indent=2))
    print("\n" + json.dumps(report), flush=True)
    return 0


def _fit_schedule(trainer: Trainer, start: float, deadline: float) -> None:
    """Set ``cfg.steps`` so the run ends at ``deadline``: the rate is measured from 30 steps into
    the run on (the loader's start excluded; a resumed run counts from its first step) and
    re-measured every 100 steps."""
    original = trainer.train_step
    mark: list[float] = []
    first = trainer.step  # a resumed run starts later

    def step(*a):  # type: ignore[no-untyped-def]
        loss = original(*a)
        now = time.monotonic()
        if not mark and trainer.step >= first + 30:
            mark[:] = [now, trainer.step]
        elif mark and trainer.step % 100 == 0:
            rate = (trainer.step - mark[1]) / max(now - mark[0], 1e-6)  # steps/s, validation included
            left = max(0.0, deadline - now - 20)  # the last validation and saves
            trainer.cfg.steps = max(trainer.step + 1, trainer.step + int(rate * left))
        if now > deadline and trainer.cfg.steps > trainer.step + 1:
            trainer.cfg.steps = trainer.step + 1  # the loop validates and saves at its last step
        return loss

    trainer.train_step = step  # type: ignore[method-assign]


def _guard_rendering(trainer: Trainer, workers: int) -> None:
    """If the scenes cannot be had as asked (loader processes rendering on the GPU), say why and
    render them on the CPU in ``workers`` forked loader processes instead, at the start or at
    any later batch (a restarted stream goes on from the trainer's step with new scenes)."""
    original = trainer._batches

    def batches():  # type: ignore[no-untyped-def]
        stream = original()
        while True:
            try:
                item = next(stream)
            except StopIteration:
                return
            except Exception:  # any fault of the GPU loaders: reported, then the CPU's
                if trainer.cfg.data_device != "cuda":
                    raise
                print("\nrendering on the GPU in loader processes failed; rendering on the CPU:", flush=True)
                traceback.print_exc()
                trainer.cfg.data_device, trainer.cfg.workers = "cpu", workers
                stream = original()
                continue
            yield item

    trainer._batches = batches  # type: ignore[method-assign]


def _guard_validation(trainer: Trainer) -> None:
    """Validate on the training device; if that fails, say why and validate a CPU copy."""
    original = trainer.validate
    failed: list[bool] = []

    def validate(scenes):  # type: ignore[no-untyped-def]
        if not failed:
            try:
                return original(scenes)
            except Exception:  # any fault of the CUDA path: reported, then the CPU
                failed.append(True)
                print("\nvalidation on the GPU failed; validating on the CPU from now on:", flush=True)
                traceback.print_exc()
        model, device = trainer.model, trainer.device
        try:
            trainer.model = copy.deepcopy(model).float().cpu()
            trainer.device = torch.device("cpu")
            return original(scenes)
        finally:
            trainer.model, trainer.device = model, device
            model.train()

    trainer.validate = validate  # type: ignore[method-assign]


if __name__ == "__main__":
    sys.exit(main())
