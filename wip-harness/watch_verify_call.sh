#!/bin/bash
# One short call, any card (verdicts, no timing): the grader's rules not yet
# seen on a GPU. host_calls (ab0f137: host_sum_tiny must fail by gpu-work), the
# _exit rule from one element (861979f), the batch rules (43889d5, b9834e2:
# sm_y_unchecked must fail its 4 checks, not 81), on honest programs of all
# three parts, which must pass every check.
#   bash wip-harness/watch_verify_call.sh REV   (logs $OUT/verify-watch.log)
set -u
rev=${1:?the revision of the tree sent}
T0=$(date +%s); el() { echo "   [t+$(( $(date +%s) - T0 )) s]"; }
left() { echo $(( ${BUDGET:-330} - ($(date +%s) - T0) )); }
log=$OUT/verify-watch.log
{ echo "card: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  echo "rev: $rev"; } > $log
make -s -j16 GIT_REV=$rev NEED_VENV= test-build TEST_GPU=1 > $OUT/build.log 2>&1
echo "build rc=$? $(el)" >> $log
for only in host_sum_tiny,host_sum_keyed,host_sum,step3_idle,baseline_cub \
            sm_y_unchecked,rows/step7_wide \
            back/step7_pdl,back/step13_cluster step9_singlepass,rows/step15_cluster; do
  [ $(left) -gt 40 ] || { echo "no time for $only" >> $log; continue; }
  echo "## $only" >> $log
  GPU_ONLY=$only GPU_JOBS=16 timeout $(( $(left) - 10 )) python3 -u tests/gpu_suite.py >> $log 2>&1
  echo "rc=$? $(el)" >> $log
done
grep -E "^(ok|FAIL|note) |^gpu: [0-9]+ (passed|checks)|^rc=|^build|^card|^## " $log | cut -c1-400
