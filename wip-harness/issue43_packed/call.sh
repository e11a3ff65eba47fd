#!/usr/bin/env bash
# Issue 43 items 2 and 3, and step 24 on the map, in one device call (about
# 6 minutes; plan it with the estimates below and read each part's time):
#  1. step 24's map line: bench.py --widths --only rows/step24_bf16_narrow, 3
#     rounds (its bar rows/copy16 and PyTorch's softmax_bf16 in the same run):
#     about 60 s warm plus PyTorch's first compile of 8 widths.
#  2. packed bfloat16 LayerNorm (variants.py: pk64, pk32 beside step 18), A B
#     A B at seven shapes, the first run of each checking first; --check of the
#     variants at narrow, odd and offset shapes (the plain path spills, and is
#     only checked); Nsight counters of step 18 and pk64 at 1024 x 32768 and
#     4096 x 50257.
#  3. the -inf guards' cost (ng beside step 24) at 65536 x 768 and 32768 x
#     1024, timed and counted (instructions, issue stalls).
#   bash wip-harness/issue43_packed/call.sh GIT_REV DEADLINE_S   (logs: $OUT/*.log)
set -u
export GIT_REV=${1:?rev}; DEADLINE=${2:-560}
T0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - T0) )); }
make -s -j16 rows/step18_bf16_layernorm_cluster/run rows/step24_bf16_narrow/run rows/step23_bf16_bulk/run \
    rows/baseline_copy16/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
python3 wip-harness/issue43_packed/variants.py > build/variants.txt || exit 1
declare -A P
while read -r name base src; do
    P[$name]=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; exit 1; }
done < build/variants.txt
echo "== built in $((SECONDS - T0)) s"

# 1. step 24 on the map (its own run id, merged into plots/reference)
timeout $(( $(left) - 300 )) python3 -u tools/bench.py --widths --only rows/step24_bf16_narrow --rounds 3 \
    --run-id "$(date -u +%Y%m%dT%H%M%SZ)" --out-dir plots/reference \
    --torch-python /opt/torch/.venv/bin/python > $OUT/widths24.log 2>&1
echo "== widths --only rc=$? at $((SECONDS - T0)) s"; tail -n 3 $OUT/widths24.log | cut -c1-200

# 2. packed LayerNorm
L=$OUT/packed.log
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
shapes=("--rows 32768 --cols 1024" "--rows 8192 --cols 4096" "--rows 1024 --cols 32768"
        "--rows 4096 --cols 50257" "--rows 256 --cols 65536" "--rows 512 --cols 128256"
        "--rows 8192 --cols 4097")
for shape in "${shapes[@]}"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step18_bf16_layernorm_cluster/run "${P[pk64]}" "${P[pk32]}"; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
for v in pk64 pk32; do
    for c in "--rows 33 --cols 1" "--rows 99 --cols 255 --offset 3" "--rows 17 --cols 50257 --offset 1 --y-offset 2" \
             "--rows 5 --cols 131073 --fill centered" "--rows 3 --cols 262144 --fill shifted" "--rows 64 --cols 4097 --fill centered --offset 5"; do
        echo "  $v check [$c]: $("${P[$v]}" --check $c 2>&1 | tail -n 1)"
    done
done
echo "  pk64 memcheck: $(compute-sanitizer --tool memcheck --error-exitcode 9 "${P[pk64]}" --check --rows 64 --cols 50257 --offset 1 2>&1 | tail -n 1)"
for shape in "1024 32768" "4096 50257"; do
    set -- $shape
    for p in rows/step18_bf16_layernorm_cluster/run "${P[pk64]}"; do
        echo "  ncu $(basename $(dirname $p)) $1 x $2:"
        timeout 60 ncu --clock-control none -k regex:layernorm --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__grid_size,launch__block_size,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard \
            "$p" --rows $1 --cols $2 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^\s+(gpu__|dram__|sm__|launch__|smsp__)" | sed 's/^/    /'
    done
done
echo "== packed done at $((SECONDS - T0)) s"
} > $L 2>&1

# 3. the -inf guards
{
for shape in "--rows 65536 --cols 768" "--rows 32768 --cols 1024"; do
    for k in 1 2 3; do
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step24_bf16_narrow/run "${P[ng]}"; do
            s=$("$p" $shape --reps 20 --no-verify 2>&1 | awk '/^speed/ {print $2}')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
for p in rows/step24_bf16_narrow/run "${P[ng]}"; do
    echo "  ncu $(basename $(dirname $p)) 65536 x 768:"
    timeout 60 ncu --clock-control none -k regex:softmax --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread \
        "$p" --rows 65536 --cols 768 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^\s+(gpu__|dram__|smsp__|launch__)" | sed 's/^/    /'
done
echo "== guards done at $((SECONDS - T0)) s"
} > $OUT/guards.log 2>&1
cp plots/reference/h200-rows-widths.csv plots/reference/h200-rows-widths-bench.log $OUT/ 2>/dev/null
tail -n 40 $L | cut -c1-220; tail -n 14 $OUT/guards.log | cut -c1-200
