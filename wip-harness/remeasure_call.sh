#!/bin/bash
# Session 26: part 2 measured again after the option parser (parser44) moved every hash.
#   PHASE=S GIT_REV=<rev> bash wip-harness/remeasure_call.sh
#       build, part 2's GPU suite (GPU_PART=rows), then part 2's counters (verify --skip grade,bench)
#   PHASE=B GIT_REV=<rev> ROUNDS="1" RUN_ID=<id> [CHECK_JOBS=16] bash wip-harness/remeasure_call.sh
#       bench rounds of part 2 with PyTorch (verify --skip grade,profile --round K)
# Logs and results under $OUT (at most 8 files).
set -u
export GIT_REV=${GIT_REV:?}
T0=$(date +%s); el() { echo "   [t+$(( $(date +%s) - T0 )) s]"; }
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
exec > $OUT/call-$PHASE.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV PHASE=$PHASE"
if [ "$PHASE" = S ]; then
  make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  GPU_PART=rows GPU_JOBS=16 timeout $(( $(left) - 130 )) python3 -u tests/gpu_suite.py > $OUT/rows-suite.log 2>&1
  echo "suite rc=$?"; grep -E "^(FAIL|gpu:)" $OUT/rows-suite.log | tail -8 | cut -c1-300; el
  timeout $(( $(left) - 10 )) python3 tools/verify.py --root . --only rows --out-dir plots/reference \
     --verify-dir build/verifyP --skip grade,bench > $OUT/profile.log 2>&1
  echo "profile rc=$?"; tail -3 $OUT/profile.log | cut -c1-300; el
  mkdir -p $OUT/prof; cp plots/reference/h200-rows-profile*.csv $OUT/prof/
fi
if [ "$PHASE" = B ]; then
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  for r in $ROUNDS; do
    [ $(left) -gt ${NEED:-200} ] || { echo "no time for round $r"; break; }
    timeout $(left) python3 tools/verify.py --root . --only rows --out-dir plots/reference --verify-dir build/verifyB$r \
       --torch-python /opt/torch/.venv/bin/python --skip grade,profile --round $r --run-id $RUN_ID \
       ${CHECK_JOBS:+--check-jobs $CHECK_JOBS} > $OUT/bench$r.log 2>&1
    echo "round $r rc=$?"; tail -n 3 $OUT/bench$r.log | cut -c1-300; el
    mkdir -p $OUT/ref$r; cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log $OUT/ref$r/
  done
fi
el
