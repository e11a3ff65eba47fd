#!/bin/bash
# Session 36: which part of step 26's push pays. Times step 24 (pairs met at cluster.sync, read
# remotely, split barrier at exit), dsst (dsst.py: pairs stored remotely, cluster.sync, read
# locally, no exit wait) and step 26 (st.async on an mbarrier, no cluster barrier), with the
# bfloat16 copy, A B C D twice at the bulk widths; round 1 checks each (every 64th row at the
# 4096-row shapes), round 2 times only. Then racecheck and memcheck on dsst at the bulk widths.
#   GIT_REV=<rev> bash wip-harness/s36_pairs/call.sh   (log: $OUT/pairs.log)
set -u
T0=$SECONDS
exec > $OUT/pairs.log 2>&1
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) GIT_REV=${GIT_REV:?}"
python3 wip-harness/s36_pairs/dsst.py
make -s -j16 GIT_REV=$GIT_REV rows/step24_bf16_narrow/run rows/step26_bf16_push/run rows/baseline_copy16/run > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
dsst=$(bash tools/grade_source.sh --build-only build/wip/dsst/rows.cu) || { echo "dsst: no build"; exit 1; }
echo "== built in $((SECONDS - T0)) s: $dsst"
for shape in "--rows 4096 --cols 50257" "--rows 256 --cols 65536" "--rows 512 --cols 128256" "--rows 4096 --cols 151936"; do
  for k in 1 2; do
    line="[$shape] run $k:"
    for p in rows/baseline_copy16/run rows/step24_bf16_narrow/run "$dsst" rows/step26_bf16_push/run; do
      flags="--no-verify"
      if [ $k = 1 ] && [ "$p" != rows/baseline_copy16/run ]; then
        flags=""; case "$shape" in *4096*) flags="--check-every 64";; esac
      fi
      s=$(timeout 120 "$p" $shape --reps 20 $flags 2>&1 | awk '/^speed/ {print $2} /FAIL/ {print "FAIL"}' | tr '\n' ' ')
      line="$line $(basename $(dirname $p))=${s:-?}"
    done
    echo "  $line"
  done
done
echo "== timed at $((SECONDS - T0)) s"
for tool in racecheck memcheck; do for shape in "6 70001 0" "3 32769 3"; do set -- $shape
  r=$(timeout 60 compute-sanitizer --tool $tool "$dsst" --rows $1 --cols $2 --offset $3 --y-offset $3 --reps 1 --warmup 0 2>&1 | grep -E "SUMMARY|FAIL" | tr '\n' ' ')
  echo "  dsst $tool ${1}x$2 offsets $3/$3: $r"
done; done
echo "== done at $((SECONDS - T0)) s"
