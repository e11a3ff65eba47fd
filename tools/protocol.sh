#!/usr/bin/env bash
# protocol.sh OUT.csv: step 9's ticket protocol against the one it replaced,
# in the same run. The old one (build/variants/step9_acq_rel) is step 9 with
# every block's fetch_add acq_rel and an acquire fence in every thread of the
# last block; the shipped one releases on the ticket and acquires once, in
# thread 0 of the last block. Both run ROUNDS times (default 5), alternating,
# each round one process per program over every size (--runs).
set -u
out=${1:?usage: protocol.sh OUT.csv}
rounds=${ROUNDS:-5}
cd "$(dirname "$0")/.."
dir=build/variants/step9_acq_rel
mkdir -p "$dir"
sed -e 's|fetch_add(1, cuda::memory_order_release)|fetch_add(1, cuda::memory_order_acq_rel)|' \
    -e '/^        if (s_last)$/{N;d}' \
    -e '/^    \/\/ Add the partials in block order/i\    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);' \
    step9_singlepass/reduce.cu > "$dir/reduce.cu.new"
[ "$(grep -c 'memory_order_acq_rel' "$dir/reduce.cu.new")" = 1 ] &&
    [ "$(grep -c 'atomic_thread_fence' "$dir/reduce.cu.new")" = 1 ] ||
    { echo "protocol: the sed script no longer matches step9_singlepass/reduce.cu" >&2; exit 2; }
cmp -s "$dir/reduce.cu.new" "$dir/reduce.cu" && rm "$dir/reduce.cu.new" || mv "$dir/reduce.cu.new" "$dir/reduce.cu"
make --no-print-directory -s "$dir/run" step9_singlepass/run || exit 2
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for n in 1024 4096 8192 16384 65536 262144 1048576 4194304 16777216 33554432 268435456; do
    echo "-n $n --no-verify"
done > "$runs"
rm -f "$out"
for r in $(seq "$rounds"); do
    for p in "$dir/run" step9_singlepass/run; do
        "$p" --runs "$runs" --csv "$out" > /dev/null || { echo "protocol: $p failed" >&2; exit 1; }
    done
done
echo "protocol: 2 programs x $rounds rounds -> $out"
