#!/usr/bin/env python3
"""Measure how far every program's float sum lands from the exact one.

Three phases, every row written by the programs themselves (--csv):

1. check: every program (the steps, CUB, extras/*) once per fill (random,
   positive, wide), n (2^10, 2^13, ..., 2^28) and seed (1-3 up to 2^22,
   1 above) with --check. The CUB check of each input adds --cpu-sums, so the
   CPU's plain float loop and its Kahan loop are recorded once per input.
2. repeat: every program once more on one input, in a new process, to see
   whether a second process gets the same bits.
3. cost: step 8 and its Kahan variant timed (L2 flushed, the harness's
   default repetitions) at 2^25 and 2^28, three alternating rounds, one
   process per run, with nothing else on the GPU.

Starting a CUDA process costs 0.3-1 s, more when many start at once, and
phases 1 and 2 are about 600 checks. So they run in batches: one process per
(program, phase, size class) reads its checks from a file (`--checks FILE`,
common/README.md), one CUDA context for many checks. The batches of one
class share nothing, so up to --jobs run at once, at most two of them holding
the n >= 2^27 checks, whose host-side fill and reference take seconds. A
check that a batch did not finish (a crash ends the process) runs again
alone, so it is charged to the right check. The first check runs alone
first: a missing GPU or a stale build stops there, with one message.

Budget on an H200 with 12 programs: 36 batches (48 processes with the probe
and the timed runs). The 36 checks at 2^28 dominate: 1-4 s of host work each
(fill, double reference, CUB's CPU loops), two processes at a time, about
half a minute; the 12 timed runs add about as much. Planned: one to two
minutes, under three.

The rows go, in plan order, to OUT_DIR/<gpu>-accuracy.csv.

Exit codes (as tools/bench.py): 0 every run verified, 1 some run failed
(results still written), 2 usage error or programs not built, 3 no CUDA device.
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import cli  # how main() ends
import bench  # program discovery and the programs' error messages
import schema  # step names, GPU slug
from accuracy_data import COST_BASE, COST_KAHAN, relative_error

EXTRAS_DIR = "extras"
# The extras this lesson measures: Kahan's step 8. extras/atomic_step9 is the
# determinism lesson's (make determinism), whose sums move from run to run.
ACCURACY_EXTRAS = ("kahan_step8",)
FILLS = ("random", "positive", "wide")
SIZES = tuple(1 << k for k in range(10, 29, 3))        # 2^10, 2^13, ..., 2^28
SMALL_N_SEEDS, SEEDS = (1, 2, 3), (1,)                 # small inputs are cheap: more seeds
SMALL_N = 1 << 22
REPEAT_INPUT = ("random", 1 << 22, 1)                  # (fill, n, seed) run twice
COST_SIZES, COST_ROUNDS = (1 << 25, 1 << 28), 3
QUICK_SIZES, QUICK_COST_SIZES = (1 << 10, 1 << 16), (1 << 20,)

# A 2^28 check fills 1 GiB and sums it in double on one core before the GPU
# starts; two such processes at a time keep host memory and the copy engine
# from thrashing.
BIG_N, BIG_JOBS = 1 << 27, 2
RUN_TIMEOUT_S = 600
CPU_SUMS_PROGRAM = "baseline_cub"
EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE = cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_DEVICE


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

    def matches(self, row):
        """True when a CSV row is this run's (the same input)."""
        return (row.get("n"), row.get("fill"), row.get("seed")) == \
            (str(self.n), self.fill, str(self.seed))


@dataclass(frozen=True)
class Batch:
    """Check runs of one program in one process: `run --checks FILE --csv F`."""
    name: str
    path: str
    runs: tuple

    @property
    def big(self):
        return any(run.big for run in self.runs)

    def lines(self):
        """The checks file: each run's options, one line each (--check is implied)."""
        return "".join(" ".join(a for a in run.args if a != "--check") + "\n"
                       for run in self.runs)


