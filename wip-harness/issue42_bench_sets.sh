#!/usr/bin/env bash
# Issue 42, session 20: part 3's bench split by program sets, each its own
# run id, several (round, set) jobs in one device call, each started only if
# its estimate fits before the deadline; the changed plots/reference files
# come back under $OUT/ref after every job (copy them home before the next
# call: each call starts from the tree as it was sent).
#   bash wip-harness/issue42_bench_sets.sh REV DEADLINE_S STAMP JOB...
# JOB is K:SET:EST_S, SET one of ln (steps 0-9), sm (10-14), bf (15-18);
# run id STAMP-SET (STAMP a UTC time such as 20261204T153000Z). CHECK_JOBS=8: round 1's
# exact checks made first, 8 programs at a time (bench.py --check-jobs, session 26).
set -u
REV=$1; DEADLINE=$2; STAMP=$3; shift 3
declare -A SET=(
  [ln]=back/step0_thread,back/step1_warp,back/step2_partials,back/step3_lastblock,back/step4_registers,back/step5_rows,back/step6_tiles,back/step7_pdl,back/step8_packs,back/step9_ahead
  [sm]=back/step10_softmax,back/step11_fused,back/step12_registers,back/step13_cluster,back/step14_bulk
  [bf]=back/step15_bf16_bulk,back/step16_bf16_pairs,back/step17_ln_bf16,back/step18_ln_bf16_ahead)
T0=$SECONDS; touch /tmp/call-start; mkdir -p $OUT/ref
for job in "$@"; do
  IFS=: read -r K S EST <<< "$job"
  left=$(( DEADLINE - (SECONDS - T0) ))
  if (( EST > left )); then echo "skip $job: ${left} s left"; continue; fi
  t=$SECONDS
  timeout $(( left - 5 )) make verify ONLY=${SET[$S]} OUT_DIR=plots/reference VERIFY_DIR=/tmp/vd-$S-$K \
    TORCH_PYTHON=/opt/torch/.venv/bin/python GIT_REV=$REV \
    VERIFY_FLAGS="--skip grade,profile --rounds 3 --round $K --run-id $STAMP-$S ${CHECK_JOBS:+--check-jobs $CHECK_JOBS}" > $OUT/v-$S-$K.log 2>&1
  echo "job $job rc=$? in $(( SECONDS - t )) s (t+$(( SECONDS - T0 )))"
  grep -E "^bench:|^\[round .*(FAIL|torch)" $OUT/v-$S-$K.log | tail -8 | cut -c1-240
  find plots/reference -type f -newer /tmp/call-start ! -name '*.png' -exec cp {} $OUT/ref/ \;
done
ls -la $OUT/ref
