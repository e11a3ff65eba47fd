#!/bin/bash
# The rest of the watch-all check (NOTES item 0, session 29): the cheats graded
# watched, after the fix that charges a caught batch after ALONE_FIRST runs
# alone. Honest programs and the watch's cost were seen on an H100 in session 29.
#   bash wip-harness/watch_cheats_call.sh WREV     (~3-5 min; logs $OUT/cheats-suite.log)
# Land watch-all if every cheat is caught (an "ok ... caught by gpu-work" line
# each, no FAIL) and step 3's full grading stays near 11-15 s.
set -u
export GIT_REV=${1:?the watch-all revision}
patch -p1 -s < wip-harness/batch/watch-all.diff || { echo "patch failed"; exit 1; }
exec > $OUT/cheats-call.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
H="host_sum host_sum_launch host_sum_mapped host_sum_registered host_sum_keyed"
R="host_rows host_rows_managed host_rows_pinned host_rows_advised"
B="host_back"
s=$SECONDS
timeout 150 make -s -j16 step3_idle/run build/monitored/step3_idle/run \
    $(for f in $B; do echo tests/broken/back/$f/run build/monitored/tests/broken/back/$f/run; done) \
    $(for f in $H; do echo tests/broken/$f/run build/monitored/tests/broken/$f/run; done) \
    $(for f in $R; do echo tests/broken/rows/$f/run build/monitored/tests/broken/rows/$f/run; done) \
    > $OUT/make.log 2>&1
echo "make rc=$? in $((SECONDS - s)) s"
s=$SECONDS
GPU_PROGRESS=$OUT/progress.log GPU_ONLY=$(echo $H $R $B | tr ' ' ','),step3_idle \
    timeout -k 5 ${LIMIT:-300} python3 -u tests/gpu_suite.py > $OUT/cheats-suite.log 2>&1
echo "suite rc=$? in $((SECONDS - s)) s"
grep -v "^ok  *check\|^  " $OUT/cheats-suite.log | tail -n 30 | cut -c1-330
