#!/usr/bin/env bash
# Issue 42 item 2, one device call: back/step16_ln_bf16 (bfloat16 LayerNorm
# backward) in variants (LN_VARIANTS, below) against step 9 (float), the bfloat16 bar and
# PyTorch's bfloat16 LayerNorm backward: checks at bfloat16 offsets, the
# sanitizers, two rounds of timings.
# timeout 580 bash wip-harness/back_bf16/ln_dev_call.sh GIT_REV   (about 3 min)
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
# LN_VARIANTS="name:patch ..." ("-": step 16 as it is; session 18 ran h and
# p4, ln16_pack4.cu at 719b5be, since folded into step 16). The default:
# step 16 against ln16_ahead2.patch, two rows on their way as bfloat16
# instead of one as floats.
V=""
for v in ${LN_VARIANTS:-shipped:- ahead2:wip-harness/back_bf16/ln16_ahead2.patch}; do
    d=back/step16_ln_bf16_${v%%:*}
    mkdir -p $d
    cp back/step16_ln_bf16/back.cu $d/back.cu
    [ "${v#*:}" = - ] || patch -s $d/back.cu < ${v#*:} || exit 1
    V="$V $d"
done
first=$(echo $V | cut -d' ' -f2)
P="back/step9_ahead $V back/baseline_copy3_bf16 back/baseline_copy3"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
./$first/run --gpu-info | tail -6 | tr '\n' ' '; echo

checks=$(mktemp)
for shape in "3 1" "5 300" "3 1024" "2 1025" "3 1028" "3 2048" "3 2052" "3 4096" "2 4100" "2 4104" "2 8192" "2 12289" "700 1024" "300 4096"; do
    for o in "0 0 0" "1 1 0" "4 4 0" "2 6 0" "0 4 1" "7 3 2" "4 0 3" "0 0 2"; do
        for f in exact random tiny; do
            set -- $shape $o
            echo "--rows $1 --cols $2 --offset $3 --y-offset $4 --gamma-offset $5 --fill $f"
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
    for c in 1024 4096; do
        timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 ./$first/run --check --rows 300 --cols $c > $OUT/san-$tool.log 2>&1
        echo "sanitizer $tool at $c rc=$? ($(tail -1 $OUT/san-$tool.log | cut -c1-90))"
    done
done
echo "sanitizers at $(( $(date +%s) - start )) s"

runs=$(mktemp)
SHAPES="32768x1024 8192x4096 65536x768 16384x2048 4096x8192"
for s in $SHAPES; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"
done > $runs
for r in 1 2; do
    for p in $P; do
        timeout 120 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"
    done
done
echo "timed at $(( $(date +%s) - start )) s"
# PyTorch's LayerNorm backward, bfloat16 x, dy and gamma (development
# only: triton's do_bench), GB/s of step 16's bytes (6 an element).
timeout 150 /opt/torch/.venv/bin/python - $SHAPES > $OUT/torch.log 2>&1 <<'PY'
import sys, torch
from triton.testing import do_bench
def f(dy, x, mean, rstd, w, b):
    return torch.ops.aten.native_layer_norm_backward(dy, x, [x.shape[-1]], mean, rstd, w, b, [True, True, True])
fc = torch.compile(f)
for s in sys.argv[1:]:
    r, c = map(int, s.split("x"))
    x = torch.randn(r, c, device="cuda").bfloat16()
    dy = torch.randn(r, c, device="cuda").bfloat16()
    w = torch.randn(c, device="cuda").bfloat16(); b = torch.randn(c, device="cuda").bfloat16()   # eager refuses float gamma beside bfloat16 x
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [c], w, b, 1e-5)
    cells = [f"mean {mean.dtype} dx {f(dy, x, mean, rstd, w, b)[0].dtype}"]
    for name, fn in (("eager", f), ("compiled", fc)):
        us = do_bench(lambda: fn(dy, x, mean, rstd, w, b), warmup=25, rep=100) * 1e3
        cells.append(f"{name} {us:8.1f} us {6 * r * c / us / 1e3:7.0f} GB/s")
    print(f"{s:>12} " + "  ".join(cells), flush=True)
PY
echo "torch rc=$? at $(( $(date +%s) - start )) s"; tail -8 $OUT/torch.log
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows))
shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
for copy in ("back/copy3_bf16", "back/copy3"):
    print(f"share of {copy} (median of 2 rounds; {copy} in us)")
    print(f'{"shape":>12} {"us":>8} ' + " ".join(f"{s.split('/')[-1][-14:]:>14}" for s in steps if "copy" not in s))
    for sh in shapes:
        if (copy, sh) not in t:
            print(f"{sh:>12} no copy row"); continue
        c = statistics.median(t[(copy, sh)])
        cells = [f"{c / statistics.median(t[(s, sh)]):14.3f}" if (s, sh) in t else f"{'-':>14}" for s in steps if "copy" not in s]
        print(f"{sh:>12} {c:8.1f} " + " ".join(cells))
print("us:", {f"{s.split('/')[-1]} {sh}": round(statistics.median(v), 1) for (s, sh), v in t.items()})
PY
rm -rf $V
