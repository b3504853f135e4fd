"""A second real pair with ground truth: Middlebury's Aloe as OpenCV ships it (``aloeL.jpg``,
``aloeR.jpg``, ``aloeGT.png`` in the samples' data folder; Debian: ``apt-get download opencv-doc``
then ``dpkg-deb -x``, folder ``usr/share/doc/opencv-doc/examples/data``).

python benchmarks/aloe_pair.py DATA_DIR [--precision fp32] [--scales 1,0.5]

Continuous depth at the app's defaults (``--max-disparity auto``, default confidence) for Bi3D and
SGBM on the pair at each scale (INTER_AREA; the truth by nearest neighbour, times the scale), dense
bad-2 (unknown pixels count as errors) overall and by the truth's disparity band. The truth is the
PNG's grey level in px at full size (1282 x 1110, up to 211 px), 0 unknown, as OpenCV's
``disparity_filtering`` sample reads it. JPEG images: compression artefacts are part of the test.
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
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.formats import read_pair_rgb  # noqa: E402

BANDS = ((0, 60), (60, 100), (100, 150), (150, 1000))


def _resized(image: np.ndarray, size: tuple[int, int], interpolation: int) -> np.ndarray:
    return cv2.resize(image, size, interpolation=interpolation)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="the folder holding aloeL.jpg, aloeR.jpg and aloeGT.png")
    p.add_argument("--precision", default="auto")
    p.add_argument("--scales", default="1,0.5")
    args = p.parse_args()
    tune_allocator()
    data = Path(args.data)
    left, right = read_pair_rgb(data / "aloeL.jpg", data / "aloeR.jpg")
    truth = cv2.imread(str(data / "aloeGT.png"), cv2.IMREAD_UNCHANGED).astype(np.float32)
    truth[truth == 0] = np.nan
    request = vocabulary.depth_request("continuous")
    options = EngineOptions(precision=args.precision)
    for scale in (float(s) for s in args.scales.split(",")):
        size = (round(left.shape[1] * scale), round(left.shape[0] * scale))
        views = [_resized(v, size, cv2.INTER_AREA) if scale != 1 else v for v in (left, right)]
        gt = truth if scale == 1 else _resized(truth, size, cv2.INTER_NEAREST) * scale
        valid = np.isfinite(gt)
        for name in ("bi3d", "sgbm"):
            engine = build_engine(dataclasses.replace(options, engine=name))[0]
            result = engine.compute(*views, request)
            err = np.abs(np.nan_to_num(result.disparity, nan=1e9) - gt)
            bands = []
            for lo, hi in BANDS:
                m = valid & (gt >= lo * scale) & (gt < hi * scale)
                if m.any():
                    top = min(hi, 211) * scale
                    bands.append(f"{lo * scale:g}-{top:g} px {100 * np.mean(err[m] > 2):.1f} %")
            answered = 100 * np.isfinite(result.disparity)[valid].mean()
            print(
                f"x{scale:g} ({size[0]}x{size[1]}) {name}: dense bad-2 {100 * np.mean(err[valid] > 2):.2f} %,"
                f" answered {answered:.1f} %; by truth: {', '.join(bands)}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
