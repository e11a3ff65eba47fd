"""The results and profile CSV files, the step names, the GPU slug and the
size labels: the one module that every script and test reads them through.

A results file holds one row per program run, written by the programs
themselves (`--csv FILE`, common/README.md); a profile file holds one row per
(step, metric) from tools/profile.py. Files written before the code_hash
columns existed still load: a column missing from the header reads as empty.
"""
import csv
import io
import math
import os
import re
import sys
from dataclasses import dataclass

# ------------------------------------------------------------------ steps

STEP_DIR_RE = re.compile(r"^step(\d+)_(.+)$")
# The card whose files in plots/reference the pages and charts are drawn from
# (h200.csv, h200-rows.csv, ...); files of other cards sit beside them.
REFERENCE_GPU = "h200"
CUB_DIR = "baseline_cub"   # the library baseline's directory ...
CUB = "cub"                # ... and its `step` value in every CSV

# The programs this repository ships. Tests about committed results and doc
# claims cover these only, so a student's `make new` step never breaks them.
SHIPPED = ("step0_naive", "step1_divergence", "step2_bankconflict", "step3_idle",
           "step4_warp", "step5_unroll", "step6_multi", "step7_shfl", "step8_vector",
           "step9_singlepass", CUB)


# Part 2's programs are named by their folder under rows/: rows/step3_vector,
# and the baselines rows/copy, rows/copy16 and rows/cub (rows/baseline_copy, ...).
ROWS = "rows/"
ROW_BASELINES = ("rows/copy", "rows/copy16", "rows/cub")
SHIPPED_ROWS = ("rows/step0_thread", "rows/step1_block", "rows/step2_warp", "rows/step3_vector",
                "rows/step4_group", "rows/step5_layernorm", "rows/step6_registers",
                "rows/step7_wide", "rows/step8_softmax", "rows/step9_online",
                "rows/step10_aligned", "rows/step11_bf16", "rows/step12_bf16_layernorm",
                "rows/step13_layernorm_aligned", "rows/step14_bf16_layernorm_aligned",
                "rows/step15_cluster", "rows/step16_bf16_cluster",
                "rows/step17_layernorm_cluster", "rows/step18_bf16_layernorm_cluster",
                "rows/step19_rmsnorm", "rows/step20_bf16_rmsnorm",
                "rows/step21_bf16_add_rmsnorm", "rows/step22_welford",
                "rows/step23_bf16_bulk", "rows/step24_bf16_narrow",
                "rows/step25_bf16_packed", "rows/step26_bf16_push") + ROW_BASELINES
# Part 3's (back/, measured into a results file of its own, outside the
# shipped lists that the docs generator reads): named
# as part 2's, back/step0_thread, and its bar back/copy3 (back/baseline_copy3);
# back/copy3_bf16 (back/baseline_copy3_bf16) is the bfloat16 steps' bar.
BACK = "back/"
BACK_BASELINES = ("back/copy3", "back/copy3_bf16")
# The folder prefixes of the parts after the first, and their baselines' labels.
PARTS = (ROWS, BACK)
BASELINE_LABELS = ROW_BASELINES + BACK_BASELINES


def part_prefix(name):
    """"rows/" or "back/" for a name of part 2 or 3, "" for part 1's."""
    return next((part for part in PARTS if name.startswith(part)), "")


def step_number(name):
    """3 for 'step3_idle', 'rows/step3_vector' and 'back/step3_x'; None for
    'cub' and anything that is not a step."""
    match = STEP_DIR_RE.match(name.removeprefix(part_prefix(name)))
    return int(match.group(1)) if match else None


def step_sort_key(name):
    """Numeric, not lexical (step10 after step9); CUB and the baselines after
    every step."""
    number = step_number(name)
    return (1, 0, name) if number is None else (0, number, name)


def is_program(name):
    """True for a CSV `step` value that names a program: stepN_slug or cub,
    rows/stepN_slug, rows/copy or rows/cub, back/stepN_slug or back/copy3."""
    return name == CUB or name in BASELINE_LABELS or step_number(name) is not None


def step_label(directory):
    """The CSV `step` value of a program directory: baseline_cub -> cub,
    rows/baseline_copy -> rows/copy, back/baseline_copy3 -> back/copy3."""
    path = os.path.normpath(directory)
    name = os.path.basename(path)
    part = os.path.basename(os.path.dirname(path)) + "/"
    if part in PARTS:
        return part + name.removeprefix("baseline_")
    return CUB if name == CUB_DIR else name


