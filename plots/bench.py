#!/usr/bin/env python3
"""Benchmark every step program and the CUB baseline over a sweep of sizes.

Each (program, n) pair runs once as `run -n N --csv TMP --reps R --warmup W`.
The program itself flushes L2, times the launches, verifies the sum and appends
one CSV row (see common/README.md). This driver only orders the runs, shows
progress and files the rows as OUT_DIR/<gpu>.csv, one file per GPU model, so
results measured on different GPUs can sit side by side.

Exit codes: 0 all runs passed, 1 some run failed (results still written),
2 usage error or programs not built, 3 no CUDA device.
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP_DIR_RE = re.compile(r"^step(\d+)_(.+)$")
CUB_DIR = "baseline_cub"

# Headline sizes: 2^25 (128 MiB) is far larger than L2 but quick; 2^28 (1 GiB)
# shows the steady state once launch overhead and the tail are negligible.
HEADLINE_SIZES = (1 << 25, 1 << 28)
# Non-powers of two exercise the tail handling (a partial last block) and show
# what a ragged size costs compared with its power-of-two neighbours.
ODD_SIZES = (1000, 100003, 3 * (1 << 20) + 7, 10**7 + 1, (1 << 27) + 5)
QUICK_SIZES = (1 << 20, 1 << 25)
# A single run does at most ~25 launches over 1 GiB; minutes means a hang.
RUN_TIMEOUT_S = 600

EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE = 1, 2, 3
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
    """Step directories sorted by their integer (step10 after step9), then CUB.

    A step directory counts once it has a source or a binary, so a stray
    `step4_notes/` folder is ignored but an unbuilt `step9_mine/` is not.
    """
    if not os.path.isdir(root):
        raise BenchError(EXIT_USAGE, f"no such directory: {root}")
    steps = []
    for name in os.listdir(root):
        match = STEP_DIR_RE.match(name)
        path = os.path.join(root, name)
        if match and os.path.isdir(path) and _has_program(path):
            steps.append((int(match.group(1)), name))
    names = [name for _, name in sorted(steps)]
    if os.path.isdir(os.path.join(root, CUB_DIR)):
        names.append(CUB_DIR)
    return names


def _has_program(path):
    return any(os.path.exists(os.path.join(path, f)) for f in ("run", "reduce.cu"))


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
        raise BenchError(EXIT_USAGE, f"not built: {', '.join(missing)}; run `make` first")


def find_programs(root):
    """[(directory name, path of its run binary)] in benchmark order."""
    names = program_dirs(root)
    check_built(root, names)
    return [(name, run_path(root, name)) for name in names]


def step_label(name):
    """The value of the CSV `step` column for a directory (common/README.md)."""
    return "cub" if name == CUB_DIR else name


# ------------------------------------------------------------------- sizes

def sweep_sizes(quick=False):
    """Every n to run, ascending: powers of two 2^10..2^28 plus a few odd ones."""
    if quick:
        return list(QUICK_SIZES)
    powers = {1 << k for k in range(10, 29)}
    return sorted(powers | set(ODD_SIZES) | set(HEADLINE_SIZES))


# --------------------------------------------------------------- gpu names

def gpu_slug(name):
    """File-name form of a GPU name: 'NVIDIA GeForce RTX 4090' -> 'geforce-rtx-4090'."""
    slug = name.strip().lower()
    if slug.startswith("nvidia "):
        slug = slug[len("nvidia "):]
    slug = re.sub(r"[^a-z0-9]+", "-", slug).strip("-")
    return slug or "unknown-gpu"


# -------------------------------------------------------------------- runs

def read_rows(path):
    """All rows of a results CSV as dicts (the header comes from the program)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_program(path, n, csv_path, reps, warmup):
    """Run one (program, n) pair; returns (exit code, stderr text, command)."""
    cmd = [path, "-n", str(n), "--csv", csv_path, "--reps", str(reps), "--warmup", str(warmup)]
    try:
        # stdout is the program's human summary; the numbers come from the CSV.
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {RUN_TIMEOUT_S} s", cmd
    except OSError as e:
        return None, f"cannot execute: {e.strerror}", cmd
    return proc.returncode, proc.stderr, cmd


