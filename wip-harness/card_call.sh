#!/bin/bash
# A call that measures only on the H200 (every reference figure is the H200's):
#   bash wip-harness/card_call.sh REV -- COMMAND...
# runs COMMAND on an H200. On another card (a plain call may get an H100), it
# grades instead (verdicts, no figure): what is left of the suites under the watch in every check
# (logs $OUT/rows-fixtures.log, $OUT/sum-suite.log). Either way, the call's time is used.
set -u
rev=${1:?the revision of the tree sent}; shift; [ "${1:-}" = "--" ] && shift
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*) "$@" ;;
  *) make -s -j16 GIT_REV=$rev NEED_VENV= test-build TEST_GPU=1 > /tmp/build0.log 2>&1
     echo "build rc=$?"
     # Done on an H100 (session 32): host_calls, sm_y_unchecked, parts 2 and 3's programs,
     # part 3's fixtures, 30 of part 2's. Left: 7 of part 2's fixtures, then part 1's suite.
     GPU_PART=rows GPU_ONLY=nw_whole_warp,pk_halves_swapped,cache_rows,host_rows,host_rows_advised,host_rows_managed,host_rows_pinned \
         GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py > $OUT/rows-fixtures.log 2>&1
     echo "rows fixtures rc=$?"; grep -E "^(ok|FAIL|note|gpu):? " $OUT/rows-fixtures.log | cut -c1-250
     GPU_PART=sum GPU_JOBS=16 timeout ${BUDGET_G:-290} python3 -u tests/gpu_suite.py > $OUT/sum-suite.log 2>&1
     echo "sum suite rc=$?"; grep -E "^(grade|ok|FAIL|note|gpu):? " $OUT/sum-suite.log | cut -c1-250 | tail -60 ;;
esac
