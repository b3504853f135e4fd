"""The latency budget on the demo pair (Motorcycle, 741 x 500) in continuous mode: for each budget,
what the engine chose, the time it took after the first frame, and dense bad-2; SGBM's
continuous time in the same run for the ratio (other processes share the CPU: compare ratios).

python benchmarks/budget_motorcycle.py [--budgets 100,200,400,800,1600] [--repeat 3] [--json FILE]
    [--max-disparity auto|N]

Every other setting is the app's default (``vocabulary.depth_request``): the sweep bounded by
``--max-disparity auto`` and the default confidence threshold; SGBM gets the same request.

One engine (default options: the bundled model, torch, auto precision) answers every budget in
turn, as the window's slider does; the first frame at each budget is not counted (the first
of all also measures the stages: ``Bi3DEngine._probe_costs``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import vocabulary  # noqa: E402
from app.engine.allocator import tune_allocator  # noqa: E402
from app.engine.assets import demo_scene  # noqa: E402
from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.errors import UserError  # noqa: E402
from app.engine.metrics import evaluate  # noqa: E402
from app.engine.sources.spec import find_scenes  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--budgets", default="100,200,400,800,1600")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--precision", default="auto")
    p.add_argument("--max-disparity", default="auto", help="auto (the default) or px")
    p.add_argument("--json")
    args = p.parse_args()
    tune_allocator()  # as the app does (app.cli.main)
    reach: int | str = int(args.max_disparity) if args.max_disparity.isdigit() else args.max_disparity
    pair, _ = find_scenes(demo_scene())[0].load()
    assert pair.gt_disparity is not None
    engine, _ = build_engine(EngineOptions(runtime="torch", precision=args.precision))
    sgbm, _ = build_engine(EngineOptions(engine="sgbm"))
    rows = []

    def frames(budget: float | None) -> dict[str, object]:
        request = vocabulary.depth_request("continuous", budget_ms=budget, max_disparity=reach)
        plain = vocabulary.depth_request("continuous", max_disparity=reach)
        engine.compute(pair.left, pair.right, request)  # not counted
        took, sgbm_ms = [], []
        for _ in range(args.repeat):
            result = engine.compute(pair.left, pair.right, request)
            took.append(result.timings["total"])
            t0 = time.perf_counter()
            sgbm.compute(pair.left, pair.right, plain)
            sgbm_ms.append((time.perf_counter() - t0) * 1000)
        bad2 = evaluate(result.disparity, pair.gt_disparity)["dense"].bad2
        return {
            "budget_ms": budget,
            "took_ms": statistics.median(took),
            "sgbm_ms": statistics.median(sgbm_ms),
            "bad2": bad2,
            "mode": result.mode.value,
            "choice": {k: round(v, 2) for k, v in result.choice.items()},
            "note": "; ".join(n for n in result.notes if n.startswith(("budget", "max disparity"))),
        }

    for budget in [float(b) for b in args.budgets.split(",")] + [None]:
        try:
            row = frames(budget)
        except UserError as exc:  # a budget below anything that can run here
            print(f"budget {budget:g} ms: {exc}", flush=True)
            rows.append({"budget_ms": budget, "error": str(exc)})
            continue
        rows.append(row)
        took, sg = float(row["took_ms"]), float(row["sgbm_ms"])  # type: ignore[arg-type]
        limit = f"{took / budget:.2f}x budget" if budget else "no budget"
        print(
            f"budget {budget or '-'!s:>6} ms: took {took:6.0f} ms "
            f"({limit}; {took / sg:.1f}x SGBM's {sg:.0f} ms), "
            f"bad-2 {100 * float(row['bad2']):.2f} %, {row['mode']}: {row['note']}",  # type: ignore[arg-type]
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
