"""What the script tests share, so that no test module carries its own copy:
fake step programs (executables that stand in for stepN_*/run,
baseline_cub/run and rows/*/run on a machine without a GPU; each test module
writes its own program text), what those fakes must imitate, read from the
harness's own sources (the CSV header, the --gpu-info keys, the --version
fields, the options), stand-ins for the GPU tools that tools/need_gpu.sh
asks (nvidia-smi, ldconfig) and for a Python without torch, and the fixture
results file tests/plots/fixture.csv."""
import csv
import io
import os
import re
import sys

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
    """Bytes a part 2 run must move: row_bytes() in common/rows_ref.c."""
    matrix = 4.0 * rows * cols
    return {"sum": matrix + 4.0 * rows, "layernorm": 2 * matrix + 8.0 * rows + 8.0 * cols,
            "softmax": 2 * matrix, "copy": 2 * matrix}[op]


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
    write_executable(path, f'#!/bin/sh\nPYTHONPATH="{shadow}" exec "{sys.executable}" "$@"\n')
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
