#!/bin/bash
# One device call (about 5 minutes): step 22's grader and fixture, then each
# variant of wip-harness/step22_variants.py timed beside the step it comes
# from, A B A B at each shape (the first run of each checks first: 7 checks).
# Run: GIT_REV=<rev> bash wip-harness/step22_variants.sh   (log: $OUT/variants.log)
set -u
L=${OUT:-build}/variants.log; exec > "$L" 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=${GIT_REV:?}"
T0=$SECONDS
mkdir -p build
make -j16 rows/step10_aligned/run rows/step13_layernorm_aligned/run rows/step17_layernorm_cluster/run \
    rows/step19_rmsnorm/run rows/step22_welford/run build/monitored/rows/step22_welford/run \
    build/mutants/rows/wf_counts_swapped/run build/monitored/build/mutants/rows/wf_counts_swapped/run \
    > build/make.log 2>&1 || { tail -n 20 build/make.log; exit 1; }
echo "== built in $((SECONDS - T0)) s"
GPU_ONLY=rows/step22_welford,wf_counts_swapped GPU_JOBS=16 timeout 240 python3 -u tests/gpu_suite.py
echo "== suite done at $((SECONDS - T0)) s"
wide22=("--rows 512 --cols 128256" "--rows 4096 --cols 151936" "--rows 3 --cols 262144"
        "--rows 64 --cols 128255 --offset 1")
wide=("--rows 32768 --cols 1024" "--rows 1024 --cols 32768" "--rows 256 --cols 65536"
      "--rows 4096 --cols 50257" "--rows 512 --cols 128256")
python3 wip-harness/step22_variants.py > build/variants.txt || exit 1
while read -r name base src; do
    p=$(bash tools/grade_source.sh --build-only "$src") || { echo "no build: $name"; continue; }
    b=$base/run
    echo "== $name against $base"
    if [[ $name == s22_* ]]; then shapes=("${wide22[@]}"); else shapes=("${wide[@]}"); fi
    for shape in "${shapes[@]}"; do
        for k in 1 2; do
            flags=$([ $k = 1 ] && echo "" || echo "--no-verify")
            sb=$("$b" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2}')
            sv=$("$p" $shape --reps 20 $flags 2>&1 | awk '/^speed|^FAIL|^check +--/ {print ($1=="speed") ? $2 : "FAIL"}' | tr '\n' ' ')
            echo "  [$shape] run $k: base $sb GB/s, $name $sv GB/s"
        done
    done
    for fill in centered shifted tiny; do
        echo "  check $fill: $("$p" --check --rows 64 --cols 100001 --fill $fill | tail -n 1)"
    done
done < build/variants.txt
echo "== done at $((SECONDS - T0)) s"
