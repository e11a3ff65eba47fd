#!/usr/bin/env bash
# Issue 42, session 19: step 18 with packs of 4 only from 2048 columns (one
# element a load, two rows ahead, at 1024) against step 18 at 7771724
# (packs4) and with no packs (nopacks), beside step 17 and the bar; then
# the GPU suite on step 18 and its fixture.
# Its variants (deleted since; in git at a0ba1c9): step18_packs4.cu is
# git show 10684ee:back/step18_ln_bf16_ahead/back.cu, step18_nopacks.cu
# is step 18 at a0ba1c9 with pack_of() returning 1. Write them into $W first.
set -u
export GIT_REV=${1:?rev}
start=$(date +%s); W=wip-harness/back_bf16
for v in packs4 nopacks; do mkdir -p back/step18_ln_bf16_ahead_$v; cp $W/step18_$v.cu back/step18_ln_bf16_ahead_$v/back.cu; done
LN="back/step17_ln_bf16 back/step18_ln_bf16_ahead back/step18_ln_bf16_ahead_packs4 back/step18_ln_bf16_ahead_nopacks back/baseline_copy3_bf16"
t="build/monitored/back/step18_ln_bf16_ahead/run build/mutants/back/back_ahead_wrong_row/run build/monitored/build/mutants/back/back_ahead_wrong_row/run"
make -s -j16 GIT_REV=$GIT_REV $t $(for p in $LN; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
runs=$(mktemp)
for s in 32768x1024 16384x2048 8192x4096 65536x768 32768x1000; do echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"; done > $runs
for r in 1 2 3; do for p in $LN; do timeout 60 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"; done; done
echo "timed at $(( $(date +%s) - start )) s"
python3 - "$OUT/times.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]))); t = {}
for r in rows: t.setdefault((r["step"], f'{r["rows"]}x{r["cols"]}'), []).append(float(r["median_us"]))
steps = list(dict.fromkeys(r["step"] for r in rows)); shapes = list(dict.fromkeys(f'{r["rows"]}x{r["cols"]}' for r in rows))
print(f'{"shape":>11} ' + " ".join(f"{s.split('/')[-1][-16:]:>16}" for s in steps))
for sh in shapes:
    print(f"{sh:>11} " + " ".join((f"{statistics.median(v):8.1f}[{min(v):.0f}-{max(v):.0f}]".rjust(16) if (v:=t.get((s,sh))) else f"{'-':>16}") for s in steps))
PY
rm -rf back/step18_ln_bf16_ahead_packs4 back/step18_ln_bf16_ahead_nopacks
GPU_PART=back GPU_ONLY=back/step18_ln_bf16_ahead,back_ahead_wrong_row GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py > $OUT/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - start )) s"; grep -E "^(ok|FAIL|grade:|gpu:)" $OUT/suite.log | tail -8 | cut -c1-300
