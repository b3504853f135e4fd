"""Compare Bi3D checkpoints on 16 held-out synthetic scenes before any of them meets the demo.

python benchmarks/compare_models.py WEIGHTS [WEIGHTS ...] [--scenes 16] [--shift-mode auto|round|interpolate]
    [--precision bf16|fp32] [--generator layered|rooms]

Scenes are 384 x 576 with seeds from 2 x 10^9 (``--generator rooms``: 3D rooms from 3 x 10^9;
never used in training or its validation), run
through the engine as the app runs it (torch, bf16, default shift mode). For each checkpoint:
continuous-mode dense bad-2 without and with the sub-pixel refinement, and binary agreement on
the 3 px grid (12/24/36/48 px) and off it (10, 11, 20, 23, 34, 40, 46 px), of the network alone
and with the matching check near each plane (bi3d.planecheck, the app's default for the light
model). This is the rule by which the bundled model is chosen (resources/models/README.md):
better here, or not bundled.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.metrics import binary_agreement, evaluate  # noqa: E402
from app.engine.synthetic.layered import StereoSample, to_uint8  # noqa: E402
from app.engine.training.data import selection_scenes  # noqa: E402
from app.engine.types import DepthRequest, Mode  # noqa: E402

ON_GRID = (12, 24, 36, 48)
OFF_GRID = (10, 11, 20, 23, 34, 40, 46)
COLUMNS = {  # key: heading
    "bad2_plain": "bad-2 plain",
    "bad2_refined": "refined",
    "binary_on": "bin grid",
    "binary_off": "bin off",
    "binary_on_checked": "grid+check",
    "binary_off_checked": "off+check",
}


def score(
    weights: Path, scenes: list[StereoSample], shift_mode: str = "auto", precision: str = "bf16"
) -> dict[str, float]:
    base = EngineOptions(weights=weights, runtime="torch", precision=precision, shift_mode=shift_mode)
    refined, _ = build_engine(base)
    plain, _ = build_engine(dataclasses.replace(base, subpixel=False, plane_check=False))
    dense = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=192)
    out: dict[str, list[float]] = {k: [] for k in COLUMNS}
    for scene in scenes:
        left, right, gt = to_uint8(scene.left), to_uint8(scene.right), scene.disparity.numpy()
        for engine in (plain, refined):
            engine.new_stream()  # each scene on its own (its range, its colour choice)
        out["bad2_plain"].append(evaluate(plain.compute(left, right, dense).disparity, gt)["dense"].bad2)
        out["bad2_refined"].append(evaluate(refined.compute(left, right, dense).disparity, gt)["dense"].bad2)
        for key, planes in (("binary_on", ON_GRID), ("binary_off", OFF_GRID)):
            request = DepthRequest(mode=Mode.QUANTIZED, planes=planes)
            for suffix, engine in (("", plain), ("_checked", refined)):
                q = engine.compute(left, right, request)
                out[key + suffix].append(
                    float(binary_agreement(q.probabilities, np.asarray(planes), gt).mean())
                )
    return {k: float(np.mean(v)) for k, v in out.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", nargs="+", type=Path)
    p.add_argument("--scenes", type=int, default=16)
    p.add_argument("--shift-mode", default="auto", choices=["auto", "round", "interpolate"])
    p.add_argument("--precision", default="bf16", help="bf16 (the recorded figures) or fp32 (AVX2-only CPUs)")
    p.add_argument("--generator", default="layered", choices=["layered", "rooms"], help="held-out scenes")
    args = p.parse_args()
    scenes = selection_scenes(args.scenes, args.generator)
    print(f"{'checkpoint':<48} " + " ".join(f"{h:>11}" for h in COLUMNS.values()))
    for weights in args.weights:
        s = score(weights, scenes, args.shift_mode, args.precision)
        print(f"{weights!s:<48} " + " ".join(f"{s[k]:>11.4f}" for k in COLUMNS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
