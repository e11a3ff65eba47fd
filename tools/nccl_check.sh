#!/usr/bin/env bash
# nccl_check.sh DEST: every check and measurement of multigpu/ on this
# machine's GPUs, in one run of about five minutes (two H200s), into DEST:
#   <gpu>x<count>-multigpu.csv   the sum over the GPUs against one GPU (nccl and torch rows)
#   <gpu>x<count>-allreduce.csv  all-reduce of 4 B .. 1 GiB (nccl and torch rows)
# each measurement in ROUNDS rounds (3; a round column last), one process
# driving every GPU and one process per GPU for NCCL, one per GPU for torch.
#   nccl-check-logs.tgz          every step's log; nccl-check-summary.txt: the verdicts
# Where the tree has no .git (a copy on a GPU machine), give the revision:
#   GIT_REV=<hash> bash tools/nccl_check.sh DEST
# Every step logs and the script goes on after a failure; every command has a
# timeout. TORCH_PYTHON picks the Python with torch (default: /opt/torch/.venv/bin/python
# if present, else python3). Exit status: 0 if every check passed, else 1.
set -u
cd "$(dirname "$0")/.."
DEST=${1:?usage: tools/nccl_check.sh DEST}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
LOGS=$(mktemp -d /tmp/nccl-check.XXXXXX)
SUMMARY=$DEST/nccl-check-summary.txt
: > "$SUMMARY"
T0=$SECONDS
BUDGET=${BUDGET:-390}   # seconds: later steps shrink their timeouts to fit, or are skipped
FAILED=0
RUN=./multigpu/run
if [ -z "${TORCH_PYTHON:-}" ]; then
    TORCH_PYTHON=python3
    [ -x /opt/torch/.venv/bin/python ] && TORCH_PYTHON=/opt/torch/.venv/bin/python
fi

say() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME WANT SECONDS CMD...: runs CMD into LOGS/NAME.log, expects exit WANT.
step() {
    local name=$1 want=$2 limit=$3; shift 3
    local t=$SECONDS rc
    timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1; rc=$?
    if [ "$rc" -eq "$want" ]; then
        say "PASS $name (exit $rc, $((SECONDS - t)) s)"
    else
        FAILED=$((FAILED + 1))
        say "FAIL $name: exit $rc, wanted $want ($((SECONDS - t)) s); last lines:"
        tail -n 5 "$LOGS/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
}

# two_ranks NAME WANT0 WANT1 ARGS...: rank 1 in the background, rank 0 in the
# foreground, one fresh id file; both exit codes checked.
two_ranks() {
    local name=$1 want0=$2 want1=$3; shift 3
    local id rc0 rc1 pid t=$SECONDS
    id=$(mktemp -u /tmp/nccl-id.XXXXXX)
    timeout "$(left 120)" "$RUN" --rank 1 --world 2 --id-file "$id" "$@" > "$LOGS/$name.rank1.log" 2>&1 &
    pid=$!
    timeout "$(left 120)" "$RUN" --rank 0 --world 2 --id-file "$id" "$@" > "$LOGS/$name.rank0.log" 2>&1
    rc0=$?
    wait "$pid"; rc1=$?
    rm -f "$id"
    if [ "$rc0" -eq "$want0" ] && [ "$rc1" -eq "$want1" ]; then
        say "PASS $name (ranks exit $rc0 and $rc1, $((SECONDS - t)) s)"
    else
        FAILED=$((FAILED + 1))
        say "FAIL $name: ranks exit $rc0 and $rc1, wanted $want0 and $want1; last lines:"
        tail -n 3 "$LOGS/$name.rank0.log" "$LOGS/$name.rank1.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
}

# in_budget NAME [SECONDS]: 0 if NAME may still start (SECONDS of the budget
# must be left, 30 by default), else one SKIP line. left CAP: a step's
# timeout, CAP or what is left of the budget, whichever is less.
in_budget() {
    [ $((BUDGET - (SECONDS - T0))) -ge "${2:-30}" ] || { say "SKIP $1: too little of the ${BUDGET} s budget left"; return 1; }
}
left() { local l=$((BUDGET - (SECONDS - T0))); [ "$l" -lt "$1" ] || l=$1; [ "$l" -gt 10 ] || l=10; echo "$l"; }

