#!/usr/bin/env python3
"""Profile the reduction kernel of one step (or of all steps) with Nsight Compute.

Runs `ncu ... <step>/run --check -n N`, keeps the first launch of the step's
reduction kernel, and prints a small set of hardware counters that explain
each step's speed-up: instructions, divergence, bank conflicts, DRAM traffic,
occupancy and launch shape. `--all --csv OUT` also writes them in long format
(tools/schema.py), each row with the program's code hash from `run --version`.

Exit codes: 0 ok, 2 usage error or program not built, 3 no CUDA device (as
bench.py and grade.py), 4 ncu not found or failed (e.g. a metric it does not
know), 5 the performance counters are not permitted for this user.
"""
import argparse
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# bench.py lives next to this file and already knows how to find and run the
# programs; schema.py holds the CSV columns, step names and GPU slug.
import cli  # how main() ends
import bench
import schema
import steps  # the step list, the step before a step

EXIT_USAGE, EXIT_DEVICE = cli.EXIT_USAGE, cli.EXIT_DEVICE
EXIT_NCU, EXIT_PERM = cli.EXIT_NEEDS, cli.EXIT_PERMISSION   # ncu failed or missing; counters' permission
DEFAULT_N = 1 << 25
NCU_TIMEOUT_S = 600  # ncu replays the kernel once per counter pass; minutes means a hang

# ncu's usual install places, tried when `ncu` is not on PATH. The environment
# variable replaces this list (os.pathsep-separated paths or glob patterns;
# empty = PATH only), for unusual installs and for the tests.
NCU_PATHS_ENV = "REDUCE_NCU_PATHS"
DEFAULT_NCU_PATHS = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")

# The kernel whose first launch is profiled. CUB's first pass, DeviceReduceKernel,
# reads all n inputs; its follow-up pass over the partial sums is tiny.
STEP_KERNEL_RE = "reduce_kernel"
CUB_KERNEL_RE = "DeviceReduceKernel"
# Part 2: each program launches one kernel per run (rows/*/rows.cu).
ROW_KERNEL_RE = "row_sum_kernel|layernorm|rmsnorm|softmax|copy_kernel|DeviceSegmentedReduce"
DEFAULT_SHAPE = (32768, 1024)

METRICS = (
    # Kernel duration under ncu (serialized, clocks as found): compare steps, not with bench.
    "gpu__time_duration.sum",
    # Warp instructions executed: the work the SMs did, independent of memory speed.
    "smsp__inst_executed.sum",
    # Active threads per warp instruction: 32 means no idle or diverged lanes.
    # Lanes whose predicate is off still count as active here.
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    # Thread instructions whose predicate was on, summed. Divided by
    # smsp__inst_executed.sum it is the average number of lanes that really
    # work per warp instruction: the count that shows divergence when the
    # compiler predicates a branch instead of jumping.
    "smsp__thread_inst_executed_pred_on.sum",
    # Share of branches on which the whole warp went the same way (100% = no divergence).
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    # Extra shared-memory wavefronts caused by bank conflicts on loads.
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    # Extra shared-memory wavefronts caused by bank conflicts on stores.
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    # Shared-memory load instructions per warp: the yardstick for the load conflicts.
    "smsp__inst_executed_op_shared_ld.sum",
    # Shared-memory store instructions per warp: the yardstick for the store conflicts.
    "smsp__inst_executed_op_shared_st.sum",
    # DRAM bandwidth used as % of peak: how close the kernel is to the memory roofline.
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    # Bytes read from DRAM: about 4*n when every input is read exactly once.
    "dram__bytes_read.sum",
    # Achieved occupancy: resident warps as % of the SM's maximum.
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    # Registers per thread: too many limit how many blocks fit on an SM.
    "launch__registers_per_thread",
    # Static shared memory per block (__shared__ arrays with a fixed size).
    "launch__shared_mem_per_block_static",
    # Dynamic shared memory per block (the third <<<>>> launch parameter).
    "launch__shared_mem_per_block_dynamic",
    # Blocks in the grid: fewer blocks doing more work each is a later step's idea.
    "launch__grid_size",
    # Threads per block.
    "launch__block_size",
    # Warp-level global load instructions: fewer means wider loads or more work per load.
    "smsp__inst_executed_op_global_ld.sum",
    # 32-byte sectors and requests of global loads: sectors per request is 4
    # when a warp reads 128 contiguous bytes, 32 when its lanes read 32 lines.
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    # Share of L2 sectors found in L2: re-reads of a row that the L2 catches.
    "lts__t_sector_hit_rate.pct",
    # Bytes written to DRAM: the outputs, once.
    "dram__bytes_write.sum",
)

