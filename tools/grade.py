#!/usr/bin/env python3
"""grade.py [--quick] [--jobs N] PROGRAM...: the grader behind `make check`.

Runs one step program (a shipped step, CUB, or a student's) through an
adversarial matrix of checks and exits 0 only if every one passed:
  - sizes: 1, small primes and both sides of every power of two up to 8193
    (block, warp and float4 boundaries), both sides of multiples of the
    GPU's resident threads (the grid of steps 6-9), large primes, 2^28 + 3
    and 2^31 - 1, with --fill exact, whose check has zero tolerance;
  - every fill crossed with offsets 0-3 (misaligned starts);
  - onehot with its 1 at the first, last and boundary positions and a sweep;
  - timed runs with repetitions, which must give bit-identical sums;
  - compute-sanitizer memcheck, racecheck and synccheck at an odd n and
    offset 3, when compute-sanitizer is installed.
The harness (common/) surrounds every buffer with NaN guards, so a read past
either end shows as NaN and a write there is caught after the run.

--quick leaves out the large sizes (2^28 + 3, 2^31 - 1) and the onehot sweep
at grid scale: the matrix the broken fixtures must fail (a subset of the full
one, so failing it means failing the full grader too).

Prints the failed checks as a table, then one verdict line per program:
  grade: PASS step3_idle: 170 of 170 checks passed
  grade: FAIL drop_head: 21 of 162 checks failed
Exit status: 0 all passed, 1 some check failed, 2 usage error, 3 no CUDA device.
"""
import argparse
import concurrent.futures
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE = 1, 2, 3
FILLS = ("random", "positive", "wide", "ones", "ints", "onehot", "exact")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
SANITIZER_N = 100003          # odd: every step's tail code runs, over several blocks
SANITIZER_EXIT = 99           # what compute-sanitizer returns when it reports anything
LARGE_JOBS = 5                # 2^31 - 1 floats: 8 GiB on the host and 8 on the GPU each
TIMEOUT_S = {"large": 900, "sanitizer": 900}
DEFAULT_TIMEOUT_S = 180       # a case that runs longer than this hangs
THREADS_PER_SM = 2048         # resident threads per SM on every GPU CUDA 13 builds for

# Both sides of every power of two to 8192: warp (32), block (256), a block's
# two loads (512), float4 (4) and unrolled-trip boundaries all fall on them.
SMALL_SIZES = sorted({1, 2, 3, 5, 7} | {v for k in range(2, 14) for v in
                                        ((1 << k) - 1, 1 << k, (1 << k) + 1)})
