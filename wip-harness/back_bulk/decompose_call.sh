#!/usr/bin/env bash
# Issue 42, where step 14's time goes: step 14 beside variants that skip a phase (timing
# only, wrong dx): no exchange of the blocks' sums, no store of dx, neither; and shares of
# 32 KB at most. Step 13 and the copy for reference; 2 rounds, part 3's four wide shapes.
# timeout 300 bash wip-harness/back_bulk/decompose_call.sh GIT_REV   (about 1 min)
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
src=back/step14_bulk/back.cu
variant() {   # name, sed script
    mkdir -p back/step14_bulk_$1; sed -e "$2" $src > back/step14_bulk_$1/back.cu
    cmp -s $src back/step14_bulk_$1/back.cu && { echo "variant $1: sed changed nothing" >&2; exit 1; }
    echo back/step14_bulk_$1
}
NOX='s|^    if (lane < blocks)$|    if (false)|; s|^    mbarrier_wait(\&s_pushed);|    ;|'
NOST='s|^            bulk_store(|            if (0) bulk_store(|'
V="$(variant noexch "$NOX") $(variant nostore "$NOST") $(variant neither "$NOX; $NOST") $(variant s32 's|^#define SHARE_BYTES (64 \* 1024)|#define SHARE_BYTES (32 * 1024)|')"
P="back/step13_cluster back/step14_bulk $V back/baseline_copy3"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
timeout 60 ./back/step14_bulk_s32/run --check --rows 5 --cols 50257 --fill exact 2>&1 | tail -1
runs=$(mktemp)
for s in 1024x50257 256x128256 256x151936 128x262144; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"
done > $runs
for r in 1 2; do for p in $P; do
    timeout 60 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p rc=$?"
done; done
echo "timed at $(( $(date +%s) - start )) s"
python3 - $OUT/times.csv <<'PY'
import csv, statistics, sys, collections
t = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r["step"], f'{r["rows"]}x{r["cols"]}')].append(float(r["median_us"]))
steps = list(dict.fromkeys(s for s, _ in t)); shapes = list(dict.fromkeys(sh for _, sh in t))
print(f"{'us, copy/it':>12} " + " ".join(f"{s.split('/')[-1][-14:]:>14}" for s in steps))
for sh in shapes:
    c = statistics.median(t[("back/copy3", sh)])
    print(f"{sh:>12} " + " ".join(f"{statistics.median(t[(s, sh)]):7.1f} {c / statistics.median(t[(s, sh)]):5.2f} " for s in steps))
PY
rm -rf $V
