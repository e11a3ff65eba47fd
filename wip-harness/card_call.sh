#!/bin/bash
# A call that measures only on the H200 (every reference figure is the H200's):
#   bash wip-harness/card_call.sh REV -- COMMAND...
# runs COMMAND on an H200. On another card (a plain call may get an H100), it
# grades instead (verdicts, no figure): part 3's suite under the watch in every check
# (log $OUT/back-suite.log), then part 2's fixtures ($OUT/rows-suite.log). Either way, the call's time is used.
set -u
rev=${1:?the revision of the tree sent}; shift; [ "${1:-}" = "--" ] && shift
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*) "$@" ;;
  *) make -s -j16 GIT_REV=$rev NEED_VENV= test-build TEST_GPU=1 > /tmp/build0.log 2>&1
     echo "build rc=$?"
     # Done on an H100 at 1361231 (session 32): host_calls, sm_y_unchecked, part 2's programs.
     # Left: part 3's programs and fixtures under the watch in every check.
     GPU_PART=back GPU_JOBS=16 timeout 240 python3 -u tests/gpu_suite.py > $OUT/back-suite.log 2>&1
     echo "back suite rc=$?"; grep -E "^(grade|ok|FAIL|note|gpu):" $OUT/back-suite.log | cut -c1-300 | tail -40
     # Then part 2's fixtures, as the time allows (their reasons are quoted in docs/grading).
     GIT_REV=$rev PHASE=G FIXTURES_ONLY=1 BUDGET=${BUDGET_G:-260} bash wip-harness/remeasure_call.sh
     grep -E "^(ok|FAIL|note) " $OUT/rows-suite.log | cut -c1-250 ;;
esac
