#!/usr/bin/env bash
# Issue 42, second call: back/step13 and step14 and step 14's two fixtures under the GPU
# suite (GPU_PART=back), then Nsight Compute counters of steps 13 and 14 at the wide shapes.
# timeout 590 bash wip-harness/issue42_step14_suite.sh GIT_REV  (about 3 min)
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
S=back/step14_bulk; F="back_bulk_wrong_slot back_bulk_tail_unsummed"
t="$S/run build/monitored/$S/run back/step13_cluster/run build/monitored/back/step13_cluster/run"
for f in $F; do t="$t build/mutants/back/$f/run build/monitored/build/mutants/back/$f/run"; done
make -s -j16 GIT_REV=$GIT_REV $t > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
rm -f $OUT/build.log; echo "built in $(( $(date +%s) - start )) s"
GPU_PART=back GPU_ONLY=back/step13_cluster,$S,${F// /,} GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -12 | cut -c1-300
M=dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__cluster_dim_x,launch__block_size,launch__grid_size,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,smsp__inst_executed_op_global_ld.sum
{ echo "# Session 17, issue 42: softmax backward steps 13 and 14 (wip-harness/issue42_step14_suite.sh at $GIT_REV)"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) rev $GIT_REV: ncu --clock-control none, one run each (--reps 1 --warmup 0 --no-verify), the softmax backward kernels only"
for s in back/step13_cluster $S; do for sh in "1024 50257" "256 128256" "256 151936" "128 262144"; do set -- $sh
  echo "== $s/run --rows $1 --cols $2"
  timeout 50 ncu --clock-control none -k regex:'softmax' --metrics $M $s/run --rows $1 --cols $2 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^  [a-z_]+.*\(|^    [a-z]"; done; done; } > $OUT/counters.log
echo "ncu done at $(( $(date +%s) - start )) s"; grep -E "^==|duration|dram__throughput|warps_active|dynamic" $OUT/counters.log | cut -c1-100 | head -60
