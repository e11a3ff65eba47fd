#!/usr/bin/env bash
# Issue 42, one device call: the bulk softmax backward draft (back.cu here)
# in four variants against step 13 and the copy of three streams: checks,
# the sanitizers on one variant, then two rounds of timings at part 3's
# softmax shapes. timeout 580 bash wip-harness/back_bulk/dev_call.sh GIT_REV
# (about 5 min: build 30 s, checks 60-120 s, sanitizers up to 270 s at worst, timings 150 s).
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
here=wip-harness/back_bulk
variant() {   # name, SHARE_BYTES in KB, MIN_BULK_COLS
    local d=back/step14_bulk_$1
    mkdir -p $d
    sed -e "s/^#define SHARE_BYTES .*/#define SHARE_BYTES ($2 * 1024)/" \
        -e "s/^#define MIN_BULK_COLS .*/#define MIN_BULK_COLS $3/" $here/back.cu > $d/back.cu
    echo $d
}
V="$(variant s64 64 32768) $(variant s100 100 32768) $(variant s128 128 32768) $(variant s128m8 128 8192)"
P="back/step13_cluster $V back/baseline_copy3"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"

# Checks: one process per variant (--checks), and only if it fails, each
# check alone, so that the log names the failing ones. Widths on both sides
# of the bulk threshold (32768 and 32769; 8192 and 8193 for s128m8).
checks=$(mktemp)
for shape in "3 8192" "1 8193" "3 32768" "3 32769" "5 50257" "2 65536" "2 65537" "2 128256" "2 151936" "2 262144"; do
    for o in "0 0" "1 1" "3 3" "2 0"; do
        for f in exact random; do
            set -- $shape
            echo "--rows $1 --cols $2 --offset ${o% *} --y-offset ${o#* } --fill $f"
        done
    done
done > $checks
: > $OUT/checks.log
for p in $V; do
    if timeout 150 ./$p/run --checks $checks > /dev/null 2>&1; then
        echo "$p: all $(wc -l < $checks) checks passed"
    else
        bad=0
        while read -r line; do
            out=$(timeout 30 ./$p/run --check $line 2>&1) || { bad=$((bad + 1)); echo "$p $line: $(echo "$out" | tail -2 | tr '\n' ' ')" >> $OUT/checks.log; }
        done < $checks
        echo "$p: $bad of $(wc -l < $checks) checks failed (checks.log)"
    fi
done
echo "checks at $(( $(date +%s) - start )) s"
for tool in memcheck racecheck synccheck; do
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 ./back/step14_bulk_s128/run --check --rows 2 --cols 65537 > $OUT/san-$tool.log 2>&1
    echo "sanitizer $tool rc=$? ($(tail -1 $OUT/san-$tool.log | cut -c1-100))"
done
echo "sanitizers at $(( $(date +%s) - start )) s"

# Timings: two rounds, every program in each, part 3's softmax shapes.
runs=$(mktemp)
for s in 32768x1024 8192x4096 1024x32768 1024x50257 256x128256 256x151936 128x262144; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"
done > $runs
for r in 1 2; do
    for p in $P; do
        timeout 120 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"
    done
done
echo "timed at $(( $(date +%s) - start )) s"
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows))
shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
copy = next((s for s in steps if "copy" in s), None)
if copy is None:
    sys.exit("no copy rows: nothing to compare")
print("share of the copy of three streams (median of rounds; copy us)")
print(f'{"shape":>12} {"copy us":>8} ' + " ".join(f"{s.split('/')[-1][:14]:>14}" for s in steps if s != copy))
for sh in shapes:
    if (copy, sh) not in t:
        print(f"{sh:>12} no copy row"); continue
    c = statistics.median(t[(copy, sh)])
    cells = [f"{c / statistics.median(t[(s, sh)]):14.2f}" if (s, sh) in t else f"{'-':>14}" for s in steps if s != copy]
    print(f"{sh:>12} {c:8.1f} " + " ".join(cells))
PY
rm -rf $V
