#!/usr/bin/env python3
"""Measure how far every program's float sum lands from the exact one.

Three phases, every row written by the programs themselves (--csv):

1. check: every program (the steps, CUB, extras/*) once per fill (random,
   positive, wide), n (2^10, 2^13, ..., 2^28) and seed (1-3 up to 2^22,
   1 above): `run --check --fill F -n N --seed S --csv TMP`. The CUB run of
   each input adds --cpu-sums, so the CPU's plain float loop and its Kahan
   loop are recorded once per input.
2. repeat: every program once more on one input, to see whether a second
   process gets the same bits.
3. cost: step 8 and its Kahan variant timed (L2 flushed, the harness's
   default repetitions) at 2^25 and 2^28, three alternating rounds, with
   nothing else on the GPU.

Phases 1 and 2 run up to --jobs programs at once (check mode times nothing),
at most two of them at n >= 2^27, whose host-side fill and reference take
seconds. The rows go, in plan order, to OUT_DIR/<gpu>-accuracy.csv.

Exit codes (as plots/bench.py): 0 every run verified, 1 some run failed
(results still written), 2 usage error or programs not built, 3 no CUDA device.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (program discovery, errors and file naming are bench's)
from accuracy_data import COST_BASE, COST_KAHAN, relative_error  # noqa: E402

EXTRAS_DIR = "extras"
FILLS = ("random", "positive", "wide")
SIZES = tuple(1 << k for k in range(10, 29, 3))        # 2^10, 2^13, ..., 2^28
SMALL_N_SEEDS, SEEDS = (1, 2, 3), (1,)                 # small inputs are cheap: more seeds
SMALL_N = 1 << 22
REPEAT_INPUT = ("random", 1 << 22, 1)                  # (fill, n, seed) run twice
COST_SIZES, COST_ROUNDS = (1 << 25, 1 << 28), 3
QUICK_SIZES, QUICK_COST_SIZES = (1 << 10, 1 << 16), (1 << 20,)

# A 2^28 run fills 1 GiB and sums it in double on one core before the GPU
# starts; two at a time keep host memory and the copy engine from thrashing.
BIG_N, BIG_JOBS = 1 << 27, 2
RUN_TIMEOUT_S = 600
CPU_SUMS_PROGRAM = "baseline_cub"
EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE = bench.EXIT_FAILED, bench.EXIT_USAGE, bench.EXIT_DEVICE


@dataclass(frozen=True)
class Run:
    """One program invocation; `args` lacks only the --csv file."""
    name: str       # directory under the root: step3_idle, baseline_cub, extras/kahan_step8
    path: str
    phase: str      # check, repeat or cost
    n: int
    fill: str
    seed: int
    args: tuple
    round: int = 1  # the cost phase runs each program several times

    @property
    def big(self):
        return self.n >= BIG_N


# ---------------------------------------------------------------- programs

def find_programs(root):
    """[(name, run path)]: the steps and CUB in bench's order, then extras/*."""
    names = bench.program_dirs(root)
    extras = os.path.join(root, EXTRAS_DIR)
    if os.path.isdir(extras):
        names += [f"{EXTRAS_DIR}/{d}" for d in sorted(os.listdir(extras))
                  if os.path.isdir(os.path.join(extras, d))
                  and bench._has_program(os.path.join(extras, d))]
    bench.check_built(root, names)
    return [(name, bench.run_path(root, name)) for name in names]


def program_label(name):
    """The CSV `step` value the program writes: its directory's name."""
    return bench.step_label(os.path.basename(name))


# -------------------------------------------------------------------- plan

def plan(programs, quick=False):
    """(parallel runs, serial cost runs), each in the order rows are filed."""
    sizes = QUICK_SIZES if quick else SIZES
    checks = []
    for fill in FILLS:
        for n in sizes:
            for seed in (SMALL_N_SEEDS if n <= SMALL_N and not quick else SEEDS):
                for name, path in programs:
                    args = ("--check", "--fill", fill, "-n", str(n), "--seed", str(seed))
                    if name == CPU_SUMS_PROGRAM:
                        args += ("--cpu-sums",)
                    checks.append(Run(name, path, "check", n, fill, seed, args))
    fill, n, seed = (REPEAT_INPUT[0], sizes[-1], 1) if quick else REPEAT_INPUT
    checks += [Run(name, path, "repeat", n, fill, seed,
                   ("--check", "--fill", fill, "-n", str(n), "--seed", str(seed)))
               for name, path in programs]
    paths = dict(programs)
    pair = [name for name in (COST_BASE, f"{EXTRAS_DIR}/{COST_KAHAN}") if name in paths]
    costs = []
    if len(pair) == 2:
        for n in (QUICK_COST_SIZES if quick else COST_SIZES):
            for k in range(1, 2 if quick else COST_ROUNDS + 1):
                costs += [Run(name, paths[name], "cost", n, "random", 1,
                              ("--fill", "random", "-n", str(n), "--seed", "1"), k)
                          for name in pair]
    return checks, costs


