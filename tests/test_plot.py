#!/usr/bin/env python3
"""Tests for plots/plot.py.  Run: python3 tests/test_plot.py

Every test works in its own temporary directory and runs plot.py as a
subprocess, exactly as `make plot` would.  The last line printed is
`plots: N passed, N failed` (plus `, N skipped` when some were skipped).
"""

import csv
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT = os.path.join(ROOT, "plots", "plot.py")
FIXTURES = os.path.join(ROOT, "tests", "plots")
RESULTS = os.path.join(FIXTURES, "fixture.csv")
PROFILE = os.path.join(FIXTURES, "fixture-profile.csv")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
N_MID, N_BIG = 1 << 25, 1 << 28
FIXTURE_ORDER = ["step0_naive", "step1_divergence", "step2_bankconflict",
                 "step3_idle", "step4_warp", "step5_unroll", "step6_multi",
                 "step7_shfl", "step8_vector", "cub"]

README_TEMPLATE = ("# Demo\n\nIntro text stays.\n\n<!-- BEGIN results -->\n"
                   "stale text\n<!-- END results -->\n\nOutro stays.\n")
STEP_README = ("# A step\n\nExplanation.\n\n<!-- BEGIN measured -->\nold\n"
               "<!-- END measured -->\n\n<!-- BEGIN counters -->\nkeep me\n"
               "<!-- END counters -->\n\n<!-- BEGIN diff -->\nold diff\n"
               "<!-- END diff -->\n")
STEP0_SOURCE = ("// Interleaved addressing with a modulo test.\n"
                "__global__ void reduce_kernel(const float* in, float* out) {\n"
                "    extern __shared__ float s[];\n"
                "    // body of step 0\n"
                "}\n")
STEP1_SOURCE = ("// Strided index instead of modulo: no divergent warps.\n"
                "__global__ void reduce_kernel(const float* in, float* out) {\n"
                "    extern __shared__ float s[];\n"
                "    unsigned int index_added_in_step1 = 2 * threadIdx.x;\n"
                "    // body of step 0\n"
                "}\n")

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = unittest.skipUnless(
    HAVE_MATPLOTLIB, "matplotlib missing: pip install -r plots/requirements.txt")


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------

def run_plot(*args, env=None):
    return subprocess.run([sys.executable, PLOT, *args], capture_output=True,
                          text=True, env=env, timeout=300)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def fixture_rows():
    with open(RESULTS, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fixture_row(step, n):
    matches = [r for r in fixture_rows() if r["step"] == step and int(r["n"]) == n]
    return matches[-1]


def fixture_text():
    return read(RESULTS)


def table_after(text, heading):
    """Rows (lists of cells) of the first markdown table after `heading`."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            # Split on "|" but not on an escaped "\|" inside a cell.
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            rows.append([cell.strip() for cell in cells])
        elif rows:
            break
    return rows[2:]  # drop the header and the alignment row


def block(text, name):
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    return text.split(begin, 1)[1].split(end, 1)[0]


def is_png(path):
    with open(path, "rb") as handle:
        return handle.read(8) == PNG_SIGNATURE


class Workspace(unittest.TestCase):
    """A fresh temporary directory per test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="plot-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = os.path.join(self.tmp, "plots")

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def make_readme(self, text=README_TEMPLATE, name="README.md"):
        write(self.path(name), text)
        return self.path(name)

    def make_results(self, text, name="results.csv"):
        write(self.path(name), text)
        return self.path(name)

    def assert_ok(self, proc):
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def assert_one_line_error(self, proc):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("plot.py: error:"), lines[0])
        self.assertNotIn("Traceback", proc.stderr + proc.stdout)


# ----------------------------------------------------------------------------
# Charts
# ----------------------------------------------------------------------------

