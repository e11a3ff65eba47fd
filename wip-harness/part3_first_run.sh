#!/bin/bash
# Part 3's first device call (about 5 minutes; not part of the tutorial): the
# drafts in back/ on a real GPU for the first time. Log: $OUT/part3.log.
#   GIT_REV=<rev as a literal from the local checkout> bash wip-harness/part3_first_run.sh
# (the device copy's git HEAD is not the local one: never $(git rev-parse) there).
# 1. build; each program's --check at three shapes (values, then determinism:
#    steps 0-1 are expected to FAIL determinism at many rows, 2-3 to pass);
# 2. compute-sanitizer memcheck, racecheck and synccheck on each at a small shape
#    (step 3's fence and ticket: racecheck sees shared memory only; the
#    determinism check over many runs is what shows a missing fence);
# 3. one timed run each at issue 41's shapes, then the bench smoke test with
#    PyTorch (eager and compiled) into plots/results (not the reference).
set -u
L=${OUT:-build}/part3.log; exec > "$L" 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=${GIT_REV:?}"
T0=$SECONDS; el() { echo "   [t+$((SECONDS - T0)) s]"; }
mkdir -p build
progs=$(ls -d back/step[0-9]*_*/ back/baseline_*/ | sed 's|/$|/run|')
make -s -j16 $progs > build/make-back.log 2>&1 || { tail -n 20 build/make-back.log; exit 1; }
echo "== built: $progs"; el
# Part 3's fixtures: make test builds none without a GPU, so this is where a
# mutant that no longer compiles first shows.
bm=$(sed -n 's/^\([a-z0-9_]*\) *| *back\/.*/build\/mutants\/back\/\1\/run/p' tests/broken/mutants.txt)
make -s -j16 $bm > build/make-back-mutants.log 2>&1; echo "== part 3 mutants built: rc=$?"; tail -n 5 build/make-back-mutants.log
for p in $progs; do
    for shape in "--rows 1 --cols 1" "--rows 4097 --cols 1000" "--rows 32768 --cols 1024"; do
        echo "== $p --check $shape"; timeout 60 $p --check $shape 2>&1 | tail -n 4
    done
done; el
for p in $progs; do
    for tool in memcheck racecheck synccheck; do
        echo "== $tool $p --rows 67 --cols 515"
        timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $p --check --rows 67 --cols 515 2>&1 | tail -n 3
    done
done; el
for p in $progs; do
    for shape in "--rows 32768 --cols 1024" "--rows 8192 --cols 4096"; do
        echo "== $p $shape"; timeout 60 $p $shape 2>&1 | tail -n 3
    done
done; el
timeout $((560 - (SECONDS - T0))) python3 tools/bench.py --only back --quick \
    --torch-python /opt/torch/.venv/bin/python > "${OUT:-build}/bench-back.log" 2>&1
echo "bench rc=$?"; tail -n 15 "${OUT:-build}/bench-back.log"; el
cp plots/results/*-back.csv "${OUT:-build}/" 2>/dev/null
echo "== done"; el
