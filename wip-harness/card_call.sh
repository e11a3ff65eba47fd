#!/bin/bash
# A call that measures only on the H200 (every reference figure is the H200's):
#   bash wip-harness/card_call.sh REV -- COMMAND...
# runs COMMAND on an H200. On another card (a plain call may get an H100), it
# grades instead (verdicts, no figure): part 1's host_sum_tiny and four others
# (the watch's host_calls, ab0f137, not yet seen on a GPU), sm_y_unchecked (the grader's fix for a
# batch whose process died, 43889d5, not yet seen on a GPU), then part 2's programs
# under the watch in every check, 6 a batch, as the time allows (logs $OUT/call-G.log,
# $OUT/rows-suite.log). Either way, the call's time is used.
set -u
rev=${1:?the revision of the tree sent}; shift; [ "${1:-}" = "--" ] && shift
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*) "$@" ;;
  *) make -s -j16 GIT_REV=$rev NEED_VENV= test-build TEST_GPU=1 > /tmp/build0.log 2>&1
     echo "## the watch's host_calls (ab0f137): host_sum_tiny must fail, the others as ever" >> $OUT/sum-suite.log
     GPU_ONLY=host_sum_tiny,host_sum_keyed,step3_idle,step9_singlepass,baseline_cub GPU_JOBS=16 \
         timeout 200 python3 -u tests/gpu_suite.py >> $OUT/sum-suite.log 2>&1
     echo "sum batch rc=$? $(tail -1 $OUT/sum-suite.log | cut -c1-200)"
     GIT_REV=$rev PHASE=G FIRST=sm_y_unchecked PROGRAMS_ONLY=1 BUDGET=${BUDGET_G:-520} \
         bash wip-harness/remeasure_call.sh; tail -c 2500 $OUT/call-G.log ;;
esac
