#!/usr/bin/env bash
# cli_tests.sh: what works without a GPU: flags and exit codes of every built
# program, the no-device error, `make stepK`, `make diff` and `make new`.
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
                "--warmup x" "--fill nope" "--offset 4" "--seed -1" "--bogus" "--csv"; do
        # shellcheck disable=SC2086
        expect_one_line 2 "$p" $args
    done
done

# Without a GPU the programs must say so and exit 3; with one, this is skipped.
probe=$(baseline_cub/run --check -n 1 2>&1 >/dev/null); rc=$?
if [ $rc -eq 3 ] && [[ $probe == *"no CUDA device"* ]]; then
    for p in $programs; do
        expect_one_line 3 "$p" -n 1000
        expect 3 "no CUDA device" "$p" --check
    done
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

# make diff: the lesson of a step, and clear errors.
expect 0 "+    float sum = (i < n) ? g_in[i] : 0.0f;" make -s diff STEP=3
expect 0 "-    for (unsigned int s = 1; s < blockDim.x; s *= 2) {" make -s diff STEP=2
expect 0 "starting point" make -s diff STEP=0
expect 2 "no step 99" bash tools/step.sh diff 99
expect 2 "usage" make -s diff

# make new: scaffold a student's step in a scratch copy, build it, run --help,
# see `make diff` and the GPU suite's program list pick it up, then drop it.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r Makefile README.md common baseline_cub plots tools tests step[0-9]*_* "$scratch"/ 2>/dev/null
rm -f "$scratch"/step*/run "$scratch"/step*/run-racy
(
    cd "$scratch" || exit 1
    expect 0 "created step9_mine" make -s new NAME=step9_mine
    expect 2 "already exists" make -s new NAME=step9_mine
    expect 2 "must look like" make -s new NAME=Step9
    expect 2 "step 3 exists already" make -s new NAME=step3_again
    [ "$(head -c 18 step9_mine/reduce.cu)" = "// step9_mine: say" ] && ok || bad "new step's first line"
    expect 0 "" make -s step9
    expect 0 "usage:" ./step9/run --help
    expect 0 "step9_mine/reduce.cu" make -s diff STEP=9
    grep -q "BEGIN measured" step9_mine/README.md && ok || bad "new step README has no markers"
    # make plot from the committed results, in the scratch copy: the new step
    # gets its generated diff, and the README tables are rewritten in place.
    expect 0 "wrote" make -s plot
    grep -q '^+// step9_mine: say your one change' step9_mine/README.md && ok || bad "make plot: no diff block for step9_mine"
    # make ARCH=... picks the target; make clean removes what make built.
    make -n ARCH=sm_80 step0_naive/run | grep -q -- "-arch=sm_80" && ok || bad "make ARCH=sm_80 ignored"
    expect 0 "" make -s clean
    [ ! -e build ] && [ ! -e step9_mine/run ] && [ ! -e step9 ] && ok || bad "make clean left build outputs"
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
