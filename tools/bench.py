#!/usr/bin/env python3
"""Benchmark every program of part 1 (the sum) and part 2 (rows) in rounds,
and part 3 (back/, backward passes) when asked for.

Part 1 runs every stepN_*/run and baseline_cub/run over a sweep of sizes;
part 2 runs every rows/*/run over a list of shapes, beside part 1's step 9
summing the same floats as one array and, when a Python with torch is given
(--torch-python), PyTorch's own kernels (tools/torch_rows.py).

Each ROUND runs every program once, in its own process (`run --runs FILE`:
all its sizes in one CUDA context), in an order shuffled per round (seeded,
so a run can be repeated), and the sizes within it shuffled too; the first
round also makes each timed run's exact checks (up to CHECKED_MAX elements),
later ones skip them (--no-verify); --check-jobs N (N > 1) makes round 1's
checks first, N programs at a time, before round 1 times anything (a size whose
checks did not pass there makes them in its timed run, as without it);
--checks-only FILE makes them alone and --checks-from FILE times round 1 with
them, so that round 1 can be split over two calls. The
program itself flushes L2, times the launches, verifies
its output and appends one CSV row per size; this driver orders the runs,
shows progress and files every row with its round as OUT_DIR/<gpu>.csv
(part 1) and OUT_DIR/<gpu>-rows.csv (part 2), with everything it printed in
OUT_DIR/<gpu>-bench.log. Part 3 (back/*/run) runs as part 2 does, over
shapes of its own, beside its bar (the copy of its three streams,
back/baseline_copy3; a bfloat16 step's, the bfloat16 copy,
back/baseline_copy3_bf16) and PyTorch's backward pass (a bfloat16 step's in
bfloat16),
into OUT_DIR/<gpu>-back.csv; only when asked for (--only back, --only
back/step0_thread, --part back): the default run (make bench) leaves it out
until part 3 has been measured. The tables and charts report the median over rounds
and the spread (fastest and slowest round): a ratio counts as a win or a
loss only where the spreads do not overlap (tools/compare.py).

Every row of one bench carries its run id (--run-id; its UTC start by
default). --only NAMES times the programs named together with everything
their ratios are read against (comparisons(): the previous step, step 0 or
the float step a bfloat16 step converts, the copy, step 9 on one array, CUB,
PyTorch's op eager and compiled), in one run, and merges its rows into the
files: the programs' figures then come from this run, every other program's
from its own, and a ratio is never taken across runs (tools/compare.py).
Rows of runs that no program's figures come from any more are dropped.
--round K runs round K alone, so that one run can be split over calls that
each have a time limit (give them one --run-id).

Exit codes: 0 all runs passed, 1 some run failed (results still written),
2 usage error or programs not built, 3 no CUDA device.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time

import cli  # how main() ends
import schema  # the CSV columns, step names and GPU slug
import steps  # the step list of the three parts, the step before a step

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Headline sizes: 2^25 (128 MiB) is far larger than L2 but quick; 2^28 (1 GiB)
# shows the steady state once launch overhead and the tail are negligible.
HEADLINE_SIZES = (1 << 25, 1 << 28)
# Non-powers of two exercise the tail handling (a partial last block) and show
# what a ragged size costs compared with its power-of-two neighbours.
ODD_SIZES = (1000, 100003, 3 * (1 << 20) + 7, 10**7 + 1, (1 << 27) + 5)
QUICK_SIZES = (1 << 20, 1 << 25)
# Part 2: the seed article's LayerNorm (32768 x 1024), BERT-base (65536 x
# 768), wider rows down to 256 of 65536, two small shapes, and widths that
# are not a multiple of 4 (1000 is; 4097 is not, so its rows are misaligned).
# Then logits: GPT-2's vocabulary (50257, odd) and Llama 3's (128256), rows
# wider than registers and shared memory hold, where online softmax pays.
ROW_SHAPES = ((32768, 1024), (65536, 768), (8192, 4096), (4096, 8192), (1024, 32768),
              (256, 65536), (256, 1024), (4096, 1024), (32768, 1000), (8192, 4097),
              (4096, 50257), (512, 128256))
QUICK_ROW_SHAPES = ((4096, 1024), (32768, 1024))
# Softmax (and the bfloat16 copy it is read against) also at Qwen's vocabulary,
# 4096 x 151936, and at one row of 262144, the widest a cluster holds: one row
# alone shows whether a step can spread a row over the whole GPU.
SOFTMAX_SHAPES = ROW_SHAPES + ((4096, 151936), (1, 262144))
# --widths: part 2's map (rows/README's speed-of-light chart), each op's
# last step, the copies and PyTorch's ops at one input size, SWEEP_BYTES of x
# (bfloat16 rows twice as many), from 256 columns to the widest a cluster
# holds, with the vocabularies between: GB/s against the width. Its own file,
# OUT_DIR/<gpu>-rows-widths.csv; no exact checks (the grader's are at the
# widths where the kernels change, these programs' own runs made them), every
# timed run still verified. PyTorch's copies are left out: the chart draws ours.
SWEEP_BYTES = 256 << 20
SWEEP_COLS = (256, 1024, 4096, 16384, 50257, 65536, 151936, 262144)
QUICK_SWEEP_COLS = (1024, 65536)
WIDTHS_SUFFIX = "-rows-widths"
# Round 1's exact checks are several whole runs of a program at the timed
# shape, each against the CPU's reference: at 4096 x 151936 (2^29.2
# elements) they cost 35 s a program on the H200's host
# (plots/reference/h200-bench-cost-probe.log). Past 2^28 elements round 1
# skips them; the grader checks those widths at fewer rows, and every timed
# run is still verified. --check-jobs makes the checks of the sizes up to it
# before round 1, several programs at once: each program's fills, copies and
# one-thread parts then overlap with the others' (the reference itself is
# OpenMP's, so the cores are shared out among the programs at once). Measured
# on the H200's host it did not pay: part 2's 30 programs (367 sizes) took
# 362 s 8 at a time (wip-harness/remeasure27), where one at a time they took
# about 285-330 s of round 1 in the run before (537 s against rounds 2 and
# 3's 208-252 s, plots/reference/h200-rows-bench.log, fewer sizes): what
# bounds them is likely shared (host memory, the copies), not the cores. Round 1 is
# then longer than one device call (10 minutes): --checks-only makes the
# checks in a call of their own, and --checks-from lets the next call time
# round 1 without them.
CHECKED_MAX = 1 << 28
# What a row of round 1's checks made first vouches for (--checks-from's file
# holds them): its code, the GPU, and the build (code_hash leaves out the
# target and the compiler's version).
MADE_AS = ("code_hash", "gpu", "arch", "toolchain")
ONE_ARRAY = "step9_singlepass"   # part 1's last step, summing each shape's floats as one array
ROW_CUB_DIR, COPY_DIR, COPY16_DIR = "rows/baseline_cub", "rows/baseline_copy", "rows/baseline_copy16"
COPY3_BF16_DIR = "back/baseline_copy3_bf16"   # part 3's bar in bfloat16
# Part 3 (back/): LayerNorm's backward pass at issue 41's two shapes, the
# ones its table and charts show (part 2's others, but the two of logits, are
# BACK_MORE_SHAPES: --shapes takes them). Its bar is the copy of its three
# streams (x and dy read, dx written).
BACK_SHAPES = ((32768, 1024), (8192, 4096))
BACK_MORE_SHAPES = ((65536, 768), (4096, 8192), (1024, 32768), (256, 65536), (256, 1024),
                    (4096, 1024), (32768, 1000), (8192, 4097))
COPY3_DIR = "back/baseline_copy3"
# Softmax's backward pass (back/step10 on) over logits' widths instead, each
# matrix 74 to 196 MiB: GPT-2's, Llama 3's and Qwen's vocabularies (50257,
# 128256, 151936), the widest row its clusters hold (262144), a row of
# 32768, and LayerNorm's two first shapes. Its bar runs at both lists.
SOFTMAX_BACK_SHAPES = ((32768, 1024), (8192, 4096), (1024, 32768), (1024, 50257),
                       (256, 128256), (256, 151936), (128, 262144))
# PyTorch's forms of part 3's ops (tools/torch_rows.py), float and bfloat16
# (a bfloat16 step's op picks the bfloat16 one); the copies have none.
TORCH_BACK_OPS = ("layernorm_backward", "softmax_backward", "layernorm_backward_bf16",
                  "softmax_backward_bf16")
TORCH_OPS = "sum,layernorm,softmax,copy"
# PyTorch's bfloat16 kernels too, once a bfloat16 program is among those run
# (tools/torch_rows.py: x.to(torch.bfloat16), 2 bytes an element).
TORCH_BF16_OPS = "layernorm_bf16,softmax_bf16,copy_bf16"
# PyTorch's forms of the ops only some programs compute, timed once one of
# ours wrote a row of that op (so a bench without them compiles none).
TORCH_WHEN_RUN = ("rmsnorm", "add_rmsnorm", "rmsnorm_bf16", "add_rmsnorm_bf16")
# Each op but the copies also through torch.compile, as users run PyTorch
# (tools/torch_rows.py: compiled/<op>, compiled once per shape, untimed).
COMPILED = "compiled/"
TORCH = "torch"   # --only's name for PyTorch's kernels
DEFAULT_ROUNDS = 3
# A single run does at most ~25 launches over 1 GiB; minutes means a hang.
RUN_TIMEOUT_S = 600

EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE = cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_DEVICE
# The program's exit code for device errors (common/README.md), and its two messages.
PROG_DEVICE_ERROR = 3
OOM_TEXT = "out of device memory"
NO_DEVICE_TEXT = "no CUDA device"


class BenchError(Exception):
    """An error that ends the script with one line and a given exit code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- programs

