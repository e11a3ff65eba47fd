#!/usr/bin/env bash
# Issue 42, session 19, one device call: step 15 split in two (15: bfloat16
# data, one a load in the register path; 16: two a load). Racecheck of the
# pre-fix step 15 (e8c2b0c^, expected to fail the grader's 6 x 20000 offset 2
# case) and of step 15 without s_warp's alignment; checks of 15 and 16; timings
# of 14, 15, 16 and the bfloat16 bar at softmax backward's bench shapes; step
# 17 (bfloat16 LayerNorm backward) against its ahead2 draft beside step 9.
# timeout 580 bash wip-harness/back_bf16/split_call.sh GIT_REV
# The variants it read (deleted since; in git): step15_prealign.cu is
# git show e8c2b0c^:back/step15_bf16_bulk/back.cu, step15_noalign.cu step 15 at
# 224b0ad without __align__(16) on s_warp. Write them into $W before a rerun.
set -u
export GIT_REV=${1:?rev}
start=$(date +%s)
W=wip-harness/back_bf16
for v in prealign:$W/step15_prealign.cu noalign:$W/step15_noalign.cu; do
    mkdir -p back/step15_bf16_bulk_${v%%:*}; cp ${v#*:} back/step15_bf16_bulk_${v%%:*}/back.cu
done
mkdir -p back/step17_ln_bf16_ahead2; cp back/step17_ln_bf16/back.cu back/step17_ln_bf16_ahead2/back.cu
patch -s back/step17_ln_bf16_ahead2/back.cu < $W/ln16_ahead2.patch || exit 1
SM="back/step14_bulk back/step15_bf16_bulk back/step16_bf16_pairs back/baseline_copy3_bf16 back/baseline_copy3"
LN="back/step9_ahead back/step17_ln_bf16 back/step17_ln_bf16_ahead2"
make -s -j16 GIT_REV=$GIT_REV $(for p in $SM $LN back/step15_bf16_bulk_prealign back/step15_bf16_bulk_noalign; do echo $p/run; done) > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
./back/step16_bf16_pairs/run --gpu-info | tail -6 | tr '\n' ' '; echo
: > $OUT/san.log
for p in prealign noalign; do
    for a in "--seed 7 --offset 2" "--seed 5 --offset 3 --y-offset 1"; do
        timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 ./back/step15_bf16_bulk_$p/run --check --rows 6 --cols 20000 --fill exact $a >> $OUT/san.log 2>&1
        echo "racecheck $p $a rc=$?"
    done
done
for p in back/step15_bf16_bulk back/step16_bf16_pairs; do
    for tool in racecheck synccheck memcheck; do
        timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 ./$p/run --check --rows 6 --cols 20000 --fill exact --seed 7 --offset 2 >> $OUT/san.log 2>&1
        echo "$tool $p rc=$?"
    done
done
echo "sanitizers at $(( $(date +%s) - start )) s"
checks=$(mktemp)
for shape in "3 1" "5 300" "3 1024" "2 1025" "3 4096" "2 8193" "2 16384" "2 16385" "2 20000" "2 50257" "2 65540" "1 151936" "700 1024"; do
    for o in "0 0" "1 1" "2 0" "3 5" "0 2" "7 7"; do
        for f in exact random shifted; do
            set -- $shape $o
            echo "--rows $1 --cols $2 --offset $3 --y-offset $4 --fill $f"
        done
    done
done > $checks
for p in back/step15_bf16_bulk back/step16_bf16_pairs; do
    timeout 150 ./$p/run --checks $checks > $OUT/checks-${p##*/}.log 2>&1; echo "$p: $(wc -l < $checks) checks rc=$?"
done
lnchecks=$(mktemp)
for shape in "3 1" "5 300" "3 1024" "2 1025" "3 1028" "3 2048" "3 2052" "3 4096" "2 4100" "2 8192" "2 12289" "700 1024" "300 4096"; do
    for o in "0 0 0" "1 1 0" "4 4 0" "7 3 2" "0 0 2"; do
        for f in exact random tiny; do
            set -- $shape $o
            echo "--rows $1 --cols $2 --offset $3 --y-offset $4 --gamma-offset $5 --fill $f"
        done
    done
done > $lnchecks
timeout 150 ./back/step17_ln_bf16_ahead2/run --checks $lnchecks > $OUT/checks-ahead2.log 2>&1; echo "ahead2: $(wc -l < $lnchecks) checks rc=$?"
for tool in racecheck synccheck memcheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 ./back/step17_ln_bf16_ahead2/run --check --rows 300 --cols 1024 --offset 1 --y-offset 1 >> $OUT/san.log 2>&1; echo "$tool ahead2 rc=$?"
done
echo "checks at $(( $(date +%s) - start )) s"
runs=$(mktemp); lnruns=$(mktemp)
for s in 32768x1024 8192x4096 2048x16384 1024x32768 1024x50257 256x151936; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"; done > $runs
for s in 32768x1024 8192x4096 65536x768 4096x8192; do
    echo "--rows ${s%x*} --cols ${s#*x} --reps 20 --warmup 3 --no-verify"; done > $lnruns
for r in 1 2 3; do
    for p in $SM; do timeout 100 ./$p/run --runs $runs --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"; done
    for p in $LN back/baseline_copy3_bf16; do timeout 100 ./$p/run --runs $lnruns --csv $OUT/times.csv > /dev/null 2>> $OUT/times.err || echo "$p round $r rc=$?"; done
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
print(f'{"shape":>11} ' + " ".join(f"{s.split('/')[-1][-16:]:>16}" for s in steps))
for sh in shapes:
    cells = []
    for s in steps:
        v = t.get((s, sh))
        cells.append(f"{statistics.median(v):8.1f}[{min(v):.0f}-{max(v):.0f}]".rjust(16) if v else f"{'-':>16}")
    print(f"{sh:>11} " + " ".join(cells))
PY
rm -rf back/step15_bf16_bulk_prealign back/step15_bf16_bulk_noalign back/step17_ln_bf16_ahead2
