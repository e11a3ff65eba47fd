#!/usr/bin/env python3
"""Benchmark every step program and the CUB baseline over a sweep of sizes.

Each (program, n) pair runs once as `run -n N --csv TMP --reps R --warmup W`.
The program itself flushes L2, times the launches, verifies the sum and appends
one CSV row (tools/schema.py). This driver only orders the runs, shows
progress and files the rows as OUT_DIR/<gpu>.csv, one file per GPU model, so
results measured on different GPUs can sit side by side, with everything it
printed in OUT_DIR/<gpu>-bench.log. Rows of failed runs stay in the file
(pass = 0); the charts and tables leave them out.

Exit codes: 0 all runs passed, 1 some run failed (results still written),
2 usage error or programs not built, 3 no CUDA device.
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402  (the CSV columns, step names and GPU slug)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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
    """Step directories in step order (step10 after step9), then CUB.

    A step directory counts once it has a source or a binary, so a stray
    `step4_notes/` folder is ignored but an unbuilt `step9_mine/` is not.
    """
    if not os.path.isdir(root):
        raise BenchError(EXIT_USAGE, f"no such directory: {root}")
    names = schema.step_dirs(root)
    if os.path.isdir(os.path.join(root, schema.CUB_DIR)):
        names.append(schema.CUB_DIR)
    return names


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
    verdict = "PASS" if row.get("pass", "") == "1" else "FAIL"
    try:
        median, gbps = float(row["median_us"]), float(row["gbps"])
        numbers = f"{median:>9.1f} us {gbps:>5.0f} GB/s"
    except (KeyError, TypeError, ValueError):
        numbers = f"{'?':>9} us {'?':>5} GB/s"  # a malformed row is still reported
    return f"{counter} {name:<{width}} n={row.get('n', '?'):<10} {numbers}  {verdict}"


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


class Sweep:
    """Runs the sweep and keeps the tallies that the final summary needs."""

    def __init__(self, programs, sizes, csv_path, reps, warmup, output):
        self.programs, self.sizes, self.csv_path = programs, sizes, csv_path
        self.reps, self.warmup, self.output = reps, warmup, output
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
            self.output.out(f"skip: {name} n={n} does not fit in device memory")
            self.skipped += 1
            return
        try:
            rows = read_rows(self.csv_path)
        except schema.SchemaError as err:
            rows, code, stderr = [], None, f"its CSV row cannot be read: {err}"
        if code in (0, 1) and len(rows) == before + 1 and rows[-1].get("n") == str(n):
            # Exit 1 (wrong sum) still writes its row, so show it as FAIL first.
            self.output.out(progress_line(self.runs, self.total, name, self.width, rows[-1]))
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
        self.output.err(f"bench: {name} n={n} failed ({status}): {error_line(stderr)}")
        self.output.err(f"bench:   command: {' '.join(cmd)}")


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
    gpus = sorted({row.get("gpu", "") for row in rows})
    if len(gpus) > 1:
        # One file per GPU model: rows from two GPUs cannot be filed together.
        raise BenchError(EXIT_FAILED, f"rows from several GPUs in one run ({', '.join(gpus)}); "
                                      "nothing written")
    dest = os.path.join(out_dir, schema.gpu_slug(gpus[0]) + ".csv")
    os.replace(tmp_csv, dest)
    return dest


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
    parser.add_argument("--record-path", metavar="FILE",
                        help="after filing the results, write their path to FILE "
                             "(make bench reads it to draw that file's charts)")
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


def bench(args, command):
    start = time.monotonic()
    programs = find_programs(args.root)
    output = Output()
    output.lines.append(f"$ {command}")
    tmp_csv = make_temp_csv(args.out_dir)
    try:
        sweep = Sweep(programs, sweep_sizes(args.quick), tmp_csv, args.reps, args.warmup,
                      output)
        sweep.run_all()
        dest = file_results(tmp_csv, args.out_dir)
    finally:
        if os.path.exists(tmp_csv):
            os.remove(tmp_csv)
    if sweep.failed:
        output.err(f"bench: {sweep.failed} of {sweep.runs} runs failed (see above); "
                   "rows of wrong sums are kept, with pass = 0")
    output.out(f"results: {display_path(dest)}")
    output.out(summary(sweep, time.monotonic() - start, dest))
    write_text(log_path(dest), "\n".join(output.lines) + "\n")
    if args.record_path:
        write_text(args.record_path, dest + "\n")
    return EXIT_FAILED if sweep.failed else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = shlex.join(["bench.py"] + list(argv))
    args = parse_args(argv)
    try:
        return bench(args, command)
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
