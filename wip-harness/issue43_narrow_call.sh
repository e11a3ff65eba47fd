#!/usr/bin/env bash
# Issue 43 (session 21): rows/step24_bf16_narrow in one device call. Builds
# steps 23 and 24, the bfloat16 copy and step 24 with MIN_GROUP 16 (v16);
# times them A B A B at narrow and control widths (the first run of each
# checks first); memcheck and racecheck at narrow shapes; the GPU suite on
# step 24 and its fixture nw_whole_warp; then, if the time left allows, make
# verify ONLY=rows/step24_bf16_narrow into plots/reference (about 330 s).
#   bash wip-harness/issue43_narrow_call.sh GIT_REV DEADLINE_S   (log: $OUT/narrow.log)
set -u
export GIT_REV=${1:?rev}; DEADLINE=${2:-570}
T0=$SECONDS
L=$OUT/narrow.log; exec > "$L" 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
mkdir -p build/wip/v16
sed 's|^#define MIN_GROUP 8 |#define MIN_GROUP 16|' rows/step24_bf16_narrow/rows.cu > build/wip/v16/rows.cu
grep -q "^#define MIN_GROUP 16" build/wip/v16/rows.cu || { echo "v16: sed changed nothing"; exit 1; }
make -s -j16 rows/step23_bf16_bulk/run rows/step24_bf16_narrow/run rows/baseline_copy16/run \
    build/monitored/rows/step24_bf16_narrow/run build/mutants/rows/nw_whole_warp/run \
    build/monitored/build/mutants/rows/nw_whole_warp/run > build/make.log 2>&1 || { tail -n 30 build/make.log; exit 1; }
v16=$(bash tools/grade_source.sh --build-only build/wip/v16/rows.cu) || { echo "v16: no build"; exit 1; }
echo "== built in $((SECONDS - T0)) s"
shapes=("--rows 524288 --cols 256" "--rows 262144 --cols 512" "--rows 1048576 --cols 128"
        "--rows 131072 --cols 1024" "--rows 32768 --cols 1024" "--rows 65536 --cols 768"
        "--rows 4096 --cols 256" "--rows 524288 --cols 255 --offset 1")
for shape in "${shapes[@]}"; do
    for k in 1 2; do
        flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
        line="[$shape] run $k:"
        for p in rows/baseline_copy16/run rows/step23_bf16_bulk/run rows/step24_bf16_narrow/run "$v16"; do
            s=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /^FAIL/ {print "FAIL"}' | tr '\n' ' ')
            line="$line $(basename $(dirname $p))=${s:-?}"
        done
        echo "  $line"
    done
done
echo "== timed at $((SECONDS - T0)) s"
for shape in "--rows 4096 --cols 256 --offset 3" "--rows 999 --cols 200 --offset 1 --y-offset 2" "--rows 777 --cols 511 --mask mixed"; do
    for tool in memcheck racecheck; do
        r=$(compute-sanitizer --tool $tool --error-exitcode 9 rows/step24_bf16_narrow/run --check $shape 2>&1 | tail -n 2 | tr '\n' ' ')
        echo "  $tool [$shape]: rc-line: $r"
    done
done
echo "== sanitized at $((SECONDS - T0)) s"
GPU_ONLY=rows/step24_bf16_narrow,nw_whole_warp GPU_JOBS=16 timeout 200 python3 -u tests/gpu_suite.py 2>&1 | tail -n 25
echo "== suite done at $((SECONDS - T0)) s"
left=$(( DEADLINE - (SECONDS - T0) ))
if (( left > 340 )); then
    timeout $(( left - 5 )) make verify ONLY=rows/step24_bf16_narrow OUT_DIR=plots/reference VERIFY_DIR=/tmp/vd \
        TORCH_PYTHON=/opt/torch/.venv/bin/python GIT_REV=$GIT_REV > $OUT/verify.log 2>&1
    echo "== verify rc=$? at $((SECONDS - T0)) s"; tail -n 40 $OUT/verify.log | cut -c1-220
    tar czf $OUT/verify.tgz plots/reference/h200-rows*.csv plots/reference/h200-rows-bench.log /tmp/vd 2>/dev/null
else
    echo "== verify skipped: $left s left"
fi
