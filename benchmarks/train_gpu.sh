#!/usr/bin/env bash
# One fine-tune of the bundled model on a lent GPU for TRAIN_MIN minutes (default 8); the run
# (last.pt, best.pt, log.csv, train_gpu.json) goes to $OUT/run. The device image lacks
# platformdirs: carry its wheel (benchmarks/gpu_session.sh says how). Two runs side by side
# plus the GPU check: benchmarks/gpu_session.sh. Options for benchmarks/train_gpu.py: TRAIN_ARGS.
#   run(command="<install .whl>; bash benchmarks/train_gpu.sh", timeout_s=590, carry=[".whl"])
# Then compare the checkpoints here (resources/models/README.md): compare_models.py (layered and
# --generator rooms), phantom_blobs.py, and only then the demo figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT="${OUT:-out/train_gpu}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
# shellcheck disable=SC2086
"${PYTHON:-python3}" benchmarks/train_gpu.py --out "$OUT/run" --minutes "${TRAIN_MIN:-8}" \
    --init resources/models/bi3d_default.pt --data-device cuda --workers 12 --threads 2 ${TRAIN_ARGS:-} 2>&1 \
    | tr '\r' '\n' | grep -v '^step .* samples/s'
ls -la "$OUT/run"
