#!/bin/bash
# The A/B a review asked for (session 27's fix to tools/torch_rows.py): PyTorch's
# eager and compiled rows with the GPU's spin after the flush (default) and without
# it (--sleep-cycles 0), three rounds each, a process a round as the bench runs them.
#   bash wip-harness/torch_spin_ab.sh   (logs $OUT/spin-ab.log, $OUT/spin-*.csv)
set -u
PY=/opt/torch/.venv/bin/python
OPS=softmax,compiled/softmax,layernorm,compiled/layernorm
SHAPES=4096x1024,32768x1024
T0=$(date +%s)
for r in 1 2 3; do
  for sc in 0 1048576; do
    [ $(( $(date +%s) - T0 )) -lt ${BUDGET:-280} ] || { echo "no time for round $r sleep $sc"; continue; }
    timeout 120 $PY tools/torch_rows.py --csv $OUT/spin-$sc.csv --ops $OPS --shapes $SHAPES \
        --round $r --sleep-cycles $sc 2>&1 | grep -v "^$" | tail -3
    echo "round $r sleep $sc rc=$? t+$(( $(date +%s) - T0 )) s"
  done
done
python3 - <<'PY'
import csv, os, collections
out = os.environ["OUT"]
for sc in ("0", "1048576"):
    p = f"{out}/spin-{sc}.csv"
    if not os.path.exists(p): continue
    by = collections.defaultdict(list)
    for row in csv.DictReader(open(p)):
        by[(row["step"], row["rows"], row["cols"])].append(float(row["median_us"]))
    for k, v in sorted(by.items()):
        print(f"sleep {sc:>7}  {k[0]:<28} {k[1]}x{k[2]}  medians {' '.join(f'{x:.2f}' for x in v)}  spread {max(v)/min(v)-1:.1%}")
PY
