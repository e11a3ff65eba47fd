#!/usr/bin/env bash
# Issue 43 item 2 (session 22): rows/step25_bf16_packed (pk64 of variants.py,
# shipped) in one device call, before its make verify: checked and timed beside
# step 18 at four shapes (the first run of each checks first), memcheck and
# racecheck at its four paths (one block of 512 and of 1024 threads, a cluster
# in registers, a cluster with shared memory), the GPU suite on step 25 and its
# fixture pk_halves_swapped, then step 25's map line (bench.py --widths --only,
# 3 rounds, merged into plots/reference/h200-rows-widths.csv).
#   bash wip-harness/issue43_packed/call25.sh GIT_REV   (logs: $OUT/*.log)
set -u
export GIT_REV=${1:?rev}
T0=$SECONDS
L=$OUT/step25.log
{
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
make -s -j16 rows/step18_bf16_layernorm_cluster/run rows/step25_bf16_packed/run rows/baseline_copy16/run \
    build/monitored/rows/step25_bf16_packed/run build/mutants/rows/pk_halves_swapped/run \
    build/monitored/build/mutants/rows/pk_halves_swapped/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
echo "== built in $((SECONDS - T0)) s"
for shape in "--rows 1024 --cols 32768" "--rows 4096 --cols 50257" "--rows 512 --cols 128256" "--rows 8192 --cols 4096"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step18_bf16_layernorm_cluster/run rows/step25_bf16_packed/run; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
for shape in "--rows 64 --cols 32768 --offset 1" "--rows 16 --cols 50257 --offset 3 --y-offset 1" \
             "--rows 8 --cols 128256 --mask mixed" "--rows 4 --cols 200001 --offset 5"; do
    for tool in memcheck racecheck; do
        r=$(compute-sanitizer --tool $tool --error-exitcode 9 rows/step25_bf16_packed/run --check $shape 2>&1 | tail -n 2 | tr '\n' ' ')
        echo "  $tool [$shape]: $r"
    done
done
echo "== sanitized at $((SECONDS - T0)) s"
GPU_ONLY=rows/step25_bf16_packed,pk_halves_swapped GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py 2>&1 | tail -n 25
echo "== suite done at $((SECONDS - T0)) s"
timeout 240 python3 -u tools/bench.py --widths --only rows/step25_bf16_packed --rounds 3 \
    --run-id "$(date -u +%Y%m%dT%H%M%SZ)" --out-dir plots/reference \
    --torch-python /opt/torch/.venv/bin/python > $OUT/widths25.log 2>&1
echo "== widths --only rc=$? at $((SECONDS - T0)) s"; tail -n 3 $OUT/widths25.log | cut -c1-200
cp plots/reference/h200-rows-widths.csv plots/reference/h200-rows-widths-bench.log $OUT/
} > $L 2>&1
tail -n 60 $L | cut -c1-220