def program_dir(label):
    """The directory of a CSV `step` value: cub -> baseline_cub, rows/copy ->
    rows/baseline_copy, back/copy3 -> back/baseline_copy3."""
    if label in BASELINE_LABELS:
        part = part_prefix(label)
        return part + "baseline_" + label.removeprefix(part)
    return CUB_DIR if label == CUB else label


def step_dirs(root, has=("reduce.cu", "run")):
    """stepN_slug directories under root holding one of `has`, in step order.

    A stray `step4_notes/` without a program is not a step; an unbuilt
    `step9_mine/` with only its reduce.cu is.
    """
    found = []
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if step_number(name) is not None and os.path.isdir(path) and \
                any(os.path.exists(os.path.join(path, f)) for f in has):
            found.append(name)
    return sorted(found, key=step_sort_key)


def gpu_slug(name):
    """File-name form of a GPU name: 'NVIDIA GeForce RTX 4090' -> 'geforce-rtx-4090'."""
    slug = name.strip().lower()
    if slug.startswith("nvidia "):
        slug = slug[len("nvidia "):]
    slug = re.sub(r"[^a-z0-9]+", "-", slug).strip("-")
    return slug or "unknown-gpu"


def power_label(n):
    """How tables and captions name a size: 2^25 for a power of two, else the number."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


# ---------------------------------------------------------------- columns

# (column, type, meaning). Types: str, int, float; a trailing '?' means the
# value may be empty (check-mode rows have no timing; --cpu-sums is optional).
RESULT_SCHEMA = (
    ("step", "str", "program: its directory, or cub for baseline_cub"),
    ("n", "int", "floats summed"),
    ("reps", "int", "timed repetitions (1 in check mode)"),
    ("warmup", "int", "untimed repetitions before them (0 in check mode)"),
    ("median_us", "float?", "median time of the whole reduction, microseconds"),
    ("min_us", "float?", "fastest repetition, microseconds"),
    ("max_us", "float?", "slowest repetition, microseconds"),
    ("gbps", "float?", "4n bytes / median time, decimal GB/s"),
    ("pct_peak", "float?", "gbps as a percentage of peak_gbps"),
    ("result", "float", "the GPU's sum (last repetition)"),
    ("reference", "float", "the CPU reference sum, in double"),
    ("abs_err", "float", "|result - reference|"),
    ("tol", "float", "the tolerance; 0 when the fill makes float arithmetic exact"),
    ("pass", "int", "1 verified, 0 wrong"),
    ("gpu", "str", "device name, e.g. NVIDIA H200"),
    ("cc", "str", "compute capability, e.g. 9.0"),
    ("driver", "str?", "NVIDIA driver version (empty in torch rows: torch does not report it)"),
    ("cuda", "str", "CUDA runtime version"),
    ("peak_gbps", "float", "theoretical DRAM bandwidth from the device attributes"),
    ("l2_mb", "float", "L2 cache size, MB"),
    ("sms", "int", "streaming multiprocessors"),
    ("flush", "int", "1 when L2 was flushed before every repetition"),
    ("offset", "int", "floats past an aligned address the input starts at"),
    ("fill", "str", "input pattern: random, positive, wide, ones, ints, onehot, exact"),
    ("seed", "int", "input generator seed"),
    ("git_rev", "str", "revision built from; -dirty for uncommitted changes"),
    ("mode", "str?", "timed, or check (--check: one verified run, no timing)"),
    ("distinct", "int?", "different float sums among the timed repetitions (1 = bit-identical)"),
    ("code_hash", "str?", "tools/code_hash.py of the program's source, the harness it is "
                          "built from and the build flags"),
    ("sum_abs", "float?", "sum of |x|: the scale of rounding error"),
    ("cpu_seq", "float?", "CPU sequential float32 sum (--cpu-sums only)"),
    ("cpu_kahan", "float?", "CPU Kahan-compensated float32 sum (--cpu-sums only)"),
    ("rows", "int?", "part 2: rows of the matrix (empty for part 1)"),
    ("cols", "int?", "part 2: floats per row"),
    ("op", "str?", "part 2: sum, layernorm, softmax, copy, rmsnorm or add_rmsnorm; with _bf16 "
                   "(softmax_bf16) when x and y are bfloat16"),
    ("bytes", "float?", "bytes a run must move; gbps = bytes / median time"),
    ("arch", "str?", "the machine code the program carries, e.g. sm_90"),
    ("toolchain", "str?", "what built it: nvcc and CCCL versions (or torch's, for torch rows)"),
    ("round", "int?", "make bench's round: each round runs every program in its own process"),
    ("run", "str?", "make bench's run: its UTC start, e.g. 20261202T052253Z, the same in every row "
                    "of one bench, also when its rounds ran in separate calls (--run-id); a ratio "
                    "is only ever taken between rows of one run"),
    ("role", "str?", "empty for the programs a run was asked for; compared for those it timed "
                     "only as what they are compared against (make bench ONLY=...)"),
)
RESULT_COLUMNS = tuple(name for name, _, _ in RESULT_SCHEMA)
# Added with later releases; older files lack them and still load.
NEW_RESULT_COLUMNS = ("mode", "distinct", "code_hash", "sum_abs", "cpu_seq", "cpu_kahan",
                      "rows", "cols", "op", "bytes", "arch", "toolchain", "round", "run", "role")
COMPARED = "compared"   # the role of a row timed only as a comparison

PROFILE_SCHEMA = (
    ("step", "str", "program, as in the results file"),
    ("kernel", "str?", "the profiled kernel's name, template arguments kept"),
    ("metric", "str", "Nsight Compute metric name"),
    ("value", "float?", "in base units (ns, byte); empty or n/a when ncu gave none"),
    ("unit", "str?", "ns, byte, %, inst, ... (empty for plain counts and ratios)"),
    ("gpu", "str?", "device name"),
    ("git_rev", "str?", "revision the program was built from"),
    ("code_hash", "str?", "the program's code hash, from `run --version`"),
)
PROFILE_COLUMNS = tuple(name for name, _, _ in PROFILE_SCHEMA)
NEW_PROFILE_COLUMNS = ("code_hash",)

# multigpu/run's two files (multigpu/plan.h's MG_SUM_HEADER and
# MG_VECTOR_HEADER); tools/torch_dist.py writes the same columns, source torch.
MULTIGPU_SUM_SCHEMA = (
    ("step", "str", "multigpu, or torch for tools/torch_dist.py's rows"),
    ("source", "str", "nccl (multigpu/run) or torch (torch.distributed)"),
    ("n", "int", "floats summed, over all GPUs"),
    ("gpus", "int", "GPUs the n floats were split across"),
    ("launch", "str", "single (one process drives every GPU) or per-process"),
    ("combine", "str", "allreduce, reduce or host: how the per-GPU sums were added"),
    ("reps", "int", "timed repetitions (1 in check mode)"),
    ("warmup", "int", "untimed repetitions before them"),
    ("median_us", "float?", "median of the slowest GPU's time, start to combined sum"),
    ("min_us", "float?", "fastest repetition"),
    ("max_us", "float?", "slowest repetition"),
    ("one_gpu_us", "float?", "median time of one GPU summing all n in the same process"),
    ("speedup", "float?", "one_gpu_us / median_us"),
    ("gbps", "float?", "4n bytes / median time, decimal GB/s, all GPUs together"),
    ("result", "float", "the combined sum"),
    ("reference", "float", "the CPU reference sum, in double"),
    ("abs_err", "float", "|result - reference|"),
    ("tol", "float", "the tolerance; 0 on the exact fill"),
    ("pass", "int", "1 verified (every partial and the total), 0 wrong"),
    ("fill", "str", "input pattern"),
    ("seed", "int", "input seed"),
    ("flush", "int", "1 when every GPU's L2 was flushed before every repetition"),
    ("gpu", "str", "device name"),
    ("cc", "str", "compute capability"),
    ("driver", "str?", "NVIDIA driver version"),
    ("cuda", "str", "CUDA runtime version"),
    ("nccl", "str", "NCCL version (ncclGetVersion, or torch.cuda.nccl.version)"),
    ("git_rev", "str", "revision built from"),
    ("code_hash", "str?", "tools/code_hash.py of the program (of torch_dist.py for torch rows)"),
    ("arch", "str?", "the machine code the program carries"),
    ("toolchain", "str?", "nvcc and CCCL versions, or torch's"),
)
ALLREDUCE_SCHEMA = (
    ("step", "str", "multigpu, or torch"),
    ("source", "str", "nccl (multigpu/run --vector) or torch (torch.distributed)"),
    ("bytes", "int", "bytes of the vector each GPU holds"),
    ("count", "int", "floats of it"),
    ("gpus", "int", "GPUs in the all-reduce"),
    ("launch", "str", "single or per-process"),
    ("reps", "int", "timed repetitions"),
    ("warmup", "int", "untimed repetitions before them"),
    ("median_us", "float?", "median of the slowest GPU's time"),
    ("min_us", "float?", "fastest repetition"),
    ("max_us", "float?", "slowest repetition"),
    ("algbw_gbps", "float?", "bytes / median time, decimal GB/s (nccl-tests' algbw)"),
    ("busbw_gbps", "float?", "algbw x 2 (gpus - 1) / gpus (nccl-tests' busbw)"),
    ("pass", "int", "1: every element of the result is the exact sum"),
    ("gpu", "str", "device name"),
    ("cc", "str", "compute capability"),
    ("driver", "str?", "NVIDIA driver version"),
    ("cuda", "str", "CUDA runtime version"),
    ("nccl", "str", "NCCL version"),
    ("git_rev", "str", "revision built from"),
    ("code_hash", "str?", "the program's code hash"),
    ("arch", "str?", "the machine code the program carries"),
    ("toolchain", "str?", "nvcc and CCCL versions, or torch's"),
)
MULTIGPU_SUM_COLUMNS = tuple(name for name, _, _ in MULTIGPU_SUM_SCHEMA)
ALLREDUCE_COLUMNS = tuple(name for name, _, _ in ALLREDUCE_SCHEMA)

TIMED, CHECK = "timed", "check"


class SchemaError(Exception):
    """A file that does not follow the schema; the message is one line."""


def _attribute(column):
    return column + "_" if column == "pass" else column


@dataclass(frozen=True)
class ResultRow:
    step: str
    n: int
    reps: int
    warmup: int
    median_us: float | None
    min_us: float | None
    max_us: float | None
    gbps: float | None
    pct_peak: float | None
    result: float
    reference: float
    abs_err: float
    tol: float
    pass_: int          # the `pass` column (a Python keyword)
    gpu: str
    cc: str
    driver: str
    cuda: str
    peak_gbps: float
    l2_mb: float
    sms: int
    flush: int
    offset: int
    fill: str
    seed: int
    git_rev: str
    mode: str
    distinct: int | None
    code_hash: str
    sum_abs: float | None
    cpu_seq: float | None
    cpu_kahan: float | None
    rows: int | None = None
    cols: int | None = None
    op: str = ""
    bytes: float | None = None
    arch: str = ""
    toolchain: str = ""
    round: int | None = None
    run: str = ""
    role: str = ""
    line: int = 0       # line in its file, for messages

    @property
    def passed(self):
        return self.pass_ == 1

    @property
    def timed(self):
        """A run with timing: mode timed, or an old file's row (no mode column)."""
        return self.mode != CHECK and self.median_us is not None and self.gbps is not None


