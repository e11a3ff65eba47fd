#!/usr/bin/env bash
# plan probe: what round 1 of the softmax bench costs at the two new shapes (GIT_REV=$1)
set -u
export GIT_REV=$1
ms() { echo $(( $(date +%s%N) / 1000000 )); }
t0=$(ms)
make -s -j16 GIT_REV=$1 rows/step15_cluster/run rows/step9_online/run rows/step11_bf16/run > $OUT/b.log 2>&1 || { tail $OUT/b.log; exit 1; }
echo "built $(( $(ms) - t0 )) ms"
for s in rows/step15_cluster rows/step9_online rows/step11_bf16; do for sh in "4096 151936" "1 262144" "4096 50257"; do set -- $sh
  a=$(ms); timeout 100 ./$s/run --rows $1 --cols $2 --reps 20 --warmup 3 --csv $OUT/p.csv > /dev/null 2>>$OUT/p.err; rc=$?
  b=$(ms); timeout 40 ./$s/run --rows $1 --cols $2 --reps 20 --warmup 3 --no-verify --csv $OUT/p.csv > /dev/null 2>>$OUT/p.err
  c=$(ms); echo "$s ${1}x$2 checked rc=$rc $(( b - a )) ms, no-verify $(( c - b )) ms"; done; done
a=$(ms); timeout 100 /opt/torch/.venv/bin/python tools/torch_rows.py --csv $OUT/t.csv --shapes 4096x151936 --ops softmax > $OUT/t.log 2>&1; echo "torch eager 1 shape rc=$? $(( $(ms) - a )) ms"
a=$(ms); timeout 100 /opt/torch/.venv/bin/python tools/torch_rows.py --csv $OUT/t.csv --shapes 4096x151936 --ops compiled/softmax > $OUT/t.log 2>&1; echo "torch compiled 1 shape rc=$? $(( $(ms) - a )) ms"