# File name under --out-dir: the Makefile pairs OUT_DIR/h200.csv (bench.py)
# with OUT_DIR/h200-profile.csv.
PROFILE_FILE = "{gpu}-profile.csv"
# What `run --version` prints: "<step> code_hash=<12 hex> git_rev=<rev>".
VERSION_RE = re.compile(r"^(\S+) code_hash=([0-9a-f]{12}) git_rev=(\S+)(?: .*)?$")

PERM_MESSAGE = ("ncu may not read the GPU performance counters as this user (ERR_NVGPUCTRPERM): "
                "run it as root, or set the NVIDIA driver option "
                "NVreg_RestrictProfilingToAdminUsers=0 and reload the driver "
                "(see https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


class ProfileError(Exception):
    """An error that ends the script with one line and a given exit code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------- ncu

def ncu_search_paths():
    value = os.environ.get(NCU_PATHS_ENV)
    if value is None:
        return list(DEFAULT_NCU_PATHS)
    return [p for p in value.split(os.pathsep) if p]


def version_key(path):
    """Numbers in a path, so .../2025.3.1/ncu sorts after .../2024.10.0/ncu."""
    return [int(x) for x in re.findall(r"\d+", path)]


def find_ncu(search_paths=None):
    """`ncu` on PATH, else the newest match among the usual install places."""
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ncu_search_paths() if search_paths is None else search_paths:
        matches = [m for m in glob.glob(pattern) if bench.is_executable(m)]
        if matches:
            return max(matches, key=version_key)
    raise ProfileError(EXIT_NCU, "ncu (Nsight Compute) not found; install it or add it to PATH")


def ncu_command(ncu, program, kernel_re, n):
    # --clock-control none: the GPU is shared, so ncu must not lock or change its
    # clocks (its default); kernels run at whatever clocks the GPU has right now.
    # n is a size (part 1) or a (rows, cols) shape (part 2).
    size = (["--rows", str(n[0]), "--cols", str(n[1])] if isinstance(n, tuple)
            else ["-n", str(n)])
    return [ncu, "--clock-control", "none", "--target-processes", "all",
            "--kernel-name", "regex:" + kernel_re, "--launch-count", "1",
            "--csv", "--page", "raw", "--metrics", ",".join(METRICS),
            program, "--check", *size]


def run_ncu(cmd):
    """Run ncu; returns (exit code, stdout, stdout and stderr together)."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=NCU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ProfileError(EXIT_NCU, f"ncu timed out after {NCU_TIMEOUT_S} s: {' '.join(cmd)}")
    except OSError as e:
        raise ProfileError(EXIT_NCU, f"cannot run {cmd[0]}: {e.strerror}")
    return proc.returncode, proc.stdout, proc.stdout + "\n" + proc.stderr


# --------------------------------------------------------- ncu diagnostics

def rejected_metric(line):
    """Which of METRICS an ncu 'Failed to find metric ...' line is about.

    ncu writes the name as a regex (`regex:^smsp__foo\\.(sum|...)$`), so match the
    part before the first dot as a whole word; the longest match wins because
    smsp__inst_executed is a prefix of smsp__inst_executed_op_shared_ld.
    """
    hits = [m for m in METRICS
            if re.search(re.escape(m.split(".")[0]) + r"(?![A-Za-z0-9_])", line)]
    if hits:
        return max(hits, key=len)
    match = re.search(r"metric\s+(?:regex:)?\^?([A-Za-z0-9_.]+)", line, re.IGNORECASE)
    return match.group(1).rstrip(".\\") if match else "(unnamed)"


def last_message(text, code):
    """The line that best explains a failure: ncu's error, the program's, a warning."""
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith('"')]
    for marker in ("==ERROR==", "error:", "==WARNING=="):
        picked = [l for l in lines if l.startswith(marker)]
        if picked:
            return picked[-1].replace("==ERROR==", "").replace("==WARNING==", "").strip()
    return lines[-1] if lines else f"ncu exited with status {code}"


