"""Copy a trained checkpoint into resources/models/bi3d_default.pt with fp16 weights.

Usage (repo root): python packaging/bundle_default_model.py [runs/default/best.pt]
Half-precision storage halves the file; weights are widened back to fp32 when loaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app.engine.bi3d.checkpoint import load_model, save_checkpoint

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "resources" / "models" / "bi3d_default.pt"


def main(source: str = "runs/default/best.pt") -> None:
    model, info = load_model(source)
    training = dict(info.training, source_checkpoint=str(source), stored_as="float16")
    save_checkpoint(TARGET, model, training, half=True)
    load_model(TARGET)  # it must load again
    size = TARGET.stat().st_size / 1e6
    print(f"wrote {TARGET} ({size:.2f} MB, {info.kind.value}, step {info.training.get('step')})")


if __name__ == "__main__":
    main(*sys.argv[1:])
