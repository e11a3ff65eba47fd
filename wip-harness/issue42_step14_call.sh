#!/usr/bin/env bash
# Issue 42, one device call: back/step14_bulk and its two fixtures under the GPU
# suite (step 13 too: the grader's new widths), then make verify ONLY=back/step14_bulk
# into plots/reference; the changed reference files come back under $OUT/ref.
# timeout 590 bash wip-harness/issue42_step14_call.sh GIT_REV  (about 6 min)
set -u
export GIT_REV=${1:?rev}
start=$(date +%s); touch /tmp/call-start
S=back/step14_bulk; F="back_bulk_wrong_slot back_bulk_tail_unsummed"
t="$S/run build/monitored/$S/run back/step13_cluster/run build/monitored/back/step13_cluster/run"
for f in $F; do t="$t build/mutants/back/$f/run build/monitored/build/mutants/back/$f/run"; done
make -s -j16 GIT_REV=$GIT_REV $t > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
rm -f $OUT/build.log
echo "built in $(( $(date +%s) - start )) s"
GPU_ONLY=back/step13_cluster,$S,${F// /,} GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -12 | cut -c1-300
make verify ONLY=$S OUT_DIR=plots/reference VERIFY_DIR=$OUT/vd TORCH_PYTHON=/opt/torch/.venv/bin/python \
  GIT_REV=$GIT_REV > $OUT/verify.log 2>&1
echo "verify rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[round" $OUT/verify.log | tail -25 | cut -c1-250
mkdir -p $OUT/ref; find plots/reference -type f -newer /tmp/call-start ! -name '*.png' -exec cp {} $OUT/ref/ \;
ls $OUT/ref
# at most 8 files come back: keep the summary and the bench log of vd
find $OUT/vd -type f ! -name summary.txt ! -name bench.log -delete
