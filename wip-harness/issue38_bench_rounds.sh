#!/usr/bin/env bash
# issue 38 item 3: the softmax programs at the bench's 14 softmax shapes, round $2 of 3 (GIT_REV=$1, run id $3)
# VERIFY_DIR under $OUT: bench streams its progress into vd/bench.log, which comes back even after a timeout
set -u
O=rows/step15_cluster,rows/step16_bf16_cluster,rows/step23_bf16_bulk
make verify ONLY=$O OUT_DIR=plots/reference VERIFY_DIR=$OUT/vd TORCH_PYTHON=/opt/torch/.venv/bin/python GIT_REV=$1 \
  VERIFY_FLAGS="--skip grade,profile --rounds 3 --round $2 --run-id ${3:?run id: round 1s UTC start, date -u +%Y%m%dT%H%M%SZ, the same in each call}" > $OUT/v$2.log 2>&1
echo rc=$?; grep -v "^\[round" $OUT/v$2.log | tail -40 | cut -c1-200
cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log $OUT/
