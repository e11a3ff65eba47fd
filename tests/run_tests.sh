#!/usr/bin/env bash
# run_tests.sh: every suite, then (where committed results measured an earlier
# version of the code) one "stale: ..." line, then one total line "N passed,
# N failed, N skipped", followed by the skips counted by cause.
#
# Suites run TEST_JOBS at a time (default: the CPU count), each into a log of
# its own. A suite that passes prints only its result line, "name: N passed,
# N failed[, N skipped]", with its time; one that fails prints its whole log
# first. V=1 runs them one at a time and streams every suite's output.
# A suite that ends without a result line (a crash) counts as one failure.
# SUITES="editions cli" runs only those (the names are the first column below).
#
# Skips: every suite prints "skipped: CAUSE[: detail]" for each test it skips
# (tests/counting.py for the Python suites), and the total line goes on with
# them by cause: "5 skipped; 3 skipped: no cuobjdump; 1 skipped: no nccl.h;
# 1 skipped: no CUDA device, so no kernel ran: ...".
# Where the GPU suite skipped itself (no CUDA device), that cause says that no
# kernel ran, so that CI's green run cannot pass for a GPU check. The counts
# stay first, in the same words, for whatever reads them.
set -u
cd "$(dirname "$0")/.."
PLOT_PYTHON=${PLOT_PYTHON:-python3}
PYTHON=${PYTHON:-python3}
V=${V:-}
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ -n "$V" ] && [ "$V" != 0 ] && jobs=1 || V=
# Measured on two cores with every program built (the Makefile passes its own).
TEST_SECONDS=${TEST_SECONDS:-102}
# python3 as the interpreter it names: a version manager's shim first in
# PATH (pyenv's) costs a tenth of a second on each of the suites' many calls.
python_bin=$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null)
[ -x "$python_bin/python3" ] && PATH="$python_bin:$PATH"
# The Python suites' output streams instead of arriving at their end. Their
# hundreds of Python processes keep compiled modules under build/pycache (not
# in __pycache__ folders beside the sources, which another suite may be
# looking at), rather than compiling every module at every start.
export PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX="$PWD/build/pycache"
unset PYTHONDONTWRITEBYTECODE
# The suites run make themselves: none inherits `make -j`'s jobserver (whose
# descriptors they do not get: make warns) or the flags of the make running this.
unset MAKEFLAGS MFLAGS MAKELEVEL

# name | label | command (words; $PYTHON and $PLOT_PYTHON expanded when run).
# The longest first, so that two cores finish together (as a built make test
# measures them on two cores; the GPU suite, the longest where it runs, first).
SUITE_TABLE='
gpu|GPU suite: the grader on every program and broken fixture|$PYTHON tests/gpu_suite.py
cli|command line, make stepK, make diff, make new, the homework flow|bash tests/cli_tests.sh
bench|tools/bench.py: programs, rounds, files, part 2 beside PyTorch, --only and --run-id|$PYTHON tests/test_bench.py
make_targets|make bench, make profile-all, make plot and make publish over the fake programs|env PLOT_PYTHON=$PLOT_PYTHON $PYTHON tests/test_make_targets.py
patterns|access-pattern model against the counters|$PLOT_PYTHON tests/test_patterns.py
plot|charts (tools/plot.py, matplotlib)|$PLOT_PYTHON tests/test_plot.py
claims|docs against the committed reference results|$PYTHON tests/test_claims.py
grade|grader decisions: GPU work, speed targets, the class table and chart|$PLOT_PYTHON tests/test_grade.py
accuracy|accuracy lesson: script, chart, ACCURACY.md block, float math, Kahan SASS, the bf16 stall|$PLOT_PYTHON tests/test_accuracy.py
docs|README blocks (tools/docs.py)|$PYTHON tests/test_docs.py
steps|the step list, the folder of step K and the step before it (tools/steps.py)|$PYTHON tests/test_steps.py
unit|unit tests of the harness (C)|build/unit_tests
profile|tools/profile.py: the ncu metrics, tables and files|$PYTHON tests/test_profile.py
multigpu|multigpu: program, CSV schema, charts, device script|$PLOT_PYTHON tests/test_multigpu.py
fakes|the fake programs, ncu and PyTorch (tests/fakes.py) against the harness|$PYTHON tests/test_fakes.py
verify|tools/verify.py (make verify): profile and bench of the programs named|$PYTHON tests/test_verify.py
publish|make publish: what it copies into plots/reference, what it refuses (tools/publish.py)|$PYTHON tests/test_publish.py
editions|the English and Chinese editions in step|$PYTHON tests/test_editions.py
schema|CSV schema and step names (tools/schema.py)|$PYTHON tests/test_schema.py
tool_main|how the tools end main(): one line and an exit code (tools/cli.py)|$PYTHON tests/test_cli.py
grade_report|grader reports: JUnit XML and Gradescope results.json|$PYTHON tests/test_grade_report.py
multigpu_unit|multigpu: shards and options (C)|build/multigpu_tests
'

