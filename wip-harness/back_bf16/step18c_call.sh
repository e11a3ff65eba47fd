#!/usr/bin/env bash
# Issue 42, session 19: step 18 with no packs up to 2048 columns against
# its a0ba1c9 version (packs of 8 from 2048), then the suite on step 18.
# Its variant (deleted since): step18_a0ba1c9.cu is
# git show a0ba1c9:back/step18_ln_bf16_ahead/back.cu. Write it into $W first.
set -u
export GIT_REV=${1:?rev}
start=$(date +%s); W=wip-harness/back_bf16
mkdir -p back/step18_ln_bf16_ahead_prev; cp $W/step18_a0ba1c9.cu back/step18_ln_bf16_ahead_prev/back.cu
LN="back/step18_ln_bf16_ahead back/step18_ln_bf16_ahead_prev back/baseline_copy3_bf16"
t="build/monitored/back/step18_ln_bf16_ahead/run build/mutants/back/back_ahead_wrong_row/run build/monitored/build/mutants/back/back_ahead_wrong_row/run"
make -s -j16 GIT_REV=$GIT_REV $t $(for p in $LN; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
runs=$(mktemp)
for s in 16384x2048 32768x1024 10922x3072 8192x4096; do echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"; done > $runs
for r in 1 2 3; do for p in $LN; do timeout 40 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"; done; done
echo "timed at $(( $(date +%s) - start )) s"
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]))); t = {}
for r in rows: t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows)); shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
for sh in shapes:
    print(f"{sh:>11} " + " ".join((f"{s.split('/')[-1][-10:]} {statistics.median(v):.1f}[{min(v):.1f}-{max(v):.1f}]" if (v:=t.get((s,sh))) else "-") for s in steps))
PY
rm -rf back/step18_ln_bf16_ahead_prev
GPU_PART=back GPU_ONLY=back/step18_ln_bf16_ahead,back_ahead_wrong_row GPU_JOBS=16 timeout 120 python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -6 | cut -c1-200
