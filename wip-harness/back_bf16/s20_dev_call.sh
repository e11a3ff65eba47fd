#!/usr/bin/env bash
# Issue 42, session 20, one device call: step 18's lead. The four variants of
# s20_variants.py beside steps 17 and 18 and the bfloat16 copy, 3 rounds (as
# many as fit DEADLINE_S) at LayerNorm's register-path shapes; each variant's
# --check first (exact fill, offsets) and memcheck of the pairs.
# timeout 330 bash wip-harness/back_bf16/s20_dev_call.sh GIT_REV [DEADLINE_S]
set -u
export GIT_REV=${1:?rev}; DEADLINE=${2:-280}
T0=$SECONDS
python3 wip-harness/back_bf16/s20_variants.py
V="back/step91_a3 back/step92_a3b3 back/step95_pairs back/step96_pairs_a3"
P="back/baseline_copy3_bf16 back/step17_ln_bf16 back/step18_ln_bf16_ahead $V"
make -s -j16 GIT_REV=$GIT_REV $(for p in $P; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built at t+$((SECONDS - T0)) s"
for v in $V; do for sh in "--rows 4097 --cols 1024" "--rows 999 --cols 1000 --offset 2 --y-offset 2" "--rows 777 --cols 768 --offset 1" "--rows 513 --cols 2048 --y-offset 6"; do
  echo "$v $sh: $(timeout 30 ./$v/run --check $sh 2>&1 | tail -1)"; done; done | tee $OUT/checks.log | grep -v ": PASS$"
for v in back/step95_pairs back/step96_pairs_a3; do
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 ./$v/run --check --rows 67 --cols 1000 --offset 2 --y-offset 2 > /dev/null 2>&1; echo "memcheck $v rc=$?"; done
echo "checked at t+$((SECONDS - T0)) s"
runs=$(mktemp)
for s in 32768x1024 65536x768 32768x1000 16384x2048 8192x4096 65536x512; do
  echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"; done > $runs
for r in 1 2 3; do
  (( SECONDS - T0 > DEADLINE - 60 )) && { echo "round $r skipped at t+$((SECONDS - T0)) s"; break; }
  for p in $P; do timeout 40 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"; done
  echo "round $r at t+$((SECONDS - T0)) s"
done
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]))); t = {}
for r in rows: t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows)); shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
print(f'{"shape":>11} ' + " ".join(f"{s.split('/')[-1][-15:]:>19}" for s in steps))
for sh in shapes:
    c = statistics.median(t[("back/copy3_bf16", sh)])
    print(f"{sh:>11} " + " ".join((f"{statistics.median(v):6.1f}[{min(v):.1f}-{max(v):.1f}]{c / statistics.median(v):.2f}".rjust(19) if (v:=t.get((s,sh))) else f"{'-':>19}") for s in steps))
PY
python3 wip-harness/back_bf16/s20_variants.py --remove
