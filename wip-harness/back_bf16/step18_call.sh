#!/usr/bin/env bash
# Issue 42, session 19, one device call: back/step18_ln_bf16_ahead (step 17
# with two rows ahead as raw bfloat16) timed beside steps 9 and 17 and the
# bars, 3 rounds at LayerNorm's shapes; Nsight Compute counters of steps 9,
# 17, 18 (and 14, 15, 16 at softmax's register-path shapes); then the GPU
# suite on step 18 and its fixture.
# timeout 590 bash wip-harness/back_bf16/step18_call.sh GIT_REV
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
LN="back/step9_ahead back/step17_ln_bf16 back/step18_ln_bf16_ahead back/baseline_copy3_bf16 back/baseline_copy3"
t="back/step14_bulk/run back/step15_bf16_bulk/run back/step16_bf16_pairs/run"
for p in $LN; do t="$t $p/run"; done
t="$t build/monitored/back/step18_ln_bf16_ahead/run build/mutants/back/back_ahead_wrong_row/run build/monitored/build/mutants/back/back_ahead_wrong_row/run"
make -s -j16 GIT_REV=$GIT_REV $t > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
runs=$(mktemp)
for s in 32768x1024 8192x4096 65536x768 16384x2048 4096x8192 32768x1000 8192x4097; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"; done > $runs
for r in 1 2 3; do
    for p in $LN; do timeout 100 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"; done
done
echo "timed at $(( $(date +%s) - start )) s"
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows))
shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
print(f'{"shape":>11} ' + " ".join(f"{s.split('/')[-1][-16:]:>16}" for s in steps))
for sh in shapes:
    cells = []
    for s in steps:
        v = t.get((s, sh))
        cells.append(f"{statistics.median(v):8.1f}[{min(v):.0f}-{max(v):.0f}]".rjust(16) if v else f"{'-':>16}")
    print(f"{sh:>11} " + " ".join(cells))
PY
M=dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__block_size,launch__grid_size,smsp__inst_executed_op_global_ld.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,launch__occupancy_limit_registers
{ echo "# Session 19, issue 42: counters of part 3's bfloat16 steps beside their float twins (wip-harness/back_bf16/step18_call.sh at $GIT_REV)"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) rev $GIT_REV: ncu --clock-control none, one run each (--reps 1 --warmup 0 --no-verify)"
for s in back/step14_bulk back/step15_bf16_bulk back/step16_bf16_pairs; do for sh in "32768 1024" "8192 4096"; do set -- $sh
  echo "== $s/run --rows $1 --cols $2"
  timeout 50 ncu --clock-control none -k regex:'softmax' --metrics $M $s/run --rows $1 --cols $2 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^  [a-z_]+.*\(|^    [a-z]"; done; done
for s in back/step9_ahead back/step17_ln_bf16 back/step18_ln_bf16_ahead; do for sh in "32768 1024" "8192 4096" "65536 768"; do set -- $sh
  echo "== $s/run --rows $1 --cols $2"
  timeout 50 ncu --clock-control none -k regex:'ln_backward' --metrics $M $s/run --rows $1 --cols $2 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^  [a-z_]+.*\(|^    [a-z]"; done; done; } > $OUT/counters.log
echo "ncu done at $(( $(date +%s) - start )) s"; grep -E "^==|duration|dram__throughput|warps_active|registers_per" $OUT/counters.log | cut -c1-100 | head -80
GPU_PART=back GPU_ONLY=back/step18_ln_bf16_ahead,back_ahead_wrong_row GPU_JOBS=16 timeout ${SUITE_TIMEOUT:-300} python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -8 | cut -c1-300
