"""Settings of the plane check compared on the 16 held-out synthetic scenes (how they were chosen).

python benchmarks/plane_check_variants.py [WEIGHTS] [--scenes 16] [--precision auto] [--stage parabola|side]

For the bundled model (or WEIGHTS): binary agreement with the ground truth over 11 planes
(10-48 px, on and off the 3 px grid) of the network alone and after the plane check.
``--stage parabola``: the parabola step at several resolutions, windows, hesitation bands and
correlation thresholds, without the later steps (resources/models/README.md, "The plane
check"). ``--stage side`` (the default): the default parabola step followed by the two-sided
test and the guided filter at several bands, steps, windows and radii (ninth session).
Scenes as in compare_models.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.assets import default_weights  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.depth.planecheck import PlaneCheckConfig, PlaneChecker  # noqa: E402
from app.engine.metrics import binary_agreement  # noqa: E402
from app.engine.synthetic.layered import to_uint8  # noqa: E402
from app.engine.training.data import selection_scenes  # noqa: E402
from app.engine.types import DepthRequest, Mode  # noqa: E402

PLANES = (10, 11, 12, 20, 23, 24, 34, 36, 40, 46, 48)


def variants() -> dict[str, PlaneCheckConfig | None]:
    """The parabola step alone (the two-sided test and the filter off)."""
    out: dict[str, PlaneCheckConfig | None] = {"network alone": None}
    alone = {"side_band": 0.0, "smooth_radius": 0}
    for scale, window in ((1, 11), (2, 7), (2, 5), (3, 5)):
        for band in (0.1, 0.2, 0.3):
            for peak in (0.5, 0.7):
                name = f"1/{scale} res, window {window}, band {band}, peak {peak}"
                out[name] = PlaneCheckConfig(band=band, scale=scale, window=window, min_peak=peak, **alone)
        # every pixel checked, however sure the network is
        out[f"1/{scale} res, window {window}, every pixel, peak 0.7"] = PlaneCheckConfig(
            band=0.5, scale=scale, window=window, **alone
        )
    return out


def side_variants() -> dict[str, PlaneCheckConfig | None]:
    """The default parabola step, then the two-sided test and the guided filter."""
    out: dict[str, PlaneCheckConfig | None] = {"network alone": None}
    out["parabola only"] = PlaneCheckConfig(side_band=0.0, smooth_radius=0)
    for radius in (0, 4, 8, 16):
        out[f"parabola, filter {radius} px"] = PlaneCheckConfig(side_band=0.0, smooth_radius=radius)
        for band in (0.2, 0.3, 0.4):
            for step in (1.0, 2.0):
                name = f"two-sided band {band}, step {step} px, filter {radius} px"
                out[name] = PlaneCheckConfig(side_band=band, side_step=step, smooth_radius=radius)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", nargs="?", type=Path, default=default_weights())
    p.add_argument("--scenes", type=int, default=16)
    p.add_argument("--precision", default="auto")
    p.add_argument("--stage", choices=("parabola", "side"), default="side")
    args = p.parse_args()
    options = EngineOptions(
        weights=args.weights, runtime="torch", precision=args.precision, plane_check=False
    )
    network, _ = build_engine(options)
    configs = variants() if args.stage == "parabola" else side_variants()
    scores: dict[str, list[float]] = {name: [] for name in configs}
    request = DepthRequest(mode=Mode.QUANTIZED, planes=PLANES)
    for scene in selection_scenes(args.scenes):
        left, right = to_uint8(scene.left), to_uint8(scene.right)
        gt = scene.disparity.numpy()
        alone = network.compute(left, right, request).probabilities
        for name, cfg in configs.items():
            probs = alone
            if cfg is not None:
                checker = PlaneChecker(left, right, cfg)
                probs = np.stack(
                    [checker.smooth(checker.check(alone[k], float(d))) for k, d in enumerate(PLANES)]
                )
            scores[name].append(float(binary_agreement(probs, np.asarray(PLANES), gt).mean()))
    for name, values in sorted(scores.items(), key=lambda kv: -float(np.mean(kv[1]))):
        print(f"{name:<48} {np.mean(values):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
