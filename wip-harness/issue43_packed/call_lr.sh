#!/usr/bin/env bash
# The lead session 23 left (written then, not yet run): resident.py's lr, lr8
# and lr2 (lb48 made persistent: each block keeps its columns' gamma and beta in
# shared memory across rows) checked where their paths change and with many
# rows a cluster (the row loop, the mbarriers' parity, odd widths whose heads
# change from row to row), sanitized (lr, lr2), graded (lr, lr2), timed A B A B
# beside step 25 and the bfloat16 copy (the first run of each checking first).
# About 420 s warm.
#   bash wip-harness/issue43_packed/call_lr.sh GIT_REV [check|all]   (log: $OUT/lr.log)
# Session 24's first run (all stages, 600 s limit) lost the device machine
# with no log back, and cost 570 s. Now the variants' waits trap after ~4 s
# (resident.py), every command is killed at its timeout (-k), no timeout
# reaches past LIMIT s (t below), and `check` stops after the checks and
# memcheck (~150 s), so a second call times them.
set -u
export GIT_REV=${1:?rev}
STAGE=${2:-all}
LIMIT=555   # of the call's 600 s: the log must come back
T0=$SECONDS
before() { [ $((SECONDS - T0)) -lt "$1" ] || { echo "  (skipped at $((SECONDS - T0)) s: past $1 s)"; false; }; }   # stay inside the call
t() { local left=$((LIMIT - (SECONDS - T0))); [ $left -gt 3 ] || left=3; echo $(($1 < left ? $1 : left)); }   # a timeout that ends by LIMIT
(
echo "# $(date -u +%FT%TZ) $(timeout -k 5 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
mkdir -p build && timeout -k 10 $(t 300) make -s -j16 rows/step25_bf16_packed/run rows/baseline_copy16/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
python3 wip-harness/issue43_packed/resident.py lr lr8 lr2 > build/lr.txt || exit 1
declare -A P
while read -r name base src; do
    P[$name]=$(timeout -k 10 $(t 300) bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; exit 1; }
done < build/lr.txt
echo "== built in $((SECONDS - T0)) s"
# A kernel that waits on an mbarrier phase that never completes hangs: every
# run has a timeout, and a variant that fails anything is dropped, not timed.
declare -A BAD
for v in lr lr8 lr2; do
    for c in "--rows 7 --cols 32769" "--rows 5 --cols 50257 --offset 3 --y-offset 3" "--rows 5 --cols 50257 --offset 1 --y-offset 2" \
             "--rows 1000 --cols 50257 --offset 3 --y-offset 3" "--rows 999 --cols 50257 --fill centered" \
             "--rows 700 --cols 65537 --offset 2 --y-offset 2" "--rows 600 --cols 65536 --fill shifted" \
             "--rows 333 --cols 128257 --offset 5 --y-offset 5" "--rows 500 --cols 151936 --offset 1 --y-offset 1 --fill shifted" \
             "--rows 300 --cols 163841 --offset 7 --y-offset 7" "--rows 2 --cols 262143 --offset 7 --y-offset 7" \
             "--rows 600 --cols 40000 --fill centered" "--rows 4 --cols 32775 --offset 6 --y-offset 6 --fill exact" \
             "--rows 3000 --cols 40001 --offset 4 --y-offset 4 --fill exact"; do
        before $((LIMIT - 20)) || { BAD[$v]=1; break; }
        r=$(timeout -k 3 $(t 15) "${P[$v]}" --check $c 2>&1 | tail -n 1); echo "  $v check [$c]: ${r:-timed out}"
        case "$r" in PASS*) ;; *) BAD[$v]=1; break;; esac   # one failure is enough
    done
done
for v in lr lr2; do
    [ -z "${BAD[$v]:-}" ] || continue
    tools="memcheck"; [ "$STAGE" = check ] || tools="memcheck racecheck synccheck initcheck"
    for t in $tools; do
        before 200 || break
        r=$(timeout -k 5 $(t 90) compute-sanitizer --tool $t --error-exitcode 9 "${P[$v]}" --check --rows 200 --cols 50257 --offset 3 --y-offset 3 2>&1 | tail -n 1)
        echo "  $v $t 200 x 50257 offset 3/3: ${r:-timed out}"
        case "$r" in *" 0 errors"*|*" 0 hazards"*) ;; *) BAD[$v]=1; break;; esac
    done
done
GOOD=""
for v in lr lr8 lr2; do [ -n "${BAD[$v]:-}" ] || GOOD="$GOOD $v"; done
echo "== checked at $((SECONDS - T0)) s (passing:${GOOD:- none})"
[ -n "$GOOD" ] || exit 1
[ "$STAGE" != check ] || { echo "== stage check done"; exit 0; }
for v in $GOOD; do
    before 320 || break
    case $v in lr|lr2) timeout -k 5 $(t 150) bash tools/grade_source.sh build/wip/$v/rows.cu 2>&1 | tail -n 2;; esac
done
echo "== graded at $((SECONDS - T0)) s"
for shape in "--rows 1024 --cols 40000" "--rows 2670 --cols 50257" "--rows 4096 --cols 50257" "--rows 256 --cols 65536" \
             "--rows 2048 --cols 65536" "--rows 1024 --cols 100000" "--rows 512 --cols 128256" "--rows 883 --cols 151936"; do
    before 520 || break
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step25_bf16_packed/run $(for v in $GOOD; do echo "${P[$v]}"; done); do
            s=$(timeout -k 3 $(t 60) "$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__cluster_dim_x
for v in $GOOD; do
    before 480 || break
    echo "  ncu $v 2670 x 50257:"
    timeout -k 5 $(t 60) ncu --clock-control none -k regex:layernorm --metrics $M "${P[$v]}" --rows 2670 --cols 50257 --reps 1 --warmup 0 --no-verify 2>&1 \
        | grep -E "^\s+(gpu__|dram__|lts__|sm__|launch__)" | sed 's/^/    /'
done
echo "== done at $((SECONDS - T0)) s"
) > $OUT/lr.log 2>&1
tail -n 50 $OUT/lr.log | cut -c1-220
