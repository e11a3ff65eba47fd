#!/usr/bin/env bash
# Issue 42, session 19: part 3 whole (every hash moved with bfloat16 in its
# driver), round $2 of 3 (GIT_REV=$1, run id $3), PyTorch beside it; the
# changed plots/reference files come back under $OUT/ref (copy them home
# before the next round: each call starts from the tree as it was sent).
# timeout 590 bash wip-harness/issue42_bench_round.sh REV K RUN_ID [ONLY]
# ONLY (default back): one program set per run id. Session 19 lost round 1
# of ONLY=back at 590 s (13 of ~21 programs done): give each call a set,
# e.g. back/step0_thread,...,back/step9_ahead; back/step10_softmax,...,
# back/step14_bulk; back/step15_bf16_bulk,...,back/step18_ln_bf16_ahead.
set -u
O=${4:-back}
touch /tmp/call-start
make verify ONLY=$O OUT_DIR=plots/reference VERIFY_DIR=$OUT/vd TORCH_PYTHON=/opt/torch/.venv/bin/python GIT_REV=$1 \
  VERIFY_FLAGS="--skip grade,profile --rounds 3 --round $2 --run-id ${3:?run id}" > $OUT/v$2.log 2>&1
echo rc=$?; grep -v "^\[round" $OUT/v$2.log | tail -30 | cut -c1-200
mkdir -p $OUT/ref; find plots/reference -type f -newer /tmp/call-start ! -name '*.png' -exec cp {} $OUT/ref/ \;
ls -la $OUT/ref
