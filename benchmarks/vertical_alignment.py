"""Motorcycle with its right view moved out of rectification: depth with and without the
vertical alignment (``depth.alignment``; ``--no-align`` turns it off).

python benchmarks/vertical_alignment.py [--precision fp32]

The right image is moved down (or up) by 0.5-3 px, or turned about its centre by 0.15 degrees
(bicubic resampling, edges replicated); continuous depth at the app's defaults, Bi3D and SGBM,
each with alignment on and off: dense bad-2 against the ground truth (unknown pixels count as
errors), and what the alignment measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import vocabulary  # noqa: E402
from app.engine.allocator import tune_allocator  # noqa: E402
from app.engine.assets import default_weights, demo_scene  # noqa: E402
from app.engine.depth.alignment import measure  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.formats import read_image_rgb, read_pfm  # noqa: E402


def moved(image: np.ndarray, down_px: float = 0.0, turn_deg: float = 0.0) -> np.ndarray:
    h, w = image.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), turn_deg, 1.0)
    m[1, 2] += down_px
    return cv2.warpAffine(image, m, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)


CASES = {
    "rectified": {},
    "down 0.5 px": {"down_px": 0.5},
    "down 0.8 px": {"down_px": 0.8},
    "down 1.5 px": {"down_px": 1.5},
    "up 3 px": {"down_px": -3.0},
    "turned 0.15 deg": {"turn_deg": 0.15},
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--precision", default="auto")
    args = p.parse_args()
    tune_allocator()
    scene = demo_scene()
    left, right = (read_image_rgb(scene / f) for f in ("im0.png", "im1.png"))
    truth = read_pfm(scene / "disp0GT.pfm")
    valid = np.isfinite(truth)
    request = vocabulary.depth_request("continuous")
    base = EngineOptions(weights=default_weights(), precision=args.precision)
    for case, how in CASES.items():
        r = moved(right, **how) if how else right
        found = measure(left, r)
        seen = f"measured {found.rms_px:.2f} px RMS ({found.misalignment})" if found else "no estimate"
        cells = []
        for name in ("bi3d", "sgbm"):
            for align in (True, False):
                opts = dataclasses.replace(base, engine=name, align=align)
                engine = build_engine(opts, "continuous_2d")[0]
                d = engine.compute(left, r, request).disparity
                bad = 100 * (np.abs(np.nan_to_num(d, nan=1e9) - truth)[valid] > 2).mean()
                cells.append(f"{name} {'on' if align else 'off'} {bad:.2f} %")
        print(f"{case:16s} {seen}: " + ", ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
