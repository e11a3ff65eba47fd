#!/usr/bin/env bash
# Issue 42, session 19: the GPU suite (the grader on each program, each
# fixture failed with its reason) on part 3's bfloat16 steps 15-17 and the
# bfloat16 bar, and the three bfloat16 fixtures.
# timeout 590 bash wip-harness/issue42_suite_call.sh GIT_REV
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
S="${SUITE_STEPS:-back/step15_bf16_bulk back/step16_bf16_pairs back/step17_ln_bf16 back/baseline_copy3_bf16}"
F="${SUITE_FIXTURES:-back_bf16_cut_dx back_bf16_pairs_cut_dx back_ln_bf16_cut_dx}"
t=""
for s in $S; do t="$t $s/run build/monitored/$s/run"; done
for f in $F; do t="$t build/mutants/back/$f/run build/monitored/build/mutants/back/$f/run"; done
make -s -j16 GIT_REV=$GIT_REV $t > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
rm -f $OUT/build.log; echo "built in $(( $(date +%s) - start )) s"
S1=${S// /,}
GPU_PART=back GPU_ONLY=$S1,${F// /,} GPU_JOBS=16 timeout ${SUITE_TIMEOUT:-480} python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -14 | cut -c1-300
