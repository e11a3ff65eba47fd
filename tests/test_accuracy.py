#!/usr/bin/env python3
"""Tests of the accuracy lesson, no GPU needed. Run: python3 tests/test_accuracy.py

- tools/accuracy.py against fake programs that take the harness's flags and
  write rows in the results CSV layout (common/README.md, the header of
  common/harness.h), exit codes included; of the extras, only those in
  ACCURACY_EXTRAS are measured (extras/atomic_step9 is the determinism demo);
- the chart (tools/accuracy_chart.py) and the ACCURACY.md block
  (tools/accuracy_docs.py) from tests/accuracy/fixture-accuracy.csv, a file
  of INVENTED numbers that no page may show;
- the float32 arithmetic and the textbook bounds that ACCURACY.md relies on;
- the machine code of extras/kahan_step8 (needs nvcc and cuobjdump);
- tools/bf16_sum.c (make bf16-sum): the bfloat16 stall that both ACCURACY
  pages quote.
The last line is `accuracy: N passed, N failed[, N skipped]`.
"""
import csv
import importlib.util
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from fakes import (FAKE_ARCH, FAKE_TOOLCHAIN, HARNESS_COLUMNS, fake_gpu_tools,
                   fake_repo)
from fractions import Fraction

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import accuracy  # noqa: E402
import accuracy_data as data  # noqa: E402
import accuracy_docs  # noqa: E402

SCRIPT = os.path.join(REPO, "tools", "accuracy.py")
CHART = os.path.join(REPO, "tools", "accuracy_chart.py")
FIXTURE = os.path.join(REPO, "tests", "accuracy", "fixture-accuracy.csv")
PAGE = os.path.join(REPO, "ACCURACY.md")
REFERENCE = os.path.join(REPO, "plots", "reference", "h200-accuracy.csv")
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
# The font of the Chinese charts (tools/chart_zh.py), pinned beside matplotlib.
HAVE_FONT = importlib.util.find_spec("pylopdf_fonts_zh_cn") is not None

# The header every program writes (common/harness.h), part 2's columns
# included: empty in these part 1 rows.
COLUMNS = list(HARNESS_COLUMNS)

# A step program as common/README.md describes it, --checks FILE and --runs
# FILE included (one process, many runs), --no-verify, --version and
# --gpu-info; FAKE_* variables pick its faults. FAKE_LOG gets a line per
# process ("pid step argv") and one per batched run ("pid step == options").
# extras/atomic_step9 is the determinism demo: its sums move from process to
# process and from repetition to repetition, so its timed runs fail.
FAKE_PROGRAM = r'''#!{python}
import csv, os, struct, sys, time

COLUMNS = {columns!r}
VALUED = ("-n", "--reps", "--warmup", "--seed", "--fill", "--offset", "--csv", "--device", "--at",
          "--checks", "--runs")
STEP = os.path.basename(os.path.dirname(os.path.abspath(__file__)))
STEP = "cub" if STEP == "baseline_cub" else STEP
ATOMIC = STEP == "atomic_step9"


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def log(words):
    if os.environ.get("FAKE_LOG"):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(" ".join([str(os.getpid()), STEP] + words) + "\n")


def parse(argv):
    opts, flags, i = {{}}, set(), 0
    while i < len(argv):
        if argv[i] in VALUED:
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            flags.add(argv[i])
            i += 1
    return opts, flags


def run(opts, flags):
    step = STEP
    fill = opts.get("--fill", "exact" if "--check" in flags else "random")
    if fill not in ("random", "positive", "wide", "ones", "ints", "onehot", "exact"):
        print(f"error: --fill: unknown fill '{{fill}}'", file=sys.stderr)
        return 2
    n, seed = int(opts.get("-n", "33554432")), int(opts.get("--seed", "1"))
    if n > int(os.environ.get("FAKE_OOM_ABOVE", str(1 << 40))):
        print(f"error: out of device memory allocating {{4 * n}} bytes", file=sys.stderr)
        sys.exit(3)  # CHECK_CUDA ends the process, a batch included
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    wrong = os.environ.get("FAKE_WRONG_STEP") == step
    sum_abs = 0.5 * n
    reference = 0.01 * n + seed
    result = f32(reference * (1 + 1e-7 * len(step)) + (1000 if wrong else 0))
    if os.environ.get("FAKE_NOISY_STEP") == step or ATOMIC:
        result = f32(result * (1 + (os.getpid() % 100000) * 1e-7))  # a race: bits move
    check = "--check" in flags
    # atomicAdd's order changes between repetitions: a timed run sees several sums.
    moved = ATOMIC and not check
    gpu = os.environ.get("FAKE_GPU", "NVIDIA H200")
    if os.environ.get("FAKE_ALT_GPU_STEP") == step:
        gpu = "NVIDIA A100-SXM4-80GB"
    median = 4 * n / 4000.0 / 1e3 * (1.01 if "kahan" in step else 1.0)
    row = dict(step=step, n=n, reps=1 if check else opts.get("--reps", 20),
               warmup=0 if check else opts.get("--warmup", 3),
               median_us="" if check else f"{{median:.3f}}", min_us="" if check else median,
               max_us="" if check else median, gbps="" if check else 4000.0,
               pct_peak="" if check else 83.0, result=f"{{result:.9g}}",
               reference=f"{{reference:.17g}}", abs_err=f"{{abs(result - reference):.3g}}",
               tol=1.0, **{{"pass": 0 if wrong or moved else 1}}, gpu=gpu, cc="9.0",
               driver="580.159.04", cuda="13.0", peak_gbps=4814.0, l2_mb=62.9, sms=132,
               flush=0 if check or "--no-flush" in flags else 1, offset=0, fill=fill, seed=seed,
               git_rev="abc1234", mode="check" if check else "timed", distinct=3 if moved else 1,
               code_hash="0123456789ab", sum_abs=f"{{sum_abs:.17g}}",
               cpu_seq=f"{{f32(reference * 0.999):.9g}}" if "--cpu-sums" in flags else "",
               cpu_kahan=f"{{f32(reference):.9g}}" if "--cpu-sums" in flags else "",
               rows="", cols="", op="", bytes=4 * n, arch={arch!r}, toolchain={toolchain!r})
    old = os.environ.get("FAKE_OLD_HARNESS") and check  # before --csv worked with --check
    if "--csv" in opts and not old:
        new = not os.path.exists(opts["--csv"]) or os.path.getsize(opts["--csv"]) == 0
        with open(opts["--csv"], "a", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
            if new:
                writer.writeheader()
            writer.writerow(row)
    print(f"{{step}} n={{n}}: human output the scripts must ignore")
    if wrong:
        print("FAIL: the run gave a wrong sum", flush=True)
        print(f"error: wrong result: got {{result}}, expected {{reference}}", file=sys.stderr)
        return 1
    if moved:
        print(f"FAIL: timed run 2 gave {{result}} but run 1 gave {{reference}}: a race?",
              flush=True)
        return 1
    print("PASS", flush=True)
    return 0


def run_lines(opts, flags, check_only):
    """--checks FILE (check mode forced) or --runs FILE: one line of options each."""
    flag = "--checks" if check_only else "--runs"
    if check_only and os.environ.get("FAKE_NO_CHECKS"):  # a harness from before --checks
        print("error: unknown option: --checks", file=sys.stderr)
        return 2
    worst = 0
    with open(opts[flag]) as f:
        lines = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    for k, line in enumerate(lines):
        log(["==", line])
        if os.environ.get("FAKE_CRASH_STEP") == STEP and k == 1:
            # A CUDA error poisons the context: the batch ends here.
            print("error: CUDA error: unspecified launch failure", file=sys.stderr)
            return 3
        print(f"== {{'check' if check_only else 'run'}} {{line}}", flush=True)
        line_opts, line_flags = parse(line.split())
        line_opts["--csv"] = opts.get("--csv")
        line_flags |= flags & {{"--no-verify", "--no-flush", "--cpu-sums"}}
        worst = max(worst, run(line_opts, line_flags | ({{"--check"}} if check_only else set())))
    return worst


def main():
    opts, flags = parse(sys.argv[1:])
    if "--version" in flags:
        print(f"{{STEP}} code_hash=0123456789ab git_rev=abc1234 arch={arch} "
              f"toolchain={toolchain}")
        return 0
    log(sys.argv[1:])
    if os.environ.get("FAKE_NO_DEVICE"):
        print("error: no CUDA device: no CUDA-capable device is detected", file=sys.stderr)
        return 3
    if "--gpu-info" in flags:
        print("gpu=" + os.environ.get("FAKE_GPU", "NVIDIA H200"))
        print("cc=9.0\nsms=132\nsm_threads=2048\nl2_bytes=62914560\nfree_bytes=147000000000\n"
              "total_bytes=150000000000\npeak_gbps=4814.0\ndriver=580.159.04\ncuda=13.0")
        return 0
    if "--checks" in opts or "--runs" in opts:
        return run_lines(opts, flags, "--checks" in opts)
    return run(opts, flags)


sys.exit(main())
'''


