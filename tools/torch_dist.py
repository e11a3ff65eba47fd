#!/usr/bin/env python3
"""torch_dist.py: the framework path beside multigpu/run, one process per GPU.

    torchrun --nproc_per_node=2 tools/torch_dist.py --allreduce-csv A.csv --sum-csv S.csv

Times torch.distributed's all_reduce (nccl backend) of float vectors from 4
bytes to --max-bytes, and the two-halves sum: each rank sums its shard with
torch.sum, then one all_reduce of that one float; rank 0 also times
torch.sum over all n alone. Timed as multigpu/run times: L2 flushed before
each repetition by a read of a buffer 4x the L2 (as common/flush.cu: a read
leaves no dirty line to be written back inside the timed span), a one-float all_reduce as
the common start, CUDA events, the slowest rank's time, median. Rows have
multigpu/run's columns (multigpu/plan.h), source torch. Without torch it
says so in one line and exits 0.
"""
import argparse
import os
import statistics
import subprocess
import sys

import code_hash

SUM_COLUMNS = ("step,source,n,gpus,launch,combine,reps,warmup,median_us,min_us,max_us,"
               "one_gpu_us,speedup,gbps,result,reference,abs_err,tol,pass,fill,seed,flush,"
               "gpu,cc,driver,cuda,nccl,git_rev,code_hash,arch,toolchain").split(",")
VECTOR_COLUMNS = ("step,source,bytes,count,gpus,launch,reps,warmup,median_us,min_us,max_us,"
                  "algbw_gbps,busbw_gbps,pass,gpu,cc,driver,cuda,nccl,git_rev,code_hash,arch,"
                  "toolchain").split(",")
FLUSH_L2_MULTIPLE = 4   # common/flush.cu reads 4x the L2


def sizes(text):
    out = []
    for item in text.split(","):
        item = item.strip()
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(item[-1:].upper(), 1)
        digits = item[:-1] if mult > 1 else item
        if not digits.isdigit() or int(digits) == 0:
            raise ValueError(f"{item!r} is not a count of floats (such as 1M or 1073741824)")
        out.append(int(digits) * mult)
    return out


def shard(n, world, rank):
    """multigpu/plan.c's shard_of(): the first n % world shards get one more."""
    base, extra = divmod(n, world)
    return rank * base + min(rank, extra), base + (1 if rank < extra else 0)


def pattern_sum(n):
    """The sum of (i % 3) - 1 over i < n: whole cycles add 0, a tail of 1 or 2 adds -1."""
    return -1.0 if n % 3 else 0.0


