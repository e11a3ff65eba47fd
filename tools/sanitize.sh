#!/usr/bin/env bash
# sanitize.sh N PROGRAM...: compute-sanitizer over every program at n = N
# (odd, so every step's tail code runs), then the racecheck demo on step 4
# built without __syncwarp(). Logs go to $SANITIZE_LOGS (default build/sanitize).
set -u
n=$1; shift
logs=${SANITIZE_LOGS:-build/sanitize}
mkdir -p "$logs"

cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$cs" ]; then
    echo "sanitize: compute-sanitizer not found (it ships with the CUDA toolkit: add its bin/ to PATH)" >&2
    exit 3
fi
probe=$("$1" --check -n 1 2>&1 >/dev/null)
if [ $? -eq 3 ] && [[ $probe == *"no CUDA device"* ]]; then
    echo "sanitize: no CUDA device: ${probe#error: }" >&2
    exit 3
fi

passed=0 failed=0
for prog in "$@"; do
    name=$(basename "$(dirname "$prog")")
    for tool in memcheck racecheck synccheck; do
        log="$logs/$name-$tool.log"
        # --error-exitcode turns any report into a failure; the run must also verify.
        "$cs" --tool "$tool" --error-exitcode 99 "$prog" --check -n "$n" --fill onehot >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            passed=$((passed + 1)); printf '  ok    %-20s %s\n' "$name" "$tool"
        else
            failed=$((failed + 1)); printf '  FAIL  %-20s %s (exit %d, see %s)\n' "$name" "$tool" "$rc" "$log"
        fi
    done
done

# The demo: the same warp code without __syncwarp() must be reported.
racy=step4_warp/run-racy
if [ -x "$racy" ]; then
    log="$logs/step4_warp-racy-racecheck.log"
    "$cs" --tool racecheck --error-exitcode 99 "$racy" --check -n "$n" --fill onehot >"$log" 2>&1
    rc=$?
    if [ $rc -eq 99 ]; then
        passed=$((passed + 1))
        echo "  ok    step4 without __syncwarp(): racecheck reports the race, as it should"
        grep -m 3 -E 'hazard|Race|race' "$log" | sed 's/^/        /'
    else
        failed=$((failed + 1))
        echo "  FAIL  step4 without __syncwarp(): racecheck exit $rc, expected a report (see $log)"
    fi
fi
echo "sanitize: $passed passed, $failed failed"
[ $failed -eq 0 ]
