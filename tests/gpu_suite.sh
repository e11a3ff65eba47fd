#!/usr/bin/env bash
# gpu_suite.sh: runs every step program and the CUB baseline on the GPU over
# many n (1, both sides of block multiples, primes, 2^28 + 3, 2^31 - 1),
# every fill, several seeds and misaligned starts, and checks that the
# deliberately broken fixtures in tests/broken/ FAIL. Without a CUDA device
# it says so on one line and counts itself as skipped, never as passed.
# Ends with "gpu: N passed, N failed[, N skipped]". GPU_JOBS runs in parallel.
set -u
cd "$(dirname "$0")/.."

programs=()
for d in $(ls -d step[0-9]*_*/ 2>/dev/null | sort -V) baseline_cub/; do
    d=${d%/}
    [ -f "$d/reduce.cu" ] || continue
    [ -x "$d/run" ] || { echo "gpu: $d/run is not built (run make)"; echo "gpu: 0 passed, 1 failed"; exit 1; }
    programs+=("$d/run")
done

probe=$(baseline_cub/run --check -n 1 2>&1 >/dev/null)
if [ $? -eq 3 ] && [[ $probe == *"no CUDA device"* ]]; then
    echo "gpu: skipped: no CUDA device on this machine (${probe#error: })"
    echo "gpu: 0 passed, 0 failed, 1 skipped"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fills=(random ones ints onehot)
sizes=(1 2 3 5 31 32 33 63 64 65 127 128 129 255 256 257 511 512 513 1023 1024 1025
       2047 2048 2049 4095 4097 8193 65537 131071 1000003 1048579 16777259 33554432)

# One case per line: expected exit | what stdout/stderr must contain | command.
{
    for p in "${programs[@]}"; do
        i=0
        for n in "${sizes[@]}"; do
            echo "0|PASS|$p --check -n $n --fill ${fills[i % 4]} --seed $((i + 1)) --offset $((i % 4))"
            i=$((i + 1))
        done
        for n in 1 257 1000003; do
            for f in "${fills[@]}"; do
                echo "0|PASS|$p --check -n $n --fill $f --seed 7"
            done
        done
        echo "0|PASS|$p --check -n 268435459 --fill random --seed 11 --offset 1"
    done
    # Timed mode: the CSV row is written and says PASS (pass column = 1).
    echo "0|PASS|step0_naive/run -n 100003 --reps 3 --warmup 1 --csv $work/timed_step0.csv"
    echo "0|PASS|baseline_cub/run -n 100003 --reps 3 --warmup 1 --csv $work/timed_cub.csv"
    # The checks must be able to fail.
    echo "1|FAIL|tests/broken/drop_tail/run --check -n 1000 --fill ones"
    echo "1|FAIL|tests/broken/drop_tail/run --check -n 257 --fill ones"
    echo "1|FAIL|tests/broken/drop_tail/run -n 4099 --fill ints --reps 2 --warmup 0"
    echo "1|FAIL|tests/broken/no_write/run --check -n 1000"
    echo "1|a pass must return|tests/broken/bad_count/run --check -n 1000"
    echo "2|only|baseline_cub/run --check -n 1000 --device 99"
} > "$work/cases"
# The largest n, 8 GiB each: fewer at a time.
for p in "${programs[@]}"; do
    echo "0|PASS|$p --check -n 2147483647 --fill onehot --seed 3"
done > "$work/huge"

run_case() {   # $1 = case line, $2 = result file
    local expect=${1%%|*} rest=${1#*|}
    local want=${rest%%|*} cmd=${rest#*|}
    local out rc
    out=$($cmd 2>&1); rc=$?
    if [ "$rc" = "$expect" ] && [[ $out == *"$want"* ]]; then
        echo "PASS $cmd" > "$2"
    else
        printf 'FAIL %s\n     expected exit %s and "%s", got exit %s:\n%s\n' \
            "$cmd" "$expect" "$want" "$rc" "$(echo "$out" | tail -n 3 | sed 's/^/       /')" > "$2"
    fi
}
export -f run_case

jobs=${GPU_JOBS:-$(( $(nproc) > 8 ? 8 : $(nproc) ))}
run_all() {   # $1 = case file, $2 = parallel jobs
    local k=0
    while IFS= read -r line; do
        k=$((k + 1)); printf '%s\0%s\0' "$line" "$work/r.$1.$k"
    done < "$work/$1" | xargs -0 -n 2 -P "$2" bash -c 'run_case "$0" "$1"'
}
start=$SECONDS
run_all cases "$jobs"
run_all huge "$(( jobs > 3 ? 3 : jobs ))"

passed=$(cat "$work"/r.* | grep -c '^PASS')
failed=$(cat "$work"/r.* | grep -c '^FAIL')
total=$(( $(wc -l < "$work/cases") + $(wc -l < "$work/huge") ))
missing=$(( total - passed - failed ))   # a case that wrote nothing counts as failed
# Each timed CSV: the header, then one row named after the program, pass = 1.
for name in step0 cub; do
    f=$work/timed_$name.csv
    if [ "$(head -n 1 "$f" 2>/dev/null | cut -d, -f1-3)" = "step,n,reps" ] &&
       [[ "$(tail -n +2 "$f" | cut -d, -f1,2,14)" == ${name}*,100003,1 ]] &&
       [ "$(wc -l < "$f")" -eq 2 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); echo "FAIL timed CSV $f:"; cat "$f" 2>/dev/null
    fi
done
cat "$work"/r.* | grep -A 5 '^FAIL' | head -n 60
echo "gpu: $((total)) cases over ${#programs[@]} programs in $((SECONDS - start)) s"
echo "gpu: $passed passed, $((failed + missing)) failed"
[ $((failed + missing)) -eq 0 ]