def program_dirs(root):
    """Step directories in step order (step10 after step9), then CUB.

    A step directory counts once it has a source or a binary, so a stray
    `step4_notes/` folder is ignored but an unbuilt `step9_mine/` is not.
    """
    if not os.path.isdir(root):
        raise BenchError(EXIT_USAGE, f"no such directory: {root}")
    names = steps.step_dirs(root)
    if os.path.isdir(os.path.join(root, schema.CUB_DIR)):
        names.append(schema.CUB_DIR)
    return names


def row_program_dirs(root, part=schema.ROWS):
    """Part 2's programs: rows/stepN_* in step order, then rows/baseline_*;
    with part "back/", part 3's the same way."""
    part_root = os.path.join(root, part)
    if not os.path.isdir(part_root):
        return []
    baselines = sorted(d for d in os.listdir(part_root) if d.startswith("baseline_")
                       and os.path.isdir(os.path.join(part_root, d)))
    return steps.step_dirs(root, part) + [part + d for d in baselines]


class RowPart:
    """A part of rows x cols programs: part 2 (rows/) or part 3 (back/): its
    folder prefix, its results file's suffix, its shapes, its bar and its
    name in messages; and the bars that run at every shape of the programs
    run beside them (part 3's copy and, for its bfloat16 steps, its bfloat16
    copy)."""

    def __init__(self, prefix, suffix, shapes, bar, title, op_shapes=None, bars=()):
        self.prefix, self.suffix, self.bar, self.title = prefix, suffix, bar, title
        self._shapes = shapes
        self._op_shapes = op_shapes or {}   # an op with shapes of its own: {op: shapes}
        self.bars = (bar,) + tuple(bars)

    def shapes(self, quick=False, op=""):
        if quick:
            return QUICK_ROW_SHAPES
        return self._op_shapes.get(op.removeprefix(COMPILED), self._shapes)


ROW_PARTS = {"rows": RowPart(schema.ROWS, "-rows", ROW_SHAPES, COPY_DIR, "part 2",
                             {op: SOFTMAX_SHAPES for op in ("softmax", "softmax_bf16", "copy_bf16")}),
             "back": RowPart(schema.BACK, "-back", BACK_SHAPES, COPY3_DIR, "part 3",
                             {op: SOFTMAX_BACK_SHAPES for op in ("softmax_backward",
                                                                 "softmax_backward_bf16")},
                             bars=(COPY3_BF16_DIR,))}


# What a part 2 program computes, the step before a step and the step whose
# diff is its lesson: tools/steps.py's, the one answer make diff and the
# READMEs give too.
row_program_op = steps.row_op
previous_step = steps.previous_step
diff_base = steps.diff_base


def torch_ops_of(op):
    """PyTorch's ops that a program computing op is compared with: the op
    eager and compiled (a copy only eager: there is nothing to compile)."""
    if not op:
        return []
    return [op] if op.startswith("copy") else [op, COMPILED + op]


def comparisons(root, name):
    """(programs, torch ops) that name's ratios are read against: the tables'
    and charts' columns. Part 1: the previous step, step 0 and CUB. Part 2:
    the previous step, the float step a bfloat16 step converts, its bar (the
    copy, the bfloat16 copy, or step 9 on one array and CUB's segmented sum
    for a row sum) and PyTorch's op. Part 3: the previous step, its bar (the
    copy of three streams; a bfloat16 step: the float step it converts and
    the bfloat16 copy of three streams) and PyTorch's op."""
    part = schema.part_prefix(name)
    if not part:
        names = program_dirs(root)
        earlier = [d for d in names if d != schema.CUB_DIR and
                   schema.step_sort_key(d) < schema.step_sort_key(name)]
        found = earlier[-1:] + [d for d in names if schema.step_number(d) == 0]
        return [d for d in dict.fromkeys(found + [schema.CUB_DIR]) if d != name], []
    op = row_program_op(root, name)
    found = [d for d in [previous_step(root, name)] if d]
    if op.endswith("_bf16"):
        found += [d for d in [steps.float_twin(root, name)] if d]
    if op:
        found.append(row_bar(op, part))
    if op == "sum":
        found.append(ROW_CUB_DIR)
    theirs = torch_ops_of(op) if part == schema.ROWS or op in TORCH_BACK_OPS else []
    return [d for d in dict.fromkeys(found) if d != name], theirs


def row_bar(op, part=schema.ROWS):
    """The bar a part 2 or 3 program of op is read against: the copy of its
    part in its element type, or, for a row sum (which only reads), part 1's
    step 9 on the same floats as one array."""
    if op == "sum":
        return ONE_ARRAY
    if op.endswith("_bf16"):
        return COPY3_BF16_DIR if part == schema.BACK else COPY16_DIR
    return next(p.bar for p in ROW_PARTS.values() if p.prefix == part)


def run_path(root, name):
    return os.path.join(root, name, "run")


def is_executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def check_built(root, names):
    """Raise a one-line error naming the binaries that `make` has not built."""
    if not names:
        raise BenchError(EXIT_USAGE, f"no step programs under {root}; run `make` first")
    missing = [name + "/run" for name in names if not is_executable(run_path(root, name))]
    if missing:
        raise BenchError(EXIT_USAGE, f"not built: {', '.join(missing)}; run `make {' '.join(missing)}` "
                                     "first")


