#!/usr/bin/env bash
# tune.sh OUT.csv: rebuilds some steps with other values of their knobs and
# times each (rows appended to OUT.csv, step column = "stepK_slug-KNOB-value").
# The shipped values are the ones these runs chose; the variants never
# replace a step, they only live under build/tune/. Each program runs all
# its sizes in one process (--runs), so its CUDA context starts once.
#   TUNE_ONLY=regex     only the variants whose "step KNOB value" matches
#   TUNE_SIZES="n ..."  the sizes to time (default 2^25 and 2^28)
#   TUNE_BASE="dir ..." also time these shipped programs at the same sizes
set -u
out=${1:?usage: tune.sh OUT.csv}
cd "$(dirname "$0")/.."

variants=(
    "step0_naive BLOCK_SIZE 128"    "step0_naive BLOCK_SIZE 512"
    "step3_idle BLOCK_SIZE 128"     "step3_idle BLOCK_SIZE 512"
    "step5_unroll BLOCK_SIZE 128"   "step5_unroll BLOCK_SIZE 512"
    "step6_multi UNROLL 1"          "step6_multi UNROLL 8"
    "step6_multi BLOCK_SIZE 512"    "step6_multi MIN_PER_THREAD 1"
    "step7_shfl BLOCK_SIZE 128"     "step7_shfl BLOCK_SIZE 512"
    "step8_vector UNROLL 1"         "step8_vector UNROLL 2"
    "step8_vector UNROLL 8"         "step8_vector BLOCK_SIZE 128"
    "step8_vector BLOCK_SIZE 512"   "step8_vector MIN_PER_THREAD 2"
    "step9_singlepass MIN_PER_THREAD 4"  "step9_singlepass MIN_PER_THREAD 8"
    "step9_singlepass MIN_PER_THREAD 32" "step9_singlepass MIN_PER_THREAD 64"
    "step9_singlepass BLOCK_SIZE 512"    "step9_singlepass BLOCK_SIZE 1024"
    "step9_singlepass UNROLL 2"          "step9_singlepass UNROLL 8"
)
sizes=(${TUNE_SIZES:-33554432 268435456})
targets=()
for v in "${variants[@]}"; do
    [[ $v =~ ${TUNE_ONLY:-.} ]] || continue
    read -r step knob value <<< "$v"
    dir=build/tune/$step-$knob-$value
    mkdir -p "$dir"
    grep -q "^#define $knob " "$step/reduce.cu" || { echo "tune: $step has no #define $knob" >&2; exit 2; }
    sed "s/^#define $knob [0-9]*/#define $knob $value/" "$step/reduce.cu" > "$dir/reduce.cu.new"
    cmp -s "$dir/reduce.cu.new" "$dir/reduce.cu" && rm "$dir/reduce.cu.new" || mv "$dir/reduce.cu.new" "$dir/reduce.cu"
    targets+=("$dir/run")
done
for d in ${TUNE_BASE:-}; do targets+=("$d/run"); done
make --no-print-directory -s -j"$(nproc)" "${targets[@]}" || exit 2

rm -f "$out"
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for n in "${sizes[@]}"; do echo "-n $n"; done > "$runs"
for t in "${targets[@]}"; do
    "$t" --runs "$runs" --csv "$out" > /dev/null || { echo "tune: $t failed" >&2; exit 1; }
    printf 'tune: %-36s %s\n' "$(basename "$(dirname "$t")")" \
        "$(tail -n "${#sizes[@]}" "$out" | cut -d, -f2,5 | tr '\n' ' ')"
done
echo "tune: ${#targets[@]} programs x ${#sizes[@]} sizes -> $out"