# -------------------------------------------------------------------- runs

def run_command(cmd):
    """(exit code or None, stderr); the program's stdout is for people."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {RUN_TIMEOUT_S} s"
    except OSError as e:
        return None, f"cannot execute: {e.strerror}"
    return proc.returncode, proc.stderr


def read_csv(path):
    """(header, rows as dicts) of one run's CSV; ([], []) when it wrote none."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return [], []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def describe_row(run, row):
    """'rel err 3.1e-09' for a check row, '243.1 us' for a timed one."""
    try:
        if run.phase == "cost":
            return f"{float(row['median_us']):>9.1f} us"
        err = relative_error(float(row["result"]), float(row["reference"]),
                             float(row["sum_abs"]))
        return f"rel err {err:.1e}"
    except (KeyError, TypeError, ValueError):
        return "?"  # a malformed row is still reported, and still filed


class Sweep:
    """Runs the plan, one temporary CSV per run, and keeps the tallies."""

    def __init__(self, checks, costs, tmp_dir, jobs):
        self.runs = checks + costs
        self.index = {run: i for i, run in enumerate(self.runs)}
        self.checks, self.costs, self.tmp_dir, self.jobs = checks, costs, tmp_dir, jobs
        self.width = max(len(r.name) for r in self.runs)
        self.done = self.skipped = self.failed = 0
        self.lock = threading.Lock()
        self.fatal = None           # a BenchError that stops every run
        self.stop = threading.Event()

    def csv_path(self, run):
        return os.path.join(self.tmp_dir, f"{self.index[run]:05d}.csv")

    def run_all(self):
        # The first run alone: a missing GPU or a stale build stops here,
        # with one message, instead of in every parallel worker.
        self.run_one(self.checks[0], probe=True)
        self.raise_fatal()
        run_parallel(self.checks[1:], self.run_one, self.jobs, BIG_JOBS, self.stop)
        self.raise_fatal()
        for run in self.costs:  # timed: nothing else may share the GPU
            self.run_one(run)
            self.raise_fatal()

    def raise_fatal(self):
        if self.fatal:
            raise self.fatal

    def run_one(self, run, probe=False):
        cmd = [run.path, *run.args, "--csv", self.csv_path(run)]
        code, stderr = run_command(cmd)
        _, rows = read_csv(self.csv_path(run))
        with self.lock:
            self.done += 1
            self.report(run, cmd, code, stderr, rows, probe)

    def report(self, run, cmd, code, stderr, rows, probe):
        message = bench.strip_error_prefix(bench.error_line(stderr))
        if code == bench.PROG_DEVICE_ERROR and bench.NO_DEVICE_TEXT in stderr:
            if not message.startswith(bench.NO_DEVICE_TEXT):
                message = f"{bench.NO_DEVICE_TEXT}: {message}"
            self.fatal = bench.BenchError(EXIT_DEVICE, message)
            self.stop.set()
            return
        if code == bench.PROG_DEVICE_ERROR and bench.OOM_TEXT in stderr:
            print(f"skip: {run.name} n={run.n} does not fit in device memory", flush=True)
            self.skipped += 1
            return
        if probe and (code == EXIT_USAGE or (code == 0 and not rows)):
            # Built from a harness without --fill wide, --cpu-sums or check-mode CSV rows.
            what = message if code == EXIT_USAGE else "no CSV row in check mode"
            self.fatal = bench.BenchError(EXIT_USAGE, f"{run.name} `{' '.join(run.args)}`: "
                                          f"{what}; rebuild every program with make")
            self.stop.set()
            return
        if code in (0, 1) and len(rows) == 1 and rows[0].get("n") == str(run.n):
            verdict = "PASS" if rows[0].get("pass", "").strip() == "1" else "FAIL"
            print(f"[{self.done:>{len(str(len(self.runs)))}}/{len(self.runs)}] "
                  f"{run.name:<{self.width}} {run.phase:<6} {run.fill:<8} "
                  f"n={run.n:<10} seed {run.seed}  {describe_row(run, rows[0])}  {verdict}",
                  flush=True)
            if code == 0:
                return
        elif code == 0:
            stderr = f"exited 0 but wrote {len(rows)} rows for n={run.n} (one expected)"
        self.failed += 1
        status = "no exit status" if code is None else f"exit {code}"
        if code is not None and code < 0:
            status = f"killed by signal {-code}"
        print(f"accuracy: {run.name} n={run.n} fill={run.fill} failed ({status}): "
              f"{bench.error_line(stderr)}", file=sys.stderr)
        print(f"accuracy:   command: {' '.join(cmd)}", file=sys.stderr, flush=True)


