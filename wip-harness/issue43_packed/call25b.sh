#!/usr/bin/env bash
# Issue 43 item 2 (session 22), second call: rows/step25_bf16_packed as
# shipped (32 elements a thread where they hold the row and in 1024-thread
# blocks and clusters, 64 packed elsewhere) beside step 18 and pk64 (the first
# draft, 64 everywhere: pk64 of variants.py, the same code, verified at 56741f9 and 0.94-0.98x step
# 18 at 768 and 1024 columns) at ten shapes, the first run of each checking;
# then make verify ONLY=rows/step25_bf16_packed, the fixture, and step 25's
# map line if the time allows.
#   bash wip-harness/issue43_packed/call25b.sh GIT_REV   (logs: $OUT/*.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
L=$OUT/step25b.log
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
python3 wip-harness/issue43_packed/variants.py > /dev/null || exit 1   # writes build/wip/pk64/rows.cu
make -s -j16 rows/step18_bf16_layernorm_cluster/run rows/step25_bf16_packed/run rows/baseline_copy16/run \
    build/monitored/rows/step25_bf16_packed/run build/mutants/rows/pk_halves_swapped/run \
    build/monitored/build/mutants/rows/pk_halves_swapped/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
pk64=$(bash tools/grade_source.sh --build-only build/wip/pk64/rows.cu) || { echo "pk64: no build"; exit 1; }
echo "== built in $((SECONDS - T0)) s"
fail=0
for shape in "--rows 65536 --cols 768" "--rows 32768 --cols 1024" "--rows 4096 --cols 1024" "--rows 8192 --cols 4096" \
             "--rows 8192 --cols 4097" "--rows 1024 --cols 32768" "--rows 4096 --cols 50257" "--rows 256 --cols 65536" \
             "--rows 512 --cols 128256" "--rows 128 --cols 262144"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step18_bf16_layernorm_cluster/run "$pk64" rows/step25_bf16_packed/run; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            case "$s" in *FAIL*|"") fail=1;; esac
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
for c in "--rows 33 --cols 1" "--rows 99 --cols 2049 --offset 3" "--rows 17 --cols 16385 --offset 1 --y-offset 2" \
         "--rows 5 --cols 32769 --fill centered" "--rows 3 --cols 262144 --fill shifted" "--rows 64 --cols 4097 --fill centered --offset 5"; do
    r=$(rows/step25_bf16_packed/run --check $c 2>&1 | tail -n 1); echo "  check [$c]: $r"
    case "$r" in PASS*) ;; *) fail=1;; esac
done
for shape in "--rows 64 --cols 16385 --offset 1" "--rows 8 --cols 128256 --offset 2"; do
    for tool in memcheck racecheck; do
        r=$(compute-sanitizer --tool $tool --error-exitcode 9 rows/step25_bf16_packed/run --check $shape 2>&1 | tail -n 2 | tr '\n' ' ')
        echo "  $tool [$shape]: $r"
    done
done
echo "== checked at $((SECONDS - T0)) s (fail=$fail)"
[ $fail = 0 ] || exit 1
timeout 330 make verify ONLY=rows/step25_bf16_packed OUT_DIR=plots/reference VERIFY_DIR=/tmp/vd \
    TORCH_PYTHON=/opt/torch/.venv/bin/python GIT_REV=$GIT_REV > $OUT/verify.log 2>&1
echo "== verify rc=$? at $((SECONDS - T0)) s"; tail -n 16 $OUT/verify.log | cut -c1-200
GPU_ONLY=pk_halves_swapped GPU_JOBS=16 timeout 60 python3 -u tests/gpu_suite.py 2>&1 | tail -n 4
echo "== fixture at $((SECONDS - T0)) s"
tar czf $OUT/verify.tgz plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log plots/reference/h200-rows-profile*.csv \
    plots/reference/h200-rows-suite.log /tmp/vd 2>/dev/null
left=$(( 575 - (SECONDS - T0) ))
if (( left > 150 )); then
    timeout $(( left - 5 )) python3 -u tools/bench.py --widths --only rows/step25_bf16_packed --rounds 3 \
        --run-id "$(date -u +%Y%m%dT%H%M%SZ)" --out-dir plots/reference \
        --torch-python /opt/torch/.venv/bin/python > $OUT/widths25.log 2>&1
    echo "== widths --only rc=$? at $((SECONDS - T0)) s"; tail -n 2 $OUT/widths25.log | cut -c1-200
    cp plots/reference/h200-rows-widths.csv plots/reference/h200-rows-widths-bench.log $OUT/
else
    echo "== widths skipped: $left s left"
fi
} > $L 2>&1
tail -n 45 $L | cut -c1-230
