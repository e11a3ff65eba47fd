#!/usr/bin/env bash
# cli_tests.sh: what works without a GPU: flags and exit codes of every built
# program, the no-device error, `make stepK`, `make diff`, `make new`,
# `make check`'s usage errors, the mutants, and rebuilds when ARCH changes.
# Ends with "cli: N passed, N failed[, N skipped]".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0

ok()   { passed=$((passed + 1)); }
bad()  { failed=$((failed + 1)); echo "FAIL $*"; }

# expect CODE TEXT CMD...: exit status CODE and TEXT somewhere in the output.
expect() {
    local code=$1 text=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" = "$code" ] && [[ $out == *"$text"* ]]; then ok
    else bad "$* -> exit $rc (want $code, '$text'): $(echo "$out" | head -n 2)"; fi
}

# expect_one_line CODE CMD...: exit CODE with exactly one line on stderr, "error: ...".
expect_one_line() {
    local code=$1; shift
    local err rc
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = "$code" ] && [ "$(echo "$err" | wc -l)" -eq 1 ] && [[ $err == error:* ]]; then ok
    else bad "$* -> exit $rc, stderr: $err"; fi
}

programs=$(ls -d step[0-9]*_*/run baseline_cub/run 2>/dev/null)
for p in $programs; do
    expect 0 "usage:" "$p" --help
    expect 0 "exit status" "$p" -h
    for args in "-n 0" "-n -5" "-n abc" "-n 2G" "-n 3000000000" "-n" "--reps 0" \
                "--warmup x" "--fill nope" "--offset 4" "--seed -1" "--bogus" "--csv" \
                "--at 3" "-n 5 --fill onehot --at 5" "--checks" "--csv /nonexistent-dir/x.csv"; do
        # shellcheck disable=SC2086
        expect_one_line 2 "$p" $args
    done
    # --version needs no GPU: the step, the hash of its GPU code, the revision.
    name=$(basename "$(dirname "$p")"); name=${name#baseline_}
    expect 0 "$name code_hash=" "$p" --version
    [ "$("$p" --version | sed -n 's/.*code_hash=\([0-9a-f]*\) .*/\1/p')" = \
      "$(python3 tools/code_hash.py "$(dirname "$p")/reduce.cu" common/flush.cu)" ] && ok \
        || bad "$p --version: its code_hash is not tools/code_hash.py's"
done

# Without a GPU the programs must say so and exit 3; with one, this is skipped.
probe=$(baseline_cub/run --check -n 1 2>&1 >/dev/null); rc=$?
if [ $rc -eq 3 ] && [[ $probe == *"no CUDA device"* ]]; then
    for p in $programs; do
        expect_one_line 3 "$p" -n 1000
        expect 3 "no CUDA device" "$p" --check
    done
    # The grader says so too, with its own exit code for it.
    expect 3 "no CUDA device" python3 tools/grade.py step3_idle/run
    expect 2 "no CUDA device" make -s check STEP=3   # make's own exit status for a failed recipe
else
    skipped=$((skipped + 1))
    echo "cli: a CUDA device is present: the no-device checks are skipped (the GPU suite runs instead)"
fi

# make stepK builds the program and the stepK link a newcomer types.
rm -f step3
expect 0 "" make -s step3
expect 0 "usage:" ./step3/run --help
[ "$(readlink step3)" = "step3_idle" ] && ok || bad "step3 is not a link to step3_idle"

# Tools that need a GPU or Nsight Compute fail with one clear line without them.
if ! command -v ncu >/dev/null && [ ! -x /usr/local/cuda/bin/ncu ] && ! ls /opt/nvidia/nsight-compute/*/ncu >/dev/null 2>&1; then
    expect 2 "ncu (Nsight Compute) not found" make -s profile STEP=3
    expect 2 "ncu (Nsight Compute) not found" make -s profile-all
else
    skipped=$((skipped + 1)); echo "cli: ncu is installed: the no-ncu checks are skipped"
fi
expect 2 "usage: make profile STEP=K" make -s profile
expect 2 "usage: make check STEP=K" make -s check
expect 2 "no step 99" make -s check STEP=99
expect 2 "not an executable" python3 tools/grade.py no/such/run
if ! command -v compute-sanitizer >/dev/null && [ ! -x /usr/local/cuda/bin/compute-sanitizer ]; then
    expect 2 "compute-sanitizer not found" make -s sanitize
else
    skipped=$((skipped + 1)); echo "cli: compute-sanitizer is installed: its no-tool check is skipped"
fi
expect 0 "make diff STEP=K" make -s help
# make ptxas needs only nvcc: every step's kernel reports its registers.
ptx=$(make -s ptxas 2>&1)
[ "$(echo "$ptx" | grep -c 'registers')" -ge 10 ] && [[ $ptx == *"== step8_vector"* ]] && ok \
    || bad "make ptxas: $(echo "$ptx" | tail -n 3)"

# make sass: loop lengths with cuobjdump, one clear line without it.
if command -v cuobjdump >/dev/null || [ -x "$(dirname "$(command -v nvcc)")/cuobjdump" ]; then
    expect 0 "sass: wrote" make -s sass SASS_OUT=build/sass.txt
    grep -q "^loop: .*, 28 instructions" build/sass.txt && ok || bad "make sass: no step 0 loop"
else
    expect 2 "cuobjdump not found" make -s sass SASS_OUT=build/sass.txt
fi

# The mutants: each sed script still changes its step (else the fixture would
# be the step itself, and "the grader fails it" would prove nothing).
expect 0 "" make -s mutants
for m in $(sed -n 's/^\([a-z0-9_]*\) *|.*/\1/p' tests/broken/mutants.txt); do
    [ -x "build/mutants/$m/run" ] && head -n 1 "build/mutants/$m/reduce.cu" | grep -q "^// MUTANT $m" \
        && ok || bad "mutant $m was not built"
done

# make diff: the lesson of a step, and clear errors.
expect 0 "+    float sum = (i < n) ? g_in[i] : 0.0f;" make -s diff STEP=3
expect 0 "+    // Release: this block's partial is visible" make -s diff STEP=9
expect 0 "-    for (unsigned int s = 1; s < blockDim.x; s *= 2) {" make -s diff STEP=2
expect 0 "starting point" make -s diff STEP=0
expect 2 "no step 99" bash tools/step.sh diff 99
expect 2 "usage" make -s diff

# make new: scaffold a student's step in a scratch copy (with the next free
# step number, and one more past a gap), build it, see make diff and the
# grader pick it up; a stale mutant stops the build; ARCH changes rebuild.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r Makefile README.md common baseline_cub plots tools tests step[0-9]*_* "$scratch"/ 2>/dev/null
rm -rf "$scratch"/step*/run "$scratch"/step*/run-* "$scratch"/tests/broken/*/run
last=$(ls -d step[0-9]*_*/ | sed 's/^step\([0-9]*\)_.*/\1/' | sort -n | tail -n 1)
next=$((last + 1)) gap=$((last + 3))
(
    cd "$scratch" || exit 1
    expect 0 "created step${next}_mine from step${last}_" make -s new NAME=step${next}_mine
    expect 2 "already exists" make -s new NAME=step${next}_mine
    expect 2 "must look like" make -s new NAME=Step9
    expect 2 "step 3 exists already" make -s new NAME=step3_again
    src=step${next}_mine/reduce.cu
    head -n 1 "$src" | grep -q "^// step${next}_mine: say your one change" && ok || bad "new step's first line"
    grep -q "^// Effect: not measured yet" "$src" && [ "$(grep -c '^// Effect:' "$src")" -eq 1 ] \
        && ok || bad "new step keeps the old step's Effect line"
    expect 0 "" make -s step${next}
    expect 0 "usage:" ./step${next}/run --help
    expect 0 "step${next}_mine/reduce.cu" make -s diff STEP=${next}
    grep -q "BEGIN measured" step${next}_mine/README.md && ok || bad "new step README has no markers"
    # A step number past a gap: diff against the nearest step below it.
    expect 0 "created step${gap}_far from step${next}_mine" make -s new NAME=step${gap}_far
    expect 0 "--- step${next}_mine/reduce.cu" make -s diff STEP=${gap}
    expect 0 "" make -s step${gap}_far/run
    # The suite's program list picks the new steps up.
    python3 -c "import sys; sys.path.insert(0, 'tests'); import gpu_suite as g; \
                sys.exit(0 if 'step${gap}_far/run' in g.step_programs() else 1)" && ok \
        || bad "the GPU suite does not grade step${gap}_far"
    # A mutant whose sed script no longer applies is an error, not a silent copy.
    echo "stale_one | step3_idle | exact | s|no such line|x|" >> tests/broken/mutants.txt
    expect 2 "no longer changes" bash tools/mutate.sh stale_one build/stale.cu
    # ARCH: a new value rebuilds, the same value does not.
    make -s step0_naive/run >/dev/null 2>&1
    expect 0 "-arch=sm_80" make ARCH=sm_80 step0_naive/run
    out=$(make ARCH=sm_80 step0_naive/run 2>&1)
    [[ $out != *nvcc* ]] && ok || bad "make ARCH=sm_80 rebuilt twice: $out"
    expect 0 "" make -s clean
    [ ! -e build ] && [ ! -e step${next}_mine/run ] && [ ! -e step${next} ] && ok \
        || bad "make clean left build outputs"
    echo "cli-sub: $passed passed, $failed failed"
) > "$scratch/log" 2>&1
cat "$scratch/log" | grep -v '^cli-sub:'
sub=$(grep '^cli-sub:' "$scratch/log")
[[ $sub =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]] || { bad "scaffold test did not finish"; }
passed=$(( ${BASH_REMATCH[1]:-$passed} ))
failed=$(( ${BASH_REMATCH[2]:-$failed} ))

line="cli: $passed passed, $failed failed"
[ $skipped -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ $failed -eq 0 ]
