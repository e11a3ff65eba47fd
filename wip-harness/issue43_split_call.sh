#!/bin/bash
# Session 35, issue 43's one-idea split (rows/1 and rows/2 gain UNROLL; steps 23 and 24 meet their
# pairs at a cluster barrier; step 26 pushes them). Run through card_call.sh (H200 only).
#   STAGE=1 GIT_REV=<rev> bash wip-harness/issue43_split_call.sh
#       the grader on the changed programs and their fixtures (the GPU suite; SUITE=0 leaves it out:
#       it ran on an H100 in session 35, wip-harness/split35/h100-suite.log), then make verify of
#       rows/1 and rows/2 without the grade (counters at every profiled shape, bench in 2 rounds)
#   STAGE=2 GIT_REV=<rev> RUN_ID=<id> ROUND=<k> [SKIP=grade,profile] bash ...
#       make verify of steps 23, 24 and 26, round k of a 2-round run (the counters in round 1)
#   STAGE=3 GIT_REV=<rev> bash ...   the map's bfloat16 softmax line: bench --widths --only step 26
# Every changed file of plots/reference comes back in $OUT/results-$STAGE.tgz (copy it home, untar).
set -u
export GIT_REV=${GIT_REV:?} STAGE=${STAGE:?1, 2, 3 or V}
T0=$SECONDS; left() { echo $(( ${BUDGET:-540} - (SECONDS - T0) )); }
el() { echo "   [t+$(( SECONDS - T0 )) s]"; }
exec > $OUT/call-$STAGE.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV STAGE=$STAGE"
touch /tmp/start-$STAGE; sleep 1
TORCH=/opt/torch/.venv/bin/python
if [ "$STAGE" = 1 ]; then
  [ "${SUITE:-1}" = 1 ] && make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -3 /tmp/build.log; el
  ONLY=rows/step23_bf16_bulk,rows/step24_bf16_narrow,rows/step26_bf16_push,bk_rank_zero,bk_pair_slot,nw_whole_warp
  ONLY=$ONLY,rows/step1_block,rows/step2_warp,rows_no_barrier,rows_drop_last_row
  [ "${SUITE:-1}" = 1 ] && GPU_PART=rows GPU_ONLY=$ONLY GPU_JOBS=16 timeout $(( $(left) - 150 )) python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
  echo "suite rc=$?"; grep -E "^(FAIL|gpu:)" $OUT/suite.log | tail -12 | cut -c1-300; el
  N=rows/step1_block,rows/step2_warp
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only $N --targets) > /tmp/build2.log 2>&1
  [ $(left) -gt 60 ] && timeout $(( $(left) - 10 )) python3 tools/verify.py --root . --only $N --out-dir plots/reference \
     --verify-dir build/v12 --torch-python $TORCH --skip grade --rounds 2 > $OUT/verify12.log 2>&1
  echo "verify rc=$?"; tail -30 $OUT/verify12.log | cut -c1-250; el
fi
if [ "$STAGE" = 2 ]; then
  : ${RUN_ID:?} ${ROUND:?}
  N=rows/step23_bf16_bulk,rows/step24_bf16_narrow,rows/step26_bf16_push
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only $N --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  # A warm machine keeps build/ between calls: this run's earlier round, kept there, merged first.
  [ -f build/keep/h200-rows.csv ] && grep -q "$RUN_ID" build/keep/h200-rows.csv && ! grep -q "$RUN_ID" plots/reference/h200-rows.csv \
     && cp build/keep/h200-rows.csv build/keep/h200-rows-bench.log plots/reference/ && echo "restored round(s) of $RUN_ID"
  timeout $(( $(left) - 10 )) python3 tools/verify.py --root . --only $N --out-dir plots/reference \
     --verify-dir build/v23-$ROUND --torch-python $TORCH --skip ${SKIP:-grade} --rounds 2 --round $ROUND --run-id $RUN_ID > $OUT/verify23-$ROUND.log 2>&1
  echo "verify rc=$?"; tail -40 $OUT/verify23-$ROUND.log | cut -c1-250; el
  mkdir -p build/keep; cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log build/keep/
fi
# STAGE=V GIT_REV=<rev> NAMES=<a,b,...>: make verify of NAMES (no grade: graded in split35's suite) in one
#   run of 2 rounds, on whatever card came (an H100 writes h100-80gb-hbm3-*.csv beside the H200's files);
#   ROUND=k RUN_ID=<id>: round k of that run alone (bench.py --round), e.g. SKIP=grade,profile ROUND=1.
if [ "$STAGE" = V ]; then
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only $NAMES --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  timeout $(( $(left) - 10 )) python3 tools/verify.py --root . --only $NAMES --out-dir plots/reference \
     --verify-dir build/vV --torch-python $TORCH --skip ${SKIP:-grade} --rounds 2 \
     ${ROUND:+--round $ROUND --run-id $RUN_ID} > $OUT/verifyV.log 2>&1
  echo "verify rc=$?"; tail -40 $OUT/verifyV.log | cut -c1-250; el
fi
if [ "$STAGE" = 3 ]; then
  make -s -j16 GIT_REV=$GIT_REV rows/step26_bf16_push/run rows/baseline_copy16/run > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  timeout $(( $(left) - 10 )) python3 -u tools/bench.py --widths --rounds 3 --only rows/step26_bf16_push \
     --out-dir plots/reference --torch-python $TORCH > $OUT/widths.log 2>&1
  echo "widths rc=$?"; tail -8 $OUT/widths.log | cut -c1-250; el
fi
changed=$(find plots/reference -type f -newer /tmp/start-$STAGE ! -name '*.png')
if [ -n "$changed" ]; then tar czf $OUT/results-$STAGE.tgz $changed; tar tzf $OUT/results-$STAGE.tgz; else echo "no result changed"; fi
el
