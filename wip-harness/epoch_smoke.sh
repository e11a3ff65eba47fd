#!/bin/bash
# The harness-parts branch's first GPU call (issue 48 and the harness change): build,
# then a few runs of each part, the two cache fixtures and the host cheats, and the
# grader's quick matrix on three programs. Logs under $OUT/smoke; a few minutes.
set -u
L=$OUT/smoke; mkdir -p $L
exec > >(tee $L/smoke.log) 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
t0=$(date +%s); make -j16 all monitored broken extras/atomic_step9/run > $L/build.log 2>&1; echo "build rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "error" $L/build.log | head
for c in "./step3/run" "./step9/run -n 268435456" "./step9/run --same-input --reps 50" \
         "./rows/step10/run --rows 4096 --cols 50257" "./rows/step17/run --rows 512 --cols 128256" \
         "./rows/step18/run" "./rows/step19/run --check" "./rows/step19/run" \
         "./rows/step19/run --rows 512 --cols 128256" "./rows/step19/run --rows 3 --cols 1000000" \
         "./rows/step20/run" "./rows/step20/run --rows 512 --cols 128256" "./rows/step21/run --check" \
         "./rows/step21/run" "./rows/step21/run --rows 4096 --cols 8192 --offset 3 --y-offset 5" \
         "./rows/step15/run --same-input"; do
  echo "== $c"; timeout 300 $c 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"
done
t0=$(date +%s)
make test SUITES=gpu ONLY=cache_sum,cache_rows,host_sum_mapped,host_rows_pinned V=1 PLOT_PYTHON=python3 > $L/suite.log 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^(ok|FAIL|gpu:)" $L/suite.log
t0=$(date +%s)
python3 tools/grade.py --quick build/monitored/step3_idle/run build/monitored/rows/step10_aligned/run \
    build/monitored/rows/step19_rmsnorm/run build/monitored/rows/step20_bf16_rmsnorm/run \
    build/monitored/rows/step21_bf16_add_rmsnorm/run > $L/grade.log 2>&1
echo "grade rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^grade:|FAIL" $L/grade.log | head -20
DETERMINISM_REPS=10 bash tools/determinism.sh $L/det > $L/det.log 2>&1; echo "determinism rc=$?"; tail -3 $L/det.log