MID_SIZES = (65535, 65536, 65537, 131071, 1000003, 16777259)   # the last two are primes
LARGE_SIZES = ((1 << 28) + 3, (1 << 31) - 1)
ONEHOT_N = 100003
ONEHOT_AT = (0, 1, 2, 3, 4, 5, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025,
             4095, 4096, 4097, ONEHOT_N // 2, -5, -4, -3, -2, -1)


BATCH_KINDS = ("exact", "offset", "fill", "onehot")
BATCH_SIZE = 40               # checks per process (--checks): one CUDA context for many


@dataclass
class Case:
    kind: str            # exact, fill, offset, onehot, large, timed, or a sanitizer tool
    args: list           # the program's arguments
    tool: str = ""       # compute-sanitizer tool, if any

    @property
    def label(self):
        text = " ".join(self.args)
        return f"{self.tool}: {text}" if self.tool else text

    @property
    def batchable(self):
        """Small checks run many to a process; large, timed and sanitized ones alone."""
        return self.kind in BATCH_KINDS and not self.tool


@dataclass
class Outcome:
    case: Case
    ok: bool
    skipped: bool = False
    code: object = None
    reason: str = ""


@dataclass
class Report:
    program: str
    name: str = "?"
    outcomes: list = field(default_factory=list)

    @property
    def failed(self):
        return [o for o in self.outcomes if not o.ok and not o.skipped]

    @property
    def skipped(self):
        return [o for o in self.outcomes if o.skipped]

    @property
    def passed(self):
        return not self.failed


class GradeError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ the matrix

def check_args(n, fill, seed=1, offset=0, extra=()):
    return ["--check", "-n", str(n), "--fill", fill, "--seed", str(seed),
            "--offset", str(offset), *extra]


def build_cases(sms, quick=False, sanitizer=True):
    """Every check for one program, in a fixed order. sms sizes the grid cases."""
    cases = []
    grid = sms * THREADS_PER_SM
    grid_sizes = sorted({m * grid + d for m in (1, 4, 16) for d in (-1, 0, 1)})
    for i, n in enumerate(SMALL_SIZES + list(MID_SIZES) + grid_sizes):
        cases.append(Case("exact", check_args(n, "exact", seed=i + 1, offset=i % 4)))
    for offset in range(4):
        for fill in FILLS:
            cases.append(Case("offset", check_args(4099, fill, seed=offset + 2, offset=offset)))
            if not quick:
                cases.append(Case("offset", check_args(1048579, fill, seed=offset + 3,
                                                       offset=offset)))
    for n in (1, 257):
        for fill in FILLS:
            cases.append(Case("fill", check_args(n, fill, seed=7, offset=3)))
    for k, at in enumerate(ONEHOT_AT):
        cases.append(Case("onehot", check_args(ONEHOT_N, "onehot", offset=k % 4,
                                               extra=("--at", str(at)))))
    if not quick:
        n = 4 * grid + 3
        for at in sorted({0, grid - 1, grid, 2 * grid, n - 1} |
                         {n * k // 9 for k in range(1, 9)}):
            cases.append(Case("onehot", check_args(n, "onehot", offset=1,
                                                   extra=("--at", str(at)))))
        big28, big31 = LARGE_SIZES
        cases += [Case("large", check_args(big28, "random", seed=11, offset=1)),
                  Case("large", check_args(big31, "exact", seed=13, offset=3))]
    # Repetitions: a race or a stale counter shows as a sum that moves, or
    # as a second run that differs from the first.
    cases += [Case("timed", ["-n", "1000003", "--reps", "25", "--warmup", "2", "--fill", "random"]),
              Case("timed", ["-n", "4097", "--reps", "25", "--warmup", "0", "--fill", "exact"])]
    if sanitizer:
        for tool in SANITIZER_TOOLS:
            cases.append(Case(tool, check_args(SANITIZER_N, "exact", seed=5, offset=3), tool))
        cases.append(Case("memcheck", check_args(5, "exact", seed=5, offset=3), "memcheck"))
    return cases


# ------------------------------------------------------------------ running

def find_sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    fallback = "/usr/local/cuda/bin/compute-sanitizer"
    return fallback if os.access(fallback, os.X_OK) else None


def first_line(text, pattern):
    for line in text.splitlines():
        if re.search(pattern, line):
            return line.strip()
    return ""


def why(code, out, tool):
    """The one line that says what went wrong."""
    if tool:
        line = first_line(out, r"^=+ (?!COMPUTE-SANITIZER|.*SUMMARY|.*ERROR SUMMARY)\S")
        if line:
            return re.sub(r"^=+\s*", "", line)
    for pattern in (r"^FAIL", r"^error:"):
        line = first_line(out, pattern)
        if line:
            return line
    tail = [line for line in out.splitlines() if line.strip()]
    return tail[-1].strip() if tail else f"exit {code}, no output"


def run_case(program, case, sanitizer, large_slots):
    cmd = [program, *case.args]
    if case.tool:
        cmd = [sanitizer, "--tool", case.tool, "--error-exitcode", str(SANITIZER_EXIT), *cmd]
    timeout = TIMEOUT_S.get("sanitizer" if case.tool else case.kind, DEFAULT_TIMEOUT_S)
    slot = large_slots if case.kind == "large" else None
    if slot:
        slot.acquire()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome(case, False, code="timeout", reason=f"no answer in {timeout} s: a hang?")
    except OSError as err:
        return Outcome(case, False, code="?", reason=f"cannot run: {err.strerror}")
    finally:
        if slot:
            slot.release()
    ok = proc.returncode == 0 and re.search(r"^PASS$", proc.stdout, re.M) is not None
    code = proc.returncode if proc.returncode >= 0 else f"signal {-proc.returncode}"
    return Outcome(case, ok, code=code, reason="" if ok else why(code, proc.stdout, case.tool))


def run_batch(program, cases, sanitizer, large_slots):
    """Runs the cases through one `--checks FILE` process; [Outcome] in order.

    A check the process did not finish (a crash ends the batch: a CUDA error
    poisons the context) is run again alone, so that it is charged to the
    right check."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checks.txt")
        with open(path, "w") as handle:
            for case in cases:
                handle.write(" ".join(a for a in case.args if a != "--check") + "\n")
        timeout = DEFAULT_TIMEOUT_S * 2
        try:
            proc = subprocess.run([program, "--checks", path], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, errors="replace",
                                  timeout=timeout)
            output = proc.stdout
        except subprocess.TimeoutExpired as err:
            output = err.stdout or ""
            if isinstance(output, bytes):
                output = output.decode(errors="replace")
        except OSError as err:
            return [Outcome(case, False, code="?", reason=f"cannot run: {err.strerror}")
                    for case in cases]
    blocks = re.split(r"^== check .*$", output, flags=re.M)[1:]
    outcomes = []
    for k, case in enumerate(cases):
        block = blocks[k] if k < len(blocks) else ""
        verdict = re.search(r"^(PASS|FAIL.*)$", block, re.M)
        if verdict and verdict.group(1) == "PASS":
            outcomes.append(Outcome(case, True, code=0))
        elif verdict:
            outcomes.append(Outcome(case, False, code=EXIT_FAILED, reason=verdict.group(1)))
        else:
            outcomes.append(run_case(program, case, sanitizer, large_slots))
    return outcomes


def probe(program):
    """(step name, SM count, GPU name) from --version and one tiny checked run."""
    if not (os.path.isfile(program) and os.access(program, os.X_OK)):
        raise GradeError(EXIT_USAGE, f"{program}: not an executable (run make first)")
    try:
        version = subprocess.run([program, "--version"], capture_output=True, text=True,
                                 timeout=60)
    except OSError as err:
        raise GradeError(EXIT_USAGE, f"{program}: cannot run: {err.strerror}") from None
    match = re.match(r"^(\S+) code_hash=(\S*)", version.stdout)
    if version.returncode != 0 or not match:
        raise GradeError(EXIT_USAGE, f"{program} is not a step program of this harness "
                                     "(--version did not answer)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.csv")
        proc = subprocess.run([program, "--check", "-n", "1", "--csv", path],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode == EXIT_DEVICE and "no CUDA device" in proc.stderr:
            raise GradeError(EXIT_DEVICE, proc.stderr.strip().removeprefix("error: "))
        try:
            with open(path, newline="") as handle:
                row = next(csv.DictReader(handle))
            return match.group(1), int(row["sms"]), row["gpu"], match.group(2)
        except (OSError, StopIteration, KeyError, ValueError):
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            raise GradeError(EXIT_FAILED, f"{program} --check -n 1 did not run: "
                                          f"{detail[-1] if detail else f'exit {proc.returncode}'}") from None


def grade(programs, jobs, quick=(), sanitizer=None, progress=None):
    """Grade every program in one pool of jobs; returns ([Report] in order, GPU name).

    quick: the programs that get the --quick matrix. progress: a file that
    gets one line per finished process, with its time (for slow machines)."""
    reports, jobs_for = [], []
    gpu = None
    for program in programs:
        try:
            name, sms, gpu, code_hash = probe(program)
        except GradeError as err:
            if err.code != EXIT_FAILED:
                raise
            # It cannot even sum one float: that is the program's failure, not the grader's.
            report = Report(program, os.path.basename(os.path.dirname(program)) or program)
            report.outcomes.append(Outcome(Case("probe", ["--check", "-n", "1"]), False,
                                           code=EXIT_FAILED, reason=str(err)))
            reports.append(report)
            continue
        report = Report(program, f"{name} (code {code_hash})" if code_hash else name)
        reports.append(report)
        cases = build_cases(sms, quick=program in quick, sanitizer=sanitizer is not None)
        small = [c for c in cases if c.batchable]
        for k in range(0, len(small), BATCH_SIZE):
            jobs_for.append((report, run_batch, small[k:k + BATCH_SIZE]))
        for case in cases:
            if not case.batchable:
                jobs_for.append((report, run_case, case))
    large_slots = threading.Semaphore(LARGE_JOBS)
    done = [0]
    lock = threading.Lock()

    def timed(report, fn, arg):
        start = time.monotonic()
        result = fn(report.program, arg, sanitizer, large_slots)
        if progress is not None:
            what = f"{len(arg)} checks" if isinstance(arg, list) else arg.label
            with lock:
                done[0] += 1
                print(f"[{done[0]}/{len(jobs_for)}] {time.monotonic() - start:6.1f} s "
                      f"{report.name.split()[0]}: {what}", file=progress, flush=True)
        return result

    # The large checks first: each spends a minute on the host filling 8 GiB,
    # and started last they would leave the pool waiting on them alone.
    order = sorted(range(len(jobs_for)),
                   key=lambda k: not (jobs_for[k][1] is run_case and jobs_for[k][2].kind == "large"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        submitted = {k: pool.submit(timed, *jobs_for[k]) for k in order}
        futures = [(jobs_for[k][0], submitted[k]) for k in range(len(jobs_for))]
        for report, future in futures:
            result = future.result()
            report.outcomes.extend(result if isinstance(result, list) else [result])
    if sanitizer is None:
        for report in reports:
            if report.failed and report.failed[0].case.kind == "probe":
                continue
            for tool in SANITIZER_TOOLS:
                report.outcomes.append(Outcome(Case(tool, [], tool), False, skipped=True,
                                               reason="compute-sanitizer not found"))
    return reports, gpu


# ------------------------------------------------------------------ reporting

def failure_table(report, limit=40):
    lines = []
    for o in report.failed[:limit]:
        lines.append(f"  {o.case.kind:<9} {str(o.code):>7}  {o.case.label}\n"
                     f"  {'':<9} {'':>7}  -> {o.reason}")
    if len(report.failed) > limit:
        lines.append(f"  ... and {len(report.failed) - limit} more failed checks")
    return lines


def verdict(report):
    total = len(report.outcomes) - len(report.skipped)
    note = ""
    if report.skipped:
        note = f" ({len(report.skipped)} skipped: {report.skipped[0].reason})"
    if report.passed:
        return f"grade: PASS {report.name}: {total} of {total} checks passed{note}"
    return f"grade: FAIL {report.name}: {len(report.failed)} of {total} checks failed{note}"


def print_report(report, out=sys.stdout):
    if report.failed:
        print(f"{report.name}: failed checks (kind, exit, command -> why)", file=out)
        for line in failure_table(report):
            print(line, file=out)
    print(verdict(report), file=out, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Grade step programs: exit 0 only if every "
                                                 "check passes.")
    parser.add_argument("programs", nargs="+", metavar="PROGRAM", help="path of a run binary")
    parser.add_argument("--quick", action="store_true",
                        help="leave out the large sizes and the grid-scale onehot sweep")
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                        help="checks run at once (default: min(8, CPUs))")
    parser.add_argument("--no-sanitizer", action="store_true",
                        help="skip compute-sanitizer even if it is installed")
    parser.add_argument("--progress", action="store_true",
                        help="a line per finished process, with its time, on stderr")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.jobs < 1:
        print("grade: error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    sanitizer = None if args.no_sanitizer else find_sanitizer()
    quick = set(args.programs) if args.quick else set()
    try:
        reports, gpu = grade(args.programs, args.jobs, quick, sanitizer,
                             sys.stderr if args.progress else None)
    except GradeError as err:
        print(f"grade: {err}", file=sys.stderr)
        return err.code
    except KeyboardInterrupt:
        print("grade: interrupted", file=sys.stderr)
        return 130
    print(f"grade: {sum(len(r.outcomes) for r in reports)} checks on {gpu}")
    for report in reports:
        print_report(report)
    return 0 if all(r.passed for r in reports) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
