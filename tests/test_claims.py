#!/usr/bin/env python3
"""Every claim the docs make must match the committed H200 results.

No GPU needed: these tests read plots/results/h200*.csv (written by
`make bench` and `make profile-all` on the H200) and check
  - the speed targets of the tutorial (step 8 against CUB and the peak),
  - the rounded "Effect: about N.Nx" line in every step's reduce.cu,
  - the counter movements the step READMEs describe,
  - that the README tables are exactly what plots/plot.py generates from
    the committed files (so no number in them was typed by hand).
Ends with "claims: N passed, N failed".
"""
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "plots", "reference", "h200.csv")
PROFILE = os.path.join(ROOT, "plots", "reference", "h200-profile.csv")
SASS = os.path.join(ROOT, "plots", "reference", "sm90-sass.txt")
N25, N28 = 1 << 25, 1 << 28


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def step_dirs():
    dirs = [d for d in os.listdir(ROOT)
            if re.match(r"^step\d+_", d) and os.path.isfile(os.path.join(ROOT, d, "reduce.cu"))]
    return sorted(dirs, key=lambda d: int(re.match(r"step(\d+)_", d).group(1)))


class Results:
    rows = read_csv(RESULTS)

    @classmethod
    def get(cls, step, n):
        found = [r for r in cls.rows if r["step"] == step and int(r["n"]) == n]
        if not found:
            raise AssertionError(f"no row for {step} at n={n} in {RESULTS}")
        return found[-1]

    @classmethod
    def gbps(cls, step, n):
        return float(cls.get(step, n)["gbps"])

    @classmethod
    def median(cls, step, n):
        return float(cls.get(step, n)["median_us"])


class Profile:
    rows = read_csv(PROFILE)

    @classmethod
    def value(cls, step, metric):
        found = [r for r in cls.rows if r["step"] == step and r["metric"] == metric]
        if not found:
            raise AssertionError(f"no {metric} for {step} in {PROFILE}")
        return float(found[-1]["value"])


INST = "smsp__inst_executed.sum"
BANK_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SHARED_LD = "smsp__inst_executed_op_shared_ld.sum"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"


class ProvenanceTests(unittest.TestCase):
    def test_every_row_verified_and_labelled(self):
        for r in Results.rows:
            self.assertEqual(r["pass"], "1", f"{r['step']} n={r['n']} did not verify")
            self.assertEqual(r["flush"], "1", "headline results are L2-flushed")
            for col in ("gpu", "driver", "cuda", "git_rev"):
                self.assertNotIn(r[col], ("", "unknown"), f"{col} missing in {r['step']}")
            self.assertNotIn("dirty", r["git_rev"], "results must come from a committed revision")

    def test_one_gpu_and_revision(self):
        self.assertEqual({r["gpu"] for r in Results.rows}, {"NVIDIA H200"})
        self.assertEqual(len({r["git_rev"] for r in Results.rows}), 1)
        self.assertEqual({r["git_rev"] for r in Profile.rows}, {r["git_rev"] for r in Results.rows})

    def test_every_step_and_cub_measured(self):
        names = set(step_dirs()) | {"cub"}
        for n in (N25, N28):
            self.assertEqual({r["step"] for r in Results.rows if int(r["n"]) == n}, names)


class TargetTests(unittest.TestCase):
    """The speed targets of the tutorial, on the committed numbers."""

    def test_step8_level_with_cub(self):
        for n in (N25, N28):
            ratio = Results.gbps("step8_vector", n) / Results.gbps("cub", n)
            self.assertGreaterEqual(ratio, 0.98, f"step8 at n={n} is {ratio:.3f}x CUB")

    def test_step8_near_peak_at_2_28(self):
        self.assertGreaterEqual(float(Results.get("step8_vector", N28)["pct_peak"]), 90.0)

    def test_each_step_faster_or_explained(self):
        # Step 7 is the documented exception (memory-bound: shuffles cannot help).
        dirs = step_dirs()
        for prev, this in zip(dirs, dirs[1:]):
            speedup = Results.median(prev, N25) / Results.median(this, N25)
            if this == "step7_shfl":
                self.assertAlmostEqual(speedup, 1.0, delta=0.05)
            else:
                self.assertGreater(speedup, 1.0, f"{this} is not faster than {prev}")


class EffectLineTests(unittest.TestCase):
    """'// Effect: about 1.8x ...' in each reduce.cu, against the results at 2^25."""

    def test_effect_ratios(self):
        dirs = step_dirs()
        checked = 0
        for prev, this in zip(dirs, dirs[1:]):
            with open(os.path.join(ROOT, this, "reduce.cu")) as f:
                text = f.read()
            m = re.search(r"^// Effect: about ([0-9.]+)x", text, re.M)
            if m is None:
                continue   # a student's step may not claim anything yet
            claimed = float(m.group(1))
            measured = Results.median(prev, N25) / Results.median(this, N25)
            self.assertLessEqual(abs(claimed - measured) / measured, 0.05,
                                 f"{this}: comment says {claimed}x, results say {measured:.2f}x")
            checked += 1
        self.assertGreaterEqual(checked, 8)