# ---------------------------------------------------------------- programs

def find_programs(root):
    """[(name, run path)]: the steps and CUB in bench's order, then extras/*."""
    names = bench.program_dirs(root)
    extras = os.path.join(root, EXTRAS_DIR)
    if os.path.isdir(extras):
        names += [f"{EXTRAS_DIR}/{d}" for d in sorted(os.listdir(extras)) if d in ACCURACY_EXTRAS
                  and any(os.path.isfile(os.path.join(extras, d, f)) for f in ("reduce.cu", "run"))]
    bench.check_built(root, names)
    return [(name, bench.run_path(root, name)) for name in names]


def program_label(name):
    """The CSV `step` value the program writes: its directory's name."""
    return schema.step_label(os.path.basename(name))


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


def batches(runs):
    """The runs grouped into processes, in plan order: one batch per program,
    phase and size class. A repeat is never in the batch of the run it
    repeats (the point is a second process), and the big checks sit apart so
    that no more than BIG_JOBS of them run at once."""
    groups = {}
    for run in runs:
        groups.setdefault((run.name, run.phase, run.big), []).append(run)
    return [Batch(name, members[0].path, tuple(members))
            for (name, _, _), members in groups.items()]


# -------------------------------------------------------------------- runs

def run_command(cmd):
    """(exit code or None, what it printed): stdout and stderr together, since
    the verdict of a check (PASS, FAIL: ...) is on stdout and errors on
    stderr, and a batch's `== check` lines say which check printed what."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        if isinstance(partial, bytes):
            partial = partial.decode(errors="replace")
        return None, f"{partial}\ntimed out after {RUN_TIMEOUT_S} s"
    except OSError as e:
        return None, f"cannot execute: {e.strerror}"
    return proc.returncode, proc.stdout


def read_csv(path):
    """(header, rows as dicts) of one run's CSV; ([], []) when it wrote none."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return [], []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def check_outputs(output):
    """What a --checks process printed for each check, in order (the text
    after each `== check <options>` line)."""
    return re.split(r"^== check .*$", output, flags=re.M)[1:]


