#!/bin/bash
# Part 2's bench with PyTorch, over calls that may each land on a fresh machine.
#   PHASE=W OPS=<compiled ops> : torch_rows.py once over the bench's 12 shapes, serially as
#       bench does (no other GPU work: Triton's autotuning picks the same configs), untimed; then
#       the cache (build/torch-cache) comes home as $OUT/W/cache.tgz (split if > 15 MiB).
#       Here: mkdir -p build && tar xzf <files>/cache.tgz -C build; carry ["build/torch-cache", ".devwork"].
#   PHASE=R ROUNDS="1 2" RUN_ID=<fixed>: rounds, each kept in $OUT as a tar (merge locally).
set -u
L=$OUT/$PHASE; mkdir -p $L
exec > $L/call.log 2>&1
export GIT_REV=${GIT_REV:?}
T0=$(date +%s); el() { echo "   [t+$(( $(date +%s) - T0 )) s]"; }
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=$GIT_REV"
du -sh build/torch-cache 2>/dev/null
[ "$PHASE" = W ] || { make -j16 all > $L/build.log 2>&1; echo "build rc=$?"; el; }   # PyTorch needs none of ours
if [ "$PHASE" = W ]; then
  shapes=$(python3 -c "import sys; sys.path.insert(0,'tools'); import bench; print(','.join(f'{a}x{b}' for a,b in bench.ROW_SHAPES))")
  timeout $(( $(left) - 40 )) /opt/torch/.venv/bin/python tools/torch_rows.py --csv build/torch-warm.csv \
     --shapes $shapes --ops ${OPS:?} --reps 1 --warmup 0 > $L/warm.log 2>&1
  echo "warm rc=$?"; wc -l < build/torch-warm.csv; el
  du -sh build/torch-cache build/torch-cache/*
  tar czf /tmp/cache.tgz -C build torch-cache; ls -l /tmp/cache.tgz
  if [ $(stat -c %s /tmp/cache.tgz) -gt 15000000 ]; then split -b 15M -d /tmp/cache.tgz $L/cache.tgz.part; else cp /tmp/cache.tgz $L/; fi
  el
fi
if [ "$PHASE" = R ]; then
  for r in $ROUNDS; do
    [ $(left) -gt ${NEED:-200} ] || { echo "no time for round $r"; break; }
    timeout $(left) python3 tools/verify.py --root . --only rows --out-dir plots/reference --verify-dir build/verifyB$r \
       --torch-python /opt/torch/.venv/bin/python --skip grade,profile --round $r --run-id $RUN_ID > $L/bench$r.log 2>&1
    echo "round $r rc=$?"; tail -n 3 $L/bench$r.log; el
    mkdir -p $L/ref; cp plots/reference/h200-rows.csv plots/reference/h200-rows-bench.log $L/ref/
    tar czf $L/ref$r.tgz -C $L ref; rm -rf $L/ref
  done
fi