def run_parallel(runs, work, jobs, big_jobs, stop):
    """work(run) for every run on `jobs` threads, at most `big_jobs` big runs
    at once. Big runs start first, so the long ones do not trail at the end;
    a free thread takes the first run it may start. `stop` ends it early."""
    pending = sorted(runs, key=lambda r: not r.big)   # stable: plan order within each kind
    cond = threading.Condition()
    big_running = 0

    def take():
        nonlocal big_running
        with cond:
            while pending and not stop.is_set():
                for i, run in enumerate(pending):
                    if not run.big or big_running < big_jobs:
                        big_running += run.big
                        return pending.pop(i)
                cond.wait()
            return None

    def finish(run):
        nonlocal big_running
        with cond:
            big_running -= run.big
            cond.notify_all()

    def worker():
        while (run := take()) is not None:
            try:
                work(run)
            finally:
                finish(run)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        stop.set()  # the programs got the same SIGINT; let the workers drain
        raise


# ----------------------------------------------------------------- results

def file_results(sweep, out_dir):
    """Join the per-run CSVs in plan order into OUT_DIR/<gpu>-accuracy.csv."""
    header, rows = None, []
    for run in sweep.runs:
        fields, run_rows = read_csv(sweep.csv_path(run))
        if not run_rows:
            continue
        if header is None:
            header = fields
        elif fields != header:
            raise bench.BenchError(EXIT_FAILED, f"{run.name} wrote a different CSV header; "
                                   "rebuild every program with make; nothing written")
        rows += run_rows
    if not rows:
        raise bench.BenchError(EXIT_FAILED, "no results: every run was skipped or failed")
    gpus = sorted({row.get("gpu", "").strip() for row in rows})
    if len(gpus) > 1:
        raise bench.BenchError(EXIT_FAILED, f"rows from several GPUs in one run "
                                            f"({', '.join(gpus)}); nothing written")
    dest = os.path.join(out_dir, bench.gpu_slug(gpus[0]) + "-accuracy.csv")
    tmp = os.path.join(sweep.tmp_dir, "all.csv")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    os.chmod(tmp, 0o644)
    os.replace(tmp, dest)
    return dest


# -------------------------------------------------------------------- main

def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Run every program in check mode over fills, sizes and seeds, time step 8 "
                    "against its Kahan variant, and write OUT_DIR/<gpu>-accuracy.csv.")
    parser.add_argument("--root", default=bench.REPO,
                        help="directory holding stepN_*/, baseline_cub/ and extras/ "
                             "(default: this repository)")
    parser.add_argument("--out-dir", help="where <gpu>-accuracy.csv goes "
                                          "(default: ROOT/plots/results)")
    parser.add_argument("--jobs", type=bench._int_at_least(1), default=4,
                        help="check runs at once (default 4; at most 2 of them at n >= 2^27)")
    parser.add_argument("--quick", action="store_true",
                        help="n = 2^10 and 2^16 only, one seed, cost at 2^20 (a smoke test)")
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    args.out_dir = args.out_dir or os.path.join(args.root, "plots", "results")
    return args


def accuracy(args):
    start = time.monotonic()
    checks, costs = plan(find_programs(args.root), args.quick)
    os.makedirs(args.out_dir, exist_ok=True)
    # Beside the destination (one file system, so the final move is atomic);
    # hidden, so nothing globbing *.csv picks it up.
    tmp_dir = tempfile.mkdtemp(prefix=".accuracy-", dir=args.out_dir)
    try:
        sweep = Sweep(checks, costs, tmp_dir, args.jobs)
        sweep.run_all()
        dest = file_results(sweep, args.out_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    if sweep.failed:
        print(f"accuracy: {sweep.failed} of {sweep.done} runs failed (see above)",
              file=sys.stderr)
    sys.stderr.flush()
    extras = [f"{count} {what}" for count, what in
              ((sweep.skipped, "skipped"), (sweep.failed, "failed")) if count]
    note = f" ({', '.join(extras)})" if extras else ""
    print(f"results: {bench.display_path(dest)}")
    print(f"accuracy: {sweep.done} runs{note} in {time.monotonic() - start:.1f} s -> "
          f"{bench.display_path(dest)}", flush=True)
    return EXIT_FAILED if sweep.failed else 0


def main(argv=None):
    args = parse_args(argv)
    try:
        return accuracy(args)
    except bench.BenchError as e:
        print(f"accuracy: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("accuracy: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a one-line report beats a traceback for students
        print(f"accuracy: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
