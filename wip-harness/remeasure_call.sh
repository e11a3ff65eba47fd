#!/bin/bash
# Session 26: part 2 measured again after the option parser (parser44) moved every hash.
#   PHASE=S GIT_REV=<rev> bash wip-harness/remeasure_call.sh
#       build, part 2's GPU suite (GPU_PART=rows), then part 2's counters (verify --skip grade,bench)
#   PHASE=B GIT_REV=<rev> ROUNDS="1" RUN_ID=<id> [CHECK_JOBS=16] bash wip-harness/remeasure_call.sh
#       bench rounds of part 2 with PyTorch (verify --skip grade,profile --round K)
# Logs and results under $OUT (at most 8 files).
set -u
export GIT_REV=${GIT_REV:?}
T0=$(date +%s); el() { echo "   [t+$(( $(date +%s) - T0 )) s]"; }
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
exec > $OUT/call-$PHASE.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV PHASE=$PHASE"
if [ "$PHASE" = S ]; then
  make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  GPU_PART=rows GPU_JOBS=16 timeout $(( $(left) - 130 )) python3 -u tests/gpu_suite.py > $OUT/rows-suite.log 2>&1
  echo "suite rc=$?"; grep -E "^(FAIL|gpu:)" $OUT/rows-suite.log | tail -8 | cut -c1-300; el
  timeout $(( $(left) - 10 )) python3 tools/verify.py --root . --only rows --out-dir plots/reference \
     --verify-dir build/verifyP --skip grade,bench > $OUT/profile.log 2>&1
  echo "profile rc=$?"; tail -3 $OUT/profile.log | cut -c1-300; el
  mkdir -p $OUT/prof; cp plots/reference/h200-rows-profile*.csv $OUT/prof/
fi
if [ "$PHASE" = B ]; then
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  for r in $ROUNDS; do
    [ $(left) -gt ${NEED:-200} ] || { echo "no time for round $r"; break; }
    timeout $(left) python3 tools/verify.py --root . --only rows --out-dir plots/reference --verify-dir build/verifyB$r \
       --torch-python /opt/torch/.venv/bin/python --skip grade,profile --round $r --run-id $RUN_ID \
       ${CHECK_JOBS:+--check-jobs $CHECK_JOBS} > $OUT/bench$r.log 2>&1
    echo "round $r rc=$?"; tail -n 3 $OUT/bench$r.log | cut -c1-300; el
    mkdir -p $OUT/ref$r; cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log $OUT/ref$r/
  done
fi
el
# PHASE=G GIT_REV=<rev> [BATCH=6] [FBATCH=10] [FIXTURES_ONLY=1] bash wip-harness/remeasure_call.sh
#   part 2's suite in batches (each prints when it ends): the centered-fill fixture first, then the
#   programs, BATCH at a time, then the fixtures; stops where the time runs out.
if [ "$PHASE" = G ]; then
  make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  progs=$(ls -d rows/step*_*/ rows/baseline_*/ | sed 's#/$##')
  fixtures=$(sed -n 's/^\([a-z0-9_]*\) *| *rows\/.*/\1/p' tests/broken/mutants.txt; ls tests/broken/rows)
  set -- ln_bf16_one_pass_var
  [ -n "${FIXTURES_ONLY:-}" ] && { set --; progs=""; }
  b=""; n=0
  for p in $progs; do b="$b,$p"; n=$((n+1)); [ $n -ge ${BATCH:-6} ] && { set -- "$@" "${b#,}"; b=""; n=0; }; done
  [ -n "$b" ] && set -- "$@" "${b#,}"
  # Fixtures ${FBATCH:-10} a batch: 18 took more than 120 s (session 26).
  b=""; n=0
  for f in $fixtures; do [ "$f" = ln_bf16_one_pass_var ] && continue; b="$b,$f"; n=$((n+1))
    [ $n -ge ${FBATCH:-10} ] && { set -- "$@" "${b#,}"; b=""; n=0; }; done
  [ -n "$b" ] && set -- "$@" "${b#,}"
  k=0
  for only in "$@"; do
    k=$((k+1)); [ $(left) -gt ${NEED:-60} ] || { echo "no time for batch $k: $only"; continue; }
    echo "## batch $k: $only" >> $OUT/rows-suite.log
    GPU_PROGRESS=/tmp/progress-$k.txt GPU_PART=rows GPU_ONLY=$only GPU_JOBS=16 timeout $(( $(left) - 5 )) python3 -u tests/gpu_suite.py >> $OUT/rows-suite.log 2>&1
    echo "batch $k rc=$? $(tail -1 $OUT/rows-suite.log | cut -c1-100)"; el
    { echo "## batch $k"; cat /tmp/progress-$k.txt; } >> $OUT/progress.txt 2>/dev/null
  done
fi
# PHASE=P GIT_REV=<rev> [SHAPES="4096x50257 512x128256 8192x4097"]: part 2's counters at the shapes
#   named (about 66 s a shape for its 29 programs), each merged into plots/reference as it ends.
if [ "$PHASE" = P ]; then
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  mkdir -p $OUT/prof
  for s in ${SHAPES:-4096x50257 512x128256 8192x4097}; do
    [ $(left) -gt ${NEED:-90} ] || { echo "no time for $s"; continue; }
    timeout $(( $(left) - 5 )) python3 tools/profile.py --root . --only rows --out-dir build/verifyP \
       --merge-into plots/reference --rows --shape $s > $OUT/prof/profile-$s.log 2>&1
    echo "profile $s rc=$?"; tail -2 $OUT/prof/profile-$s.log | cut -c1-200; el
    cp plots/reference/h200-rows-profile-$s.csv $OUT/prof/ 2>/dev/null
  done
fi
