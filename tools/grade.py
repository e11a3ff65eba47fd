#!/usr/bin/env python3
"""grade.py [--quick] [--jobs N] [--junit F] [--gradescope F] PROGRAM...: the
grader behind `make check`.

Runs one program (a shipped step, CUB, a part 2 row program, or a student's)
through an adversarial matrix of checks and exits 0 only if every one passed.
For part 1's sums (stepK_*/run, baseline_cub/run):
  - sizes: 1, small primes and both sides of every power of two up to 8193
    (block, warp and float4 boundaries), both sides of multiples of the
    GPU's resident threads (the grid of steps 6-9, read from the device),
    large primes, 2^28 + 3 (twice, two seeds) and 2^31 - 1, all with --fill
    exact, whose check has zero tolerance and whose magnitudes cycle so that
    a neighbour read by mistake changes the sum;
  - every fill crossed with offsets 0-3 (misaligned starts);
  - onehot with its 1 at the first, last and boundary positions and a sweep;
  - timed runs with repetitions, which must give bit-identical sums;
  - compute-sanitizer memcheck, racecheck and synccheck over a full grid
    (16 x the resident threads + 3) at offset 3, when it is installed.
For part 2's rows (rows/*/run): widths from 1 to 151936 (lane, pack, warp,
group and vocabulary widths), and both sides of every width at which the
program says its kernel changes on this GPU (--gpu-info's path_widths: a
group outgrowing its registers, the row moving to shared memory, then back to
global memory), each at 1 to thousands of rows, aligned and misaligned; the
exact fill (softmax: the levels fill, whose outputs are exact to a few ulps);
every fill at every offset of a 16-byte pack (0-3 floats, 0-7 bfloat16s); y,
gamma and beta moved in their packs apart from x (every pair of offsets); the
shifted and tiny fills that break E[x^2] - E[x]^2 and a misplaced eps, and for
softmax the wide fill and masked rows (causal, padded, ends, top-k), at every
path width; onehot positions across rows; a matrix of more than 2^32 elements
where the GPU and host memory hold it (else skipped, and said), one row of
2^20; repeated timed runs, and the sanitizers.
The harness (common/) surrounds every buffer a kernel is given with NaN
guards and poisons outputs and scratch before every run, so a read past
either end, or of a value nothing wrote this run, shows as NaN.

What the grader cannot see: a memory-ordering bug that the hardware happens
not to expose (a relaxed ticket, a missing release), or two launches running
at once: every check runs one launch at a time.

--quick leaves out the large sizes and the grid-scale onehot sweep: the matrix
the broken fixtures must fail (a subset of the full one, so failing it means
failing the full grader too).

Prints the failed checks as a table, then one verdict line per program:
  grade: PASS step3_idle: 172 of 172 checks passed
  grade: FAIL drop_head: 21 of 162 checks failed
Exit status: 0 all passed, 1 some check failed, 2 usage error, 3 no CUDA device.
"""
import argparse
import concurrent.futures
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
ROW_FILLS = FILLS + ("shifted", "tiny")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
SANITIZER_GRIDS = 16          # the sanitizers' n: 16 x the resident threads + 3, a full grid
SANITIZER_EXIT = 99           # what compute-sanitizer returns when it reports anything
LARGE_JOBS = 4                # large checks at once, at most (MemoryBudget decides)
TIMEOUT_S = {"large": 900, "sanitizer": 900}
DEFAULT_TIMEOUT_S = 180       # a case that runs longer than this hangs

# Both sides of every power of two to 8192: warp (32), block (256), a block's
# two loads (512), float4 (4) and unrolled-trip boundaries all fall on them.
SMALL_SIZES = sorted({1, 2, 3, 5, 7} | {v for k in range(2, 14) for v in
                                        ((1 << k) - 1, 1 << k, (1 << k) + 1)})
