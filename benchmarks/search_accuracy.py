"""Coarse-to-fine search against the full sweep: dense bad-2 on the demo pair and on held-out
synthetic scenes (``training.data.selection_scenes``, never used in training), per strategy.

python benchmarks/search_accuracy.py [--scenes 16] [--steps 12,24,48,96] [--ladder] [--precision fp32]
    [--max-disparity 192|auto] [--json FILE]

``--ladder`` scores the latency budget's strategies (``depth.strategies.LADDER``: full sweeps
every 3-12 px with colour or grey sub-pixel matching over a search widened to the step or of a
given radius, and the coarse-to-fine searches) instead, to check their order;
``--max-disparity auto`` asks as the app does.

Every strategy runs the bundled light model through torch on the same inputs; ``full`` is
``--search full``. The search was designed before these figures were taken and nothing here
tunes it: this only reports.
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

from app.engine.assets import demo_scene  # noqa: E402
from app.engine.depth import strategies as budget_strategies  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.depth.searched import Strategy  # noqa: E402
from app.engine.metrics import evaluate  # noqa: E402
from app.engine.sources.spec import find_scenes  # noqa: E402
from app.engine.synthetic.layered import to_uint8  # noqa: E402
from app.engine.training.data import selection_scenes  # noqa: E402
from app.engine.types import DepthRequest, Mode  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scenes", type=int, default=16)
    p.add_argument("--steps", default="12,24,48,96", help="coarse steps (px) to compare")
    p.add_argument("--ladder", action="store_true", help="score the budget's strategies instead")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--max-disparity", default="192", help="px, or auto (the app's default)")
    p.add_argument("--json")
    args = p.parse_args()
    pairs = []
    demo, _ = find_scenes(demo_scene())[0].load()
    pairs.append(("motorcycle", demo.left, demo.right, demo.gt_disparity))
    for i, scene in enumerate(selection_scenes(args.scenes)):
        pairs.append((f"synthetic{i}", to_uint8(scene.left), to_uint8(scene.right), scene.disparity.numpy()))
    engine, _ = build_engine(EngineOptions(runtime="torch", precision=args.precision, search="full"))
    strategies: dict[str, Strategy | None] = {"full": None}
    for step in (int(s) for s in args.steps.split(",")):
        strategies[f"c2f {step}"] = Strategy(coarse_step=step)
    auto = args.max_disparity == "auto"
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=192 if auto else int(args.max_disparity))
    request = dataclasses.replace(request, auto_range=auto)
    if args.ladder:
        strategies = {_label(s): s for s in budget_strategies.LADDER}
        # a budget every strategy meets, with only the one scored on the ladder: the engine's own plan
        request = dataclasses.replace(request, budget_ms=3_600_000)
    table: dict[str, dict[str, float]] = {}
    for label, strategy in strategies.items():
        # the ladder's searches run under "auto" (the budget may choose them there)
        engine.search = "auto" if args.ladder else "full" if strategy is None else "coarse-to-fine"
        if strategy is not None and not args.ladder:
            engine.strategy = strategy
        if args.ladder:
            assert strategy is not None
            budget_strategies.ladder = lambda subpixel, search=False, only=strategy: (only,)  # type: ignore[misc]
        row = {}
        for name, left, right, gt in pairs:
            engine.new_stream()  # each pair on its own, as `depth LEFT RIGHT` answers it
            result = engine.compute(left, right, request)
            assert not args.ladder or result.choice.get("step_px") == strategy.step  # type: ignore[union-attr]
            row[name] = evaluate(result.disparity, gt)["dense"].bad2
        table[label] = row
        synth = [v for k, v in row.items() if k != "motorcycle"]
        print(
            f"{label:8s} motorcycle bad-2 {100 * row['motorcycle']:.2f} %, "
            f"synthetic mean {100 * float(np.mean(synth)):.2f} % (max {100 * max(synth):.2f})",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2) + "\n")
    return 0


def _label(strategy: Strategy) -> str:
    reach = "" if strategy.radius is None else f" +-{strategy.radius}"
    if strategy.coarse_step:
        return f"c2f {strategy.coarse_step} {strategy.subpixel}{reach}"
    return f"step {strategy.step} {strategy.subpixel}{reach}"


if __name__ == "__main__":
    sys.exit(main())