@dataclass(frozen=True)
class ProfileRow:
    step: str
    kernel: str
    metric: str
    value: float | None
    unit: str
    gpu: str
    git_rev: str
    code_hash: str
    line: int = 0


# ---------------------------------------------------------------- reading

def read_records(path, required=()):
    """(header, [(line number, {column: text})]) of a CSV file: the one parser.

    Checks that the file exists, is UTF-8 text, is not empty and has the
    `required` columns. A record holds the header's columns, values stripped;
    the typed loaders below read a column missing from the header as empty.
    """
    if not os.path.isfile(path):
        raise SchemaError(f"file not found: {path}")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise SchemaError(f"{path}: not UTF-8 text") from None
    if not text.strip():
        raise SchemaError(f"{path}: empty file")
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = [name.strip() for name in reader.fieldnames or []]
        reader.fieldnames = header
        missing = [name for name in required if name not in header]
        if missing:
            raise SchemaError(f"{path}: missing column(s): {', '.join(missing)}")
        records = []
        for record in reader:
            records.append((reader.line_num, {name: (record.get(name) or "").strip()
                                              for name in header}))
    except csv.Error as err:
        raise SchemaError(f"{path}: malformed CSV: {err}") from None
    return header, records


def header_of(path):
    """The column names of a CSV file (for telling an old file from a new one)."""
    return read_records(path)[0]


