#!/usr/bin/env python3
"""Tests for tools/publish.py (make publish): which files of a run it copies
into the reference, and that it refuses, copying nothing, where there is
nothing to publish, another GPU model's results or a partial run. `make
publish` itself (the copy, then the charts) is in tests/test_make_targets.py.

Run: python3 tests/test_publish.py. The last line printed is
`publish: N passed, N failed`.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISH = os.path.join(REPO, "tools", "publish.py")

PROFILE_HEADER = "step,kernel,metric,value,unit,gpu,git_rev,code_hash\n"
# A results file as make bench writes it (publish reads each before it copies):
# the fixture's first row, its step, GPU and median changed.
with open(os.path.join(REPO, "tests", "plots", "fixture.csv")) as _handle:
    HEADER, _ROW = _handle.readline(), _handle.readline().rstrip("\n").split(",")
_COLUMNS = HEADER.strip().split(",")


def results(gpu, steps, median="1.0"):
    def row(step):
        cells = list(_ROW)
        for column, value in (("step", step), ("gpu", gpu), ("median_us", median)):
            cells[_COLUMNS.index(column)] = value
        return ",".join(cells) + "\n"
    return HEADER + "".join(row(s) for s in steps)


class PublishTest(unittest.TestCase):
    """A run's folder (FROM) and a reference (TO) of one H200 each."""

    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="publish-test-")
        self.addCleanup(shutil.rmtree, self.top)
        self.run_dir = os.path.join(self.top, "results")
        self.ref = os.path.join(self.top, "reference")
        os.makedirs(self.run_dir)
        # The reference: an older H200 run, the multigpu files of two H200s
        # (their own slug, the same model) and files that are no run's.
        self.write(self.ref, "h200.csv", results("NVIDIA H200", ["step0_a", "step1_b"], "9.0"))
        self.write(self.ref, "h200-rows.csv", results("NVIDIA H200", ["rows/step0_x"], "9.0"))
        self.write(self.ref, "h200-bench.log", "old log\n")
        self.write(self.ref, "h200-sweep.png", "old chart")
        self.write(self.ref, "h200x2-multigpu.csv", results("NVIDIA H200", ["multigpu"]))
        self.write(self.ref, "variance.csv", "method,rows\none-pass,1\n")

    def write(self, folder, name, text):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)

    def read(self, folder, name):
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            return handle.read()

    def snapshot(self, folder):
        return {name: self.read(folder, name) for name in sorted(os.listdir(folder))}

    def full_run(self):
        """What make bench, make profile-all and make accuracy leave in FROM."""
        self.write(self.run_dir, "h200.csv", results("NVIDIA H200", ["step0_a", "step1_b", "step2_c"]))
        self.write(self.run_dir, "h200-rows.csv", results("NVIDIA H200", ["rows/step0_x"], "9.0"))
        self.write(self.run_dir, "h200-bench.log", "new log\n")
        self.write(self.run_dir, "h200-rows-bench.log", "new rows log\n")
        self.write(self.run_dir, "h200-profile.csv",
                   PROFILE_HEADER + "step0_a,k,gpu__time_duration.sum,1,ns,NVIDIA H200,abc,123\n")
        self.write(self.run_dir, "h200-rows-profile-8192x4097.csv",
                   PROFILE_HEADER + "rows/step0_x,k,gpu__time_duration.sum,1,ns,NVIDIA H200,abc,1\n")
        for chart in ("h200-sweep.png", "h200-sweep.zh-CN.png"):
            self.write(self.run_dir, chart, "new chart")
        self.write(self.run_dir, "variance.csv", "method,rows\ntwo-pass,2\n")
        self.write(self.run_dir, ".profile-tmp.csv", results("NVIDIA H200", ["step0_a"]))
        self.write(os.path.join(self.run_dir, "nccl"), "h200x2-nccl-check.log", "nccl\n")
        # Another GPU model's run beside it (README: several GPUs side by side).
        self.write(self.run_dir, "a100-sxm4-80gb.csv", results("NVIDIA A100-SXM4-80GB", ["step0_a"]))

    def publish(self, *args, source=None):
        return subprocess.run([sys.executable, PUBLISH, "--from", source or self.run_dir,
                               "--to", self.ref, *args], capture_output=True, text=True)

    def assert_refused(self, proc, *words):
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout, "")
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("publish: "), lines[0])
        for word in words:
            self.assertIn(word, lines[0])

    # ------------------------------------------------------------ copying

    def test_copies_the_gpus_csvs_and_logs_under_their_names(self):
        self.full_run()
        before = self.snapshot(self.ref)
        record = os.path.join(self.top, "published")
        proc = self.publish("--record-path", record)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        copied = ["h200-bench.log", "h200-profile.csv", "h200-rows-bench.log",
                  "h200-rows-profile-8192x4097.csv", "h200-rows.csv", "h200.csv"]
        for name in copied:
            self.assertEqual(self.read(self.ref, name), self.read(self.run_dir, name), name)
        # Charts are redrawn by make publish, not copied; the other GPU's run,
        # variance.csv, nccl/ and hidden scratch stay in FROM; the reference's
        # other files are kept as they were.
        self.assertEqual(sorted(os.listdir(self.ref)), sorted(set(before) | set(copied)))
        for name in ("h200-sweep.png", "h200x2-multigpu.csv", "variance.csv"):
            self.assertEqual(self.read(self.ref, name), before[name], name)
        self.assertEqual(self.read(self.top, "published"), os.path.join(self.ref, "h200.csv") + "\n")
        self.assertIn(f"publish: {os.path.join(self.ref, 'h200.csv')}\n", proc.stdout)
        self.assertIn(f"publish: {os.path.join(self.ref, 'h200-rows.csv')} (unchanged)\n", proc.stdout)
        self.assertTrue(proc.stdout.endswith("publish: 5 of 6 files of h200 changed\n"), proc.stdout)
        # Once more: nothing changes.
        proc = self.publish()
        self.assertTrue(proc.stdout.endswith("publish: 0 of 6 files of h200 changed\n"), proc.stdout)

    def test_a_profile_run_alone_is_published(self):
        self.write(self.run_dir, "h200-profile.csv",
                   PROFILE_HEADER + "step0_a,k,gpu__time_duration.sum,1,ns,NVIDIA H200,abc,1\n")
        before = self.snapshot(self.ref)
        proc = self.publish()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        after = self.snapshot(self.ref)
        self.assertEqual(after.pop("h200-profile.csv"), self.read(self.run_dir, "h200-profile.csv"))
        self.assertEqual(after, before)

    def test_an_empty_reference_takes_the_one_gpu_of_the_run(self):
        shutil.rmtree(self.ref)
        self.write(self.run_dir, "a100-sxm4-80gb.csv", results("NVIDIA A100-SXM4-80GB", ["step0_a"]))
        self.write(self.run_dir, "a100-sxm4-80gb-bench.log", "log\n")
        self.assertEqual(self.publish().returncode, 0)
        self.assertEqual(sorted(os.listdir(self.ref)), ["a100-sxm4-80gb-bench.log", "a100-sxm4-80gb.csv"])

    def test_a_longer_slug_is_another_gpus(self):
        # h200-nvl's files start with "h200-": they are not h200's.
        self.full_run()
        self.write(self.run_dir, "h200-nvl.csv", results("NVIDIA H200 NVL", ["step0_a"]))
        self.write(self.run_dir, "h200-nvl-bench.log", "nvl\n")
        self.assertEqual(self.publish().returncode, 0)
        self.assertFalse(os.path.exists(os.path.join(self.ref, "h200-nvl.csv")))
        self.assertFalse(os.path.exists(os.path.join(self.ref, "h200-nvl-bench.log")))

    # ------------------------------------------------------------ refusing

    def test_refuses_an_empty_run_and_leaves_the_reference_untouched(self):
        before = self.snapshot(self.ref)
        self.assert_refused(self.publish(), "nothing to publish", self.run_dir)
        # A log without its results, or charts alone, is nothing to publish either.
        self.write(self.run_dir, "h200-bench.log", "log\n")
        self.write(self.run_dir, "h200-sweep.png", "chart")
        self.assert_refused(self.publish(), "nothing to publish")
        # An H200's rows under a name of no GPU: still no h200 results file.
        self.write(self.run_dir, "mine.csv", results("NVIDIA H200", ["step0_a"]))
        self.assert_refused(self.publish(), "nothing to publish", "of h200")
        self.assert_refused(self.publish(source=os.path.join(self.top, "missing")),
                            "nothing to publish")
        self.assertEqual(self.snapshot(self.ref), before)

    def test_refuses_another_gpu_models_results(self):
        self.write(self.run_dir, "a100-sxm4-80gb.csv", results("NVIDIA A100-SXM4-80GB", ["step0_a"]))
        before = self.snapshot(self.ref)
        self.assert_refused(self.publish(), "a100-sxm4-80gb", "h200")
        self.assertEqual(self.snapshot(self.ref), before)

    def test_refuses_a_partial_run_over_a_full_file(self):
        self.full_run()
        # make bench ONLY=step2_c into an empty OUT_DIR: step0_a and step1_b missing.
        self.write(self.run_dir, "h200.csv", results("NVIDIA H200", ["step2_c"]))
        before = self.snapshot(self.ref)
        self.assert_refused(self.publish(), "h200.csv lacks 2 of the programs", "step0_a, step1_b",
                            "OUT_DIR=")
        self.assertEqual(self.snapshot(self.ref), before)   # not even the other files

    def test_refuses_the_reference_itself(self):
        before = self.snapshot(self.ref)
        self.assert_refused(self.publish(source=self.ref), "the reference itself")
        self.assertEqual(self.snapshot(self.ref), before)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("publish", verbosity=1))