def verdict_line(output):
    """Why a run failed: the harness's `FAIL: ...` line, else its error line.
    In a batch, stdout is flushed after each check but stderr at once, so an
    `error:` line in one check's output may belong to the next check; the
    FAIL line cannot."""
    fails = [line.strip() for line in output.splitlines() if line.startswith("FAIL")]
    return fails[0] if fails else bench.error_line(output)


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
        self.processes = 0
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
        run_parallel(batches(self.checks[1:]), self.run_batch, self.jobs, BIG_JOBS, self.stop)
        self.raise_fatal()
        for run in self.costs:  # timed: nothing else may share the GPU
            self.run_one(run)
            self.raise_fatal()

    def raise_fatal(self):
        if self.fatal:
            raise self.fatal

    def run_one(self, run, probe=False):
        """One run in a process of its own."""
        code, output = run_command([run.path, *run.args, "--csv", self.csv_path(run)])
        _, rows = read_csv(self.csv_path(run))
        with self.lock:
            self.processes += 1
            self.done += 1
            self.report(run, code, output, rows, probe)

    def run_batch(self, batch):
        """The batch's runs in one process. Row k of its CSV is run k's as long
        as the inputs match; from the first run without its row on (the
        process died there), every run goes again alone."""
        stem = os.path.join(self.tmp_dir, f"{self.index[batch.runs[0]]:05d}")
        with open(stem + "-checks.txt", "w") as f:
            f.write(batch.lines())
        code, output = run_command([batch.path, "--checks", stem + "-checks.txt",
                                    "--csv", stem + "-batch.csv"])
        header, rows = read_csv(stem + "-batch.csv")
        outputs = check_outputs(output)
        with self.lock:
            self.processes += 1
            if code == EXIT_USAGE and not self.fatal:
                # A harness without --checks, or a line it cannot parse: every
                # batch would fail the same way.
                message = bench.strip_error_prefix(bench.error_line(output))
                self.fatal = bench.BenchError(EXIT_USAGE, f"{batch.name} --checks: {message}; "
                                              "rebuild every program with make")
                self.stop.set()
                return
        alone = []
        for k, run in enumerate(batch.runs):
            if alone or k >= len(rows) or not run.matches(rows[k]):
                alone.append(run)
                continue
            write_csv(self.csv_path(run), header, [rows[k]])
            passed = rows[k].get("pass", "").strip() == "1"
            with self.lock:
                self.done += 1
                self.report(run, 0 if passed else bench.EXIT_FAILED,
                            outputs[k] if k < len(outputs) else "", [rows[k]], False)
        for run in alone:
            if self.stop.is_set():
                return
            self.run_one(run)

    def report(self, run, code, output, rows, probe):
        """Tally and print one run from its exit code, what it printed and its rows."""
        message = bench.strip_error_prefix(bench.error_line(output))
        if code == bench.PROG_DEVICE_ERROR and bench.NO_DEVICE_TEXT in output:
            if not message.startswith(bench.NO_DEVICE_TEXT):
                message = f"{bench.NO_DEVICE_TEXT}: {message}"
            self.fatal = bench.BenchError(EXIT_DEVICE, message)
            self.stop.set()
            return
        if code == bench.PROG_DEVICE_ERROR and bench.OOM_TEXT in output:
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
            output = f"exited 0 but wrote {len(rows)} rows for n={run.n} (one expected)"
        self.failed += 1
        status = "no exit status" if code is None else f"exit {code}"
        if code is not None and code < 0:
            status = f"killed by signal {-code}"
        print(f"accuracy: {run.name} n={run.n} fill={run.fill} failed ({status}): "
              f"{verdict_line(output)}", file=sys.stderr)
        # The run on its own, to repeat it by hand.
        print(f"accuracy:   command: {' '.join([run.path, *run.args])}", file=sys.stderr,
              flush=True)


def run_parallel(items, work, jobs, big_jobs, stop):
    """work(item) for every item (a Run or a Batch) on `jobs` threads, at most
    `big_jobs` big ones at once. Big ones start first, so the long ones do not
    trail at the end; a free thread takes the first item it may start. `stop`
    ends it early."""
    pending = sorted(items, key=lambda item: not item.big)  # stable: plan order in each kind
    cond = threading.Condition()
    big_running = 0

    def take():
        nonlocal big_running
        with cond:
            while pending and not stop.is_set():
                for i, item in enumerate(pending):
                    if not item.big or big_running < big_jobs:
                        big_running += item.big
                        return pending.pop(i)
                cond.wait()
            return None

    def finish(item):
        nonlocal big_running
        with cond:
            big_running -= item.big
            cond.notify_all()

    def worker():
        while (item := take()) is not None:
            try:
                work(item)
            finally:
                finish(item)

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
    dest = os.path.join(out_dir, schema.gpu_slug(gpus[0]) + "-accuracy.csv")
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
                        help="check processes at once (default 4; at most 2 of them with "
                             "checks at n >= 2^27)")
    parser.add_argument("--quick", action="store_true",
                        help="n = 2^10 and 2^16 only, one seed, cost at 2^20 (a smoke test)")
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    args.out_dir = args.out_dir or os.path.join(args.root, "plots", "results")
    problem = cli.output_problem(args.out_dir, folder=True)
    if problem:
        parser.error(f"--out-dir {args.out_dir}: {problem}")
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
    print(f"accuracy: {sweep.done} runs{note} in {sweep.processes} processes, "
          f"{time.monotonic() - start:.1f} s -> {bench.display_path(dest)}", flush=True)
    return EXIT_FAILED if sweep.failed else 0


def main(argv=None):
    args = parse_args(argv)
    return cli.guarded("accuracy", lambda: accuracy(args), known=(bench.BenchError,))


if __name__ == "__main__":
    sys.exit(main())
