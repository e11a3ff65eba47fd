#!/usr/bin/env bash
# Issue 43 item 1, part 2's map with PyTorch beside the programs: bench
# --widths one round a job (the bench writes its CSV only at the end, so a
# job cut off loses only its round), several jobs in one device call, each
# started only if its estimate fits before the deadline; the widths files are
# copied to $OUT after every job (copy them home before the next call).
#   bash wip-harness/issue43_widths_rounds.sh REV DEADLINE_S RUN_ID K:EST_S ...
# RUN_ID: one UTC stamp for all three rounds, e.g. 20261205T090000Z.
# It builds the map's programs only and calls tools/bench.py itself: `make
# bench-widths` builds every program of all three parts (about 280 s on the
# H200's host) and wants the chart's venv, which a device without a network
# cannot install (session 21 lost a 310 s call to both).
set -u
REV=$1; DEADLINE=$2; RUN_ID=$3; shift 3
export GIT_REV=$REV
T0=$SECONDS
P="rows/step4_group rows/step15_cluster rows/step17_layernorm_cluster rows/step24_bf16_narrow rows/step25_bf16_packed
   rows/step19_rmsnorm rows/step20_bf16_rmsnorm rows/step21_bf16_add_rmsnorm rows/step23_bf16_bulk
   rows/baseline_copy rows/baseline_copy16 step9_singlepass"
make -s -j16 GIT_REV=$REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( SECONDS - T0 )) s"
for job in "$@"; do
  IFS=: read -r K EST <<< "$job"
  left=$(( DEADLINE - (SECONDS - T0) ))
  if (( EST > left )); then echo "skip round $K: ${left} s left"; continue; fi
  t=$SECONDS
  timeout $(( left - 5 )) python3 -u tools/bench.py --widths --rounds 3 --round $K --run-id $RUN_ID \
    --out-dir plots/reference --torch-python /opt/torch/.venv/bin/python > $OUT/widths-$K.log 2>&1
  echo "round $K rc=$? in $(( SECONDS - t )) s (t+$(( SECONDS - T0 )))"
  grep -E "^bench:|^results|^merged|FAIL|rror" $OUT/widths-$K.log | tail -6 | cut -c1-240
  cp plots/reference/h200-rows-widths.csv plots/reference/h200-rows-widths-bench.log $OUT/ 2>/dev/null
done
ls -la $OUT
