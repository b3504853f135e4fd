"""Phantom "near" blobs on blank walls and ceilings, at the app's default settings.

python benchmarks/phantom_blobs.py [WEIGHTS] [--count 16] [--precision fp32] [--min-confidence C]

On held-out renders of rooms dominated by blank walls and ceilings (``blank_wall_scenes``:
seeds from 4 x 10^9, never trained or tuned on), continuous depth as ``bi3d-studio depth``
answers it by default (``--max-disparity auto``, the default confidence threshold), and SGBM
in the same run. Per engine: the share of low-texture pixels answered more than 5 px too
near (among those kept: a masked pixel is unknown, not a phantom), the share of all pixels
that keep an answer, and dense bad-2. Issue 21's targets: phantoms <= 2 % with >= 70 % kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import vocabulary  # noqa: E402
from app.engine.assets import default_weights  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.synthetic.layered import to_uint8  # noqa: E402
from app.engine.training.data import blank_wall_scenes  # noqa: E402

NEAR_PX = 5.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", nargs="?", default=str(default_weights() or ""))
    p.add_argument("--count", type=int, default=16)
    p.add_argument("--precision", default="auto")
    p.add_argument("--min-confidence", type=float, default=None, help="default: the app's")
    p.add_argument("--json")
    args = p.parse_args()
    request = vocabulary.depth_request("continuous", min_confidence=args.min_confidence)
    options = EngineOptions(weights=Path(args.weights), precision=args.precision)
    engines = {name: build_engine(dataclasses.replace(options, engine=name))[0] for name in ("bi3d", "sgbm")}
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in engines}
    for i, scene in enumerate(blank_wall_scenes(args.count)):
        left, right = to_uint8(scene.sample.left), to_uint8(scene.sample.right)
        truth = scene.sample.disparity.numpy()
        low = scene.low_texture.numpy()
        for name, engine in engines.items():
            engine.new_stream()  # each render on its own, as `depth LEFT RIGHT` answers it
            d = engine.compute(left, right, request).disparity
            kept = np.isfinite(d)
            with np.errstate(invalid="ignore"):
                phantom = kept & low & (d - truth > NEAR_PX)
                bad = ~kept | (np.abs(d - truth) > 2)
            rows[name].append((phantom.sum() / max(low.sum(), 1), kept.mean(), bad.mean()))
        print(
            f"scene {i:2d} (low texture {100 * low.mean():.0f} %): "
            + "; ".join(
                f"{n} phantom {100 * r[-1][0]:.2f} %, kept {100 * r[-1][1]:.1f} %" for n, r in rows.items()
            ),
            flush=True,
        )
    summary = {
        name: {
            "phantom_low_texture_pct": round(100 * float(np.mean([r[0] for r in v])), 2),
            "kept_pct": round(100 * float(np.mean([r[1] for r in v])), 1),
            "kept_min_pct": round(100 * float(np.min([r[1] for r in v])), 1),
            "dense_bad2_pct": round(100 * float(np.mean([r[2] for r in v])), 1),
        }
        for name, v in rows.items()
    }
    for name, s in summary.items():
        print(
            f"{name}: phantoms {s['phantom_low_texture_pct']:.2f} % of low-texture pixels, kept "
            f"{s['kept_pct']:.1f} % (lowest scene {s['kept_min_pct']:.1f} %), "
            f"dense bad-2 {s['dense_bad2_pct']:.1f} %"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"request": str(request), "engines": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
