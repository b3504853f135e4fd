#!/bin/bash
# Motorcycle continuous depth as a new user gets it (`bi3d-studio depth im0 im1 --mode continuous`),
# and with fixed --max-disparity 96/128/192, Bi3D and SGBM: dense bad-2 of result.npz (unknown
# pixels count as errors) and the share of pixels answered. Usage: bash benchmarks/motorcycle_defaults.sh [PYTHON]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${1:-$ROOT/.venv/bin/python}
D=$ROOT/resources/demo/motorcycle
OUT=$(mktemp -d)
cd "$ROOT"
for eng in bi3d sgbm; do
  for md in auto 96 128 192; do
    "$PY" -m app depth "$D/im0.png" "$D/im1.png" --mode continuous --engine $eng --max-disparity $md \
      --out "$OUT/${eng}_$md" > /dev/null
    "$PY" - "$D/disp0GT.pfm" "$OUT/${eng}_$md/result.npz" "$eng --max-disparity $md" <<'PY'
import sys
import numpy as np
from app.engine.formats import read_pfm
gt = read_pfm(sys.argv[1]); v = np.isfinite(gt)
d = np.load(sys.argv[2])["disparity"]
err = np.abs(np.nan_to_num(d, nan=1e9) - gt)[v]
print(f"{sys.argv[3]}: dense bad-2 {100 * (err > 2).mean():.2f} %, answered {100 * np.isfinite(d)[v].mean():.1f} %")
PY
  done
done
rm -rf "$OUT"