def check_ncu_output(text):
    """Raise for the failures that have their own exit code or message."""
    if "ERR_NVGPUCTRPERM" in text:
        raise ProfileError(EXIT_PERM, PERM_MESSAGE)
    for line in text.splitlines():
        if bench.NO_DEVICE_TEXT in line:
            raise ProfileError(EXIT_DEVICE, bench.no_device_message(line.strip()))
    unknown = re.compile(r"failed to find metric|unknown metric|invalid metric|metric .*not found",
                         re.IGNORECASE)
    for line in text.splitlines():
        if unknown.search(line):
            raise ProfileError(EXIT_NCU, f"ncu rejected metric {rejected_metric(line)}: "
                                         f"{line.replace('==ERROR==', '').strip()}")


# ------------------------------------------------------------ ncu csv parse

def parse_number(text):
    """'1,234,567.5' -> 1234567.5; None when ncu printed no number (e.g. 'n/a')."""
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def short_kernel(name):
    """'void reduce_kernel<256>(const float *, ...)' -> 'reduce_kernel<256>'."""
    name = name.split("(")[0].strip()
    return name[len("void "):] if name.startswith("void ") else name


# ncu scales units to the magnitude (usecond, Mbyte, ...), which differs per step;
# values are brought to ns and bytes so steps compare directly.
TIME_UNITS = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3,
              "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
BYTE_PREFIXES = {"": 1, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                 "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
BYTE_UNIT_RE = re.compile(r"^(Ki|Mi|Gi|Ti|K|k|M|G|T|)byte(/.*)?$")


def to_base_unit(value, unit):
    """(176.4, 'usecond') -> (176400.0, 'ns'); (2.1, 'Kbyte/block') -> (2100.0, 'byte/block')."""
    if value is None:
        return value, unit
    if unit in TIME_UNITS:
        return value * TIME_UNITS[unit], "ns"
    match = BYTE_UNIT_RE.match(unit)
    if match:
        return value * BYTE_PREFIXES[match.group(1)], "byte" + (match.group(2) or "")
    return value, unit


def ncu_csv_rows(stdout):
    """The rows of ncu's CSV: from the header (first field "ID") on, CSV lines only.

    ncu mixes its ==PROF== log lines and the program's own output into stdout;
    every CSV line it writes is fully quoted, so it starts with a quote.
    """
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('"ID"')]
    if not starts:
        return []
    return list(csv.reader(l for l in lines[starts[0]:] if l.startswith('"')))


def parse_ncu_raw(stdout):
    """[(kernel, [(metric, value, unit), ...]), ...], one entry per profiled kernel."""
    rows = ncu_csv_rows(stdout)
    if len(rows) < 2:
        return []
    header, rows = rows[0], rows[1:]
    units = {}
    if rows and rows[0] and rows[0][0] == "":  # the units row has an empty ID
        units, rows = dict(zip(header, rows[0])), rows[1:]
    kernels = []
    for row in rows:
        record = dict(zip(header, row))
        metrics = []
        for metric in METRICS:
            if metric in record:
                value, unit = to_base_unit(parse_number(record[metric]), units.get(metric, ""))
                metrics.append((metric, record[metric] if value is None else value, unit))
        kernels.append((short_kernel(record.get("Kernel Name", "")), metrics))
    return kernels


# ---------------------------------------------------------------- profiling

def missing_metrics(stdout):
    """METRICS absent from ncu's CSV header.

    ncu 2025.3 drops a full metric name it does not know (`foo.sum`) without a
    word and still exits 0, so a missing column is the only sign of a bad name.
    """
    rows = ncu_csv_rows(stdout)
    header = rows[0] if rows else []
    return [metric for metric in METRICS if metric not in header]


def kernel_regex(name):
    if name.startswith("rows/"):
        return ROW_KERNEL_RE
    return CUB_KERNEL_RE if name == schema.CUB_DIR else STEP_KERNEL_RE


def profile_program(ncu, name, program, n):
    """Profile one program; returns its (kernel, metrics) entries."""
    cmd = ncu_command(ncu, program, kernel_regex(name), n)
    code, stdout, text = run_ncu(cmd)
    check_ncu_output(text)
    kernels = parse_ncu_raw(stdout)
    if code != 0 or not kernels:
        raise ProfileError(EXIT_NCU, f"{name}: {last_message(text, code)}")
    missing = missing_metrics(stdout)
    if missing:
        raise ProfileError(EXIT_NCU, f"ncu did not report metric {', '.join(missing)} "
                                     "(unknown to this ncu version or GPU)")
    return kernels


