"""Measure a light checkpoint's int8 activation ranges and write them beside it.

python benchmarks/calibrate_int8.py [WEIGHTS] [--pairs 8]

Writes ``NAME.int8.json`` next to ``NAME.pt`` (``app.engine.bi3d.int8``): the ranges of the
SegNet's activations over full sweeps of synthetic training-stream scenes (layered and rooms,
seeds from 5 x 10^9; never a held-out or demo scene). ``--precision int8`` (and ``auto`` on a
CPU without native bf16) reads it on load; without it, int8 measures the ranges at startup.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.assets import default_weights  # noqa: E402
from app.engine.bi3d.checkpoint import load_model  # noqa: E402
from app.engine.bi3d.int8 import calibrate, calibration_pairs, calibration_path, write_calibration  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", nargs="?", default=str(default_weights() or ""))
    p.add_argument("--pairs", type=int, default=8)
    args = p.parse_args()
    model, _ = load_model(args.weights)
    t0 = time.perf_counter()
    calibration = calibrate(model, calibration_pairs(args.pairs))
    out = calibration_path(args.weights)
    write_calibration(out, calibration)
    print(f"{out}: {len(calibration.qparams)} activation ranges in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
