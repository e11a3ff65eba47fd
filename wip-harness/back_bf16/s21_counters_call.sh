#!/usr/bin/env bash
# Issue 42, for the next GPU session: why step 18's variants lost (session
# 20, logs/s20-dev-times.csv). Nsight Compute counters of steps 17 and 18 and
# of s20_variants.py's step91_a3 (three rows ahead) and step95_pairs (two
# bfloat16s a load) at 32768 x 1024, one run each: DRAM throughput, warps
# active, stall reasons (barrier, long scoreboard, short scoreboard, wait),
# sectors per global load request, registers.
# timeout 300 bash wip-harness/back_bf16/s21_counters_call.sh GIT_REV
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
python3 wip-harness/back_bf16/s20_variants.py
P="back/step17_ln_bf16 back/step18_ln_bf16_ahead back/step91_a3 back/step95_pairs"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed.sum
{ echo "# Session 21, issue 42: counters of step 18 and two of its session-20 variants (wip-harness/back_bf16/s21_counters_call.sh at $GIT_REV)"
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader): ncu --clock-control none, one run each (--reps 1 --warmup 0 --no-verify)"
  for p in $P; do for sh in "32768 1024" "65536 768"; do set -- $sh
    echo "== $p/run --rows $1 --cols $2"
    timeout 60 ncu --clock-control none -k regex:'ln_backward_kernel' --metrics $M ./$p/run --rows $1 --cols $2 \
      --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^  [a-z_]+.*\(|^    [a-z]"
  done; done; } > $OUT/counters.log
echo "ncu done at t+$((SECONDS - T0)) s"
grep -E "^==|duration|dram__throughput|warps_active|stalled|registers_per" $OUT/counters.log | cut -c1-110
python3 wip-harness/back_bf16/s20_variants.py --remove
