#!/bin/bash
# Session 27's first call: the card decides what it measures. Part 2's bench is
# measured on the H200 (every reference figure is); the watch's check is not a
# timing, so an H100 (sm_90 too) serves for it.
#   REV=<main's rev> WREV=<watch-all's rev> RUN_ID=<id> bash wip-harness/session27_call.sh
# H200: bench rounds 1 (and 2 if 240 s are left) of part 2, remeasure_call.sh PHASE=B.
# Otherwise: watch-all.diff applied here, then watch_all_call.sh (its logs under $OUT).
set -u
name=$(timeout -k 5 30 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "card: $name"
case "$name" in
  *H200*)
    GIT_REV=$REV PHASE=B ROUNDS="1 2" NEED=240 CHECK_JOBS=8 RUN_ID=$RUN_ID BUDGET=${BUDGET:-555} \
      bash wip-harness/remeasure_call.sh
    tail -n 40 $OUT/call-B.log ;;
  *)
    patch -p1 -s < wip-harness/batch/watch-all.diff || { echo "patch failed"; exit 1; }
    LIMIT=${LIMIT:-545} bash wip-harness/watch_all_call.sh $WREV ;;
esac