@needs_matplotlib
class ChartTests(Workspace):

    def assert_png(self, path):
        self.assertTrue(os.path.isfile(path), path)
        self.assertTrue(is_png(path), f"{path} lacks the PNG signature")
        # A chart with bars, labels and a caption is tens of kB; a blank
        # or failed figure is a few kB at most.
        self.assertGreater(os.path.getsize(path), 20_000, path)

    def test_progression_and_sweep_are_pngs(self):
        self.assert_ok(run_plot("--results", RESULTS, "--out-dir", self.out))
        self.assert_png(os.path.join(self.out, "fixture-progression.png"))
        self.assert_png(os.path.join(self.out, "fixture-sweep.png"))
        self.assertFalse(os.path.exists(
            os.path.join(self.out, "fixture-profile.png")))

    def test_profile_chart_from_fixture(self):
        proc = run_plot("--results", RESULTS, "--profile", PROFILE,
                        "--out-dir", self.out)
        self.assert_ok(proc)
        self.assert_png(os.path.join(self.out, "fixture-profile.png"))

    def test_profile_value_na_is_skipped(self):
        # ncu's "n/a" for an uncollected counter drops that value only.
        text = read(PROFILE).replace(
            "step0_naive,reduce_kernel,gpu__time_duration.sum,208736,",
            "step0_naive,reduce_kernel,gpu__time_duration.sum,n/a,", 1)
        self.assertIn(",n/a,", text)
        write(self.path("na.csv"), text)
        self.assert_ok(run_plot("--results", RESULTS, "--profile",
                                self.path("na.csv"), "--out-dir", self.out))
        self.assert_png(os.path.join(self.out, "fixture-profile.png"))

    def test_slug_comes_from_results_file_name(self):
        results = self.make_results(fixture_text(), "h200.csv")
        self.assert_ok(run_plot("--results", results, "--out-dir", self.out))
        self.assert_png(os.path.join(self.out, "h200-progression.png"))


# ----------------------------------------------------------------------------
# The results section of the top README
# ----------------------------------------------------------------------------