# ------------------------------------------------------------ the machine
{
    echo "== nvidia-smi"; timeout 30 nvidia-smi
    echo "== topology"; timeout 30 nvidia-smi topo -m
    echo "== nvcc"; timeout 30 nvcc --version
    echo "== nccl.h"; ls -l /usr/include/nccl.h /usr/local/include/nccl.h /usr/local/cuda/include/nccl.h 2>&1
    grep -h -m3 -E '#define NCCL_(MAJOR|MINOR|PATCH)' /usr/include/nccl.h /usr/local/cuda/include/nccl.h 2>/dev/null
    echo "== libnccl"; ldconfig -p 2>/dev/null | grep -i nccl
    echo "== torch"; timeout 60 "$TORCH_PYTHON" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.device_count())' 2>&1
} > "$LOGS/machine.log" 2>&1
cat "$LOGS/machine.log"
GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
# The GPUs the CUDA runtime sees (nvidia-smi ignores CUDA_VISIBLE_DEVICES),
# and two of them: the per-process runs are two ranks, so every setup (one
# process, a process a GPU, torch.distributed) runs on the same pair.
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && GPUS=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
if [ "$GPUS" -gt 2 ]; then
    PAIR=$(echo "${CUDA_VISIBLE_DEVICES:-0,1}" | cut -d, -f1,2)
    say "nccl_check: $GPUS GPUs visible; this check uses two, CUDA_VISIBLE_DEVICES=$PAIR"
    export CUDA_VISIBLE_DEVICES=$PAIR GPUS=2
fi
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
SLUG=$(python3 tools/schema.py slug "$NAME" 2>/dev/null)
PREFIX=${SLUG:-gpu}x$GPUS
SUM_CSV=$DEST/$PREFIX-multigpu.csv
VEC_CSV=$DEST/$PREFIX-allreduce.csv
rm -f "$SUM_CSV" "$VEC_CSV"
say "nccl_check: $GPUS x $NAME, revision ${GIT_REV:-unknown}, into $DEST ($PREFIX-*.csv)"

# ------------------------------------------------------------ build
step build 0 300 make -j"$(nproc)" multigpu GIT_REV="${GIT_REV:-unknown}"
[ -x "$RUN" ] || { say "FAIL: no $RUN, nothing more to run"; tar -czf "$DEST/nccl-check-logs.tgz" -C "$LOGS" .; exit 1; }
timeout 30 "$RUN" --version | tee -a "$SUMMARY"

# ------------------------------------------------------------ correctness (exact fill, tolerance 0)
SIZES=1,2,3,1000,4097,1048577,33554435,2147483647
step check-all-gpus 0 180 "$RUN" --check --combine all --n $SIZES
step check-gpu0 0 90 env CUDA_VISIBLE_DEVICES=0 "$RUN" --check --combine all --n 1,2,3,4097,33554435
step check-gpu1 0 90 env CUDA_VISIBLE_DEVICES=1 "$RUN" --check --combine all --n 1,3,4097,33554435
step check-gpus-1-0 0 90 env CUDA_VISIBLE_DEVICES=1,0 "$RUN" --check --combine all --n 1,3,4097,1048577
step check-gpus-1 0 90 "$RUN" --check --gpus 1 --combine allreduce,reduce --n 3,1048577
step check-random-fill 0 90 "$RUN" --check --fill random --combine all --n 1000,33554435
step check-vector 0 120 "$RUN" --vector --check --max-bytes 64M
two_ranks check-per-process 0 0 --check --combine allreduce,reduce --n 1,2,3,4097,1048577,33554435
two_ranks check-per-process-vector 0 0 --vector --check --max-bytes 16M

# Bad input: one line and the exit code.
step bad-n 2 20 "$RUN" --n abc
step bad-n-zero 2 20 "$RUN" --n 0
step bad-combine 2 20 "$RUN" --combine sum
step bad-rank 2 20 "$RUN" --rank 2 --world 2 --id-file /tmp/nccl-id-bad
step bad-host-per-process 2 20 "$RUN" --rank 0 --world 2 --id-file /tmp/nccl-id-bad --combine host
step bad-gpus 2 30 "$RUN" --gpus 9 --check --n 10
step rank1-alone-times-out 3 30 "$RUN" --rank 1 --world 2 --id-file /tmp/nccl-id-nobody --wait 3 --check --n 10
for f in "$LOGS"/bad-*.log "$LOGS"/rank1-alone-times-out.log; do
    lines=$(wc -l < "$f")
    [ "$lines" -eq 1 ] || { FAILED=$((FAILED + 1)); say "FAIL $(basename "$f" .log): $lines lines, wanted one"; }
done