MID_SIZES = (65535, 65536, 65537, 131071, 1000003, 16777259)   # the last two are primes
LARGE_SIZES = ((1 << 28) + 3, (1 << 31) - 1)
ONEHOT_N = 100003
ONEHOT_AT = (0, 1, 2, 3, 4, 5, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025,
             4095, 4096, 4097, ONEHOT_N // 2, -5, -4, -3, -2, -1)

# Part 2: widths on both sides of the lane (32), pack (4 floats, 8
# bfloat16s), warp-per-row (1024 = 32 x 32 floats in registers), group (4096,
# 8192) and register (32768) boundaries, primes, and the vocabularies of
# language models (GPT-2's 50257, Llama 3's 128256, Qwen's 151936). The
# program's own path widths (--gpu-info) are added to these, both sides.
VOCAB_COLS = (50257, 128256, 151936)
ROW_COLS = (1, 2, 3, 4, 5, 7, 8, 9, 15, 17, 31, 32, 33, 127, 128, 129, 1000, 1023, 1024, 1025,
            4096, 4097, 8191, 8192, 16385, 32767, 32768, 32769, 65536, 65537, 100003) + VOCAB_COLS
ROW_COUNTS = (1, 3, 33)       # and as many as fit 2^22 floats, for every width
ROW_CELLS = 1 << 21
ROW_FILL_SHAPES = ((37, 1000), (13, 4097), (5, 65537))
STAT_COLS = (31, 33, 1024, 4097, 65537) + VOCAB_COLS   # and the path widths, both sides
MASKS = ("causal", "padded", "ends", "topk", "mixed")
MASK_SHAPES = ((5, 33), (37, 1000), (13, 4097), (3, 65537), (2, 100003), (2, 151936))
ROW_LARGE = ((1 << 22) + 3, 1024)   # 2^32 + 3072 elements: a 32-bit row * cols wraps
ROW_LARGE_EVERY = 64                # its CPU check: every 64th row and the last 64
ROW_WIDE = (1, 1 << 20)             # one row as wide as the harness allows

BATCH_KINDS = ("exact", "offset", "fill", "onehot", "shape", "stat", "masked")
BATCH_SIZE = 40               # checks per process (--checks): one CUDA context for many


@dataclass
class Case:
    kind: str            # exact, fill, offset, onehot, large, timed, shape, stat, or a sanitizer tool
    args: list           # the program's arguments
    tool: str = ""       # compute-sanitizer tool, if any
    cells: int = 0       # floats the check moves, to size the large ones
    need: tuple = (0, 0)  # a large check's device and host bytes (large_need)

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


@dataclass
class Device:
    """What --gpu-info says: the grid sizes and how many large checks fit at once."""
    name: str = "?"
    sms: int = 0
    sm_threads: int = 0
    free_bytes: int = 0


@dataclass
class RowProgram:
    """What a part 2 program's --gpu-info says of itself."""
    op: str = "sum"
    dtype: str = "f32"
    pack: int = 4                 # elements in a 16-byte pack: every offset 0 .. pack - 1
    path_widths: tuple = ()       # the first width of each of its kernel's paths on this GPU

    @property
    def elem_bytes(self):
        return 2 if self.dtype == "bf16" else 4


def row_program(fields):
    """RowProgram from --gpu-info's key=value lines (defaults for an older harness)."""
    widths = tuple(int(w) for w in fields.get("path_widths", "").split(",") if w.strip())
    return RowProgram(fields.get("op", "sum"), fields.get("dtype", "f32"),
                      int(fields.get("pack", 4)), widths)


class GradeError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ the matrix

def check_args(n, fill, seed=1, offset=0, extra=()):
    return ["--check", "-n", str(n), "--fill", fill, "--seed", str(seed),
            "--offset", str(offset), *extra]


def row_args(rows, cols, fill, seed=1, offset=0, extra=()):
    return ["--check", "--rows", str(rows), "--cols", str(cols), "--fill", fill,
            "--seed", str(seed), "--offset", str(offset), *extra]


def build_cases(device, quick=False, sanitizer=True):
    """Every check for one part 1 program, in a fixed order."""
    cases = []
    grid = device.sms * device.sm_threads    # resident threads: steps 6-9's largest grid
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
        cases += [Case("large", check_args(big28, "exact", seed=11, offset=1), cells=big28),
                  Case("large", check_args(big28, "exact", seed=12, offset=2), cells=big28),
                  Case("large", check_args(big31, "exact", seed=13, offset=3), cells=big31)]
    # Repetitions: a race or a stale counter shows as a sum that moves, or
    # as a second run that differs from the first.
    cases += [Case("timed", ["-n", "1000003", "--reps", "25", "--warmup", "2", "--fill", "random"]),
              Case("timed", ["-n", "4097", "--reps", "25", "--warmup", "0", "--fill", "exact"])]
    if sanitizer:
        n = SANITIZER_GRIDS * grid + 3
        for tool in SANITIZER_TOOLS:
            cases.append(Case(tool, check_args(n, "exact", seed=5, offset=3), tool))
        cases.append(Case("memcheck", check_args(5, "exact", seed=5, offset=3), "memcheck"))
    return cases


def gf_mul(a, b, q):
    """a x b in GF(q), q = 4 or 8: the field whose lines give pairwise offset sets."""
    poly = {4: 0b111, 8: 0b1011}[q]
    product = 0
    while b:
        if b & 1:
            product ^= a
        b >>= 1
        a <<= 1
        if a & q:
            a ^= poly
    return product


def offset_pairs(q, arrays):
    """Offsets of `arrays` arrays (2 to 4) in 0 .. q - 1 such that every pair of
    arrays takes every pair of offsets: q x q runs (a, b, a + b, a + 2b in GF(q))."""
    runs = []
    for a in range(q):
        for b in range(q):
            runs.append((a, b, a ^ b, a ^ gf_mul(2, b, q))[:arrays])
    return runs


def build_row_cases(device, program=None, quick=False, sanitizer=True):
    """Every check for one part 2 program, in a fixed order."""
    program = program or RowProgram()
    softmax, layernorm = program.op == "softmax", program.op == "layernorm"
    pack = program.pack
    cases = []
    k = 0

    def offsets(k, aligned):
        """x and y offsets: aligned, or misaligned, by turns the same place in
        their packs (step 10's peeled path) or different places (the plain one)."""
        if aligned:
            return []
        x = 1 + k % (pack - 1)
        y = x if k % 2 else (x + 1 + k // 2 % (pack - 1)) % pack
        return ["--y-offset", str(y)] if y else []

    def x_offset(k, aligned):
        return 0 if aligned else 1 + k % (pack - 1)

    # The exact fill (softmax: levels, whose outputs are 1/S or 0 to a few
    # ulps), at every width and row count, aligned and not.
    path = sorted({w + d for w in program.path_widths for d in (-1, 0)
                   if 1 <= w + d <= 1 << 20})
    widths = sorted(set(ROW_COLS) | set(path))
    exact_fill = "levels" if softmax else "exact"
    for cols in widths:
        for rows in sorted(set(ROW_COUNTS) | {max(1, min(4099, ROW_CELLS // cols))}):
            for aligned in (True, False):
                k += 1
                cases.append(Case("shape", row_args(rows, cols, exact_fill, seed=k,
                                                    offset=x_offset(k, aligned),
                                                    extra=offsets(k, aligned))))
    # Around the row counts where the threads per row change: the warps
    # a GPU can hold, over 32 per SM (rows/step4_group).
    for rows in (device.sms * 32 - 1, device.sms * 32 + 1, device.sms * 8 + 1):
        for cols in (1024, 4096):
            k += 1
            cases.append(Case("shape", row_args(rows, cols, exact_fill, seed=k,
                                                offset=x_offset(k, k % 2 == 0))))
    # Every fill at every place in a 16-byte pack.
    for rows, cols in ROW_FILL_SHAPES:
        for offset in range(pack):
            for fill in ROW_FILLS + ("levels", "centered"):
                k += 1
                cases.append(Case("offset", row_args(rows, cols, fill, seed=k, offset=offset)))
    # y (and gamma and beta) apart from x: every pair of offsets.
    arrays = 4 if layernorm else 2
    names = ("--y-offset", "--gamma-offset", "--beta-offset")
    for rows, cols in ((13, 4097), (3, 1024)):
        for run in offset_pairs(pack, arrays):
            k += 1
            extra = [a for name, o in zip(names, run[1:]) if o for a in (name, str(o))]
            cases.append(Case("offset", row_args(rows, cols, "exact", seed=k, offset=run[0],
                                                 extra=extra)))
    # The inputs that break each path, on both sides of each of its widths:
    # LayerNorm's variance formulas (E[x^2] - E[x]^2 cancels on the shifted
    # fill, mean 2000, and on the centered one, mean 128 and every sum exact,
    # so that its check stays a few ulps wide at any width; the shifted
    # fill's own bound says little past about a thousand columns) and eps
    # (tiny: a variance below eps); softmax's max (wide, shifted) and masks.
    def stat_fills(cols):
        if layernorm:
            return ("centered", "tiny") + (("shifted",) if cols <= 1024 else ())
        return ("wide", "shifted", "tiny") if softmax else ()
    for cols in sorted(set(STAT_COLS) | set(path)):
        for fill in stat_fills(cols):
            for aligned in (True, False):
                k += 1
                cases.append(Case("stat", row_args(3 if cols > 4096 else 7, cols, fill, seed=k,
                                                   offset=x_offset(k, aligned),
                                                   extra=offsets(k, aligned))))
    if softmax:
        # Masked rows (-inf): exactly 0 where masked, all 0 where the whole row is.
        shapes = list(MASK_SHAPES) + [(3, w) for w in path]
        for mask in MASKS:
            for rows, cols in shapes:
                k += 1
                fill = "levels" if k % 2 else "random"
                cases.append(Case("masked", row_args(rows, cols, fill, seed=k,
                                                     offset=x_offset(k, k % 3 == 0),
                                                     extra=["--mask", mask] +
                                                     offsets(k, k % 3 == 0))))
    rows, cols = 33, 1025
    n = rows * cols
    for at in (0, 1, cols - 1, cols, cols + 1, n // 2, -cols, -2, -1):
        cases.append(Case("onehot", row_args(rows, cols, "onehot", offset=1,
                                             extra=("--at", str(at)))))
    if not quick:
        # Past 2^32 elements (a 32-bit row * cols wraps), and the widest row,
        # with a fill whose sums are exact there too.
        (r1, c1), (r2, c2) = ROW_LARGE, ROW_WIDE
        cases += [Case("large", row_args(r1, c1, exact_fill, seed=11, offset=1,
                                         extra=("--check-every", str(ROW_LARGE_EVERY))),
                       cells=r1 * c1),
                  Case("large", row_args(r2, c2, "random", seed=12, offset=2), cells=r2 * c2),
                  Case("large", row_args(2, c2, "levels" if softmax else "centered", seed=13,
                                         offset=3, extra=("--mask", "causal") if softmax else ()),
                       cells=2 * c2)]
    cases += [Case("timed", ["--rows", "1000", "--cols", "1000", "--reps", "25", "--warmup", "2",
                             "--fill", "random"]),
              Case("timed", ["--rows", "4099", "--cols", "33", "--reps", "25", "--warmup", "0",
                             "--fill", "exact"])]
    if sanitizer:
        rows = device.sms * 8 + 3   # a block per row or a warp per row: every SM, more than once
        for tool in SANITIZER_TOOLS:
            cases.append(Case(tool, row_args(rows, 1027, "exact", seed=5, offset=3), tool))
        cases.append(Case("memcheck", row_args(3, 65537, "exact", seed=5, offset=0), "memcheck"))
        cases.append(Case("memcheck", row_args(2, 5, "exact", seed=5, offset=3), "memcheck"))
    return cases


def large_need(case, rows=None):
    """(device bytes, host bytes) one large check takes: the input and the
    output on the GPU; on the host the input, the output and, for bfloat16,
    the rounded copies on their way."""
    if rows is None:
        return case.cells * 4, case.cells * 4
    elem = rows.elem_bytes
    out = elem if rows.op != "sum" else 0
    host = case.cells * (4 + (4 if rows.op != "sum" else 0) + (2 * elem if elem == 2 else 0))
    return case.cells * (elem + out), host


def host_available():
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def memory_lacking(device, need):
    """Why a large check cannot run here ("" if it can): more than 90% of the
    device's free memory or of the host's available memory."""
    gpu, host = need
    if device.free_bytes and gpu > 0.9 * device.free_bytes:
        return (f"needs {gpu / 2**30:.1f} GiB of device memory, "
                f"{device.free_bytes / 2**30:.1f} GiB free")
    available = host_available()
    if available and host > 0.9 * available:
        return f"needs {host / 2**30:.1f} GiB of host memory, {available / 2**30:.1f} available"
    return ""


class MemoryBudget:
    """The device and host bytes the large checks may hold at once (80% of
    what is free): a check waits until its own bytes fit beside the others'.
    One that needs more than the whole budget (but under what is free:
    memory_lacking) runs when it is alone."""

    def __init__(self, device):
        self.free = [int(0.8 * device.free_bytes) if device and device.free_bytes else 1 << 62,
                     int(0.8 * host_available()) or 1 << 62]
        self.running = 0
        self.cond = threading.Condition()

    def acquire(self, need):
        with self.cond:
            while self.running and (need[0] > self.free[0] or need[1] > self.free[1]):
                self.cond.wait()
            self.free[0] -= need[0]
            self.free[1] -= need[1]
            self.running += 1

    def release(self, need):
        with self.cond:
            self.free[0] += need[0]
            self.free[1] += need[1]
            self.running -= 1
            self.cond.notify_all()


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


# The OpenMP threads each checked program may fill and check its input with
# (common/rows_ref.c, harness.c): the CPUs shared among the checks that run at
# once. Left to itself every process starts a thread per CPU, and --jobs of
# them spinning on the same CPUs ran the part 2 matrix several times slower.
THREADS = {"small": 1, "large": 1}


def child_env(kind):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(THREADS["large" if kind == "large" else "small"])
    return env


def run_case(program, case, sanitizer, budget):
    cmd = [program, *case.args]
    if case.tool:
        cmd = [sanitizer, "--tool", case.tool, "--error-exitcode", str(SANITIZER_EXIT), *cmd]
    timeout = TIMEOUT_S.get("sanitizer" if case.tool else case.kind, DEFAULT_TIMEOUT_S)
    slot = budget if case.kind == "large" else None
    if slot:
        slot.acquire(case.need)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", timeout=timeout, env=child_env(case.kind))
    except subprocess.TimeoutExpired:
        return Outcome(case, False, code="timeout", reason=f"no answer in {timeout} s: a hang?")
    except OSError as err:
        return Outcome(case, False, code="?", reason=f"cannot run: {err.strerror}")
    finally:
        if slot:
            slot.release(case.need)
    ok = proc.returncode == 0 and re.search(r"^PASS$", proc.stdout, re.M) is not None
    code = proc.returncode if proc.returncode >= 0 else f"signal {-proc.returncode}"
    return Outcome(case, ok, code=code, reason="" if ok else why(code, proc.stdout, case.tool))


def run_batch(program, cases, sanitizer, budget):
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
                                  timeout=timeout, env=child_env("small"))
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
            outcomes.append(run_case(program, case, sanitizer, budget))
    return outcomes


def probe(program):
    """(name, code hash, Device, RowProgram or None) from --version, --gpu-info and
    one tiny check."""
    if os.path.isdir(program):
        raise GradeError(EXIT_USAGE, f"{program} is a directory: give the program, "
                                     f"e.g. {os.path.join(program, 'run')}")
    if not os.path.exists(program):
        raise GradeError(EXIT_USAGE, f"{program}: no such file (build it with make, or give "
                                     "a source file: make check SOURCE=path/reduce.cu)")
    if not (os.path.isfile(program) and os.access(program, os.X_OK)):
        raise GradeError(EXIT_USAGE, f"{program}: not an executable")
    try:
        version = subprocess.run([program, "--version"], capture_output=True, text=True,
                                 timeout=60)
    except OSError as err:
        raise GradeError(EXIT_USAGE, f"{program}: cannot run: {err.strerror}") from None
    match = re.match(r"^(\S+) code_hash=(\S*)", version.stdout)
    if version.returncode != 0 or not match:
        raise GradeError(EXIT_USAGE, f"{program} is not a program of this harness "
                                     "(--version did not answer)")
    name = match.group(1)
    is_rows = name.startswith("rows/")
    info = subprocess.run([program, "--gpu-info"], capture_output=True, text=True, timeout=120)
    if info.returncode == EXIT_DEVICE and "no CUDA device" in info.stderr:
        raise GradeError(EXIT_DEVICE, info.stderr.strip().removeprefix("error: "))
    fields = dict(line.split("=", 1) for line in info.stdout.splitlines() if "=" in line)
    try:
        device = Device(fields["gpu"], int(fields["sms"]), int(fields["sm_threads"]),
                        int(fields["free_bytes"]))
    except (KeyError, ValueError):
        detail = (info.stderr or info.stdout).strip().splitlines()
        raise GradeError(EXIT_FAILED, f"{program} --gpu-info did not answer: "
                                      f"{detail[-1] if detail else f'exit {info.returncode}'}") from None
    tiny = ["--check", "--rows", "1", "--cols", "1"] if is_rows else ["--check", "-n", "1"]
    proc = subprocess.run([program, *tiny], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and not re.search(r"^(PASS|FAIL)", proc.stdout, re.M):
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise GradeError(EXIT_FAILED, f"{program} {' '.join(tiny)} did not run: "
                                      f"{detail[-1] if detail else f'exit {proc.returncode}'}")
    return name, match.group(2), device, row_program(fields) if is_rows else None


def grade(programs, jobs, quick=(), sanitizer=None, progress=None):
    """Grade every program in one pool of jobs; returns ([Report] in order, GPU name).

    quick: the programs that get the --quick matrix. progress: a file that
    gets one line per finished process, with its time (for slow machines)."""
    reports, jobs_for = [], []
    gpu = None
    device = None
    for program in programs:
        try:
            name, code_hash, device, rows = probe(program)
            gpu = device.name
        except GradeError as err:
            if err.code != EXIT_FAILED:
                raise
            # It cannot even run one tiny check: the program's failure, not the grader's.
            report = Report(program, os.path.basename(os.path.dirname(program)) or program)
            report.outcomes.append(Outcome(Case("probe", ["--check"]), False,
                                           code=EXIT_FAILED, reason=str(err)))
            reports.append(report)
            continue
        report = Report(program, f"{name} (code {code_hash})" if code_hash else name)
        reports.append(report)
        if rows is not None:
            cases = build_row_cases(device, rows, quick=program in quick,
                                    sanitizer=sanitizer is not None)
        else:
            cases = build_cases(device, quick=program in quick, sanitizer=sanitizer is not None)
        small = [c for c in cases if c.batchable]
        for k in range(0, len(small), BATCH_SIZE):
            jobs_for.append((report, run_batch, small[k:k + BATCH_SIZE]))
        for case in cases:
            if case.kind == "large":
                case.need = large_need(case, rows)
                lacking = memory_lacking(device, case.need)
                if lacking:
                    report.outcomes.append(Outcome(case, False, skipped=True, reason=lacking))
                    continue
            if not case.batchable:
                jobs_for.append((report, run_case, case))
    budget = MemoryBudget(device)
    cpus = os.cpu_count() or 1
    THREADS["small"] = max(1, cpus // jobs)
    THREADS["large"] = max(1, cpus // LARGE_JOBS)
    done = [0]
    lock = threading.Lock()

    def timed(report, fn, arg):
        start = time.monotonic()
        result = fn(report.program, arg, sanitizer, budget)
        if progress is not None:
            what = f"{len(arg)} checks" if isinstance(arg, list) else arg.label
            with lock:
                done[0] += 1
                print(f"[{done[0]}/{len(jobs_for)}] {time.monotonic() - start:6.1f} s "
                      f"{report.name.split()[0]}: {what}", file=progress, flush=True)
        return result

    # The large checks in a pool of their own, beside the others from the
    # start: each spends seconds on the host filling gigabytes, and waiting
    # for memory in the main pool they would hold its workers idle.
    def is_large(k):
        return jobs_for[k][1] is run_case and jobs_for[k][2].kind == "large"
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool, \
            concurrent.futures.ThreadPoolExecutor(max_workers=LARGE_JOBS) as large_pool:
        submitted = {k: (large_pool if is_large(k) else pool).submit(timed, *jobs_for[k])
                     for k in range(len(jobs_for))}
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
    parser.add_argument("--junit", metavar="FILE", help="also write the checks as JUnit XML")
    parser.add_argument("--gradescope", metavar="FILE",
                        help="also write the checks as Gradescope's results.json")
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
    if args.junit or args.gradescope:
        import grade_report  # noqa: E402  (tools/grade_report.py, beside this file)
        if args.junit:
            grade_report.write_junit(reports, args.junit, gpu or "")
        if args.gradescope:
            grade_report.write_gradescope(reports, args.gradescope, gpu or "")
    return 0 if all(r.passed for r in reports) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
