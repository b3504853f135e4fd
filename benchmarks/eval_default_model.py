"""Figures for resources/models/README.md: the bundled model on the demo pair against SGBM.

python benchmarks/eval_default_model.py [WEIGHTS] [--precision auto|fp32|bf16] [--json FILE]

Prints continuous-mode metrics (dense and valid-only) for Bi3D and SGBM in the same run, and
the agreement of binary masks with the ground truth at 10, 20, 30 and 40 px on valid pixels,
as the app answers them (with the matching check near the plane) and from the network alone.
The demo pair is never used for training or model selection; this only reports.
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

from app.engine.assets import default_weights, demo_scene  # noqa: E402
from app.engine.bench.evaluation import eval_table, evaluate_scenes  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.metrics import binary_agreement  # noqa: E402
from app.engine.sources.spec import find_scenes  # noqa: E402
from app.engine.types import DepthRequest, Mode  # noqa: E402

PLANES = (10, 20, 30, 40)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("weights", nargs="?", default=str(default_weights() or ""))
    p.add_argument("--precision", default="auto", help="auto (the app's default), fp32 or bf16")
    p.add_argument("--json")
    args = p.parse_args()
    options = EngineOptions(weights=Path(args.weights), runtime="torch", precision=args.precision)
    scenes = find_scenes(demo_scene())
    rows = evaluate_scenes(scenes, ["bi3d", "sgbm"], options)
    print(eval_table(rows))
    pair, _ = scenes[0].load()
    assert pair.gt_disparity is not None
    engine, reason = build_engine(options)
    network, _ = build_engine(dataclasses.replace(options, plane_check=False))
    agreement: dict[str, dict[int, float]] = {"default": {}, "network": {}}
    for plane in PLANES:
        request = DepthRequest(mode=Mode.BINARY, planes=(plane,))
        for key, eng in (("default", engine), ("network", network)):
            result = eng.compute(pair.left, pair.right, request)
            assert result.mask is not None  # the mask is probabilities > 0.5
            agreement[key][plane] = float(
                binary_agreement(result.probabilities, np.array([plane]), pair.gt_disparity)[0]
            )
    for key, label in (("default", "default (with the plane check)"), ("network", "network alone")):
        print(
            f"binary agreement with ground truth on valid pixels, {label}: "
            + ", ".join(f"{p} px {a:.3f}" for p, a in agreement[key].items())
        )
    precision = getattr(engine, "precision", None)  # SGBM has none
    print(f"engine: {reason}; precision {precision or '-'}")
    if args.json:
        out = {
            "precision": precision,
            "eval": [r.to_json() for r in rows],
            "binary_agreement": agreement["default"],
            "binary_agreement_network": agreement["network"],
        }
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
