#!/bin/bash
# Session 36, issue 43: steps 23, 24 and 26 after racecheck's set-up fix (mbarrier init before the
# block barrier, expected bytes after it). On any card:
#   STAGE=G GIT_REV=<rev> bash wip-harness/issue43_s36_call.sh
#       the grader on steps 23, 24 and 26 and their fixtures (bk_rank_zero, bk_pair_slot, nw_whole_warp),
#       then memcheck, racecheck and synccheck at the bulk widths (x and y equally aligned, so rows past
#       32768 elements take the bulk kernel); logs in $OUT/suite.log and $OUT/sanitize.log.
# The H200 re-measure is issue43_split_call.sh's STAGE=V and STAGE=3 (through card_call.sh).
set -u
export GIT_REV=${GIT_REV:?} STAGE=${STAGE:?G}
T0=$SECONDS; left() { echo $(( ${BUDGET:-540} - (SECONDS - T0) )); }
el() { echo "   [t+$(( SECONDS - T0 )) s]"; }
exec > $OUT/call-$STAGE.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV STAGE=$STAGE"
N="rows/step23_bf16_bulk rows/step24_bf16_narrow rows/step26_bf16_push"
if [ "$STAGE" = G ]; then
  make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -3 /tmp/build.log; el
  S=$OUT/sanitize.log
  echo "# compute-sanitizer on $N at $GIT_REV, $(nvidia-smi --query-gpu=name --format=csv,noheader): x and y equally aligned, so rows past 32768 elements take the bulk kernel" > $S
  for s in $N; do for tool in memcheck racecheck synccheck; do
    for shape in "6 70001 0" "3 32769 3" "2 151936 5"; do set -- $shape
      r=$(timeout 60 compute-sanitizer --tool $tool ./$s/run --rows $1 --cols $2 --offset $3 --y-offset $3 --reps 1 --warmup 0 2>&1)
      echo "$s $tool ${1}x$2 offsets $3/$3 rc=$? :: $(echo "$r" | grep -E "SUMMARY|PASS|FAIL" | tr '\n' ' ' | cut -c1-200)" >> $S
    done; done; done
  grep -c "rc=0" $S; grep -v "rc=0" $S | cut -c1-250; el
  ONLY=rows/step23_bf16_bulk,rows/step24_bf16_narrow,rows/step26_bf16_push,bk_rank_zero,bk_pair_slot,nw_whole_warp
  GPU_PART=rows GPU_ONLY=$ONLY GPU_JOBS=16 timeout $(( $(left) - 10 )) python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
  echo "suite rc=$?"; grep -E "^(FAIL|gpu:|grade:)" $OUT/suite.log | tail -12 | cut -c1-300; el
fi
