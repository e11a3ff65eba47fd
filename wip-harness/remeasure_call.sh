#!/bin/bash
# Session 26: part 2 measured again after the option parser (parser44) moved every hash.
#   PHASE=S GIT_REV=<rev> bash wip-harness/remeasure_call.sh
#       build, part 2's GPU suite (GPU_PART=rows), then part 2's counters (verify --skip grade,bench)
#   PHASE=B GIT_REV=<rev> ROUNDS="1" RUN_ID=<id> [CHECK_JOBS=8] [CHECKS_FROM=file] [SEED=dir]
#       bench rounds of part 2 with PyTorch (verify --skip grade,profile --round K); CHECKS_FROM:
#       round 1 takes its exact checks from PHASE=C's file; SEED: a folder holding this run's
#       earlier rounds (h200-rows.csv, h200-rows-bench.log), e.g. wip-harness/remeasure27
#   PHASE=C GIT_REV=<rev> RUN_ID=<id> [CHECK_JOBS=8] bash wip-harness/remeasure_call.sh
#       round 1's exact checks of part 2 alone (bench.py --checks-only, 362 s in session 27),
#       into $OUT/checks-<id>.json and build/remeasure/ (PHASE=B's CHECKS_FROM)
# Logs and results under $OUT (at most 8 files).
set -u
export GIT_REV=${GIT_REV:?} PHASE=${PHASE:?S, B, C, G, P or 1}
T0=$(date +%s); el() { echo "   [t+$(( $(date +%s) - T0 )) s]"; }
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
exec > $OUT/call-$PHASE.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV PHASE=$PHASE"
if [ "$PHASE" = S ]; then
  make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  [ $(left) -gt 230 ] || { echo "no time for the suite"; exit 1; }
  GPU_PART=rows GPU_JOBS=16 timeout $(( $(left) - 130 )) python3 -u tests/gpu_suite.py > $OUT/rows-suite.log 2>&1
  echo "suite rc=$?"; grep -E "^(FAIL|gpu:)" $OUT/rows-suite.log | tail -8 | cut -c1-300; el
  [ $(left) -gt 80 ] && timeout $(( $(left) - 10 )) python3 tools/verify.py --root . --only rows --out-dir plots/reference \
     --verify-dir build/verifyP --skip grade,bench > $OUT/profile.log 2>&1
  echo "profile rc=$?"; tail -3 $OUT/profile.log | cut -c1-300; el
  mkdir -p $OUT/prof; cp plots/reference/h200-rows-profile*.csv $OUT/prof/
fi
if [ "$PHASE" = B ]; then
  : ${RUN_ID:?one id for every round of the run} ${ROUNDS:?the rounds this call runs, e.g. "2 3"}
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  # A warm machine keeps build/ between calls but gets plots/reference from the tree sent:
  # restore this run's merged rounds kept there by the last call, unless the tree has them.
  have=$(grep -c "$RUN_ID" plots/reference/h200-rows.csv)
  for src in ${SEED:-} build/remeasure; do
    kept=0; [ -f $src/h200-rows.csv ] && kept=$(grep -c "$RUN_ID" $src/h200-rows.csv)
    if [ "$kept" -gt "$have" ]; then
      cp $src/h200-rows.csv $src/h200-rows-bench.log plots/reference/
      echo "restored the $kept rows of $RUN_ID kept in $src (the tree had $have)"; have=$kept
    fi
  done
  case " $ROUNDS " in *" 1 "*) ;; *) [ "$have" -gt 0 ] || [ "$kept" -gt 0 ] ||
    echo "WARNING: no row of $RUN_ID here: copy the earlier rounds' h200-rows.csv home first";; esac
  for r in $ROUNDS; do
    [ $(left) -gt ${NEED:-200} ] || { echo "no time for round $r"; break; }
    timeout $(left) python3 tools/verify.py --root . --only rows --out-dir plots/reference --verify-dir build/verifyB$r \
       --torch-python /opt/torch/.venv/bin/python --skip grade,profile --round $r --run-id $RUN_ID \
       ${CHECK_JOBS:+--check-jobs $CHECK_JOBS} $([ "$r" = 1 ] && echo ${CHECKS_FROM:+--checks-from $CHECKS_FROM}) > /tmp/bench$r.log 2>&1
    echo "round $r rc=$?"; tail -n 3 /tmp/bench$r.log | cut -c1-300; el
    { echo "## round $r"; cat /tmp/bench$r.log; } >> $OUT/bench.log
    # plots/reference holds every round merged so far: one copy, the latest, comes back, with the
    # round's own progress (written as it runs: a round cut off by its timeout still shows how far).
    mkdir -p $OUT/ref; cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log $OUT/ref/
    { echo "## round $r"; cat build/verifyB$r/bench.log; } >> $OUT/ref/progress.log 2>/dev/null
    mkdir -p build/remeasure; echo "$RUN_ID" > build/remeasure/run-id
    cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log build/remeasure/
  done
