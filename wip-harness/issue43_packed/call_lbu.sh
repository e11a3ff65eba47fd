#!/usr/bin/env bash
# Session 23: lnbulk.py's lbu2 and lbu4 (lb48 with 2 or 4 packs of gamma and
# beta loaded before any is used: call_np.sh measured the parameters' cost)
# checked where their paths change, sanitized, and timed A B A B beside step 25
# and the bfloat16 copy (the first run of each checking first).
#   bash wip-harness/issue43_packed/call_lbu.sh GIT_REV   (log: $OUT/lbu.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
make -s -j16 rows/step25_bf16_packed/run rows/baseline_copy16/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
python3 wip-harness/issue43_packed/lnbulk.py lbu2 lbu4 > build/lbu.txt || exit 1
declare -A P
while read -r name base src; do
    P[$name]=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; exit 1; }
done < build/lbu.txt
echo "== built in $((SECONDS - T0)) s"
fail=0
for v in lbu2 lbu4; do
    for c in "--rows 7 --cols 32769" "--rows 5 --cols 50257 --offset 3 --y-offset 3" "--rows 5 --cols 50257 --offset 1 --y-offset 2" \
             "--rows 3 --cols 65537 --offset 2 --y-offset 2" "--rows 2 --cols 131073 --offset 5 --y-offset 5" \
             "--rows 2 --cols 262143 --offset 7 --y-offset 7" "--rows 600 --cols 40000 --fill centered" \
             "--rows 300 --cols 151936 --offset 1 --y-offset 1 --fill shifted" "--rows 4 --cols 32775 --offset 6 --y-offset 6 --fill exact"; do
        r=$("${P[$v]}" --check $c 2>&1 | tail -n 1); echo "  $v check [$c]: $r"
        case "$r" in PASS*) ;; *) fail=1;; esac
    done
done
for t in memcheck racecheck; do
    r=$(compute-sanitizer --tool $t --error-exitcode 9 "${P[lbu2]}" --check --rows 9 --cols 50257 --offset 3 --y-offset 3 2>&1 | tail -n 1)
    echo "  lbu2 $t 9 x 50257 offset 3/3: $r"
done
echo "== checked at $((SECONDS - T0)) s (fail=$fail)"
[ $fail = 0 ] || exit 1
for shape in "--rows 1024 --cols 40000" "--rows 4096 --cols 50257" "--rows 2670 --cols 50257" "--rows 256 --cols 65536" \
             "--rows 2048 --cols 65536" "--rows 1024 --cols 100000" "--rows 512 --cols 128256" "--rows 883 --cols 151936"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step25_bf16_packed/run "${P[lbu2]}" "${P[lbu4]}"; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== done at $((SECONDS - T0)) s"
} > $OUT/lbu.log 2>&1
tail -n 40 $OUT/lbu.log | cut -c1-220
