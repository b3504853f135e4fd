"""Where a frame's time goes on a GPU: the bundled light model's continuous and binary frames
through the engine, by stage, by Python function (cProfile) and by operator (torch.profiler).

python benchmarks/gpu_profile.py [--size 576x960] [--precision bf16] [--out DIR]

Writes DIR/gpu_profile.txt. On the 2026-12-04 H200 run of ``benchmarks/gpu_check.py`` a continuous
frame at 576 x 960 took 169 ms of which the network was 13.5 ms and the readout 111 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from app.engine.depth.engines import EngineOptions, build_engine  # noqa: E402
from app.engine.types import DepthRequest, Mode  # noqa: E402


def textured_pair(h: int, w: int, shift: int = 12) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    left = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    return left, np.ascontiguousarray(np.roll(left, -shift, axis=1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="576x960")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", default=os.environ.get("OUT", "out/gpu_profile"))
    args = p.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    engine = build_engine(EngineOptions(device=args.device, precision=args.precision, runtime="torch"))[0]
    left, right = textured_pair(h, w)
    for name, request in (
        ("continuous 0-192 px", DepthRequest(mode=Mode.CONTINUOUS, max_disparity=192)),
        ("binary 48 px", DepthRequest(mode=Mode.BINARY, planes=(48.0,))),
    ):
        for _ in range(3):
            engine.compute(left, right, request)
        t0 = time.perf_counter()
        result = engine.compute(left, right, request)
        print(
            f"== {name}: {1000 * (time.perf_counter() - t0):.1f} ms wall; stages {result.timings}", file=text
        )
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(3):
            engine.compute(left, right, request)
        prof.disable()
        stats = io.StringIO()
        pstats.Stats(prof, stream=stats).sort_stats("tottime").print_stats(30)
        print(stats.getvalue(), file=text)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if args.device == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as tp:
            for _ in range(3):
                engine.compute(left, right, request)
        print(tp.key_averages().table(sort_by="cpu_time_total", row_limit=30), file=text)
        if args.device == "cuda":
            print(tp.key_averages().table(sort_by="cuda_time_total", row_limit=20), file=text)
        (out / "gpu_profile.txt").write_text(text.getvalue())
    print(text.getvalue()[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
