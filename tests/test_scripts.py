#!/usr/bin/env python3
"""CPU tests for tools/bench.py, tools/profile.py and the make targets that run
them (bench, profile-all: OUT_DIR, DEVICE). No GPU, no ncu needed.

The step programs and ncu are replaced by small Python fakes that follow
tools/schema.py and common/README.md: they take the same flags, append the
same CSV row, answer --version and fail with the same exit codes and
messages. Run: python3 tests/test_scripts.py (PLOT_PYTHON, a Python with
matplotlib, for the make bench tests, which draw charts).
"""
import csv
import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakes import fake_repo, write_executable  # noqa: E402
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

CONTRACT_COLUMNS = list(schema.RESULT_COLUMNS)


def fake_hash(step):
    """The code hash a fake program reports: 12 hex digits of its step name."""
    return hashlib.sha256(step.encode()).hexdigest()[:12]


# A step program: behaviour chosen by FAKE_* environment variables.
FAKE_PROGRAM = r'''#!{python}
import csv, hashlib, os, sys

COLUMNS = {columns!r}


def parse(argv):
    opts, flags, i = {{"-n": "33554432", "--reps": "20", "--warmup": "3"}}, set(), 0
    while i < len(argv):
        if argv[i] in ("--check", "--no-flush", "--version"):
            flags.add(argv[i])
            i += 1
        else:
            opts[argv[i]] = argv[i + 1]
            i += 2
    return opts, flags


def row(step, n, opts, flags, wrong):
    gpu = os.environ.get("FAKE_GPU", "NVIDIA H200")
    if os.environ.get("FAKE_ALT_GPU_STEP") == step:
        gpu = "NVIDIA A100-SXM4-80GB"
    check = "--check" in flags
    gbps = 900.0 + len(step)
    median = 4 * n / gbps / 1e3
    timing = ["", "", "", "", ""] if check else \
        [median, median * 0.98, median * 1.1, gbps, 100 * gbps / 4800]
    values = [step, n, 1 if check else opts["--reps"], 0 if check else opts["--warmup"],
              *timing, n + (7 if wrong else 0), n, 7 if wrong else 0, 0.5,
              0 if wrong else 1, gpu, "9.0", "580.159.04", "13.0", 4800.0, 60, 132,
              0 if check or "--no-flush" in flags else 1, 0, "random", 1, "abc1234-dirty",
              "check" if check else "timed", "" if check else 1, code_hash(step), n / 2, "", ""]
    return dict(zip(COLUMNS, values))


def code_hash(step):
    return hashlib.sha256(step.encode()).hexdigest()[:12]


def append(path, record):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(record)


def main():
    opts, flags = parse(sys.argv[1:])
    n = int(opts["-n"])
    step = os.path.basename(os.path.dirname(os.path.abspath(__file__)))
    step = "cub" if step == "baseline_cub" else step
    if "--version" in flags:
        if os.environ.get("FAKE_NO_VERSION"):  # a build from before --version existed
            print("error: unknown option '--version'", file=sys.stderr)
            return 2
        print(f"{{step}} code_hash={{code_hash(step)}} git_rev=v{{step[:5]}}")
        return 0
    if os.environ.get("FAKE_LOG"):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(step + " " + " ".join(sys.argv[1:]) + "\n")
    if os.environ.get("FAKE_ENV_LOG"):
        with open(os.environ["FAKE_ENV_LOG"], "a") as f:
            seen = os.environ.get("CUDA_VISIBLE_DEVICES", "-")
            f.write(f"{{step}} CUDA_VISIBLE_DEVICES={{seen}}\n")
    if os.environ.get("FAKE_NO_DEVICE"):
        print("error: no CUDA device found (cudaGetDeviceCount: no CUDA-capable device "
              "is detected)", file=sys.stderr)
        return 3
    if n > int(os.environ.get("FAKE_OOM_ABOVE", str(1 << 40))):
        print(f"error: out of device memory allocating {{4 * n}} bytes", file=sys.stderr)
        return 3
    wrong = os.environ.get("FAKE_WRONG_STEP") == step
    if "--csv" in opts:
        append(opts["--csv"], row(step, n, opts, flags, wrong))
    if wrong:
        print(f"error: wrong result: got {{n + 7}}, expected {{n}}", file=sys.stderr)
        return 1
    print(f"{{step}}: n={{n}} ok")  # human output on stdout, which bench must ignore
    return 0


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
}

STEP_KERNEL = "void reduce_kernel<256>(const float *, float *, unsigned int)"
CUB_KERNEL = ("void cub::CUB_300000_SM_900::DeviceReduceKernel<cub::detail::reduce::Policy900, "
              "const float *, int, cuda::std::plus<void>, float>(const float *, float *, int)")

# ncu: runs the program like the real one, then prints --csv --page raw output.
FAKE_NCU = r'''#!{python}
import csv, os, subprocess, sys

