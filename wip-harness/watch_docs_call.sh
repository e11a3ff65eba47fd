#!/bin/bash
# After the watch-all check passed on an H100 (session 30): what docs/grading
# quotes from the grader, made again under the watch (correctness, any sm_90 card):
# the class of three (alice = step 3, bob = drop_tail, carol = host_sum) and one
# grading per part 3 matrix (its check count).  bash wip-harness/watch_docs_call.sh REV
set -u
export GIT_REV=${1:?the watch-all revision}
# (watch-all landed at 6bce4f9: no patch to apply)
exec > $OUT/docs-call.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
S=/tmp/submissions; mkdir -p $S/alice $S/bob $S/carol
cp step3_idle/reduce.cu $S/alice/; cp tests/broken/drop_tail/reduce.cu $S/bob/; cp tests/broken/host_sum/reduce.cu $S/carol/
s=$SECONDS
timeout -k 5 300 make --no-print-directory GIT_REV=$GIT_REV NEED_VENV= PLOT_PYTHON=python3 class \
    SUBMISSIONS=$S SPEED="1.5x step2" REPORTS=/tmp/class > /tmp/make-class.txt 2>&1
echo "class rc=$? in $((SECONDS - s)) s"; cp /tmp/make-class.txt /tmp/class/
cat /tmp/class/class.md
tar czf $OUT/class.tgz -C /tmp class
for st in back/2 back/10 back/15 back/17; do
  s=$SECONDS
  timeout -k 5 150 make --no-print-directory -s GIT_REV=$GIT_REV NEED_VENV= check STEP=$st > /tmp/grade.log 2>&1
  echo "check STEP=$st rc=$? in $((SECONDS - s)) s: $(grep '^grade:' /tmp/grade.log | tail -1)"
  grep -i "gpu-work" /tmp/grade.log | head -3 | cut -c1-200
done
