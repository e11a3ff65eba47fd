#!/usr/bin/env python3
"""CPU tests for tools/bench.py, tools/profile.py and the make targets that run
them (bench, profile-all: OUT_DIR, DEVICE). No GPU, no ncu needed.

The step programs and ncu are replaced by small Python fakes that follow
tools/schema.py and common/README.md: they take the same flags (--runs,
--checks, --no-verify, --gpu-info, --version included), write the same CSV
rows with the header of common/harness.h, and fail with the same exit codes
and messages, on stdout or stderr where the harness prints them. Part 2's
programs are fakes under rows/. Run: python3 tests/test_scripts.py
(PLOT_PYTHON, a Python with matplotlib, for the make bench tests, which draw
charts).
"""
import csv
import hashlib
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakes import (FAKE_ARCH, FAKE_TOOLCHAIN, HARNESS_COLUMNS, fake_gpu_tools,  # noqa: E402
                   fake_repo, gpu_info_keys, harness_options, python_without_torch, row_bytes,
                   version_fields, write_executable)
from unittest import mock

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "tools", "bench.py")
PROFILE = os.path.join(REPO, "tools", "profile.py")
sys.path.insert(0, os.path.join(REPO, "tools"))
import schema  # noqa: E402


def load(path, name):
    """Import a script as a module (profile.py would clash with the stdlib's profile)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load(BENCH, "reduce_bench")
profile = load(PROFILE, "reduce_profile")

CONTRACT_COLUMNS = list(schema.RESULT_COLUMNS)   # what bench files: the harness's + round
PART1 = ("step0_a", "step1_b", "step10_c", "baseline_cub")
PART1_LABELS = ("step0_a", "step1_b", "step10_c", "cub")
# Part 2: two row steps and the copy and CUB baselines; with them, part 1
# needs step9_singlepass, which sums each shape's floats as one array.
ROW_PROGRAMS = ("rows/step0_thread", "rows/step5_layernorm", "rows/baseline_copy",
                "rows/baseline_cub")
ROW_LABELS = ("rows/step0_thread", "rows/step5_layernorm", "rows/copy", "rows/cub")
ROW_OPS = {"rows/step0_thread": "sum", "rows/step5_layernorm": "layernorm", "rows/copy": "copy",
           "rows/cub": "sum"}
QUICK = (1 << 20, 1 << 25)
# PyTorch's float ops as a whole part 2 bench asks for them: each but the copy
# also compiled.
TORCH_OPS = ("sum", "compiled/sum", "layernorm", "compiled/layernorm", "softmax",
             "compiled/softmax", "copy")


def fake_hash(step):
    """The code hash a fake program reports: 12 hex digits of its CSV step name."""
    return hashlib.sha256(step.encode()).hexdigest()[:12]


# A step program, part 1 (common/driver.c) or part 2 (common/rows_driver.c,
# when its directory is under rows/). Like the harness it takes only its own
# part's options, reads --runs/--checks files (one CUDA context: one process),
# makes a timed run's exact checks first unless --no-verify, prints verdicts
# on stdout and errors on stderr, and exits 3 at once on a device error.
# Faults come from FAKE_* variables, whose step names are CSV step names
# (cub, rows/step0_thread). FAKE_LOG gets "pid step argv..." for every
# process, "pid step << options" for every line of its --runs/--checks file
# when it starts, and "pid step == options" as each line runs; FAKE_ENV_LOG
# gets "step CUDA_VISIBLE_DEVICES=...".
FAKE_PROGRAM = r'''#!@PYTHON@
import csv, hashlib, os, sys

COLUMNS = @COLUMNS@
HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.basename(HERE)
ROWS = os.path.basename(os.path.dirname(HERE)) == "rows"
NAME = ("rows/" if ROWS else "") + (DIR[len("baseline_"):] if DIR.startswith("baseline_") else DIR)
OP = ("copy" if DIR == "baseline_copy" else "layernorm" if "layernorm" in DIR
      else "softmax" if "softmax" in DIR else "sum") if ROWS else ""
SWITCHES = {"--check", "--no-verify", "--no-flush", "--gpu-info", "--version", "-h", "--help"}
SWITCHES |= set() if ROWS else {"--cpu-sums"}
VALUED = {"--reps", "--warmup", "--seed", "--fill", "--at", "--offset", "--csv", "--checks",
          "--runs", "--device"} | ({"--rows", "--cols", "--y-offset", "--gamma-offset",
                                    "--beta-offset", "--mask", "--check-every"} if ROWS else {"-n"})
# The other part's size flags, and --n, get a hint that names this part's.
HINTS = (dict.fromkeys(["-n", "--n"], "the shape is --rows R and --cols C") if ROWS
         else dict.fromkeys(["--n", "--rows", "--cols"], "the number of floats is -n N"))
NUMBERS = {"-n": 1, "--rows": 1, "--cols": 1, "--reps": 1, "--warmup": 0, "--seed": 0,
           "--offset": 0, "--device": 0}
GPU_INFO = dict(cc="9.0", sms=132, sm_threads=2048, l2_bytes=62914560, free_bytes=147000000000,
                total_bytes=150000000000, peak_gbps=4800.0, driver="580.159.04", cuda="13.0")


def code_hash():
    return hashlib.sha256(NAME.encode()).hexdigest()[:12]


def gpu():
    if os.environ.get("FAKE_ALT_GPU_STEP") == NAME:
        return "NVIDIA A100-SXM4-80GB"
    return os.environ.get("FAKE_GPU", "NVIDIA H200")


def log(words):
    if os.environ.get("FAKE_LOG"):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(" ".join([str(os.getpid()), NAME] + words) + "\n")


def parse(argv):
    """(options, None) or (None, the harness's one-line message)."""
    opts, i = {"switches": set()}, 0
    while i < len(argv):
        a = argv[i]
        if a in SWITCHES:
            opts["switches"].add(a)
            i += 1
        elif a in VALUED:
            if i + 1 >= len(argv):
                return None, f"{a} needs a value"
            if a in NUMBERS and not (argv[i + 1].isdigit() and int(argv[i + 1]) >= NUMBERS[a]):
                return None, f"{a} needs a number of at least {NUMBERS[a]}, got '{argv[i + 1]}'"
            opts[a] = argv[i + 1]
            i += 2
        elif a.split("=")[0] in HINTS:
            name = a.split("=")[0]
            return None, f"unknown option '{name}': {HINTS[name]} (try --help)"
        else:
            return None, f"unknown option '{a}' (try --help)"
    if "--checks" in opts and "--runs" in opts:
        return None, "--checks and --runs cannot be combined"
    return opts, None


def open_device():
    if os.environ.get("FAKE_NO_DEVICE"):
        print("error: no CUDA device: no CUDA-capable device is detected", file=sys.stderr)
        sys.exit(3)


def device_error(message):
    """CHECK_CUDA: one line and exit 3, a --runs batch included."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(3)


def append(path, record):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(record)


def run(o):
    """One run as common/driver.c's run() makes it; returns the exit code."""
    s = o["switches"]
    check = "--check" in s
    if ROWS:
        rows, cols = int(o.get("--rows", 32768)), int(o.get("--cols", 1024))
        n, size = rows * cols, f"--rows {rows} --cols {cols}"
        nbytes = {"sum": 4.0 * n + 4.0 * rows, "layernorm": 8.0 * n + 8.0 * rows + 8.0 * cols,
                  "softmax": 8.0 * n, "copy": 8.0 * n}[OP]
    else:
        rows = cols = ""
        n = int(o.get("-n", 1 << 25))
        size, nbytes = f"-n {n}", 4.0 * n
    if n > int(os.environ.get("FAKE_OOM_ABOVE", str(1 << 40))):
        device_error("out of device memory: cudaMalloc((void **)&b->base, total * sizeof(float)) "
                     "(common/device.c:155)")
    if os.environ.get("FAKE_CRASH_STEP") == NAME and os.environ.get("FAKE_CRASH_N") == str(n):
        device_error("kernel launch: an illegal memory access was encountered (reduce.cu:42)")
    wrong = os.environ.get("FAKE_WRONG_STEP") == NAME
    if not check and "--no-verify" not in s:
        if wrong:
            print(f"check    {size} --offset 0 --fill exact: FAIL: the run gave {n + 7}, "
                  "not the reference")
            print("FAIL: a check before timing failed (make check STEP=... lists them all)")
            return 1
        print(f"check    PASS: exact fills (zero tolerance) at {size}")
    reps = 1 if check else int(o.get("--reps", 20))
    warmup = 0 if check else int(o.get("--warmup", 3))
    gbps = 900.0 + len(NAME)
    median = nbytes / gbps / 1e3
    timing = ["", "", "", "", ""] if check else \
        [f"{median:.3f}", f"{median * 0.98:.3f}", f"{median * 1.1:.3f}", f"{gbps:.2f}",
         f"{100 * gbps / 4800:.2f}"]
    values = [NAME, n, reps, warmup, *timing, n + (7 if wrong else 0), n, 7 if wrong else 0, 0.5,
              0 if wrong else 1, gpu(), "9.0", "580.159.04", "13.0", 4800.0, 62.9, 132,
              0 if check or "--no-flush" in s else 1, int(o.get("--offset", 0)),
              o.get("--fill", "exact" if check else "random"), int(o.get("--seed", 1)),
              "abc1234-dirty", "check" if check else "timed", 1, code_hash(), n / 2, "", "",
              rows, cols, OP, f"{nbytes:.0f}", "@ARCH@", "@TOOLCHAIN@"]
    if "--csv" in o:
        append(o["--csv"], dict(zip(COLUMNS, values)))
        if os.environ.get("FAKE_BAD_CSV_STEP") == NAME:   # bytes that are not UTF-8 text
            with open(o["--csv"], "ab") as f:
                f.write(b"\xff\xfe\n")
    print(f"{NAME}: {size}, median {median:.2f} us")  # the human summary bench must not show
    if wrong:
        print(f"FAIL: timed run 1 gave {n + 7}, not the reference")
        return 1
    print("PASS")
    return 0


def run_lines(path, base, check_only):
    """--checks/--runs FILE: run_lines() in common/harness.c."""
    flag = "--checks" if check_only else "--runs"
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        print(f"error: {flag} {path}: cannot read this file", file=sys.stderr)
        return 2
    for line in lines:   # what the file holds, before any of it runs
        if line.split() and not line.split()[0].startswith("#"):
            log(["<<", line])
    worst = 0
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        o, err = parse((["--check"] if check_only else []) + words)
        if err is None and o["switches"] & {"--version", "--gpu-info", "-h", "--help"}:
            err = "not an option of a run"
        if err is None and ("--checks" in o or "--runs" in o):
            err = "--checks and --runs cannot nest"
        if err is not None:
            print(f"error: {flag} {path} line {number}: {err}", file=sys.stderr)
            return 2
        o.pop("--csv", None)
        if "--csv" in base:
            o["--csv"] = base["--csv"]
        o["switches"] |= base["switches"] & {"--no-verify", "--no-flush", "--cpu-sums"}
        log(["==", line])
        print(f"== {'check' if check_only else 'run'} {line}", flush=True)
        rc = run(o)
        worst = max(worst, rc)
        if rc == 2:
            break
    return worst


def main():
    o, err = parse(sys.argv[1:])
    if err is not None:
        print(f"error: {err}", file=sys.stderr)
        return 2
    s = o["switches"]
    if s & {"-h", "--help"}:
        print(f"usage: {sys.argv[0]} [options]")
        return 0
    if "--version" in s:
        if os.environ.get("FAKE_NO_VERSION"):  # a build from before --version existed
            print("error: unknown option '--version' (try --help)", file=sys.stderr)
            return 2
        print(f"{NAME} code_hash={code_hash()} git_rev=v{DIR[:5]} arch=@ARCH@ "
              f"toolchain=@TOOLCHAIN@")
        return 0
    log(sys.argv[1:])
    if os.environ.get("FAKE_ENV_LOG"):
        with open(os.environ["FAKE_ENV_LOG"], "a") as f:
            f.write(f"{NAME} CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '-')}\n")
    if "--gpu-info" in s:
        open_device()
        print(f"gpu={gpu()}")
        for key, value in GPU_INFO.items():
            print(f"{key}={value}")
        return 0
    if "--csv" in o:
        try:
            open(o["--csv"], "a").close()
        except OSError:
            print(f"error: --csv {o['--csv']}: cannot write this file", file=sys.stderr)
            return 2
    open_device()
    print(f"{NAME} on {gpu()} (cc 9.0, 132 SMs, 63 MB L2, peak 4800 GB/s)", flush=True)
    if "--checks" in o:
        return run_lines(o["--checks"], o, True)
    if "--runs" in o:
        return run_lines(o["--runs"], o, False)
    return run(o)


sys.exit(main())
'''

# Values and units as ncu scales them (usecond, Mbyte, Kbyte/block, ...).
NCU_SAMPLE = {
    "gpu__time_duration.sum": ("usecond", "176.42"),
    "smsp__inst_executed.sum": ("inst", "1,234,567"),
    "smsp__thread_inst_executed_per_inst_executed.ratio": ("", "31.87"),
    "smsp__thread_inst_executed_pred_on.sum": ("inst", "24,691,340"),
    "smsp__sass_average_branch_targets_threads_uniform.pct": ("%", "98.50"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("", "12,345"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": ("", "0"),
    "smsp__inst_executed_op_shared_ld.sum": ("inst", "65,536"),
    "smsp__inst_executed_op_shared_st.sum": ("inst", "32,768"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "91.23"),
    "dram__bytes_read.sum": ("Mbyte", "134.22"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "87.60"),
    "launch__registers_per_thread": ("register/thread", "16"),
    "launch__shared_mem_per_block_static": ("Kbyte/block", "1.02"),
    "launch__shared_mem_per_block_dynamic": ("byte/block", "0"),
    "launch__grid_size": ("", "131,072"),
    "launch__block_size": ("", "256"),
    "smsp__inst_executed_op_global_ld.sum": ("inst", "1,048,576"),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("sector", "4,194,304"),
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("request", "1,048,576"),
    "lts__t_sector_hit_rate.pct": ("%", "12.50"),
    "dram__bytes_write.sum": ("Kbyte", "524.29"),
}

STEP_KERNEL = "void reduce_kernel<256>(const float *, float *, unsigned int)"
CUB_KERNEL = ("void cub::CUB_300000_SM_900::DeviceReduceKernel<cub::detail::reduce::Policy900, "
              "const float *, int, cuda::std::plus<void>, float>(const float *, float *, int)")
# Part 2's kernels, as rows/*/rows.cu name them (and CUB's segmented sum).
ROW_KERNELS = {
    "sum": "void row_sum_kernel<256>(const float *, float *, unsigned int, unsigned int)",
    "layernorm": "void layernorm_kernel<256>(const float *, float *, float *, float *, "
                 "const float *, const float *, float, unsigned int)",
    "copy": "copy_kernel(const float *, float *, unsigned int)",
    "cub": "void cub::CUB_300000_SM_900::detail::reduce::DeviceSegmentedReduceKernel<"
           "cub::detail::reduce::Policy900, const float *, float *, int, "
           "cuda::std::plus<void>, float>(const float *, float *, int)",
}

# ncu: runs the program like the real one, then prints --csv --page raw output
# for the first launch of a kernel that the --kernel-name regex matches; like
# ncu, it profiles nothing when the regex matches none of the program's kernels.
FAKE_NCU = r'''#!@PYTHON@
import csv, os, re, subprocess, sys

SAMPLE = @SAMPLE@
STEP_KERNEL, CUB_KERNEL, ROW_KERNELS = @STEP_KERNEL@, @CUB_KERNEL@, @ROW_KERNELS@
FIXED = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC"]


def say(line):
    print(line, flush=True)


def kernel_of(program):
    """The reduction kernel a program launches (besides the L2 flush)."""
    here = os.path.dirname(os.path.abspath(program))
    name = os.path.basename(here)
    if os.path.basename(os.path.dirname(here)) == "rows":
        if name == "baseline_cub":
            return ROW_KERNELS["cub"]
        if name == "baseline_copy":
            return ROW_KERNELS["copy"]
        return ROW_KERNELS["layernorm" if "layernorm" in name else "sum"]
    return CUB_KERNEL if name == "baseline_cub" else STEP_KERNEL


def main():
    argv = sys.argv[1:]
    if os.environ.get("FAKE_NCU_LOG"):
        with open(os.environ["FAKE_NCU_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    at = argv.index("--metrics")
    metrics, program = argv[at + 1].split(","), argv[at + 2:]
    regex = argv[argv.index("--kernel-name") + 1].split(":", 1)[1]
    kernel = kernel_of(program[0])
    mode = os.environ.get("FAKE_NCU_MODE", "ok")
    say("==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, "
        "profiling results may be inconsistent.")
    say("==PROF== Connected to process 4242 (" + program[0] + ")")
    if mode == "badmetric":  # what ncu 2025.3 says for an unknown base name (no suffix)
        say(r"==ERROR== Failed to find metric regex:^smsp__inst_executed_op_shared_ld"
            r"\.(sum|min|max|avg|pct|ratio|max_rate)$")
        say("")
        say('==ERROR== Failed to profile "reduce_kernel" in process 4242')
        say("==PROF== Trying to shutdown target application")
        say("==ERROR== The application returned an error code (9).")
        return 9
    if mode == "dropmetric":  # ncu 2025.3 silently leaves out an unknown full name
        metrics.remove("launch__grid_size")
    if mode == "perm":
        say("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
            "Performance Counters on the target device 0. For instructions on enabling permissions "
            "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    code = subprocess.run(program).returncode
    say("==PROF== Disconnected from process 4242")
    if mode == "perm":
        return 1
    if mode == "nokernel" or code != 0 or not re.search(regex, kernel.split("(")[0]):
        say("==WARNING== No kernels were profiled.")
        if code == 0:
            say("Available Kernels:")
            say("1. l2_flush_kernel")
            say("2. " + kernel.split("(")[0].split("<")[0].split("::")[-1].replace("void ", ""))
        return code
    names = sorted(metrics)
    writer = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(FIXED + names)
    writer.writerow([""] * len(FIXED) + [SAMPLE.get(m, ("", ""))[0] for m in names])
    writer.writerow(["0", "4242", "run", "gpu-host", kernel, "1", "7", "(256, 1, 1)",
                     "(131072, 1, 1)", "0", "9.0"] + [SAMPLE.get(m, ("", "n/a"))[1] for m in names])
    return 0


sys.exit(main())
'''

# A Python that runs torch on a GPU, as bench.py uses one: `-c <probe>` and
# tools/torch_rows.py. It writes the rows torch_rows.py writes (step
# torch/<op>, the schema's columns, the round it is given), without torch.
FAKE_TORCH_PYTHON = r'''#!@PYTHON@
import argparse, csv, os, sys

COLUMNS = @COLUMNS@
if os.environ.get("FAKE_LOG"):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(" ".join([str(os.getpid()), "torch"] + sys.argv[1:]) + "\n")
if sys.argv[1] == "-c":
    sys.exit(0)
parser = argparse.ArgumentParser()
for flag in ("--csv", "--shapes", "--ops", "--reps", "--warmup", "--round"):
    parser.add_argument(flag, required=True)
args = parser.parse_args(sys.argv[2:])
new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
with open(args.csv, "a", newline="") as f:
    writer = csv.DictWriter(f, COLUMNS, restval="")
    if new:
        writer.writeheader()
    for shape in args.shapes.split(","):
        rows, cols = (int(x) for x in shape.split("x"))
        for op in args.ops.split(","):
            writer.writerow({"step": "torch/" + op, "n": rows * cols, "reps": args.reps,
                             "warmup": args.warmup, "median_us": "50.000", "min_us": "49.000",
                             "max_us": "51.000", "gbps": "1000.00", "result": "0",
                             "reference": "0", "abs_err": "0", "tol": "0", "pass": 1,
                             "gpu": "NVIDIA H200 (torch)", "rows": rows, "cols": cols,
                             "op": op.removeprefix("compiled/"), "cc": "9.0", "cuda": "13.0",
                             "peak_gbps": "0", "l2_mb": "62.9", "sms": "132", "flush": "1",
                             "offset": "0", "fill": "random", "seed": "1", "git_rev": "abc1234",
                             "mode": "timed", "round": args.round,
                             "toolchain": "torch 2.9.0 CUDA 13.0"})
'''


def fill(template, **values):
    """A fake's text: @NAME@ replaced by repr(value), or by the value for PYTHON."""
    # -S: no site-packages to scan at each of the fakes' many starts (stdlib only).
    text = template.replace("@PYTHON@", sys.executable + " -S")
    for name, value in values.items():
        text = text.replace(f"@{name}@", value if isinstance(value, str) and
                            name in ("ARCH", "TOOLCHAIN") else repr(value))
    return text


def program_text():
    return fill(FAKE_PROGRAM, COLUMNS=list(HARNESS_COLUMNS), ARCH=FAKE_ARCH,
                TOOLCHAIN=FAKE_TOOLCHAIN)


def make_root(top, steps=PART1):
    """A fake repository: one fake `run` per program directory."""
    return fake_repo(top, steps, program_text())


def make_ncu(top):
    bindir = os.path.join(top, "bin")
    write_executable(os.path.join(bindir, "ncu"), fill(
        FAKE_NCU, SAMPLE=NCU_SAMPLE, STEP_KERNEL=STEP_KERNEL, CUB_KERNEL=CUB_KERNEL,
        ROW_KERNELS=ROW_KERNELS))
    return bindir


def make_torch_python(top):
    path = os.path.join(top, "bin-torch", "python3")
    write_executable(path, fill(FAKE_TORCH_PYTHON, COLUMNS=list(schema.RESULT_COLUMNS)))
    return path


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_", "REDUCE_"))}
    env.update(extra)
    return env


def read_log(path):
    """The fake programs' FAKE_LOG as processes, in the order they started:
    [(pid, step, argv, [options of each --runs/--checks line that ran],
      [options of each line its file held])]."""
    processes, by_pid = [], {}
    if not os.path.exists(path):
        return processes
    with open(path) as f:
        for line in f:
            pid, step, *words = line.split()
            if words[:1] in (["=="], ["<<"]):
                by_pid[pid][3 if words[0] == "==" else 4].append(words[1:])
            else:
                by_pid[pid] = (pid, step, words, [], [])
                processes.append(by_pid[pid])
    return processes


def size_of(words):
    """'1048576' for [-n 1048576 ...], '4096x1024' for [--rows 4096 --cols 1024 ...]."""
    if "-n" in words:
        return words[words.index("-n") + 1]
    return f"{words[words.index('--rows') + 1]}x{words[words.index('--cols') + 1]}"


class Bf16SumTest(unittest.TestCase):
    """tools/bf16_sum.c (make bf16-sum): the stall it shows, and that both
    ACCURACY pages quote its output as it is."""

    def test_stall_and_quote(self):
        program = os.path.join(REPO, "build", "bf16_sum")
        if not os.access(program, os.X_OK):
            self.skipTest("build/bf16_sum not built (make build/bf16_sum)")
        out = subprocess.run([program], capture_output=True, text=True, check=True).stdout
        rows = {tuple(line.split()[:2]): line.split() for line in out.splitlines()[1:]}
        self.assertEqual(rows[("ones", "256")][2], "256")
        self.assertEqual(rows[("ones", "1000")][2], "256")   # 256 + 1 rounds back to 256
        self.assertEqual(rows[("ones", "1000")][3], "1000")  # float: exact
        for page in ("ACCURACY.md", "ACCURACY.zh-CN.md"):
            with open(os.path.join(REPO, page), encoding="utf-8") as handle:
                self.assertIn(out, handle.read(), page)


class ScriptTest(unittest.TestCase):
    """Shared set-up: a temp directory with a fake repository in it (part 1
    only; add_rows_programs() adds part 2 and the step 9 it needs)."""

    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="reduce-scripts-")
        self.addCleanup(shutil.rmtree, self.top)
        self.root = make_root(self.top)
        self.out = os.path.join(self.top, "results")
        self.log = os.path.join(self.top, "programs.log")

    def add_rows_programs(self):
        make_root(self.top, ("step9_singlepass",) + ROW_PROGRAMS)

    def run_script(self, script, args, **env):
        # -S: bench.py and profile.py need the standard library only, and
        # site's start-up hooks cost more than the run of a small script.
        proc = subprocess.run([sys.executable, "-S", script] + list(args), capture_output=True,
                              text=True, env=clean_env(FAKE_LOG=self.log, **env), timeout=300)
        self.assertNotIn("Traceback", proc.stderr)
        return proc

    def bench(self, *args, **env):
        return self.run_script(BENCH, ["--root", self.root, "--out-dir", self.out] + list(args),
                               **env)

    def processes(self):
        return read_log(self.log)

    def results(self, name="h200.csv"):
        return bench.read_rows(os.path.join(self.out, name))

    def assert_one_line(self, text, prefix):
        lines = text.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, text)
        self.assertTrue(lines[0].startswith(prefix), lines[0])
        return lines[0]


# ------------------------------------------------------------- the fakes

class FakeProgramTest(ScriptTest):
    """The fakes answer as the harness does, as far as its sources say:
    the options of print_usage, the --version and --gpu-info fields, the
    CSV header, and a --runs file's lines each run and each written."""

    def setUp(self):
        super().setUp()
        self.add_rows_programs()

    def call(self, name, *args):
        return subprocess.run([os.path.join(self.root, name, "run"), *args], capture_output=True,
                              text=True, env=clean_env(), cwd=self.top, timeout=60)

    def test_options_are_the_harness_options(self):
        part_only = {"-n": "step0_a", "--cpu-sums": "step0_a"}
        part_only.update((option, "rows/step0_thread") for option in (
            "--rows", "--cols", "--y-offset", "--gamma-offset", "--beta-offset", "--mask",
            "--check-every"))
        csv_path = os.path.join(self.top, "o.csv")
        for option, valued in harness_options().items():
            for name in ("step0_a", "rows/step0_thread"):
                args = [option] + (["1"] if valued else [])
                if option != "--csv":
                    args += ["--csv", csv_path]
                proc = self.call(name, *args)
                unknown = f"error: unknown option '{option}'" in proc.stderr
                self.assertEqual(unknown, part_only.get(option, name) != name,
                                 (name, option, proc.stderr))
        proc = self.call("step0_a", "--rows", "4")
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, "error: unknown option '--rows': the number of floats is -n N "
                             "(try --help)\n"))
        proc = self.call("rows/step0_thread", "--n=5")
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, "error: unknown option '--n': the shape is --rows R and --cols C "
                             "(try --help)\n"))

    def test_version_and_gpu_info_fields(self):
        for name, label in (("step0_a", "step0_a"), ("rows/baseline_copy", "rows/copy")):
            line = self.call(name, "--version").stdout
            self.assertEqual(line, f"{label} code_hash={fake_hash(label)} git_rev=v"
                                   f"{os.path.basename(name)[:5]} arch={FAKE_ARCH} "
                                   f"toolchain={FAKE_TOOLCHAIN}\n")
            self.assertEqual(re.findall(r" ([a-z_]+)=", line), version_fields())
            self.assertRegex(line.strip(), profile.VERSION_RE)
            info = self.call(name, "--gpu-info")
            self.assertEqual(info.returncode, 0, info.stderr)
            self.assertEqual([l.split("=")[0] for l in info.stdout.splitlines()], gpu_info_keys())
        self.assertEqual(self.call("step0_a", "--gpu-info").stdout.splitlines()[0],
                         "gpu=NVIDIA H200")

    def test_runs_file_one_row_per_line(self):
        lines = os.path.join(self.top, "runs.txt")
        with open(lines, "w") as f:
            f.write("--rows 4 --cols 256 --reps 2\n\n# a comment\n--rows 8 --cols 1000 "
                    "--no-verify\n")
        csv_path = os.path.join(self.top, "r.csv")
        proc = self.call("rows/step5_layernorm", "--runs", lines, "--csv", csv_path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stdout.splitlines() if l.startswith("==")],
                         ["== run --rows 4 --cols 256 --reps 2",
                          "== run --rows 8 --cols 1000 --no-verify"])
        self.assertEqual(proc.stdout.count("check    PASS"), 1)   # --no-verify: no checks
        with open(csv_path) as f:
            self.assertEqual(tuple(f.readline().strip().split(",")), HARNESS_COLUMNS)
        rows = bench.read_rows(csv_path)
        self.assertEqual([(r["step"], r["rows"], r["cols"], r["n"], r["op"], r["reps"])
                          for r in rows],
                         [("rows/step5_layernorm", "4", "256", "1024", "layernorm", "2"),
                          ("rows/step5_layernorm", "8", "1000", "8000", "layernorm", "20")])
        self.assertEqual([float(r["bytes"]) for r in rows],
                         [row_bytes("layernorm", 4, 256), row_bytes("layernorm", 8, 1000)])
        self.assertEqual({(r["arch"], r["toolchain"]) for r in rows},
                         {(FAKE_ARCH, FAKE_TOOLCHAIN)})
        with open(lines, "a") as f:
            f.write("--runs x\n")
        proc = self.call("rows/step5_layernorm", "--runs", lines)
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr, f"error: --runs {lines} line 5: --checks and --runs "
                                      "cannot nest\n")

    def test_part_1_rows_leave_the_row_columns_empty(self):
        csv_path = os.path.join(self.top, "r.csv")
        self.assertEqual(self.call("baseline_cub", "-n", "1000", "--csv", csv_path).returncode, 0)
        [row] = bench.read_rows(csv_path)
        self.assertEqual((row["step"], row["n"], row["rows"], row["cols"], row["op"],
                          row["bytes"]), ("cub", "1000", "", "", "", "4000"))


# ------------------------------------------------------------------ bench

class BenchUnitTest(ScriptTest):
    def test_discovery_orders_by_step_number(self):
        os.makedirs(os.path.join(self.root, "step2_notes"))  # no source, no binary: ignored
        os.makedirs(os.path.join(self.root, "stepx_bad"))
        self.assertEqual(bench.program_dirs(self.root),
                         ["step0_a", "step1_b", "step10_c", "baseline_cub"])

    def test_row_programs_in_step_order_then_baselines(self):
        self.assertEqual(bench.row_program_dirs(self.root), [])   # no rows/: no part 2
        make_root(self.top, ("rows/step10_late", "rows/baseline_copy") + ROW_PROGRAMS)
        os.makedirs(os.path.join(self.root, "rows", "step3_notes"))
        self.assertEqual(bench.row_program_dirs(self.root),
                         ["rows/step0_thread", "rows/step5_layernorm", "rows/step10_late",
                          "rows/baseline_copy", "rows/baseline_cub"])

    def test_find_programs_returns_run_paths(self):
        programs = bench.find_programs(self.root)
        self.assertEqual(programs[2], ("step10_c", os.path.join(self.root, "step10_c", "run")))

    def test_unbuilt_student_step_is_reported(self):
        os.makedirs(os.path.join(self.root, "step9_mine"))
        open(os.path.join(self.root, "step9_mine", "reduce.cu"), "w").close()
        with self.assertRaises(bench.BenchError) as caught:
            bench.find_programs(self.root)
        self.assertEqual(caught.exception.code, 2)
        self.assertIn("step9_mine/run", str(caught.exception))

    def test_full_sizes(self):
        sizes = bench.sweep_sizes()
        self.assertEqual(sizes, sorted(set(sizes)))
        for k in range(10, 29):
            self.assertIn(1 << k, sizes)
        for n in (1000, 100003, 3 * 2**20 + 7, 10**7 + 1, 2**27 + 5, 2**25, 2**28):
            self.assertIn(n, sizes)
        self.assertTrue(all(1 <= n <= 2**31 - 1 for n in sizes))

    def test_quick_sizes(self):
        self.assertEqual(bench.sweep_sizes(quick=True), [1 << 20, 1 << 25])

    def test_gpu_slug(self):
        cases = {"NVIDIA H200": "h200", "NVIDIA GeForce RTX 4090": "geforce-rtx-4090",
                 "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb", "  Tesla V100  ": "tesla-v100",
                 "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada-generation", "": "unknown-gpu"}
        for name, slug in cases.items():
            self.assertEqual(schema.gpu_slug(name), slug, name)

    def test_plans_of_both_parts(self):
        self.add_rows_programs()
        args = bench.parse_args(["--root", self.root, "--quick"])
        [(sum_suffix, sums, roles1, _), (rows_suffix, rows, roles2, ops)] = bench.plans(args)
        self.assertEqual((set(roles1.values()), set(roles2.values()), ops), ({""}, {""}, None))
        self.assertEqual((sum_suffix, rows_suffix), ("", "-rows"))
        self.assertEqual([name for name, _, _ in sums], list(PART1[:2]) +
                         ["step9_singlepass", "step10_c", "baseline_cub"])
        self.assertEqual([name for name, _, _ in rows], list(ROW_PROGRAMS) + ["step9_singlepass"])
        for name, path, runs in rows:
            self.assertEqual(path, os.path.join(self.root, name, "run"))
            args = [run.args() for run in runs]
            if name.startswith("rows/"):
                self.assertEqual(args, [["--rows", str(r), "--cols", str(c)]
                                        for r, c in bench.QUICK_ROW_SHAPES])
            else:
                self.assertEqual(args, [["-n", str(r * c)] for r, c in bench.QUICK_ROW_SHAPES])
        [(suffix, _, _, _)] = bench.plans(bench.parse_args(["--root", self.root, "--part", "sum"]))
        self.assertEqual(suffix, "")


class BenchRunTest(ScriptTest):
    def rounds(self, processes, programs=len(PART1)):
        """The processes of each round: every program once, rounds in turn."""
        return [processes[k:k + programs] for k in range(0, len(processes), programs)]

    def test_quick_runs_every_program_once_per_round(self):
        proc = self.bench("--quick", "--reps", "5", "--warmup", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        processes = self.processes()
        self.assertEqual(len(processes), 3 * len(PART1))
        for k, batch in enumerate(self.rounds(processes), 1):
            self.assertEqual(sorted(step for _, step, _, _, _ in batch), sorted(PART1_LABELS), k)
            for _, step, argv, lines, _ in batch:
                # One process per program and round: every size through --runs.
                self.assertEqual((argv[0], argv[2], len(argv)), ("--runs", "--csv", 4), argv)
                self.assertEqual(sorted(size_of(line) for line in lines),
                                 sorted(str(n) for n in QUICK))
                for line in lines:
                    self.assertEqual(line[2:], ["--reps", "5", "--warmup", "1"] +
                                     (["--no-verify"] if k > 1 else []), (k, step, line))

    def test_rounds_are_processes_in_a_shuffled_seeded_order(self):
        def orders(*args):
            if os.path.exists(self.log):
                os.remove(self.log)
            self.assertEqual(self.bench("--quick", "--rounds", "4", *args).returncode, 0)
            processes = self.processes()
            self.assertEqual(len({pid for pid, _, _, _, _ in processes}), 4 * len(PART1))
            return [tuple(step for _, step, _, _, _ in batch) for batch in self.rounds(processes)]

        first = orders()
        self.assertEqual(len(first), 4)
        for order in first:
            self.assertEqual(sorted(order), sorted(PART1_LABELS))
        self.assertGreater(len(set(first)), 1, first)   # the order changes from round to round
        self.assertEqual(orders("--seed", "1"), first)  # the default seed, and repeatable
        self.assertNotEqual(orders("--seed", "2"), first)

    def test_round_column_in_the_merged_csv(self):
        proc = self.bench("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(self.out, "h200.csv")) as f:
            self.assertEqual(f.readline().strip().split(","), CONTRACT_COLUMNS)
        self.assertEqual(CONTRACT_COLUMNS[-3:], ["round", "run", "role"])
        for column in ("round", "run", "role"):   # the programs do not write them: bench does
            self.assertNotIn(column, HARNESS_COLUMNS)
        rows = self.results()
        self.assertEqual([r["round"] for r in rows], ["1"] * 8 + ["2"] * 8 + ["3"] * 8)
        # One run id in every row of one bench, and every program asked for.
        self.assertEqual(len({r["run"] for r in rows}), 1)
        self.assertRegex(rows[0]["run"], r"^\d{8}T\d{6}Z$")
        self.assertEqual({r["role"] for r in rows}, {""})
        for k, batch in enumerate(self.rounds(self.processes()), 1):
            ran = [step for _, step, _, _, _ in batch]
            filed = [r["step"] for r in rows if r["round"] == str(k)]
            self.assertEqual(filed[::2], ran)   # in the order the programs ran
            self.assertEqual(sorted((r["step"], int(r["n"])) for r in rows if r["round"] == str(k)),
                             sorted((s, n) for s in PART1_LABELS for n in QUICK))
        typed = schema.read_results(os.path.join(self.out, "h200.csv"))
        self.assertEqual({r.round for r in typed}, {1, 2, 3})

    def test_no_verify_on_the_rounds_after_the_first(self):
        proc = self.bench("--quick", "--rounds", "3", FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        wrong = [p for p in self.processes() if p[1] == "step1_b"]
        batches = [p for p in wrong if p[2][0] == "--runs"]
        alone = [p for p in wrong if p[2][0] != "--runs"]
        self.assertEqual([["--no-verify" in line for line in lines]
                          for _, _, _, lines, _ in batches],
                         [[False, False], [True, True], [True, True]])
        # Round 1's checks fail before timing, so no row: each size again alone,
        # with round 1's flags.
        self.assertEqual(sorted(size_of(argv) for _, _, argv, _, _ in alone),
                         sorted(str(n) for n in QUICK))
        for _, _, argv, _, _ in alone:
            self.assertNotIn("--no-verify", argv)
        # Later rounds skip those checks: the timed run's own row, pass = 0.
        rows = [r for r in self.results() if r["step"] == "step1_b"]
        self.assertEqual(sorted((r["round"], r["n"], r["pass"]) for r in rows),
                         sorted((k, str(n), "0") for k in ("2", "3") for n in QUICK))

    def test_progress_lines_come_from_the_csv(self):
        proc = self.bench("--quick")
        progress = [l for l in proc.stdout.splitlines() if l.startswith("[")]
        self.assertEqual(len(progress), 12)
        rows = self.results()
        for line, (_, step, _, _, _) in zip(progress, self.processes()):
            match = re.fullmatch(r"\[round (\d)/3\] (\S+)\s+2 runs  2\^25 (\d+\.\d) us  PASS", line)
            self.assertTrue(match, line)
            self.assertEqual(match.group(2), schema.program_dir(step))
            [row] = [r for r in rows if (r["round"], r["step"], r["n"]) ==
                     (match.group(1), step, str(1 << 25))]
            self.assertEqual(match.group(3), f"{float(row['median_us']):.1f}")
        self.assertRegex(progress[0], r"^\[round 1/3\] \S+ +2 runs")
        self.assertNotIn("== run", proc.stdout)  # the programs' own stdout is not shown
        self.assertNotIn("PASS: exact fills", proc.stdout)

    def test_results_file_named_by_gpu_replaces_old_one(self):
        os.makedirs(self.out)
        for name in ("h200.csv", "a100.csv"):
            with open(os.path.join(self.out, name), "w") as f:
                f.write("old\n")
        proc = self.bench("--quick", FAKE_GPU="NVIDIA H200")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = self.results()
        self.assertEqual(len(rows), 24)
        self.assertEqual(list(rows[0]), CONTRACT_COLUMNS)
        self.assertEqual({r["gpu"] for r in rows}, {"NVIDIA H200"})
        with open(os.path.join(self.out, "a100.csv")) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(sorted(os.listdir(self.out)),  # no temporary file left
                         ["a100.csv", "h200-bench.log", "h200.csv"])
        lines = proc.stdout.splitlines()
        self.assertTrue(lines[-2].startswith("results: ") and lines[-2].endswith("h200.csv"))
        self.assertRegex(lines[-1], r"^bench: 24 runs in 3 rounds \(run \d{8}T\d{6}Z\), \d+\.\d s -> "
                                    r".*h200\.csv$")

    def test_slug_of_consumer_gpu(self):
        proc = self.bench("--quick", FAKE_GPU="NVIDIA GeForce RTX 4090")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["geforce-rtx-4090-bench.log", "geforce-rtx-4090.csv"])

    def test_out_of_memory_is_skipped(self):
        proc = self.bench("--quick", FAKE_OOM_ABOVE=str(1 << 24))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for step in PART1:
            self.assertEqual(proc.stdout.count(f"skip: {step} n=33554432 does not fit in device "
                                               "memory\n"), 3, step)   # once per round
        rows = self.results()
        self.assertEqual(sorted((r["step"], r["n"], r["round"]) for r in rows),
                         sorted((s, "1048576", k) for s in PART1_LABELS for k in "123"))
        self.assertIn("(12 skipped)", proc.stdout.splitlines()[-1])
        self.assertEqual(proc.stderr, "")

    def test_no_device_stops_with_one_line(self):
        proc = self.bench("--quick", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "bench: no CUDA device: ")
        self.assertEqual(line, "bench: no CUDA device: no CUDA-capable device is detected")
        self.assertEqual(proc.stdout, "")
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))
        self.assertEqual(len(self.processes()), 1)  # stopped after the first process

    def test_a_batch_that_dies_is_rerun_size_by_size(self):
        crash = 1 << 20
        proc = self.bench("--rounds", "1", FAKE_CRASH_STEP="step10_c", FAKE_CRASH_N=str(crash))
        self.assertEqual(proc.returncode, 1)
        runs = [p for p in self.processes() if p[1] == "step10_c"]
        [(ran, held)] = [(ran, held) for _, _, argv, ran, held in runs if argv[0] == "--runs"]
        order = [size_of(line) for line in held]
        at = order.index(str(crash))
        self.assertTrue(0 < at < len(order) - 1, order)   # it dies midway
        self.assertEqual([size_of(line) for line in ran], order[:at + 1])
        # The size that killed it and every size after it, each in a process of its own.
        self.assertEqual([size_of(argv) for _, _, argv, _, _ in runs if argv[0] != "--runs"],
                         order[at:])
        failures = [l for l in proc.stderr.splitlines() if " failed" in l]
        self.assertEqual(failures[0], f"bench: step10_c n={crash} failed (exit 3): error: kernel "
                                      "launch: an illegal memory access was encountered "
                                      "(reduce.cu:42)")
        self.assertEqual(len(failures), 2, proc.stderr)   # that one, and the tally
        self.assertIn(f"bench:   command: {os.path.join(self.root, 'step10_c', 'run')} "
                      f"-n {crash} --reps 20 --warmup 3 --csv ", proc.stderr)
        rows = self.results()
        sizes = bench.sweep_sizes()
        self.assertEqual(sorted(int(r["n"]) for r in rows if r["step"] == "step10_c"),
                         [n for n in sizes if n != crash])
        self.assertEqual(len(rows), 4 * len(sizes) - 1)
        self.assertTrue(all(r["pass"] == "1" for r in rows))
        self.assertRegex(proc.stdout.splitlines()[-1],
                         rf"^bench: {4 * len(sizes) - 1} runs \(1 failed\) in 1 round ")

    def test_an_unreadable_csv_is_a_failure_of_that_program(self):
        proc = self.bench("--quick", FAKE_BAD_CSV_STEP="step10_c")
        self.assertEqual(proc.returncode, 1)
        for n in QUICK:
            self.assertEqual(proc.stderr.count(f"bench: step10_c n={n} failed (exit 0): its CSV "
                                               "cannot be read: "), 3, proc.stderr)
        self.assertIn("not UTF-8 text", proc.stderr)
        # The sweep goes on: every other program's rows are filed.
        rows = self.results()
        self.assertEqual(sorted((r["step"], r["n"], r["round"]) for r in rows),
                         sorted((s, str(n), k) for s in PART1_LABELS if s != "step10_c"
                                for n in QUICK for k in "123"))
        self.assertRegex(proc.stdout.splitlines()[-1], r"^bench: 18 runs \(6 failed\) in 3 rounds")

    def test_wrong_result_is_a_failure_but_results_are_kept(self):
        proc = self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        path = os.path.join(self.root, "step1_b", "run")
        for n in QUICK:
            # Round 1: the checks before timing fail (the harness says why on stdout).
            self.assertIn(f"bench: step1_b n={n} failed (exit 1): check -n {n} --offset 0 "
                          f"--fill exact: FAIL: the run gave {n + 7}, not the reference\n",
                          proc.stderr)
            self.assertIn(f"bench:   command: {path} -n {n} --reps 20 --warmup 3 --csv ",
                          proc.stderr)
            for k in (2, 3):
                self.assertIn(f"bench: step1_b n={n} failed its check (round {k}): its row is "
                              "kept with pass = 0", proc.stderr)
        self.assertRegex(proc.stdout, r"\[round 1/3\] step1_b\s+0 runs\s+FAIL\n")
        self.assertRegex(proc.stdout, r"\[round 2/3\] step1_b\s+2 runs  2\^25 \d+\.\d us  FAIL\n")
        self.assertEqual(len(self.results()), 22)
        self.assertRegex(proc.stdout.splitlines()[-1], r"^bench: 22 runs \(6 failed\) in 3 rounds")

    def test_log_holds_everything_printed(self):
        proc = self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        with open(os.path.join(self.out, "h200-bench.log")) as f:
            log = f.read().splitlines()
        self.assertEqual(log[0], f"$ bench.py --root {self.root} --out-dir {self.out} --quick")
        for line in proc.stdout.splitlines() + proc.stderr.splitlines():
            self.assertIn(line, log)
        self.assertRegex(log[-1], r"^bench: 22 runs \(6 failed\) in 3 rounds")
        self.assertIn("bench: 6 runs failed (see above); rows of wrong results are kept, "
                      "with pass = 0", log)

    def test_failed_rows_stay_in_the_csv(self):
        self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        rows = schema.read_results(os.path.join(self.out, "h200.csv"))
        self.assertEqual([(r.step, r.pass_, r.round) for r in rows if not r.passed],
                         [("step1_b", 0, 2)] * 2 + [("step1_b", 0, 3)] * 2)
        self.assertEqual(len(rows), 22)

    def test_record_path_names_the_results_file(self):
        record = os.path.join(self.top, "where.txt")
        self.assertEqual(self.bench("--quick", "--record-path", record).returncode, 0)
        with open(record) as f:
            self.assertEqual(f.read(), os.path.join(self.out, "h200.csv") + "\n")

    def test_mixed_gpus_is_an_error(self):
        proc = self.bench("--quick", FAKE_ALT_GPU_STEP="step10_c")
        self.assertEqual(proc.returncode, 1)
        line = self.assert_one_line(proc.stderr, "bench: rows from several GPUs")
        self.assertIn("NVIDIA A100-SXM4-80GB", line)
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))   # nothing written

    def test_missing_binary_asks_for_make(self):
        os.remove(os.path.join(self.root, "step1_b", "run"))
        open(os.path.join(self.root, "step1_b", "reduce.cu"), "w").close()
        proc = self.bench("--quick")
        self.assertEqual(proc.returncode, 2)
        line = self.assert_one_line(proc.stderr, "bench: not built: step1_b/run")
        self.assertIn("make", line)
        self.assertFalse(os.path.exists(self.log))


class BenchRowsTest(ScriptTest):
    """Part 2: rows/*/run over shapes, beside step 9 summing each shape as one array."""

    def setUp(self):
        super().setUp()
        self.add_rows_programs()

    def test_both_parts_write_their_files(self):
        record = os.path.join(self.top, "where.txt")
        proc = self.bench("--quick", "--record-path", record)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["h200-bench.log", "h200-rows.csv", "h200.csv"])
        with open(record) as f:
            self.assertEqual(f.read().splitlines(), [os.path.join(self.out, "h200.csv"),
                                                     os.path.join(self.out, "h200-rows.csv")])
        part1 = self.results()
        self.assertEqual({r["step"] for r in part1}, set(PART1_LABELS) | {"step9_singlepass"})
        self.assertEqual({(r["n"], r["rows"], r["cols"], r["op"]) for r in part1},
                         {(str(n), "", "", "") for n in QUICK})
        self.assertEqual(len(part1), 3 * 5 * 2)
        rows = self.results("h200-rows.csv")
        with open(os.path.join(self.out, "h200-rows.csv")) as f:
            self.assertEqual(f.readline().strip().split(","), CONTRACT_COLUMNS)
        shapes = sorted(bench.QUICK_ROW_SHAPES)
        for label in ROW_LABELS:
            mine = [r for r in rows if r["step"] == label]
            for k in "123":
                got = sorted((int(r["rows"]), int(r["cols"])) for r in mine if r["round"] == k)
                self.assertEqual(got, shapes, (label, k))
            for r in mine:
                rr, cc = int(r["rows"]), int(r["cols"])
                self.assertEqual((r["op"], int(r["n"]), float(r["bytes"]), r["pass"]),
                                 (ROW_OPS[label], rr * cc, row_bytes(ROW_OPS[label], rr, cc), "1"))
        ones = [r for r in rows if r["step"] == "step9_singlepass"]
        self.assertEqual(sorted((r["round"], int(r["n"])) for r in ones),
                         sorted((k, r * c) for k in "123" for r, c in shapes))
        self.assertEqual({(r["rows"], r["cols"], r["op"]) for r in ones}, {("", "", "")})
        self.assertEqual(len(rows), 3 * (len(ROW_LABELS) + 1) * len(shapes))
        # Row programs get shapes, step 9 (in part 2's process) the same floats as -n.
        for _, step, _, lines, _ in self.processes():
            sizes = sorted(size_of(line) for line in lines)
            if step.startswith("rows/"):
                self.assertEqual(sizes, sorted(f"{r}x{c}" for r, c in shapes))
                self.assertTrue(all("-n" not in line for line in lines))
        one_array = [sorted(int(size_of(line)) for line in lines)
                     for _, step, _, lines, _ in self.processes() if step == "step9_singlepass"]
        self.assertEqual(one_array, [sorted(QUICK)] * 3 + [sorted(r * c for r, c in shapes)] * 3)
        progress = [l for l in proc.stdout.splitlines() if l.startswith("[round 1/3] rows/")]
        self.assertEqual(len(progress), len(ROW_LABELS))
        self.assertRegex(proc.stdout, r"\[round 1/3\] rows/step0_thread\s+2 runs  "
                                      r"32768x1024 \d+\.\d us  PASS\n")
        self.assertRegex(proc.stdout.splitlines()[-1],
                         rf"^bench: {len(part1) + len(rows)} runs in 3 rounds \(run \d{{8}}T\d{{6}}Z\), "
                         r"\d+\.\d s -> "
                         r"\S*h200\.csv, \S*h200-rows\.csv$")

    def test_one_array_rows_once_per_size(self):
        # Four of the shapes hold 2^25 floats: step 9 sums 2^25 once per round.
        proc = self.bench("--part", "rows", "--rounds", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-rows-bench.log", "h200-rows.csv"])
        sizes = sorted({r * c for r, c in bench.ROW_SHAPES})
        self.assertLess(len(sizes), len(bench.ROW_SHAPES))
        rows = self.results("h200-rows.csv")
        for k in "12":
            self.assertEqual(sorted(int(r["n"]) for r in rows
                                    if r["step"] == "step9_singlepass" and r["round"] == k), sizes)
            for label in ROW_LABELS:
                self.assertEqual(sorted((int(r["rows"]), int(r["cols"])) for r in rows
                                        if r["step"] == label and r["round"] == k),
                                 sorted(bench.ROW_SHAPES))
        for _, step, _, lines, _ in self.processes():
            if step == "step9_singlepass":
                self.assertEqual(sorted(int(size_of(line)) for line in lines), sizes)

    def test_part_selection(self):
        proc = self.bench("--quick", "--part", "sum")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-bench.log", "h200.csv"])
        self.assertNotIn("PyTorch", proc.stdout)
        self.assertFalse(any(step.startswith("rows/") for _, step, _, _, _ in self.processes()))
        shutil.rmtree(os.path.join(self.root, "rows"))
        proc = self.bench("--quick", "--part", "rows")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, f"bench: no part 2 programs under {self.root}/rows; "
                                          "run `make` first")

    def test_part_2_needs_step_9_built(self):
        os.remove(os.path.join(self.root, "step9_singlepass", "run"))
        proc = self.bench("--quick", "--part", "rows")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "bench: not built: step9_singlepass/run")

    def test_torch_is_left_out_with_one_line(self):
        proc = self.bench("--quick", "--part", "rows")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stdout.splitlines() if "torch" in l.lower()],
                         ["bench: no --torch-python: PyTorch is left out of part 2"])
        python = python_without_torch(self.top)
        os.remove(self.log)
        proc = self.bench("--quick", "--part", "rows", "--torch-python", python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stdout.splitlines() if "torch" in l.lower()],
                         [f"bench: {python} cannot run torch on a GPU (exit 1): PyTorch is left "
                          "out of part 2"])
        self.assertEqual(proc.stderr, "")
        rows = self.results("h200-rows.csv")
        self.assertFalse([r for r in rows if r["step"].startswith("torch/")])
        self.assertEqual(len(rows), 3 * (len(ROW_LABELS) + 1) * len(bench.QUICK_ROW_SHAPES))
        with open(os.path.join(self.out, "h200-rows-bench.log")) as f:
            self.assertIn(f"bench: {python} cannot run torch on a GPU (exit 1): PyTorch is left "
                          "out of part 2", f.read().splitlines())

    def test_torch_rows_join_part_2_in_every_round(self):
        python = make_torch_python(self.top)
        proc = self.bench("--quick", "--part", "rows", "--torch-python", python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("PyTorch is left out", proc.stdout)
        torch = [(pid, argv) for pid, step, argv, _, _ in self.processes() if step == "torch"]
        self.assertEqual(torch[0][1][0], "-c")   # the probe first, then once per round
        shapes = ",".join(f"{r}x{c}" for r, c in bench.QUICK_ROW_SHAPES)
        for k, (_, argv) in enumerate(torch[1:], 1):
            self.assertEqual(argv[0], os.path.join(REPO, "tools", "torch_rows.py"))
            self.assertEqual(argv[3:], ["--shapes", shapes, "--ops", ",".join(TORCH_OPS),
                                        "--reps", "20", "--warmup", "3", "--round", str(k)])
        self.assertEqual(len(torch), 4)
        rows = [r for r in self.results("h200-rows.csv") if r["step"].startswith("torch/")]
        self.assertEqual(sorted((r["round"], r["step"], r["rows"], r["cols"]) for r in rows),
                         sorted((k, "torch/" + op, str(r), str(c)) for k in "123"
                                for op in TORCH_OPS for r, c in bench.QUICK_ROW_SHAPES))
        # The compiled ops keep the op's own name in the op column.
        self.assertEqual({r["op"] for r in rows if r["step"].startswith("torch/compiled/")},
                         {"sum", "layernorm", "softmax"})
        self.assertEqual(len([l for l in proc.stdout.splitlines()
                              if re.match(r"\[round \d/3\] torch +14 runs .* PASS$", l)]), 3)


class BenchOnlyTest(ScriptTest):
    """--only: the programs named and what their ratios are read against, in
    one run, merged into the files; --round and --run-id: one run over calls."""

    # Run ids are UTC times: later runs sort after earlier ones.
    A, B, C, D, R2, S = ("20260101T000001Z", "20260101T000002Z", "20260101T000003Z",
                         "20260101T000004Z", "20260101T000005Z", "20260101T000006Z")
    OPS = {"rows/step0_thread": "SUM", "rows/step5_layernorm": "LAYERNORM",
           "rows/baseline_copy": "COPY", "rows/baseline_cub": "SUM"}

    def setUp(self):
        super().setUp()
        self.add_rows_programs()
        # What each program computes, as its rows.cu says it (bench.row_program_op).
        for name, op in self.OPS.items():
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"// {name}\nconst enum row_op step_op = ROW_{op};\n")
        self.python = make_torch_python(self.top)

    def ran(self):
        return sorted({step for _, step, _, _, _ in self.processes() if step != "torch"})

    def test_comparisons_of_each_part(self):
        self.assertEqual(bench.comparisons(self.root, "step10_c"),
                         (["step9_singlepass", "step0_a", "baseline_cub"], []))
        self.assertEqual(bench.comparisons(self.root, "step0_a"), (["baseline_cub"], []))
        self.assertEqual(bench.comparisons(self.root, "rows/step5_layernorm"),
                         (["rows/step0_thread", "rows/baseline_copy"],
                          ["layernorm", "compiled/layernorm"]))
        self.assertEqual(bench.comparisons(self.root, "rows/step0_thread"),
                         (["step9_singlepass", "rows/baseline_cub"], ["sum", "compiled/sum"]))
        self.assertEqual(bench.comparisons(self.root, "rows/baseline_copy"), ([], ["copy"]))
        # A bfloat16 step: its float twin and the bfloat16 copy.
        make_root(self.top, ("rows/step7_bf16_layernorm", "rows/baseline_copy16"))
        for name, text in (("rows/step7_bf16_layernorm", "LAYERNORM;\nconst enum row_dtype "
                            "step_dtype = ROW_BF16"), ("rows/baseline_copy16", "COPY")):
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{text};\n")
        self.assertEqual(bench.comparisons(self.root, "rows/step7_bf16_layernorm"),
                         (["rows/step5_layernorm", "rows/baseline_copy16"],
                          ["layernorm_bf16", "compiled/layernorm_bf16"]))

    def test_the_step_before_is_the_same_ops(self):
        """A step is read beside the nearest lower step of its op (step 13, a
        LayerNorm after a bfloat16 step, beside step 5 here); a bfloat16
        step's lesson is its diff against its float twin."""
        make_root(self.top, ("rows/step6_bf16_layernorm", "rows/step7_layernorm_aligned",
                             "rows/step8_bf16_layernorm_aligned", "rows/baseline_copy16"))
        for name, text in (("rows/step6_bf16_layernorm", "LAYERNORM;\nconst enum row_dtype "
                            "step_dtype = ROW_BF16"), ("rows/step7_layernorm_aligned", "LAYERNORM"),
                           ("rows/step8_bf16_layernorm_aligned", "LAYERNORM;\nconst enum "
                            "row_dtype step_dtype = ROW_BF16"), ("rows/baseline_copy16", "COPY")):
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{text};\n")
        prev, base = bench.previous_step, bench.diff_base
        self.assertEqual(prev(self.root, "rows/step7_layernorm_aligned"), "rows/step5_layernorm")
        self.assertEqual(base(self.root, "rows/step7_layernorm_aligned"), "rows/step5_layernorm")
        self.assertEqual(prev(self.root, "rows/step8_bf16_layernorm_aligned"),
                         "rows/step6_bf16_layernorm")
        self.assertEqual(base(self.root, "rows/step8_bf16_layernorm_aligned"),
                         "rows/step7_layernorm_aligned")
        # The first bfloat16 LayerNorm: no earlier one, so the nearest lower step.
        self.assertEqual(prev(self.root, "rows/step6_bf16_layernorm"), "rows/step5_layernorm")
        self.assertEqual(base(self.root, "rows/step6_bf16_layernorm"), "rows/step5_layernorm")
        self.assertIsNone(prev(self.root, "rows/baseline_copy16"))
        self.assertEqual(bench.comparisons(self.root, "rows/step7_layernorm_aligned")[0],
                         ["rows/step5_layernorm", "rows/baseline_copy"])
        self.assertEqual(bench.comparisons(self.root, "rows/step8_bf16_layernorm_aligned")[0],
                         ["rows/step6_bf16_layernorm", "rows/step7_layernorm_aligned",
                          "rows/baseline_copy16"])

    def test_only_runs_the_named_and_their_comparisons_in_one_run(self):
        proc = self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.R2,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.ran(), ["rows/copy", "rows/step0_thread",
                                      "rows/step5_layernorm"])
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-rows-bench.log", "h200-rows.csv"])
        rows = self.results("h200-rows.csv")
        self.assertEqual({r["run"] for r in rows}, {self.R2})
        roles = {r["step"]: r["role"] for r in rows}
        self.assertEqual(roles, {"rows/step5_layernorm": "", "rows/step0_thread": "compared",
                                 "rows/copy": "compared", "torch/layernorm": "compared",
                                 "torch/compiled/layernorm": "compared"})
        self.assertIn("(compared)", proc.stdout)
        # Round 1's exact checks: the program asked for makes them, the ones
        # it is compared with do not (their timed runs are still verified).
        checked = {}
        for _, step, _, lines, _ in self.processes():
            if step != "torch":
                checked[step] = checked.get(step, False) or any("--no-verify" not in l
                                                                for l in lines)
        self.assertEqual(checked, {"rows/step5_layernorm": True, "rows/step0_thread": False,
                                   "rows/copy": False})
        self.assertRegex(proc.stdout.splitlines()[-1],
                         r"^bench: \d+ runs in 3 rounds, only rows/step5_layernorm and what it is "
                         r"compared with \(run " + self.R2 + r"\)")

    def test_merge_keeps_other_runs_and_drops_dead_ones(self):
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A,
                                    "--torch-python", self.python).returncode, 0)
        full = self.results("h200-rows.csv")
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.B,
                                    "--torch-python", self.python).returncode, 0)
        rows = self.results("h200-rows.csv")
        # Run A is whole (every other program's figures, and step 5's old rows
        # for what reads them); run B beside it.
        self.assertEqual([r for r in rows if r["run"] == self.A], full)
        self.assertEqual({r["step"] for r in rows if r["run"] == self.B},
                         {"rows/step5_layernorm", "rows/step0_thread", "rows/copy",
                          "torch/layernorm", "torch/compiled/layernorm"})
        # Step 5 again: run B holds nobody's figures any more and goes.
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.C,
                                    "--torch-python", self.python).returncode, 0)
        self.assertEqual(sorted({r["run"] for r in self.results("h200-rows.csv")}), [self.A, self.C])
        # Every program named: run A goes too.
        self.assertEqual(self.bench("--quick", "--only", "rows", "--run-id", self.D,
                                    "--torch-python", self.python).returncode, 0)
        rows = self.results("h200-rows.csv")
        self.assertEqual({r["run"] for r in rows}, {self.D})
        self.assertEqual({r["role"] for r in rows}, {""})
        with open(os.path.join(self.out, "h200-rows-bench.log")) as f:
            log = f.read()
        self.assertEqual(log.count("$ bench.py"), 4)   # every run's lines, the earlier first

    def test_figures_and_ratios_come_from_one_run(self):
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A).returncode, 0)
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id",
                                    self.B).returncode, 0, )
        path = os.path.join(self.out, "h200-rows.csv")
        rows = schema.read_results(path)
        # Make run B's copy slower, so that a ratio across runs would show.
        rows = [r if not (r.step == "rows/copy" and r.run == self.B)
                else r.__class__(**{**r.__dict__, "median_us": r.median_us * 2,
                                    "gbps": r.gbps / 2}) for r in rows]
        import compare
        m = compare.RowMeasurements(path, rows)
        shape = (32768, 1024)
        self.assertEqual(m.current["rows/step5_layernorm"], self.B)
        self.assertEqual(m.current["rows/copy"], self.A)
        self.assertEqual(m.get("rows/copy", shape).run, self.A)
        self.assertEqual(m.within("rows/step5_layernorm").get("rows/copy", shape).run, self.B)
        self.assertEqual(m.within("rows/step0_thread").get("rows/copy", shape).run, self.A)
        self.assertEqual(m.previous("rows/step5_layernorm"), "rows/step0_thread")

    def test_a_run_over_calls(self):
        for k in "12":
            proc = self.bench("--quick", "--part", "rows", "--rounds", "2", "--round", k,
                              "--run-id", self.S)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn(f"in round {k} of 2", proc.stdout.splitlines()[-1])
        rows = self.results("h200-rows.csv")
        self.assertEqual(sorted({r["round"] for r in rows}), ["1", "2"])
        count = len(rows)
        # A call again takes the place of its own rows only.
        self.assertEqual(self.bench("--quick", "--part", "rows", "--rounds", "2", "--round", "2",
                                    "--run-id", self.S).returncode, 0)
        self.assertEqual(len(self.results("h200-rows.csv")), count)
        # Round 1 makes the exact checks; round 2 does not.
        checked = [l for _, step, _, lines, _ in self.processes() for l in lines
                   if "--no-verify" not in l]
        self.assertTrue(checked)

    def test_step_9_named_is_timed_in_both_files(self):
        # Part 2's row sums read step 9 on one array: naming it re-times those rows too.
        proc = self.bench("--quick", "--only", "step9_singlepass", "--run-id", self.A)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = self.results("h200-rows.csv")
        self.assertEqual({(r["step"], r["role"]) for r in rows}, {("step9_singlepass", "")})

    def test_a_failed_run_does_not_take_a_programs_figures(self):
        # bench and tools/compare.py agree: a run whose rows all failed is no
        # program's current run, and the run before it stays.
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A).returncode, 0)
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id",
                                    self.B).returncode, 0)
        proc = self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.C,
                          FAKE_WRONG_STEP="rows/step5_layernorm")
        self.assertEqual(proc.returncode, 1)
        rows = self.results("h200-rows.csv")
        self.assertEqual(sorted({r["run"] for r in rows}), [self.A, self.B, self.C])
        import compare
        m = compare.RowMeasurements.load(os.path.join(self.out, "h200-rows.csv"))
        self.assertEqual(m.current["rows/step5_layernorm"], self.B)

    def test_run_ids_are_times_and_one_id_is_one_plan(self):
        proc = self.bench("--quick", "--only", "rows/step0_thread", "--run-id", "verify-a")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("a UTC time such as 20261202T052253Z", proc.stderr)
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id",
                                    self.A, "--rounds", "2", "--round", "1").returncode, 0)
        proc = self.bench("--quick", "--only", "rows/step0_thread", "--run-id", self.A,
                          "--rounds", "2", "--round", "2")
        self.assertEqual(proc.returncode, 2)
        self.assertIn(f"--run-id {self.A} already holds a run of other programs", proc.stderr)

    def test_a_deleted_program_and_torch_alone_keep_no_run(self):
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A,
                                    "--torch-python", self.python).returncode, 0)
        shutil.rmtree(os.path.join(self.root, "rows", "step5_layernorm"))
        # Every program named again, without PyTorch: run A holds nothing of ours.
        self.assertEqual(self.bench("--quick", "--only", "rows", "--run-id", self.B).returncode, 0)
        rows = self.results("h200-rows.csv")
        self.assertEqual({r["run"] for r in rows}, {self.B})
        self.assertNotIn("rows/step5_layernorm", {r["step"] for r in rows})

    def test_only_refuses_what_is_not_a_program(self):
        proc = self.bench("--quick", "--only", "rows/step99_none")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "bench: --only: no program rows/step99_none")
        proc = self.bench("--quick", "--rounds", "2", "--round", "3")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--round 3 is past --rounds 2", proc.stderr)

    def test_only_accepts_labels_and_parts(self):
        self.assertEqual(bench.resolve_only(self.root, ["rows/copy", "cub", "step1_b"]),
                         ["rows/baseline_copy", "baseline_cub", "step1_b"])
        self.assertEqual(bench.resolve_only(self.root, ["sum"]), bench.program_dirs(self.root))


class VerifyTest(ScriptTest):
    """tools/verify.py (make verify): profile and bench of the programs named
    on the fakes (the grader has its own tests), this run's files apart, the
    rows merged, a table last."""

    def test_verify_one_part_2_program(self):
        self.add_rows_programs()
        for name, op in BenchOnlyTest.OPS.items():
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{op};\n")
        bindir = make_ncu(self.top)
        python = make_torch_python(self.top)
        verify_dir = os.path.join(self.top, "verify")
        proc = self.run_script(os.path.join(REPO, "tools", "verify.py"),
                               ["--root", self.root, "--only", "rows/step5_layernorm",
                                "--out-dir", self.out, "--verify-dir", verify_dir,
                                "--torch-python", python, "--skip", "grade"],
                               PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                               FAKE_NCU_LOG=os.path.join(self.top, "ncu.log"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(sorted(os.listdir(verify_dir)),
                         ["bench.log", "h200-rows-bench.log", "h200-rows-profile.csv",
                          "h200-rows.csv", "profile-rows-32768x1024.log", "summary.json",
                          "summary.txt"])
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["h200-rows-bench.log", "h200-rows-profile.csv", "h200-rows.csv"])
        lines = proc.stdout.splitlines()
        self.assertEqual(lines[-1], "verify: PASS: graded, profiled and timed")
        self.assertIn("rows/step5_layernorm: shape, median us, GB/s, share of its bar, "
                      "vs previous, vs PyTorch, vs torch.compile", lines)
        self.assertTrue(any(re.match(r"  32768 x 1024 \| [\d.]+ \| \d+ \| \d+% \| — \| "
                                     r"[\d.]+x (win|tie|loss) \| [\d.]+x (win|tie|loss)$", l)
                            for l in lines), lines)
        # The make targets it needs: the programs, and the grader's twin.
        proc = self.run_script(os.path.join(REPO, "tools", "verify.py"),
                               ["--root", self.root, "--only", "rows/step5_layernorm",
                                "--targets"])
        self.assertEqual(proc.stdout.split(),
                         ["rows/step5_layernorm/run", "rows/step0_thread/run",
                          "rows/baseline_copy/run", "step9_singlepass/run",
                          "build/monitored/rows/step5_layernorm/run"])


# ---------------------------------------------------------------- profile

def ncu_output(kernel=STEP_KERNEL):
    """What ncu --csv --page raw prints for one kernel, with its log lines around it."""
    names = sorted(NCU_SAMPLE)
    out = io.StringIO()
    out.write("==PROF== Connected to process 4242 (/x/step1_b/run)\nstep1_b: n=1024 ok\n")
    out.write('==PROF== Profiling "reduce_kernel" - 0: 0%....50%....100% - 9 passes\n')
    out.write("==PROF== Disconnected from process 4242\n")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name"] + names)
    writer.writerow([""] * 5 + [NCU_SAMPLE[m][0] for m in names])
    writer.writerow(["0", "4242", "run", "host", kernel] + [NCU_SAMPLE[m][1] for m in names])
    return out.getvalue()


class ProfileUnitTest(ScriptTest):
    def test_parse_raw_page(self):
        [(kernel, metrics)] = profile.parse_ncu_raw(ncu_output())
        self.assertEqual(kernel, "reduce_kernel<256>")
        values = {m: (v, u) for m, v, u in metrics}
        self.assertEqual([m for m, _, _ in metrics], list(profile.METRICS))
        self.assertAlmostEqual(values["gpu__time_duration.sum"][0], 176420.0)
        self.assertEqual(values["gpu__time_duration.sum"][1], "ns")
        self.assertEqual(values["smsp__inst_executed.sum"], (1234567.0, "inst"))
        self.assertAlmostEqual(values["dram__bytes_read.sum"][0], 134.22e6)
        self.assertEqual(values["launch__shared_mem_per_block_static"][1], "byte/block")
        self.assertEqual(values["launch__grid_size"], (131072.0, ""))

    def test_parse_without_csv_is_empty(self):
        self.assertEqual(profile.parse_ncu_raw("==WARNING== No kernels were profiled.\n"), [])

    def test_short_kernel_names(self):
        self.assertEqual(profile.short_kernel(STEP_KERNEL), "reduce_kernel<256>")
        self.assertEqual(profile.short_kernel("reduce_kernel"), "reduce_kernel")
        self.assertTrue(profile.short_kernel(CUB_KERNEL).endswith("float>"))

    def test_units(self):
        self.assertEqual(profile.to_base_unit(2.0, "msecond"), (2e6, "ns"))
        self.assertEqual(profile.to_base_unit(3.0, "Gbyte"), (3e9, "byte"))
        self.assertEqual(profile.to_base_unit(1.0, "Kibyte"), (1024.0, "byte"))
        self.assertEqual(profile.to_base_unit(50.0, "%"), (50.0, "%"))

    def test_rejected_metric_picks_the_whole_name(self):
        line = r"==ERROR== Failed to find metric regex:^smsp__inst_executed_op_shared_ld\.(sum)$"
        self.assertEqual(profile.rejected_metric(line), "smsp__inst_executed_op_shared_ld.sum")

    def test_select_step(self):
        self.assertEqual(profile.select_programs(self.root, "1"), ["step1_b"])
        self.assertEqual(profile.select_programs(self.root, "10"), ["step10_c"])
        self.assertEqual(profile.select_programs(self.root, "cub"), ["baseline_cub"])
        self.assertEqual(profile.select_programs(self.root, "step0_a"), ["step0_a"])
        with self.assertRaises(profile.ProfileError) as caught:
            profile.select_programs(self.root, "7")
        self.assertEqual(caught.exception.code, 2)

    def test_select_row_program(self):
        self.add_rows_programs()
        self.assertEqual(profile.select_programs(self.root, "0", rows=True), ["rows/step0_thread"])
        self.assertEqual(profile.select_programs(self.root, "rows/5", rows=True),
                         ["rows/step5_layernorm"])
        self.assertEqual(profile.select_programs(self.root, "cub", rows=True),
                         ["rows/baseline_cub"])
        self.assertEqual(profile.select_programs(self.root, "rows/copy", rows=True),
                         ["rows/baseline_copy"])
        self.assertEqual(profile.select_programs(self.root, None, rows=True), list(ROW_PROGRAMS))
        self.assertEqual([profile.profile_label(n) for n in ROW_PROGRAMS], list(ROW_LABELS))
        self.assertEqual({profile.kernel_regex(n) for n in ROW_PROGRAMS}, {profile.ROW_KERNEL_RE})
        for kernel in ROW_KERNELS.values():
            self.assertRegex(kernel.split("(")[0], profile.ROW_KERNEL_RE)
        self.assertNotRegex(STEP_KERNEL, profile.ROW_KERNEL_RE)

    def test_version_line_with_and_without_the_build_tail(self):
        for line in (f"step3_idle code_hash=0123456789ab git_rev=abc1234 arch=sm_75 sm_80 sm_90 "
                     f"toolchain={FAKE_TOOLCHAIN}",
                     "rows/cub code_hash=0123456789ab git_rev=abc1234-dirty arch=sm_90 "
                     "toolchain=nvcc 12.4.131 CCCL 2.3.2",
                     "step3_idle code_hash=0123456789ab git_rev=abc1234"):
            match = profile.VERSION_RE.match(line)
            self.assertTrue(match, line)
            self.assertEqual(match.group(2), "0123456789ab")
            self.assertIn(match.group(3), ("abc1234", "abc1234-dirty"))
        self.assertIsNone(profile.VERSION_RE.match("step3_idle code_hash=0123 git_rev=abc"))

    def test_ncu_fallback_picks_newest(self):
        for version in ("2023.1.0", "2025.3.1", "2024.10.0"):
            write_executable(os.path.join(self.top, "opt", version, "ncu"), "#!/bin/sh\n")
        pattern = os.path.join(self.top, "opt", "*", "ncu")
        with mock.patch.dict(os.environ, {"PATH": self.top}):
            found = profile.find_ncu([os.path.join(self.top, "nowhere"), pattern])
        self.assertEqual(found, os.path.join(self.top, "opt", "2025.3.1", "ncu"))

    def test_summary_table_fits_100_columns(self):
        [(kernel, metrics)] = profile.parse_ncu_raw(ncu_output())
        labels = ["step0_naive", "step10_a_long_student_name", "cub"]
        table = profile.summary_table([(label, kernel, metrics) for label in labels])
        self.assertTrue(all(len(line) <= 100 for line in table.splitlines()), table)
        cells = table.splitlines()[1].split()
        # time_us, warp_inst, thr/inst, on/inst (24,691,340 / 1,234,567 lanes), bank_ld
        self.assertEqual(cells[1:6], ["176", "1.23M", "31.9", "20", "12.3k"])
        self.assertEqual(cells[-1], "1020")  # static + dynamic shared memory

    def test_compact_numbers(self):
        cases = {None: "-", 0.0: "0", 9999.0: "9999", 12345.0: "12.3k", 45.25: "45.2",
                 1234.5: "1234", 2.5e9: "2.5G"}
        for value, text in cases.items():
            self.assertEqual(profile.compact(value), text, value)


class ProfileRunTest(ScriptTest):
    def setUp(self):
        super().setUp()
        self.bindir = make_ncu(self.top)
        self.ncu_log = os.path.join(self.top, "ncu.log")

    def profile(self, *args, **env):
        env.setdefault("PATH", self.bindir + os.pathsep + os.environ.get("PATH", ""))
        return self.run_script(PROFILE, ["--root", self.root] + list(args),
                               FAKE_NCU_LOG=self.ncu_log, **env)

    def test_step_prints_metric_table(self):
        proc = self.profile("--step", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("step1_b: reduce_kernel<256>", proc.stdout)
        self.assertRegex(proc.stdout, r"smsp__inst_executed\.sum\s+1,234,567  inst")
        with open(self.ncu_log) as f:
            argv = f.read().split()
        self.assertEqual(argv[:9], ["--clock-control", "none", "--target-processes", "all",
                                    "--kernel-name", "regex:reduce_kernel", "--launch-count", "1",
                                    "--csv"])
        self.assertEqual(argv[-3:], ["--check", "-n", "33554432"])
        self.assertEqual(argv[argv.index("--metrics") + 1].split(","), list(profile.METRICS))

    def test_all_writes_long_csv(self):
        out = os.path.join(self.top, "prof", "{gpu}.csv")
        proc = self.profile("--all", "--csv", out, "-n", "1048576")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = os.path.join(self.top, "prof", "h200.csv")
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        with open(path) as f:
            self.assertEqual(f.readline().strip(),
                             "step,kernel,metric,value,unit,gpu,git_rev,code_hash")
        self.assertEqual(len(rows), 4 * len(profile.METRICS))
        self.assertEqual([r["step"] for r in rows[::len(profile.METRICS)]],
                         ["step0_a", "step1_b", "step10_c", "cub"])
        first = rows[0]
        self.assertEqual((first["kernel"], first["metric"], first["value"], first["unit"]),
                         ("reduce_kernel<256>", "gpu__time_duration.sum", "176420", "ns"))
        # The GPU from the program's CSV row; revision and hash from its --version.
        self.assertEqual((first["gpu"], first["git_rev"], first["code_hash"]),
                         ("NVIDIA H200", "vstep0", fake_hash("step0_a")))
        self.assertEqual({r["code_hash"] for r in rows if r["step"] == "cub"}, {fake_hash("cub")})
        self.assertEqual({r["step"]: r["code_hash"] for r in rows},
                         {s: fake_hash(s) for s in ("step0_a", "step1_b", "step10_c", "cub")})
        cub = [r for r in rows if r["step"] == "cub"]
        self.assertTrue(cub[0]["kernel"].endswith("DeviceReduceKernel<cub::detail::reduce::"
                                                  "Policy900, const float *, int, "
                                                  "cuda::std::plus<void>, float>"))
        with open(self.ncu_log) as f:
            calls = f.read().splitlines()
        self.assertIn("regex:DeviceReduceKernel", calls[-1])
        self.assertTrue(all("-n 1048576" in call for call in calls))
        table = proc.stdout.splitlines()
        self.assertTrue(table[0].startswith("step ") and "time_us" in table[0])
        self.assertEqual([line.split()[0] for line in table[1:5]],
                         ["step0_a", "step1_b", "step10_c", "cub"])

    def test_out_dir_names_file_after_gpu(self):
        out = os.path.join(self.top, "results")
        proc = self.profile("--step", "cub", "--out-dir", out, FAKE_GPU="NVIDIA H200")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(out), ["h200-profile.csv"])
        with open(os.path.join(out, "h200-profile.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({r["step"] for r in rows}, {"cub"})
        self.assertEqual(len(rows), len(profile.METRICS))

    def test_old_build_without_version(self):
        proc = self.profile("--all", "--csv", os.path.join(self.top, "p.csv"), FAKE_NO_VERSION="1")
        self.assertEqual(proc.returncode, 2)
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertIn("step0_a/run --version did not print", line)
        self.assertIn("rebuild it with make", line)
        self.assertFalse(os.path.exists(self.ncu_log))  # stopped before running ncu
        # Without --csv no hash is needed: one step still profiles.
        self.assertEqual(self.profile("--step", "1", FAKE_NO_VERSION="1").returncode, 0)

    def test_counters_not_permitted(self):
        proc = self.profile("--step", "0", FAKE_NCU_MODE="perm")
        self.assertEqual(proc.returncode, 5)
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertIn("ERR_NVGPUCTRPERM", line)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", line)

    def test_unknown_metric(self):
        proc = self.profile("--step", "0", FAKE_NCU_MODE="badmetric")
        self.assertEqual(proc.returncode, 4)
        line = self.assert_one_line(proc.stderr, "profile: ncu rejected metric ")
        self.assertIn("smsp__inst_executed_op_shared_ld.sum", line)

    def test_silently_dropped_metric(self):
        proc = self.profile("--step", "0", FAKE_NCU_MODE="dropmetric")
        self.assertEqual(proc.returncode, 4)
        line = self.assert_one_line(proc.stderr, "profile: ncu did not report metric ")
        self.assertIn("launch__grid_size", line)

    def test_no_kernel_profiled(self):
        proc = self.profile("--step", "cub", FAKE_NCU_MODE="nokernel")
        self.assertEqual(proc.returncode, 4)
        self.assert_one_line(proc.stderr, "profile: baseline_cub: No kernels were profiled.")

    def test_no_device_under_ncu(self):
        proc = self.profile("--step", "10", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "profile: no CUDA device: ")
        self.assertEqual(line, "profile: no CUDA device: no CUDA-capable device is detected")

    def test_no_device_in_gpu_probe(self):
        proc = self.profile("--all", "--csv", os.path.join(self.top, "p.csv"), FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "profile: no CUDA device: ")
        self.assertEqual(line, "profile: no CUDA device: no CUDA-capable device is detected")
        self.assertFalse(os.path.exists(self.ncu_log))  # stopped before running ncu

    def test_ncu_not_found(self):
        empty = os.path.join(self.top, "empty")
        os.makedirs(empty)
        proc = self.profile("--step", "0", PATH=empty, REDUCE_NCU_PATHS="")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertEqual(line, "profile: ncu (Nsight Compute) not found; "
                               "install it or add it to PATH")

    def test_rows_profile_of_every_part_2_program(self):
        self.add_rows_programs()
        out = os.path.join(self.top, "results")
        proc = self.profile("--all", "--rows", "--out-dir", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(out), ["h200-rows-profile.csv"])
        rows = schema.load_profile(os.path.join(out, "h200-rows-profile.csv"))
        self.assertEqual(len(rows), len(ROW_PROGRAMS) * len(profile.METRICS))
        self.assertEqual([r.step for r in rows[::len(profile.METRICS)]], list(ROW_LABELS))
        self.assertEqual({r.step: (r.code_hash, r.git_rev) for r in rows},
                         {label: (fake_hash(label), "v" + os.path.basename(name)[:5])
                          for name, label in zip(ROW_PROGRAMS, ROW_LABELS)})
        self.assertEqual([r.kernel for r in rows[::len(profile.METRICS)]],
                         ["row_sum_kernel<256>", "layernorm_kernel<256>", "copy_kernel",
                          ROW_KERNELS["cub"].split("(")[0][len("void "):]])
        self.assertEqual({r.gpu for r in rows}, {"NVIDIA H200"})
        with open(self.ncu_log) as f:
            calls = [line.split() for line in f]
        self.assertEqual(len(calls), len(ROW_PROGRAMS))
        for call in calls:
            self.assertEqual(call[call.index("--kernel-name") + 1],
                             "regex:" + profile.ROW_KERNEL_RE)
            self.assertEqual(call[-5:], ["--check", "--rows", "32768", "--cols", "1024"])
        table = proc.stdout.splitlines()
        self.assertEqual([line.split()[0] for line in table[1:5]], list(ROW_LABELS))
        # The probe for the GPU's name ran a tiny shape without checks.
        [(_, step, argv, _, _)] = [p for p in self.processes() if "--no-verify" in p[2]]
        self.assertEqual((step, size_of(argv)), ("rows/step0_thread", "4x256"))

    def test_only_profiles_the_named_and_the_step_before_and_merges(self):
        self.add_rows_programs()
        full, mine = os.path.join(self.top, "full"), os.path.join(self.top, "mine")
        self.assertEqual(self.profile("--all", "--rows", "--out-dir", full).returncode, 0)
        before = schema.load_profile(os.path.join(full, "h200-rows-profile.csv"))
        os.remove(self.ncu_log)
        proc = self.profile("--only", "rows/step5_layernorm", "--rows", "--shape", "8192x4097",
                            "--out-dir", mine, "--merge-into", full)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # This profile alone under --out-dir, at its shape's own file name.
        self.assertEqual(os.listdir(mine), ["h200-rows-profile-8192x4097.csv"])
        alone = schema.load_profile(os.path.join(mine, "h200-rows-profile-8192x4097.csv"))
        self.assertEqual(sorted({r.step for r in alone}),
                         ["rows/step0_thread", "rows/step5_layernorm"])
        self.assertEqual(sorted(os.listdir(full)), ["h200-rows-profile-8192x4097.csv",
                                                    "h200-rows-profile.csv"])
        # Merged into the default shape's file too? No: each shape its file.
        self.assertEqual(schema.load_profile(os.path.join(full, "h200-rows-profile.csv")), before)
        proc = self.profile("--only", "rows/step5_layernorm", "--rows", "--out-dir", mine,
                            "--merge-into", full)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        merged = schema.load_profile(os.path.join(full, "h200-rows-profile.csv"))
        self.assertEqual(sorted({r.step for r in merged}), sorted(ROW_LABELS))
        self.assertEqual(len(merged), len(before))
        # A part 1 profile of part 2's names: nothing to do, said in one line.
        proc = self.profile("--only", "rows/step5_layernorm", "--out-dir", mine)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("names no part 1 program", proc.stdout)

    def test_rows_step_and_shape(self):
        self.add_rows_programs()
        proc = self.profile("--step", "rows/cub", "--shape", "256x4096")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("rows/cub: cub::CUB_300000_SM_900::detail::reduce::"
                      "DeviceSegmentedReduceKernel<", proc.stdout)
        with open(self.ncu_log) as f:
            argv = f.read().split()
        self.assertEqual(argv[-5:], ["--check", "--rows", "256", "--cols", "4096"])
        self.assertEqual(argv[-6], os.path.join(self.root, "rows", "baseline_cub", "run"))
        # Part 1's step of the same number is another program.
        self.assertEqual(self.profile("--step", "0").returncode, 0)
        with open(self.ncu_log) as f:
            self.assertEqual(f.read().splitlines()[-1].split()[-3:], ["--check", "-n", "33554432"])

    def test_unbuilt_step(self):
        os.remove(os.path.join(self.root, "step10_c", "run"))
        open(os.path.join(self.root, "step10_c", "reduce.cu"), "w").close()
        proc = self.profile("--step", "10")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "profile: not built: step10_c/run")
        self.assertEqual(self.profile("--step", "1").returncode, 0)  # others still profile


# ------------------------------------------------------------ make targets

def plot_python():
    """A Python that imports matplotlib (PLOT_PYTHON, else this one), or None."""
    for python in (os.environ.get("PLOT_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import matplotlib"],
                                     capture_output=True).returncode == 0:
            return python
    return None


PLOT_PYTHON = plot_python()
needs_matplotlib = unittest.skipUnless(PLOT_PYTHON, "no matplotlib: no Python with it (PLOT_PYTHON)")
# The font of the Chinese charts (tools/chart_zh.py), pinned beside matplotlib.
PLOT_FONT = bool(PLOT_PYTHON) and subprocess.run(
    [PLOT_PYTHON, "-c", "import pylopdf_fonts_zh_cn"], capture_output=True).returncode == 0

README = "# Demo\n\n<!-- BEGIN results -->\nkept as it is\n<!-- END results -->\n"


def scratch_makefile(root):
    """The Makefile and the scripts in root, as in the repository; no sources,
    so make builds nothing (PROGRAMS= for the fake programs' directories)."""
    shutil.copy(os.path.join(REPO, "Makefile"), root)
    os.makedirs(os.path.join(root, "tools"), exist_ok=True)
    for name in os.listdir(os.path.join(REPO, "tools")):
        if name.endswith((".py", ".sh")) or name == "requirements.txt":
            shutil.copy(os.path.join(REPO, "tools", name), os.path.join(root, "tools"))
    # The Makefile reads its list of mutants when it starts; no mutant here.
    os.makedirs(os.path.join(root, "tests", "broken"), exist_ok=True)
    open(os.path.join(root, "tests", "broken", "mutants.txt"), "w").close()


class MakeTargetTest(ScriptTest):
    """make bench and make profile-all in a scratch copy of the Makefile and the
    scripts, with the fake programs of both parts as the program directories
    (PROGRAMS= keeps make from building anything). The GPU check that every
    measuring target makes first (tools/need_gpu.sh) asks fake nvidia-smi and
    ldconfig, first on PATH, and PyTorch is a Python without torch."""

    def setUp(self):
        super().setUp()
        make_root(self.top, ("step9_singlepass",) + ROW_PROGRAMS)
        scratch_makefile(self.root)
        self.readme = os.path.join(self.root, "README.md")
        with open(self.readme, "w") as f:
            f.write(README)
        self.env_log = os.path.join(self.top, "env.log")
        self.gpu_bin = fake_gpu_tools(os.path.join(self.top, "gpu-bin"))
        self.no_torch = python_without_torch(self.top)

    def make(self, *args, plot_python=None, gpu_bin=None, **env):
        cmd = ["make", "--no-print-directory", *args, "PROGRAMS=", "BENCH_FLAGS=--quick",
               f"TORCH_PYTHON={self.no_torch}",
               f"PLOT_PYTHON={plot_python or PLOT_PYTHON or sys.executable}"]
        path = env.pop("PATH", os.environ.get("PATH", ""))
        environment = clean_env(FAKE_LOG=self.log, FAKE_ENV_LOG=self.env_log,
                                PATH=(gpu_bin or self.gpu_bin) + os.pathsep + path, **env)
        environment.pop("CUDA_VISIBLE_DEVICES", None)
        environment.pop("OUT_DIR", None)
        return subprocess.run(cmd, cwd=self.root, capture_output=True, text=True,
                              env=environment, timeout=300)

    def file(self, *parts):
        return os.path.join(self.root, *parts)

    def assert_readme_untouched(self):
        with open(self.readme) as f:
            self.assertEqual(f.read(), README)

    @needs_matplotlib
    def test_bench_writes_out_dir_and_never_touches_readmes(self):
        proc = self.make("bench", "OUT_DIR=scratch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        charts = ["h200-progression", "h200-rows-layernorm", "h200-rows-progression",
                  "h200-rows-sum", "h200-sweep", "h200-vs-cub"]
        # Each chart with its Chinese twin where the font is there, else one line says why.
        twins = [f"{chart}.zh-CN.png" for chart in charts] if PLOT_FONT else []
        if not PLOT_FONT:
            self.assertIn("chart_zh: pylopdf_fonts_zh_cn is not installed", proc.stderr)
        self.assertEqual(sorted(os.listdir(self.file("scratch"))),
                         sorted(["h200-bench.log", "h200-rows.csv", "h200.csv"]
                                + [f"{chart}.png" for chart in charts] + twins))
        self.assertIn("plot.py: wrote " + self.file("scratch", "h200-sweep.png"), proc.stdout)
        self.assertIn(f"bench: {self.no_torch} cannot run torch on a GPU", proc.stdout)
        self.assertEqual(len(read_log(self.log)), 3 * (5 + len(ROW_PROGRAMS) + 1))
        self.assertFalse(os.path.exists(self.file("plots", "results")))
        self.assert_readme_untouched()

    @needs_matplotlib
    def test_bench_failure_fails_make_but_keeps_log_rows_and_charts_in_plots_results(self):
        # No OUT_DIR: the default, plots/results.
        proc = self.make("bench", FAKE_WRONG_STEP="step1_b")
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("bench: 6 runs failed (see above)", proc.stderr)
        for name in ("h200.csv", "h200-rows.csv", "h200-sweep.png", "h200-bench.log"):
            self.assertTrue(os.path.isfile(self.file("plots", "results", name)), name)
        with open(self.file("plots", "results", "h200-bench.log")) as f:
            log = f.read()
        self.assertIn("bench: step1_b n=1048576 failed (exit 1): check -n 1048576", log)
        rows = schema.read_results(self.file("plots", "results", "h200.csv"))
        self.assertEqual(len(rows), 3 * 5 * 2 - 2)
        self.assertEqual(sum(1 for r in rows if not r.passed), 4)
        # Drawn all the same, and without the failed rows (the plot says so).
        self.assertIn("plot.py: h200.csv: left out 4 of 28 rows: 4 failed", proc.stderr)
        # Part 2's file gets part 2's three charts, never part 1's.
        self.assertTrue(os.path.isfile(self.file("plots", "results", "h200-rows-progression.png")))
        self.assertFalse(os.path.exists(self.file("plots", "results", "h200-rows-sweep.png")))
        self.assert_readme_untouched()

    def fake_plot_python(self):
        """A PLOT_PYTHON that only writes its arguments down, one call a line."""
        calls = os.path.join(self.top, "plot-calls.log")
        fake = os.path.join(self.top, "fake-plot-python")
        write_executable(fake, f'#!/bin/sh\necho "$*" >> "{calls}"\n')
        return fake, calls

    def test_bench_asks_for_the_chinese_twins(self):
        # Whatever this machine's matplotlib and font: each chart call says --chinese.
        fake, calls = self.fake_plot_python()
        proc = self.make("bench", "OUT_DIR=scratch", plot_python=fake)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(calls) as f:
            lines = f.read().splitlines()
        self.assertEqual([line.split(" --results ")[-1] for line in lines],
                         ["scratch/h200.csv", "scratch/h200-rows.csv"])
        for line in lines:
            self.assertTrue(line.startswith("tools/plot.py --chinese "), line)

    def publish_run(self):
        """A finished run in plots/results and an older reference, both the fixture
        GPU's ("Test GPU": test-gpu.csv)."""
        reference, results = self.file("plots", "reference"), self.file("plots", "results")
        os.makedirs(reference)
        os.makedirs(results)
        fixture = os.path.join(REPO, "tests", "plots", "fixture.csv")
        with open(fixture) as f:
            lines = f.read().splitlines(keepends=True)
        with open(os.path.join(reference, "test-gpu.csv"), "w") as f:
            f.writelines(lines[:-1])       # an older run: one row fewer, same programs
        shutil.copy(fixture, os.path.join(results, "test-gpu.csv"))
        shutil.copy(os.path.join(REPO, "tests", "plots", "fixture-profile.csv"),
                    os.path.join(results, "test-gpu-profile.csv"))
        with open(os.path.join(results, "test-gpu-bench.log"), "w") as f:
            f.write("bench: done\n")
        return reference, results

    @needs_matplotlib
    def test_publish_copies_the_run_and_draws_the_references_charts(self):
        reference, results = self.publish_run()
        proc = self.make("publish")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for name in ("test-gpu.csv", "test-gpu-profile.csv", "test-gpu-bench.log"):
            with open(os.path.join(reference, name)) as a, open(os.path.join(results, name)) as b:
                self.assertEqual(a.read(), b.read(), name)
        self.assertIn("publish: 3 of 3 files of test-gpu changed", proc.stdout)
        charts = ["test-gpu-profile", "test-gpu-progression", "test-gpu-sweep", "test-gpu-vs-cub"]
        twins = [f"{chart}.zh-CN.png" for chart in charts] if PLOT_FONT else []
        self.assertEqual(sorted(os.listdir(reference)),
                         sorted(["test-gpu.csv", "test-gpu-profile.csv", "test-gpu-bench.log"]
                                + [f"{chart}.png" for chart in charts] + twins))
        self.assert_readme_untouched()

    @staticmethod
    def folder_text(folder):
        texts = {}
        for name in os.listdir(folder):
            with open(os.path.join(folder, name)) as f:
                texts[name] = f.read()
        return texts

    def test_publish_refuses_in_one_line_and_leaves_the_reference(self):
        reference, results = self.publish_run()
        fake, calls = self.fake_plot_python()
        before = self.folder_text(reference)
        for args, words in ((["OUT_DIR=plots/empty"], "nothing to publish"),
                            (["OUT_DIR=plots/reference"], "the reference itself")):
            os.makedirs(self.file("plots", "empty"), exist_ok=True)
            proc = self.make("publish", *args, plot_python=fake)
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            errors = [line for line in proc.stderr.splitlines() if line.startswith("publish: ")]
            self.assertEqual(len(errors), 1, proc.stderr)
            self.assertIn(words, errors[0])
        self.assertEqual(self.folder_text(reference), before)
        self.assertFalse(os.path.exists(calls))   # no chart drawn either

    def test_bench_fails_when_drawing_fails(self):
        # bench.py succeeds, plot.py cannot import matplotlib: make must fail.
        fake = os.path.join(self.top, "fake", "matplotlib")
        os.makedirs(fake)
        with open(os.path.join(fake, "__init__.py"), "w") as f:
            f.write("raise ImportError('simulated missing matplotlib')\n")
        proc = self.make("bench", "OUT_DIR=scratch", plot_python=sys.executable,
                         PYTHONPATH=os.path.dirname(fake))
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("matplotlib is not installed", proc.stderr)
        self.assertTrue(os.path.isfile(self.file("scratch", "h200.csv")))

    def test_without_a_gpu_measuring_targets_stop_with_one_line(self):
        no_gpu = fake_gpu_tools(os.path.join(self.top, "no-gpu-bin"), gpu=False)
        for target in ("bench", "profile-all"):
            proc = self.make(target, "OUT_DIR=scratch", gpu_bin=no_gpu)
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            # make's own error line (the gpu-check prerequisite's $(error)), and nothing else.
            out = proc.stdout + proc.stderr
            self.assertRegex(out, rf"^Makefile:\d+: \*\*\* make {target}: needs a CUDA GPU and "
                                  r"this machine has none \((nvidia-smi lists no GPU|no NVIDIA "
                                  r"driver, libcuda\.so\.1 not found)\); make help lists what works without "
                                  r"one\.  Stop\.$")
            self.assertEqual(len(out.splitlines()), 1, out)
            self.assertFalse(os.path.exists(self.log))   # nothing ran
            self.assertFalse(os.path.exists(self.file("scratch")))

    @needs_matplotlib
    def test_plot_draws_charts_diagrams_and_accuracy_chart_but_no_readme(self):
        reference = self.file("plots", "reference")
        os.makedirs(reference)
        for source, name in (("plots/fixture.csv", "gpu.csv"),
                             ("plots/fixture-profile.csv", "gpu-profile.csv"),
                             ("accuracy/fixture-accuracy.csv", "gpu-accuracy.csv")):
            shutil.copy(os.path.join(REPO, "tests", *source.split("/")),
                        os.path.join(reference, name))
        step = "step2_bankconflict"   # a step with an access-pattern model
        os.makedirs(self.file(step))
        shutil.copy(os.path.join(REPO, step, "reduce.cu"), self.file(step))
        step_readme = "# Step 2\n\n<!-- BEGIN figures -->\nstale\n<!-- END figures -->\n"
        with open(self.file(step, "README.md"), "w") as f:
            f.write(step_readme)
        proc = self.make("plot", "RESULTS=plots/reference/gpu.csv")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        charts = ["gpu-accuracy", "gpu-profile", "gpu-progression", "gpu-sweep", "gpu-vs-cub"]
        twins = [f"{chart}.zh-CN.png" for chart in charts] if PLOT_FONT else []
        self.assertEqual(sorted(os.listdir(reference)),
                         sorted(["gpu-accuracy.csv", "gpu-profile.csv", "gpu.csv"]
                                + [f"{chart}.png" for chart in charts] + twins))
        self.assertNotIn("no Chinese form", proc.stdout + proc.stderr)
        self.assertEqual(sorted(os.listdir(self.file("plots", "diagrams"))),
                         [f"{step}-banks.png", f"{step}-lanes.png"])
        self.assert_readme_untouched()
        with open(self.file(step, "README.md")) as f:
            self.assertEqual(f.read(), step_readme)   # make docs fills it, not make plot

    def profile_all(self, *args):
        bindir = make_ncu(self.top)
        return self.make("profile-all", *args,
                         PATH=bindir + os.pathsep + os.environ.get("PATH", ""))

    def test_profile_all_writes_out_dir_for_both_parts_and_device_selects_the_gpu(self):
        proc = self.profile_all("OUT_DIR=prof", "DEVICE=3")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(sorted(os.listdir(self.file("prof"))),
                         ["h200-profile.csv", "h200-rows-profile.csv"])
        rows = schema.load_profile(self.file("prof", "h200-profile.csv"))
        self.assertEqual({r.code_hash for r in rows if r.step == "step10_c"},
                         {fake_hash("step10_c")})
        self.assertEqual({r.step for r in rows}, set(PART1_LABELS) | {"step9_singlepass"})
        rows = schema.load_profile(self.file("prof", "h200-rows-profile.csv"))
        self.assertEqual({r.step for r in rows}, set(ROW_LABELS))
        self.assert_readme_untouched()
        # DEVICE=3 reaches every program as CUDA_VISIBLE_DEVICES; without it, nothing does.
        with open(self.env_log) as f:
            seen = [line.split() for line in f]
        self.assertEqual({step for step, _ in seen}, set(PART1_LABELS) | {"step9_singlepass"} |
                         set(ROW_LABELS))
        self.assertEqual({env for _, env in seen}, {"CUDA_VISIBLE_DEVICES=3"})
        os.remove(self.env_log)
        self.assertEqual(self.profile_all("OUT_DIR=prof").returncode, 0)
        with open(self.env_log) as f:
            self.assertEqual({line.split()[1] for line in f}, {"CUDA_VISIBLE_DEVICES=-"})

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from counting import run_module
    sys.exit(run_module("scripts", verbosity=1))
