#!/usr/bin/env bash
# determinism.sh OUT_DIR: does each program give the same bits every run?
# Every step, CUB and step 9's atomicAdd variant (extras/atomic_step9, the
# demo that is not a step) sum the same input 100 times at two sizes
# (--same-input: a timed run otherwise changes its input every repetition);
# the CSV's `distinct` column counts the different sums (1 = bit-identical).
# The atomic build is expected to give several, and its runs exit 1 (the
# harness fails a sum that moves): that is the point, so it is not an error
# here. Any other program giving more than one sum is. The rows go to
# OUT_DIR/<gpu>-determinism.csv; the scratch file beside it never outlives
# the script. Exit status: 0 done, 1 a program failed or gave different sums,
# 2 a program not built or no row written, 3 no CUDA device (one line, at the
# first program).
set -u
dir=${1:?usage: determinism.sh OUT_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$dir"
out=$dir/.determinism.csv.tmp
reps=${DETERMINISM_REPS:-100}
# Part 1's steps in step order (tools/steps.py, the one step list), then CUB and the atomic build.
programs=$(python3 tools/steps.py list | sed 's|$|/run|')
programs="$programs baseline_cub/run extras/atomic_step9/run"
rm -f "$out"
# Whatever happens below, the scratch CSV does not outlive this script.
trap 'rm -f "$out" "$out.err"' EXIT
status=0
for p in $programs; do
    [ -x "$p" ] || { echo "determinism: $p is not built (make $p)" >&2; exit 2; }
    for n in 1048576 33554432; do
        rows_before=$(cat "$out" 2>/dev/null | wc -l)
        "$p" -n "$n" --reps "$reps" --warmup 2 --same-input --csv "$out" > /dev/null 2> "$out.err"
        rc=$?
        # No device (or a device that failed): no program will do better,
        # so one line and stop, with the program's own exit code.
        if [ $rc -eq 3 ]; then
            echo "determinism: $p: $(sed 's/^error: //' "$out.err" | head -n 1)" >&2
            exit 3
        fi
        # The `distinct` column of the row this run wrote (found by its name), if it wrote one.
        distinct=
        if [ "$(cat "$out" 2>/dev/null | wc -l)" -gt "$rows_before" ]; then
            distinct=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "distinct") c = i }
                                END { if (c) print $c }' "$out")
        fi
        if [ -n "$distinct" ]; then
            printf 'determinism: %-32s n=%-9s %s distinct sum(s) in %s runs\n' "$p" "$n" "$distinct" "$reps"
        else
            printf 'determinism: %-32s n=%-9s no row written (exit %s)\n' "$p" "$n" "$rc"
        fi
        if [ "$p" != extras/atomic_step9/run ] && [ $rc -ne 0 ]; then
            echo "determinism: $p -n $n exited $rc" >&2; status=1
        fi
    done
done
# The file is named for the GPU of its rows; with no row, there is nothing to
# file (every run failed before writing one), and that is said in one line.
nothing="determinism: no run wrote a row: nothing to file in $dir"
[ -s "$out" ] || { echo "$nothing" >&2; exit 2; }
slug=$(python3 tools/schema.py slug --csv "$out" 2>/dev/null) || { echo "$nothing" >&2; exit 2; }
mv -f "$out" "$dir/$slug-determinism.csv"
echo "determinism: -> $dir/$slug-determinism.csv"
exit $status
