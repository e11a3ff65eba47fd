#!/bin/bash
# One device call (about 2 minutes): step 22's grader and fixture, then its
# register variants (wip-harness/step22_variants.py) timed beside steps 13 and
# 22 at the widths of the three-pass path. Run: GIT_REV=<rev> bash wip-harness/step22_variants.sh
set -u
L=${OUT:-build}/variants.log; exec > "$L" 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=${GIT_REV:?}"
mkdir -p build
make -j16 rows/step13_layernorm_aligned/run rows/step22_welford/run build/monitored/rows/step22_welford/run \
    build/mutants/rows/wf_counts_swapped/run build/monitored/build/mutants/rows/wf_counts_swapped/run > build/make.log 2>&1 \
    || { tail -n 20 build/make.log; exit 1; }
GPU_ONLY=rows/step22_welford,wf_counts_swapped GPU_JOBS=16 timeout 240 python3 -u tests/gpu_suite.py
progs="rows/step13_layernorm_aligned/run rows/step22_welford/run"
for src in $(python3 wip-harness/step22_variants.py); do
    p=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $src"; continue; }
    progs="$progs $p"
done
for p in $progs; do
    echo "== $p"; "$p" --gpu-info | grep -i "regs\|registers" || true
    for shape in "--rows 512 --cols 128256" "--rows 4096 --cols 151936" "--rows 1 --cols 262144"; do
        "$p" $shape --reps 20 2>&1 | grep -E "^(check|speed|FAIL)" | sed "s/^/  [$shape] /"
    done
    "$p" --check --rows 64 --cols 100001 --fill centered | tail -n 1
    "$p" --check --rows 64 --cols 100001 --fill shifted | tail -n 1
done