@needs_matplotlib
class ReadmeTests(Workspace):

    def fill(self, *extra, results=RESULTS):
        readme = self.make_readme()
        self.assert_ok(run_plot("--results", results, "--out-dir", self.out,
                                "--readme", readme, *extra))
        return read(readme)

    def test_block_replaced_and_surroundings_kept(self):
        text = self.fill()
        self.assertNotIn("stale text", text)
        self.assertTrue(text.startswith("# Demo\n\nIntro text stays.\n"))
        self.assertTrue(text.endswith("<!-- END results -->\n\nOutro stays.\n"))
        self.assertIn("Measured on Test GPU (driver 1.2.3, CUDA 13.0, peak "
                      "4814 GB/s from the device attributes) at revision "
                      "abc1234; L2 flushed before every repetition; median "
                      "of 20 repetitions. Source: plots/results/fixture.csv.",
                      text)

    def test_step3_row_matches_fixture(self):
        text = self.fill()
        for n, label in ((N_MID, "**n = 2^25**"), (N_BIG, "**n = 2^28**")):
            source = fixture_row("step3_idle", n)
            row = next(r for r in table_after(text, label) if r[0] == "step3_idle")
            median, gbps = float(source["median_us"]), float(source["gbps"])
            pct = 100 * gbps / float(source["peak_gbps"])
            self.assertEqual(row[2:5], [f"{median:.1f}", f"{gbps:.0f}",
                                        f"{pct:.1f}"])
            prev = float(fixture_row("step2_bankconflict", n)["median_us"])
            base = float(fixture_row("step0_naive", n)["median_us"])
            cub = float(fixture_row("cub", n)["gbps"])
            self.assertEqual(row[5:8], [f"{prev / median:.2f}x",
                                        f"{base / median:.2f}x",
                                        f"{gbps / cub:.2f}x"])

    def test_steps_in_step_order_not_speed_order(self):
        by_speed = sorted(FIXTURE_ORDER,
                          key=lambda s: float(fixture_row(s, N_MID)["gbps"]))
        # The fixture must hold a slower later step, or this test proves nothing.
        self.assertNotEqual(by_speed, FIXTURE_ORDER)
        text = self.fill()
        for label in ("**n = 2^25**", "**n = 2^28**"):
            steps = [row[0] for row in table_after(text, label)]
            self.assertEqual(steps, FIXTURE_ORDER)

    def test_image_links_are_relative_to_the_readme(self):
        readme = self.make_readme(name=os.path.join("docs", "README.md"))
        self.assert_ok(run_plot("--results", RESULTS, "--out-dir", self.out,
                                "--readme", readme, "--profile", PROFILE))
        text = read(readme)
        for kind in ("progression", "sweep", "profile"):
            self.assertIn(f"![{kind}](../plots/fixture-{kind}.png)", text)

    def test_what_changed_comes_from_line_one_of_reduce_cu(self):
        write(self.path("step3_idle", "reduce.cu"),
              "// Halve the block count: every thread adds two | values.\n")
        write(self.path("baseline_cub", "reduce.cu"), "// CUB DeviceReduce::Sum.\n")
        text = self.fill()  # --steps-root defaults to the README's folder
        rows = {r[0]: r for r in table_after(text, "**n = 2^25**")}
        self.assertEqual(rows["step3_idle"][1],
                         "Halve the block count: every thread adds two \\| values.")
        self.assertEqual(rows["cub"][1], "CUB DeviceReduce::Sum.")
        self.assertEqual(rows["step4_warp"][1], "")

    def test_seed_figures_are_quoted(self):
        text = self.fill()
        self.assertIn("The seed articles (Chinese, in shared/seeds; V100, their "
                      "own harness, 2^25 floats) report 788.29 us (v0), 502.43 "
                      "(v1), 375.90 (v2), 205.89 (v3), 176.86 (v4) and 162.21 us"
                      " for their final version.", text)
        self.assertIn(f"| final | 162.21 | {788.29 / 162.21:.2f}x |", text)

    def test_last_row_wins_for_repeated_step_and_n(self):
        rows = fixture_rows()
        again = dict(fixture_row("step3_idle", N_MID), median_us="50.0",
                     gbps=f"{4 * N_MID / 50.0 / 1e3:.2f}")
        results = self.path("repeat.csv")
        with open(results, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows + [again])
        text = self.fill(results=results)
        row = next(r for r in table_after(text, "**n = 2^25**")
                   if r[0] == "step3_idle")
        self.assertEqual(row[2:4], ["50.0", f"{4 * N_MID / 50.0 / 1e3:.0f}"])

    def test_rerun_is_idempotent(self):
        readme = self.make_readme()
        self.make_steps()
        args = ("--results", RESULTS, "--profile", PROFILE, "--out-dir",
                self.out, "--readme", readme, "--steps-root", self.tmp)
        self.assert_ok(run_plot(*args))
        watched = [readme, self.path("step1_divergence", "README.md"),
                   os.path.join(self.out, "fixture-progression.png")]
        before = [read(p) if p.endswith(".md") else None for p in watched]
        for path in watched:  # unchanged files must not be rewritten
            os.utime(path, (1_000_000_000, 1_000_000_000))
        second = run_plot(*args)
        self.assert_ok(second)
        self.assertEqual(second.stdout, "")  # nothing reported as written
        for path, text in zip(watched, before):
            self.assertEqual(os.path.getmtime(path), 1_000_000_000, path)
            if text is not None:
                self.assertEqual(read(path), text)

    def make_steps(self):
        write(self.path("step0_naive", "reduce.cu"), STEP0_SOURCE)
        write(self.path("step1_divergence", "reduce.cu"), STEP1_SOURCE)
        write(self.path("step1_divergence", "README.md"), STEP_README)


# ----------------------------------------------------------------------------
# Per-step READMEs
# ----------------------------------------------------------------------------

