"""How fast the synthetic generators render one training crop, per device: the number that
decides whether a GPU run renders its scenes on the GPU (``--data-device cuda``) or in CPU
loader processes (``benchmarks/train_gpu.py``).

python benchmarks/render_speed.py [--crop 288x576] [--count 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from app.engine.synthetic.layered import SceneConfig, render_scene  # noqa: E402
from app.engine.synthetic.rooms import RoomConfig, render_room  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crop", default="288x576", help="HEIGHTxWIDTH")
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--json")
    args = p.parse_args()
    h, w = (int(v) for v in args.crop.split("x"))
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    for device in devices:
        threads = [1] if device == "cpu" else [torch.get_num_threads()]
        for n in threads:
            torch.set_num_threads(n)
            for name, render, cfg in (
                ("layered", render_scene, SceneConfig(h, w, 192.0)),
                ("rooms", render_room, RoomConfig(h, w, 192.0)),
                ("blank rooms", render_room, RoomConfig(h, w, 192.0, blank_walls=True)),
            ):
                render(1, cfg, device)  # warm-up: textures, kernels
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                for i in range(args.count):
                    render(100 + i, cfg, device)
                if device == "cuda":
                    torch.cuda.synchronize()
                ms = (time.perf_counter() - t0) / args.count * 1000
                rows.append({"generator": name, "device": device, "threads": n, "ms_per_scene": round(ms, 1)})
                print(rows[-1], flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"crop": [h, w], "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
