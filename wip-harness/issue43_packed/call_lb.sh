#!/usr/bin/env bash
# Session 23: lnbulk.py's lb and lb48 (step 25 with step 23's bulk copies for
# rows of 32769 to 262143 columns) checked where their paths change, graded
# (lb), sanitized, timed A B A B beside step 25 and the bfloat16 copy (the
# first run of each checking first), and counted at 4096 x 50257.
#   bash wip-harness/issue43_packed/call_lb.sh GIT_REV   (log: $OUT/lb.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
make -s -j16 rows/step25_bf16_packed/run rows/baseline_copy16/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
python3 wip-harness/issue43_packed/lnbulk.py > build/lnbulk.txt || exit 1
declare -A P
while read -r name base src; do
    P[$name]=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; exit 1; }
done < build/lnbulk.txt
echo "== built in $((SECONDS - T0)) s"
fail=0
for v in lb lb48; do
    for c in "--rows 7 --cols 32769" "--rows 5 --cols 50257 --offset 3 --y-offset 3" "--rows 5 --cols 50257 --offset 1 --y-offset 2" \
             "--rows 3 --cols 65536 --fill centered" "--rows 3 --cols 65537 --offset 2 --y-offset 2" "--rows 3 --cols 98304 --fill shifted" \
             "--rows 2 --cols 131072 --fill shifted" "--rows 2 --cols 131073 --offset 5 --y-offset 5" "--rows 2 --cols 196608" \
             "--rows 2 --cols 262143 --offset 7 --y-offset 7" "--rows 2 --cols 262144" "--rows 600 --cols 40000 --fill centered" \
             "--rows 300 --cols 151936 --offset 1 --y-offset 1 --fill shifted" "--rows 4 --cols 32775 --offset 6 --y-offset 6 --fill exact"; do
        r=$("${P[$v]}" --check $c 2>&1 | tail -n 1); echo "  $v check [$c]: $r"
        case "$r" in PASS*) ;; *) fail=1;; esac
    done
done
for t in memcheck racecheck synccheck initcheck; do
    r=$(compute-sanitizer --tool $t --error-exitcode 9 "${P[lb]}" --check --rows 9 --cols 50257 --offset 3 --y-offset 3 2>&1 | tail -n 1)
    echo "  lb $t 9 x 50257 offset 3/3: $r"
    case "$r" in *" 0 errors"*|*" 0 hazards"*) ;; *) fail=1;; esac
done
r=$(compute-sanitizer --tool racecheck --error-exitcode 9 "${P[lb]}" --check --rows 5 --cols 200001 --offset 2 --y-offset 2 2>&1 | tail -n 1)
echo "  lb racecheck 5 x 200001 offset 2/2: $r"
echo "== checked at $((SECONDS - T0)) s (fail=$fail)"
[ $fail = 0 ] || exit 1
timeout 200 bash tools/grade_source.sh build/wip/lb/rows.cu 2>&1 | tail -n 3
echo "== graded at $((SECONDS - T0)) s"
for shape in "--rows 1024 --cols 32768" "--rows 1024 --cols 40000" "--rows 4096 --cols 50257" "--rows 2670 --cols 50257" \
             "--rows 256 --cols 65536" "--rows 2048 --cols 65536" "--rows 512 --cols 128256" "--rows 883 --cols 151936" \
             "--rows 1024 --cols 100000" "--rows 512 --cols 262143"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step25_bf16_packed/run "${P[lb]}" "${P[lb48]}"; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
for p in "${P[lb]}"; do
    echo "  ncu $(basename $(dirname $p)) 4096 x 50257:"
    timeout 60 ncu --clock-control none -k regex:layernorm --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__maximum_warps_per_active_cycle_pct \
        "$p" --rows 4096 --cols 50257 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^\s+(gpu__|dram__|sm__|launch__)" | sed 's/^/    /'
done
echo "== done at $((SECONDS - T0)) s"
} > $OUT/lb.log 2>&1
tail -n 60 $OUT/lb.log | cut -c1-220
