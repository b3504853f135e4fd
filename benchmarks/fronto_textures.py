"""How precise is a model near a plane on real photographs? A diagnostic, not a benchmark.

python benchmarks/fronto_textures.py [WEIGHTS]

Each texture (scikit-image sample photographs at their size and downsampled 2x, and a
procedural noise texture) is shown as a fronto-parallel surface at 18.5-21.5 px of disparity
(the right view warped with bicubic interpolation: exact sub-pixel disparity). The table gives
the share of pixels whose 20 px answer is right, from the network alone and with the plane
check. ``clock`` is not among the training textures. Findings: resources/models/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import cv2
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine import synthetic  # noqa: E402
from app.engine.assets import default_weights  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.types import DepthRequest, Mode  # noqa: E402

PHOTOS = ("astronaut", "coffee", "brick", "gravel", "clock", "camera")
DISPARITIES = (18.5, 19.0, 19.5, 20.5, 21.0, 21.5)
PLANE = 20.0
WIDTH = 384


def photo(name: str) -> np.ndarray:
    from skimage import data

    img = np.asarray(getattr(data, name)())
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    return img[..., :3].astype(np.float32)


def noise(height: int, width: int) -> np.ndarray:
    g = torch.Generator().manual_seed(0)
    tex = synthetic._noise_texture(g, height, width, torch.device("cpu"))
    return tex.permute(1, 2, 0).numpy() * 255


def textures() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name in PHOTOS:
        img = photo(name)
        out[name] = img
        out[name + "/2"] = cv2.resize(
            img, (img.shape[1] // 2, img.shape[0] // 2), interpolation=cv2.INTER_AREA
        )
    out["noise"] = noise(256, WIDTH + 96)
    return out


def shifted_pair(base: np.ndarray, disparity: float) -> tuple[np.ndarray, np.ndarray]:
    """Left: the texture; right: the texture moved left by ``disparity`` px (right(x) = left(x + d))."""
    h, w = base.shape[:2]
    moved = cv2.warpAffine(base, np.float32([[1, 0, -disparity], [0, 1, 0]]), (w, h), flags=cv2.INTER_CUBIC)
    crop = slice(32, 32 + WIDTH)
    return tuple(
        np.ascontiguousarray(a[:, crop].clip(0, 255).round().astype(np.uint8)) for a in (base, moved)
    )  # type: ignore[return-value]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", nargs="?", type=Path, default=default_weights())
    args = p.parse_args()
    options = EngineOptions(weights=args.weights, runtime="torch")
    engines = {
        "network": build_engine(dataclasses.replace(options, plane_check=False))[0],
        "check": build_engine(options)[0],
    }
    request = DepthRequest(mode=Mode.BINARY, planes=(PLANE,))
    inner = (slice(16, -16), slice(40, -16))  # away from the borders
    print(f"{'texture':<14} " + " ".join(f"{d:>11}" for d in DISPARITIES) + "   (network / with the check)")
    for name, base in textures().items():
        if base.shape[1] < WIDTH + 64 or base.shape[0] < 200:  # small photographs: enlarged
            size = (max(base.shape[1], WIDTH + 76), max(base.shape[0], 200))
            base = cv2.resize(base, size, interpolation=cv2.INTER_CUBIC)
        base = base[:256]
        cells = []
        for d in DISPARITIES:
            left, right = shifted_pair(base, d)
            right_share = [
                float(((e.compute(left, right, request).probabilities[0] > 0.5) == (d > PLANE))[inner].mean())
                for e in engines.values()
            ]
            cells.append("/".join(f"{v:.2f}" for v in right_share))
        print(f"{name:<14} " + " ".join(f"{c:>11}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
