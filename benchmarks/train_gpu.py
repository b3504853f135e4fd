"""Train the bundled default model on one GPU, without OpenCV or Qt (the device image has
torch with CUDA and scikit-image only). Writes the run and bi3d_default.pt to --out.

python benchmarks/train_gpu.py --out $OUT [--steps 6000] [--minutes 9]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from app.engine.bi3d.checkpoint import load_model, save_checkpoint  # noqa: E402
from app.engine.training.trainer import TrainConfig, Trainer  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--planes", type=int, default=12)
    p.add_argument("--minutes", type=float, default=9.0, help="stop (and save) after this long")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--init", help="continue from this checkpoint (e.g. the CPU run's best.pt)")
    args = p.parse_args()
    out = Path(args.out)
    cuda = args.device == "cuda"
    cfg = TrainConfig(
        out=str(out / "run"), kind="light", steps=args.steps, batch=args.batch, planes=args.planes,
        lr=2e-3, precision="bf16", device=args.device, data_device="cuda" if cuda else "cpu",
        val_every=max(args.steps // 6, 1), val_count=16, save_every=250, init=args.init, reuse=2,
    )  # fmt: skip
    trainer = Trainer(cfg)
    deadline = time.monotonic() + args.minutes * 60
    trainer.cfg.steps = args.steps
    result = _run_until(trainer, deadline)
    best = out / "run" / "best.pt"
    model, info = load_model(best if best.is_file() else out / "run" / "last.pt")
    save_checkpoint(out / "bi3d_default.pt", model, dict(info.training, trained_on=_device_name()), half=True)
    (out / "train_gpu.json").write_text(json.dumps({"result": result, "device": _device_name()}, indent=2))
    print(json.dumps(result))
    return 0


def _run_until(trainer: Trainer, deadline: float) -> dict[str, float]:
    """Run the trainer, but stop early at the deadline (the run's cosine schedule still ends
    at --steps, so a shortened run keeps a usable learning rate)."""
    original = trainer.train_step
    stop_at = [trainer.cfg.steps]

    def step(*a):  # type: ignore[no-untyped-def]
        if time.monotonic() > deadline and stop_at[0] == trainer.cfg.steps:
            stop_at[0] = trainer.step + 1
            trainer.cfg.steps = stop_at[0]  # the loop validates and saves at its last step
        return original(*a)

    trainer.train_step = step  # type: ignore[method-assign]
    return trainer.run()


def _device_name() -> str:
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


if __name__ == "__main__":
    sys.exit(main())