SAMPLE = {sample!r}
KERNELS = {{"reduce_kernel": {step_kernel!r}, "DeviceReduceKernel": {cub_kernel!r}}}
FIXED = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC"]


def say(line):
    print(line, flush=True)


def main():
    argv = sys.argv[1:]
    if os.environ.get("FAKE_NCU_LOG"):
        with open(os.environ["FAKE_NCU_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    at = argv.index("--metrics")
    metrics, program = argv[at + 1].split(","), argv[at + 2:]
    kernel = KERNELS[argv[argv.index("--kernel-name") + 1].split(":", 1)[1]]
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
    if mode == "nokernel" or code != 0:
        say("==WARNING== No kernels were profiled.")
        if code == 0:
            say("Available Kernels:")
            say("1. l2_flush_kernel")
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


def make_root(top, steps=("step0_a", "step1_b", "step10_c", "baseline_cub")):
    """A fake repository: one fake `run` per step directory."""
    return fake_repo(top, steps, FAKE_PROGRAM.format(python=sys.executable,
                                                     columns=CONTRACT_COLUMNS))


def make_ncu(top):
    bindir = os.path.join(top, "bin")
    write_executable(os.path.join(bindir, "ncu"), FAKE_NCU.format(
        python=sys.executable, sample=NCU_SAMPLE, step_kernel=STEP_KERNEL, cub_kernel=CUB_KERNEL))
    return bindir


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_", "REDUCE_"))}
    env.update(extra)
    return env


class ScriptTest(unittest.TestCase):
    """Shared set-up: a temp directory with a fake repository in it."""

    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="reduce-scripts-")
        self.addCleanup(shutil.rmtree, self.top)
        self.root = make_root(self.top)
        self.out = os.path.join(self.top, "results")
        self.log = os.path.join(self.top, "programs.log")

    def run_script(self, script, args, **env):
        proc = subprocess.run([sys.executable, script] + list(args), capture_output=True,
                              text=True, env=clean_env(FAKE_LOG=self.log, **env), timeout=300)
        self.assertNotIn("Traceback", proc.stderr)
        return proc

    def bench(self, *args, **env):
        return self.run_script(BENCH, ["--root", self.root, "--out-dir", self.out] + list(args),
                               **env)

    def assert_one_line(self, text, prefix):
        lines = text.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, text)
        self.assertTrue(lines[0].startswith(prefix), lines[0])
        return lines[0]


# ------------------------------------------------------------------ bench

class BenchUnitTest(ScriptTest):
    def test_discovery_orders_by_step_number(self):
        os.makedirs(os.path.join(self.root, "step2_notes"))  # no source, no binary: ignored
        os.makedirs(os.path.join(self.root, "stepx_bad"))
        self.assertEqual(bench.program_dirs(self.root),
                         ["step0_a", "step1_b", "step10_c", "baseline_cub"])

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