def write_rows(path, columns, rows):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as handle:
        if new:
            handle.write(",".join(columns) + "\n")
        for row in rows:
            handle.write(",".join(str(row.get(c, "")) for c in columns) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--allreduce-csv")
    parser.add_argument("--sum-csv")
    parser.add_argument("--max-bytes", type=int, default=1 << 30)
    # Not --n: torchrun takes an abbreviation of its own options (--nnodes, ...)
    # even after the script, and --n would be ambiguous there.
    parser.add_argument("--sizes", default="")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    # Said before torch and NCCL start, once, not on every rank after them.
    if args.reps < 1 or args.warmup < 0 or args.max_bytes < 4:
        parser.error("--reps must be at least 1, --warmup at least 0, --max-bytes at least 4")
    if not (args.allreduce_csv or args.sum_csv):
        parser.error("give --allreduce-csv, --sum-csv or both: nothing to measure")
    if args.sum_csv and not args.sizes:
        parser.error("--sum-csv needs --sizes (the n to sum, such as 1M,1G)")
    try:
        sizes(args.sizes) if args.sizes else None
    except ValueError as err:
        parser.error(f"--sizes: {err}")
    try:
        import torch
        import torch.distributed as dist
    except ImportError as err:
        print(f"torch_dist.py: skipped: torch is not importable ({err})")
        return 0

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    flush = torch.zeros(FLUSH_L2_MULTIPLE * l2 // 4, dtype=torch.float32, device=dev)
    token = torch.zeros(1, device=dev)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader"], capture_output=True, text=True,
                                timeout=20).stdout.split("\n")[0].strip()
    except (OSError, subprocess.SubprocessError):
        driver = ""
    build = {"gpu": props.name, "cc": f"{props.major}.{props.minor}", "driver": driver,
             "cuda": torch.version.cuda or "",
             "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
             "git_rev": os.environ.get("GIT_REV", "unknown"),
             "code_hash": code_hash.code_hash([os.path.abspath(__file__)]),
             "arch": "", "toolchain": f"torch {torch.__version__}",
             "step": "torch", "source": "torch", "gpus": world, "launch": "per-process",
             "reps": args.reps, "warmup": args.warmup}

    def timed(body, prepare=None, collective=True):
        """Median, min, max (us) of body() over the slowest rank."""
        times = []
        for r in range(args.warmup + args.reps):
            if prepare is not None:
                prepare()
            flush.sum()                     # 4x the L2 read: the input comes from DRAM
            torch.cuda.synchronize()
            if collective:
                dist.all_reduce(token)      # the common start
            start.record()
            body()
            stop.record()
            stop.synchronize()
            if r >= args.warmup:
                times.append(start.elapsed_time(stop) * 1e3)
        if collective:
            t = torch.tensor(times, dtype=torch.float64, device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            times = t.tolist()
        return statistics.median(times), min(times), max(times)

    if args.allreduce_csv:
        rows = []
        count_max = args.max_bytes // 4
        pristine = torch.full((count_max,), float(rank + 1), dtype=torch.float32, device=dev)
        buf = torch.empty_like(pristine)
        want = world * (world + 1) / 2
        nbytes = 4
        while nbytes <= args.max_bytes:
            count = nbytes // 4
            view = buf[:count]
            med, lo, hi = timed(lambda: dist.all_reduce(view),
                                prepare=lambda: view.copy_(pristine[:count]))
            ok = torch.tensor([1.0 if bool((view == want).all()) else 0.0], device=dev)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            algbw = nbytes / med / 1e3
            row = dict(build, bytes=nbytes, count=count, median_us=f"{med:.3f}",
                       min_us=f"{lo:.3f}", max_us=f"{hi:.3f}", algbw_gbps=f"{algbw:.4f}",
                       busbw_gbps=f"{algbw * 2 * (world - 1) / world:.4f}",
                       **{"pass": int(ok.item())})
            rows.append(row)
            if rank == 0:
                print(f"torch all_reduce {nbytes:>12} B: {med:10.1f} us  algbw {algbw:8.2f} GB/s"
                      f"  {'PASS' if row['pass'] else 'FAIL'}", flush=True)
            nbytes *= 2
        del pristine, buf
        if rank == 0:
            write_rows(args.allreduce_csv, VECTOR_COLUMNS, rows)

    if args.sum_csv and args.sizes:
        rows = []
        for n in sizes(args.sizes):
            first, count = shard(n, world, rank)
            x = (torch.arange(first, first + count, device=dev, dtype=torch.int64) % 3 - 1).float()
            total = torch.zeros((), device=dev)

            def two_halves():
                total.copy_(x.sum())
                dist.all_reduce(total)
            med, lo, hi = timed(two_halves)
            ok = total.item() == pattern_sum(n)
            del x
            base = ""
            if rank == 0:   # one GPU alone, on all n
                full = (torch.arange(n, device=dev, dtype=torch.int64) % 3 - 1).float()
                out = torch.zeros((), device=dev)
                b_med, _, _ = timed(lambda: out.copy_(full.sum()), collective=False)
                ok = ok and out.item() == pattern_sum(n)
                base = b_med
                del full
            verdict = torch.tensor([1.0 if ok else 0.0], device=dev)
            dist.all_reduce(verdict, op=dist.ReduceOp.MIN)
            torch.cuda.empty_cache()
            if rank == 0:
                speedup = base / med
                print(f"torch sum n={n}: two GPUs {med:.1f} us, one GPU {base:.1f} us, "
                      f"speed-up {speedup:.2f}x {'PASS' if verdict.item() else 'FAIL'}",
                      flush=True)
                rows.append(dict(build, n=n, combine="allreduce", median_us=f"{med:.3f}",
                                 min_us=f"{lo:.3f}", max_us=f"{hi:.3f}",
                                 one_gpu_us=f"{base:.3f}", speedup=f"{speedup:.4f}",
                                 gbps=f"{4 * n / med / 1e3:.1f}", result=total.item(),
                                 reference=pattern_sum(n),
                                 abs_err=abs(total.item() - pattern_sum(n)), tol=0,
                                 fill="mod3", seed=0, flush=1,
                                 **{"pass": int(verdict.item())}))
        if rank == 0:
            write_rows(args.sum_csv, SUM_COLUMNS, rows)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
