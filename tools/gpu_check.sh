#!/usr/bin/env bash
# gpu_check.sh DEST [measure|check|all]: what a GPU machine runs to publish
# the reference, in two phases that each fit a 10-minute session.
#   measure: build; make profile-all (parts 1 and 2), make bench (both parts,
#            in rounds, with PyTorch when TORCH_PYTHON imports it) into $OUT_DIR
#   check:   build; unit tests, the GPU suite (the grader on every program and
#            fixture), make accuracy, make determinism, the tuning runs, the
#            step 9 no-fence exercise, make sass
# DEST receives logs.tgz (every log) and results.tgz (what landed in $OUT_DIR).
# OUT_DIR defaults to plots/results (scratch); OUT_DIR=plots/reference
# publishes. Without .git (a copied tree), set GIT_REV to the commit measured.
# Charts are not drawn here: `make plot` draws them from the CSVs with the
# pinned matplotlib, so their bytes do not depend on this machine's version.
set -u
dest=${1:?usage: gpu_check.sh DEST [measure|check|all]}
phase=${2:-all}
cd "$(dirname "$0")/.."
out=build/gpu_logs
export OUT_DIR=${OUT_DIR:-plots/results}
mkdir -p "$out" "$dest" "$OUT_DIR"
log() { echo "== $(date +%T) $*"; }
status=0
step() {   # name, command...: run, keep the log, remember a failure
    local name=$1; shift
    log "$name"
    local t=$SECONDS
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    tail -n 3 "$out/$name.log"
    log "$name: exit $rc in $((SECONDS - t)) s"
    [ $rc -eq 0 ] || status=1
}

# The file-name form of this GPU's name (h200), as bench.py names its CSV.
slug=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 |
       python3 tools/schema.py slug -)
{ nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.mem,temperature.gpu --format=csv
  nvcc --version | tail -n 2; echo "GIT_REV=${GIT_REV:-}"; } > "$out/machine.log" 2>&1
step build make -j"$(nproc)" all mutants broken monitored step4_warp/run-racy build/unit_tests
if [ "$phase" = measure ] || [ "$phase" = all ]; then
    # Profile first: ncu replays kernels and must not share the GPU with timing.
    step profile make --no-print-directory profile-all
    step bench python3 tools/bench.py --root . --out-dir "$OUT_DIR" \
        --torch-python "${TORCH_PYTHON:-python3}" --rounds "${BENCH_ROUNDS:-3}"
fi
if [ "$phase" = check ] || [ "$phase" = all ]; then
    step unit build/unit_tests
    step gpu_suite env GPU_JOBS="$(nproc)" GPU_PROGRESS="$out/gpu_progress.log" \
        python3 -u tests/gpu_suite.py
    step accuracy python3 tools/accuracy.py --root . --out-dir "$OUT_DIR"
    step determinism bash tools/determinism.sh "$OUT_DIR"
    step tune bash tools/tune.sh "$OUT_DIR/$slug-tune.csv"
    # Step 9's knob sweep, with step 8 and CUB in the same run: its README's "What was tried".
    step tune_step9 env TUNE_ONLY=step9 TUNE_BASE="step8_vector step9_singlepass baseline_cub" \
        TUNE_SIZES="1024 2048 4096 8192 16384 32768 65536 131072 262144 524288 1048576 2097152 4194304 16777216 268435456" \
        bash tools/tune.sh "$OUT_DIR/$slug-tune-step9.csv"
    # Exercise 1 of step 9: which check notices the last block's acquire left out?
    mkdir -p build/exercise/step9_no_fence
    sed 's|cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);|;|' \
        step9_singlepass/reduce.cu > build/exercise/step9_no_fence/reduce.cu
    cmp -s step9_singlepass/reduce.cu build/exercise/step9_no_fence/reduce.cu && status=1
    step no_fence_build make build/exercise/step9_no_fence/run
    step no_fence bash -c "{ echo '# step 9 without its acquire fence (exercise 1), graded and sanitized on this GPU';
        python3 tools/grade.py --quick build/exercise/step9_no_fence/run;
        echo \"grade exit \$?\"; } 2>&1"
    cp "$out/no_fence.log" "$OUT_DIR/$slug-step9-no-fence.log"
    step sass make --no-print-directory sass SASS_OUT="$OUT_DIR/sm90-sass.txt"
    cp "$out/gpu_suite.log" "$OUT_DIR/$slug-gpu-check.log"
fi
tar czf "$dest/logs.tgz" -C "$out" .
tar czf "$dest/results.tgz" "$OUT_DIR"
exit $status
