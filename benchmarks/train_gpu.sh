#!/usr/bin/env bash
# Train the bundled default model on one GPU (about 10 minutes on an H200); weights go to $OUT.
# Runs on the lent device image (torch with CUDA, scikit-image; no OpenCV, no internet):
#   run(command="bash benchmarks/train_gpu.sh", timeout_s=720)
# then copy $OUT/bi3d_default.pt to resources/models/ if it scores better (see resources/models/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/train_gpu}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
INIT=""
if [ -f resources/models/bi3d_default.pt ]; then INIT="--init resources/models/bi3d_default.pt"; fi
python benchmarks/train_gpu.py --out "$OUT" --steps "${STEPS:-6000}" --minutes "${MINUTES:-9}" $INIT
ls -la "$OUT"
