"""Motorcycle as other cameras would give it: moved out of rectification, darker, flatter,
noisier, blurred, compressed. Depth at the app's defaults, Bi3D and SGBM, and with the stage
made for the case turned off (``--no-align``: ``depth.alignment``; ``--no-exposure-stretch``:
``depth.exposure``, Bi3D only).

python benchmarks/camera_variants.py [--precision fp32] [--cases NAME,NAME] [--scene DIR]

``--scene``: another Middlebury-style scene folder (im0.png, im1.png, disp0GT.pfm) instead of the demo.

Dense bad-2 against the ground truth (unknown pixels count as errors). Right view moved down
(or up) by 0.5-3 px or turned 0.15 degrees about its centre (bicubic, edges replicated); both
views at 35 % or 20 % brightness, at 40 % contrast over a grey floor, with Gaussian noise
(sigma 6 grey levels, or 3 after darkening, seed 0), the right view's white balance moved (or
both views' colours: a cast, red and blue swapped, noise on the colour alone), in grey, blurred
(sigma 1.2 px), JPEG quality 60. The colour cases' "without colour_choice" cells read the colours
as they come (``depth.colour_choice``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
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

Pair = tuple[np.ndarray, np.ndarray]


def moved(image: np.ndarray, down_px: float = 0.0, turn_deg: float = 0.0) -> np.ndarray:
    h, w = image.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), turn_deg, 1.0)
    m[1, 2] += down_px
    return cv2.warpAffine(image, m, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)


def levels(image: np.ndarray, gain: float, offset: float = 0.0) -> np.ndarray:
    return np.clip(image.astype(np.float32) * gain + offset, 0, 255).round().astype(np.uint8)


def tinted(image: np.ndarray, gains: tuple[float, float, float]) -> np.ndarray:
    """An RGB image with its channels scaled apart (another white balance)."""
    return np.clip(image.astype(np.float32) * np.float32(gains), 0, 255).round().astype(np.uint8)


def noisy(image: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(0, sigma, image.shape)
    return np.clip(image + noise, 0, 255).round().astype(np.uint8)


def chroma_noise(image: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    """Gaussian noise of ``sigma`` levels on the colour (Cr, Cb) of an RGB image, its grey levels kept."""
    ycc = cv2.cvtColor(image, cv2.COLOR_RGB2YCrCb).astype(np.float64)
    ycc[..., 1:] += np.random.default_rng(seed).normal(0, sigma, (*image.shape[:2], 2))
    return cv2.cvtColor(np.clip(ycc, 0, 255).round().astype(np.uint8), cv2.COLOR_YCrCb2RGB)


def jpeg(image: np.ndarray, quality: int) -> np.ndarray:
    _, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.imdecode(data, cv2.IMREAD_UNCHANGED)


def both(f: Callable[[np.ndarray], np.ndarray]) -> Callable[[Pair], Pair]:
    return lambda p: (f(p[0]), f(p[1]))


def right_only(f: Callable[[np.ndarray], np.ndarray]) -> Callable[[Pair], Pair]:
    return lambda p: (p[0], f(p[1]))


# name -> (the pair made from the demo's, the switch of the stage made for it)
CASES: dict[str, tuple[Callable[[Pair], Pair], str | None]] = {
    "as shot": (lambda p: p, None),
    "right down 0.5 px": (right_only(lambda im: moved(im, 0.5)), "align"),
    "right down 0.8 px": (right_only(lambda im: moved(im, 0.8)), "align"),
    "right down 1.5 px": (right_only(lambda im: moved(im, 1.5)), "align"),
    "right up 3 px": (right_only(lambda im: moved(im, -3.0)), "align"),
    "right turned 0.15 deg": (right_only(lambda im: moved(im, turn_deg=0.15)), "align"),
    "35 % brightness": (both(lambda im: levels(im, 0.35)), "exposure_stretch"),
    "20 % brightness": (both(lambda im: levels(im, 0.2)), "exposure_stretch"),
    "40 % contrast": (both(lambda im: levels(im, 0.4, 80)), "exposure_stretch"),
    "35 % + noise 3": (
        lambda p: (noisy(levels(p[0], 0.35), 3, 0), noisy(levels(p[1], 0.35), 3, 1)),
        "exposure_stretch",
    ),
    "right warmer (R 1.2 B 0.8)": (right_only(lambda im: tinted(im, (1.2, 1.0, 0.8))), None),
    "right cooler (R 0.8 B 1.25)": (right_only(lambda im: tinted(im, (0.8, 1.0, 1.25))), None),
    "right greener (G 1.15)": (right_only(lambda im: tinted(im, (1.0, 1.15, 1.0))), None),
    "both redder (R 1.2)": (both(lambda im: tinted(im, (1.2, 1.0, 1.0))), "colour_choice"),
    "both less red (R 0.8)": (both(lambda im: tinted(im, (0.8, 1.0, 1.0))), "colour_choice"),
    "both bluer (B 1.25)": (both(lambda im: tinted(im, (1.0, 1.0, 1.25))), "colour_choice"),
    "both R 0.7 G 0.9 B 1.3": (both(lambda im: tinted(im, (0.7, 0.9, 1.3))), "colour_choice"),
    "both R 1.3 G 0.9 B 0.7": (both(lambda im: tinted(im, (1.3, 0.9, 0.7))), "colour_choice"),
    "both red and blue swapped": (both(lambda im: np.ascontiguousarray(im[..., ::-1])), "colour_choice"),
    "chroma noise 10": (lambda p: (chroma_noise(p[0], 10, 0), chroma_noise(p[1], 10, 1)), "colour_choice"),
    "both grey": (
        both(lambda im: cv2.cvtColor(cv2.cvtColor(im, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)),
        None,
    ),
    "noise 6": (lambda p: (noisy(p[0], 6, 0), noisy(p[1], 6, 1)), "colour_choice"),
    "blur 1.2 px": (both(lambda im: cv2.GaussianBlur(im, (0, 0), 1.2)), None),
    "jpeg 60": (both(lambda im: jpeg(im, 60)), None),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--precision", default="auto")
    p.add_argument("--cases", help="comma-separated case names (default: all)")
    p.add_argument("--scene", help="a Middlebury-style scene folder (default: the demo pair)")
    args = p.parse_args()
    tune_allocator()
    demo, _ = find_scenes(args.scene or demo_scene())[0].load()
    pair, truth = (demo.left, demo.right), demo.gt_disparity
    valid = np.isfinite(truth)
    request = vocabulary.depth_request("continuous")
    base = EngineOptions(weights=default_weights(), precision=args.precision)
    engines = {
        name: build_engine(dataclasses.replace(base, engine=name), "continuous_2d")[0]
        for name in ("bi3d", "sgbm")
    }
    for case in args.cases.split(",") if args.cases else CASES:
        make, switch = CASES[case]
        left, right = make(pair)  # type: ignore[arg-type]
        cells = []
        for name, engine in engines.items():
            runs = {"": engine}
            if switch is not None and (name == "bi3d" or switch == "align"):
                off = dataclasses.replace(base, engine=name, **{switch: False})
                runs[f" without {switch}"] = build_engine(off, "continuous_2d")[0]
            for label, e in runs.items():
                e.new_stream()  # each case is a stream of its own
                d = e.compute(left, right, request).disparity
                bad = 100 * (np.abs(np.nan_to_num(d, nan=1e9) - truth)[valid] > 2).mean()
                cells.append(f"{name}{label} {bad:.2f} %")
        print(f"{case:22s} " + ", ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