def probe_gpu(program):
    """The GPU's name from one tiny run of the program's own CSV row.

    Taken from the program rather than from ncu so the long CSV names the GPU
    exactly as bench.py's results files do.
    """
    fd, tmp = tempfile.mkstemp(prefix=".profile-", suffix=".csv")
    os.close(fd)
    try:
        size = (["--rows", "4", "--cols", "256"] if os.path.basename(os.path.dirname(
            os.path.dirname(program))) == "rows" else ["-n", "1024"])
        cmd = [program, "--reps", "1", "--warmup", "0", "--no-verify", "--no-flush", "--csv", tmp,
               *size]
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=NCU_TIMEOUT_S)
        message = bench.error_line(proc.stderr)
        if bench.NO_DEVICE_TEXT in proc.stderr:
            raise ProfileError(EXIT_DEVICE, bench.no_device_message(proc.stderr))
        rows = bench.read_rows(tmp)
        if proc.returncode != 0 or not rows:
            raise ProfileError(EXIT_NCU,
                               f"{' '.join(cmd)} failed (exit {proc.returncode}): {message}")
        return rows[-1].get("gpu", "")
    finally:
        os.remove(tmp)


def program_version(program):
    """(code_hash, git_rev) that the program prints for --version (no GPU needed).

    The hash covers the program's GPU code, so a profile row can be matched
    with the code it measured (tools/code_hash.py).
    """
    cmd = [program, "--version"]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProfileError(EXIT_USAGE, f"cannot run {program} --version: {e}")
    match = VERSION_RE.match(proc.stdout.strip())
    if proc.returncode != 0 or not match:
        raise ProfileError(EXIT_USAGE, f"{bench.display_path(program)} --version did not print "
                                       "'<step> code_hash=<hash> git_rev=<rev>'; rebuild it "
                                       "with make")
    return match.group(2), match.group(3)


def profile_label(name):
    """The program's name as its results rows give it: step3_idle, cub, rows/step2_warp, rows/cub."""
    label = schema.step_label(os.path.basename(name))
    if name.startswith("rows/"):
        return "rows/" + os.path.basename(name).removeprefix("baseline_")
    return label


def select_programs(root, step, rows=False, only=None):
    """Directory names to profile: every one for None (--all), the ones --only
    names with the steps their counters are read beside, else the one named."""
    names = bench.row_program_dirs(root) if rows else bench.program_dirs(root)
    if only is not None:
        named = [n for n in bench.resolve_only(root, only) if n in names]
        beside = set(named)
        for name in named:
            if schema.step_number(os.path.basename(name)) is None:
                continue   # a baseline: no step before it to read its counters beside
            # The step before (tools/steps.py), and a bfloat16 step's float twin.
            beside.update(d for d in [steps.previous_step(root, name),
                                      steps.float_twin(root, name)] if d in names)
        chosen = [n for n in names if n in beside]
        if not chosen:
            return []   # the names are the other part's: nothing to profile here
    elif step is None:
        chosen = names
    else:
        chosen = [name for name in names if _matches(name, step)]
        if len(chosen) != 1:
            have = ", ".join(_short_name(name) for name in names) or "none"
            what = "several directories for" if chosen else "no"
            raise ProfileError(EXIT_USAGE, f"{what} step {step} under {root} (steps: {have})")
    bench.check_built(root, chosen)
    return chosen


def _matches(name, step):
    step = step.removeprefix("rows/")
    if step in (name, _short_name(name), os.path.basename(name)):
        return True
    number = schema.step_number(os.path.basename(name))
    return number is not None and step.isdigit() and int(step) == number


def _short_name(name):
    """'step3_idle' -> '3', 'baseline_cub' -> 'cub': what --step accepts."""
    base = os.path.basename(name)
    number = schema.step_number(base)
    return base.removeprefix("baseline_") if number is None else str(number)


# ------------------------------------------------------------------ output

def format_value(value):
    """Integers with thousands separators, other numbers with 4 significant digits."""
    if not isinstance(value, float):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def step_table(label, kernel, metrics, n):
    width = max(len(m) for m, _, _ in metrics) if metrics else 6
    lines = [f"{label}: {kernel}  n={n}  (ncu, --clock-control none)",
             f"{'metric':<{width}}  {'value':>16}  unit"]
    lines += [f"{m:<{width}}  {format_value(v):>16}  {u}".rstrip() for m, v, u in metrics]
    return "\n".join(lines)


def compact(value):
    """A number in at most ~6 characters: 1234567 -> '1.23M'."""
    if value is None:
        return "-"
    # Thousands switch to 'k' only from 10,000 on: '9999' is as short as '10.0k'.
    for threshold, scale, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(value) >= threshold:
            return f"{value / scale:.3g}{suffix}"
    if float(value).is_integer() or abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _metric(metrics, name, scale=1.0):
    value = metrics.get(name)
    return value * scale if isinstance(value, float) else None


