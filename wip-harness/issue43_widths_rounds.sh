#!/usr/bin/env bash
# Issue 43 item 1, part 2's map with PyTorch beside the programs: bench
# --widths one round a job (the bench writes its CSV only at the end, so a
# job cut off loses only its round), several jobs in one device call, each
# started only if its estimate fits before the deadline; the widths files are
# copied to $OUT after every job (copy them home before the next call).
#   bash wip-harness/issue43_widths_rounds.sh REV DEADLINE_S RUN_ID K:EST_S ...
# RUN_ID: one UTC stamp for all three rounds, e.g. 20261205T090000Z-widths.
# Estimates: the programs alone ran 3 rounds in 303.5 s (about 100 s a round,
# 20261204T055956Z); PyTorch's 16 ops x 8 widths, 8 compiled, are unmeasured:
# give round 1 a generous estimate (e.g. 1:400) and read its time first.
set -u
REV=$1; DEADLINE=$2; RUN_ID=$3; shift 3
T0=$SECONDS
for job in "$@"; do
  IFS=: read -r K EST <<< "$job"
  left=$(( DEADLINE - (SECONDS - T0) ))
  if (( EST > left )); then echo "skip round $K: ${left} s left"; continue; fi
  t=$SECONDS
  timeout $(( left - 5 )) make bench-widths OUT_DIR=plots/reference GIT_REV=$REV \
    TORCH_PYTHON=/opt/torch/.venv/bin/python BENCH_FLAGS="--rounds 3 --round $K --run-id $RUN_ID" \
    > $OUT/widths-$K.log 2>&1
  echo "round $K rc=$? in $(( SECONDS - t )) s (t+$(( SECONDS - T0 )))"
  grep -E "^bench:|^results|^merged" $OUT/widths-$K.log | tail -4 | cut -c1-240
  cp plots/reference/h200-rows-widths.csv plots/reference/h200-rows-widths-bench.log $OUT/ 2>/dev/null
done
ls -la $OUT
