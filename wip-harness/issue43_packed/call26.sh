#!/usr/bin/env bash
# A lead for bfloat16 LayerNorm at the vocabulary widths (written in session
# 22, not yet run): variants26.py's c48 and c8 (a row of 32769 to 131072
# columns in a cluster of 256-thread blocks, 64 packed elements a thread,
# two blocks an SM) beside step 25, checked at the widths where their paths
# change, timed A B A B (the first run of each checking first), and counted
# at 4096 x 50257. About 200 s warm.
#   bash wip-harness/issue43_packed/call26.sh GIT_REV   (log: $OUT/c26.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
make -s -j16 rows/step25_bf16_packed/run rows/baseline_copy16/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
python3 wip-harness/issue43_packed/variants26.py > build/variants26.txt || exit 1
declare -A P
while read -r name base src; do
    P[$name]=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; exit 1; }
done < build/variants26.txt
echo "== built in $((SECONDS - T0)) s"
fail=0
for v in c48 c8; do
    for c in "--rows 7 --cols 32769 --offset 1" "--rows 5 --cols 50257 --offset 3 --y-offset 3" \
             "--rows 5 --cols 50257 --offset 1 --y-offset 2" "--rows 3 --cols 65536 --fill centered" \
             "--rows 3 --cols 65537 --offset 2" "--rows 2 --cols 131072 --fill shifted" "--rows 2 --cols 131073 --offset 5" \
             "--rows 600 --cols 40000 --fill centered"; do
        r=$("${P[$v]}" --check $c 2>&1 | tail -n 1); echo "  $v check [$c]: $r"
        case "$r" in PASS*) ;; *) fail=1;; esac
    done
done
r=$(compute-sanitizer --tool memcheck --error-exitcode 9 "${P[c48]}" --check --rows 9 --cols 50257 --offset 1 2>&1 | tail -n 1)
echo "  c48 memcheck 9 x 50257 offset 1: $r"
r=$(compute-sanitizer --tool racecheck --error-exitcode 9 "${P[c48]}" --check --rows 9 --cols 60001 2>&1 | tail -n 1)
echo "  c48 racecheck 9 x 60001: $r"
echo "== checked at $((SECONDS - T0)) s (fail=$fail)"
[ $fail = 0 ] || exit 1
for shape in "--rows 1024 --cols 32768" "--rows 1024 --cols 40000" "--rows 4096 --cols 50257" "--rows 2670 --cols 50257" \
             "--rows 256 --cols 65536" "--rows 2048 --cols 65536" "--rows 512 --cols 128256" "--rows 883 --cols 151936"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step25_bf16_packed/run "${P[c48]}" "${P[c8]}"; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
for p in rows/step25_bf16_packed/run "${P[c48]}"; do
    echo "  ncu $(basename $(dirname $p)) 4096 x 50257:"
    timeout 60 ncu --clock-control none -k regex:layernorm --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__occupancy_limit_registers \
        "$p" --rows 4096 --cols 50257 --reps 1 --warmup 0 --no-verify 2>&1 | grep -E "^\s+(gpu__|dram__|sm__|launch__)" | sed 's/^/    /'
done
echo "== done at $((SECONDS - T0)) s"
} > $OUT/c26.log 2>&1
tail -n 40 $OUT/c26.log | cut -c1-220