names=() labels=() commands=()
while IFS='|' read -r name label command; do
    [ -n "$name" ] || continue
    if [ -n "${SUITES:-}" ] && [[ " $SUITES " != *" $name "* ]]; then continue; fi
    names+=("$name"); labels+=("$label"); commands+=("$command")
done <<< "$SUITE_TABLE"
if [ -n "${SUITES:-}" ] && [ ${#names[@]} -eq 0 ]; then
    echo "tests: SUITES='$SUITES' names no suite; the suites are:" \
         "$(echo "$SUITE_TABLE" | cut -d'|' -f1 | xargs)"
    exit 2
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
started=$SECONDS
echo "tests: ${#names[@]} suites, $jobs at a time (about $TEST_SECONDS s on two cores);" \
     "a suite's output is shown when it fails (V=1: always)"

run_suite() {   # index: runs suite k into its log, then writes k.done
    local k=$1 t0=$SECONDS command
    command=${commands[$k]//\$PLOT_PYTHON/$PLOT_PYTHON}
    command=${command//\$PYTHON/$PYTHON}
    if [ -n "$V" ]; then
        echo "== ${labels[$k]}"
        # shellcheck disable=SC2086
        $command 2>&1 | tee "$logs/$k.log"
    else
        # shellcheck disable=SC2086
        $command > "$logs/$k.log" 2>&1 < /dev/null
    fi
    # Renamed into place: the loop below never reads a half-written file.
    echo "$((SECONDS - t0))" > "$logs/$k.secs" && mv "$logs/$k.secs" "$logs/$k.done"
}

P=0 F=0 S=0
report() {   # index: the suite's result line (and its log if it failed)
    local k=$1 out secs p f s
    secs=$(cat "$logs/$k.done")
    out=$(tail -n 1 "$logs/$k.log")
    grep -E '^(gpu: )?skipped: ' "$logs/$k.log" | sed -E 's/^(gpu: )?skipped: //' >> "$logs/skips"
    if [[ $out =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[4]:-0}
        # Shown under the name SUITES= takes, not the suite's own label ("plots").
        out="${names[$k]}: ${BASH_REMATCH[0]}"
    else
        p=0 f=1 s=0; out="${names[$k]}: ended without a result line"
    fi
    P=$((P + p)) F=$((F + f)) S=$((S + s))
    if [ "$f" -ne 0 ] && [ -z "$V" ]; then
        echo "== ${labels[$k]}: its output"
        cat "$logs/$k.log"
    fi
    echo "$out ($secs s)"
}

next=0 running=() 
while [ $next -lt ${#names[@]} ] || [ ${#running[@]} -gt 0 ]; do
    while [ $next -lt ${#names[@]} ] && [ ${#running[@]} -lt "$jobs" ]; do
        run_suite $next &
        running+=("$next"); next=$((next + 1))
    done
    wait -n 2>/dev/null || true
    still=()
    for k in "${running[@]}"; do
        if [ -f "$logs/$k.done" ]; then report "$k"; else still+=("$k"); fi
    done
    running=("${still[@]}")
done
wait

# The skips by cause (the text before a reason's first colon), most frequent
# first; no CUDA device last, with what it means.
causes=""
if [ -s "$logs/skips" ]; then
    causes=$(sed -E 's/ \([^()]*\)$//; s/:.*//' "$logs/skips" | sort | uniq -c | sort -k1,1nr -k2 |
             awk '{ count = $1; sub(/^ *[0-9]+ /, "")
                    if ($0 == "no CUDA device") gpu = count; else printf "; %d skipped: %s", count, $0 }
                  END { if (gpu) printf "; %d skipped: no CUDA device, so no kernel ran: the GPU suite " \
                                        "(every program graded, every broken fixture failed) needs a GPU: " \
                                        "make test on a machine with one, or make check STEP=K there", gpu }')
fi
counted=$(cat "$logs/skips" 2>/dev/null | wc -l)
[ "$counted" -eq "$S" ] || causes="$causes; $((S - counted)) skipped: their suite gave no cause"

echo "tests: ${#names[@]} suites in $((SECONDS - started)) s"
# Committed results that measured an earlier version of the code: not a
# failure (the docs and charts mark them), one line naming them and the
# command that measures them again (tools/stale.py).
[ ! -f tools/stale.py ] || $PYTHON -S tools/stale.py --line 2>&1 | head -n 1
echo "$P passed, $F failed, $S skipped$causes"
[ $F -eq 0 ]
