#!/usr/bin/env bash
# run_tests.sh: every suite, then one total line "N passed, N failed, N skipped".
# Each suite ends with its own "name: N passed, N failed[, N skipped]" line; a
# suite that ends without one (a crash) counts as one failure. Each suite's
# output streams as it runs, and a line with its time follows it.
#
# Where the GPU suite skipped itself (no CUDA device), the total line goes on
# after the counts, ": no CUDA device here, so no kernel ran: ...", so that
# CI's green run cannot pass for a GPU check. The counts stay first, in the
# same words, for whatever reads them.
set -u
cd "$(dirname "$0")/.."
PLOT_PYTHON=${PLOT_PYTHON:-python3}
PYTHON=${PYTHON:-python3}
# Measured on two cores with every program built (the Makefile passes its own):
# the suites alone took 173 to 179 s.
TEST_MINUTES=${TEST_MINUTES:-3}
# The Python suites' output streams instead of arriving at their end.
export PYTHONUNBUFFERED=1
# The suites run make themselves: none inherits `make -j`'s jobserver (whose
# descriptors they do not get: make warns) or the flags of the make running this.
unset MAKEFLAGS MFLAGS MAKELEVEL
P=0 F=0 S=0
gpu_skipped=""
started=$SECONDS

echo "tests: every suite, about $TEST_MINUTES min on two cores (the command-line suite, the longest," \
     "builds programs); each suite's time is printed as it ends"
suites=0

run_part() {   # label, command...
    local label=$1; shift
    echo "== $label"
    local log out t0=$SECONDS
    suites=$((suites + 1))
    log=$(mktemp)
    "$@" 2>&1 | tee "$log"
    out=$(tail -n 1 "$log")
    # The GPU suite's own line when it found no device: "gpu: skipped: no CUDA device: ...".
    grep -q '^gpu: skipped: ' "$log" && gpu_skipped=1
    rm -f "$log"
    if [[ $out =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
        P=$((P + BASH_REMATCH[1])); F=$((F + BASH_REMATCH[2])); S=$((S + ${BASH_REMATCH[4]:-0}))
    else
        F=$((F + 1)); echo "FAIL $label ended without a result line"
    fi
    echo "-- $((SECONDS - t0)) s: $label (${SECONDS}s since the start)"
}

run_part "unit tests of the harness (C)" build/unit_tests
run_part "multigpu: shards and options (C)" build/multigpu_tests
run_part "multigpu: program, CSV schema, charts, device script" "$PLOT_PYTHON" tests/test_multigpu.py
run_part "command line, make stepK, make diff, make new" bash tests/cli_tests.sh
run_part "CSV schema and step names (tools/schema.py)" "$PYTHON" tests/test_schema.py
run_part "charts (tools/plot.py, matplotlib)" "$PLOT_PYTHON" tests/test_plot.py
run_part "README blocks (tools/docs.py)" "$PYTHON" tests/test_docs.py
run_part "bench and profile scripts, make bench and profile-all" env PLOT_PYTHON="$PLOT_PYTHON" "$PYTHON" tests/test_scripts.py
run_part "accuracy lesson: script, chart, ACCURACY.md block, float math, Kahan SASS" "$PLOT_PYTHON" tests/test_accuracy.py
run_part "access-pattern model against the counters" "$PLOT_PYTHON" tests/test_patterns.py
run_part "the English and Chinese editions in step" "$PYTHON" tests/test_editions.py
run_part "docs against the committed reference results" "$PYTHON" tests/test_claims.py
run_part "grader reports: JUnit XML and Gradescope results.json" "$PYTHON" tests/test_grade_report.py
run_part "GPU suite: the grader on every program and broken fixture" "$PYTHON" tests/gpu_suite.py

echo "tests: $suites suites in $((SECONDS - started)) s"
total="$P passed, $F failed, $S skipped"
if [ -n "$gpu_skipped" ]; then
    total="$total: no CUDA device here, so no kernel ran: the GPU suite (every program graded,"
    total="$total every broken fixture failed) needs a GPU: make test on a machine with one,"
    total="$total or make check STEP=K there"
fi
echo "$total"
[ $F -eq 0 ]
