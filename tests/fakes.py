"""What the script tests share, so that no test module carries its own copy:
fake step programs (executables that stand in for stepN_*/run,
baseline_cub/run and rows/*/run on a machine without a GPU), what those fakes
must imitate, read from the harness's own sources (the CSV header, the
--gpu-info keys, the --version fields, the options), stand-ins for the GPU
tools that tools/need_gpu.sh asks (nvidia-smi, ldconfig) and for a Python
without torch, and the fixture results file tests/plots/fixture.csv.

The fakes of tools/bench.py, tools/profile.py and tools/verify.py's tests
(test_bench.py, test_profile.py, test_verify.py, test_make_targets.py, and
test_fakes.py, which holds them to the harness) are here whole, with
ScriptTest, their shared set-up: the step program of both parts
(FAKE_PROGRAM), ncu (FAKE_NCU) and a Python that runs torch (FAKE_TORCH_PYTHON).
The accuracy suite writes its own program text."""
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

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
sys.path.insert(0, os.path.join(REPO, "tools"))
import schema  # noqa: E402

FIXTURE_RESULTS = os.path.join(TESTS, "plots", "fixture.csv")

# What a fake program says it was built with, as common/device.c words it.
FAKE_ARCH = "sm_90"
FAKE_TOOLCHAIN = "nvcc 13.0.88 CCCL 3.0.1"


# ------------------------------------------------- the harness, from its sources

def _read(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as f:
        return f.read()


def _c_strings(text):
    """The C string literals in text, joined: "a" "b" -> ab (escapes kept as written)."""
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text))


def harness_columns():
    """The header every program writes: CSV_HEADER in common/harness.h."""
    match = re.search(r"#define CSV_HEADER\s*\\\n((?:.*\\\n)*.*\n)", _read("common", "harness.h"))
    return tuple(_c_strings(match.group(1)).split(","))


HARNESS_COLUMNS = harness_columns()


def gpu_info_keys():
    """The keys --gpu-info prints, in order (print_gpu_info in common/device.c)."""
    body = _read("common", "device.c").split("void print_gpu_info(")[1].split("\n}")[0]
    return re.findall(r"(?:^|\\n)([a-z0-9_]+)=", _c_strings(body.split("printf(", 1)[1]))


def version_fields():
    """The key=value fields of --version after the name (print_version in common/device.c)."""
    body = _read("common", "device.c").split("void print_version(")[1].split("\n}")[0]
    return re.findall(r" ([a-z_]+)=%s", _c_strings(body))


def harness_options():
    """{option: takes a value} for every option print_usage (common/harness.c)
    lists, either part's: `--reps R` takes one, `--check` does not. A line may
    name two (`-h, --help`, `--gamma-offset K, --beta-offset K`)."""
    body = _read("common", "harness.c").split("void print_usage(")[1].split("\n}")[0]
    found = re.findall(r"(?:^|\\n)  (--?[a-z][a-z-]*)( [A-Z]+)?(?:, (--[a-z-]+)( [A-Z]+)?)?",
                       _c_strings(body))
    options = {}
    for first, value, second, second_value in found:
        options[first] = bool(value)
        if second:
            options[second] = bool(second_value)
    return options


def row_bytes(op, rows, cols):
    """Bytes a part 2 run must move: row_bytes() in common/rows_ref.c; and a
    part 3 one's: back_bytes(), softmax_back_bytes() and back_copy3_bytes()
    in common/back_ref.c (x and dy read and dx written, plus gamma, dgamma
    and dbeta, mean and rstd; softmax's y and dy read and dx written, and
    the copy, the three streams alone)."""
    matrix = 4.0 * rows * cols
    return {"sum": matrix + 4.0 * rows, "layernorm": 2 * matrix + 8.0 * rows + 8.0 * cols,
            "softmax": 2 * matrix, "copy": 2 * matrix,
            "layernorm_backward": 3 * matrix + 12.0 * cols + 8.0 * rows,
            "softmax_backward": 3 * matrix, "copy3": 3 * matrix,
            # part 3 in bfloat16: x (y), dy and dx 2 bytes an element
            "layernorm_backward_bf16": 1.5 * matrix + 12.0 * cols + 8.0 * rows,
            "softmax_backward_bf16": 1.5 * matrix, "copy3_bf16": 1.5 * matrix}[op]


# ------------------------------------------------------------- fake programs

