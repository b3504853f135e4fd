#!/usr/bin/env bash
# GPU check, at most 8 minutes on an H200 with the device image's packages (torch with CUDA,
# numpy, onnx, onnxruntime CPU, OpenCV headless; no Qt, TensorRT or platformdirs, whose wheel must be
# carried: see benchmarks/gpu_session.sh, which also runs this check; no internet). Run from the repository
# root. 1) the CUDA tests (if pytest is there), 2) benchmarks/gpu_check.py: correctness checks and
# the published-width network at 576 x 960 in fp32/tf32/bf16/fp16, with and without CUDA graphs.
# Always leaves $OUT/gpu_check.json (and $OUT/pytest.txt when the tests ran).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-$PWD/out/gpu_check}"
export OUT
mkdir -p "$OUT"
PY="${PYTHON:-python3}"

if "$PY" -c "import pytest" 2>/dev/null; then
    # only modules whose imports need no OpenCV or Qt; conformance runs its kernels on CUDA too
    timeout 150 "$PY" -m pytest -q -p no:cacheprovider -W "ignore::pytest.PytestConfigWarning" \
        tests/engine/runtimes/test_cuda_graphs.py tests/engine/bi3d/test_conformance.py \
        --device cuda -m "gpu or not slow" >"$OUT/pytest.txt" 2>&1
    echo "pytest exit status $? (see $OUT/pytest.txt)" | tee -a "$OUT/pytest.txt"
else
    echo "pytest not installed: the CUDA checks run inside gpu_check.py only" | tee "$OUT/pytest.txt"
fi

# the timings stop starting new measurements after GPU_CHECK_BUDGET_S and write JSON regardless
export GPU_CHECK_BUDGET_S="${GPU_CHECK_BUDGET_S:-270}"
timeout 320 "$PY" benchmarks/gpu_check.py
status=$?
if [ ! -s "$OUT/gpu_check.json" ]; then
    printf '{"errors": ["gpu_check.py ended with status %s before writing JSON"]}\n' "$status" >"$OUT/gpu_check.json"
fi
echo "gpu_check.py exit status $status; wrote $OUT/gpu_check.json"
exit 0