@needs_matplotlib
class StepReadmeTests(Workspace):

    def setUp(self):
        super().setUp()
        self.steps = self.path("repo")
        write(os.path.join(self.steps, "step0_naive", "reduce.cu"), STEP0_SOURCE)
        write(os.path.join(self.steps, "step0_naive", "README.md"), STEP_README)
        write(os.path.join(self.steps, "step1_divergence", "reduce.cu"),
              STEP1_SOURCE)
        write(os.path.join(self.steps, "step1_divergence", "README.md"),
              STEP_README)

    def step_readme(self, step):
        return read(os.path.join(self.steps, step, "README.md"))

    def run_steps(self, *extra):
        self.assert_ok(run_plot("--results", RESULTS, "--out-dir", self.out,
                                "--steps-root", self.steps, *extra))

    def test_measured_block_filled(self):
        self.run_steps()
        measured = block(self.step_readme("step1_divergence"), "measured")
        source = fixture_row("step1_divergence", N_MID)
        self.assertIn(f"| 2^25 | {float(source['median_us']):.1f} | "
                      f"{float(source['gbps']):.0f} |", measured)
        self.assertIn("| 2^28 |", measured)
        self.assertIn("Test GPU", measured)
        self.assertIn("abc1234", measured)
        self.assertIn("from plots/results/fixture.csv", measured)

    def test_diff_block_filled(self):
        self.run_steps()
        diff = block(self.step_readme("step1_divergence"), "diff")
        self.assertIn("```diff\n--- step0_naive/reduce.cu\n"
                      "+++ step1_divergence/reduce.cu\n", diff)
        self.assertIn("+    unsigned int index_added_in_step1 = 2 * threadIdx.x;",
                      diff)
        self.assertIn("-// Interleaved addressing with a modulo test.", diff)
        self.assertTrue(diff.strip().endswith("```"))

    def test_step0_has_no_previous(self):
        self.run_steps()
        diff = block(self.step_readme("step0_naive"), "diff")
        self.assertEqual(diff.strip(),
                         "Step 0 is the starting point; there is no previous step.")

    def test_counters_untouched_without_profile(self):
        self.run_steps()
        self.assertEqual(block(self.step_readme("step1_divergence"),
                               "counters").strip(), "keep me")

    def test_counters_filled_with_profile(self):
        self.run_steps("--profile", PROFILE)
        counters = block(self.step_readme("step1_divergence"), "counters")
        self.assertNotIn("keep me", counters)
        self.assertIn("previous (step0_naive)", counters)
        self.assertIn("`smsp__inst_executed.sum` | 61,234,688 | 40,370,176 | "
                      f"{40370176 / 61234688:.2f}x |", counters)

    def test_steps_without_readme_or_markers_are_skipped(self):
        plain = "# Step 2\n\nNo markers here.\n"
        write(os.path.join(self.steps, "step2_bankconflict", "README.md"), plain)
        write(os.path.join(self.steps, "step3_idle", "reduce.cu"), "// x\n")
        self.run_steps()
        self.assertEqual(self.step_readme("step2_bankconflict"), plain)

    def test_diff_written_even_without_results_rows(self):
        extra = os.path.join(self.steps, "step11_extra")
        write(os.path.join(extra, "reduce.cu"), STEP1_SOURCE + "// one more\n")
        write(os.path.join(extra, "README.md"), STEP_README)
        self.run_steps()
        text = self.step_readme("step11_extra")
        self.assertIn("+++ step11_extra/reduce.cu", block(text, "diff"))
        self.assertIn("+// one more", block(text, "diff"))
        self.assertIn("No measurements for step11_extra", block(text, "measured"))


# ----------------------------------------------------------------------------
# Steps added by students
# ----------------------------------------------------------------------------

@needs_matplotlib
class StudentStepTests(Workspace):

    def student_results(self):
        rows = fixture_rows()
        extra = []
        for step, gbps in (("step9_mine", 4300.0), ("step10_more", 4310.0)):
            for n in (N_MID, N_BIG):
                median = 4 * n / gbps / 1e3
                extra.append(dict(fixture_row("step8_vector", n), step=step,
                                  median_us=f"{median:.1f}",
                                  gbps=f"{4 * n / round(median, 1) / 1e3:.2f}"))
        path = self.path("student.csv")
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            # Student rows first in the file: order must come from the names.
            writer.writerows(extra + rows)
        return path

    def test_student_steps_follow_step8_numerically(self):
        write(self.path("step9_mine", "reduce.cu"), "// My own idea.\n")
        readme = self.make_readme()
        self.assert_ok(run_plot("--results", self.student_results(),
                                "--out-dir", self.out, "--readme", readme))
        rows = table_after(read(readme), "**n = 2^25**")
        steps = [row[0] for row in rows]
        self.assertEqual(steps, FIXTURE_ORDER[:-1] +
                         ["step9_mine", "step10_more", "cub"])
        mine = rows[steps.index("step9_mine")]
        self.assertEqual(mine[1], "My own idea.")
        step8 = float(fixture_row("step8_vector", N_MID)["median_us"])
        # "vs previous" for step9_mine is measured against step8_vector.
        self.assertEqual(mine[5], f"{step8 / float(mine[2]):.2f}x")
        self.assertTrue(is_png(os.path.join(self.out, "student-progression.png")))


