#!/usr/bin/env bash
# One lent-GPU session in one call, about 9.5 minutes on an H200 (device image: torch with CUDA,
# OpenCV headless, scikit-image, pytest; no Qt, no platformdirs, no internet). Here, once:
#   echo /.whl/ >>.git/info/exclude; python3 -m pip download --no-deps --only-binary=:all: \
#       --python-version 3.12 --implementation cp -d .whl platformdirs
# then run(command="python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   && export PYTHONPATH=/tmp/site; bash benchmarks/gpu_session.sh", timeout_s=590, carry=[".whl"]).
# Ran on 2026-12-04 (benchmarks/RESULTS.md) with the scenes rendered by CPU loader processes:
# rendering, not the GPU, set the pace (52-63 samples/s a run at 288 x 576). Since then the runs
# render on the GPU in spawned loader processes (--data-device cuda): a second session on
# 2026-12-04 (FIRST=profile, TRAIN_MIN=7.8, RUN_A / RUN_B as in RESULTS.md) trained at 88
# samples/s a run, two runs side by side, in 488 s of wall time. A run whose GPU loaders fail
# says so in its log.txt and renders on the CPU.
# 1) benchmarks/gpu_check.py alone on the idle GPU (correctness checks, then timings for
#    CHECK_S seconds in bf16 and fp32: the published-width network and the bundled light model);
#    FIRST=profile runs benchmarks/gpu_profile.py instead (a frame's stages, ~30 s), FIRST=none nothing;
#    RUN_A / RUN_B replace the two runs' training options below;
# 2) two fine-tunes of the bundled model side by side for TRAIN_MIN minutes (scenes rendered
#    on the GPU by 6 loader processes each), while the CUDA tests run:
#    a: features frozen (the per-pixel SegNet stays valid), half rooms, a third of them blank;
#    b: the whole network, a fifth rooms;
# 3) copies what comes back to $OUT (8 files at most): gpu_check.json, pytest.txt, and per run
#    best.pt, last.pt and log.txt (its console, log.csv and train_gpu.json).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT="${OUT:-$PWD/out/gpu_session}"
PY="${PYTHON:-python3}"
WORK="${WORK:-/tmp/gpu_session}"
TRAIN_MIN="${TRAIN_MIN:-6.3}"  # TRAIN_ARGS: more train_gpu.py options for both runs (a CPU smoke run)
mkdir -p "$OUT" "$WORK"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
nproc

case "${FIRST:-check}" in
check)
    OUT="$WORK/check" GPU_CHECK_BUDGET_S="${CHECK_S:-70}" GPU_CHECK_PRECISIONS=bf16,fp32 \
        timeout 115 "$PY" benchmarks/gpu_check.py
    cp "$WORK/check/gpu_check.json" "$OUT/" 2>/dev/null || echo '{"errors": ["gpu_check.py wrote nothing"]}' >"$OUT/gpu_check.json" ;;
profile)  # the frame's stages only (e.g. after a readout change), about 30 s
    timeout 90 "$PY" benchmarks/gpu_profile.py --out "$WORK/profile" >"$WORK/profile.txt" 2>&1
    cat "$WORK/profile/gpu_profile.txt" >>"$WORK/profile.txt" 2>/dev/null
    cp "$WORK/profile.txt" "$OUT/gpu_profile.txt"; head -40 "$OUT/gpu_profile.txt" ;;
esac

INIT="${INIT:-resources/models/bi3d_default.pt}"
"$PY" benchmarks/train_gpu.py --out "$WORK/a" --minutes "$TRAIN_MIN" --init "$INIT" ${RUN_A:---freeze-features --rooms-share 0.5 --blank-share 0.3 --lr 3e-4} \
    --data-device cuda --workers 6 --threads 2 --seed 21 ${TRAIN_ARGS:-} >"$WORK/a.txt" 2>&1 &
A=$!
"$PY" benchmarks/train_gpu.py --out "$WORK/b" --minutes "$TRAIN_MIN" --init "$INIT" \
    ${RUN_B:---rooms-share 0.2 --blank-share 0.2 --lr 1.5e-4} --data-device cuda --workers 6 --threads 2 --seed 22 ${TRAIN_ARGS:-} >"$WORK/b.txt" 2>&1 &
B=$!
if "$PY" -c "import pytest" 2>/dev/null; then
    timeout 200 "$PY" -m pytest -q -p no:cacheprovider -W "ignore::pytest.PytestConfigWarning" \
        tests/engine/runtimes/test_cuda_graphs.py tests/engine/bi3d/test_conformance.py \
        --device cuda -m "gpu or not slow" >"$WORK/pytest.txt" 2>&1
    echo "pytest exit status $?" >>"$WORK/pytest.txt"
else
    echo "pytest not installed" >"$WORK/pytest.txt"
fi
cp "$WORK/pytest.txt" "$OUT/"
wait $A; echo "run a exit status $?"
wait $B; echo "run b exit status $?"
for r in a b; do
    mkdir -p "$OUT/$r"
    cp "$WORK/$r/best.pt" "$WORK/$r/last.pt" "$OUT/$r/" 2>/dev/null
    { tr '\r' '\n' <"$WORK/$r.txt" | grep -v '^step .* samples/s' ; echo "--- log.csv"; cat "$WORK/$r/log.csv";
      echo "--- train_gpu.json"; cat "$WORK/$r/train_gpu.json"; } >"$OUT/$r/log.txt" 2>&1
    tail -5 "$OUT/$r/log.txt"
done
ls -la "$OUT" "$OUT/a" "$OUT/b"