def _convert(where, column, kind, text):
    optional = kind.endswith("?")
    kind = kind.rstrip("?")
    if text == "" or (kind == "float" and text.lower() == "n/a"):
        if optional:
            return None if kind != "str" else ""
        raise SchemaError(f"{where}: empty value in column '{column}'")
    if kind == "str":
        return text
    try:
        if kind == "int":
            return int(text)
        # NaN and Inf are kept: a wrong result may be NaN, and its row still loads.
        return float(text.replace(",", ""))
    except ValueError:
        what = "an integer" if kind == "int" else "a number"
        raise SchemaError(f"{where}: column '{column}' is not {what}: {text!r}") from None


def _typed(path, line, record, schema):
    where = f"{path} line {line}"
    return {_attribute(column): _convert(where, column, kind, record.get(column, ""))
            for column, kind, _ in schema}


def read_results(path):
    """Every row of a results file, typed, in file order (failed ones too)."""
    required = [c for c in RESULT_COLUMNS if c not in NEW_RESULT_COLUMNS]
    _, records = read_records(path, required)
    return [ResultRow(line=line, **_typed(path, line, record, RESULT_SCHEMA))
            for line, record in records]


def usable(rows, path, need_speed=True, quiet=False):
    """The rows that may reach a chart or a table: verified ones, and, where a
    speed is needed, timed ones with a positive time. Says on stderr how many
    were dropped, so a failed run is never silently missing."""
    kept, failed, untimed = [], 0, 0
    for row in rows:
        if not row.passed:
            failed += 1
        elif need_speed and not row.timed:
            untimed += 1
        else:
            # torch rows (tools/torch_rows.py) carry no peak: torch does not report it.
            no_peak = row.peak_gbps <= 0 and not row.step.startswith("torch/")
            if need_speed and (row.median_us <= 0 or no_peak or row.gbps < 0
                               or not math.isfinite(row.median_us + row.gbps)):
                raise SchemaError(f"{path} line {row.line}: median_us, gbps and peak_gbps "
                                  "must be positive numbers")
            kept.append(row)
    if (failed or untimed) and not quiet:
        reasons = [f"{count} {why}" for count, why in
                   ((failed, "failed (pass != 1)"), (untimed, "without timing (check mode)"))
                   if count]
        print(f"{_program()}: {os.path.basename(path)}: left out {failed + untimed} of "
              f"{len(rows)} rows: {', '.join(reasons)}", file=sys.stderr)
    return kept