# ----------------------------------------------------------------------------
# Errors: exit 2, one stderr line, never a traceback
# ----------------------------------------------------------------------------

class ErrorTests(Workspace):

    def test_missing_results_file(self):
        proc = run_plot("--results", self.path("nope.csv"), "--out-dir", self.out)
        self.assert_one_line_error(proc)
        self.assertIn("not found", proc.stderr)

    def test_empty_results_file(self):
        proc = run_plot("--results", self.make_results(""), "--out-dir", self.out)
        self.assert_one_line_error(proc)
        self.assertIn("empty", proc.stderr)

    def test_header_only_results_file(self):
        header = fixture_text().split("\n", 1)[0] + "\n"
        proc = run_plot("--results", self.make_results(header))
        self.assert_one_line_error(proc)

    def test_missing_column(self):
        rows = [line.split(",") for line in fixture_text().strip().split("\n")]
        drop = rows[0].index("median_us")
        text = "\n".join(",".join(r[:drop] + r[drop + 1:]) for r in rows) + "\n"
        proc = run_plot("--results", self.make_results(text))
        self.assert_one_line_error(proc)
        self.assertIn("median_us", proc.stderr)

    def test_non_numeric_n(self):
        text = fixture_text().replace("step3_idle,33554432,",
                                      "step3_idle,32M,", 1)
        self.assertIn("step3_idle,32M,", text)
        proc = run_plot("--results", self.make_results(text))
        self.assert_one_line_error(proc)
        self.assertIn("'n'", proc.stderr)

    def test_non_numeric_median(self):
        text = fixture_text().replace(",209.7,", ",fast,", 1)
        proc = run_plot("--results", self.make_results(text))
        self.assert_one_line_error(proc)
        self.assertIn("median_us", proc.stderr)

    def test_no_rows_at_required_sizes(self):
        lines = fixture_text().strip().split("\n")
        small = [lines[0]] + [l for l in lines[1:] if l.split(",")[1] == "1024"]
        proc = run_plot("--results", self.make_results("\n".join(small) + "\n"))
        self.assert_one_line_error(proc)
        self.assertIn("2^25", proc.stderr)

    def test_readme_without_markers(self):
        readme = self.make_readme("# No markers\n\nJust text.\n")
        proc = run_plot("--results", RESULTS, "--out-dir", self.out,
                        "--readme", readme)
        self.assert_one_line_error(proc)
        self.assertEqual(read(readme), "# No markers\n\nJust text.\n")
        self.assertFalse(os.path.exists(self.out))  # nothing half-written

    def test_non_numeric_profile_value(self):
        profile = self.make_results("step,kernel,metric,value\n"
                                    "step0_naive,k,gpu__time_duration.sum,fast\n",
                                    "profile.csv")
        proc = run_plot("--results", RESULTS, "--profile", profile)
        self.assert_one_line_error(proc)
        self.assertIn("'value'", proc.stderr)

    def test_profile_without_known_metrics(self):
        profile = self.make_results("step,kernel,metric,value\n"
                                    "step0_naive,k,launch__grid_size,1024\n",
                                    "profile.csv")
        proc = run_plot("--results", RESULTS, "--profile", profile)
        self.assert_one_line_error(proc)

    def test_unknown_option(self):
        self.assert_one_line_error(run_plot("--results", RESULTS, "--bogus"))

    def test_missing_matplotlib_exits_3(self):
        # A package named matplotlib that fails to import shadows the real one.
        fake = self.path("fake", "matplotlib")
        write(os.path.join(fake, "__init__.py"),
              "raise ImportError('simulated missing matplotlib')\n")
        env = dict(os.environ, PYTHONPATH=self.path("fake"))
        proc = run_plot("--results", RESULTS, "--out-dir", self.out, env=env)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("pip install -r plots/requirements.txt", lines[0])
        self.assertNotIn("Traceback", proc.stderr)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from counting import run_module
    sys.exit(run_module("plots", verbosity=2))
