#!/usr/bin/env bash
# gpu_check.sh OUTDIR [check|bench|all]: everything a GPU machine should run,
# in one go, with every log kept under OUTDIR.
#   check: build, GPU test suite, compute-sanitizer, ptxas report, ncu profile
#   bench: make bench (results + charts), make tune (knob variants)
# OUTDIR receives logs.tgz (every log) and copies of the results and charts.
# Results go where OUT_DIR says (default plots/results, git-ignored scratch);
# OUT_DIR=plots/reference publishes them as the committed reference.
# On a copy of the tree without .git, set GIT_REV so the CSV rows name the
# revision measured.
set -u
dest=${1:?usage: gpu_check.sh OUTDIR [check|bench|all]}
phase=${2:-all}
cd "$(dirname "$0")/.."
out=build/gpu_logs
results=${OUT_DIR:-plots/results}
export OUT_DIR=$results
rm -rf "$out"
mkdir -p "$out" "$dest"
log() { echo "== $(date +%T) $*"; }
status=0
step() {   # name, command...: run, keep the log, remember a failure
    local name=$1; shift
    log "$name"
    local t=$SECONDS
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    tail -n 4 "$out/$name.log"
    log "$name: exit $rc in $((SECONDS - t)) s"
    [ $rc -eq 0 ] || status=1
}

{ nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.mem,temperature.gpu --format=csv; nvcc --version | tail -n 2; } > "$out/machine.log" 2>&1
step build make -j"$(nproc)" all tests/broken/drop_tail/run tests/broken/no_write/run tests/broken/bad_count/run build/unit_tests
if [ "$phase" = check ] || [ "$phase" = all ]; then
    step unit build/unit_tests
    step gpu_suite env GPU_JOBS=8 bash tests/gpu_suite.sh
    step sanitize env SANITIZE_LOGS="$out/sanitize" make --no-print-directory sanitize
    step ptxas make --no-print-directory ptxas
    step profile make --no-print-directory profile-all
    cp "$results"/*-profile.csv "$dest"/ 2>/dev/null
fi
if [ "$phase" = bench ] || [ "$phase" = all ]; then
    step bench make --no-print-directory bench
    step tune make --no-print-directory tune
    cp "$results"/*.csv "$results"/*.png "$results"/*-bench.log build/tune.csv "$dest"/ 2>/dev/null
fi
tar czf "$dest/logs.tgz" -C "$out" .
exit $status