fi
if [ "$PHASE" = C ]; then
  : ${RUN_ID:?the run whose round 1 these checks are}
  make -s -j16 GIT_REV=$GIT_REV $(python3 tools/verify.py --root . --only rows --targets) > /tmp/build.log 2>&1
  echo "build rc=$?"; tail -5 /tmp/build.log; el
  mkdir -p build/remeasure
  timeout $(( $(left) - 5 )) python3 tools/bench.py --root . --only rows --rounds 3 --round 1 --run-id $RUN_ID \
     ${CHECK_JOBS:+--check-jobs $CHECK_JOBS} --checks-only build/remeasure/checks-$RUN_ID.json > $OUT/checks.log 2>&1
  echo "checks rc=$?"; tail -n 2 $OUT/checks.log | cut -c1-300
  cp build/remeasure/checks-$RUN_ID.json $OUT/ 2>/dev/null
fi
el
# PHASE=G GIT_REV=<rev> [BATCH=6] [FBATCH=10] [FIXTURES_ONLY=1: the fixtures but
#   ln_bf16_one_pass_var, graded in session 26] [PROGRAMS_ONLY=1] [FIRST=<a batch run first,
#   ln_bf16_one_pass_var by default>] bash wip-harness/remeasure_call.sh
#   part 2's suite in batches (each prints when it ends): the centered-fill fixture first, then the
#   programs, BATCH at a time, then the fixtures; stops where the time runs out.
if [ "$PHASE" = G ]; then
  make -s -j16 GIT_REV=$GIT_REV NEED_VENV= test-build TEST_GPU=1 > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  progs=$(ls -d rows/step*_*/ rows/baseline_*/ | sed 's#/$##')
  fixtures=$(sed -n 's/^\([a-z0-9_]*\) *| *rows\/.*/\1/p' tests/broken/mutants.txt; ls tests/broken/rows)
  set -- ${FIRST:-ln_bf16_one_pass_var}
  [ -n "${FIXTURES_ONLY:-}" ] && { set --; progs=""; }
  [ -n "${PROGRAMS_ONLY:-}" ] && fixtures=""
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
    rm -f /tmp/progress-$k.txt; GPU_PROGRESS=/tmp/progress-$k.txt GPU_PART=rows GPU_ONLY=$only GPU_JOBS=16 timeout $(( $(left) - 5 )) python3 -u tests/gpu_suite.py >> $OUT/rows-suite.log 2>&1
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
       --merge-into plots/reference --rows --shape $s > /tmp/profile-$s.log 2>&1
    echo "profile $s rc=$?"; tail -2 /tmp/profile-$s.log | cut -c1-200; el
    { echo "## $s"; cat /tmp/profile-$s.log; } >> $OUT/prof/profile.log
    cp plots/reference/h200-rows-profile-$s.csv $OUT/prof/ 2>/dev/null
  done
fi
# PHASE=1 GIT_REV=<rev>: part 1 measured again (~313 s in session 12's terms): make verify ONLY=sum
#   (grade, counters, bench in 3 rounds), make accuracy, make determinism, step 9's protocol, the
#   tuning runs; every changed file of plots/reference comes back in $OUT/p1-results.tgz.
if [ "$PHASE" = 1 ]; then
  touch /tmp/p1-start
  M="make --no-print-directory GIT_REV=$GIT_REV NEED_VENV= PLOT_PYTHON=python3"
  $M -s -j16 $(python3 tools/verify.py --root . --only sum --targets) extras/atomic_step9/run all > /tmp/build.log 2>&1
  echo "build rc=$?"; el
  stage() { local name=$1 est=$2; shift 2
    [ $(left) -gt $est ] || { echo "no time for $name (needs ~$est s)"; return; }
    timeout $(( $(left) - 15 )) "$@" > $OUT/p1-$name.log 2>&1; echo "$name rc=$?"; tail -2 $OUT/p1-$name.log | cut -c1-200; el; }
  stage verify 150 $M verify ONLY=sum OUT_DIR=plots/reference VERIFY_DIR=/tmp/vd-sum
  stage accuracy 40 $M accuracy OUT_DIR=plots/reference
  stage determinism 40 $M determinism OUT_DIR=plots/reference
  stage protocol 20 bash tools/protocol.sh plots/reference/h200-step9-protocol.csv
  stage tune 70 bash tools/tune.sh plots/reference/h200-tune.csv
  stage tune9 40 env TUNE_ONLY=step9 TUNE_BASE="step8_vector step9_singlepass baseline_cub" \
      TUNE_SIZES="1024 2048 4096 8192 16384 32768 65536 131072 262144 524288 1048576 2097152 4194304 16777216 268435456" \
      bash tools/tune.sh plots/reference/h200-tune-step9.csv
  # The charts are drawn at home (make plot), from these files.
  changed=$(find plots/reference -type f -newer /tmp/p1-start ! -name '*.png')
  if [ -n "$changed" ]; then tar czf $OUT/p1-results.tgz $changed; tar tzf $OUT/p1-results.tgz; else echo "no result changed"; fi
fi
