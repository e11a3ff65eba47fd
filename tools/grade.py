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
For part 3's backward passes (back/*/run): widths around the lane (32), the
block (256), the warp-per-row registers (1024) and the 4096 of a wide row,
with 1, 3, 4, 5 and 4097 columns, at row counts around the steps' chunks (8
rows) and slices (1, 7, 8, 9, 527, 528, 529, 4097, and both sides of 8 and 16
rows a block on a grid of 4 blocks an SM, read from the device: where a block's
partial row gets one more chunk), every one on the exact fill, whose dgamma and
dbeta must equal the reference bit for bit; x and dy (--offset), dx
(--y-offset) and gamma, dgamma and dbeta (--gamma-offset) at every pair of
places in a 16-byte pack; the four fills (random, exact, shifted, tiny) at
every offset; the determinism check ("det", below); repeated timed runs, and
the sanitizers. The harness's workspace check runs after every call: a ticket
left non-zero fails the check that made it ("counters" in its reason).
Not yet for part 3: sizes past 2^31 elements, and --speed (a usage error).
Part 3's checks ran on the H200 at 725ea61 (plots/reference/h200-back-suite.log),
before its gpu-work check (below) was added.
Determinism (part 3): every --check of a backward pass also runs the random
fill three times and compares dx, dgamma and dbeta bit for bit; a timed run
compares its first and last. A check whose values are all right but whose
bits moved is charged to the kind "det", whatever shapes it was run for, and
there are det checks of their own (many rows a column, where atomics' order
shows). A program that declares itself non-deterministic (step_deterministic
= 0 in its back.cu, as steps 0 and 1 do: dgamma and dbeta by atomicAdd; its
--gpu-info says deterministic=0) gets those outcomes as expected: they pass,
and the verdict says how many det checks saw other bits. Its values are held
to the same bounds. Every other program fails on them.
The harness (common/) surrounds every buffer a kernel is given with NaN
guards and poisons outputs and scratch before every run, so a read past
either end, or of a value nothing wrote this run, shows as NaN.

Every part: the work itself, on the GPU (the "gpu-work" check, at a size
drawn for each grading): with REDUCE_GPU_WORK set, a program built by the
grader (make check STEP= or SOURCE=: common/gpu_work.c is linked in) records,
through CUPTI, the kernels and the copies to the host that its reduce_pass(),
row_forward() or back_run() caused. No kernel, an eighth of the input's bytes or more on
their way to the host, a call that sent bytes to the host with no kernel at all,
or a watch that could not run, fails it. A program
built without the watch (PROGRAM=) gets the check skipped, and said. The
watch runs in every other check too (not the sanitizers', which cannot share
a process with CUPTI, nor the speed runs): any of them that sees the work
done on the host fails, "gpu-work" in its reason, so a program cannot be
honest in the one check it can recognize and sum on the host in the rest.

What the grader cannot see: a memory-ordering bug that the hardware happens
not to expose (a relaxed ticket, a missing release), or two launches running
at once: every check runs one launch at a time.

--speed "1.5x step2" (or "0.8x copy", ">= step8", "2x cub") also times the
program against that program of the same part, in alternating rounds in this
one grading, after every other check has finished (so nothing else runs on
the GPU), at --speed-at (part 1: n floats, default 2^25; part 2: ROWSxCOLS,
default 32768x1024). Each round runs both once, in their own processes; the
ratio is of GB/s (the bytes each must move per second: for two programs of
the same operation and element type, the ratio of their times). The target is met where every round of the
program beats the target times every round of the reference, missed where
every round falls short, and a tie where the rounds overlap (the project's
rule, tools/compare.py); a tie is decided by the ratio of the medians
(--speed-tie pass or fail decides it outright). The speed check is one more
check in the reports, worth --speed-points, scored 0 when any other check
failed. A reference that fails stops the grading with exit 2.

--quick leaves out the large sizes and the grid-scale onehot sweep: the matrix
the broken fixtures must fail (a subset of the full one, so failing it means
failing the full grader too).

Prints the failed checks as a table, then the speed line if asked, then
one verdict line per program:
  grade: PASS step3_idle: 173 of 173 checks passed
  grade: FAIL drop_head: 21 of 163 checks failed
--summary FILE writes the same as JSON (tools/grade_class.py reads it).
Exit status: 0 all passed, 1 some check failed, 2 usage error, 3 no CUDA device.
"""
import argparse
import concurrent.futures
import csv
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import cli  # the exit codes
import compare  # the win/tie rule of the project's results
import schema  # step numbers
import steps  # the step list of the three parts

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE = cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_DEVICE
FILLS = ("random", "positive", "wide", "ones", "ints", "onehot", "exact")
ROW_FILLS = FILLS + ("shifted", "tiny")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
SANITIZER_GRIDS = 16          # the sanitizers' n: 16 x the resident threads + 3, a full grid
SANITIZER_EXIT = 99           # what compute-sanitizer returns when it reports anything
SANITIZER_SKIPPED = ["compute-sanitizer not found"]   # or, asked: not run (--no-sanitizer)
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

# The watch on where the work is done (common/gpu_work.c): a pass may bring
# at most this share of its input's bytes to the host. A sum's or a row's
# work needs none: the harness itself reads the results back.
GPU_WORK = "gpu-work"
GPU_WORK_HOST_SHARE = 1 / 8
# Its size is drawn anew for every grading (and shown in the check's label),
# so that no program can key on a published one.
WATCH_SIZES = random.SystemRandom()

# Speed (--speed): rounds, the size, and each run's repetitions (make bench's).
SPEED_ROUNDS = 5
SPEED_AT = {"sum": "33554432", "rows": "32768x1024"}
SPEED_REPS, SPEED_WARMUP = 20, 3
SPEED_POINTS = 10
MET, TIE, MISSED = "met", "tie", "missed"

# Part 3: the backward pass's fills, widths and row counts (above, and
# back/README.md: the steps' warps, chunks of 8 rows and blocks of 256).
BACK_FILLS = ("random", "exact", "shifted", "tiny")
BACK_COLS = (1, 3, 4, 5, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 4096, 4097)
BACK_ROWS = (1, 7, 8, 9, 527, 528, 529, 4097)
BACK_CELLS = 1 << 23          # a shape check's most elements: 4097 rows stop at 1025 columns
BACK_FILL_SHAPES = ((37, 1000), (529, 1025), (9, 4097))
BACK_DET_SHAPES = ((4097, 1024), (8192, 33), (529, 4097))   # many rows add into each column
# Softmax backward (back/step10 on): the widths where its steps change path
# (a warp's 32 lanes; blocks of 32 to 1024 threads holding 16 floats each:
# 512 to 16384; clusters of blocks of 256 holding 4096 each, up to 16 of
# them, then of 512 and 1024 threads, up to 262144, and past that the rest
# read twice; step 14's bulk copies past 32768, in clusters of 4, 8 and 16,
# whose shares pass 64 KB past 131075), the vocabularies of GPT-2, Llama 3
# and Qwen, each with a few rows (every 16th row of the exact fill is fully
# masked: 16 rows have one).
SOFTMAX_BACK_COLS = (1, 3, 5, 31, 32, 33, 511, 512, 513, 1000, 1023, 1024, 1025, 4095, 4096,
                     4097, 8193, 16384, 16385, 32768, 32769, 40961, 50257, 65536, 65537, 65540,
                     128256, 131073, 131076, 151936, 262144, 262145)
SOFTMAX_BACK_ROWS = (1, 16, 33, 529)
SOFTMAX_BACK_CELLS = 1 << 22   # 529 rows stop at 4097 columns, 16 at 262145
SOFTMAX_BACK_OFFSET_SHAPES = ((13, 4097), (33, 1023), (9, 5), (5, 50257), (3, 151936))
SOFTMAX_BACK_FILL_SHAPES = ((37, 1000), (17, 16385), (5, 128256))
SOFTMAX_BACK_DET_SHAPES = ((4097, 1024), (40, 65537))
# What the driver (common/back_driver.c) says when every output is within
# its bound but the bits moved between runs: the determinism check alone.
DET_ONLY = re.compile(r"^FAIL: every output is within its bound, but not the same bits")
DET = "det"

BATCH_KINDS = ("exact", "offset", "fill", "onehot", "shape", "stat", "masked", DET)
BATCH_SIZE = 40               # checks per process (--checks): one CUDA context for many
ALONE_FIRST = 3               # a caught batch's checks run alone before the rest are charged


@dataclass
class Case:
    kind: str            # exact, fill, offset, onehot, large, timed, shape, stat, det, or a sanitizer tool
    args: list           # the program's arguments
    tool: str = ""       # compute-sanitizer tool, if any
    cells: int = 0       # floats the check moves, to size the large ones
    need: tuple = (0, 0)  # a large check's device and host bytes (large_need)
    entry: str = ""       # the contract's function the watch wraps (every part)

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
    score: float = None       # the speed check's points (every other check: 1 if ok)
    max_score: float = None
    speed: dict = None        # the speed check's measurement (Speed.as_dict)
    expected: bool = False    # a det failure the program declared (step_deterministic = 0)


@dataclass
class Report:
    program: str
    name: str = "?"
    outcomes: list = field(default_factory=list)
    nondeterministic: bool = False   # part 3: its back.cu sets step_deterministic = 0

    @property
    def failed(self):
        return [o for o in self.outcomes if not o.ok and not o.skipped]

    @property
    def skipped(self):
        return [o for o in self.outcomes if o.skipped]

    @property
    def passed(self):
        return not self.failed

    @property
    def expected(self):
        """The det checks that saw other bits, as the program said they might."""
        return [o for o in self.outcomes if o.expected]


@dataclass
class Device:
    """What --gpu-info says: the grid sizes and how many large checks fit at once."""
    name: str = "?"
    sms: int = 0
    sm_threads: int = 0
    free_bytes: int = 0


@dataclass
class RowProgram:
    """What a part 2 (or part 3) program's --gpu-info says of itself."""
    op: str = "sum"
    dtype: str = "f32"
    pack: int = 4                 # elements in a 16-byte pack: every offset 0 .. pack - 1
    path_widths: tuple = ()       # the first width of each of its kernel's paths on this GPU
    part: str = "rows"            # "rows" (part 2) or "back" (part 3)
    deterministic: bool = True    # part 3: False where back.cu sets step_deterministic = 0

    @property
    def elem_bytes(self):
        return 2 if self.dtype == "bf16" else 4