def error_line(stderr):
    """The program's one-line `error:` message, else its last non-empty line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line
    return lines[-1] if lines else "(no message on stderr)"


def strip_error_prefix(line):
    return line[len("error:"):].strip() if line.startswith("error:") else line


def progress_line(index, total, name, width, row):
    """'[ 37/240] step3_idle      n=33554432   142.1 us  944 GB/s  PASS'."""
    counter = f"[{index:>{len(str(total))}}/{total}]"
    verdict = "PASS" if row.get("pass", "").strip() == "1" else "FAIL"
    try:
        median, gbps = float(row["median_us"]), float(row["gbps"])
        numbers = f"{median:>9.1f} us {gbps:>5.0f} GB/s"
    except (KeyError, TypeError, ValueError):
        numbers = f"{'?':>9} us {'?':>5} GB/s"  # a malformed row is still reported
    return f"{counter} {name:<{width}} n={row.get('n', '?'):<10} {numbers}  {verdict}"


class Sweep:
    """Runs the sweep and keeps the tallies that the final summary needs."""

    def __init__(self, programs, sizes, csv_path, reps, warmup):
        self.programs, self.sizes, self.csv_path = programs, sizes, csv_path
        self.reps, self.warmup = reps, warmup
        self.total = len(programs) * len(sizes)
        self.width = max(len(name) for name, _ in programs)
        self.runs = self.skipped = self.failed = 0

    def run_all(self):
        for name, path in self.programs:
            for n in self.sizes:
                self.runs += 1
                self.run_one(name, path, n)

    def run_one(self, name, path, n):
        before = len(read_rows(self.csv_path))
        code, stderr, cmd = run_program(path, n, self.csv_path, self.reps, self.warmup)
        if code == PROG_DEVICE_ERROR and NO_DEVICE_TEXT in stderr:
            # Every later run would fail the same way: stop at once.
            message = strip_error_prefix(error_line(stderr))
            raise BenchError(EXIT_DEVICE, f"no CUDA device: {message}")
        if code == PROG_DEVICE_ERROR and OOM_TEXT in stderr:
            print(f"skip: {name} n={n} does not fit in device memory", flush=True)
            self.skipped += 1
            return
        rows = read_rows(self.csv_path)
        if code in (0, 1) and len(rows) == before + 1 and rows[-1].get("n") == str(n):
            # Exit 1 (wrong sum) still writes its row, so show it as FAIL first.
            print(progress_line(self.runs, self.total, name, self.width, rows[-1]), flush=True)
            if code == 0:
                return
        elif code == 0:
            stderr = f"exited 0 but did not append a row for n={n} to {self.csv_path}"
        self.report_failure(name, n, code, stderr, cmd)

    def report_failure(self, name, n, code, stderr, cmd):
        self.failed += 1
        status = "no exit status" if code is None else f"exit {code}"
        if code is not None and code < 0:
            status = f"killed by signal {-code}"
        print(f"bench: {name} n={n} failed ({status}): {error_line(stderr)}", file=sys.stderr)
        print(f"bench:   command: {' '.join(cmd)}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------- results

def make_temp_csv(out_dir):
    """An empty CSV in OUT_DIR (same file system, so the final move is atomic).

    Hidden and not ending in .csv, so plot scripts globbing *.csv skip it.
    """
    os.makedirs(out_dir, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=".bench-", suffix=".csv.tmp", dir=out_dir)
    os.close(fd)
    os.chmod(path, 0o644)  # mkstemp makes it private; results are meant to be shared
    return path


def file_results(tmp_csv, out_dir):
    """Move the rows to OUT_DIR/<gpu>.csv, replacing that GPU's older file."""
    rows = read_rows(tmp_csv)
    if not rows:
        raise BenchError(EXIT_FAILED, "no results: every run was skipped or failed")
    gpus = sorted({row.get("gpu", "").strip() for row in rows})
    if len(gpus) > 1:
        # One file per GPU model: rows from two GPUs cannot be filed together.
        raise BenchError(EXIT_FAILED, f"rows from several GPUs in one run ({', '.join(gpus)}); "
                                      "nothing written")
    dest = os.path.join(out_dir, gpu_slug(gpus[0]) + ".csv")
    os.replace(tmp_csv, dest)
    return dest


def display_path(path):
    """Relative to the current directory when inside it (shorter to read)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def summary(sweep, seconds, dest):
    extras = [f"{count} {what}" for count, what in
              ((sweep.skipped, "skipped"), (sweep.failed, "failed")) if count]
    note = f" ({', '.join(extras)})" if extras else ""
    return f"bench: {sweep.runs} runs{note} in {seconds:.1f} s -> {display_path(dest)}"


# -------------------------------------------------------------------- main

def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Run every stepN_*/run and baseline_cub/run over a sweep of sizes and "
                    "write the rows to OUT_DIR/<gpu>.csv (replacing that GPU's previous file).")
    parser.add_argument("--root", default=REPO,
                        help="directory holding the stepN_*/ and baseline_cub/ folders "
                             "(default: this repository)")
    parser.add_argument("--out-dir", help="where <gpu>.csv goes (default: ROOT/plots/results)")
    parser.add_argument("--reps", type=_int_at_least(1), default=20,
                        help="timed launches per run; the median is reported (default 20)")
    parser.add_argument("--warmup", type=_int_at_least(0), default=3,
                        help="untimed launches before timing (default 3)")
    parser.add_argument("--quick", action="store_true",
                        help="only n = 2^20 and 2^25 (a smoke test)")
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    args.out_dir = args.out_dir or os.path.join(args.root, "plots", "results")
    return args


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


def bench(args):
    start = time.monotonic()
    programs = find_programs(args.root)
    tmp_csv = make_temp_csv(args.out_dir)
    try:
        sweep = Sweep(programs, sweep_sizes(args.quick), tmp_csv, args.reps, args.warmup)
        sweep.run_all()
        dest = file_results(tmp_csv, args.out_dir)
    finally:
        if os.path.exists(tmp_csv):
            os.remove(tmp_csv)
    if sweep.failed:
        print(f"bench: {sweep.failed} of {sweep.runs} runs failed (see above)", file=sys.stderr)
    # Flush stderr first so the elapsed-time line really is the last one shown.
    sys.stderr.flush()
    print(f"results: {display_path(dest)}")
    print(summary(sweep, time.monotonic() - start, dest), flush=True)
    return EXIT_FAILED if sweep.failed else 0


def main(argv=None):
    args = parse_args(argv)
    try:
        return bench(args)
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a one-line report beats a traceback for students
        print(f"bench: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