class BenchRunTest(ScriptTest):
    def test_quick_runs_every_program_at_two_sizes(self):
        proc = self.bench("--quick", "--reps", "5", "--warmup", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(self.log) as f:
            calls = [line.split() for line in f]
        self.assertEqual([(c[0], c[2]) for c in calls],
                         [(s, n) for s in ("step0_a", "step1_b", "step10_c", "cub")
                          for n in ("1048576", "33554432")])
        for call in calls:
            self.assertEqual(call[3:], ["--csv", call[4], "--reps", "5", "--warmup", "1"])

    def test_progress_lines_come_from_the_csv(self):
        proc = self.bench("--quick")
        progress = [l for l in proc.stdout.splitlines() if l.startswith("[")]
        self.assertEqual(len(progress), 8)
        self.assertRegex(progress[0],
                         r"^\[1/8\] step0_a\s+n=1048576\s+\d+\.\d us\s+\d+ GB/s  PASS$")
        self.assertIn("step10_c", progress[5])
        self.assertNotIn("ok", proc.stdout)  # the programs' own stdout is not shown

    def test_results_file_named_by_gpu_replaces_old_one(self):
        os.makedirs(self.out)
        for name in ("h200.csv", "a100.csv"):
            with open(os.path.join(self.out, name), "w") as f:
                f.write("old\n")
        proc = self.bench("--quick", FAKE_GPU="NVIDIA H200")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = bench.read_rows(os.path.join(self.out, "h200.csv"))
        self.assertEqual(len(rows), 8)
        self.assertEqual(list(rows[0]), CONTRACT_COLUMNS)
        self.assertEqual([r["step"] for r in rows[-2:]], ["cub", "cub"])
        with open(os.path.join(self.out, "a100.csv")) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(sorted(os.listdir(self.out)),  # no temporary file left
                         ["a100.csv", "h200-bench.log", "h200.csv"])
        lines = proc.stdout.splitlines()
        self.assertTrue(lines[-2].startswith("results: ") and lines[-2].endswith("h200.csv"))
        self.assertRegex(lines[-1], r"^bench: 8 runs in \d+\.\d s -> .*h200\.csv$")

    def test_slug_of_consumer_gpu(self):
        proc = self.bench("--quick", FAKE_GPU="NVIDIA GeForce RTX 4090")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["geforce-rtx-4090-bench.log", "geforce-rtx-4090.csv"])

    def test_out_of_memory_is_skipped(self):
        proc = self.bench("--quick", FAKE_OOM_ABOVE=str(1 << 24))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for step in ("step0_a", "step1_b", "step10_c", "baseline_cub"):
            self.assertIn(f"skip: {step} n=33554432 does not fit in device memory", proc.stdout)
        rows = bench.read_rows(os.path.join(self.out, "h200.csv"))
        self.assertEqual({r["n"] for r in rows}, {"1048576"})
        self.assertIn("(4 skipped)", proc.stdout.splitlines()[-1])

    def test_no_device_stops_with_one_line(self):
        proc = self.bench("--quick", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        self.assert_one_line(proc.stderr, "bench: no CUDA device: no CUDA device found")
        self.assertEqual(proc.stdout, "")
        self.assertEqual(os.listdir(self.out), [])
        with open(self.log) as f:
            self.assertEqual(len(f.readlines()), 1)  # stopped after the first run

    def test_wrong_result_is_a_failure_but_results_are_kept(self):
        proc = self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("bench: step1_b n=1048576 failed (exit 1): error: wrong result", proc.stderr)
        self.assertIn("command: " + os.path.join(self.root, "step1_b", "run"), proc.stderr)
        self.assertRegex(proc.stdout, r"step1_b\s+n=1048576 .*  FAIL\n")
        rows = bench.read_rows(os.path.join(self.out, "h200.csv"))
        self.assertEqual(len(rows), 8)
        self.assertRegex(proc.stdout.splitlines()[-1], r"^bench: 8 runs \(2 failed\) in ")

    def test_log_holds_everything_printed(self):
        proc = self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        with open(os.path.join(self.out, "h200-bench.log")) as f:
            log = f.read().splitlines()
        self.assertEqual(log[0], f"$ bench.py --root {self.root} --out-dir {self.out} --quick")
        for line in proc.stdout.splitlines() + proc.stderr.splitlines():
            self.assertIn(line, log)
        self.assertRegex(log[-1], r"^bench: 8 runs \(2 failed\) in ")
        self.assertIn("bench: 2 of 8 runs failed (see above); rows of wrong sums are kept, "
                      "with pass = 0", log)

    def test_failed_rows_stay_in_the_csv(self):
        self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        rows = schema.read_results(os.path.join(self.out, "h200.csv"))
        self.assertEqual([(r.step, r.pass_) for r in rows if not r.passed],
                         [("step1_b", 0), ("step1_b", 0)])
        self.assertEqual(len(rows), 8)

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
        self.assertEqual(os.listdir(self.out), [])

    def test_missing_binary_asks_for_make(self):
        os.remove(os.path.join(self.root, "step1_b", "run"))
        open(os.path.join(self.root, "step1_b", "reduce.cu"), "w").close()
        proc = self.bench("--quick")
        self.assertEqual(proc.returncode, 2)
        line = self.assert_one_line(proc.stderr, "bench: not built: step1_b/run")
        self.assertIn("make", line)
        self.assertFalse(os.path.exists(self.log))


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
        self.assert_one_line(proc.stderr, "profile: no CUDA device: no CUDA device found")

    def test_no_device_in_gpu_probe(self):
        proc = self.profile("--all", "--csv", os.path.join(self.top, "p.csv"), FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        self.assert_one_line(proc.stderr, "profile: no CUDA device: ")
        self.assertFalse(os.path.exists(self.ncu_log))  # stopped before running ncu

    def test_ncu_not_found(self):
        empty = os.path.join(self.top, "empty")
        os.makedirs(empty)
        proc = self.profile("--step", "0", PATH=empty, REDUCE_NCU_PATHS="")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "profile: ")
        self.assertEqual(line, "profile: ncu (Nsight Compute) not found; "
                               "install it or add it to PATH")

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
needs_matplotlib = unittest.skipUnless(PLOT_PYTHON, "no Python with matplotlib (PLOT_PYTHON)")

README = "# Demo\n\n<!-- BEGIN results -->\nkept as it is\n<!-- END results -->\n"


class MakeTargetTest(ScriptTest):
    """make bench and make profile-all in a scratch copy of the Makefile and the
    scripts, with the fake programs as the step directories (PROGRAMS= keeps
    make from building anything)."""

    def setUp(self):
        super().setUp()
        shutil.copy(os.path.join(REPO, "Makefile"), self.root)
        os.makedirs(os.path.join(self.root, "tools"), exist_ok=True)
        for name in os.listdir(os.path.join(REPO, "tools")):
            if name.endswith(".py") or name == "requirements.txt":
                shutil.copy(os.path.join(REPO, "tools", name), os.path.join(self.root, "tools"))
        self.readme = os.path.join(self.root, "README.md")
        with open(self.readme, "w") as f:
            f.write(README)
        self.env_log = os.path.join(self.top, "env.log")

    def make(self, *args, plot_python=None, **env):
        cmd = ["make", "--no-print-directory", *args, "PROGRAMS=", "BENCH_FLAGS=--quick",
               f"PLOT_PYTHON={plot_python or PLOT_PYTHON or sys.executable}"]
        environment = clean_env(FAKE_LOG=self.log, FAKE_ENV_LOG=self.env_log, **env)
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
        self.assertEqual(sorted(os.listdir(self.file("scratch"))),
                         ["h200-bench.log", "h200-progression.png", "h200-sweep.png",
                          "h200-vs-cub.png", "h200.csv"])
        self.assertIn("plot.py: wrote " + self.file("scratch", "h200-sweep.png"), proc.stdout)
        self.assertFalse(os.path.exists(self.file("plots", "results")))
        self.assert_readme_untouched()

    @needs_matplotlib
    def test_bench_default_out_dir_is_plots_results(self):
        proc = self.make("bench")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(os.path.isfile(self.file("plots", "results", "h200.csv")))
        self.assertTrue(os.path.isfile(self.file("plots", "results", "h200-sweep.png")))
        self.assert_readme_untouched()

    @needs_matplotlib
    def test_bench_failure_fails_make_but_keeps_log_rows_and_charts(self):
        proc = self.make("bench", "OUT_DIR=scratch", FAKE_WRONG_STEP="step1_b")
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("bench: 2 of 8 runs failed", proc.stderr)
        with open(self.file("scratch", "h200-bench.log")) as f:
            self.assertIn("bench: step1_b n=1048576 failed (exit 1)", f.read())
        rows = schema.read_results(self.file("scratch", "h200.csv"))
        self.assertEqual(sum(1 for r in rows if not r.passed), 2)
        # Drawn all the same, and without the failed rows (the plot says so).
        self.assertTrue(os.path.isfile(self.file("scratch", "h200-sweep.png")))
        self.assertIn("plot.py: h200.csv: left out 2 of 8 rows: 2 failed", proc.stderr)
        self.assert_readme_untouched()

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
        self.assertEqual(sorted(os.listdir(reference)),
                         ["gpu-accuracy.csv", "gpu-accuracy.png", "gpu-profile.csv",
                          "gpu-profile.png", "gpu-progression.png", "gpu-sweep.png",
                          "gpu-vs-cub.png", "gpu.csv"])
        self.assertEqual(sorted(os.listdir(self.file("plots", "diagrams"))),
                         [f"{step}-banks.png", f"{step}-lanes.png"])
        self.assert_readme_untouched()
        with open(self.file(step, "README.md")) as f:
            self.assertEqual(f.read(), step_readme)   # make docs fills it, not make plot

    def profile_all(self, *args):
        bindir = make_ncu(self.top)
        return self.make("profile-all", *args,
                         PATH=bindir + os.pathsep + os.environ.get("PATH", ""))

    def test_profile_all_writes_out_dir(self):
        proc = self.profile_all("OUT_DIR=prof")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(os.listdir(self.file("prof")), ["h200-profile.csv"])
        rows = schema.load_profile(self.file("prof", "h200-profile.csv"))
        self.assertEqual({r.code_hash for r in rows if r.step == "step10_c"},
                         {fake_hash("step10_c")})
        self.assert_readme_untouched()

    def test_device_selects_cuda_visible_devices(self):
        self.assertEqual(self.profile_all("OUT_DIR=prof", "DEVICE=3").returncode, 0)
        with open(self.env_log) as f:
            seen = {line.split()[1] for line in f}
        self.assertEqual(seen, {"CUDA_VISIBLE_DEVICES=3"})
        os.remove(self.env_log)
        self.assertEqual(self.profile_all("OUT_DIR=prof").returncode, 0)
        with open(self.env_log) as f:
            self.assertEqual({line.split()[1] for line in f}, {"CUDA_VISIBLE_DEVICES=-"})


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from counting import run_module
    sys.exit(run_module("scripts", verbosity=1))
