#!/usr/bin/env bash
# mutate.sh NAME OUT: writes OUT, the program named for NAME in
# tests/broken/mutants.txt (its reduce.cu, rows.cu in part 2, back.cu in part 3) with that
# line's sed script applied. Fails (exit 2) if NAME is not listed or if the
# script no longer changes the source: a mutant identical to its step would
# "pass" the grader and prove nothing.
set -u
name=${1:?usage: mutate.sh NAME OUT}; out=${2:?usage: mutate.sh NAME OUT}
cd "$(dirname "$0")/.."
line=$(grep -E "^$name +\|" tests/broken/mutants.txt | head -n 1)
[ -n "$line" ] || { echo "mutate: no mutant '$name' in tests/broken/mutants.txt" >&2; exit 2; }
step=$(echo "$line" | cut -d'|' -f2 | tr -d ' ')
script=$(echo "$line" | cut -d'|' -f4- | sed 's/^ *//')
src=$step/reduce.cu
[ -f "$src" ] || src=$step/rows.cu
[ -f "$src" ] || src=$step/back.cu
[ -f "$src" ] || { echo "mutate: $name: no $step/reduce.cu, rows.cu or back.cu" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
{
    echo "// MUTANT $name (tests/broken/mutants.txt): $step with one bug put in; the grader must fail it."
    sed -e "$script" "$src"
} > "$out.tmp" || { echo "mutate: $name: the sed script failed" >&2; rm -f "$out.tmp"; exit 2; }
if diff -q <(tail -n +2 "$out.tmp") "$src" >/dev/null; then
    echo "mutate: $name: the sed script no longer changes $src: update tests/broken/mutants.txt" >&2
    rm -f "$out.tmp"; exit 2
fi
mv -f "$out.tmp" "$out"
