#!/bin/bash
# The shortest check of the watch's host_calls on a GPU (verdicts, any card):
# host_sum_tiny must fail by gpu-work; step 3 and CUB must pass every check
# (n = 1 included: the _exit rule from one element). Built for sm_90 only.
#   bash wip-harness/watch_verify_min.sh REV   (log $OUT/verify-min.log)
set -u
rev=${1:?the revision of the tree sent}
T0=$(date +%s)
log=$OUT/verify-min.log
echo "card: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1); rev: $rev" > $log
t="step3_idle/run baseline_cub/run tests/broken/host_sum_tiny/run"
make -s -j16 ARCH=sm_90 GIT_REV=$rev NEED_VENV= $t $(for p in $t; do echo build/monitored/$p; done) > $OUT/build.log 2>&1
echo "build rc=$? t+$(( $(date +%s) - T0 )) s" >> $log
GPU_ONLY=host_sum_tiny,step3_idle,baseline_cub GPU_JOBS=16 \
    timeout $(( ${BUDGET:-160} - ($(date +%s) - T0) )) python3 -u tests/gpu_suite.py >> $log 2>&1
echo "rc=$? t+$(( $(date +%s) - T0 )) s" >> $log
grep -E "^(ok|FAIL|note) |^gpu: |^rc=|^build|^card|host_sum_tiny" $log | cut -c1-400
