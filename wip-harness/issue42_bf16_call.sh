#!/usr/bin/env bash
# Issue 42 item 2, one device call: steps 15 and 16 (bfloat16 softmax and
# LayerNorm backward), the bfloat16 bar and both new fixtures under the GPU
# suite, Nsight Compute counters of steps 14, 15, 9 and 16, then
# make verify ONLY=back/step15_bf16_bulk,back/step16_ln_bf16 into
# plots/reference; the changed reference files come back under $OUT/ref.
# timeout 590 bash wip-harness/issue42_bf16_call.sh GIT_REV  (about 6 min)
set -u
export GIT_REV=${1:?rev}
start=$(date +%s); touch /tmp/call-start
S="back/step15_bf16_bulk back/step16_ln_bf16 back/baseline_copy3_bf16"; F="back_bf16_cut_dx back_ln_bf16_cut_dx"
t="back/step14_bulk/run back/step9_ahead/run"
for s in $S; do t="$t $s/run build/monitored/$s/run"; done
for f in $F; do t="$t build/mutants/back/$f/run build/monitored/build/mutants/back/$f/run"; done
make -s -j16 GIT_REV=$GIT_REV $t > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
rm -f $OUT/build.log; echo "built in $(( $(date +%s) - start )) s"
S1=${S// /,}
GPU_PART=back GPU_ONLY=$S1,${F// /,} GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -12 | cut -c1-300
M=dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__cluster_dim_x,launch__block_size,launch__grid_size,launch__shared_mem_per_block_dynamic,smsp__inst_executed_op_global_ld.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio
{ echo "# Session 18, issue 42: bfloat16 backward steps 15 and 16 beside their float twins 14 and 9 (wip-harness/issue42_bf16_call.sh at $GIT_REV)"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) rev $GIT_REV: ncu --clock-control none, one run each (--reps 1 --warmup 0 --no-verify)"
for s in back/step14_bulk back/step15_bf16_bulk; do for sh in "32768 1024" "1024 50257" "256 151936"; do set -- $sh
  echo "== $s/run --rows $1 --cols $2"
  timeout 50 ncu --clock-control none -k regex:'softmax' --metrics $M $s/run --rows $1 --cols $2 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^  [a-z_]+.*\(|^    [a-z]"; done; done
for s in back/step9_ahead back/step16_ln_bf16; do for sh in "32768 1024" "8192 4096"; do set -- $sh
  echo "== $s/run --rows $1 --cols $2"
  timeout 50 ncu --clock-control none -k regex:'ln_backward' --metrics $M $s/run --rows $1 --cols $2 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^  [a-z_]+.*\(|^    [a-z]"; done; done; } > $OUT/counters.log
echo "ncu done at $(( $(date +%s) - start )) s"; grep -E "^==|duration|dram__throughput|warps_active|barrier|scoreboard" $OUT/counters.log | cut -c1-100 | head -70
make verify ONLY=back/step15_bf16_bulk,back/step16_ln_bf16 OUT_DIR=plots/reference VERIFY_DIR=$OUT/vd \
  TORCH_PYTHON=/opt/torch/.venv/bin/python GIT_REV=$GIT_REV > $OUT/verify.log 2>&1
echo "verify rc=$? at $(( $(date +%s) - start )) s"; grep -v "^\[round" $OUT/verify.log | tail -30 | cut -c1-250
mkdir -p $OUT/ref; find plots/reference -type f -newer /tmp/call-start ! -name '*.png' -exec cp {} $OUT/ref/ \;
ls $OUT/ref
find $OUT/vd -type f ! -name summary.txt -delete 2>/dev/null
