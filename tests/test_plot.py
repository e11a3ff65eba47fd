#!/usr/bin/env python3
"""Tests for tools/plot.py, the charts.  Run: python3 tests/test_plot.py

Most tests run plot.py as a subprocess, exactly as `make plot` does; a few
import it to read back what a chart says (titles, lines). The README tables
are tools/docs.py's job: tests/test_docs.py. The last line printed is
`plots: N passed, N failed` (plus `, N skipped` when some were skipped).
"""

import contextlib
import csv
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from fakes import csv_text, fixture_row, fixture_rows

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT = os.path.join(REPO, "tools", "plot.py")
FIXTURES = os.path.join(REPO, "tests", "plots")
RESULTS = os.path.join(FIXTURES, "fixture.csv")
PROFILE = os.path.join(FIXTURES, "fixture-profile.csv")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
N_MID, N_BIG = 1 << 25, 1 << 28
CHARTS = ("progression", "sweep", "vs-cub")

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = unittest.skipUnless(
    HAVE_MATPLOTLIB, "no matplotlib: pip install -r tools/requirements.txt")
HAVE_FONT = importlib.util.find_spec("pylopdf_fonts_zh_cn") is not None
needs_font = unittest.skipUnless(
    HAVE_MATPLOTLIB and HAVE_FONT, "no chart font: pip install -r tools/requirements.txt")

sys.path.insert(0, os.path.join(REPO, "tools"))
import chart_zh  # noqa: E402
import schema  # noqa: E402
import stale  # noqa: E402  (its mark on a stale program's label)


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------

def run_plot(*args, env=None):
    return subprocess.run([sys.executable, PLOT, *args], capture_output=True,
                          text=True, env=env, timeout=300)


def read(path, mode="r"):
    with open(path, mode) as handle:
        return handle.read()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)




def spoiled_rows():
    """Rows that must never be drawn: a failed run and a check-mode run of
    step3_idle at n = 2^25, after its good row and with absurd speeds, so the
    chart would change if either one replaced the good row."""
    good = fixture_row("step3_idle", N_MID)
    failed = dict(good, median_us="1.0", gbps="134217.73")
    failed["pass"] = "0"
    check = dict(good, mode="check", reps="1", warmup="0", flush="0", median_us="",
                 min_us="", max_us="", gbps="", pct_peak="")
    return [failed, check]