def make_root(top, programs=("step0_a", "step8_vector", "baseline_cub", "extras/kahan_step8",
                             "extras/atomic_step9")):
    # -S: no site-packages to scan at each of the fakes' many starts (stdlib only).
    return fake_repo(top, programs, FAKE_PROGRAM.format(python=sys.executable + " -S",
                                                        columns=COLUMNS, arch=FAKE_ARCH,
                                                        toolchain=FAKE_TOOLCHAIN))


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def f32(x):
    """x rounded to the nearest float32, ties to even, as the GPU's FADD does."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
    env.update(extra)
    return env


# ------------------------------------------------------------------ the plan

class PlanTest(unittest.TestCase):
    PROGRAMS = [("step0_a", "/r/step0_a/run"), ("step8_vector", "/r/step8_vector/run"),
                ("baseline_cub", "/r/baseline_cub/run"),
                ("extras/kahan_step8", "/r/extras/kahan_step8/run")]

    def test_full_plan(self):
        checks, costs = accuracy.plan(self.PROGRAMS)
        main = [r for r in checks if r.phase == "check"]
        inputs = {(r.fill, r.n, r.seed) for r in main}
        self.assertEqual({r.fill for r in main}, {"random", "positive", "wide"})
        self.assertEqual(sorted({r.n for r in main}), [1 << k for k in (10, 13, 16, 19, 22, 25, 28)])
        for fill, n, seed in inputs:
            self.assertIn(seed, (1, 2, 3) if n <= 1 << 22 else (1,))
        self.assertEqual(len(inputs), 3 * (5 * 3 + 2))
        self.assertEqual(len(main), len(inputs) * len(self.PROGRAMS))
        for r in main:
            self.assertEqual(r.args[:7], ("--check", "--fill", r.fill, "-n", str(r.n),
                                          "--seed", str(r.seed)))
            self.assertEqual("--cpu-sums" in r.args, r.name == "baseline_cub", r)
        repeats = [r for r in checks if r.phase == "repeat"]
        self.assertEqual([(r.name, r.fill, r.n, r.seed) for r in repeats],
                         [(name, "random", 1 << 22, 1) for name, _ in self.PROGRAMS])
        self.assertTrue(all((r.fill, r.n, r.seed) in inputs for r in repeats))
        self.assertEqual([(r.name, r.n, r.round) for r in costs],
                         [(name, n, k) for n in (1 << 25, 1 << 28) for k in (1, 2, 3)
                          for name in ("step8_vector", "extras/kahan_step8")])
        self.assertTrue(all("--check" not in r.args for r in costs))
        self.assertEqual(len(set(checks + costs)), len(checks + costs))  # one CSV file each

    def test_batches(self):
        checks, _ = accuracy.plan(self.PROGRAMS)
        batches = accuracy.batches(checks)
        # Per program: the small checks, the 2^28 checks, the repeat.
        self.assertEqual(len(batches), 3 * len(self.PROGRAMS))
        for batch in batches:
            self.assertEqual({(r.name, r.path, r.phase, r.big) for r in batch.runs},
                             {(batch.name, batch.path, batch.runs[0].phase, batch.big)})
        flat = sorted((r for b in batches for r in b.runs), key=checks.index)
        self.assertEqual(flat, checks)
        for batch in batches:   # plan order inside a batch
            self.assertEqual(list(batch.runs), sorted(batch.runs, key=checks.index))
        cub = next(b for b in batches if b.name == "baseline_cub" and not b.big)
        lines = cub.lines().splitlines()
        self.assertEqual(len(lines), len(cub.runs))
        self.assertEqual(lines[0], "--fill random -n 1024 --seed 1 --cpu-sums")

    def test_processes_for_twelve_programs(self):
        # The shipped set: 10 steps, CUB and extras/kahan_step8. Starting a CUDA
        # process costs up to a second on the H200; about 50 of them, not 600.
        names = [f"step{k}_x" if k != 8 else "step8_vector" for k in range(10)]
        names += ["baseline_cub", "extras/kahan_step8"]
        programs = [(name, f"/r/{name}/run") for name in names]
        checks, costs = accuracy.plan(programs)
        self.assertEqual(len(checks), 12 * (3 * (5 * 3 + 2)) + 12)
        self.assertEqual(1 + len(accuracy.batches(checks[1:])) + len(costs), 1 + 36 + 12)

    def test_big_runs_are_the_2_28_ones(self):
        checks, _ = accuracy.plan(self.PROGRAMS)
        self.assertEqual({r.n for r in checks if r.big}, {1 << 28})

    def test_without_the_kahan_pair_there_is_no_cost_phase(self):
        _, costs = accuracy.plan(self.PROGRAMS[:1] + self.PROGRAMS[2:3])
        self.assertEqual(costs, [])

    def test_quick_plan(self):
        checks, costs = accuracy.plan(self.PROGRAMS, quick=True)
        self.assertEqual(sorted({r.n for r in checks}), [1 << 10, 1 << 16])
        self.assertEqual({r.seed for r in checks}, {1})
        self.assertEqual([(r.name, r.n) for r in costs],
                         [("step8_vector", 1 << 20), ("extras/kahan_step8", 1 << 20)])

    def test_extras_are_found_after_cub_and_named_by_their_directory(self):
        top = tempfile.mkdtemp(prefix="accuracy-")
        self.addCleanup(shutil.rmtree, top)
        root = make_root(top, ("step1_b", "step0_a", "baseline_cub", "extras/kahan_step8",
                               "extras/atomic_step9"))
        os.makedirs(os.path.join(root, "extras", "notes"))  # no program in it: ignored
        names = [name for name, _ in accuracy.find_programs(root)]
        # extras/atomic_step9 is the determinism lesson's: not in ACCURACY_EXTRAS.
        self.assertEqual(names, ["step0_a", "step1_b", "baseline_cub", "extras/kahan_step8"])
        self.assertEqual(accuracy.ACCURACY_EXTRAS, ("kahan_step8",))
        self.assertEqual(accuracy.program_label("extras/kahan_step8"), "kahan_step8")
        self.assertEqual(accuracy.program_label("baseline_cub"), "cub")


class RunParallelTest(unittest.TestCase):
    def test_caps_and_order(self):
        runs = [accuracy.Run(f"p{i}", "", "check", 1 << (28 if i % 3 == 0 else 10), "random",
                             1, ()) for i in range(24)]
        lock, active, seen, started = threading.Lock(), [0, 0], [0, 0], []

        def work(run):
            with lock:
                active[0] += 1
                active[1] += run.big
                seen[0], seen[1] = max(seen[0], active[0]), max(seen[1], active[1])
                started.append(run)
            time.sleep(0.01)
            with lock:
                active[0] -= 1
                active[1] -= run.big

        accuracy.run_parallel(runs, work, 4, 2, threading.Event())
        self.assertEqual(sorted(r.name for r in started), sorted(r.name for r in runs))
        self.assertEqual(seen, [4, 2])
        # Long runs start first, so none trails at the end.
        last_big = max(i for i, r in enumerate(started) if r.big)
        self.assertLess(last_big, max(i for i, r in enumerate(started) if not r.big))

    def test_stop_leaves_the_rest(self):
        stop, done = threading.Event(), []
        runs = [accuracy.Run(f"p{i}", "", "check", 1024, "random", 1, ()) for i in range(20)]

        def work(run):
            done.append(run)
            stop.set()

        accuracy.run_parallel(runs, work, 1, 1, stop)
        self.assertEqual(len(done), 1)


# ------------------------------------------------------- the script, end to end

class ScriptTest(unittest.TestCase):
    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="accuracy-")
        self.addCleanup(shutil.rmtree, self.top)
        self.root = make_root(self.top)
        self.out = os.path.join(self.top, "results")
        self.log = os.path.join(self.top, "calls.log")

    def run_script(self, *args, **env):
        # -S: accuracy.py needs the standard library only; site's start-up hooks cost more.
        proc = subprocess.run([sys.executable, "-S", SCRIPT, "--root", self.root, "--out-dir", self.out,
                               *args], capture_output=True, text=True, timeout=300,
                              env=clean_env(FAKE_LOG=self.log, **env))
        self.assertNotIn("Traceback", proc.stderr)
        return proc

    def log_lines(self):
        with open(self.log) as f:
            return [line.split() for line in f]

    def calls(self):
        """[[step, argument, ...]] of every process started, in order."""
        return [words[1:] for words in self.log_lines() if words[2:3] != ["=="]]

    def batched(self):
        """{pid: [(step, options of a check), ...]} of the --checks processes."""
        found = {}
        for pid, step, *rest in self.log_lines():
            if rest[:1] == ["=="]:
                found.setdefault(pid, []).append((step, " ".join(rest[1:])))
        return found

    def one_line(self, text, prefix):
        lines = text.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, text)
        self.assertTrue(lines[0].startswith(prefix), lines[0])
        return lines[0]

    def test_an_out_dir_that_is_a_file_is_a_usage_error(self):
        open(self.out, "w").close()
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("accuracy.py: error: --out-dir", proc.stderr)
        self.assertFalse(os.path.exists(self.log))   # no program ran

    def test_quick_run_files_every_row_in_plan_order(self):
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(self.out), ["h200-accuracy.csv"])  # no temporary left
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        with open(os.path.join(self.out, "h200-accuracy.csv")) as f:
            self.assertEqual(f.readline().rstrip("\n").split(","), COLUMNS)
        checks, costs = accuracy.plan(accuracy.find_programs(self.root), quick=True)
        self.assertEqual(len(rows), len(checks) + len(costs))
        self.assertEqual([(r["step"], r["fill"], r["n"], r["mode"]) for r in rows],
                         [(accuracy.program_label(p.name), p.fill, str(p.n),
                           "timed" if p.phase == "cost" else "check") for p in checks + costs])
        self.assertEqual({r["step"] for r in rows if r["cpu_seq"]}, {"cub"})
        # One process for the probe, one per batch, one per timed run.
        processes = 1 + len(accuracy.batches(checks[1:])) + len(costs)
        self.assertEqual(len(self.calls()), processes)
        self.assertEqual(sum(len(c) for c in self.batched().values()), len(checks) - 1)
        lines = proc.stdout.splitlines()
        self.assertEqual(lines[-2], "results: " + os.path.join(self.out, "h200-accuracy.csv"))
        self.assertRegex(lines[-1], rf"^accuracy: {len(rows)} runs in {processes} processes, "
                                    r"\d+\.\d s -> ")
        self.assertRegex(proc.stdout, r"step0_a\s+check\s+wide\s+n=1024\s+seed 1  "
                                      r"rel err \d\.\de-\d\d  PASS")
        self.assertNotIn("human output", proc.stdout)

    def test_only_the_listed_extras_are_measured(self):
        # extras/atomic_step9 is built beside kahan_step8 (make builds every
        # extras/*/reduce.cu) but its sums move from run to run on purpose:
        # the accuracy lesson never starts it.
        self.assertTrue(os.path.isfile(os.path.join(self.root, "extras", "atomic_step9", "run")))
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("atomic_step9", {call[0] for call in self.calls()})
        self.assertNotIn("atomic_step9", proc.stdout + proc.stderr)
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        self.assertEqual({r["step"] for r in rows},
                         {"step0_a", "step8_vector", "cub", "kahan_step8"})
        self.assertNotIn("Different bits", block(rows))
        # The atomic fake does what the real one does: a timed run fails.
        atomic = subprocess.run([os.path.join(self.root, "extras", "atomic_step9", "run"), "-n",
                                 "1024"], capture_output=True, text=True, timeout=60)
        self.assertEqual(atomic.returncode, 1)
        self.assertIn("a race?", atomic.stdout)

    def test_rows_carry_the_harness_columns(self):
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        self.assertEqual(list(rows[0]), COLUMNS)
        self.assertEqual({(r["rows"], r["cols"], r["op"]) for r in rows}, {("", "", "")})
        self.assertEqual({(r["arch"], r["toolchain"]) for r in rows},
                         {(FAKE_ARCH, FAKE_TOOLCHAIN)})
        self.assertTrue(all(r["bytes"] == str(4 * int(r["n"])) for r in rows))
        # The timed rows of the cost phase: L2 flushed, as make bench times.
        timed = [r for r in rows if r["mode"] == "timed"]
        self.assertEqual({(r["step"], r["flush"]) for r in timed},
                         {("step8_vector", "1"), ("kahan_step8", "1")})

    def test_cost_runs_come_last_and_alone(self):
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        calls = self.calls()
        self.assertEqual([c[0] for c in calls[-2:]], ["step8_vector", "kahan_step8"])
        for call in calls[-2:]:
            self.assertNotIn("--check", call)
            self.assertEqual(call[1:7], ["--fill", "random", "-n", str(1 << 20), "--seed", "1"])

    def test_wrong_sum_is_a_failure_and_its_rows_are_kept(self):
        proc = self.run_script("--quick", FAKE_WRONG_STEP="step0_a")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("accuracy: step0_a n=1024 fill=random failed (exit 1): FAIL: the run gave "
                      "a wrong sum", proc.stderr)
        self.assertIn("command: " + os.path.join(self.root, "step0_a", "run") + " --check",
                      proc.stderr)
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        self.assertEqual({r["pass"] for r in rows if r["step"] == "step0_a"}, {"0"})
        self.assertRegex(proc.stdout.splitlines()[-1], r"^accuracy: \d+ runs \(7 failed\) in ")
        # A failure inside a batch names its own check, as a command to rerun alone.
        self.assertIn("accuracy: step0_a n=65536 fill=wide failed (exit 1): FAIL: the run gave "
                      "a wrong sum", proc.stderr)
        self.assertIn("command: " + os.path.join(self.root, "step0_a", "run")
                      + " --check --fill wide -n 65536 --seed 1\n", proc.stderr)

    def test_no_device_stops_at_the_first_run(self):
        proc = self.run_script("--quick", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.one_line(proc.stderr, "accuracy: no CUDA device: ")
        self.assertEqual(line.count("no CUDA device"), 1, line)
        self.assertEqual(len(self.calls()), 1)
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))

    def test_old_harness_asks_for_a_rebuild(self):
        proc = self.run_script("--quick", FAKE_OLD_HARNESS="1")
        self.assertEqual(proc.returncode, 2)
        line = self.one_line(proc.stderr, "accuracy: step0_a `--check --fill random")
        self.assertIn("no CSV row in check mode; rebuild every program with make", line)
        self.assertEqual(len(self.calls()), 1)

    def test_out_of_memory_is_skipped(self):
        proc = self.run_script("--quick", FAKE_OOM_ABOVE=str(1 << 12))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("skip: extras/kahan_step8 n=65536 does not fit in device memory",
                      proc.stdout)
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        self.assertEqual({r["n"] for r in rows}, {"1024"})

    def test_rows_from_two_gpus_are_not_filed(self):
        proc = self.run_script("--quick", FAKE_ALT_GPU_STEP="step8_vector")
        self.assertEqual(proc.returncode, 1)
        self.one_line(proc.stderr, "accuracy: rows from several GPUs in one run")
        self.assertEqual(os.listdir(self.out), [])

    def test_unbuilt_program(self):
        os.remove(os.path.join(self.root, "extras", "kahan_step8", "run"))
        open(os.path.join(self.root, "extras", "kahan_step8", "reduce.cu"), "w").close()
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 2)
        self.one_line(proc.stderr, "accuracy: not built: extras/kahan_step8/run")

    def test_a_noisy_program_shows_in_the_run_to_run_sentence(self):
        proc = self.run_script("--quick", FAKE_NOISY_STEP="step8_vector")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        again = data.run_to_run(rows)
        self.assertEqual(again, {("random", 1 << 16, 1): {"step0_a": True, "step8_vector": False,
                                                          "cub": True, "kahan_step8": True}})
        self.assertIn("Different bits: step8_vector.", block(rows))

    def test_checks_run_in_batches_and_a_repeat_in_a_new_process(self):
        proc = self.run_script("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        batched = self.batched()
        self.assertTrue(batched)
        for checks in batched.values():
            self.assertEqual(len({step for step, _ in checks}), 1, checks)  # one program each
        repeat = "--fill random -n 65536 --seed 1"
        for step in ("step0_a", "step8_vector", "cub", "kahan_step8"):
            holding = [pid for pid, checks in batched.items()
                       if any(c == (step, repeat) or c == (step, repeat + " --cpu-sums")
                              for c in checks)]
            self.assertEqual(len(holding), 2, step)  # the first run and its repeat

    def test_a_batch_that_dies_runs_the_rest_alone(self):
        proc = self.run_script("--quick", FAKE_CRASH_STEP="step8_vector")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, costs = accuracy.plan(accuracy.find_programs(self.root), quick=True)
        rows = read_csv(os.path.join(self.out, "h200-accuracy.csv"))
        self.assertEqual([(r["step"], r["fill"], r["n"]) for r in rows],
                         [(accuracy.program_label(p.name), p.fill, str(p.n))
                          for p in checks + costs])
        alone = [c for c in self.calls() if c[0] == "step8_vector" and "--check" in c]
        self.assertTrue(alone)  # the checks after the crash, one process each

    def test_a_harness_without_checks_asks_for_a_rebuild(self):
        proc = self.run_script("--quick", FAKE_NO_CHECKS="1")
        self.assertEqual(proc.returncode, 2)
        line = self.one_line(proc.stderr, "accuracy: ")
        self.assertRegex(line, r"^accuracy: \S+ --checks: unknown option: --checks; "
                               r"rebuild every program with make$")
        self.assertFalse(os.path.exists(os.path.join(self.out, "h200-accuracy.csv")))


@unittest.skipUnless(HAVE_MATPLOTLIB, "no matplotlib: pip install -r tools/requirements.txt")
class MakeAccuracyTest(unittest.TestCase):
    """`make accuracy` in a scratch copy of the Makefile and the scripts, the
    fake programs as the steps (PROGRAMS= keeps make from building)."""

    PAGE = "# Page\n\n<!-- BEGIN accuracy -->\nkept as it is\n<!-- END accuracy -->\n"

    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="accuracy-make-")
        self.addCleanup(shutil.rmtree, self.top)
        self.root = make_root(self.top)
        self.log = os.path.join(self.top, "calls.log")

    def make_accuracy(self, gpu=True):
        shutil.copy(os.path.join(REPO, "Makefile"), self.root)
        shutil.copytree(os.path.join(REPO, "mk"), os.path.join(self.root, "mk"))
        os.makedirs(os.path.join(self.root, "tools"), exist_ok=True)
        for name in os.listdir(os.path.join(REPO, "tools")):
            if name.endswith((".py", ".sh")):
                shutil.copy(os.path.join(REPO, "tools", name), os.path.join(self.root, "tools"))
        # The Makefile reads its list of mutants when it starts; no mutant here.
        os.makedirs(os.path.join(self.root, "tests", "broken"))
        open(os.path.join(self.root, "tests", "broken", "mutants.txt"), "w").close()
        for page in ("ACCURACY.md", "README.md"):
            with open(os.path.join(self.root, page), "w") as f:
                f.write(self.PAGE)
        # tools/need_gpu.sh, the GPU check before the target, asks nvidia-smi
        # and ldconfig: fakes of a machine with a GPU (or without one).
        bindir = fake_gpu_tools(os.path.join(self.top, "gpu-bin"), gpu=gpu)
        return subprocess.run(["make", "--no-print-directory", "accuracy", "PROGRAMS=",
                               "OUT_DIR=scratch",
                               f"PLOT_PYTHON={sys.executable}"],
                              cwd=self.root, capture_output=True, text=True, timeout=300,
                              env=clean_env(FAKE_LOG=self.log, PATH=bindir + os.pathsep +
                                            os.environ.get("PATH", "")))

    def test_writes_rows_and_chart_and_never_a_page(self):
        proc = self.make_accuracy()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # The chart with its Chinese twin where the font is there, else one line says why.
        twin = ["h200-accuracy.zh-CN.png"] if HAVE_FONT else []
        if not HAVE_FONT:
            self.assertIn("chart_zh: pylopdf_fonts_zh_cn is not installed", proc.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, "scratch"))),
                         ["h200-accuracy.csv", "h200-accuracy.png"] + twin)
        for page in ("ACCURACY.md", "README.md"):
            with open(os.path.join(self.root, page)) as f:
                self.assertEqual(f.read(), self.PAGE, page)

    def test_without_a_gpu_it_stops_with_one_line(self):
        proc = self.make_accuracy(gpu=False)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        # make's own error line (the gpu-check prerequisite's $(error)), and nothing else.
        self.assertRegex(proc.stdout + proc.stderr, r"^mk/\w+\.mk:\d+: \*\*\* make accuracy: needs "
                                                     r"a CUDA GPU and this machine has none "
                                                     r"\([^)]*\); make help lists what works without one\.  Stop\.\n$")
        self.assertFalse(os.path.exists(self.log))   # no program ran
        self.assertFalse(os.path.exists(os.path.join(self.root, "scratch")))


# ----------------------------------------------------------- chart and block

def fixture_rows():
    return data.read_rows(FIXTURE)


def block(rows, lang="en", source="x-accuracy.csv"):
    return accuracy_docs.accuracy_block(rows, lang, source)


@unittest.skipUnless(HAVE_MATPLOTLIB, "no matplotlib: pip install -r tools/requirements.txt")
class ChartTest(unittest.TestCase):
    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="accuracy-chart-")
        self.addCleanup(shutil.rmtree, self.top)

    def draw(self, csv_path, out):
        return subprocess.run([sys.executable, CHART, csv_path, "--out-dir", out],
                              capture_output=True, text=True, timeout=300)

    def test_same_bytes_in_two_processes_and_failed_rows_left_out(self):
        # The fixture, failed rows included, and its passed rows alone, each
        # drawn by a process of its own: the same bytes show both that the
        # chart is deterministic and that no failed row reaches it.
        rows = fixture_rows()
        self.assertTrue(any(r["pass"] == "0" for r in rows))
        pngs = []
        for label, keep in (("all", rows), ("passed", [r for r in rows if r["pass"] == "1"])):
            folder = os.path.join(self.top, label)
            os.makedirs(folder)
            path = os.path.join(folder, "fixture-accuracy.csv")  # same name: same caption
            with open(path, "w", newline="") as f:
                writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
                writer.writeheader()
                writer.writerows(keep)
            proc = self.draw(path, folder)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(os.path.join(folder, "fixture-accuracy.png"), "rb") as f:
                pngs.append(f.read())
        self.assertTrue(pngs[0].startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertEqual(pngs[0], pngs[1])

    def test_no_check_rows_is_one_line(self):
        path = os.path.join(self.top, "timed-accuracy.csv")
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(r for r in fixture_rows() if r["mode"] == "timed")
        proc = self.draw(path, self.top)
        self.assertEqual(proc.returncode, 2)
        self.assertRegex(proc.stderr, r"^accuracy_chart: .*no verified check-mode rows.*\n$")

    def test_caption_names_the_gpu_from_the_data(self):
        import accuracy_chart
        text = accuracy_chart.caption(fixture_rows(), "x.csv")
        self.assertTrue(text.startswith("FIXTURE GPU (invented numbers, tests only) (132 SMs)"))
        self.assertIn("median of 3 seeds up to n = 2^16", text)


class BlockTest(unittest.TestCase):
    def test_english_block_from_fixture(self):
        text = block(fixture_rows(), source="plots/reference/x-accuracy.csv")
        self.assertTrue(text.startswith("Measured on FIXTURE GPU (invented numbers, tests only) "
                                        "(132 SMs; driver 000.00, CUDA 13.0) at revision fixture."))
        self.assertIn("![accuracy](plots/reference/x-accuracy.png)", text)
        self.assertIn("**Relative error at n = 2^28**", text)
        table = [line for line in text.splitlines() if line.startswith("| ")]
        self.assertEqual(table[0], "| program | random | positive | wide |")
        names = [line.split(" | ")[0][2:] for line in table[1:15]]
        self.assertEqual(names, ["step0_naive", "step1_divergence", "step2_bankconflict",
                                 "step3_idle", "step4_warp", "step5_unroll", "step6_multi",
                                 "step7_shfl", "step8_vector", "step9_singlepass", "cub",
                                 "kahan_step8", "CPU sequential float loop",
                                 "CPU Kahan float loop"])
        self.assertIn("pairwise ⌈log2 n⌉u = 1.7e-06", text)
        self.assertIn("| kahan_step8 us |", text)
        self.assertIn("12 of 12 programs ran a second time", text)

    def test_numbers_come_from_the_rows(self):
        rows = fixture_rows()
        row = next(r for r in rows if (r["step"], r["fill"], r["n"], r["mode"])
                   == ("step6_multi", "positive", str(1 << 28), "check"))
        err = abs(float(row["result"]) - float(row["reference"])) / float(row["sum_abs"])
        line = next(l for l in block(rows).splitlines()
                    if l.startswith("| step6_multi |"))
        self.assertEqual(line.split(" | ")[2], f"{err:.1e}")
        base = [float(r["median_us"]) for r in rows
                if (r["step"], r["n"], r["mode"]) == ("step8_vector", str(1 << 28), "timed")]
        cost = next(l for l in block(rows).splitlines()
                    if l.startswith("| 2^28 |"))
        self.assertEqual(cost.split(" | ")[1], f"{sorted(base)[1]:.1f}")

    def test_failed_rows_never_reach_the_block(self):
        rows = fixture_rows()
        passed = [r for r in rows if r["pass"] == "1"]
        self.assertLess(len(passed), len(rows))
        self.assertEqual(block(rows), block(passed))

    def test_chinese_block_has_the_same_numbers(self):
        rows = fixture_rows()
        en, zh = block(rows), block(rows, "zh-CN")
        self.assertIn("n = 2^28 时的相对误差", zh)
        self.assertIn("| 程序 | random | positive | wide |", zh)
        numbers = re.compile(r"\d+(?:\.\d+)?(?:e[-+]\d+)?x?")
        self.assertEqual(sorted(numbers.findall(en)), sorted(numbers.findall(zh)))
        self.assertNotEqual(en, zh)

    def test_unknown_language(self):
        with self.assertRaises(ValueError):
            block(fixture_rows(), "fr")

    def test_no_rows_asks_for_a_measurement(self):
        for lang in ("en", "zh-CN"):
            text = block([], lang)
            self.assertIn("make accuracy OUT_DIR=plots/reference", text)
            self.assertNotRegex(text.replace("2^", ""), r"\d\.\d")

    def test_a_program_that_disagrees_with_itself_is_named(self):
        rows = fixture_rows()
        repeat = [i for i, r in enumerate(rows) if r["step"] == "step7_shfl"
                  and (r["fill"], r["n"], r["mode"]) == ("random", str(1 << 22), "check")]
        self.assertEqual(len(repeat), 2)
        rows[repeat[1]] = dict(rows[repeat[1]], result=f"{float(rows[repeat[1]]['result']) * 1.0001:.9g}")
        text = block(rows)
        self.assertIn("11 of 12 programs ran a second time", text)
        self.assertIn("Different bits: step7_shfl.", text)

    def test_groups_of_equal_sums(self):
        rows = fixture_rows()
        for i, r in enumerate(rows):  # step1 adds in step 0's order: give it step 0's sum
            if (r["step"], r["fill"], r["n"], r["seed"]) == ("step1_divergence", "random",
                                                              str(1 << 22), "1"):
                twin = next(s for s in rows if (s["step"], s["fill"], s["n"], s["seed"]) ==
                            ("step0_naive", "random", str(1 << 22), "1"))
                rows[i] = dict(r, result=twin["result"])
        text = block(rows)
        self.assertIn("returned 11 different floats", text)
        self.assertIn("{step0_naive, step1_divergence} · {step2_bankconflict}", text)


class PageTest(unittest.TestCase):
    """ACCURACY.md holds no invented number. That its block is what the
    committed data gives is tests/test_claims.py's check (`make docs` writes
    it, like every generated block; tests/test_docs.py tests how)."""

    def test_fixture_numbers_are_nowhere_in_the_docs(self):
        with open(PAGE, encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("FIXTURE", text)
        self.assertNotIn("fixture", text.lower().replace("fixture-accuracy", ""))
        if not os.path.exists(REFERENCE):
            body = text.split("<!-- BEGIN accuracy -->")[1].split("<!-- END accuracy -->")[0]
            self.assertEqual(body.strip(), block([], "en", os.path.relpath(REFERENCE, REPO)))

    def test_readme_links_the_page_from_the_learning_path(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            path = f.read().split("## Learning path")[1].split("\n## ")[0]
        rows = [line for line in path.splitlines() if "ACCURACY.md" in line]
        self.assertEqual(len(rows), 1)
        self.assertTrue(rows[0].startswith("| beyond the steps |"), rows[0])


# ------------------------------------------------------ the math we rely on

def seq_sum(xs):
    s = 0.0
    for x in xs:
        s = f32(s + x)
    return s


def tree_sum(xs):
    if len(xs) == 1:
        return xs[0]
    half = (len(xs) + 1) // 2
    return f32(tree_sum(xs[:half]) + tree_sum(xs[half:]))


def kahan_sum(xs):
    s = c = 0.0
    for x in xs:
        y = f32(x - c)
        t = f32(s + y)
        c = f32(f32(t - s) - y)
        s = t
    return s


class MathTest(unittest.TestCase):
    def test_u_is_half_the_gap_above_one(self):
        self.assertEqual(data.U, 2.0 ** -24)
        self.assertEqual(f32(1 + data.U), 1.0)              # a tie: rounds to even, 1
        self.assertEqual(f32(1 + 2 * data.U), 1 + 2 ** -23)  # the next float

    def test_float_addition_is_not_associative(self):
        big = 2.0 ** 24
        self.assertEqual(f32(f32(big + 1) + 1), big)         # each 1 is lost
        self.assertEqual(f32(big + f32(1 + 1)), big + 2)     # their sum is not

    def test_a_float_loop_of_values_below_one_stalls_at_2_24(self):
        for x in (0.99999994, 0.5, 0.25):
            self.assertEqual(f32(2.0 ** 24 + x), 2.0 ** 24)
        self.assertEqual(f32(2.0 ** 24 - 1 + 0.75), 2.0 ** 24)  # still growing just below

    def test_bounds_are_exact(self):
        for k in range(32):
            for n in {max(1, (1 << k) - 1), 1 << k, (1 << k) + 1}:
                depth = data.log2_ceil(n)
                self.assertTrue(depth == 0 if n == 1 else 2 ** (depth - 1) < n <= 2 ** depth, n)
                # Fraction(float) is the float's exact value: no rounding hides here.
                self.assertEqual(Fraction(data.bound_sequential(n)), Fraction(n - 1, 2 ** 24))
                self.assertEqual(Fraction(data.bound_pairwise(n)), Fraction(depth, 2 ** 24))
        self.assertEqual(data.bound_kahan(1 << 28), 2.0 ** -23)

    def test_simulated_sums_stay_under_their_bounds(self):
        rng = random.Random(7)
        n = 4096
        for name, draw in (("positive", lambda: rng.random()),
                           ("random", lambda: rng.uniform(-1, 1)),
                           ("wide", lambda: rng.choice((-1, 1)) * rng.uniform(1, 2)
                            * 2.0 ** rng.randint(-20, 20))):
            xs = [f32(draw()) for _ in range(n)]
            exact = math.fsum(xs)
            scale = math.fsum(abs(x) for x in xs)
            # Higham's gamma_k = k u / (1 - k u): the bound without the first-order cut.
            gamma = lambda k: k * data.U / (1 - k * data.U)
            self.assertLessEqual(abs(seq_sum(xs) - exact), gamma(n - 1) * scale, name)
            self.assertLessEqual(abs(tree_sum(xs) - exact),
                                 gamma(data.log2_ceil(n)) * scale, name)
            kahan_bound = (2 * data.U + 2 * n * data.U ** 2) * scale
            self.assertLessEqual(abs(kahan_sum(xs) - exact), kahan_bound, name)
        # The tree's bound is far below the loop's: the reason the GPU's order wins.
        self.assertLess(data.bound_pairwise(n) * 300, data.bound_sequential(n))

    def test_kahan_catches_the_exact_error_of_an_add(self):
        rng = random.Random(3)
        for _ in range(2000):
            s, y = f32(rng.uniform(1, 1000)), f32(rng.uniform(-1, 1) * 2.0 ** rng.randint(-30, 0))
            t = f32(s + y)
            c = f32(f32(t - s) - y)
            self.assertEqual(Fraction(t) - Fraction(s) - Fraction(y), Fraction(c))


# ------------------------------------------------------- the machine code

def find_tool(name):
    cuda_bin = os.path.dirname(shutil.which("nvcc") or "")
    return shutil.which(name) or next(
        (p for p in [os.path.join(cuda_bin, name)] if cuda_bin and os.access(p, os.X_OK)), None)


# The cause (before the colon) is what make test's last line shows, so it
# says how to get cuobjdump: pip's wheels put it and nvdisasm, which it
# calls, in nvidia/cu13/bin.
@unittest.skipUnless(find_tool("nvcc") and find_tool("cuobjdump"),
                     "no cuobjdump (the CUDA toolkit's bin/ has it and nvdisasm, or pip install "
                     "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm and put their nvidia/cu13/bin on PATH): "
                     "the machine code needs them" if find_tool("nvcc") else
                     "no nvcc: the machine code needs it, from the CUDA toolkit")
class SassTest(unittest.TestCase):
    """The Kahan adds survive compilation: 7 FADD per float4 in the loop, step 8 has 4."""

    @classmethod
    def setUpClass(cls):
        cls.top = tempfile.mkdtemp(prefix="accuracy-sass-")
        cls.loops = {}
        for label, src, flags in (("step8", "step8_vector", []),
                                  ("kahan", "extras/kahan_step8", []),
                                  ("kahan-fast", "extras/kahan_step8", ["--use_fast_math"])):
            cubin = os.path.join(cls.top, label + ".cubin")
            subprocess.run([find_tool("nvcc"), "-O3", "-std=c++17", "-arch=sm_90", "-Icommon",
                            *flags, "-cubin", "-o", cubin, f"{src}/reduce.cu"], cwd=REPO,
                           check=True, capture_output=True, timeout=300)
            sass = subprocess.run([find_tool("cuobjdump"), "-sass", cubin], check=True,
                                  capture_output=True, text=True, timeout=120).stdout
            cls.loops[label] = vector_loop(sass)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top)

    def counts(self, label):
        loop = self.loops[label]
        return (sum(" FADD" in line for line in loop), sum("LDG.E.128" in line for line in loop))

    def test_step8_adds_four_per_float4(self):
        fadd, loads = self.counts("step8")
        self.assertEqual((fadd, loads), (4 * 4, 4))

    def test_kahan_adds_seven_per_float4(self):
        fadd, loads = self.counts("kahan")
        self.assertEqual((fadd, loads), (7 * 4, 4))

    def test_fast_math_keeps_the_compensation(self):
        fadd, loads = self.counts("kahan-fast")
        self.assertEqual((fadd, loads), (7 * 4, 4))
        self.assertTrue(any("FADD.FTZ" in line for line in self.loops["kahan-fast"]))


def vector_loop(sass):
    """The instructions of reduce_kernel's loop that holds the LDG.E.128 loads."""
    body = sass.split("Function : ")
    kernel = next(part for part in body if part.startswith("_Z13reduce_kernel"))
    code = re.findall(r"/\*([0-9a-f]{4})\*/\s+([^;]*;)", kernel)
    at = {int(addr, 16): text for addr, text in code}
    for addr, text in at.items():
        match = re.search(r"BRA (0x[0-9a-f]+)", text)
        if match and int(match.group(1), 16) < addr:  # a backward branch closes a loop
            loop = [t for a, t in at.items() if int(match.group(1), 16) <= a <= addr]
            if any("LDG.E.128" in t for t in loop):
                return loop
    raise AssertionError("no loop with LDG.E.128 in reduce_kernel")


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


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("accuracy", verbosity=1))