def write_executable(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def fake_repo(top, programs, text):
    """TOP/root with PROGRAM/run = text for each program directory (rows/step0_x
    and extras/kahan_step8 are directories too); returns the root."""
    root = os.path.join(top, "root")
    for name in programs:
        write_executable(os.path.join(root, name, "run"), text)
    return root


# The GPU tools that tools/need_gpu.sh asks, as a machine with one H200
# answers them (gpu=True) or as a machine without a GPU does. Put first on
# PATH, they let `make bench`, `make profile-all` and `make accuracy` run the
# fake programs on a machine without a GPU, and they make the no-GPU answer
# the same on a machine with one. need_gpu.sh itself is not changed.
FAKE_NVIDIA_SMI = """#!/bin/sh
# nvidia-smi of a machine with {what} (tests/fakes.py)
case "$*" in
    *-L*) {list} ;;
    *compute_cap*) {cap} ;;
    *) echo "fake nvidia-smi" ;;
esac
"""
FAKE_LDCONFIG = """#!/bin/sh
# ldconfig -p of a machine with {what} (tests/fakes.py)
echo "{count} libs found in cache \\`/etc/ld.so.cache'"
{libcuda}
printf '\\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\\n'
"""


def fake_gpu_tools(bindir, gpu=True):
    """nvidia-smi and ldconfig in bindir; returns bindir (put it first on PATH)."""
    if gpu:
        what = "one GPU"
        smi = dict(list='echo "GPU 0: NVIDIA H200 (UUID: GPU-0000-0000)"', cap='echo "9.0"')
        libcuda, count = ("printf '\\tlibcuda.so.1 (libc6,x86-64) => "
                          "/usr/lib/x86_64-linux-gnu/libcuda.so.1\\n'"), 2
    else:
        what = "no GPU"
        smi = dict(list='echo "No devices were found"; exit 6',
                   cap='echo "No devices were found"; exit 6')
        libcuda, count = "", 1
    write_executable(os.path.join(bindir, "nvidia-smi"), FAKE_NVIDIA_SMI.format(what=what, **smi))
    write_executable(os.path.join(bindir, "ldconfig"),
                     FAKE_LDCONFIG.format(what=what, count=count, libcuda=libcuda))
    return bindir


def python_without_torch(top):
    """A Python that cannot import torch, whatever this machine has installed:
    this interpreter with a `torch` package first on its path that fails to
    import, as where torch is missing. Returns its path."""
    shadow = os.path.join(top, "no-torch")
    os.makedirs(os.path.join(shadow, "torch"), exist_ok=True)
    with open(os.path.join(shadow, "torch", "__init__.py"), "w") as f:
        f.write("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    path = os.path.join(top, "bin-no-torch", "python3")
    # -S: what it runs (bench.py's probe, tools/torch_rows.py) needs the
    # standard library only, and site's start-up hooks cost more than the run.
    write_executable(path, f'#!/bin/sh\nPYTHONPATH="{shadow}" exec "{sys.executable}" -S "$@"\n')
    return path


# ------------------------------------------------------------ fixture results

def fixture_rows():
    """The fixture results file's rows, as dicts of text."""
    with open(FIXTURE_RESULTS, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fixture_row(step, n):
    return [r for r in fixture_rows() if r["step"] == step and int(r["n"]) == n][-1]


def csv_text(rows):
    """Rows (dicts) as a results file in the schema's column order."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=schema.RESULT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


# ------------------------------- bench, profile and verify: the scripts' fakes

BENCH = os.path.join(REPO, "tools", "bench.py")
PROFILE = os.path.join(REPO, "tools", "profile.py")


def load(path, name):
    """Import a script as a module (profile.py would clash with the stdlib's profile)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# tools/bench.py as a module: ScriptTest reads the results files with its read_rows.
bench = load(BENCH, "reduce_bench")


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
# What each part 2 program computes, as its rows.cu says it (the line
# bench.row_program_op reads: const enum row_op step_op = ROW_<op>;).
ROW_STEP_OPS = {"rows/step0_thread": "SUM", "rows/step5_layernorm": "LAYERNORM",
                "rows/baseline_copy": "COPY", "rows/baseline_cub": "SUM"}
# Part 3 (back/): two steps and the copy of three streams, with what each
# computes as its back.cu says it (const enum back_op step_op = BACK_<op>;)
# and the op its rows name.
BACK_PROGRAMS = ("back/step0_thread", "back/step1_warp", "back/baseline_copy3")
BACK_LABELS = ("back/step0_thread", "back/step1_warp", "back/copy3")
BACK_STEP_OPS = {"back/step0_thread": "LAYERNORM", "back/step1_warp": "LAYERNORM",
                 "back/baseline_copy3": "COPY3"}
BACK_OPS = {"back/step0_thread": "layernorm_backward", "back/step1_warp": "layernorm_backward",
            "back/copy3": "copy3"}
# Softmax's backward pass (issue 42): a step of its own, added where a test
# asks for it (its back.cu says BACK_SOFTMAX; the fake names its rows' op
# from its folder, as part 2's fakes do).
BACK_SOFTMAX_PROGRAM, BACK_SOFTMAX_STEP_OP = "back/step10_softmax", "SOFTMAX"
# Part 3 in bfloat16: a softmax backward step, a LayerNorm one and their bar,
# the bfloat16 copy (each back.cu says BACK_BF16 too), added where a test asks.
BACK_BF16_PROGRAMS = {"back/step15_bf16_softmax": "SOFTMAX", "back/step16_bf16_layernorm":
                      "LAYERNORM", "back/baseline_copy3_bf16": "COPY3"}
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
# gets "step CUDA_VISIBLE_DEVICES=...", FAKE_OMP_LOG "pid OMP_NUM_THREADS=...".
FAKE_PROGRAM = r'''#!@PYTHON@
import csv, hashlib, os, sys

COLUMNS = @COLUMNS@
HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.basename(HERE)
# Part 2 (rows/) or part 3 (back/, common/back_driver.c: part 2's options).
PART = os.path.basename(os.path.dirname(HERE))
BACK = PART == "back"
ROWS = PART == "rows" or BACK
NAME = (PART + "/" if ROWS else "") + DIR.removeprefix("baseline_")
# A part 3 folder with bf16 in its name is bfloat16 (back/baseline_copy3_bf16's op copy3_bf16).
OP = ("copy3" if DIR.startswith("baseline_copy3") else "softmax_backward" if "softmax" in DIR
      else "layernorm_backward") + ("_bf16" if "bf16" in DIR else "") if BACK else \
     ("copy" if DIR == "baseline_copy" else "add_rmsnorm" if "add_rmsnorm" in DIR
      else "rmsnorm" if "rmsnorm" in DIR else "layernorm" if "layernorm" in DIR
      else "softmax" if "softmax" in DIR else "sum") if ROWS else ""
SWITCHES = {"--check", "--no-verify", "--no-flush", "--same-input", "--gpu-info", "--version", "-h",
            "--help"}
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
    # FAKE_CHANGED_STEP: this program's code is not the one built before
    changed = "+changed" if os.environ.get("FAKE_CHANGED_STEP") == NAME else ""
    return hashlib.sha256((NAME + changed).encode()).hexdigest()[:12]


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
                  "softmax": 8.0 * n, "copy": 8.0 * n,
                  "layernorm_backward": 12.0 * n + 12.0 * cols + 8.0 * rows,
                  "softmax_backward": 12.0 * n, "copy3": 12.0 * n,
                  "layernorm_backward_bf16": 6.0 * n + 12.0 * cols + 8.0 * rows,
                  "softmax_backward_bf16": 6.0 * n, "copy3_bf16": 6.0 * n}[OP]
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
        o["switches"] |= base["switches"] & {"--no-verify", "--no-flush", "--cpu-sums", "--same-input"}
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
    if os.environ.get("FAKE_OMP_LOG"):
        with open(os.environ["FAKE_OMP_LOG"], "a") as f:
            f.write(f"{os.getpid()} OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}\n")
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
# torch/<op>, the schema's columns, the round it is given, the bytes by
# torch_rows.py's own row_bytes()), without torch; an op torch_rows.py does
# not know is refused as it refuses it (one line, exit 2).
FAKE_TORCH_PYTHON = r'''#!@PYTHON@
import argparse, csv, os, sys

COLUMNS = @COLUMNS@
sys.path.insert(0, @TOOLS@)
from torch_rows import OPS, row_bytes
if os.environ.get("FAKE_LOG"):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(" ".join([str(os.getpid()), "torch"] + sys.argv[1:]) + "\n")
if sys.argv[1] == "-c":
    sys.exit(0)
parser = argparse.ArgumentParser()
for flag in ("--csv", "--shapes", "--ops", "--reps", "--warmup", "--round"):
    parser.add_argument(flag, required=True)
args = parser.parse_args(sys.argv[2:])
if any(op.removeprefix("compiled/") not in OPS for op in args.ops.split(",")):
    print("torch_rows: error: ops are " + ", ".join(OPS), file=sys.stderr)
    sys.exit(2)
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
                             "bytes": f"{row_bytes(op.removeprefix('compiled/'), rows, cols):.0f}",
                             "peak_gbps": "0", "l2_mb": "62.9", "sms": "132", "flush": "1",
                             "offset": "0", "fill": "random", "seed": "1", "git_rev": "abc1234",
                             "mode": "timed", "round": args.round,
                             "toolchain": "torch 2.9.0 CUDA 13.0"})
if os.environ.get("FAKE_TORCH_LATE"):
    print(f"torch_rows: {os.environ['FAKE_TORCH_LATE']} repetitions made again with a longer "
          "wait: the host queued the op after the GPU's wait had ended", file=sys.stderr)
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
    write_executable(path, fill(FAKE_TORCH_PYTHON, COLUMNS=list(schema.RESULT_COLUMNS),
                                TOOLS=os.path.join(REPO, "tools")))
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