def find_programs(root):
    """[(directory name, path of its run binary)] in benchmark order."""
    names = program_dirs(root)
    check_built(root, names)
    return [(name, run_path(root, name)) for name in names]


# ------------------------------------------------------------------- sizes

def sweep_sizes(quick=False):
    """Every n to run, ascending: powers of two 2^10..2^28 plus a few odd ones."""
    if quick:
        return list(QUICK_SIZES)
    powers = {1 << k for k in range(10, 29)}
    return sorted(powers | set(ODD_SIZES) | set(HEADLINE_SIZES))


# -------------------------------------------------------------------- runs

def read_rows(path):
    """The rows of a results CSV as {column: text}, in file order.

    Untyped on purpose: a program that writes a malformed row is reported as a
    failed run, and the sweep goes on.
    """
    if os.path.getsize(path) == 0:
        return []
    return [record for _, record in schema.read_records(path)[1]]


def rows_written(path):
    """(rows of a run's CSV, '' or why the file cannot be read): a file that is
    not CSV text at all fails its run, not the sweep."""
    if not os.path.exists(path):
        return [], ""
    try:
        return read_rows(path), ""
    except schema.SchemaError as err:
        return [], f"its CSV cannot be read: {err}"


def run_program(cmd, timeout=RUN_TIMEOUT_S, env=None):
    """Run one command (env: its environment, None to inherit ours);
    returns (exit code or None, stderr text).

    stdout is the program's human summary (the numbers come from the CSV),
    but a failed check says why only there: its first FAIL line is added
    after stderr, so that error_line() finds it when stderr has no error."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    except OSError as e:
        return None, f"cannot execute: {e.strerror}"
    fails = [" ".join(line.split()) for line in proc.stdout.splitlines() if "FAIL" in line]
    return proc.returncode, proc.stderr + (fails[0] + "\n" if fails else "")


def error_line(stderr):
    """The program's one-line `error:` message, else its last non-empty line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line
    return lines[-1] if lines else "(no message on stderr)"


def strip_error_prefix(line):
    return line[len("error:"):].strip() if line.startswith("error:") else line


def no_device_message(stderr):
    """'no CUDA device: <why>' from a program's error line, which the harness
    already starts with those words (common/device.c): never twice."""
    message = strip_error_prefix(error_line(stderr))
    return message if message.startswith(NO_DEVICE_TEXT) else f"{NO_DEVICE_TEXT}: {message}"


def size_label(run):
    """'n=33554432' or '32768x1024', as a progress line shows a run."""
    return f"{run.rows}x{run.cols}" if run.rows else f"n={run.n}"


