#!/usr/bin/env bash
# determinism.sh OUT_DIR: does each program give the same bits every run?
# Every step, CUB and step 9's atomicAdd variant (extras/atomic_step9, the
# demo that is not a step) sum the same input 100 times at two sizes;
# the CSV's `distinct` column counts the different sums (1 = bit-identical).
# The atomic build is expected to give several, and its runs exit 1 (the
# harness fails a sum that moves): that is the point, so it is not an error
# here. Any other program giving more than one sum is. The rows go to
# OUT_DIR/<gpu>-determinism.csv.
set -u
dir=${1:?usage: determinism.sh OUT_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$dir"
out=$dir/.determinism.csv.tmp
reps=${DETERMINISM_REPS:-100}
programs=$(ls -d step[0-9]*_*/ 2>/dev/null | sort -V | sed 's|/$|/run|')
programs="$programs baseline_cub/run extras/atomic_step9/run"
rm -f "$out"
status=0
for p in $programs; do
    [ -x "$p" ] || { echo "determinism: $p is not built (make $p)" >&2; exit 2; }
    for n in 1048576 33554432; do
        "$p" -n "$n" --reps "$reps" --warmup 2 --csv "$out" > /dev/null 2>&1
        rc=$?
        distinct=$(tail -n 1 "$out" | awk -F, 'NR == 1 { print $28 }')
        printf 'determinism: %-32s n=%-9s %s distinct sum(s) in %s runs\n' "$p" "$n" "$distinct" "$reps"
        if [ "$p" != extras/atomic_step9/run ] && [ $rc -ne 0 ]; then
            echo "determinism: $p -n $n exited $rc" >&2; status=1
        fi
    done
done
slug=$(python3 -c 'import csv, sys; sys.path.insert(0, "tools"); import schema
print(schema.gpu_slug(next(csv.DictReader(open(sys.argv[1])))["gpu"]))' "$out") || exit 2
mv -f "$out" "$dir/$slug-determinism.csv"
echo "determinism: -> $dir/$slug-determinism.csv"
exit $status