class CounterTests(unittest.TestCase):
    """The counter movements the step READMEs state."""

    def test_step1_fewer_instructions_more_conflicts(self):
        self.assertLess(Profile.value("step1_divergence", INST),
                        0.6 * Profile.value("step0_naive", INST))
        self.assertGreater(Profile.value("step1_divergence", BANK_LD),
                           10 * Profile.value("step0_naive", BANK_LD))

    def test_divergence_ratio_stays_high(self):
        # The folklore metric barely moves: divergence shows as instructions issued.
        for step in step_dirs():
            self.assertGreater(Profile.value(step, THREADS_PER_INST), 31.0)

    def test_step2_removes_the_conflicts(self):
        self.assertLess(Profile.value("step2_bankconflict", BANK_LD),
                        0.1 * Profile.value("step1_divergence", BANK_LD))

    def test_instructions_fall_through_step6_and_step8(self):
        order = ["step2_bankconflict", "step3_idle", "step4_warp", "step5_unroll", "step6_multi"]
        for a, b in zip(order, order[1:]):
            self.assertLess(Profile.value(b, INST), Profile.value(a, INST), f"{a} -> {b}")
        self.assertLess(Profile.value("step8_vector", INST),
                        0.5 * Profile.value("step7_shfl", INST))

    def test_step6_memory_bound(self):
        self.assertGreater(Profile.value("step6_multi", DRAM_PCT), 75.0)
        self.assertGreater(Profile.value("step6_multi", DRAM_PCT),
                           1.5 * Profile.value("step5_unroll", DRAM_PCT))

    def test_step7_drops_shared_loads(self):
        self.assertLess(Profile.value("step7_shfl", SHARED_LD),
                        0.2 * Profile.value("step6_multi", SHARED_LD))


class SassTests(unittest.TestCase):
    """The loop lengths the step READMEs quote, from `make sass`."""

    @staticmethod
    def loops():
        found, step = {}, None
        with open(SASS) as f:
            for line in f:
                if line.startswith("== "):
                    step = line[3:].strip()
                    found[step] = []
                m = re.match(r"loop: .*, (\d+) instructions", line)
                if m:
                    found[step].append(int(m.group(1)))
        return found

    def test_tree_loop_lengths(self):
        loops = self.loops()
        expected = {"step0_naive": [28], "step1_divergence": [14],
                    "step2_bankconflict": [10], "step4_warp": [11], "step5_unroll": []}
        for step, want in expected.items():
            self.assertEqual(loops[step], want, step)

    def test_cited_counts_are_in_the_readmes(self):
        for step, text in (("step0_naive", "28 instructions per level"),
                           ("step1_divergence", "from 28 to 14 instructions"),
                           ("step2_bankconflict", "to 10 instructions")):
            with open(os.path.join(ROOT, step, "README.md")) as f:
                self.assertIn(text, f.read())


class GeneratedDocsTests(unittest.TestCase):
    """Regenerating the README tables from the committed files changes nothing."""

    def test_readmes_match_the_results(self):
        python = os.environ.get("PLOT_PYTHON", sys.executable)
        with tempfile.TemporaryDirectory() as tmp:
            docs = ["README.md"] + [os.path.join(d, "README.md") for d in step_dirs()
                                    if os.path.isfile(os.path.join(ROOT, d, "README.md"))]
            for d in step_dirs() + ["baseline_cub"]:
                os.makedirs(os.path.join(tmp, d), exist_ok=True)
                shutil.copy(os.path.join(ROOT, d, "reduce.cu"), os.path.join(tmp, d))
            for doc in docs:
                shutil.copy(os.path.join(ROOT, doc), os.path.join(tmp, doc))
            os.makedirs(os.path.join(tmp, "plots"))
            proc = subprocess.run(
                [python, os.path.join(ROOT, "plots", "plot.py"), "--results", RESULTS,
                 "--profile", PROFILE, "--out-dir", os.path.join(tmp, "plots"),
                 "--readme", os.path.join(tmp, "README.md"), "--steps-root", tmp],
                capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            for doc in docs:
                with open(os.path.join(ROOT, doc)) as a, open(os.path.join(tmp, doc)) as b:
                    self.assertEqual(a.read(), b.read(),
                                     f"{doc} differs from what `make plot` writes: run make plot")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from counting import run_module
    sys.exit(run_module("claims", verbosity=1))
