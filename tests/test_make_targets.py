#!/usr/bin/env python3
"""CPU tests of the make targets that run the scripts: make bench (OUT_DIR,
the charts, its failures), make profile-all (DEVICE), make plot and make
variance's chart call, in a
scratch copy of the Makefile and tools/ over the fakes of tests/fakes.py,
with stand-ins for nvidia-smi and ldconfig. No GPU, no ncu needed.
Run: python3 tests/test_make_targets.py (PLOT_PYTHON, a Python with
matplotlib, for the tests that draw charts).
"""
import os
import shutil
import subprocess
import sys
import unittest

from fakes import (PART1_LABELS, REPO, ROW_LABELS, ROW_PROGRAMS, ScriptTest,
                   clean_env, fake_gpu_tools, fake_hash, make_ncu, make_root, python_without_torch,
                   read_log, write_executable)

import schema


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
    shutil.copytree(os.path.join(REPO, "mk"), os.path.join(root, "mk"))   # its jobs
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

    def test_variance_asks_for_the_chinese_twin_without_a_gpu(self):
        # make variance builds tools/variance.c and runs it on the CPU, on a
        # machine with no GPU too; its chart call says --chinese, as make plot's.
        shutil.copy(os.path.join(REPO, "tools", "variance.c"), self.file("tools"))
        no_gpu = fake_gpu_tools(os.path.join(self.top, "no-gpu-bin"), gpu=False)
        fake, calls = self.fake_plot_python()
        proc = self.make("variance", "OUT_DIR=scratch", plot_python=fake, gpu_bin=no_gpu)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(calls) as f:
            self.assertEqual(f.read().splitlines(),
                             ["tools/variance_chart.py --chinese scratch/variance.csv"])
        with open(self.file("scratch", "variance.csv")) as f, \
                open(os.path.join(REPO, "plots", "reference", "variance.csv")) as committed:
            self.assertEqual(f.read(), committed.read())
        self.assert_readme_untouched()

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
        # A run whose results file does not read (a median that is no number).
        os.makedirs(self.file("plots", "bad"))
        with open(os.path.join(results, "test-gpu.csv")) as f:
            head, first, *rest = f.read().splitlines(keepends=True)
        columns = head.strip().split(",")
        cells = first.rstrip("\n").split(",")
        cells[columns.index("median_us")] = "abc"
        with open(self.file("plots", "bad", "test-gpu.csv"), "w") as f:
            f.writelines([head, ",".join(cells) + "\n", *rest])
        for args, words in ((["OUT_DIR=plots/empty"], "nothing to publish"),
                            (["OUT_DIR=plots/reference"], "the reference itself"),
                            (["OUT_DIR=plots/bad"], "a file does not read")):
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
            self.assertRegex(out, rf"^mk/\w+\.mk:\d+: \*\*\* make {target}: needs a CUDA GPU and "
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

    def test_profile_all_at_other_shapes_merges_one_file_a_shape(self):
        # What the pages' stale notes ask for: part 2's counters at the shapes
        # named, each merged into OUT_DIR's file of that shape.
        self.assertEqual(self.profile_all("OUT_DIR=prof").returncode, 0)
        # part 1's counters and part 2's at the default shape are left alone
        os.remove(self.file("prof", "h200-profile.csv"))
        proc = self.profile_all("OUT_DIR=prof", "SHAPE=4096x50257,8192x4097")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(sorted(os.listdir(self.file("prof"))),
                         ["h200-rows-profile-4096x50257.csv",
                          "h200-rows-profile-8192x4097.csv", "h200-rows-profile.csv"])
        for shape in ("4096x50257", "8192x4097"):
            rows = schema.load_profile(self.file("prof", f"h200-rows-profile-{shape}.csv"))
            self.assertEqual({r.step for r in rows}, set(ROW_LABELS))
        self.assertNotEqual(self.profile_all("OUT_DIR=prof", "ONLY=rows",
                                            "SHAPE=4096,8192x4097").returncode, 0)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("make_targets", verbosity=1))
