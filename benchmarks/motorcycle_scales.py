"""Motorcycle at other sizes: how the defaults hold on a pair whose disparities reach further or
less far than the demo's (as an unseen pair from another camera would).

python benchmarks/motorcycle_scales.py [--scales 0.6,1,1.4,1.8,2.2] [--precision fp32]

The demo pair and its ground truth are resized by each factor (INTER_AREA down, INTER_CUBIC up;
the truth by nearest neighbour, times the factor). Continuous depth at the app's defaults
(``--max-disparity auto``, default confidence) for Bi3D and SGBM: dense bad-2 (unknown pixels
count as errors), the share answered, the sweep's bound and plane count, and one frame's time
after a first (warm) one.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import vocabulary  # noqa: E402
from app.engine.allocator import tune_allocator  # noqa: E402
from app.engine.assets import default_weights, demo_scene  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.sources.spec import find_scenes  # noqa: E402

ENGINES = ("bi3d", "sgbm")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scales", default="0.6,1,1.4,1.8,2.2")
    p.add_argument("--precision", default="auto")
    args = p.parse_args()
    tune_allocator()
    demo, _ = find_scenes(demo_scene())[0].load()
    left, right, truth = demo.left, demo.right, demo.gt_disparity
    options = EngineOptions(weights=default_weights(), precision=args.precision)
    engines = {n: build_engine(dataclasses.replace(options, engine=n), "continuous_2d")[0] for n in ENGINES}
    request = vocabulary.depth_request("continuous")
    for s in (float(x) for x in args.scales.split(",")):
        h, w = round(left.shape[0] * s), round(left.shape[1] * s)
        interp = cv2.INTER_AREA if s < 1 else cv2.INTER_CUBIC
        l_s, r_s = (cv2.resize(im, (w, h), interpolation=interp) for im in (left, right))
        gt = cv2.resize(truth, (w, h), interpolation=cv2.INTER_NEAREST) * (w / left.shape[1])
        valid = np.isfinite(gt)
        cells = []
        for name, engine in engines.items():
            engine.compute(l_s, r_s, request)  # warm: the runtime choice, the cost model
            t0 = time.perf_counter()
            result = engine.compute(l_s, r_s, request)
            ms = (time.perf_counter() - t0) * 1000
            d = result.disparity
            bad = 100 * (np.abs(np.nan_to_num(d, nan=1e9) - gt)[valid] > 2).mean()
            answered = 100 * np.isfinite(d)[valid].mean()
            sweep = f", 0-{result.searched[1]:.0f} px, {len(result.planes)} planes" if name == "bi3d" else ""
            cells.append(f"{name} {bad:.2f} % ({answered:.1f} % answered{sweep}) {ms:.0f} ms")
        print(f"x{s:g} {w}x{h}, truth reaches {np.nanmax(gt[valid]):.0f} px: " + "; ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
