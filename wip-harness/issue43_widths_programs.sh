#!/usr/bin/env bash
# Issue 43 item 1, first GPU run of bench --widths: the programs only (no PyTorch), 3 rounds
# in one call, into plots/reference/h200-rows-widths.csv; progress streams to $OUT/bench.log.
# timeout 500 bash wip-harness/issue43_widths_programs.sh GIT_REV   (estimate: build 60 s, 3 x 100 s)
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
P="rows/step4_group rows/step15_cluster rows/step17_layernorm_cluster rows/step18_bf16_layernorm_cluster
   rows/step19_rmsnorm rows/step20_bf16_rmsnorm rows/step21_bf16_add_rmsnorm rows/step23_bf16_bulk
   rows/baseline_copy rows/baseline_copy16 step9_singlepass"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
rm -f $OUT/build.log; echo "built in $(( $(date +%s) - start )) s"
python3 -u tools/bench.py --widths --rounds 3 --out-dir plots/reference --torch-python '' > $OUT/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"; tail -5 $OUT/bench.log | cut -c1-250
cp plots/reference/h200-rows-widths.csv plots/reference/h200-rows-widths-bench.log $OUT/ 2>/dev/null; ls $OUT