def row_program(fields, part="rows"):
    """RowProgram from --gpu-info's key=value lines (defaults for an older harness)."""
    widths = tuple(int(w) for w in fields.get("path_widths", "").split(",") if w.strip())
    return RowProgram(fields.get("op", "sum"), fields.get("dtype", "f32"),
                      int(fields.get("pack", 4)), widths, part,
                      fields.get("deterministic", "1").strip() != "0")


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
    # The work on the GPU: kernels launched, the input left where it is.
    n = WATCH_SIZES.randrange(1 << 20, 1 << 21)
    cases.append(Case(GPU_WORK, check_args(n, "random", seed=41, offset=n % 4),
                      entry="reduce_pass()"))
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
    rms = program.op in ("rmsnorm", "add_rmsnorm")   # gamma, no beta
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
    # Around the row counts where a group under a warp fills the GPU
    # (rows/step24_bf16_narrow: 8 threads a row of 256, 16 a row of 512, once
    # rows x G reach 32 warps an SM), on both sides of each group's widest row,
    # aligned and not: the counts above give rows of 256 to 512 columns 32
    # threads or more.
    for rows, cols in [(r, c) for g, w in ((8, 256), (16, 512))
                       for r in (device.sms * 1024 // g - 1, device.sms * 1024 // g + 1)
                       for c in (w - 1, w, w + 1)]:
        for aligned in (True, False):
            k += 1
            cases.append(Case("shape", row_args(rows, cols, exact_fill, seed=k,
                                                offset=x_offset(k, aligned),
                                                extra=offsets(k, aligned))))
    # Enough rows for the GPU's warps that the group stays small (a group of
    # G from sms x 1024 / G rows), at the widths where G threads take 64
    # packed elements each in rows/step25_bf16_packed (past G x 32, up to
    # G x 64), aligned and not: the counts above give those widths a wider
    # group, at 32 a thread.
    for g in (32, 64, 128, 256, 512):
        for cols in (g * 32 + 1, g * 64):
            for aligned in (True, False):
                k += 1
                cases.append(Case("shape", row_args(-(-device.sms * 1024 // g), cols, exact_fill,
                                                    seed=k, offset=x_offset(k, aligned),
                                                    extra=offsets(k, aligned))))
    # Every fill at every place in a 16-byte pack.
    for rows, cols in ROW_FILL_SHAPES:
        for offset in range(pack):
            for fill in ROW_FILLS + ("levels", "centered"):
                k += 1
                cases.append(Case("offset", row_args(rows, cols, fill, seed=k, offset=offset)))
    # y (and gamma and beta) apart from x: every pair of offsets.
    arrays = 4 if layernorm else 3 if rms else 2
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
    # (tiny: a variance below eps); RMSNorm's eps and squares; softmax's max
    # (wide, shifted) and masks.
    def stat_fills(cols):
        if layernorm:
            return ("centered", "tiny") + (("shifted",) if cols <= 1024 else ())
        if rms:   # eps against mean(x^2) (tiny), squares of a large offset and of wide values
            return ("tiny", "shifted", "wide")
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
    rows, cols = WATCH_SIZES.randrange(17, 64), WATCH_SIZES.randrange(2049, 8192)
    cases.append(Case(GPU_WORK, row_args(rows, cols, "random", seed=41, offset=cols % pack),
                      entry="row_forward()"))
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


def back_chunk_rows(device):
    """Row counts where a block of steps 2 and 3 takes one more chunk of 8
    rows (a grid of 4 blocks an SM: back/step2_partials/back.cu, one wave),
    both sides: 8 and 16 rows a block."""
    grid = 4 * device.sms
    return sorted({8 * k * grid + d for k in (1, 2) for d in (-1, 0, 1) if 8 * k * grid + d > 0})


def back_fill_and_det_cases(cases, k, pack, fill_shapes, det_shapes):
    """Part 3's fill and determinism checks, appended to cases: every fill
    at every offset of each fill shape, then the random fill's three runs at
    each det shape. Both backward passes' matrices take them; returns the
    seed counter k after them."""
    for rows, cols in fill_shapes:
        for offset in range(pack):
            for fill in BACK_FILLS:
                k += 1
                cases.append(Case("fill", row_args(rows, cols, fill, seed=k, offset=offset)))
    for rows, cols in det_shapes:
        k += 1
        cases.append(Case(DET, row_args(rows, cols, "random", seed=k, offset=k % pack)))
    return k


def build_back_cases(device, program=None, quick=False, sanitizer=True):
    """Every check for one part 3 program (back/*/run), in a fixed order;
    a bfloat16 LayerNorm backward's (back/step17 on) offsets over its pack of 8.

    Each --check of the driver also runs its determinism check (three runs
    of the random fill compared bit for bit): a check that fails on that
    alone is charged to the kind det when it comes back (settle_determinism).
    quick changes nothing yet: no check here is large."""
    program = program or RowProgram(op="layernorm_backward", part="back")
    pack = program.pack
    # gamma, dgamma and dbeta stay floats in a bfloat16 program: their
    # offsets run over a float pack (the driver refuses 4 and more).
    gamma_pack = min(pack, 4)
    cases = []
    k = 0

    def moved(k, aligned):
        """x and dy (--offset), dx and gamma apart from them, or all at 0."""
        if aligned:
            return 0, []
        x = 1 + k % (pack - 1)
        y, g = (x + 1 + k // 2 % (pack - 1)) % pack, (x + k // 3) % gamma_pack
        return x, [a for name, o in (("--y-offset", y), ("--gamma-offset", g)) if o
                   for a in (name, str(o))]

    # The exact fill (dgamma and dbeta to the bit) at every width and row
    # count: a column sum that drops the last block's partial row, or the
    # last chunk's rows, or a tail of columns, is off by whole numbers.
    for rows in sorted(set(BACK_ROWS) | set(back_chunk_rows(device))):
        for cols in BACK_COLS:
            if rows * cols > BACK_CELLS:
                continue
            k += 1
            offset, extra = moved(k, k % 2 == 1)
            cases.append(Case("shape", row_args(rows, cols, "exact", seed=k, offset=offset,
                                                extra=extra)))
    # x and dy, dx, and gamma (with dgamma and dbeta) at every pair of places
    # in a 16-byte pack.
    names = ("--y-offset", "--gamma-offset")
    for rows, cols in ((13, 4097), (529, 1023), (9, 5)):
        for run in offset_pairs(pack, 3):
            k += 1
            run = (run[0], run[1], run[2] % gamma_pack)
            extra = [a for name, o in zip(names, run[1:]) if o for a in (name, str(o))]
            cases.append(Case("offset", row_args(rows, cols, "exact", seed=k, offset=run[0],
                                                 extra=extra)))
    # Each array alone out of its pack, the others aligned, at 2048 columns
    # (whole packs, as wide as a step packs): a step that packs where every
    # pointer allows must test each one (the pairs above always move x or
    # gamma with dx).
    for name in ("--offset", "--y-offset", "--gamma-offset"):
        for moved_by in range(1, gamma_pack if name == "--gamma-offset" else pack):
            k += 1
            alone = [] if name == "--offset" else [name, str(moved_by)]
            cases.append(Case("offset", row_args(33, 2048, "exact", seed=k,
                                                 offset=moved_by if not alone else 0,
                                                 extra=alone)))
    # Every fill at every offset: random (rounding in any order), shifted (x
    # near 2000: xhat from x - mean, not from E[x] terms), tiny (1e-3).
    # Determinism: thousands of rows add into each column, where atomics'
    # order shows in the low bits (the driver's three random-fill runs).
    k = back_fill_and_det_cases(cases, k, pack, BACK_FILL_SHAPES, BACK_DET_SHAPES)
    cases.append(back_gpu_work_case(pack))
    # Repetitions: a timed run compares its first and last outputs, and the
    # workspace's zeroed part is checked after every one of its runs.
    cases += [Case("timed", ["--rows", "1000", "--cols", "1000", "--reps", "25", "--warmup", "2",
                             "--fill", "random"]),
              Case("timed", ["--rows", "4097", "--cols", "33", "--reps", "25", "--warmup", "0",
                             "--fill", "exact"])]
    if sanitizer:
        rows = back_chunk_rows(device)[-1]   # every block of a full grid, two chunks each
        for tool in SANITIZER_TOOLS:
            cases.append(Case(tool, row_args(rows, 257, "exact", seed=5, offset=3,
                                             extra=("--y-offset", "1", "--gamma-offset", "2")),
                              tool))
        cases.append(Case("memcheck", row_args(3, 4097, "exact", seed=5, offset=0), "memcheck"))
        cases.append(Case("memcheck", row_args(2, 5, "exact", seed=5, offset=3), "memcheck"))
    return cases


def back_gpu_work_case(pack):
    """Part 3's gpu-work check, as part 2's: a shape drawn for each grading."""
    rows, cols = WATCH_SIZES.randrange(17, 64), WATCH_SIZES.randrange(2049, 8192)
    return Case(GPU_WORK, row_args(rows, cols, "random", seed=41, offset=cols % pack),
                entry="back_run()")


def build_softmax_back_cases(device, program=None, quick=False, sanitizer=True):
    """Every check for one softmax backward program (back/step10 on; in
    bfloat16, back/step15 on, its offsets 0-7 from its pack), in a fixed
    order: build_back_cases' kinds at softmax's widths, with no gamma
    to move. The exact fill's dx is exact (common/back_ref.h), so a sum that
    drops a tail, a block or a cluster's share, or reads the wrong one, is
    off; a masked y must give dx = 0 on every fill."""
    program = program or RowProgram(op="softmax_backward", part="back")
    pack = program.pack
    cases = []
    k = 0
    for rows in SOFTMAX_BACK_ROWS:
        for cols in SOFTMAX_BACK_COLS:
            if rows * cols > SOFTMAX_BACK_CELLS and rows > SOFTMAX_BACK_ROWS[1]:
                continue
            k += 1
            # y and dy, and dx, each at every place in its pack across the
            # widths, and apart from each other.
            offset, y_offset = k % pack, (k // pack + 2 * k) % pack
            extra = ["--y-offset", str(y_offset)] if y_offset else []
            cases.append(Case("shape", row_args(rows, cols, "exact", seed=k, offset=offset,
                                                extra=extra)))
    # y and dy, then dx, at every pair of places in a 16-byte pack; then
    # each alone out of its pack, the other aligned.
    for rows, cols in SOFTMAX_BACK_OFFSET_SHAPES:
        for run in offset_pairs(pack, 2):
            k += 1
            extra = ["--y-offset", str(run[1])] if run[1] else []
            cases.append(Case("offset", row_args(rows, cols, "exact", seed=k, offset=run[0],
                                                 extra=extra)))
    for moved_by in range(1, pack):
        for alone in ([], ["--y-offset", str(moved_by)]):
            k += 1
            cases.append(Case("offset", row_args(33, 2048, "exact", seed=k,
                                                 offset=0 if alone else moved_by, extra=alone)))
    # Every fill at every offset: random (rounding in any order, masked
    # values and rows), shifted (dy near 2000: dy - s cancels), tiny; then
    # the determinism checks.
    k = back_fill_and_det_cases(cases, k, pack, SOFTMAX_BACK_FILL_SHAPES,
                                SOFTMAX_BACK_DET_SHAPES)
    cases.append(back_gpu_work_case(pack))
    cases += [Case("timed", ["--rows", "1000", "--cols", "1000", "--reps", "25", "--warmup", "2",
                             "--fill", "random"]),
              Case("timed", ["--rows", "33", "--cols", "50257", "--reps", "25", "--warmup", "0",
                             "--fill", "exact"])]
    if sanitizer:
        for tool in SANITIZER_TOOLS:
            cases.append(Case(tool, row_args(6, 20000, "exact", seed=5, offset=3,
                                             extra=("--y-offset", "1")), tool))
        cases.append(Case("memcheck", row_args(3, 70001, "exact", seed=5, offset=0), "memcheck"))
        for tool in ("racecheck", "synccheck"):   # step 14's bulk copies and mbarriers
            cases.append(Case(tool, row_args(2, 65540, "exact", seed=6, offset=0), tool))
        # The cluster's register path with every row 4-byte aligned (step
        # 16's two bfloat16s a load; offset 3 above keeps it at one): y and
        # dy 2 elements in, dx at 0, not equally aligned, so no bulk path.
        for tool in ("racecheck", "synccheck"):
            cases.append(Case(tool, row_args(6, 20000, "exact", seed=7, offset=2), tool))
        cases.append(Case("memcheck", row_args(2, 5, "exact", seed=5, offset=3), "memcheck"))
    return cases


def settle_determinism(report, program):
    """Charges a failure that is the determinism check's alone (every value
    right, the bits moved) to the kind det, whatever check made it; for a
    program that declares itself non-deterministic (--gpu-info's
    deterministic=0), such an outcome is expected and passes."""
    for outcome in report.outcomes:
        if outcome.ok or outcome.skipped or not DET_ONLY.match(outcome.reason or ""):
            continue
        if outcome.case.kind != DET:
            outcome.case = Case(DET, outcome.case.args, outcome.case.tool, outcome.case.cells,
                                outcome.case.need, outcome.case.entry)
        if not program.deterministic:
            outcome.ok, outcome.expected, outcome.code = True, True, 0


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
        # "Target application returned an error" only echoes the program's
        # exit status: its own FAIL line below says why (for a step that
        # declares itself non-deterministic, a det failure it expects).
        line = first_line(out, r"^=+ (?!COMPUTE-SANITIZER|.*SUMMARY|.*ERROR SUMMARY"
                               r"|Target application returned an error)\S")
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
    env.pop("REDUCE_GPU_WORK", None)
    if kind == "speed":   # alone on the machine: every CPU fills and checks
        env["OMP_NUM_THREADS"] = str(os.cpu_count() or 1)
    else:
        env["OMP_NUM_THREADS"] = str(THREADS["large" if kind == "large" else "small"])
    return env


def watch_fields(text):
    """The watch's line as {field: value}."""
    return dict(f.split("=", 1) for f in text.split() if "=" in f)


def watch_evidence(fields, entry, totals=True):
    """What in a readable line (monitor=ok) shows the work done off the GPU:
    a reason, or "" for nothing. Raises KeyError or ValueError on a line
    that is not readable.

    Each call is held to its own input (worst_*: the call that sent the
    largest share of it to the host). totals: the process's bytes against
    its largest input too, as the gpu-work check, one check in a process of
    its own, always judged them; a batch's or a timed run's many calls add
    up past any one input, so the other checks judge calls alone."""
    kernels, calls = int(fields["kernels"]), int(fields["calls"])
    to_host = int(fields["d2h_bytes"]) + int(fields["um_d2h_bytes"])
    size = int(fields["input_bytes"])
    maps = int(fields.get("host_maps", 0))
    worst = int(fields.get("worst_d2h_bytes", 0))
    worst_input = int(fields.get("worst_input_bytes", 0))
    if kernels == 0:
        return (f"launched no kernel in {calls} calls of {entry}: "
                "the work was not done on the GPU")
    if worst and worst >= GPU_WORK_HOST_SHARE * worst_input:
        return (f"moved {worst} bytes to the host in one call of {entry} "
                f"(its input was {worst_input} bytes): the work was done on the host")
    if (totals or "worst_d2h_bytes" not in fields) and to_host >= GPU_WORK_HOST_SHARE * size:
        return (f"moved {to_host} bytes to the host during {entry} "
                f"(its input is {size} bytes): the work was done on the host")
    host_calls = int(fields.get("host_calls", 0))
    if host_calls:   # a tiny input summed on the host, among other calls' kernels
        return (f"launched no kernel in {host_calls} of its {calls} calls of {entry}, and "
                "sent bytes to the host in each: the work was done on the host")
    if maps:   # zero-copy: no copy and no page move shows it, the call that makes the memory does
        made = f"{maps} call{'s' if maps > 1 else ''}"
        return (f"made host memory that a kernel can write ({fields.get('host_map', '?')}, "
                f"{made}): a kernel can leave the input there for the host "
                "to reduce, and the harness needs none")
    return ""


def watch_entry(cases):
    """The contract's function the watch wraps, as the gpu-work case names it
    ("" where no check is gpu-work)."""
    return next((c.entry for c in cases if c.kind == GPU_WORK), "")


def watched_elsewhere(text, entry):
    """The reason a check other than gpu-work fails on its watch's line, or "".

    Only what the watch saw counts here: no line (a program built without
    the watch, or one that died before its first call), a watch that could
    not run or lost records is the gpu-work check's to report, once, not
    every check's."""
    fields = watch_fields(text)
    if fields.get("monitor") != "ok":
        return ""
    if fields.get("dropped", "0") != "0":
        return ""
    try:
        evidence = watch_evidence(fields, entry, totals=False)
    except (KeyError, ValueError):
        return ""
    return f"gpu-work, watched in this check too: {evidence}" if evidence else ""


def gpu_work_verdict(text, entry):
    """(ok, skipped, reason) from the line common/gpu_work.c wrote ("" if none).

    entry: the contract's function the watch wraps, for the messages."""
    if not text.strip():
        return False, True, ("built without the grader's watch on GPU work: make check "
                             "STEP= or SOURCE= builds it in, PROGRAM= cannot")
    fields = watch_fields(text)
    state = fields.get("monitor", "")
    if state == "error":   # not a skip: a watch that cannot run proves nothing, and a program could make it so
        return False, False, ("the watch on GPU work could not run, so the check cannot pass: "
                              f"{fields.get('why', '?').replace('_', ' ')}")
    if state != "ok":
        return False, False, f"the watch saw no call of {entry}: the harness always makes one"
    try:
        lost = int(fields.get("dropped", 0))
        evidence = watch_evidence(fields, entry)
    except (KeyError, ValueError):
        return False, False, f"the watch's line is not readable: {text.strip()}"
    if lost:
        return False, False, f"the watch lost {lost} of CUPTI's records, so it cannot tell"
    if evidence:
        return False, False, evidence
    unwatched = []   # said, in the reports; the check still passes
    if fields.get("um") == "off":
        unwatched.append("unified memory's traffic")
    if fields.get("pageable") == "on":
        unwatched.append("kernels' access to pageable host memory")
    if unwatched:
        verb = "are" if len(unwatched) > 1 else "is"
        return True, False, f"{' and '.join(unwatched)} {verb} not watched on this machine"
    return True, False, ""


# The process groups of the checks running now. Each check runs in a session
# of its own, which no signal to the grader reaches: a grading stopped by
# Ctrl-C, SIGTERM or make class's time limit kills them here, or a hung
# kernel would keep the GPU through every later grading.
RUNNING = {"groups": set(), "stopping": False}
RUNNING_LOCK = threading.Lock()


class Stopped(Exception):
    """The grading is being stopped: a check that has not started does not."""


def stop_checks():
    """Kill every check's processes, and start no more."""
    with RUNNING_LOCK:
        RUNNING["stopping"] = True
        groups = list(RUNNING["groups"])
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run_isolated(cmd, timeout, env):
    """subprocess.run in a session of its own, stdout and stderr together: on
    a timeout, and again when it ends, every process it started is killed, so
    that none outlives its check (and shares the GPU with the next one)."""
    # Started and recorded at once, with Ctrl-C and SIGTERM held off between
    # the two (they arrive after the record): stop_checks() misses none.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        with RUNNING_LOCK:
            if RUNNING["stopping"]:
                raise Stopped()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace", env=env, start_new_session=True)
            RUNNING["groups"].add(proc.pid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise subprocess.TimeoutExpired(cmd, timeout, output=out) from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        with RUNNING_LOCK:
            RUNNING["groups"].discard(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


def run_case(program, case, sanitizer, budget):
    cmd = [program, *case.args]
    if case.tool:
        cmd = [sanitizer, "--tool", case.tool, "--error-exitcode", str(SANITIZER_EXIT), *cmd]
    timeout = TIMEOUT_S.get("sanitizer" if case.tool else case.kind, DEFAULT_TIMEOUT_S)
    slot = budget if case.kind == "large" else None
    env = child_env(case.kind)
    with tempfile.TemporaryDirectory() as tmp:
        watch = os.path.join(tmp, "gpu-work.txt")
        if not case.tool:   # CUPTI and compute-sanitizer cannot share a process
            env["REDUCE_GPU_WORK"] = watch
        if slot:
            slot.acquire(case.need)
        try:
            proc = run_isolated(cmd, timeout, env)
        except subprocess.TimeoutExpired:
            return Outcome(case, False, code="timeout", reason=f"no answer in {timeout} s: a hang?")
        except OSError as err:
            return Outcome(case, False, code="?", reason=f"cannot run: {err.strerror}")
        finally:
            if slot:
                slot.release(case.need)
        watched = ""
        if os.path.isfile(watch):
            with open(watch, errors="replace") as handle:
                watched = handle.read()
    ok = proc.returncode == 0 and re.search(r"^PASS$", proc.stdout, re.M) is not None
    code = proc.returncode if proc.returncode >= 0 else f"signal {-proc.returncode}"
    if not ok:
        reason = why(code, proc.stdout, case.tool)
        if DET_ONLY.match(reason):
            # Every value right, the bits moved: a program that declares that
            # passes it (settle_determinism), so the watch still judges the work.
            work = gpu_work_verdict(watched, case.entry) if case.kind == GPU_WORK else None
            caught = (work[2] if work and not work[0] and not work[1] else
                      "" if work else watched_elsewhere(watched, case.entry))
            if caught:
                return Outcome(case, False, code=EXIT_FAILED, reason=caught)
        return Outcome(case, False, code=code, reason=reason)
    if case.kind == GPU_WORK:
        ok, skipped, reason = gpu_work_verdict(watched, case.entry)
        return Outcome(case, ok, skipped=skipped, code=code if ok or skipped else EXIT_FAILED,
                       reason=reason)
    caught = watched_elsewhere(watched, case.entry)
    if not caught and watch_fields(watched).get("monitor") == "linked" and case_elements(case) > 0:
        # Linked and called, but its exit handler never wrote the line: an _exit.
        caught = (f"gpu-work, watched in this check too: the watch's line was never written "
                  f"(the process skipped its exit handlers after calling {case.entry})")
    if caught:
        return Outcome(case, False, code=EXIT_FAILED, reason=caught)
    return Outcome(case, True, code=code)


def case_elements(case):
    """The elements a check's input holds (-n, or --rows x --cols), 0 if unnamed."""
    def value(flag):
        return int(case.args[case.args.index(flag) + 1]) if flag in case.args else 0
    return value("-n") or value("--rows") * value("--cols")


def run_batch(program, cases, sanitizer, budget):
    """Runs the cases through one `--checks FILE` process; [Outcome] in order.

    A check the process did not finish (a crash ends the batch: a CUDA error
    poisons the context) is run again alone, so that it is charged to the
    right check. The watch on GPU work sees the batch as one process: where
    it saw the work done on the host, each check that passed is run again
    alone, watched, so that the failure is charged to the checks that did it;
    where the ALONE_FIRST largest of them each did host work alone too, the
    rest are charged without a run (a program that cheats everywhere); where
    each passed alone, the batch fails as a whole, unless its process died."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checks.txt")
        with open(path, "w") as handle:
            for case in cases:
                handle.write(" ".join(a for a in case.args if a != "--check") + "\n")
        timeout = DEFAULT_TIMEOUT_S * 2
        env = child_env("small")
        watch = os.path.join(tmp, "gpu-work.txt")
        env["REDUCE_GPU_WORK"] = watch
        try:
            proc = run_isolated([program, "--checks", path], timeout, env)
            output, died = proc.stdout, proc.returncode not in (0, EXIT_FAILED)
            code = proc.returncode
        except subprocess.TimeoutExpired as err:
            output, died, code = err.stdout or "", True, "timeout"
            if isinstance(output, bytes):
                output = output.decode(errors="replace")
        except OSError as err:
            return [Outcome(case, False, code="?", reason=f"cannot run: {err.strerror}")
                    for case in cases]
        watched = ""
        if os.path.isfile(watch):
            with open(watch, errors="replace") as handle:
                watched = handle.read()
    blocks = re.split(r"^== check .*$", output, flags=re.M)[1:]
    outcomes, alone = [], set()
    for k, case in enumerate(cases):
        block = blocks[k] if k < len(blocks) else ""
        # The harness prints its verdict last, after the program's own output.
        verdicts = re.findall(r"^(PASS|FAIL.*)$", block, re.M)
        verdict = verdicts[-1] if verdicts else None
        if verdict == "PASS":
            outcomes.append(Outcome(case, True, code=0))
        elif verdict:
            outcomes.append(Outcome(case, False, code=EXIT_FAILED, reason=verdict))
        else:
            outcomes.append(run_case(program, case, sanitizer, budget))
            alone.add(k)
    caught = watched_elsewhere(watched, cases[0].entry) if cases else ""
    fields = watch_fields(watched)
    # No witness where one was due: the watch is linked, calls were made, yet
    # its exit handler never wrote the line (a signal, a timeout, an _exit),
    # or the exit status says a check failed where every verdict read PASS.
    called = any(case_elements(cases[k]) > 0 for k in range(len(cases)) if k not in alone)
    unwitnessed = (fields.get("monitor") == "linked" and called) or fields.get("dropped", "0") != "0" or (
        code == EXIT_FAILED and not alone and all(o.ok for o in outcomes))
    if caught or unwitnessed:
        # Largest first: under the watch's 64-byte floor only a call with no
        # kernel shows host work alone, so the largest few decide the rest.
        again = sorted((k for k, o in enumerate(outcomes)
                        if k not in alone and (o.ok or DET_ONLY.match(o.reason))),
                       key=lambda k: -case_elements(cases[k]))
        for j, k in enumerate(again):
            outcomes[k] = run_case(program, outcomes[k].case, sanitizer, budget)
            # A check alone costs a process (a context, the watch's start): a
            # host-side cheat's 500 checks took minutes. Where the largest few
            # each did the work on the host alone, the rest are charged unrun.
            if j + 1 == ALONE_FIRST < len(again) and all(
                    outcomes[i].reason.startswith("gpu-work") for i in again[:ALONE_FIRST]):
                reason = (f"gpu-work, watched in a batch of {len(cases)} checks whose "
                          f"{ALONE_FIRST} largest did the work on the host alone too "
                          "(not run alone)")
                for i in again[ALONE_FIRST:]:
                    outcomes[i] = Outcome(outcomes[i].case, False, code=EXIT_FAILED, reason=reason)
                break
        # A process that died (a CUDA error exits 3, and CUPTI's records of
        # its poisoned context can be lost: kernels=0) is no witness against
        # the checks that passed alone.
        # Lost records only lower the counts: a died process excuses "no kernel", nothing else.
        lost = died and fields.get("kernels") == "0"
        if caught and not lost and not any(o.reason.startswith("gpu-work") for o in outcomes):
            # Alone, every check kept its work on the GPU; together they did
            # not: a program that knows it is in a batch. Its checks that
            # passed alone fail with the batch (the others keep their reasons).
            reason = caught.replace("gpu-work, watched in this check too",
                                    f"gpu-work, watched in a batch of {len(cases)} checks "
                                    "(each alone passed)")
            outcomes = [Outcome(o.case, False, code=EXIT_FAILED, reason=reason)
                        if o.ok or DET_ONLY.match(o.reason) else o for o in outcomes]
    return outcomes


# ------------------------------------------------------------------ speed

@dataclass
class SpeedTarget:
    factor: float        # the program must reach factor x the reference's GB/s
    reference: str       # as written: step2, copy, cub
    text: str


@dataclass
class SpeedRules:
    target: SpeedTarget
    at: str = ""         # n (part 1) or ROWSxCOLS (part 2); "" for the part's default
    rounds: int = SPEED_ROUNDS
    points: float = SPEED_POINTS
    credit: str = "all"  # all: the points or none; ratio: a miss scores points x ratio / factor
    tie: str = "median"  # a tie with the target: decided by the medians, or pass, or fail


def parse_speed(text):
    """SpeedTarget from "1.5x step2", "0.8x copy", ">= step8", "2 x cub"."""
    match = re.fullmatch(r"\s*(?:>=\s*|(\d+(?:\.\d+)?|\.\d+)\s*[xX]\s*)([A-Za-z0-9_/]+)\s*",
                         text or "")
    if not match or (match.group(1) is not None and float(match.group(1)) <= 0):
        raise GradeError(EXIT_USAGE, f"--speed '{text}': give a target such as '1.5x step2', "
                                     "'0.8x copy', '>= step8' or '2x cub'")
    factor = float(match.group(1)) if match.group(1) is not None else 1.0
    return SpeedTarget(factor, match.group(2), " ".join(text.split()))


def speed_reference(name, rows, dtype="f32", root=REPO):
    """The folder of the program a target names, in the graded program's part:
    stepK (or K), cub, or copy (part 2's copy of the same bytes; for part 1's
    sums, the same floats copied as one array)."""
    ref = name.lower()
    if ref.startswith("rows/") and not rows:
        raise GradeError(EXIT_USAGE, f"--speed: '{name}' is a part 2 program, and this one "
                                     "is part 1's: name a step of its own part")
    ref = ref.removeprefix("rows/")
    if ref == "copy":
        return "rows/baseline_copy16" if dtype == "bf16" else "rows/baseline_copy"
    if ref == "cub":
        return "rows/baseline_cub" if rows else "baseline_cub"
    match = re.fullmatch(r"(?:step)?(\d+)(_\w+)?", ref)
    part = "rows/" if rows else ""
    if match:
        found = [d for d in steps.step_dirs(root, part, source=True)
                 if schema.step_number(d) == int(match.group(1))
                 and (match.group(2) is None or d == part + ref)]
        if found:
            return found[0]
    raise GradeError(EXIT_USAGE, f"--speed: no program '{name}' in part {2 if rows else 1} "
                                 f"(a step number such as step2, cub or copy)")


# The ops a program's --gpu-info names (part 1's sums say none: "sum"), for
# --op; each may end in _bf16 (bfloat16 data).
OPS = ("sum", "layernorm", "softmax", "rmsnorm", "add_rmsnorm", "copy",
       "layernorm_backward", "softmax_backward", "copy3")


def program_op(rows):
    """What a probed program computes, as --op names it: sum for part 1,
    else --gpu-info's op with _bf16 where its data are bfloat16."""
    if rows is None:
        return "sum"
    return rows.op if rows.op.endswith("_bf16") or rows.dtype != "bf16" else rows.op + "_bf16"


def parse_op(text):
    """--op's value, checked against OPS (with or without _bf16)."""
    if text is None:
        return None
    if text.removesuffix("_bf16") not in OPS:
        raise GradeError(EXIT_USAGE, f"--op '{text}': give one of {', '.join(OPS)}, "
                                     "each with _bf16 for bfloat16 data (layernorm_bf16)")
    return text


def speed_same_op(reference, rows, root=REPO):
    """A part 2 step named as the target computes what the graded program
    computes: a LayerNorm timed against a row sum, or a bfloat16 row against
    a float one, would compare two different jobs. The copy (the same bytes)
    and CUB (its row sum) are bars of their own, taken as named."""
    if rows is None or rows.part != "rows" or not os.path.basename(reference).startswith("step"):
        return
    theirs, ours = steps.row_op(root, reference), program_op(rows)
    if theirs and theirs != ours:
        raise GradeError(EXIT_USAGE, f"--speed: {reference} computes {theirs} and this program "
                                     f"{ours}: name a step of the same op, or copy")


def speed_size(at, rows):
    """(the graded program's size arguments, a label) at --speed-at."""
    text = (at or SPEED_AT["rows" if rows else "sum"]).replace(" ", "")
    if rows:
        match = re.fullmatch(r"(\d+)[xX](\d+)", text)
        if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
            raise GradeError(EXIT_USAGE, f"--speed-at '{at}': part 2 takes ROWSxCOLS, e.g. 32768x1024")
        r, c = match.groups()
        return ["--rows", r, "--cols", c], f"{r} x {c}"
    if not re.fullmatch(r"\d+", text) or int(text) < 2:
        raise GradeError(EXIT_USAGE, f"--speed-at '{at}': part 1 takes n, a number of floats "
                                     "of at least 2, e.g. 33554432")
    return ["-n", text], f"n = {text}"


def copy_size(size_args):
    """Part 1's n floats as the copy program's 1024-wide rows (the same floats)."""
    n = int(size_args[1])
    if n % 1024:
        raise GradeError(EXIT_USAGE, f"--speed-at {n}: against the copy, part 1 takes a "
                                     "multiple of 1024 floats (the copy's rows are 1024 wide)")
    return ["--rows", str(n // 1024), "--cols", "1024"]


class SpeedError(Exception):
    """A timed run that gave no speed; reference: it was the reference's."""

    def __init__(self, message, reference=False):
        super().__init__(message)
        self.reference = reference


def ratio_text(value):
    """1.82x; a ratio below 0.1 with two significant digits (0.0043x), not 0.00x."""
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def timed_run(program, size_args, reference=False):
    """GB/s of one timed run (make bench's repetitions), its output verified:
    the bytes the program must move over its median time (the CSV's own GB/s
    column has two decimals, 0.00 for the smallest sizes)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "speed.csv")
        cmd = [program, *size_args, "--reps", str(SPEED_REPS), "--warmup", str(SPEED_WARMUP),
               "--fill", "random", "--csv", path]
        shown = " ".join(cmd[:-2])
        try:
            proc = run_isolated(cmd, DEFAULT_TIMEOUT_S, child_env("speed"))
        except subprocess.TimeoutExpired:
            raise SpeedError(f"{shown}: no answer in {DEFAULT_TIMEOUT_S} s", reference) from None
        except OSError as err:
            raise SpeedError(f"{program}: cannot run: {err.strerror}", reference) from None
        rows = []
        if os.path.isfile(path):
            with open(path, newline="") as handle:
                rows = list(csv.DictReader(handle))
    if proc.returncode != 0 or not rows or rows[-1].get("pass") != "1":
        code = proc.returncode if proc.returncode >= 0 else f"signal {-proc.returncode}"
        raise SpeedError(f"{shown} (exit {code}): {why(code, proc.stdout, '')}", reference)
    try:
        us, size = float(rows[-1]["median_us"]), float(rows[-1]["bytes"])
    except (KeyError, ValueError):
        raise SpeedError(f"{shown}: its CSV row has no median_us or bytes", reference) from None
    if not us > 0 or not size > 0:
        raise SpeedError(f"{shown}: a median of {us} us for {size:.0f} bytes is too fast to "
                         "time; choose a larger --speed-at", reference)
    return size / us / 1e3


@dataclass
class Speed:
    rules: SpeedRules
    reference: str              # its folder: step2_bankconflict, rows/baseline_copy
    at: str                     # the size, as the line says it
    mine: list                  # GB/s of the graded program, round by round
    theirs: list                # GB/s of the reference, the same rounds

    @property
    def ratio(self):
        """The ratio of the medians."""
        return statistics.median(self.mine) / statistics.median(self.theirs)

    @property
    def verdict(self):
        """met, tie or missed: compare.verdict on the time each takes per byte,
        the reference's rounds sped up by the target's factor."""
        f = self.rules.target.factor
        mine = (1 / max(self.mine), 1 / min(self.mine))
        target = (1 / (f * max(self.theirs)), 1 / (f * min(self.theirs)))
        return {compare.WIN: MET, compare.TIE: TIE, compare.LOSS: MISSED}[
            compare.verdict(mine, target)]

    @property
    def passed(self):
        if self.verdict == TIE:   # the rounds cannot tell it from the target
            return {"pass": True, "fail": False}.get(self.rules.tie,
                                                      self.ratio >= self.rules.target.factor)
        return self.verdict == MET

    def score(self):
        """All the points, or none; with credit "ratio", a check that did not
        pass scores points x the worst ratio its rounds allow (its slowest
        round against the reference's fastest) over the target: less than all."""
        if self.passed:
            return self.rules.points
        if self.rules.credit == "ratio":
            worst = min(self.mine) / max(self.theirs)
            return round(self.rules.points * min(1.0, worst / self.rules.target.factor), 2)
        return 0

    def line(self):
        name = self.reference.removeprefix("rows/baseline_").removeprefix("baseline_")
        f = self.rules.target.factor
        verdict = self.verdict
        if verdict == TIE:
            verdict = f"a tie, {'passed' if self.passed else 'failed'}" + \
                (" by the medians" if self.rules.tie == "median" else f" (--speed-tie {self.rules.tie})")
        return (f"{ratio_text(self.ratio)} {name} at {self.at}, {len(self.mine)} rounds: "
                f"{min(self.mine):.0f}-{max(self.mine):.0f} GB/s (median "
                f"{statistics.median(self.mine):.0f}) against {f:g} x {min(self.theirs):.0f}-"
                f"{max(self.theirs):.0f} = {f * min(self.theirs):.0f}-{f * max(self.theirs):.0f} "
                f"GB/s: target {self.rules.target.text} {verdict}")

    def as_dict(self):
        ratios = [a / b for a, b in zip(self.mine, self.theirs)]
        return {"target": self.rules.target.text, "factor": self.rules.target.factor,
                "reference": self.reference, "at": self.at, "ratio": float(f"{self.ratio:.4g}"),
                "ratio_lo": float(f"{min(ratios):.4g}"), "ratio_hi": float(f"{max(ratios):.4g}"),
                "gbps": [round(v, 2) for v in self.mine],
                "reference_gbps": [round(v, 2) for v in self.theirs],
                "verdict": self.verdict, "passed": self.passed, "score": self.score(),
                "max_score": self.rules.points}


def build_reference(folder):
    """The reference as the grader builds its programs (build/monitored/), by make."""
    target = f"build/monitored/{folder}/run"
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    try:
        proc = subprocess.run(["make", "--no-print-directory", "-s", target], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", timeout=900)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise GradeError(EXIT_USAGE, f"--speed: cannot build {target}: {err}") from None
    if proc.returncode != 0:
        tail = [line for line in proc.stdout.splitlines() if line.strip()][-1:]
        raise GradeError(EXIT_USAGE, f"--speed: make {target} failed: {' '.join(tail)}")
    return os.path.join(REPO, target)


def measure_speed(program, reference, rules, rows, dtype, progress=None):
    """Speed: the program and the reference timed in alternating rounds (the
    order swaps every round, so that neither always runs first)."""
    size_args, label = speed_size(rules.at, rows)
    ref_args = copy_size(size_args) if reference.endswith("/baseline_copy") and not rows \
        else size_args
    ref_program = build_reference(reference)
    mine, theirs = [], []
    for k in range(rules.rounds):
        runs = [(program, size_args, mine, False), (ref_program, ref_args, theirs, True)]
        for path, args, into, is_ref in (runs if k % 2 == 0 else runs[::-1]):
            into.append(timed_run(path, args, is_ref))
        if progress is not None:
            print(f"speed round {k + 1}/{rules.rounds}: {mine[-1]:.0f} against "
                  f"{theirs[-1]:.0f} GB/s", file=progress, flush=True)
    return Speed(rules, reference, label, mine, theirs)


def speed_check(report, rules, rows, dtype, progress=None):
    """The speed check's Outcome: measured after every other check of the
    program. A reference that fails stops the grading (exit 2): it is the
    grader's setup, not the student's, that broke."""
    case = Case("speed", [rules.target.text])
    reference = speed_reference(rules.target.reference, rows is not None, dtype)
    case.args = [rules.target.text, "at", speed_size(rules.at, rows is not None)[1]]
    try:
        speed = measure_speed(report.program, reference, rules, rows is not None, dtype, progress)
    except SpeedError as err:
        if err.reference:
            raise GradeError(EXIT_USAGE, f"--speed: the reference failed, so nothing was "
                                         f"graded for speed: {err}") from None
        return Outcome(case, False, code=EXIT_FAILED, reason=f"not measured: {err}",
                       score=0, max_score=rules.points, speed={"measured": False})
    others = [o for o in report.failed if o.case.kind != "speed"]
    if others:
        return Outcome(case, False, code=EXIT_FAILED, score=0, max_score=rules.points,
                       reason=f"not scored: {len(others)} other checks failed; measured "
                              f"{speed.line()}", speed=speed.as_dict())
    return Outcome(case, speed.passed, code=0 if speed.passed else EXIT_FAILED,
                   reason=speed.line(), score=speed.score(), max_score=rules.points,
                   speed=speed.as_dict())


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
    is_rows = name.startswith(("rows/", "back/"))
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
    part = "back" if name.startswith("back/") else "rows"
    return name, match.group(2), device, row_program(fields, part) if is_rows else None


def grade(programs, jobs, quick=(), sanitizer=None, progress=None, speed=None, op=None):
    """Grade every program in one pool of jobs; returns ([Report] in order, GPU name).

    quick: the programs that get the --quick matrix. progress: a file that
    gets one line per finished process, with its time (for slow machines).
    speed: SpeedRules, timed for each program once every check has finished.
    op: the op a lab asks for (--op): a program that declares another fails
    its "op" check and gets no other (its own op's checks would all pass)."""
    reports, jobs_for = [], []
    row_info = {}
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
        if op is not None and program_op(rows) != op:
            report.outcomes.append(Outcome(Case("op", ["--gpu-info"]), False, code=EXIT_FAILED,
                                           reason=f"this program computes {program_op(rows)} "
                                                  f"(its step_op and step_dtype), and --op "
                                                  f"asks for {op}"))
            continue
        row_info[id(report)] = rows
        report.nondeterministic = rows is not None and not rows.deterministic
        if speed and rows is not None and rows.part == "back":
            raise GradeError(EXIT_USAGE, "--speed: part 3 (back/) has no speed check yet: "
                                         "grade it without --speed")
        if speed:   # a wrong target or size, or a reference that does not build: now, not at the end
            reference = speed_reference(speed.target.reference, rows is not None,
                                        rows.dtype if rows else "f32")
            speed_same_op(reference, rows)
            build_reference(reference)
            speed_size(speed.at, rows is not None)
        if rows is not None and rows.part == "back":
            # The bfloat16 softmax backward (back/step15 on) gets softmax's
            # matrix, the bfloat16 LayerNorm backward (back/step17 on,
            # layernorm_backward_bf16) LayerNorm's: their offsets run over
            # their pack (8 bfloat16s; gamma's counted in floats), from --gpu-info.
            softmax = rows.op in ("softmax_backward", "softmax_backward_bf16")
            build = build_softmax_back_cases if softmax else build_back_cases
            cases = build(device, rows, quick=program in quick, sanitizer=sanitizer is not None)
        elif rows is not None:
            cases = build_row_cases(device, rows, quick=program in quick,
                                    sanitizer=sanitizer is not None)
        else:
            cases = build_cases(device, quick=program in quick, sanitizer=sanitizer is not None)
        # The watch runs in every check (run_case, run_batch), not in gpu-work's only.
        entry = watch_entry(cases)
        for case in cases:
            case.entry = case.entry or entry
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
        try:
            for report, future in futures:
                result = future.result()
                report.outcomes.extend(result if isinstance(result, list) else [result])
        except BaseException:   # stopped: nothing queued starts, nothing started outlives it
            for _, future in futures:
                future.cancel()
            stop_checks()
            raise
    for report in reports:
        rows = row_info.get(id(report))
        if rows is not None and rows.part == "back":
            settle_determinism(report, rows)
    # Speed last, one program at a time: nothing else of this grading is on the GPU.
    for report in reports if speed else ():
        if id(report) in row_info:
            rows = row_info[id(report)]
            report.outcomes.append(speed_check(report, speed, rows,
                                               rows.dtype if rows else "f32", progress))
    if sanitizer is None:
        for report in reports:
            if report.failed and report.failed[0].case.kind in ("probe", "op"):
                continue
            for tool in SANITIZER_TOOLS:
                report.outcomes.append(Outcome(Case(tool, [], tool), False, skipped=True,
                                               reason=SANITIZER_SKIPPED[0]))
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
    if report.expected:
        note += (f" (not deterministic, as it declares: {len(report.expected)} det checks "
                 "saw other bits, expected)")
    elif report.nondeterministic:   # said whether or not a det check saw it
        note += " (declares itself not deterministic: no det check saw other bits)"
    if report.passed:
        return f"grade: PASS {report.name}: {total} of {total} checks passed{note}"
    return f"grade: FAIL {report.name}: {len(report.failed)} of {total} checks failed{note}"


def print_report(report, out=sys.stdout):
    if report.failed:
        print(f"{report.name}: failed checks (kind, exit, command -> why)", file=out)
        for line in failure_table(report):
            print(line, file=out)
    for o in report.outcomes:
        if o.case.kind == "speed":
            points = f" ({o.score:g} of {o.max_score:g} points)" if o.max_score is not None else ""
            print(f"speed: {o.reason}{points}", file=out)
    print(verdict(report), file=out, flush=True)


def summary(reports, gpu):
    """What --summary writes: per program, its checks by state, the first
    failures, the gpu-work check and the speed check (tools/grade_class.py)."""
    programs = []
    for report in reports:
        # The gpu-work check, or the first other check whose watch saw host work.
        work = [o for o in report.outcomes if o.case.kind == GPU_WORK]
        elsewhere = [o for o in report.failed if o.case.kind != GPU_WORK and
                     o.reason.startswith("gpu-work")]
        if elsewhere and work and (work[0].ok or work[0].skipped):
            work = elsewhere
        fast = [o for o in report.outcomes if o.case.kind == "speed"]
        kinds = {}
        for o in report.failed:
            kinds[o.case.kind] = kinds.get(o.case.kind, 0) + 1
        programs.append({
            "program": report.program, "name": report.name,
            "verdict": "PASS" if report.passed else "FAIL",
            "checks": len(report.outcomes) - len(report.skipped),
            "failed": len(report.failed), "skipped": len(report.skipped),
            "failed_kinds": kinds,
            "expected_det": len(report.expected),
            "declares_nondeterministic": report.nondeterministic,
            "first_failures": [f"{o.case.kind}: {o.case.label} -> {o.reason}"
                               for o in report.failed[:3]],
            "gpu_work": {"state": ("skipped" if work[0].skipped else
                                   "passed" if work[0].ok else "failed"),
                         "reason": work[0].reason} if work else None,
            "speed": dict(fast[0].speed or {}, passed=fast[0].ok, score=fast[0].score,
                          max_score=fast[0].max_score, line=fast[0].reason) if fast else None,
        })
    return {"gpu": gpu or "", "programs": programs}


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
    parser.add_argument("--summary", metavar="FILE",
                        help="also write each program's result as JSON (tools/grade_class.py)")
    parser.add_argument("--op", metavar="OP",
                        help="the op the lab asks for (layernorm, softmax_bf16, ...): a program "
                             "that declares another fails without its checks")
    parser.add_argument("--speed", metavar="TARGET",
                        help="also time the program against another, e.g. '1.5x step2', "
                             "'0.8x copy', '>= step8'")
    parser.add_argument("--speed-at", metavar="SIZE", default="",
                        help="n (part 1, default 33554432) or ROWSxCOLS (part 2, default "
                             "32768x1024)")
    parser.add_argument("--speed-rounds", type=int, default=SPEED_ROUNDS,
                        help=f"rounds, each timing both programs once (default {SPEED_ROUNDS})")
    parser.add_argument("--speed-points", type=float, default=SPEED_POINTS,
                        help=f"what the speed check is worth in the reports (default {SPEED_POINTS})")
    parser.add_argument("--speed-credit", choices=("all", "ratio"), default="all",
                        help="all: the points or none; ratio: a speed check that did not pass "
                             "still scores points x (its slowest round over the reference's "
                             "fastest) / target")
    parser.add_argument("--speed-tie", choices=("median", "pass", "fail"), default="median",
                        help="a tie with the target (rounds overlap): decided by the ratio of "
                             "the medians (default), or passes, or fails")
    return parser.parse_args(argv)


def stop(signum, frame):
    """Ctrl-C, or SIGTERM (make class's time limit, a CI job's timeout): the
    grading stops, once; a second signal does not cut its cleanup short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
    if args.jobs < 1:
        print("grade: error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    # The reports are written after the grading: a path that cannot take one
    # is said now, not after minutes of checks.
    for flag, path in (("--junit", args.junit), ("--gradescope", args.gradescope),
                       ("--summary", args.summary)):
        problem = cli.output_problem(path)
        if problem:
            print(f"grade: error: {flag} {path}: {problem}", file=sys.stderr)
            return EXIT_USAGE
    sanitizer = None if args.no_sanitizer else find_sanitizer()
    if args.no_sanitizer:
        SANITIZER_SKIPPED[0] = "not run (--no-sanitizer)"
    quick = set(args.programs) if args.quick else set()
    try:
        speed = None
        if args.speed is not None:
            if not 2 <= args.speed_rounds <= 100:
                raise GradeError(EXIT_USAGE, "--speed-rounds must be 2 to 100")
            if not args.speed_points >= 0:   # NaN too
                raise GradeError(EXIT_USAGE, "--speed-points must be 0 or more")
            speed = SpeedRules(parse_speed(args.speed), args.speed_at, args.speed_rounds,
                               args.speed_points, args.speed_credit, args.speed_tie)
        op = parse_op(args.op)
        reports, gpu = grade(args.programs, args.jobs, quick, sanitizer,
                             sys.stderr if args.progress else None, speed, op)
    except GradeError as err:
        print(f"grade: {err}", file=sys.stderr)
        return err.code
    except KeyboardInterrupt:
        stop_checks()
        print("grade: interrupted", file=sys.stderr)
        return 130
    print(f"grade: {sum(len(r.outcomes) for r in reports)} checks on {gpu}")
    for report in reports:
        print_report(report)
    if args.junit or args.gradescope:
        import grade_report  # tools/grade_report.py, beside this file
        if args.junit:
            grade_report.write_junit(reports, args.junit, gpu or "")
        if args.gradescope:
            grade_report.write_gradescope(reports, args.gradescope, gpu or "")
    if args.summary:
        import grade_report
        grade_report.write_json(summary(reports, gpu), args.summary)
    return 0 if all(r.passed for r in reports) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