def load_results(path, need_speed=True, quiet=False):
    """The usable rows of a results file (see usable())."""
    return usable(read_results(path), path, need_speed, quiet)


def load_profile(path):
    """Every row of a profile file, typed; value is None where ncu gave none."""
    _, records = read_records(path, ("step", "metric", "value"))
    return [ProfileRow(line=line, **_typed(path, line, record, PROFILE_SCHEMA))
            for line, record in records]


def _read_plain(path, schema_):
    """Every row of a multigpu file as a dict (attribute names: pass_ for
    pass) with its line number under 'line', typed by schema_, and its
    round under 'round': tools/nccl_check.sh's last column, 1 where a file
    has none (one run of the program)."""
    columns = [name for name, _, _ in schema_]
    _, records = read_records(path, columns)
    rows = []
    for line, record in records:
        row = _typed(path, line, record, schema_)
        row["line"] = line
        value = record.get("round") or "1"
        if not value.isdigit() or int(value) < 1:
            raise SchemaError(f"{path} line {line}: round is {value!r}, not a round number")
        row["round"] = int(value)
        rows.append(row)
    return rows


def read_multigpu_sum(path):
    """The rows of a <gpu>x<k>-multigpu.csv file (multigpu/run, torch_dist.py)."""
    return _read_plain(path, MULTIGPU_SUM_SCHEMA)


def read_allreduce(path):
    """The rows of a <gpu>x<k>-allreduce.csv file."""
    return _read_plain(path, ALLREDUCE_SCHEMA)


def _program():
    return os.path.basename(sys.argv[0]) or "python"


def main(argv=None):
    """Command line, for the shell scripts that name a results file by its
    GPU: `schema.py slug NAME` prints NAME's file-name form (NVIDIA H200 ->
    h200; NAME '-' reads it from stdin), `schema.py slug --csv FILE` that of
    the GPU of FILE's first row. A bad call: one line on stderr, exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if len(argv) == 3 and argv[:2] == ["slug", "--csv"]:
            with open(argv[2], newline="", encoding="utf-8") as handle:
                rows = list(csv.DictReader(handle))
            if not rows or "gpu" not in rows[0]:
                raise SchemaError(f"{argv[2]}: no row with a gpu column")
            print(gpu_slug(rows[0]["gpu"]))
            return 0
        if len(argv) == 2 and argv[0] == "slug":
            print(gpu_slug(sys.stdin.read() if argv[1] == "-" else argv[1]))
            return 0
        raise SchemaError("usage: schema.py slug NAME|- | schema.py slug --csv FILE")
    except SchemaError as err:
        print(f"schema: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"schema: {err.filename}: {err.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