def load_plot_module():
    spec = importlib.util.spec_from_file_location("reduce_plot", PLOT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def draw_here(*args):
    """plot.py's main() in this process, as run_plot() runs it in another:
    the tests that are not about the command line skip a matplotlib import
    (about a second) per drawing."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = load_plot_module().main(list(args))
    return subprocess.CompletedProcess(["plot.py", *args], code, out.getvalue(), err.getvalue())


class Workspace(unittest.TestCase):
    """A fresh temporary directory per test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="plot-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = os.path.join(self.tmp, "charts")

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

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
# The PNG files
# ----------------------------------------------------------------------------

@needs_matplotlib
class ChartFileTests(Workspace):

    def assert_png(self, path):
        self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(read(path, "rb")[:8], PNG_SIGNATURE, path)
        # A chart with bars, labels and a caption is tens of kB; a blank
        # or failed figure is a few kB at most.
        self.assertGreater(os.path.getsize(path), 20_000, path)

    def test_charts_without_profile_in_the_results_folder(self):
        # Without --out-dir the charts go beside the results file; no profile,
        # no profile chart.
        results = self.make_results(read(RESULTS), os.path.join("gpu", "h200.csv"))
        proc = run_plot("--results", results)
        self.assert_ok(proc)
        for kind in CHARTS:
            self.assert_png(self.path("gpu", f"h200-{kind}.png"))
        self.assertEqual(sorted(os.listdir(self.path("gpu"))),
                         sorted(["h200.csv"] + [f"h200-{kind}.png" for kind in CHARTS]))
        self.assertIn(f"plot.py: wrote {self.path('gpu', 'h200-sweep.png')}", proc.stdout)

    def test_profile_chart_with_a_value_na_and_a_rerun_that_rewrites_nothing(self):
        # ncu's "n/a" for an uncollected counter drops that value only; the
        # same inputs drawn again write no file.
        text = read(PROFILE).replace(
            "step0_naive,reduce_kernel,gpu__time_duration.sum,208736,",
            "step0_naive,reduce_kernel,gpu__time_duration.sum,n/a,", 1)
        self.assertIn(",n/a,", text)
        profile = self.make_results(text, "na-profile.csv")
        args = ("--results", RESULTS, "--profile", profile, "--out-dir", self.out)
        self.assert_ok(draw_here(*args))
        self.assert_png(os.path.join(self.out, "fixture-profile.png"))
        before = {name: read(os.path.join(self.out, name), "rb")
                  for name in os.listdir(self.out)}
        self.assertEqual(sorted(before), sorted(f"fixture-{kind}.png"
                                                for kind in CHARTS + ("profile",)))
        second = draw_here(*args)
        self.assert_ok(second)
        self.assertEqual(second.stdout, "")  # nothing reported as written
        self.assertEqual(before, {name: read(os.path.join(self.out, name), "rb")
                                  for name in os.listdir(self.out)})

    def test_failed_and_check_rows_are_never_drawn(self):
        # The same file name in two folders, so the captions are the same too.
        clean = self.make_results(csv_text(fixture_rows()), os.path.join("clean", "f.csv"))
        spoiled = self.make_results(csv_text(fixture_rows() + spoiled_rows()),
                                    os.path.join("spoiled", "f.csv"))
        self.assert_ok(draw_here("--results", clean))
        proc = draw_here("--results", spoiled)
        self.assert_ok(proc)
        self.assertIn("left out 2 of 46 rows: 1 failed (pass != 1), 1 without timing",
                      proc.stderr)
        for kind in CHARTS:
            name = f"f-{kind}.png"
            self.assertEqual(read(self.path("clean", name), "rb"),
                             read(self.path("spoiled", name), "rb"),
                             f"{name} changed when failed and check-mode rows were added")

    def test_no_vs_cub_chart_without_late_steps(self):
        early = [r for r in fixture_rows()
                 if (schema.step_number(r["step"]) or 0) < 6]
        results = self.make_results(csv_text(early), "early.csv")
        self.assert_ok(draw_here("--results", results, "--out-dir", self.out))
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["early-progression.png", "early-sweep.png"])


# ----------------------------------------------------------------------------
# What the charts say (plot.py imported, figures read back)
# ----------------------------------------------------------------------------

