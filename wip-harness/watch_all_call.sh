#!/usr/bin/env bash
# The GPU check the watch in every check (branch watch-all) needs before it
# lands. First what the watch costs (REDUCE_GPU_WORK_TIMES=1: each run prints
# one "gpu-work times (us):" line, the stages of the watch's start, its time
# in the calls' wrappers and at exit; unwatched, when the first call came):
# one --check at n = 1 (a process's start), step 3 at its default size (a
# timed run), a 40-check batch, each with and without REDUCE_GPU_WORK, wall
# times beside them. Then the grader on honest programs (no false alarm
# anywhere: steps 3 and 9, CUB, rows/7, rows/25, rows/cub, back/2, back/14,
# with `time`) and on the cheats (host_sum*, host_sum_keyed, host_rows*,
# back's host_back: each caught by gpu-work).
# Land it (fast-forward main) only if every honest program exits 0 (back/2
# and back/14 too), every cheat is caught by gpu-work (host_sum_keyed and
# back's host_back too), and the grading times stay near docs/lab's (step 3:
# 15 s full); a watched run's wall time should be within a second or so of
# its unwatched twin's (session 25's first design: 4.4 s against 0.4 s at
# n = 1, a 40-check batch killed at 90 s against 0.4 s).
# Every stage runs under a timeout inside LIMIT, so the logs always come back.
#   bash wip-harness/watch_all_call.sh GIT_REV
# Logs ($OUT, 4 files): watch.log (all of it), costs.log (the cost runs' own
# lines), grades.log (each grading's whole output), suite.log (the GPU suite's).
set -u
export GIT_REV=${1:?rev}
LIMIT=${LIMIT:-550}
T0=$SECONDS
O=${OUT:-.}
t() { local left=$((LIMIT - (SECONDS - T0))); [ $left -gt 3 ] || left=3; echo $(($1 < left ? $1 : left)); }
secs() { python3 -c "print(round($2 - $1, 2))"; }
(
echo "# $(date -u +%FT%TZ) $(timeout -k 5 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
echo "# CUPTI: $(ls /usr/local/cuda/lib64/libcupti.so.* 2>/dev/null | head -n 3 | xargs)"
H="host_sum host_sum_launch host_sum_mapped host_sum_registered host_sum_keyed"
R="host_rows host_rows_managed host_rows_pinned host_rows_advised"
B="host_back"
mkdir -p build && timeout -k 10 $(t 240) make -s -j16 \
    step3_idle/run build/monitored/step3_idle/run build/monitored/step9_singlepass/run build/monitored/baseline_cub/run \
    build/monitored/rows/step7_wide/run build/monitored/rows/step25_bf16_packed/run build/monitored/rows/baseline_cub/run \
    build/monitored/back/step2_partials/run build/monitored/back/step14_bulk/run \
    $(for f in $B; do echo tests/broken/back/$f/run build/monitored/tests/broken/back/$f/run; done) \
    $(for f in $H; do echo tests/broken/$f/run build/monitored/tests/broken/$f/run; done) \
    $(for f in $R; do echo tests/broken/rows/$f/run build/monitored/tests/broken/rows/$f/run; done) \
    > build/make.log 2>&1 || { tail -n 30 build/make.log; cp build/make.log "$O/make.log"; exit 1; }
echo "== built in $((SECONDS - T0)) s"

# The watch's costs. Each run: its wall time, what it printed last, the
# watch's line, and its times line (stderr); costs.log gets the times lines
# whole. cost LABEL TIMEOUT ARGS...: one unwatched run, then one watched.
P=build/monitored/step3_idle/run
cost() {
    local label=$1 limit=$2; shift 2
    for w in "" "$PWD/build/w.txt"; do
        local state=off; [ -z "$w" ] || state=on
        rm -f build/w.txt
        local s=$(date +%s.%N)
        REDUCE_GPU_WORK=$w REDUCE_GPU_WORK_TIMES=1 timeout -k 3 $(t $limit) "$@" > build/out.txt 2> build/err.txt
        local rc=$? e=$(date +%s.%N)
        echo "  $label, watch=$state: exit $rc, $(secs $s $e) s wall," \
             "$(grep -c '^PASS' build/out.txt) PASS lines; last: $(tail -n 1 build/out.txt | cut -c1-100)"
        [ -z "$w" ] || echo "    line: $(cat build/w.txt 2>/dev/null)"
        local times; times=$(grep -m 1 '^gpu-work times' build/err.txt)
        echo "    ${times:-no times line (killed, or the program never ran)}"
        grep -v '^gpu-work times' build/err.txt | head -n 3 | sed 's/^/    stderr: /'
        echo "$label watch=$state rc=$rc wall_s=$(secs $s $e) $times" >> "$O/costs.log"
    done
}
for k in $(seq 40); do echo "-n $((k * 1000 + 7)) --fill exact --offset $((k % 4))"; done > build/batch.txt
cost "one --check -n 1" 20 $P --check -n 1
cost "one --check -n 1 (again)" 20 $P --check -n 1
cost "step 3 at its default size (a timed run)" 60 $P
cost "a 40-check batch" 60 $P --checks build/batch.txt
cost "part 2: rows/7 --check" 30 build/monitored/rows/step7_wide/run --check
echo "== costs at $((SECONDS - T0)) s"

for p in build/monitored/step3_idle/run build/monitored/rows/step7_wide/run build/monitored/step9_singlepass/run \
         build/monitored/baseline_cub/run build/monitored/rows/step25_bf16_packed/run build/monitored/rows/baseline_cub/run \
         build/monitored/back/step2_partials/run build/monitored/back/step14_bulk/run; do
    s=$SECONDS
    timeout -k 10 $(t 120) python3 tools/grade.py --quick --no-sanitizer "$p" > build/g.txt 2>&1; rc=$?
    echo "  $p: exit $rc in $((SECONDS - s)) s: $(tail -n 1 build/g.txt)"
    [ $rc = 0 ] || grep -m 5 "gpu-work\|FAIL" build/g.txt
    { echo "== $p: exit $rc in $((SECONDS - s)) s"; cat build/g.txt; } >> "$O/grades.log"
done
echo "== honest programs at $((SECONDS - T0)) s"
s=$SECONDS
GPU_ONLY=$(echo $H $R $B | tr ' ' ','),step3_idle timeout -k 10 $(t 300) python3 -u tests/gpu_suite.py > "$O/suite.log" 2>&1
echo "  the GPU suite: exit $?"
grep -v "^ok  *check\|^  " "$O/suite.log" | tail -n 30
echo "== the cheats (and step 3 in full) in $((SECONDS - s)) s; total $((SECONDS - T0)) s"
) 2>&1 | tee "$O/watch.log" | tail -n 80