class Output:
    """Prints a line to the terminal and keeps it for the log file."""

    def __init__(self):
        self.lines = []

    def out(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def err(self, line):
        print(line, file=sys.stderr, flush=True)
        self.lines.append(line)


class Run:
    """One size of one program: its --runs line and how to recognise its row."""

    def __init__(self, n=None, rows=None, cols=None):
        self.rows, self.cols = rows, cols
        self.n = n if n is not None else rows * cols

    def args(self):
        if self.rows:
            return ["--rows", str(self.rows), "--cols", str(self.cols)]
        return ["-n", str(self.n)]

    def matches(self, row):
        if self.rows:
            return row.get("rows") == str(self.rows) and row.get("cols") == str(self.cols)
        return row.get("n") == str(self.n) and not row.get("rows")


class Sweep:
    """Runs every program over its sizes, ROUNDS times, and keeps the tallies."""

    def __init__(self, plan, rounds, reps, warmup, seed, tmp_dir, output, torch=None,
                 run_id="", roles=None, only_round=None, checks=True, check_jobs=1):
        self.plan = plan             # [(name, path, [Run])]
        self.rounds, self.reps, self.warmup = rounds, reps, warmup
        self.seed, self.tmp_dir, self.output, self.torch = seed, tmp_dir, output, torch
        self.run_id = run_id         # the run column of every row
        self.roles = roles or {}     # {name: schema.COMPARED} for comparisons; "" otherwise
        self.only_round = only_round # run this round alone (--round), else every one
        self.checks = checks         # round 1's exact checks (not --widths)
        self.check_jobs = check_jobs # >1: round 1's checks first, this many programs at once
        self.checked = {}            # {name: {tuple(run.args())}}: checks made and passed first
        self.checked_as = {}         # {name: made_as_of() of the rows those checks wrote}
        self.checks_from = None      # the file the checks came from (--checks-from)
        self.rows = []               # every row of every round, with its round
        self.width = max(len(name) for name, _, _ in plan)
        self.runs = self.skipped = self.failed = 0

    def rounds_run(self):
        return [self.only_round] if self.only_round else list(range(1, self.rounds + 1))

    def run_all(self):
        if (self.checks and self.check_jobs > 1 and 1 in self.rounds_run() and
                self.checks_from is None):
            self.check_first()
        for r in self.rounds_run():
            order = list(self.plan)
            random.Random(self.seed * 1000 + r).shuffle(order)
            for name, path, runs in order:
                self.run_program(r, name, path, runs)
            if self.torch:
                self.run_torch(r)

    def check_first(self):
        """Round 1's exact checks before round 1 times anything, check_jobs
        programs at a time. The checks are whole runs against the CPU's
        reference, the GPU mostly idle meanwhile: one program after another
        they are most of round 1. Each program makes its sizes' checks in
        one process, one rep and no warmup (only the checks are wanted),
        with a share of the cores (the reference is OpenMP's: N processes
        of every core each would oversubscribe them). A size whose row
        passed skips the checks in its timed run (flags()); any other (a
        failed check, a crash, out of memory with programs side by side)
        makes them there, as without --check-jobs, and fails there with its
        reason."""
        todo = [(name, path, [run for run in runs if run.n <= CHECKED_MAX])
                for name, path, runs in self.plan if not self.roles.get(name)]
        todo = [item for item in todo if item[2]]
        if not todo:
            return
        start = time.monotonic()
        jobs = min(self.check_jobs, len(todo))
        env = dict(os.environ, OMP_NUM_THREADS=str(max(1, len(os.sched_getaffinity(0)) // jobs)))

        def check(name, path, runs):
            folder = tempfile.mkdtemp(prefix="checks-", dir=self.tmp_dir)
            lines, csv_path = os.path.join(folder, "runs.txt"), os.path.join(folder, "checks.csv")
            with open(lines, "w") as handle:
                for run in runs:
                    handle.write(" ".join(run.args() + ["--reps", "1", "--warmup", "0"]) + "\n")
            code, stderr = run_program([path, "--runs", lines, "--csv", csv_path], env=env)
            got, _ = rows_written(csv_path)
            passed = {tuple(run.args()) for run in runs
                      if any(run.matches(row) and row.get("pass") == "1" for row in got)}
            made_as = {made_as_of(row) for row in got}
            self.checked_as[name] = made_as.pop() if len(made_as) == 1 else ("",) * len(MADE_AS)
            no_device = code == PROG_DEVICE_ERROR and NO_DEVICE_TEXT in stderr
            if len(passed) < len(runs) and not no_device:
                # the timed run says why too; a --checks-only call has no timed run
                self.output.out(f"checks: {name}: {error_line(stderr)}")
            return name, passed, no_device, stderr

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = [pool.submit(check, *item) for item in todo]
            # A line as each program ends: a run cut off meanwhile shows how far it got.
            for future in concurrent.futures.as_completed(futures):
                name, passed, no_device, stderr = future.result()
                if no_device:   # as round 1's first program would stop
                    for other in futures:
                        other.cancel()
                    raise BenchError(EXIT_DEVICE, no_device_message(stderr))
                self.checked[name] = passed
                runs = next(r for n, _, r in todo if n == name)
                self.output.out(f"checks: {name}: {len(passed)} of {len(runs)} sizes passed "
                                f"({time.monotonic() - start:.1f} s)")
        sizes = sum(len(runs) for _, _, runs in todo)
        passed = sum(len(keys) for keys in self.checked.values())
        def some(k, word):
            return f"{k} {word}{'' if k == 1 else 's'}"
        left = (f"; {some(sizes - passed, 'size')} left to their timed runs"
                if passed < sizes else "")
        self.output.out(f"checks: round 1's exact checks of {some(len(todo), 'program')} "
                        f"({some(sizes, 'size')}) made first, {jobs} at a time, in "
                        f"{time.monotonic() - start:.1f} s: {passed} passed{left}")

    def checks_record(self):
        """{name: {code_hash, gpu, arch, toolchain, sizes}} of the checks
        check_first() made and passed, for --checks-only's file."""
        blank = ("",) * len(MADE_AS)
        return {name: dict(zip(MADE_AS, self.checked_as.get(name, blank)),
                           sizes=sorted(list(args) for args in passed))
                for name, passed in self.checked.items()}

    def use_checks(self, record, path, record_run):
        """Round 1's checks made by an earlier call (--checks-from): a size
        they passed is timed with --no-verify, as after check_first(). A
        program whose build says (--version) it is other code than the
        file checked makes its checks in its timed runs; a timed row that
        carries another code hash, GPU or build than the checks' rows is
        failed by run_program(): the file vouches only for what it checked.
        A program or size it lacks makes its checks in its timed run."""
        self.checks_from = path
        for name, prog, runs in self.plan:
            mine = record.get(name)
            if mine and not self.roles.get(name):
                built = built_code_hash(prog)
                if built is not None and built != mine["code_hash"]:
                    # known before timing: its checks are made again, not a round 1 lost
                    self.output.out(f"checks: {name}: built as code hash {built}, the file "
                                    f"checked {mine['code_hash']}: its timed runs make them")
                    continue
                self.checked[name] = {tuple(args) for args in mine["sizes"]}
                self.checked_as[name] = tuple(mine[key] for key in MADE_AS)
        sizes = sum(len(v) for v in self.checked.values())
        other = f" (made for run {record_run})" if record_run != self.run_id else ""
        self.output.out(f"checks: round 1's exact checks of {len(self.checked)} programs "
                        f"({sizes} sizes passed) from {display_path(path)}{other}; a timed "
                        "row of another code hash, GPU or build than theirs fails")

    def checked_first(self, name, run):
        """True when run's size of name passed checks made before round 1 timed it."""
        return tuple(run.args()) in self.checked.get(name, ())

    def stamp(self, row, r, name):
        """The bench's own columns: the round, the run and the row's role."""
        return dict(row, round=str(r), run=self.run_id, role=self.roles.get(name, ""))

    def flags(self, r, name=None, run=None):
        """Round 1 makes the exact checks of the programs asked for; a program
        timed only as a comparison (--only) skips them: its code is the one
        its own runs checked (its timed runs are still verified). So does a
        size past CHECKED_MAX elements, and one whose checks check_first()
        made and passed."""
        flags = ["--reps", str(self.reps), "--warmup", str(self.warmup)]
        checks = (self.checks and r == 1 and not self.roles.get(name) and
                  (run is None or (run.n <= CHECKED_MAX and not self.checked_first(name, run))))
        return flags + ([] if checks else ["--no-verify"])

    def run_program(self, r, name, path, runs):
        runs = list(runs)
        random.Random(self.seed * 7919 + r).shuffle(runs)
        lines = os.path.join(self.tmp_dir, "runs.txt")
        csv_path = os.path.join(self.tmp_dir, f"round{r}.csv")
        with open(lines, "w") as handle:
            for run in runs:
                handle.write(" ".join(run.args() + self.flags(r, name, run)) + "\n")
        if os.path.exists(csv_path):
            os.remove(csv_path)
        code, stderr = run_program([path, "--runs", lines, "--csv", csv_path])
        got, _ = rows_written(csv_path)   # unreadable: each size again alone
        if code == PROG_DEVICE_ERROR and NO_DEVICE_TEXT in stderr:
            raise BenchError(EXIT_DEVICE, no_device_message(stderr))
        done = []
        for run in runs:
            row = next((x for x in got if run.matches(x)), None)
            if row is None:
                # The batch stopped early (a device error ends the process): run
                # this size alone, to charge the failure to the right size.
                alone = os.path.join(self.tmp_dir, "alone.csv")
                if os.path.exists(alone):
                    os.remove(alone)
                cmd = [path, *run.args(), *self.flags(r, name, run), "--csv", alone]
                code1, stderr1 = run_program(cmd)
                rows1, unreadable = rows_written(alone)
                if code1 == PROG_DEVICE_ERROR and OOM_TEXT in stderr1:
                    self.output.out(f"skip: {name} {size_label(run)} does not fit in device memory")
                    self.skipped += 1
                    continue
                if not rows1:
                    self.failed += 1
                    self.output.err(f"bench: {name} {size_label(run)} failed (exit {code1}): "
                                    f"{unreadable or error_line(stderr1)}")
                    self.output.err(f"bench:   command: {' '.join(cmd)}")
                    continue
                row = rows1[-1]
            row = self.stamp(row, r, name)
            self.rows.append(row)
            done.append(row)
            self.runs += 1
            made_as = self.checked_as.get(name)
            if (r == 1 and self.checks and self.checked_first(name, run) and
                    made_as_of(row) != made_as):
                # timed unchecked, and the checks were of other code: it is not a passed row
                row["pass"] = "0"
                self.failed += 1
                self.output.err(f"bench: {name} {size_label(run)}: its checks were made as "
                                f"{' '.join(v or '?' for v in made_as)}, this run is "
                                f"{' '.join(v or '?' for v in made_as_of(row))}: its row is kept "
                                "with pass = 0; make round 1's checks again")
            elif row.get("pass") != "1":
                self.failed += 1
                self.output.err(f"bench: {name} {size_label(run)} failed its check "
                                f"(round {r}): its row is kept with pass = 0")
        self.output.out(self.progress_line(r, name, done))

    def torch_ops(self):
        """PyTorch's ops for this run: the ones given (--only), else its float
        ops, eager and compiled, and its bfloat16 ones once a program of ours
        wrote a bfloat16 row (op softmax_bf16, ...): the programs run first."""
        ops = self.torch[2]
        if ops is not None:
            return ",".join(ops)
        ran = {row.get("op", "") for row in self.rows}
        bf16 = any(op.endswith("_bf16") for op in ran)
        names = TORCH_OPS.split(",") + (TORCH_BF16_OPS.split(",") if bf16 else [])
        names += [op for op in TORCH_WHEN_RUN if op in ran]
        return ",".join(o for name in names for o in torch_ops_of(name))

    def run_torch(self, r):
        """PyTorch's kernels on the same shapes, timed the same way
        (tools/torch_rows.py): one call for each list of shapes its ops take
        (the torch tuple's fourth item: a function from an op to its shapes;
        else its second, one list for every op)."""
        python, shapes, _ = self.torch[:3]
        shapes_of = self.torch[3] if len(self.torch) > 3 else (lambda op: shapes)
        groups = {}
        for op in self.torch_ops().split(","):
            groups.setdefault(tuple(shapes_of(op)), []).append(op)
        for k, (group_shapes, ops) in enumerate(groups.items()):
            self.run_torch_shapes(r, k, group_shapes, ",".join(ops))

    def run_torch_shapes(self, r, k, shapes, ops):
        python = self.torch[0]
        csv_path = os.path.join(self.tmp_dir, f"torch{r}-{k}.csv")
        if os.path.exists(csv_path):
            os.remove(csv_path)
        cmd = [python, os.path.join(REPO, "tools", "torch_rows.py"), "--csv", csv_path,
               "--shapes", ",".join(f"{a}x{b}" for a, b in shapes), "--ops", ops,
               "--reps", str(self.reps), "--warmup", str(self.warmup), "--round", str(r)]
        code, stderr = run_program(cmd, timeout=RUN_TIMEOUT_S * 2)
        got, unreadable = rows_written(csv_path)
        for line in stderr.splitlines():
            if line.startswith("torch_rows: ") and "made again" in line:
                # the host queued an op after the GPU's wait: the log keeps how often
                self.output.out(f"torch round {r}: {line.removeprefix('torch_rows: ')}")
        for row in got:
            self.rows.append(self.stamp(row, r, TORCH))
            self.runs += 1
            self.failed += row.get("pass") != "1"
        wanted = len(ops.split(",")) * len(shapes)
        if code not in (0, 1) or len(got) < wanted:
            # An op that could not run leaves its rows out: say which, from its stderr.
            for line in [l for l in stderr.splitlines() if l.startswith("torch_rows:")][:5] or \
                    [unreadable or error_line(stderr)]:
                self.output.err(f"bench: torch round {r}: exit {code}, {len(got)} of {wanted} "
                                f"rows: {line}")
            self.failed += 1
        self.output.out(self.progress_line(r, "torch", got))

    def progress_line(self, r, name, rows):
        """'[round 2/3] step3_idle          24 runs  2^25 89.9 us  2^28 646.8 us  PASS'."""
        head = [x for x in rows if x.get("n") in (str(1 << 25), str(1 << 28))
                or (x.get("rows"), x.get("cols")) == ("32768", "1024")]
        shown = []
        for x in head[:4]:
            label = (f"{x['rows']}x{x['cols']}" if x.get("rows") else
                     schema.power_label(int(x["n"])))
            if x.get("op") and x["step"].startswith("torch/"):
                label = x["op"] + " " + label
            try:
                shown.append(f"{label} {float(x['median_us']):.1f} us")
            except (KeyError, ValueError):
                shown.append(f"{label} ?")
        verdict = "PASS" if rows and all(x.get("pass") == "1" for x in rows) else "FAIL"
        role = "  (compared)" if self.roles.get(name) else ""
        return (f"[round {r}/{self.rounds}] {name:<{self.width}} {len(rows):>3} runs  "
                f"{'  '.join(shown)}  {verdict}{role}")


# ----------------------------------------------------------------- results

def file_results(rows, out_dir, suffix="", replaced=None, exists=lambda label: True):
    """Write the rows to OUT_DIR/<gpu><suffix>.csv. Without `replaced` they
    replace that GPU's older file; with it (--only, --round) they are merged
    into it: its rows that `replaced` is true for go, these come in, and
    then every run that no program's figures come from any more goes
    (merge_runs)."""
    if not rows:
        raise BenchError(EXIT_FAILED, "no results: every run was skipped or failed")
    gpus = gpus_of(rows)
    if len(gpus) != 1:
        # One file per GPU model: rows from two GPUs cannot be filed together.
        raise BenchError(EXIT_FAILED, f"rows from several GPUs in one run ({', '.join(gpus)}); "
                                      "nothing written")
    os.makedirs(out_dir, exist_ok=True)
    dest = os.path.join(out_dir, schema.gpu_slug(gpus[0]) + suffix + ".csv")
    if replaced is not None and os.path.isfile(dest) and os.path.getsize(dest) > 0:
        old = read_rows(dest)
        if old and gpus_of(old) != gpus:
            raise BenchError(EXIT_FAILED, f"{display_path(dest)} holds rows of "
                                          f"{', '.join(gpus_of(old))}, this run {gpus[0]}: "
                                          "nothing written (one file per GPU model)")
        run_ids = {row.get("run") for row in rows}
        if len(run_ids) == 1:
            check_run_id(old, rows, run_ids.pop())
        rows = merge_runs(old, rows, replaced, exists)
    tmp = dest + ".tmp"
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(schema.RESULT_COLUMNS),
                                extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, dest)
    return dest


def gpus_of(rows):
    return sorted({row.get("gpu", "") for row in rows if not row["step"].startswith("torch/")})


def usable(row):
    """A row tools/compare.py would show: verified and timed."""
    return row.get("pass") == "1" and row.get("mode") != "check" and bool(row.get("median_us"))


def current_runs(rows):
    """{step: the run its figures come from}, as tools/compare.py decides it
    from the usable rows: the newest run that timed it as a program asked
    for (role empty), else the newest that timed it at all."""
    asked, any_run = {}, {}
    for row in rows:
        if not usable(row):
            continue
        step, run = row.get("step", ""), row.get("run") or ""
        any_run[step] = max(any_run.get(step, run), run)
        if row.get("role") != schema.COMPARED:
            asked[step] = max(asked.get(step, run), run)
    return {step: asked.get(step, run) for step, run in any_run.items()}


def merge_runs(old, new, replaced, exists=lambda label: True):
    """old's rows but those replaced() is true for, then new's; then only the
    runs that some program's figures come from, and the new run. A run that
    still holds one program's figures is kept whole: the rows of its other
    programs are what that program's ratios are read against. Rows of a
    program that no longer exists (exists(label) false) go, and PyTorch's
    rows keep no run alive on their own."""
    rows = [row for row in old if not replaced(row)] + list(new)
    rows = [row for row in rows if row.get("step", "").startswith("torch/")
            or exists(row.get("step", ""))]
    ours = [row for row in rows if not row.get("step", "").startswith("torch/")]
    live = set(current_runs(ours).values()) | {row.get("run") or "" for row in new}
    rows = [row for row in rows if (row.get("run") or "") in live]
    return sorted(rows, key=lambda row: (row.get("run") or "", int(row.get("round") or 0)))


def check_run_id(old, new, run_id):
    """A run id shared by calls (--round) names one plan: a call that asks for
    other programs under an id already used would demote them to comparisons."""
    before = {r.get("step") for r in old if r.get("run") == run_id and r.get("role") != schema.COMPARED}
    now = {r.get("step") for r in new if r.get("role") != schema.COMPARED}
    if before and before != now:
        raise BenchError(EXIT_USAGE, f"--run-id {run_id} already holds a run of other programs "
                                     f"({', '.join(sorted(before - now or before))}); give this "
                                     "one its own id")


def log_path(results_path):
    """OUT_DIR/h200.csv -> OUT_DIR/h200-bench.log."""
    return results_path[:-len(".csv")] + "-bench.log"


def write_text(path, text):
    """Write through a temporary file, so a reader never sees half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def display_path(path):
    """Relative to the current directory when inside it (shorter to read)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def summary(sweeps, seconds, dests, args):
    runs = sum(s.runs for s in sweeps)
    extras = [f"{count} {what}" for count, what in
              ((sum(s.skipped for s in sweeps), "skipped"), (sum(s.failed for s in sweeps), "failed"))
              if count]
    note = f" ({', '.join(extras)})" if extras else ""
    which = (f"round {args.only_round} of {args.rounds}" if args.only_round else
             f"{args.rounds} round{'s' if args.rounds != 1 else ''}")
    if args.only is not None:
        which += f", only {','.join(args.only)} and what it is compared with"
    return (f"bench: {runs} runs{note} in {which} (run {args.run_id}), {seconds:.1f} s -> "
            f"{', '.join(display_path(d) for d in dests)}")


# -------------------------------------------------------------------- main

def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Run every program of part 1 (sizes) and part 2 (shapes) in rounds and "
                    "write the rows to OUT_DIR/<gpu>.csv and OUT_DIR/<gpu>-rows.csv.")
    parser.add_argument("--root", default=REPO,
                        help="the repository holding stepN_*/, baseline_cub/ and rows/ "
                             "(default: this one)")
    parser.add_argument("--out-dir", help="where the files go (default: ROOT/plots/results)")
    parser.add_argument("--part", choices=("sum", "rows", "all", "back"), default="all",
                        help="part 1 (sum), part 2 (rows) or both (all, the default); back: "
                             "part 3 alone (not in all: not measured yet)")
    parser.add_argument("--rounds", type=_int_at_least(1), default=DEFAULT_ROUNDS,
                        help=f"every program this many times, order shuffled (default {DEFAULT_ROUNDS})")
    parser.add_argument("--seed", type=_int_at_least(0), default=1,
                        help="seed of the shuffled orders (default 1)")
    parser.add_argument("--reps", type=_int_at_least(1), default=20,
                        help="timed launches per run; the median is reported (default 20)")
    parser.add_argument("--warmup", type=_int_at_least(0), default=3,
                        help="untimed launches before timing (default 3)")
    parser.add_argument("--quick", action="store_true",
                        help="only n = 2^20 and 2^25, and two shapes (a smoke test)")
    parser.add_argument("--shapes", metavar="RxC,...", type=_shapes,
                        help="parts 2 and 3: only these shapes, e.g. 32768x1024,8192x4096 "
                             "(one part's issue measured inside a short GPU slot)")
    parser.add_argument("--torch-python", metavar="PYTHON",
                        help="a Python that imports torch: PyTorch's kernels join part 2 "
                             "(skipped with one line if it cannot)")
    parser.add_argument("--record-path", metavar="FILE",
                        help="after filing the results, write their paths to FILE, one per "
                             "line (make bench reads it to draw their charts)")
    parser.add_argument("--only", metavar="NAMES",
                        type=program_names,
                        help="time only these programs (folders such as rows/step12_bf16_layernorm "
                             "or step9_singlepass, comma-separated; sum, rows or back: every "
                             "program of that part) and what their ratios are read against, in "
                             "one run, and merge the rows into the files in OUT_DIR")
    parser.add_argument("--run-id", metavar="ID",
                        help="the run column of every row (default: the UTC time now, e.g. "
                             "20261202T052253Z; later runs must sort after earlier ones); give "
                             "the same to the calls of one split run")
    parser.add_argument("--merge-into", metavar="DIR",
                        help="also merge the rows into DIR's files, as --only merges them, and "
                             "append this log to DIR's (make verify: OUT_DIR gets this run's "
                             "rows alone, DIR every run)")
    parser.add_argument("--widths", action="store_true",
                        help="part 2's map instead: each op's last step, the copies and "
                             "PyTorch at 256 MiB of input from 256 to 262144 columns, into "
                             "OUT_DIR/<gpu>-rows-widths.csv (make bench-widths); with --only, "
                             "the programs of the map named, their bars and PyTorch's ops, "
                             "merged into that file as a run of their own")
    parser.add_argument("--check-jobs", type=_int_at_least(1), default=1, metavar="N",
                        help="N > 1: round 1's exact checks made first, N programs at a time, "
                             "before round 1 times anything (not with --checks-from: a size its "
                             "file lacks makes them in its timed run; default 1: each timed run "
                             "of round 1 makes its own); each program holds its largest size's "
                             "buffers, so N is bounded by host and device memory (on the H200's "
                             "host 8 were no faster than 1: see --checks-only)")
    checks = parser.add_mutually_exclusive_group()
    checks.add_argument("--checks-only", metavar="FILE",
                        help="make round 1's exact checks alone (--check-jobs programs at a "
                             "time), time nothing, and write what passed to FILE, for a later "
                             "call's --checks-from (round 1 split over two calls)")
    checks.add_argument("--checks-from", metavar="FILE",
                        help="round 1 takes its exact checks from FILE (--checks-only's): a "
                             "size that passed there is timed without them; a timed run whose "
                             "code hash, GPU or build is not the one checked fails")
    parser.add_argument("--round", type=_int_at_least(1), metavar="K", dest="only_round",
                        help="run round K of --rounds alone and merge its rows into the files "
                             "(a run split over calls; round 1 makes the exact checks)")
    args = parser.parse_args(argv)
    if args.only_round and args.only_round > args.rounds:
        parser.error(f"--round {args.only_round} is past --rounds {args.rounds}")
    if args.only is not None and not args.only:
        parser.error("--only names no program")
    split = "--checks-only" if args.checks_only else "--checks-from" if args.checks_from else ""
    if split and (args.widths or args.only_round not in (None, 1)):
        parser.error(f"{split} is round 1's (its exact checks): not with --widths or a later "
                     "--round")
    if args.widths and (args.shapes or args.part != "all" or args.merge_into):
        parser.error("--widths runs its own programs and shapes into its own file: it takes "
                     "no --shapes, --part or --merge-into (--only names programs of the map)")
    # Runs are ordered by their ids: an id is a UTC time, so a later run sorts after.
    if args.run_id is not None and not re.fullmatch(r"\d{8}T\d{6}Z([._-][0-9A-Za-z._-]+)?",
                                                    args.run_id):
        parser.error(f"--run-id {args.run_id!r}: a UTC time such as 20261202T052253Z "
                     "(a suffix after - . or _ may follow): later runs must sort after earlier ones")
    args.run_id = args.run_id or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    args.root = os.path.abspath(args.root)
    args.out_dir = args.out_dir or os.path.join(args.root, "plots", "results")
    # Written after the timing: a path that cannot take them is said now.
    for flag, path, folder in (("--out-dir", args.out_dir, True), ("--merge-into", args.merge_into, True),
                               ("--record-path", args.record_path, False),
                               ("--checks-only", args.checks_only, False)):
        problem = cli.output_problem(path, folder)
        if problem:
            parser.error(f"{flag} {path}: {problem}")
    return args


def program_names(text):
    """--only's comma-separated names (make verify and profile.py read them
    the same way), a trailing / dropped."""
    return [name.strip().rstrip("/") for name in text.split(",") if name.strip()]


def _shapes(text):
    """--shapes: "32768x1024,8192x4096" -> ((32768, 1024), (8192, 4096))."""
    shapes = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*([1-9][0-9]*)x([1-9][0-9]*)\s*", item)
        if not match:
            raise argparse.ArgumentTypeError(f"{item!r} is not ROWSxCOLS, e.g. 32768x1024")
        shapes.append((int(match.group(1)), int(match.group(2))))
    return tuple(shapes)


def _int_at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}: {value}")
        return value
    return parse


def torch_ok(python, output, title="part 2"):
    """True if `python` imports torch and sees a GPU; else one line saying why
    not (PyTorch is left out of the part titled title)."""
    if not python:
        output.out(f"bench: no --torch-python: PyTorch is left out of {title}")
        return False
    code, stderr = run_program([python, "-c", "import torch, sys; "
                                "sys.exit(0 if torch.cuda.is_available() else 3)"], timeout=120)
    if code != 0:
        output.out(f"bench: {python} cannot run torch on a GPU (exit {code}): PyTorch is "
                   f"left out of {title}")
        return False
    return True


def program_exists(root):
    """label -> True while the tree still holds that program (a merge drops
    the rows of one deleted or renamed since)."""
    names = {schema.step_label(d) for d in program_dirs(root) + row_program_dirs(root) +
             row_program_dirs(root, schema.BACK)}
    return lambda label: label in names


def same_run(args, plan, sweep, torch):
    """The rows a call of the same run (--round, or the same --run-id) takes
    the place of: its rounds of its programs."""
    labels = {schema.step_label(name) for name, _, _ in plan}
    rounds_run = {str(r) for r in sweep.rounds_run()}
    return (lambda row: row.get("run") == args.run_id and row.get("round") in rounds_run and
            (row.get("step") in labels or
             (torch is not None and row.get("step", "").startswith("torch/"))))


def write_log(path, log, append):
    """The log beside the results; a merge appends it to the earlier runs' lines."""
    if append and os.path.isfile(path):
        with open(path) as handle:
            log = handle.read() + "\n" + log
    write_text(path, log)


def resolve_only(root, names):
    """{folder} of the programs --only names: folders (rows/baseline_copy), CSV
    labels (rows/copy, cub), or sum / rows / back for every program of that
    part."""
    parts = {"sum": program_dirs(root), "rows": row_program_dirs(root),
             "back": row_program_dirs(root, schema.BACK)}
    known = [d for dirs in parts.values() for d in dirs]
    found = []
    for name in names:
        if name in parts:
            found += parts[name]
        elif name in known or schema.program_dir(name) in known:
            found.append(name if name in known else schema.program_dir(name))
        else:
            if not known:
                raise BenchError(EXIT_USAGE, f"--only: {root} holds no program (is it the "
                                             "repository's root?)")
            example = (parts["rows"] or parts["sum"] or known)[-1]
            raise BenchError(EXIT_USAGE, f"--only: no program {name} (give a folder such as "
                                         f"{example}, or sum, rows or back for a whole part)")
    return list(dict.fromkeys(found))


def plans(args):
    """[(suffix, [(name, path, [Run])], {name: role}, torch ops or None)] for the
    parts asked for; torch ops None: every op (a whole part 2)."""
    found = []
    named = resolve_only(args.root, args.only) if args.only is not None else None
    part1 = program_dirs(args.root)
    if named is None:
        chosen1 = part1 if args.part in ("sum", "all") else []
    else:
        chosen1 = [n for n in named if n in part1]
    if chosen1:
        roles = {n: "" for n in chosen1}
        if named is not None:
            for n in chosen1:
                for other in comparisons(args.root, n)[0]:
                    roles.setdefault(other, schema.COMPARED)
        names = [n for n in part1 if n in roles]
        check_built(args.root, names)
        sizes = sweep_sizes(args.quick)
        found.append(("", [(n, run_path(args.root, n), [Run(n=s) for s in sizes]) for n in names],
                      roles, None))
    for key in ("rows", "back"):
        plan = row_part_plan(args, named, key)
        if plan:
            found.append(plan)
    return found


def row_part_plan(args, named, key):
    """The plan of part 2 (key "rows") or part 3 ("back"), as plans() gives
    it, or None when none of its programs is asked for. A whole part 2 is
    in the default run (--part all); part 3 only when asked for (--part
    back, --only back or its programs): it is not measured yet."""
    part = ROW_PARTS[key]
    programs = row_program_dirs(args.root, part.prefix)
    if named is None:
        in_all = key == "rows"   # part 3 is left out of the default run
        chosen = programs if args.part == key or (args.part == "all" and in_all) else []
        if args.part == key and not programs:
            raise BenchError(EXIT_USAGE, f"no {part.title} programs under "
                                         f"{args.root}/{part.prefix.rstrip('/')}; run `make` first")
    else:
        chosen = [n for n in named if n in programs]
    # Step 9 named on its own is part 1's, and the bar of part 2's row sums:
    # its rows in <gpu>-rows.csv are timed too, as a program asked for.
    one_array_named = (key == "rows" and named is not None and ONE_ARRAY in named
                       and bool(programs))
    if not chosen and not one_array_named:
        return None
    roles, ops = {n: "" for n in chosen}, None
    if one_array_named:
        roles[ONE_ARRAY] = ""
    whole = named is None or set(chosen) == set(programs)
    if not whole or key != "rows":
        # PyTorch's ops of the programs run (part 3 always names them: its
        # whole part has no default list of ops).
        ops = []
        if not whole:
            roles[TORCH] = schema.COMPARED
        for n in chosen:
            others, theirs = comparisons(args.root, n)
            for other in others:
                roles.setdefault(other, "" if whole else schema.COMPARED)
            ops += [o for o in theirs if o not in ops]
    names = [n for n in programs if n in roles]
    one_array = key == "rows" and (whole or ONE_ARRAY in roles)
    check_built(args.root, names + ([ONE_ARRAY] if one_array else []))
    def shapes_of(n):
        """The program's op's shapes (--shapes: the same for every one)."""
        return args.shapes or part.shapes(args.quick, row_program_op(args.root, n))
    # The bar runs at every shape of the programs it is read beside (part 3's
    # bfloat16 copy too: a bfloat16 softmax backward's shapes are softmax's).
    every = list(dict.fromkeys(s for n in names if n not in part.bars for s in shapes_of(n)))
    plan = [(n, run_path(args.root, n),
             [Run(rows=r, cols=c) for r, c in (every if n in part.bars and every
                                               else shapes_of(n))])
            for n in names]
    if one_array:
        # Shapes of one size are one array to step 9 (four shapes hold 2^25
        # floats): one run per size, or each would be filed with the first's row.
        sizes = dict.fromkeys(r * c for r, c in (args.shapes or part.shapes(args.quick)))
        plan.append((ONE_ARRAY, run_path(args.root, ONE_ARRAY), [Run(n=n) for n in sizes]))
        roles.setdefault(ONE_ARRAY, "" if whole else schema.COMPARED)
    return (part.suffix, plan, roles, ops)


def width_shapes(op, quick=False):
    """--widths' shapes of an op: SWEEP_BYTES of x at each width (a bfloat16
    op's x is 2 bytes an element), at least one row."""
    size = 2 if op.removeprefix(COMPILED).endswith("_bf16") else 4
    return [(max(1, SWEEP_BYTES // (cols * size)), cols)
            for cols in (QUICK_SWEEP_COLS if quick else SWEEP_COLS)]


def last_steps(root):
    """Each part 2 op's last step (compare.RowMeasurements.last_step: the
    highest-numbered step of the op, less the steps that branch off an
    earlier one), in step order."""
    last = {}
    for name in steps.step_dirs(root, schema.ROWS):
        op = row_program_op(root, name)
        if op and not steps.branches_off(root, name):
            last[op] = name
    return sorted(last.values(), key=schema.step_sort_key)


def width_plan(args):
    """(suffix, plan, roles, torch ops) of --widths: each op's last step and
    the two copies, each at its op's width_shapes(), part 1's step 9 on the
    same 256 MiB of floats (the row sum's bar), and PyTorch's forms of those
    ops but the copies. With --only, the programs of the map named (a new
    last step, say), their bars and their ops in PyTorch, in a run of their
    own merged into the file: the other ops keep their run."""
    names = last_steps(args.root) + [d for d in (COPY_DIR, COPY16_DIR)
                                     if os.path.isdir(os.path.join(args.root, d))]
    if not names:
        raise BenchError(EXIT_USAGE, f"no part 2 programs under {args.root}/rows; run `make` first")
    roles = {n: "" for n in names}
    if args.only is not None:
        named = resolve_only(args.root, args.only)
        off_map = [n for n in named if n not in names]
        if off_map:
            raise BenchError(EXIT_USAGE, f"--widths --only: {', '.join(off_map)} is not on the "
                                         f"map (each op's last step and the copies: "
                                         f"{', '.join(names)})")
        roles = {n: "" for n in named}
        for n in named:
            roles.setdefault(row_bar(row_program_op(args.root, n)), schema.COMPARED)
        names = [n for n in names if n in roles]
        roles[TORCH] = schema.COMPARED
    check_built(args.root, names)
    plan = [(n, run_path(args.root, n), [Run(rows=r, cols=c) for r, c in
                                         width_shapes(row_program_op(args.root, n), args.quick)])
            for n in names]
    ops = list(dict.fromkeys(o for n in names if roles[n] == ""
                             for o in torch_ops_of(row_program_op(args.root, n))
                             if not o.startswith("copy")))
    if ONE_ARRAY in roles or (args.only is None and any(row_program_op(args.root, n) == "sum"
                                                        for n in names)):
        if is_executable(run_path(args.root, ONE_ARRAY)):
            # A row sum only reads: its bar is part 1's step 9 on the same
            # floats as one array (the copy also writes), 256 MiB of them.
            plan.append((ONE_ARRAY, run_path(args.root, ONE_ARRAY), [Run(n=SWEEP_BYTES // 4)]))
            roles.setdefault(ONE_ARRAY, "")
        else:
            roles.pop(ONE_ARRAY, None)
    return WIDTHS_SUFFIX, plan, roles, ops


CHECKS_FORMAT = "reduce-tutorial round 1 checks 1"


def built_code_hash(path):
    """The code hash a built program says it has (`run --version`, no GPU
    needed), or None where it cannot say."""
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"\bcode_hash=(\S+)", proc.stdout) if proc.returncode == 0 else None
    return found.group(1) if found else None


def made_as_of(row):
    """(code hash, GPU, arch, toolchain) of a row: what its checks vouch for."""
    return tuple(row.get(key, "") for key in MADE_AS)


def read_checks(path):
    """--checks-from's file: ({name: {code_hash, gpu, arch, toolchain, sizes}},
    the run it was made for); anything else is a usage error."""
    def strings(value):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    try:
        with open(path) as handle:
            record = json.load(handle)
        if not isinstance(record, dict) or record.get("format") != CHECKS_FORMAT:
            raise ValueError("not a file of --checks-only")
        programs = record.get("programs")
        if not isinstance(programs, dict) or not all(
                isinstance(p, dict) and all(isinstance(p.get(k), str) for k in MADE_AS) and
                isinstance(p.get("sizes"), list) and all(strings(s) for s in p["sizes"])
                for p in programs.values()):
            raise ValueError("its programs are not {name: {" + ", ".join(MADE_AS) +
                             ", sizes: [[arg, ...], ...]}}")
        return programs, str(record.get("run", ""))
    except (OSError, ValueError) as err:
        raise BenchError(EXIT_USAGE, f"--checks-from {path}: {err}")


def checks_only(args, output, start):
    """--checks-only: round 1's exact checks of every program asked for,
    written to the file; nothing is timed or filed."""
    programs, wanted = {}, {}   # step 9 is in both parts: its sizes once
    with tempfile.TemporaryDirectory() as tmp:
        for _, plan, roles, _ in plans(args):
            sweep = Sweep(plan, args.rounds, args.reps, args.warmup, args.seed, tmp, output,
                          None, args.run_id, roles, 1, check_jobs=args.check_jobs)
            sweep.check_first()
            for name, mine in sweep.checks_record().items():
                # step 9 is part 1's and part 2's bar: one entry, both parts' sizes
                if name in programs:
                    mine["sizes"] = sorted(set(map(tuple, programs[name]["sizes"] +
                                                   mine["sizes"])))
                    mine["sizes"] = [list(size) for size in mine["sizes"]]
                programs[name] = mine
            for name, _, runs in plan:
                if not roles.get(name):
                    wanted.setdefault(name, set()).update(
                        tuple(r.args()) for r in runs if r.n <= CHECKED_MAX)
    passed = sum(len(p["sizes"]) for p in programs.values())
    sizes = sum(len(v) for v in wanted.values())
    write_text(args.checks_only, json.dumps(
        {"format": CHECKS_FORMAT, "run": args.run_id, "command": output.lines[0][2:],
         "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "programs": programs}, indent=1) + "\n")
    left = sizes - passed
    output.out(f"bench: round 1's exact checks alone, {passed} of {sizes} sizes passed"
               f"{f' ({left} left to their timed runs)' if left else ''}, in "
               f"{time.monotonic() - start:.0f} s -> {display_path(args.checks_only)}")
    return EXIT_FAILED if left else 0


def bench(args, command):
    start = time.monotonic()
    output = Output()
    output.lines.append(f"$ {command}")
    if args.checks_only:
        return checks_only(args, output, start)
    record, record_run = read_checks(args.checks_from) if args.checks_from else (None, "")
    sweeps, dests, merged = [], [], []
    merging = args.only is not None or args.only_round is not None
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, plan, roles, ops in ([width_plan(args)] if args.widths else plans(args)):
            torch = None
            part = next((p for p in ROW_PARTS.values() if p.suffix == suffix), None)
            if suffix == WIDTHS_SUFFIX and ops and torch_ok(args.torch_python, output,
                                                            "part 2's widths"):
                torch = (args.torch_python, [], ops, lambda op: width_shapes(op, args.quick))
            elif part and (ops is None or ops) and torch_ok(args.torch_python, output, part.title):
                torch = (args.torch_python, args.shapes or part.shapes(args.quick), ops,
                         lambda op, part=part: args.shapes or part.shapes(args.quick, op))
            sweep = Sweep(plan, args.rounds, args.reps, args.warmup, args.seed, tmp, output, torch,
                          args.run_id, roles, args.only_round, checks=not args.widths,
                          check_jobs=args.check_jobs)
            if record is not None:
                sweep.use_checks(record, args.checks_from, record_run)
            sweep.run_all()
            sweeps.append(sweep)
            replaced = same_run(args, plan, sweep, torch) if merging else None
            exists = program_exists(args.root)
            dests.append(file_results(sweep.rows, args.out_dir, suffix, replaced, exists))
            if args.merge_into:
                merged.append(file_results(sweep.rows, args.merge_into, suffix,
                                           replaced or same_run(args, plan, sweep, torch), exists))
    if not sweeps:
        raise BenchError(EXIT_USAGE, "nothing to run: no program of the part asked for")
    failed = sum(s.failed for s in sweeps)
    if failed:
        output.err(f"bench: {failed} runs failed (see above); rows of wrong results are kept, "
                   "with pass = 0")
    for dest in dests:
        output.out(f"results: {display_path(dest)}")
    for dest in merged:
        output.out(f"merged into: {display_path(dest)}")
    output.out(summary(sweeps, time.monotonic() - start, dests, args))
    log = "\n".join(output.lines) + "\n"
    write_log(log_path(dests[0]), log, merging)
    if merged:
        write_log(log_path(merged[0]), log, True)
    if args.record_path:
        write_text(args.record_path, "".join(d + "\n" for d in dests))
    return EXIT_FAILED if failed else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = shlex.join(["bench.py"] + list(argv))
    args = parse_args(argv)
    return cli.guarded("bench", lambda: bench(args, command), known=(BenchError,))


if __name__ == "__main__":
    sys.exit(main())