def _smem(metrics):
    parts = [_metric(metrics, "launch__shared_mem_per_block_" + k) for k in ("static", "dynamic")]
    return None if None in parts else sum(parts)


def _lanes_on(metrics):
    """Lanes with their predicate on per warp instruction (32 = no lane idles)."""
    on = _metric(metrics, "smsp__thread_inst_executed_pred_on.sum")
    inst = _metric(metrics, "smsp__inst_executed.sum")
    return on / inst if on is not None and inst else None


# One column per question the tutorial asks; values come from base units (ns, byte).
# DRAM bytes read (about 4n in every step) are in the per-step table and the CSV.
SUMMARY_COLUMNS = (
    ("time_us", lambda m: _metric(m, "gpu__time_duration.sum", 1e-3)),
    ("warp_inst", lambda m: _metric(m, "smsp__inst_executed.sum")),
    ("thr/inst", lambda m: _metric(m, "smsp__thread_inst_executed_per_inst_executed.ratio")),
    ("on/inst", _lanes_on),
    ("bank_ld", lambda m: _metric(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")),
    ("bank_st", lambda m: _metric(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
    ("dram%", lambda m: _metric(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed")),
    ("occ%", lambda m: _metric(m, "sm__warps_active.avg.pct_of_peak_sustained_active")),
    ("regs", lambda m: _metric(m, "launch__registers_per_thread")),
    ("smem", _smem),
)


STEP_COLUMN_MAX = 20  # with the ten columns below, a line stays within 100 characters


def summary_table(results):
    """Rows = steps, columns = SUMMARY_COLUMNS."""
    width = min(STEP_COLUMN_MAX, max([4] + [len(label) for label, _, _ in results]))
    widths = [max(len(title), 6) for title, _ in SUMMARY_COLUMNS]
    head = f"{'step':<{width}}" + "".join(
        f" {title:>{w}}" for (title, _), w in zip(SUMMARY_COLUMNS, widths))
    lines = [head]
    for label, _, metrics in results:
        values = {m: v for m, v, _ in metrics}
        cells = "".join(f" {compact(pick(values)):>{w}}"
                        for (_, pick), w in zip(SUMMARY_COLUMNS, widths))
        lines.append(f"{label[:width]:<{width}}" + cells)
    return "\n".join(lines)


def csv_value(value):
    if isinstance(value, float):
        return f"{value:.10g}"
    return value


def write_long_csv(path, results, gpu, versions, merge=False):
    """One row per (step, metric); written to a temporary file, then moved into place.

    versions: {step label: (code_hash, git_rev)} from each program's --version.
    merge: keep the file's rows of every other program (--only).
    """
    path = path.replace("{gpu}", schema.gpu_slug(gpu))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    kept = []
    if merge and os.path.isfile(path):
        profiled = {label for label, _, _ in results}
        _, records = schema.read_records(path)
        kept = [[record.get(c, "") for c in schema.PROFILE_COLUMNS] for _, record in records
                if record.get("step") not in profiled]
        if kept and any(row[5] not in ("", gpu) for row in kept):
            raise ProfileError(EXIT_USAGE, f"{bench.display_path(path)} holds another GPU's "
                                           f"counters: nothing merged (one file per GPU model)")
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(schema.PROFILE_COLUMNS)
        writer.writerows(kept)
        for label, kernel, metrics in results:
            code_hash, git_rev = versions[label]
            for metric, value, unit in metrics:
                writer.writerow((label, kernel, metric, csv_value(value), unit, gpu, git_rev,
                                 code_hash))
    os.replace(tmp, path)
    return path


# -------------------------------------------------------------------- main

def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Profile the reduction kernel of a step with Nsight Compute (ncu). "
                    "ncu runs with --clock-control none: the GPU is shared, so the profiler "
                    "must not lock or change its clocks.",
        epilog=f"ncu is looked up on PATH, then in {', '.join(DEFAULT_NCU_PATHS)} "
               f"(newest); {NCU_PATHS_ENV} replaces that list ({os.pathsep}-separated).")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--step", metavar="K",
                       help="step number (the directory stepK_*), a directory name, or cub")
    which.add_argument("--all", action="store_true", help="every step in order, then cub")
    which.add_argument("--only", metavar="NAMES",
                       type=bench.program_names,
                       help="these programs of the part (folders, comma-separated; sum or rows: "
                            "the whole part) and the steps their counters are read beside "
                            "(the previous step, the float step of a bfloat16 one); with --csv "
                            "or --out-dir their rows take the place of theirs in the file")
    parser.add_argument("--root", default=bench.REPO,
                        help="directory holding the stepN_*/ folders (default: this repository)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--csv", metavar="OUT",
                        help="also write a long CSV (" + ",".join(schema.PROFILE_COLUMNS) +
                             "); {gpu} in OUT becomes the GPU's short name, e.g. h200")
    output.add_argument("--out-dir", metavar="DIR",
                        help=f"same as --csv DIR/{PROFILE_FILE} (next to bench.py's <gpu>.csv)")
    parser.add_argument("-n", type=bench._int_at_least(1), default=DEFAULT_N,
                        help=f"elements to reduce (default {DEFAULT_N} = 2^25)")
    parser.add_argument("--rows", action="store_true",
                        help="part 2: the programs under rows/, on a --shape")
    parser.add_argument("--shape", default="%dx%d" % DEFAULT_SHAPE,
                        help="part 2's ROWSxCOLS (default %dx%d)" % DEFAULT_SHAPE)
    parser.add_argument("--merge-into", metavar="DIR",
                        help="also put the rows into DIR's file of the same name in place of "
                             "these programs' (make verify: --out-dir gets this profile alone)")
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)
    if args.step and args.step.startswith("rows/"):
        args.rows = True
    if args.out_dir or args.merge_into:
        # Part 2 at another shape than the default: <gpu>-rows-profile-RxC.csv.
        shape = "" if not args.rows or args.shape == "%dx%d" % DEFAULT_SHAPE else "-" + args.shape
        name = PROFILE_FILE.replace("-profile", ("-rows-profile" + shape) if args.rows
                                    else "-profile")
        args.csv = os.path.join(args.out_dir, name) if args.out_dir else args.csv
        args.merge_path = os.path.join(args.merge_into, name) if args.merge_into else None
    else:
        args.merge_path = None
    if args.rows:
        rows, _, cols = args.shape.partition("x")
        if not (rows.isdigit() and cols.isdigit() and int(rows) > 0 and int(cols) > 0):
            parser.error(f"--shape needs ROWSxCOLS of at least 1x1, got {args.shape!r}")
        args.n = (int(rows), int(cols))
    # Written after the profiling: a path that cannot take them is said now.
    for flag, folder in (("--out-dir", args.out_dir), ("--merge-into", args.merge_into)):
        problem = cli.output_problem(folder, folder=True)
        if problem:
            parser.error(f"{flag} {folder}: {problem}")
    if args.csv and os.path.isdir(args.csv):   # a missing folder is made (write_long_csv)
        parser.error(f"--csv {args.csv}: a folder, not a file")
    return args


def profile(args):
    names = select_programs(args.root, args.step, args.rows, args.only)
    if not names:
        print(f"profile: --only names no part {2 if args.rows else 1} program: nothing to "
              "profile in this part")
        return 0
    programs = [(name, bench.run_path(args.root, name)) for name in names]
    versions = {}
    if args.csv or args.merge_path:
        # Every program's code hash first (no GPU needed), so an old build that
        # cannot say it fails before ncu runs.
        versions = {profile_label(name): program_version(program)
                    for name, program in programs}
    # The GPU before ncu: on a machine with neither, "no CUDA device" is the
    # answer (installing ncu would not help), as make profile's own check says.
    gpu = probe_gpu(programs[0][1])
    ncu = find_ncu()
    results = []
    many = args.all or args.only is not None
    for name, program in programs:
        if many:
            print(f"profile: {name} ...", file=sys.stderr, flush=True)
        for kernel, metrics in profile_program(ncu, name, program, args.n):
            results.append((profile_label(name), kernel, metrics))
    if many:
        print(summary_table(results))
    else:
        print("\n\n".join(step_table(label, k, m, args.n) for label, k, m in results))
    if args.csv:
        path = write_long_csv(args.csv, results, gpu, versions, merge=args.only is not None)
        print(f"profile: wrote {bench.display_path(path)}")
    if args.merge_path:
        path = write_long_csv(args.merge_path, results, gpu, versions, merge=True)
        print(f"profile: merged into {bench.display_path(path)}")
    return 0


def main(argv=None):
    args = parse_args(argv)
    return cli.guarded("profile", lambda: profile(args), known=(ProfileError, bench.BenchError),
                       internal=EXIT_NCU)


if __name__ == "__main__":
    sys.exit(main())