# ------------------------------------------------------------ benchmark, in rounds
# Each measurement runs ROUNDS times (default 3), each time a process of its
# own (a pair of ranks, a torchrun job), in an order that turns by one each
# round; every row gets its round in a last column, so the charts and the
# summary take the median round and show the spread. Like for like: one
# process driving every GPU (single), and one process per GPU (per-process)
# for NCCL as torch.distributed runs it; torch.distributed has no
# single-process mode of several GPUs.
ROUNDS=${ROUNDS:-3}
POWERS=$(python3 -c 'print(",".join(str(1 << k) for k in range(20, 31)) + ",2147483647")')
TORCH_OK=0
if timeout 60 "$TORCH_PYTHON" -c 'import torch, torch.distributed' > /dev/null 2>&1; then
    TORCH_OK=1
    TORCHRUN=$(dirname "$TORCH_PYTHON")/torchrun
    [ -x "$TORCHRUN" ] || TORCHRUN="$TORCH_PYTHON -m torch.distributed.run"
else
    say "SKIP torch: $TORCH_PYTHON cannot import torch"
fi

# add_round SRC DEST K: SRC's rows appended to DEST with round K (DEST's
# header, with the round column, written first when DEST is new).
add_round() {
    [ -s "$1" ] || return 0
    python3 - "$@" <<'PY'
import csv, os, sys
src, dest, k = sys.argv[1:]
with open(src, newline="") as f:
    rows = list(csv.reader(f))
new = not os.path.exists(dest) or os.path.getsize(dest) == 0
with open(dest, "a", newline="") as f:
    out = csv.writer(f, lineterminator="\n")
    if new:
        out.writerow(rows[0] + ["round"])
    for row in rows[1:]:
        out.writerow(row + [k])
PY
    rm -f "$1"
}

# One measurement of round K each; each writes its rows to the round's files.
bench_sum() { in_budget "bench-sum-r$1" && step "bench-sum-r$1" 0 "$(left 120)" "$RUN" --combine all --n "$POWERS" --csv "$LOGS/sum-r$1.csv"; }
bench_allreduce() { in_budget "bench-allreduce-r$1" && step "bench-allreduce-r$1" 0 "$(left 90)" "$RUN" --vector --csv "$LOGS/vec-r$1.csv"; }
bench_sum_pp() { in_budget "bench-sum-per-process-r$1" 60 && two_ranks "bench-sum-per-process-r$1" 0 0 --combine allreduce \
    --n "$POWERS" --csv "$LOGS/sum-r$1.pp.csv"; }
bench_allreduce_pp() { in_budget "bench-allreduce-per-process-r$1" 60 && two_ranks "bench-allreduce-per-process-r$1" 0 0 --vector \
    --csv "$LOGS/vec-r$1.pp.csv"; }
bench_torch() {
    [ "$TORCH_OK" -eq 1 ] || return 0
    in_budget "torch-r$1" 60 && step "torch-r$1" 0 "$(left 120)" env GIT_REV="${GIT_REV:-unknown}" $TORCHRUN --standalone \
        --nproc_per_node="$GPUS" tools/torch_dist.py --allreduce-csv "$LOGS/vec-r$1.torch.csv" \
        --sum-csv "$LOGS/sum-r$1.torch.csv" --sizes "$POWERS"
}
MEASUREMENTS=(bench_sum bench_allreduce bench_sum_pp bench_allreduce_pp bench_torch)
for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < ${#MEASUREMENTS[@]}; k++)); do
        "${MEASUREMENTS[$(( (k + r - 1) % ${#MEASUREMENTS[@]} ))]}" "$r"
    done
    for f in "$LOGS/sum-r$r".*csv "$LOGS/sum-r$r.csv"; do add_round "$f" "$SUM_CSV" "$r"; done
    for f in "$LOGS/vec-r$r".*csv "$LOGS/vec-r$r.csv"; do add_round "$f" "$VEC_CSV" "$r"; done
done

# ------------------------------------------------------------ compute-sanitizer (last: optional)
if command -v compute-sanitizer > /dev/null && in_budget sanitize 70; then
    step sanitize-memcheck 0 "$(left 60)" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$RUN" \
        --check --combine all --n 4097
fi

# ------------------------------------------------------------ summary
timeout 60 python3 tools/multigpu_chart.py --summary --sum "$SUM_CSV" --allreduce "$VEC_CSV" \
    2>&1 | tee -a "$SUMMARY"
# The two charts beside the CSVs (python3 with matplotlib), as make plot draws them.
timeout 60 python3 tools/multigpu_chart.py --sum "$SUM_CSV" --allreduce "$VEC_CSV" 2>&1 | tee -a "$SUMMARY"
say "nccl_check: $FAILED failed, $((SECONDS - T0)) s"
tar -czf "$DEST/nccl-check-logs.tgz" -C "$LOGS" .
[ "$FAILED" -eq 0 ]
