#!/usr/bin/env bash
# Issue 42 item 2, one device call: back/step15_bf16_bulk (bfloat16 softmax
# backward) in five variants of its two knobs against step 14 (float), the
# bfloat16 bar (copy3_bf16) and PyTorch's bfloat16 _softmax_backward_data:
# checks at every bfloat16 offset, the sanitizers on one variant, then two
# rounds of timings at part 3's softmax shapes.
# timeout 580 bash wip-harness/back_bf16/dev_call.sh GIT_REV   (about 5 min)
# SRC=file VARIANTS="name:share_kb:min_cols:vec ..." TORCH=0 change what runs
# (vec: VEC, the register path's bfloat16s a load, where the source has it).
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
src=${SRC:-back/step15_bf16_bulk/back.cu}
variant() {   # name, SHARE_BYTES in KB, MIN_BULK_COLS, VEC
    local d=back/step15_bf16_bulk_$1
    mkdir -p $d
    sed -e "s/^#define SHARE_BYTES .*/#define SHARE_BYTES ($2 * 1024)/" \
        -e "s/^#define MIN_BULK_COLS .*/#define MIN_BULK_COLS $3/" \
        -e "s/^#define VEC .*/#define VEC ${4:-1}/" $src > $d/back.cu
    echo $d
}
V=""
for v in ${VARIANTS:-s64:64:32768 s80:80:32768 s48:48:32768 s64m16:64:16384 s64m8:64:8192}; do
    IFS=: read -r name kb min vec <<< "$v"
    V="$V $(variant $name $kb $min $vec)"
done
P="back/step14_bulk $V back/baseline_copy3_bf16 back/baseline_copy3"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
./$(echo $V | cut -d' ' -f1)/run --gpu-info | tail -6 | tr '\n' ' '; echo

# Checks: one process per variant (--checks); only if it fails, each check
# alone, so that the log names the failing ones.
checks=$(mktemp)
for shape in "3 1024" "2 1025" "3 4096" "3 8192" "1 8193" "3 16384" "2 16385" "3 32768" "3 32769" "5 50257" "2 65536" "2 65537" "2 128256" "2 151936" "2 262144"; do
    for o in "0 0" "1 1" "3 5" "7 7" "2 0" "0 6" "2 2" "4 4"; do
        for f in exact random; do
            set -- $shape
            echo "--rows $1 --cols $2 --offset ${o% *} --y-offset ${o#* } --fill $f"
        done
    done
done > $checks
: > $OUT/checks.log
for p in $V back/baseline_copy3_bf16; do
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
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 ./$(echo $V | cut -d' ' -f1)/run --check --rows 3 --cols 8192 --offset 0 > $OUT/san-$tool.log 2>&1
    echo "sanitizer $tool rc=$? ($(tail -1 $OUT/san-$tool.log | cut -c1-100))"
done
echo "sanitizers at $(( $(date +%s) - start )) s"

# Timings: two rounds, every program in each, part 3's softmax shapes.
runs=$(mktemp)
SHAPES="32768x1024 8192x4096 1024x32768 1024x50257 256x128256 256x151936 128x262144"
for s in $SHAPES; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"
done > $runs
for r in 1 2; do
    for p in $P; do
        timeout 120 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"
    done
done
echo "timed at $(( $(date +%s) - start )) s"
# PyTorch's bfloat16 softmax backward at the same shapes (development only:
# triton's do_bench, which clears the L2 between runs), as GB/s of 6 bytes an element.
[ "${TORCH:-1}" = 1 ] && timeout 150 /opt/torch/.venv/bin/python - $SHAPES > $OUT/torch.log 2>&1 <<'PY'
import sys, torch
from triton.testing import do_bench
f = lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, torch.bfloat16)
fc = torch.compile(f)
for s in sys.argv[1:]:
    r, c = map(int, s.split("x"))
    y = torch.softmax(torch.randn(r, c, device="cuda"), -1).bfloat16()
    g = torch.randn(r, c, device="cuda").bfloat16()
    cells = []
    for name, fn in (("eager", f), ("compiled", fc)):
        us = do_bench(lambda: fn(g, y), warmup=25, rep=100) * 1e3
        cells.append(f"{name} {us:8.1f} us {6 * r * c / us / 1e3:7.0f} GB/s")
    print(f"{s:>12} " + "  ".join(cells), flush=True)
PY
echo "torch rc=$? at $(( $(date +%s) - start )) s"; cat $OUT/torch.log | tail -8
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows))
shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
for copy in ("back/copy3_bf16", "back/copy3"):
    print(f"share of {copy} (median of 2 rounds; {copy} in us, then GB/s of the bf16 bar)")
    print(f'{"shape":>12} {"us":>8} ' + " ".join(f"{s.split('/')[-1][-14:]:>14}" for s in steps if "copy" not in s))
    for sh in shapes:
        if (copy, sh) not in t:
            print(f"{sh:>12} no copy row"); continue
        c = statistics.median(t[(copy, sh)])
        cells = [f"{c / statistics.median(t[(s, sh)]):14.3f}" if (s, sh) in t else f"{'-':>14}" for s in steps if "copy" not in s]
        print(f"{sh:>12} {c:8.1f} " + " ".join(cells))
print("GB/s of the bf16 bar:", {sh: round(float(next(r["gbps"] for r in rows if r["step"] == "back/copy3_bf16" and f'{r["rows"]}x{r["cols"]}' == sh))) for sh in shapes})
PY
rm -rf $V
