#!/usr/bin/env bash
# Issue 43's last GPU piece (written in session 22, not yet run): the grader's
# new part 2 shapes (89fdb84, dcc506d, 9680768: groups under a warp at 255-257
# and 511-513 columns, groups of 32-512 with 64 packed elements a thread) on
# steps 24 and 25 and their fixtures, then the sanitizers where step 25 keeps
# 64 a thread (528 x 16385 --offset 1: G 512, the plain path; 4224 x 2049:
# G 64; 4224 x 2049 --offset 3 --y-offset 3: the split path). About 150 s warm.
# Append the suite's lines to plots/reference/h200-rows-suite.log as its
# seventh call, and say the check counts in steps 24 and 25's pages.
#   bash wip-harness/issue43_packed/call_grader.sh GIT_REV   (log: $OUT/grader.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
make -s -j16 rows/step24_bf16_narrow/run rows/step25_bf16_packed/run \
    build/monitored/rows/step24_bf16_narrow/run build/monitored/rows/step25_bf16_packed/run \
    build/mutants/rows/nw_whole_warp/run build/mutants/rows/pk_halves_swapped/run \
    build/monitored/build/mutants/rows/nw_whole_warp/run \
    build/monitored/build/mutants/rows/pk_halves_swapped/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
echo "== built in $((SECONDS - T0)) s"
GPU_ONLY=rows/step24_bf16_narrow,rows/step25_bf16_packed,nw_whole_warp,pk_halves_swapped GPU_JOBS=16 \
    timeout 300 python3 -u tests/gpu_suite.py 2>&1 | tail -n 12
echo "== suite done at $((SECONDS - T0)) s"
for shape in "--rows 528 --cols 16385 --offset 1" "--rows 4224 --cols 2049" "--rows 4224 --cols 2049 --offset 3 --y-offset 3"; do
    for tool in memcheck racecheck; do
        r=$(compute-sanitizer --tool $tool --error-exitcode 9 rows/step25_bf16_packed/run --check $shape 2>&1 | tail -n 2 | tr '\n' ' ')
        echo "  $tool [$shape]: $r"
    done
done
echo "== sanitized at $((SECONDS - T0)) s"
} > $OUT/grader.log 2>&1
tail -n 30 $OUT/grader.log | cut -c1-220