@needs_matplotlib
class ChartContentTests(Workspace):

    def draw(self, results, profile=None):
        """{kind: figure} as plot.py would save them."""
        plot = load_plot_module()
        figures = {}

        def keep(mpl, fig, path):
            figures[os.path.basename(path).split("-", 1)[1][:-4]] = fig
        plot.save_figure = keep
        proc_args = ["--results", results, "--out-dir", self.out]
        if profile:
            proc_args += ["--profile", profile]
        self.assertEqual(plot.run(plot.parse_args(proc_args)), 0)
        return figures

    @staticmethod
    def texts(fig):
        return [fig._suptitle.get_text(), fig._supxlabel.get_text()]

    def test_gpu_named_from_the_data(self):
        rows = [dict(r, gpu="NVIDIA RTX 6000 Ada Generation") for r in fixture_rows()]
        results = self.make_results(csv_text(rows), "rtx.csv")
        figures = self.draw(results, PROFILE)
        self.assertEqual(sorted(figures), ["profile", "progression", "sweep", "vs-cub"])
        for kind, fig in figures.items():
            title, caption = self.texts(fig)
            if kind != "profile":  # the profile names its own file's GPU
                self.assertIn("NVIDIA RTX 6000 Ada Generation", title, kind)
                self.assertIn("NVIDIA RTX 6000 Ada Generation", caption, kind)
            self.assertNotIn("H200", title + caption, kind)
        self.assertIn("Test GPU", self.texts(figures["profile"])[0])

    def test_no_gpu_name_in_the_source(self):
        self.assertNotIn("H200", read(PLOT))

    def test_the_captions_fit_the_figure(self):
        # Parts 2 and 3's captions name several runs' revisions and PyTorch's
        # versions: on one line they ran past both edges and were cut off.
        for name in ("h200-back.csv", "h200-rows.csv"):
            for kind, fig in self.draw(os.path.join(REPO, "plots", "reference", name)).items():
                with self.subTest(name, kind=kind):
                    fig.canvas.draw()
                    box = fig._supxlabel.get_window_extent(fig.canvas.get_renderer())
                    self.assertGreaterEqual(box.x0, 0)
                    self.assertLessEqual(box.x1, fig.bbox.width)

    def test_part3_gets_its_progression_and_its_share_of_the_three_stream_copy(self):
        figures = self.draw(os.path.join(REPO, "plots", "reference", "h200-back.csv"))
        self.assertEqual(sorted(figures), ["back-bf16", "back-layernorm_backward",
                                           "back-progression", "back-softmax_backward"])
        self.assertIn("Part 3 on NVIDIA H200: backward passes",
                      self.texts(figures["back-progression"])[0])
        ax = figures["back-layernorm_backward"].axes[0]
        # A label carries the stale mark where the code moved since (stale.py).
        bars = {c.get_label().removesuffix(" " + stale.MARK): [b.get_height() for b in c.patches]
                for c in ax.containers if hasattr(c, "patches")}
        # Step 9's bars: its GB/s over copy3's in step 9's own run (92.19 and 92.29
        # us against 105.18 and 107.25 at 32768 x 1024 and 8192 x 4096; step 9's
        # bytes also count gamma, mean, rstd, dgamma and dbeta).
        self.assertEqual([round(h, 3) for h in bars["back/step9_ahead"]], [0.877, 0.861])
        self.assertIn("copy of the same three streams (= 1)",
                      [line.get_label() for line in ax.get_lines()])
        # Softmax's: step 13 over the copy of its own run, the same bytes (92.26,
        # 92.30, 92.21, 140.34, 90.50, 106.64 and 92.22 us against 92.54, 92.74,
        # 98.27, 177.06, 124.83, 242.62 and 166.46), shapes by width.
        ax = figures["back-softmax_backward"].axes[0]
        bars = {c.get_label().removesuffix(" " + stale.MARK): [b.get_height() for b in c.patches]
                for c in ax.containers if hasattr(c, "patches")}
        got = [round(h, 3) for h in bars["back/step13_cluster"]]
        self.assertEqual((len(got), got[0], got[3], got[5]), (7, 0.997, 0.793, 0.44))

    def back_bf16_file(self):
        """The reference part 3 file, plus a run of a bfloat16 softmax
        backward step (back/step15_bf16_bulk), the bfloat16 copy and
        PyTorch's bfloat16 op eager and compiled at two shapes (medians
        invented: 6 bytes an element, GB/s = bytes / time)."""
        header, records = schema.read_records(
            os.path.join(REPO, "plots", "reference", "h200-back.csv"))
        # The reference's own bfloat16 rows out: this test's are invented.
        rows = [r for _, r in records if not (r["op"].endswith("_bf16") or r["op"] == "copy3_bf16")]
        template = rows[0]
        for step, op, us in (("back/step15_bf16_bulk", "softmax_backward_bf16", 60.0),
                             ("back/copy3_bf16", "copy3_bf16", 50.0),
                             ("torch/softmax_backward_bf16", "softmax_backward_bf16", 100.0),
                             ("torch/compiled/softmax_backward_bf16", "softmax_backward_bf16",
                              80.0)):
            for r, c in ((32768, 1024), (1024, 50257)):
                for k in (1, 2):
                    t, nbytes = us * (1 + 0.01 * k), 6 * r * c
                    rows.append(dict(template, step=step, op=op, rows=str(r), cols=str(c),
                                     n=str(r * c), bytes=str(nbytes), median_us=f"{t:.3f}",
                                     min_us=f"{t:.3f}", max_us=f"{t:.3f}",
                                     gbps=f"{nbytes / t / 1e3:.2f}", round=str(k),
                                     run="20261205T000000Z", role="", code_hash=""))
        return self.make_results(csv_text(rows), "h200-back.csv")

    def test_part3_bfloat16_chart(self):
        """A part 3 file with a bfloat16 step gets a fourth chart, its bars
        shares of the bfloat16 copy's speed (in the same run), PyTorch's
        bfloat16 op beside them, every text of it in Chinese too; the float
        charts are as they were. (The reference's own bfloat16 rows are
        left out, so that every bar here is this test's.)"""
        figures = self.draw(self.back_bf16_file())
        self.assertEqual(sorted(figures), ["back-bf16", "back-layernorm_backward",
                                           "back-progression", "back-softmax_backward"])
        fig = figures["back-bf16"]
        title = self.texts(fig)[0]
        self.assertEqual(title, "bfloat16 softmax and LayerNorm backward on NVIDIA H200: share "
                                "of the bfloat16 three-stream copy's speed, per shape")
        ax = fig.axes[0]
        bars = {c.get_label(): [round(b.get_height(), 3) for b in c.patches]
                for c in ax.containers if hasattr(c, "patches")}
        # Shares of the copy's speed at the two shapes: 50.5/60.6, 50.5/101, 50.5/80.8
        # (round 1 and 2 times, 1% and 2% over; the median of two is their mean).
        self.assertEqual(bars, {"back/step15_bf16_bulk": [0.833, 0.833],
                                "torch/softmax_backward_bf16": [0.5, 0.5],
                                "torch/compiled/softmax_backward_bf16": [0.625, 0.625]})
        self.assertIn("bfloat16 copy of the same three streams (= 1)",
                      [line.get_label() for line in ax.get_lines()])
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        self.assertIn("32768 x 1024\n64 MiB", ticks)   # 2 bytes an element
        for text in [title] + [line.get_label() for line in ax.get_lines()]:
            self.assertIsNotNone(chart_zh.translate(text), text)
        # The float softmax chart is still read against the float copy alone.
        labels = [c.get_label() for c in figures["back-softmax_backward"].axes[0].containers
                  if hasattr(c, "patches")]
        self.assertFalse([l for l in labels if "bf16" in l], labels)

    def widths_file(self):
        """A bench --widths file: the copies, softmax's last steps and PyTorch's
        softmax at two widths, 256 MiB of x each, made from rows of the
        reference file (medians invented: GB/s = bytes / time)."""
        template = next(r for r in schema.read_records(
            os.path.join(REPO, "plots", "reference", "h200-rows.csv"))[1] if r[1].get("rows"))[1]
        rows = []
        for step, op, size, us in (("rows/copy", "copy", 4, 140.0), ("rows/copy16", "copy_bf16", 2, 140.0),
                                   ("rows/step15_cluster", "softmax", 4, 150.0),
                                   ("rows/step23_bf16_bulk", "softmax_bf16", 2, 200.0),
                                   ("torch/softmax", "softmax", 4, 180.0),
                                   ("torch/compiled/softmax", "softmax", 4, 160.0),
                                   ("rows/step16_bf16_cluster", "softmax_bf16", 2, 210.0)):
            for cols, slower in ((1024, 1.0), (65536, 1.5)):
                n = (256 << 20) // size
                # Step 16, no longer its op's last step, from an older run of
                # three rounds the file keeps: the map draws none of it.
                old = step == "rows/step16_bf16_cluster"
                for k in (1, 2, 3) if old else (1, 2):
                    t = us * slower * (1 + 0.01 * k)
                    rows.append(dict(template, step=step, op=op, rows=str(n // cols), cols=str(cols),
                                     n=str(n), bytes=str(2 * n * size), median_us=f"{t:.3f}",
                                     min_us=f"{t:.3f}", max_us=f"{t:.3f}",
                                     gbps=f"{2 * n * size / t / 1e3:.2f}", round=str(k),
                                     run="20261203T000000Z" if old else "20261204T000000Z",
                                     git_rev="0ldrev0" if old else template["git_rev"],
                                     role="", code_hash=""))
        n = (256 << 20) // 4   # step 9 on the same floats as one array: 4 bytes each, read once
        for k in (1, 2):
            rows.append(dict(template, step="step9_singlepass", op="", rows="", cols="", n=str(n),
                             bytes=str(4 * n), median_us="80.000", min_us="80.000",
                             max_us="80.000", gbps=f"{4 * n / 80.0 / 1e3:.2f}", round=str(k),
                             run="20261204T000000Z", role="", code_hash=""))
        return self.make_results(csv_text(rows), "h200-rows-widths.csv")

    def widths_rev(self):
        return next(r for r in schema.read_records(
            os.path.join(REPO, "plots", "reference", "h200-rows.csv"))[1] if r[1].get("rows"))[1]["git_rev"]

    def test_widths_chart_gbps_against_the_width(self):
        figures = self.draw(self.widths_file())
        self.assertEqual(sorted(figures), ["rows-widths-gbps"])
        fig = figures["rows-widths-gbps"]
        self.assertIn("GB/s against the width", self.texts(fig)[0])
        panels = {ax.get_title(): ax for ax in fig.axes}
        lines = {l.get_label(): list(l.get_xydata()) for l in panels["softmax"].get_lines()
                 if not l.get_label().startswith("_")}
        self.assertEqual(sorted(lines), ["PyTorch", "step15_cluster", "the copy", "torch.compile"])
        # 256 MiB of floats read and written in 150 us, then 225 us (the median round).
        got = [(x, round(y)) for x, y in lines["step15_cluster"]]
        self.assertEqual(got, [(1024, round(2 * (256 << 20) / 151.5 / 1e3)),
                               (65536, round(2 * (256 << 20) / 227.25 / 1e3))])
        bf16 = {l.get_label() for l in panels["softmax, bfloat16"].get_lines()}
        self.assertIn("bfloat16 copy", bf16)
        self.assertIn("step23_bf16_bulk", bf16)
        # No row sum in the file: its panel shows its bars alone, the copy and
        # step 9 on one array (a sum only reads).
        self.assertEqual([l.get_label() for l in panels["row sum"].get_lines()
                          if not l.get_label().startswith("_")],
                         ["part 1's step 9, the same floats as one array", "the copy"])
        self.assertNotIn("part 1's step 9, the same floats as one array",
                         [l.get_label() for l in panels["softmax"].get_lines()])
        # The caption's revisions are the drawn lines': not step 16's older run's.
        caption = fig._supxlabel.get_text()
        self.assertIn(f"revision {self.widths_rev()}", caption)
        self.assertNotIn("0ldrev0", caption)
        self.assertIn("median of 2 rounds", caption)

    def test_widths_chart_without_pytorch_says_so(self):
        path = self.widths_file()
        with open(path, newline="") as handle:
            rows = [r for r in csv.DictReader(handle) if not r["step"].startswith("torch/")]
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        fig = self.draw(path)["rows-widths-gbps"]
        title = self.texts(fig)[0]
        self.assertIn("each op's last step beside the copy (dotted", title)
        self.assertNotIn("PyTorch", title)

    def test_width_ticks_within_an_octave_go_one_line_lower(self):
        plot = load_plot_module()
        self.assertEqual(plot.width_labels([256, 1024, 50257, 65536, 151936, 262144]),
                         ["256", "1k", "50257", "\n64k", "151936", "\n256k"])
        self.assertEqual(plot.width_labels([1024, 1500, 2000]), ["1k", "\n1500", "2000"])

    def test_vs_cub_lines_are_steps_6_on_relative_to_cub(self):
        fig = self.draw(RESULTS)["vs-cub"]
        ax = fig.axes[0]
        # A step's line is drawn with whiskers (an errorbar container); the
        # container carries the label, its first line the data.
        lines = {line.get_label(): line for line in ax.get_lines()}
        lines.update({c.get_label(): c.lines[0] for c in ax.containers
                      if hasattr(c, "lines") and c.lines[0] is not None})
        steps = ["step6_multi", "step7_shfl", "step8_vector", "step9_singlepass"]
        for step in steps:
            self.assertIn(step, lines)
        self.assertNotIn("step5_unroll", lines)
        cub_line = lines["CUB DeviceReduce (= 1.0)"]
        self.assertEqual(list(cub_line.get_ydata()), [1.0, 1.0])
        sizes = [1024, 1 << 20, N_MID, N_BIG]
        self.assertEqual(list(lines["step9_singlepass"].get_xdata()), sizes)
        want = [float(fixture_row("step9_singlepass", n)["gbps"]) /
                float(fixture_row("cub", n)["gbps"]) for n in sizes]
        for got, expected in zip(lines["step9_singlepass"].get_ydata(), want):
            self.assertAlmostEqual(got, expected, places=12)
        self.assertEqual(ax.get_xscale(), "log")

    def test_vs_cub_shades_the_launch_bound_sizes(self):
        # CUB's fixture times: 5.8 us at 2^10, 7.1 at 2^20, 34.6 at 2^25:
        # within 2x of the fastest up to 2^20, so the shade ends between
        # 2^20 and 2^25.
        ax = self.draw(RESULTS)["vs-cub"].axes[0]
        [shade] = [p for p in ax.patches if p.get_label().startswith("launch-bound")]
        right = shade.get_x() + shade.get_width()
        self.assertGreater(right, 1 << 20)
        self.assertLess(right, N_MID)
        self.assertIn("within 2x of its fastest (5.8 us)", shade.get_label())

    def test_failed_row_never_reaches_the_sweep(self):
        results = self.make_results(csv_text(fixture_rows() + spoiled_rows()))
        ax = self.draw(results)["sweep"].axes[0]
        [line] = [l for l in ax.get_lines() if l.get_label() == "step3_idle"]
        at_mid = list(line.get_xdata()).index(N_MID)
        self.assertEqual(line.get_ydata()[at_mid],
                         float(fixture_row("step3_idle", N_MID)["gbps"]))

    def test_student_steps_follow_numerically(self):
        extra = []
        for step in ("step11_more", "step10_mine"):  # file order must not matter
            extra += [dict(r, step=step) for r in fixture_rows() if r["step"] == "step8_vector"]
        results = self.make_results(csv_text(extra + fixture_rows()))
        figures = self.draw(results)
        ticks = [t.get_text().replace("\n", "_")
                 for t in figures["progression"].axes[0].get_xticklabels()]
        self.assertEqual(ticks[-4:], ["step9_singlepass", "step10_mine", "step11_more",
                                      "CUB_(library)"])
        labels = [c.get_label() for c in figures["vs-cub"].axes[0].containers
                  if hasattr(c, "lines")]
        self.assertEqual(labels[:6], ["step6_multi", "step7_shfl", "step8_vector",
                                      "step9_singlepass", "step10_mine", "step11_more"])


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
        header = read(RESULTS).split("\n", 1)[0] + "\n"
        proc = run_plot("--results", self.make_results(header))
        self.assert_one_line_error(proc)
        self.assertIn("no usable rows", proc.stderr)

    def test_only_failed_rows(self):
        rows = [dict(r, **{"pass": "0"}) for r in fixture_rows()]
        proc = run_plot("--results", self.make_results(csv_text(rows)), "--out-dir", self.out)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("left out 44 of 44 rows: 44 failed", proc.stderr)
        self.assertIn("plot.py: error: ", proc.stderr.strip().split("\n")[-1])
        self.assertFalse(os.path.exists(self.out))

    def test_missing_column(self):
        rows = [line.split(",") for line in read(RESULTS).strip().split("\n")]
        drop = rows[0].index("median_us")
        text = "\n".join(",".join(r[:drop] + r[drop + 1:]) for r in rows) + "\n"
        proc = run_plot("--results", self.make_results(text))
        self.assert_one_line_error(proc)
        self.assertIn("median_us", proc.stderr)

    def test_old_file_without_the_new_columns_loads(self):
        # Files written before mode, distinct, code_hash, ... existed.
        old = [c for c in schema.RESULT_COLUMNS if c not in schema.NEW_RESULT_COLUMNS]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=old, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(fixture_rows())
        results = self.make_results(out.getvalue(), "old.csv")
        self.assertNotIn("code_hash", read(results).split("\n")[0])
        if HAVE_MATPLOTLIB:
            self.assert_ok(draw_here("--results", results, "--out-dir", self.out))

    def test_non_numeric_n(self):
        text = read(RESULTS).replace("step3_idle,33554432,", "step3_idle,32M,", 1)
        self.assertIn("step3_idle,32M,", text)
        proc = run_plot("--results", self.make_results(text))
        self.assert_one_line_error(proc)
        self.assertIn("'n'", proc.stderr)

    def test_non_numeric_median(self):
        text = read(RESULTS).replace(",209.7,", ",fast,", 1)
        self.assertIn(",fast,", text)
        proc = run_plot("--results", self.make_results(text))
        self.assert_one_line_error(proc)
        self.assertIn("median_us", proc.stderr)

    def test_no_rows_at_required_sizes(self):
        lines = read(RESULTS).strip().split("\n")
        small = [lines[0]] + [l for l in lines[1:] if l.split(",")[1] == "1024"]
        proc = run_plot("--results", self.make_results("\n".join(small) + "\n"))
        self.assert_one_line_error(proc)
        self.assertIn("2^25", proc.stderr)

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

    def test_readme_options_are_gone(self):
        # README tables are tools/docs.py's job now.
        self.assert_one_line_error(run_plot("--results", RESULTS, "--readme", "README.md"))

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
        self.assertIn("pip install -r tools/requirements.txt", lines[0])
        self.assertNotIn("Traceback", proc.stderr)


# ----------------------------------------------------------------------------
# The Chinese twins (tools/chart_zh.py)
# ----------------------------------------------------------------------------

class WithoutMatplotlibTests(Workspace):
    """Every chart tool where matplotlib does not import (a stand-in that
    raises ImportError comes first on PYTHONPATH): tools/charts.py's one line,
    naming the make target that installs it, exit 3, and no chart drawn."""

    def test_each_chart_tool_says_so_in_one_line(self):
        fake = self.path("fake", "matplotlib")
        write(os.path.join(fake, "__init__.py"), "raise ImportError('no matplotlib here')\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
        reference = os.path.join(REPO, "plots", "reference")
        variance = self.path("variance.csv")
        shutil.copy(os.path.join(reference, "variance.csv"), variance)
        calls = (
            ("plot.py", "plot.py", "plot", ["--results", RESULTS, "--out-dir", self.out]),
            ("accuracy_chart.py", "accuracy_chart", "accuracy",
             [os.path.join(reference, "h200-accuracy.csv"), "--out-dir", self.out]),
            ("variance_chart.py", "variance_chart.py", "variance", [variance]),
            ("multigpu_chart.py", "multigpu_chart.py", "plot",
             ["--sum", os.path.join(reference, "h200x2-multigpu.csv"), "--out-dir", self.out]),
            ("diagrams.py", "diagrams.py", "diagrams", ["--root", REPO, "--out-dir", self.out]),
        )
        for script, tool, target, args in calls:
            with self.subTest(script):
                proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", script), *args],
                                      capture_output=True, text=True, env=env, timeout=300)
                self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
                self.assertEqual(proc.stderr.splitlines(), [
                    f"{tool}: error: matplotlib is not installed; run `pip install -r "
                    f"tools/requirements.txt` (or `make {target}`, which creates a venv)"])
        drawn = [name for _, _, names in os.walk(self.tmp) for name in names if name.endswith(".png")]
        self.assertEqual(drawn, [])


class ChineseWordsTests(unittest.TestCase):
    """What a Chinese chart says: no matplotlib needed."""

    def test_known_texts(self):
        self.assertEqual(chart_zh.translate("n (floats)"), "n（float 个数）")
        self.assertEqual(chart_zh.translate("Sum reduction on NVIDIA H200: bandwidth against "
                                            "input size"),
                         "NVIDIA H200 上的求和归约：带宽随输入规模的变化")
        self.assertEqual(chart_zh.translate("NVIDIA H200  ·  driver 580.159.04  ·  git 599144f"
                                            "  ·  median of 20 reps  ·  plots/reference/h200.csv"),
                         "NVIDIA H200  ·  驱动 580.159.04  ·  代码版本 599144f  ·  20 次重复的中位数"
                         "  ·  plots/reference/h200.csv")
        self.assertEqual(chart_zh.translate("small n: launch overhead dominates\n"
                                            "(time ≈ constant, so GB/s grows with n)"),
                         "n 小时：启动开销占主导\n（耗时几乎不变，所以 GB/s 随 n 增长）")

    def test_names_and_numbers_stay(self):
        for text in ("step0\nnaive", "rows/step7_wide", "torch/layernorm", "3.5x", "1.02x\n9.21x",
                     "$\\mathdefault{2^{25}}$", "CUB DeviceReduce"):
            with self.subTest(text=text):
                self.assertEqual(chart_zh.translate(text), text)
        # a GPU's name is data, its SM count is words
        self.assertEqual(chart_zh.translate("FIXTURE GPU (invented numbers) (132 SMs)"),
                         "FIXTURE GPU (invented numbers)（132 个 SM）")

    def test_part3_texts(self):
        self.assertEqual(chart_zh.translate("Part 3 on NVIDIA H200: backward passes, every "
                                            "program at 32768 x 1024"),
                         "NVIDIA H200 上的第 3 部分：反向传播，32768 x 1024 上的每个程序")
        self.assertEqual(chart_zh.translate("Softmax backward on NVIDIA H200: share of the "
                                            "three-stream copy's speed, per shape"),
                         "NVIDIA H200：各形状下 softmax 反向传播相对三路数据流复制的速度")
        self.assertEqual(chart_zh.translate("copy of the same three streams: 4371 GB/s"),
                         "复制同样的三路数据流：4371 GB/s")

    def test_a_new_english_label_is_seen(self):
        self.assertIsNone(chart_zh.translate("bandwidth of the new step"))
        self.assertIsNone(chart_zh.translate("NVIDIA H200  ·  a new caption part"))
        self.assertIsNone(chart_zh.translate("n (floats)\nsomething new here"))

    def test_twin_names(self):
        self.assertEqual(chart_zh.zh_path("plots/reference/h200-sweep.png"),
                         "plots/reference/h200-sweep.zh-CN.png")
        with tempfile.TemporaryDirectory() as folder:
            chart = os.path.join(folder, "h200-sweep.png")
            self.assertEqual(chart_zh.shown(chart, "zh-CN"), chart)   # no twin yet
            write(chart_zh.zh_path(chart), "png")
            self.assertEqual(chart_zh.shown(chart, "zh-CN"), chart_zh.zh_path(chart))
            self.assertEqual(chart_zh.shown(chart, "en"), chart)


@needs_font
class ChineseChartTests(Workspace):

    def test_every_chart_gets_a_chinese_twin_in_chinese(self):
        args = ("--chinese", "--results", RESULTS, "--profile", PROFILE, "--out-dir", self.out)
        proc = run_plot(*args)
        self.assert_ok(proc)
        self.assertNotIn("no Chinese form", proc.stderr)
        kinds = CHARTS + ("profile",)
        self.assertEqual(sorted(os.listdir(self.out)),
                         sorted([f"fixture-{k}.png" for k in kinds]
                                + [f"fixture-{k}.zh-CN.png" for k in kinds]))
        for kind in kinds:
            english = read(os.path.join(self.out, f"fixture-{kind}.png"), "rb")
            chinese = read(os.path.join(self.out, f"fixture-{kind}.zh-CN.png"), "rb")
            self.assertEqual(chinese[:8], PNG_SIGNATURE)
            self.assertNotEqual(chinese, english)
        before = {name: read(os.path.join(self.out, name), "rb") for name in os.listdir(self.out)}
        again = run_plot(*args)
        self.assert_ok(again)
        self.assertEqual(again.stdout, "")   # the same bytes: nothing written
        self.assertEqual(before, {name: read(os.path.join(self.out, name), "rb")
                                  for name in os.listdir(self.out)})

    def test_tick_labels_given_with_the_ticks_stay_chinese(self):
        # Issue 45: the progression chart's last bar still read "CUB (library)".
        # matplotlib 3.9 keeps the labels given to set_xticks in a FuncFormatter,
        # which writes them again, in English, on every draw.
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.bar([0, 1], [1, 2])
        ax.set_xticks([0, 1], ["step9\nsinglepass", "CUB\n(library)"])
        self.assertEqual(chart_zh.localize(fig, chart_zh.font_properties()), [])
        fig.canvas.draw()
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()],
                         ["step9\nsinglepass", "CUB\n（库）"])
        plt.close(fig)

    def test_without_the_font_the_english_charts_still_come(self):
        fake = self.path("fake", "pylopdf_fonts_zh_cn")
        write(os.path.join(fake, "__init__.py"), "")          # the package, no font file
        env = dict(os.environ, PYTHONPATH=self.path("fake"))
        proc = run_plot("--chinese", "--results", RESULTS, "--out-dir", self.out, env=env)
        self.assert_ok(proc)
        self.assertEqual(sorted(os.listdir(self.out)),
                         sorted(f"fixture-{kind}.png" for kind in CHARTS))
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("pip install -r tools/requirements.txt", lines[0])


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("plots", verbosity=1))
