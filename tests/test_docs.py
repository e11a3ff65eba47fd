#!/usr/bin/env python3
"""Tests for tools/docs.py, the generated blocks in English and Chinese:
README.md's results, ACCURACY.md's accuracy, and each step README's measured,
counters, diff and figures; and for tools/generated.py, the block and
file-writing helpers under them.

Every docs test builds a small repository in a temporary directory (pages
with marker blocks, a few stepN_*/reduce.cu, the fixture results under
plots/reference/) and runs docs.py on it as a subprocess, as `make docs`
does. No GPU and no matplotlib needed. Run: python3 tests/test_docs.py
The last line printed is `docs: N passed, N failed`.
"""
import contextlib
import csv
import io
import os
import re
import shutil
import string
import subprocess
import sys
import tempfile
import unittest

from fakes import csv_text, fixture_row, fixture_rows

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, "tools", "docs.py")
FIXTURES = os.path.join(REPO, "tests", "plots")
ACCURACY_FIXTURE = os.path.join(REPO, "tests", "accuracy", "fixture-accuracy.csv")
sys.path.insert(0, os.path.join(REPO, "tools"))
import accuracy_data  # noqa: E402
import accuracy_docs  # noqa: E402
import compare  # noqa: E402
import diagrams  # noqa: E402
import docs  # noqa: E402
import generated  # noqa: E402
import patterns  # noqa: E402
import variance_chart  # noqa: E402
import schema  # noqa: E402
import stale  # noqa: E402
import zh_strings  # noqa: E402

N_MID, N_BIG = 1 << 25, 1 << 28
SHIPPED_STEPS = [s for s in schema.SHIPPED if s != schema.CUB]
FIXTURE_ORDER = SHIPPED_STEPS + ["cub"]
SOURCE = "plots/reference/fixture.csv"

TOP = ("# Demo\n\nIntro text stays.\n\n## Results\n\n<!-- BEGIN results -->\nstale text\n"
       "<!-- END results -->\n\nOutro stays.\n")
TOP_ZH = ("# 演示\n\n开头不变。\n\n## 结果\n\n<!-- BEGIN results -->\n旧内容\n"
          "<!-- END results -->\n\n结尾不变。\n")
STEP = ("# A step\n\nExplanation.\n\n<!-- BEGIN diff -->\nold diff\n<!-- END diff -->\n\n"
        "## Measured\n\n<!-- BEGIN measured -->\nold\n<!-- END measured -->\n\n"
        "Prose about the counters.\n\n<!-- BEGIN counters -->\nkeep me\n"
        "<!-- END counters -->\n\n## Pitfalls\n")
STEP_ZH = ("# 一步\n\n说明。\n\n<!-- BEGIN diff -->\n旧\n<!-- END diff -->\n\n## 测量\n\n"
           "<!-- BEGIN measured -->\n旧\n<!-- END measured -->\n\n<!-- BEGIN counters -->\n旧\n"
           "<!-- END counters -->\n")


def source_text(step, extra=""):
    return (f"// What {step} changes, in one line.\n"
            "__global__ void reduce_kernel(const float *in, float *out)\n{\n"
            f"    // body of {step}\n{extra}}}\n")


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)




def block(text, name):
    begin, end = docs.markers(name)
    return text.split(begin, 1)[1].split(end, 1)[0]


def outside_blocks(text):
    return re.sub(r"<!-- BEGIN (\w+) -->.*?<!-- END \1 -->", "", text, flags=re.S)


def table_after(text, heading):
    """Rows (lists of cells) of the first markdown table after a line starting with heading."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))  # not on an escaped \|
            rows.append([cell.strip() for cell in cells])
        elif rows:
            break
    return rows[2:]  # drop the header and the alignment row


def table_rows(text):
    """Data rows of the first table in text."""
    return table_after("\n" + text, "")


class Repo(unittest.TestCase):
    """A small repository per test: READMEs, steps 0-9, CUB, fixture results."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="docs-test-")
        self.addCleanup(shutil.rmtree, self.root)
        write(self.path("README.md"), TOP)
        write(self.path("README.zh-CN.md"), TOP_ZH)
        for step in SHIPPED_STEPS:
            write(self.path(step, "reduce.cu"), source_text(step))
            write(self.path(step, "README.md"), STEP)
        write(self.path("step1_divergence", "README.zh-CN.md"), STEP_ZH)
        write(self.path("baseline_cub", "reduce.cu"), "// CUB DeviceReduce::Sum.\n")
        self.results = self.path("plots", "reference", "fixture.csv")
        os.makedirs(os.path.dirname(self.results))
        shutil.copy(os.path.join(FIXTURES, "fixture.csv"), self.results)
        shutil.copy(os.path.join(FIXTURES, "fixture-profile.csv"),
                    self.path("plots", "reference", "fixture-profile.csv"))

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def run_docs(self, *args, results=None):
        # -S: docs.py needs the standard library only; site's start-up hooks cost more.
        cmd = [sys.executable, "-S", DOCS, "--root", self.root, "--results", results or self.results]
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120)

    def generate(self, *args, results=None):
        proc = self.run_docs(*args, results=results)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        return proc

    def readme(self, *parts):
        return read(self.path(*parts))

    def assert_one_line_error(self, proc):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("docs: error: "), lines[0])


# ----------------------------------------------------------------------------
# README.md: results
# ----------------------------------------------------------------------------

class ResultsBlockTests(Repo):

    def test_block_replaced_and_surroundings_kept(self):
        self.generate()
        text = self.readme("README.md")
        self.assertNotIn("stale text", text)
        self.assertEqual(outside_blocks(text), outside_blocks(TOP))
        self.assertIn("Measured on Test GPU (driver 1.2.3, CUDA 13.0, built with not recorded "
                      "for not recorded, peak 4814 GB/s from the device attributes) at revision "
                      "abc1234; L2 flushed before every repetition; one run of each program, "
                      "the median of 20 repetitions;", text)
        self.assertIn(f"Source: {SOURCE}.", text)

    def test_step3_row_matches_fixture(self):
        self.generate()
        text = self.readme("README.md")
        for n, label in ((N_MID, "**n = 2^25**"), (N_BIG, "**n = 2^28**")):
            source = fixture_row("step3_idle", n)
            row = next(r for r in table_after(text, label) if r[0] == "step3_idle")
            median, gbps = float(source["median_us"]), float(source["gbps"])
            pct = 100 * gbps / float(source["peak_gbps"])
            # median, the rounds' range (one run: [median–median]), GB/s, % of peak
            self.assertEqual(row[2:6], [f"{median:.1f}", f"[{median:.1f}–{median:.1f}]",
                                        f"{gbps:.0f}", f"{pct:.1f}"])
            prev = float(fixture_row("step2_bankconflict", n)["median_us"])
            base = float(fixture_row("step0_naive", n)["median_us"])
            cub = float(fixture_row("cub", n)["gbps"])
            # One run each: a ratio above 1 is a win, below 1 a loss (ranges of one point).
            row = [cell.split(" ")[0] for cell in row]
            self.assertEqual(row[6:9], [f"{prev / median:.2f}x", f"{base / median:.2f}x",
                                        f"{gbps / cub:.2f}x"])

    def test_steps_in_step_order_not_speed_order(self):
        by_speed = sorted(FIXTURE_ORDER, key=lambda s: float(fixture_row(s, N_MID)["gbps"]))
        self.assertNotEqual(by_speed, FIXTURE_ORDER)  # else this test proves nothing
        self.generate()
        for label in ("**n = 2^25**", "**n = 2^28**"):
            self.assertEqual([r[0] for r in table_after(self.readme("README.md"), label)],
                             FIXTURE_ORDER)

    def test_chart_links_next_to_the_results_file(self):
        self.generate()
        text = self.readme("README.md")
        for kind in ("progression", "sweep", "vs-cub", "profile"):
            self.assertIn(f"![{kind}](plots/reference/fixture-{kind}.png)", text)
        # Relative to each README: a results file elsewhere, no profile beside it.
        elsewhere = self.path("data", "gpu.csv")
        write(elsewhere, read(self.results))
        self.generate(results=elsewhere)
        text = self.readme("README.md")
        self.assertIn("![vs-cub](data/gpu-vs-cub.png)", text)
        self.assertNotIn("![profile]", text)

    def test_what_changed_comes_from_line_one_of_reduce_cu(self):
        write(self.path("step3_idle", "reduce.cu"),
              "// Halve the block count: every thread adds two | values.\n")
        os.remove(self.path("step4_warp", "reduce.cu"))
        self.generate()
        rows = {r[0]: r for r in table_after(self.readme("README.md"), "**n = 2^25**")}
        self.assertEqual(rows["step3_idle"][1],
                         "Halve the block count: every thread adds two \\| values.")
        self.assertEqual(rows["cub"][1], "CUB DeviceReduce::Sum.")
        self.assertEqual(rows["step4_warp"][1], "")

    def test_seed_figures_are_quoted(self):
        self.generate()
        text = self.readme("README.md")
        self.assertIn("The seed articles (Chinese, named under Sources below; V100, their own "
                      "harness, 2^25 floats) report 788.29 us (v0), 502.43 (v1), 375.90 (v2), 205.89 "
                      "(v3), 176.86 (v4) and 162.21 us for their final version.", text)
        self.assertIn(f"| final | 162.21 | {788.29 / 162.21:.2f}x |", text)

    def test_last_row_wins_for_repeated_step_and_n(self):
        again = dict(fixture_row("step3_idle", N_MID), median_us="50.0",
                     gbps=f"{4 * N_MID / 50.0 / 1e3:.2f}")
        write(self.results, csv_text(fixture_rows() + [again]))
        self.generate()
        row = next(r for r in table_after(self.readme("README.md"), "**n = 2^25**")
                   if r[0] == "step3_idle")
        self.assertEqual(row[2:5], ["50.0", "[50.0–50.0]", f"{4 * N_MID / 50.0 / 1e3:.0f}"])

    def test_failed_and_check_rows_never_tabulated(self):
        self.generate()
        good = fixture_row("step3_idle", N_MID)
        failed = dict(good, median_us="1.0", gbps="134217.73")
        failed["pass"] = "0"
        check = dict(good, mode="check", reps="1", warmup="0", flush="0", median_us="",
                     min_us="", max_us="", gbps="", pct_peak="")
        write(self.results, csv_text(fixture_rows() + [failed, check]))
        proc = self.run_docs("--check")
        self.assertEqual(proc.returncode, 0, "a failed or check-mode row changed a README: "
                         + proc.stderr)
        self.assertIn("left out 2 of 46 rows: 1 failed (pass != 1), 1 without timing",
                      proc.stderr)

    def test_gpu_named_from_the_data(self):
        rows = [dict(r, gpu="NVIDIA A100-SXM4-80GB") for r in fixture_rows()]
        write(self.results, csv_text(rows))
        self.generate()
        top, step = self.readme("README.md"), self.readme("step4_warp", "README.md")
        self.assertIn("Measured on NVIDIA A100-SXM4-80GB (driver", top)
        self.assertIn("Measured on NVIDIA A100-SXM4-80GB (driver 1.2.3", block(step, "measured"))
        for text in (top, step, self.readme("README.zh-CN.md")):
            self.assertNotIn("H200", text)

    def test_no_gpu_name_in_the_generator(self):
        for path in (DOCS, os.path.join(REPO, "tools", "compare.py")):
            self.assertFalse("H200" in read(path), f"{path} names a GPU")


# ----------------------------------------------------------------------------
# stepN_*/README.md: measured, counters, diff
# ----------------------------------------------------------------------------

class StepBlockTests(Repo):

    def test_measured_block(self):
        self.generate()
        measured = block(self.readme("step1_divergence", "README.md"), "measured")
        rows = table_rows(measured)
        self.assertEqual([r[0] for r in rows], ["2^25", "2^28"])
        source = fixture_row("step1_divergence", N_MID)
        median = float(source['median_us'])
        self.assertEqual(rows[0][1:4], [f"{median:.1f}", f"[{median:.1f}–{median:.1f}]",
                                        f"{float(source['gbps']):.0f}"])
        self.assertIn(f"Measured on Test GPU (driver 1.2.3, CUDA 13.0) at revision abc1234, "
                      f"from {SOURCE}.", measured)

    def test_text_outside_blocks_untouched(self):
        self.generate()
        for step in SHIPPED_STEPS:
            self.assertEqual(outside_blocks(self.readme(step, "README.md")), outside_blocks(STEP))
        self.assertEqual(outside_blocks(self.readme("step1_divergence", "README.zh-CN.md")),
                         outside_blocks(STEP_ZH))

    def test_diff_block(self):
        write(self.path("step1_divergence", "reduce.cu"),
              source_text("step1_divergence", "    unsigned int index = 2 * threadIdx.x;\n"))
        self.generate()
        diff = block(self.readme("step1_divergence", "README.md"), "diff")
        self.assertIn("```diff\n--- step0_naive/reduce.cu\n+++ step1_divergence/reduce.cu\n", diff)
        self.assertIn("+    unsigned int index = 2 * threadIdx.x;", diff)
        self.assertIn("-// What step0_naive changes, in one line.", diff)
        self.assertTrue(diff.strip().endswith("```"))

    def test_step0_has_no_previous(self):
        self.generate()
        self.assertEqual(block(self.readme("step0_naive", "README.md"), "diff").strip(),
                         "Step 0 is the starting point; there is no previous step.")

    def test_counters_block_with_the_lanes_ratio(self):
        self.generate()
        counters = block(self.readme("step1_divergence", "README.md"), "counters")
        self.assertNotIn("keep me", counters)
        self.assertIn("| counter | previous (step0_naive) | this step (step1_divergence) | "
                      "change |", counters)
        self.assertIn("| warp instructions executed `smsp__inst_executed.sum` | 61,234,688 | "
                      f"40,370,176 | {40370176 / 61234688:.2f}x |", counters)
        self.assertIn("| thread instructions with the predicate on "
                      "`smsp__thread_inst_executed_pred_on.sum` | 581,729,536 | 847,773,696 | "
                      f"{847773696 / 581729536:.2f}x |", counters)
        # 581,729,536 / 61,234,688 = 9.5 lanes; 847,773,696 / 40,370,176 = 21.
        self.assertIn("| lanes with the predicate on per warp instruction "
                      "`smsp__thread_inst_executed_pred_on.sum` / `smsp__inst_executed.sum` | "
                      f"9.5 | 21 | {21 / 9.5:.2f}x |", counters)
        self.assertIn("Nsight Compute, Test GPU at revision abc1234, from "
                      "plots/reference/fixture-profile.csv.", counters)

    def test_step_without_counters(self):
        self.generate()  # the fixture profile has no step 9
        self.assertEqual(block(self.readme("step9_singlepass", "README.md"), "counters").strip(),
                         "No counters for step9_singlepass in plots/reference/"
                         "fixture-profile.csv yet.")

    def test_no_profile_file(self):
        elsewhere = self.path("data", "gpu.csv")
        write(elsewhere, read(self.results))
        self.generate(results=elsewhere)
        self.assertEqual(block(self.readme("step4_warp", "README.md"), "counters").strip(),
                         "No Nsight Compute counters yet: run `make profile-all`, then "
                         "`make docs`.")

    def test_student_step_without_rows(self):
        # What `make new NAME=step10_mine` leaves: its source and a README stub.
        write(self.path("step10_mine", "reduce.cu"),
              source_text("step9_singlepass", "    // my one change\n"))
        write(self.path("step10_mine", "README.md"),
              "# step10_mine\n\n## Measured\n<!-- BEGIN measured -->\n<!-- END measured -->\n\n"
              "## Diff against the previous step\n<!-- BEGIN diff -->\n<!-- END diff -->\n")
        write(self.path("step10_mine", "README.zh-CN.md"),
              "<!-- BEGIN measured -->\n<!-- END measured -->\n")
        self.generate()
        text = self.readme("step10_mine", "README.md")
        self.assertEqual(block(text, "measured").strip(),
                         f"Not measured yet: {SOURCE} has no usable rows for step10_mine at "
                         "n = 2^25 or 2^28. `make bench` measures it beside the other steps "
                         "and draws its charts in plots/results/.")
        self.assertIn("+++ step10_mine/reduce.cu", block(text, "diff"))
        self.assertIn("+    // my one change", block(text, "diff"))
        self.assertEqual(block(self.readme("step10_mine", "README.zh-CN.md"), "measured").strip(),
                         f"尚未测量：{SOURCE} 里没有 step10_mine 在 n = 2^25 或 2^28 时的有效数据。"
                         "`make bench` 会把它和其他步骤一起测一遍，并把图表画在 plots/results/ 里。")
        # Not in the results, so not in the top table either.
        steps = [r[0] for r in table_after(self.readme("README.md"), "**n = 2^25**")]
        self.assertNotIn("step10_mine", steps)

    def test_readme_without_markers_is_left_alone(self):
        plain = "# Step 2\n\nNo markers here.\n"
        write(self.path("step2_bankconflict", "README.md"), plain)
        self.generate()
        self.assertEqual(self.readme("step2_bankconflict", "README.md"), plain)


# ----------------------------------------------------------------------------
# README.zh-CN.md
# ----------------------------------------------------------------------------

def numbers_only(rows):
    """Table cells with the verdict words dropped: 1.58x win and 1.58x（领先） both read 1.58x."""
    return [[cell.split(" ")[0].split("（")[0] for cell in row] for row in rows]


class ChineseTests(Repo):

    def test_results_block_in_chinese_with_the_same_numbers(self):
        self.generate()
        en, zh = self.readme("README.md"), self.readme("README.zh-CN.md")
        self.assertEqual(outside_blocks(zh), outside_blocks(TOP_ZH))
        self.assertIn("测量于 Test GPU（驱动 1.2.3，CUDA 13.0，用 未记录 为 未记录 编译，按设备属性算出的"
                      "峰值带宽为 4814 GB/s），代码版本 abc1234；每次重复前都清空 L2；每个程序运行一次，"
                      "取 20 次重复的中位数；", zh)
        self.assertIn(f"数据来源：{SOURCE}。", zh)
        self.assertIn("| 步骤 | 改动 | 中位数（微秒） | 各轮（微秒） | GB/s | 占峰值 % | 相对上一步 "
                      "| 相对第 0 步 | 相对 CUB |", zh)
        for n, en_label, zh_label in ((N_MID, "**n = 2^25** (", "**n = 2^25**（"),
                                      (N_BIG, "**n = 2^28** (", "**n = 2^28**（")):
            self.assertEqual(numbers_only(table_after(zh, zh_label)),
                             numbers_only(table_after(en, en_label)))
        self.assertIn("**n = 2^25**（33,554,432 个 float，128 MiB）", zh)
        self.assertIn("788.29 微秒（v0）、502.43（v1）、375.90（v2）", zh)
        # Chinese alt text; the English chart while no Chinese twin is drawn
        # (tools/chart_zh.py), the twin once it is.
        for kind in ("progression", "sweep", "vs-cub", "profile"):
            self.assertIn(f"![{zh_strings.STRINGS[kind]}](plots/reference/fixture-{kind}.png)", zh)
        twin = os.path.join(self.root, "plots", "reference", "fixture-sweep.zh-CN.png")
        with open(twin, "wb") as handle:
            handle.write(b"\x89PNG")
        self.generate()
        zh = self.readme("README.zh-CN.md")
        self.assertIn(f"![{zh_strings.STRINGS['sweep']}](plots/reference/fixture-sweep.zh-CN.png)", zh)
        self.assertIn("(plots/reference/fixture-progression.png)", zh)
        self.assertIn("![sweep](plots/reference/fixture-sweep.png)", self.readme("README.md"))

    def test_step_blocks_in_chinese_with_the_same_numbers(self):
        self.generate()
        en = self.readme("step1_divergence", "README.md")
        zh = self.readme("step1_divergence", "README.zh-CN.md")
        for name in ("measured", "counters"):
            en_rows, zh_rows = table_rows(block(en, name)), table_rows(block(zh, name))
            self.assertEqual(numbers_only([r[1:] for r in zh_rows]),
                             numbers_only([r[1:] for r in en_rows]), name)
        self.assertEqual(block(zh, "diff"), block(en, "diff"))
        counters = block(zh, "counters")
        self.assertIn("| 计数器 | 上一步（step0_naive） | 本步（step1_divergence） | 变化 |", counters)
        self.assertIn("| 执行的 warp 指令数 `smsp__inst_executed.sum` |", counters)
        self.assertIn("| 每条 warp 指令中谓词为真的 lane 数 `smsp__thread_inst_executed_pred_on.sum`"
                      " / `smsp__inst_executed.sum` |", counters)
        self.assertIn("| 共享内存 bank 冲突（读） `l1tex__data_bank_conflicts_pipe_lsu_mem_"
                      "shared_op_ld.sum` |", counters)
        self.assertIn("| kernel 执行时间（ns） `gpu__time_duration.sum` |", counters)
        self.assertIn("测量于 Test GPU（驱动 1.2.3，CUDA 13.0），代码版本 abc1234，数据来自 "
                      f"{SOURCE}。", block(zh, "measured"))

    def test_every_label_has_a_translation(self):
        labels = [label for _, label in compare.COUNTERS] + [compare.LANES_ON]
        for text in labels + list(docs.FLUSH_TEXT.values()):
            self.assertIn(text, docs.STRINGS)

    def test_translations_keep_every_placeholder(self):
        def fields(text):
            return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name)
        for english, chinese in docs.STRINGS.items():
            self.assertEqual(fields(chinese), fields(english), english)

    def test_chinese_numbers_and_names_match(self):
        # Everything that is not a label is identical: every number, step
        # name and backquoted identifier of the English blocks is in the Chinese ones.
        self.generate()
        for folder in ("", "step1_divergence"):
            en = self.readme(folder, "README.md")
            zh = self.readme(folder, "README.zh-CN.md")
            tokens = r"`[^`\n]+`|\d+(?:[.,]\d+)*x?|step\d+_\w+"
            en_tokens = sorted(re.findall(tokens, outside_blocks_complement(en)))
            zh_tokens = sorted(re.findall(tokens, outside_blocks_complement(zh)))
            self.assertEqual(zh_tokens, en_tokens, folder or "README")


def outside_blocks_complement(text):
    """Only the generated text: the bodies of every block."""
    return "\n".join(m.group(2) for m in
                     re.finditer(r"<!-- BEGIN (\w+) -->(.*?)<!-- END \1 -->", text, re.S))


# ----------------------------------------------------------------------------
# Idempotence, --check, errors, make docs
# ----------------------------------------------------------------------------

class RunTests(Repo):

    def snapshot(self):
        found = {}
        for folder, _, files in os.walk(self.root):
            for name in files:
                if name.startswith("README"):
                    found[os.path.join(folder, name)] = read(os.path.join(folder, name))
        return found

    def test_second_run_changes_nothing(self):
        first = self.generate()
        self.assertIn("docs: wrote README.zh-CN.md", first.stdout)
        self.assertIn("docs: wrote step1_divergence/README.zh-CN.md", first.stdout)
        before = self.snapshot()
        second = self.generate()
        self.assertEqual(second.stdout, "")
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.run_docs("--check").returncode, 0)

    def test_stale_on_a_root_without_results_is_an_error(self):
        for root in ("", os.path.join(tempfile.gettempdir(), "no-such-root")):
            with contextlib.redirect_stderr(io.StringIO()) as said:
                self.assertEqual(stale.main(["--root", root]), 2, root)
            self.assertIn("holds no plots/ folder", said.getvalue())

    def test_check_reports_stale_readmes_and_writes_nothing(self):
        before = self.snapshot()
        proc = self.run_docs("--check")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("docs: README.zh-CN.md is out of date: run `make docs`", proc.stderr)
        self.assertIn("docs: step4_warp/README.md is out of date", proc.stderr)
        self.assertEqual(self.snapshot(), before)

    def test_missing_chart_is_a_note(self):
        proc = self.generate()
        self.assertIn("docs: note: plots/reference/fixture-vs-cub.png does not exist yet; "
                      "`make plot` draws it", proc.stderr)

    def test_top_readme_without_markers(self):
        write(self.path("README.md"), "# No markers\n")
        before = self.snapshot()
        proc = self.run_docs()
        self.assert_one_line_error(proc)
        self.assertIn("<!-- BEGIN results -->", proc.stderr)
        self.assertEqual(self.snapshot(), before)  # nothing half-written

    def test_missing_results_file(self):
        proc = self.run_docs(results=self.path("nope.csv"))
        self.assert_one_line_error(proc)
        self.assertIn("not found", proc.stderr)

    def test_an_empty_file_option_is_refused_not_the_default(self):
        # The default results are there: an empty --results must not fall back to them.
        shutil.copy(self.results, self.path(docs.DEFAULT_RESULTS))
        before = self.snapshot()
        for option in ("--results", "--profile", "--accuracy"):
            with self.subTest(option):
                proc = self.run_docs(option, "")
                self.assert_one_line_error(proc)
                self.assertIn(f"{option} needs a file", proc.stderr)
        self.assertEqual(self.snapshot(), before)

    def test_missing_profile_given_explicitly(self):
        proc = self.run_docs("--profile", self.path("nope-profile.csv"))
        self.assert_one_line_error(proc)

    def test_unknown_option(self):
        self.assert_one_line_error(self.run_docs("--bogus"))

    def test_make_docs(self):
        shutil.copy(os.path.join(REPO, "Makefile"), self.root)
        shutil.copytree(os.path.join(REPO, "mk"), self.path("mk"))
        os.makedirs(self.path("tools"))
        for name in os.listdir(os.path.join(REPO, "tools")):
            if name.endswith(".py"):
                shutil.copy(os.path.join(REPO, "tools", name), self.path("tools"))
        before = sorted(os.listdir(self.path("plots", "reference")))

        def make():
            return subprocess.run(["make", "--no-print-directory", "docs",
                                   "RESULTS=plots/reference/fixture.csv"], cwd=self.root,
                                  capture_output=True, text=True, timeout=120)
        first = make()
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("--profile plots/reference/fixture-profile.csv", first.stdout)
        self.assertIn("docs: wrote step1_divergence/README.zh-CN.md", first.stdout)
        self.assertIn("`smsp__inst_executed.sum`", self.readme("step4_warp", "README.md"))
        self.assertNotIn("docs: wrote", make().stdout)
        # Pages only: no chart, no picture, no data file.
        self.assertEqual(sorted(os.listdir(self.path("plots", "reference"))), before)
        self.assertFalse(os.path.exists(self.path("plots", "diagrams")))



# ----------------------------------------------------------------------------
# ACCURACY.md: accuracy
# ----------------------------------------------------------------------------

ACCURACY_PAGE = ("# Accuracy\n\nProse stays.\n\n<!-- BEGIN accuracy -->\nold\n"
                 "<!-- END accuracy -->\n\nMore prose.\n")
ACCURACY_PAGE_ZH = "# 精度\n\n<!-- BEGIN accuracy -->\n旧\n<!-- END accuracy -->\n"
ACCURACY_SOURCE = "plots/reference/fixture-accuracy.csv"


class AccuracyBlockTests(Repo):

    def setUp(self):
        super().setUp()
        write(self.path("ACCURACY.md"), ACCURACY_PAGE)
        write(self.path("ACCURACY.zh-CN.md"), ACCURACY_PAGE_ZH)

    def measure(self):
        shutil.copy(ACCURACY_FIXTURE, self.path(*ACCURACY_SOURCE.split("/")))

    def test_not_measured_yet_in_both_languages(self):
        self.generate()
        for name, lang in (("ACCURACY.md", "en"), ("ACCURACY.zh-CN.md", "zh-CN")):
            text = block(self.readme(name), "accuracy").strip()
            self.assertEqual(text, accuracy_docs.accuracy_block([], lang, ACCURACY_SOURCE))
            self.assertIn("make accuracy", text)
        self.assertIn("Not measured yet", self.readme("ACCURACY.md"))
        self.assertIn("尚未测量", self.readme("ACCURACY.zh-CN.md"))
        self.assertEqual(outside_blocks(self.readme("ACCURACY.md")), outside_blocks(ACCURACY_PAGE))

    def test_measured_block_from_the_results_files_sibling(self):
        self.measure()
        proc = self.generate()
        rows = accuracy_data.read_rows(ACCURACY_FIXTURE)
        for name, lang in (("ACCURACY.md", "en"), ("ACCURACY.zh-CN.md", "zh-CN")):
            self.assertEqual(block(self.readme(name), "accuracy").strip(),
                             accuracy_docs.accuracy_block(rows, lang, ACCURACY_SOURCE), name)
        self.assertIn("Measured on FIXTURE GPU", self.readme("ACCURACY.md"))
        self.assertIn("docs: note: plots/reference/fixture-accuracy.png does not exist yet",
                      proc.stderr)
        self.assertEqual(self.run_docs("--check").returncode, 0)

    def test_explicit_accuracy_file(self):
        elsewhere = self.path("data", "gpu-accuracy.csv")
        os.makedirs(os.path.dirname(elsewhere))
        shutil.copy(ACCURACY_FIXTURE, elsewhere)
        self.generate("--accuracy", elsewhere)
        text = block(self.readme("ACCURACY.md"), "accuracy")
        self.assertIn("Source: data/gpu-accuracy.csv.", text)
        self.assertIn("![accuracy](data/gpu-accuracy.png)", text)

    def test_stale_block_is_found_and_refilled(self):
        self.generate()
        self.measure()
        before = self.readme("ACCURACY.md")
        proc = self.run_docs("--check")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("docs: ACCURACY.md is out of date: run `make docs`", proc.stderr)
        self.assertIn("docs: ACCURACY.zh-CN.md is out of date", proc.stderr)
        self.assertEqual(self.readme("ACCURACY.md"), before)
        self.assertIn("docs: wrote ACCURACY.md", self.generate().stdout)
        self.assertEqual(self.generate().stdout, "")

    def test_missing_accuracy_file_given_explicitly(self):
        proc = self.run_docs("--accuracy", self.path("nope-accuracy.csv"))
        self.assert_one_line_error(proc)
        self.assertIn("--accuracy", proc.stderr)

    def test_accuracy_block_speaks_the_same_languages(self):
        self.assertEqual(accuracy_docs.LANGS, tuple(lang for _, lang in docs.LANGS))

    def test_bad_accuracy_file_is_one_line_and_writes_nothing(self):
        write(self.path(*ACCURACY_SOURCE.split("/")), "step,n\nstep0_naive,1024\n")
        before = self.readme("ACCURACY.md"), self.readme("README.md")
        proc = self.run_docs()
        self.assert_one_line_error(proc)
        self.assertIn("missing column(s)", proc.stderr)
        self.assertEqual((self.readme("ACCURACY.md"), self.readme("README.md")), before)


# ----------------------------------------------------------------------------
# stepN_*/README.md: figures
# ----------------------------------------------------------------------------

FIGURES_STEP = "# A step\n\n<!-- BEGIN figures -->\nold pictures\n<!-- END figures -->\n\nProse.\n"
FIGURES_STEP_ZH = "# 一步\n\n<!-- BEGIN figures -->\n旧图\n<!-- END figures -->\n"


class FiguresBlockTests(Repo):
    """Real step sources, so that tools/patterns.py can model them."""

    STEPS = ("step1_divergence", "step8_vector")

    def setUp(self):
        super().setUp()
        for step in self.STEPS:
            shutil.copy(os.path.join(REPO, step, "reduce.cu"), self.path(step, "reduce.cu"))
            write(self.path(step, "README.md"), FIGURES_STEP)
            write(self.path(step, "README.zh-CN.md"), FIGURES_STEP_ZH)

    def expected(self, step, translate=diagrams.english):
        built = patterns.build(self.root, step)
        return diagrams.figures_block(built, self.path(step), self.path("plots", "diagrams"),
                                      translate)

    def test_links_and_alt_text_from_the_model(self):
        proc = self.generate()
        for step in self.STEPS:
            en = block(self.readme(step, "README.md"), "figures").strip()
            self.assertEqual(en, self.expected(step))
            self.assertEqual(outside_blocks(self.readme(step, "README.md")),
                             outside_blocks(FIGURES_STEP))
        en = block(self.readme("step1_divergence", "README.md"), "figures")
        self.assertIn("![step1_divergence: which of the 256 threads (8 warps) of one block "
                      "work at each level, and which warps issue it]"
                      "(../plots/diagrams/step1_divergence-lanes.png)", en)
        self.assertIn("docs: note: plots/diagrams/step8_vector-loads.png does not exist yet",
                      proc.stderr)

    def test_chinese_alt_text_same_links(self):
        self.generate()
        for step in self.STEPS:
            en = block(self.readme(step, "README.md"), "figures")
            zh = block(self.readme(step, "README.zh-CN.md"), "figures")
            links = r"\]\(([^)]+)\)"
            self.assertEqual(re.findall(links, zh), re.findall(links, en))
            self.assertEqual(zh.strip(), self.expected(
                step, lambda t, **v: docs.STRINGS[t].format(**v)))
            self.assertNotIn("which", zh)
        self.assertIn("共享内存 bank 分布", block(self.readme("step1_divergence",
                                                               "README.zh-CN.md"), "figures"))

    def test_a_step_without_a_model(self):
        write(self.path("step10_mine", "reduce.cu"), source_text("step10_mine"))
        write(self.path("step10_mine", "README.md"), FIGURES_STEP)
        self.generate()
        self.assertEqual(block(self.readme("step10_mine", "README.md"), "figures").strip(),
                         "No access-pattern pictures for step10_mine yet: tools/patterns.py "
                         "has no model of it.")

    def test_a_model_that_cannot_be_built_is_one_line(self):
        with open(self.path("step8_vector", "reduce.cu"), encoding="utf-8") as handle:
            text = handle.read()
        write(self.path("step8_vector", "reduce.cu"), text.replace("#define BLOCK_SIZE",
                                                                   "#define BLOCK_SIZE_GONE"))
        before = self.readme("step8_vector", "README.md")
        proc = self.run_docs()
        self.assert_one_line_error(proc)
        self.assertIn("BLOCK_SIZE", proc.stderr)
        self.assertEqual(self.readme("step8_vector", "README.md"), before)

    def test_only_pages_with_the_block_build_a_model(self):
        # The other fixture steps have no figures block and fake sources that
        # no model could read: docs.py must not even try.
        self.assertFalse(generated.has_block(STEP, "figures"))
        self.generate()

    def test_every_alt_text_has_a_translation(self):
        for template in diagrams.ALT_TEXT.values():
            self.assertIn(template, docs.STRINGS)


# ----------------------------------------------------------------------------
# tools/generated.py and the size labels
# ----------------------------------------------------------------------------

class GeneratedTests(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="generated-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_replace_block_keeps_the_rest(self):
        text = "intro\n<!-- BEGIN figures -->\nold\n<!-- END figures -->\noutro\n"
        self.assertEqual(generated.replace_block(text, "figures", "![a](b.png)"),
                         "intro\n<!-- BEGIN figures -->\n\n![a](b.png)\n\n"
                         "<!-- END figures -->\noutro\n")
        self.assertIsNone(generated.replace_block("no markers", "figures", "x"))
        self.assertIsNone(generated.replace_block("<!-- END x -->\n<!-- BEGIN x -->\n", "x", "y"))

    def test_fill_blocks_makes_only_the_bodies_a_page_holds(self):
        def absent():
            raise AssertionError("made the body of a block the page does not hold")
        text = "<!-- BEGIN a -->\n<!-- END a -->\n"
        self.assertEqual(generated.fill_blocks(text, [("a", lambda: "A"), ("b", absent)]),
                         "<!-- BEGIN a -->\n\nA\n\n<!-- END a -->\n")

    def test_write_if_changed(self):
        path = os.path.join(self.tmp, "page.md")
        self.assertTrue(generated.write_if_changed(path, "数据 and text\n"))
        with open(path, "rb") as handle:
            self.assertEqual(handle.read(), "数据 and text\n".encode("utf-8"))
        os.utime(path, (1, 1))
        self.assertFalse(generated.write_if_changed(path, "数据 and text\n".encode("utf-8")))
        self.assertEqual(os.stat(path).st_mtime, 1)   # untouched: make and git see nothing
        self.assertTrue(generated.write_if_changed(path, b"other"))

    def test_power_label(self):
        self.assertEqual([schema.power_label(n) for n in (1 << 25, 1 << 28, 1, 1000, 0)],
                         ["2^25", "2^28", "2^0", "1000", "0"])

    def test_one_empty_cell_mark(self):
        """NONE_MARK is written once (tools/rows_docs.py), so that no table's
        empty cell can drift from the others'."""
        own = []
        for name in sorted(os.listdir(os.path.join(REPO, "tools"))):
            if name.endswith(".py"):
                with open(os.path.join(REPO, "tools", name), encoding="utf-8") as handle:
                    own += [name for line in handle if line.startswith("NONE_MARK =")]
        self.assertEqual(own, ["rows_docs.py"])


# ----------------------------------------------------------------------------
# ACCURACY.md's variance block (tools/variance.c's CSV)
# ----------------------------------------------------------------------------

VARIANCE_HEADER = "method,shift,rows,cols,max_rel_err,median_rel_err,nonpositive\n"


class MakeDiffIsTheReadmeDiff(unittest.TestCase):
    """Every step README's diff block is what `make diff STEP=...` prints for
    that step, hunk for hunk (difflib and GNU diff placed 6 of part 2's first
    10 steps' hunks differently until both used tools/generated.py): every
    block against generated.unified_diff() here, and make diff's own command
    (tools/step.sh, a process each) at steps where the two tools disagreed."""

    def test_every_step(self):
        import steps
        blocks = {}
        for part, prefix in (("", ""), (steps.ROWS, "rows/")):
            for folder in steps.step_dirs(REPO, part, True):
                readme = os.path.join(REPO, folder, "README.md")
                if not os.path.isfile(readme):
                    continue
                with open(readme, encoding="utf-8") as handle:
                    found = re.search(r"<!-- BEGIN diff -->\s*\n(`{3,})diff\n(.*?)\n\1", handle.read(), re.S)
                if found is None:   # step 0: no previous step
                    continue
                base = steps.diff_base(REPO, folder, source=True)
                name = steps.source_file(folder)
                diff = generated.unified_diff(os.path.join(REPO, base, name), os.path.join(REPO, folder, name),
                                              f"{base}/{name}", f"{folder}/{name}")
                self.assertEqual(diff, found.group(2), f"{folder}: its README's diff block is stale")
                blocks[f"{prefix}{schema.step_number(os.path.basename(folder))}"] = found.group(2)
        self.assertGreater(len(blocks), 30)
        for step in ("3", "rows/4", "rows/8", "rows/10"):
            out = subprocess.run(["bash", "tools/step.sh", "diff", step], cwd=REPO,
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.rstrip("\n"), blocks[step], f"make diff STEP={step} differs")


class VarianceBlockTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="variance-block-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.src = docs.Sources.__new__(docs.Sources)
        self.src.root = self.tmp
        self.src.accuracy_path = os.path.join(self.tmp, "plots", "h200-accuracy.csv")
        self.src.linked = []
        os.makedirs(os.path.join(self.tmp, "plots"))
        self.csv = os.path.join(self.tmp, "plots", "variance.csv")

    def write(self, text):
        with open(self.csv, "w") as f:
            f.write(text)

    def test_not_computed_yet_says_the_command(self):
        for lang in ("en", "zh-CN"):
            text = docs.variance_block(self.src, self.tmp, lang)
            self.assertIn("make variance OUT_DIR=plots", text)

    def test_table_rows_and_chart(self):
        self.write(VARIANCE_HEADER + "one-pass,2000,4,8,9.453e-01,1e-01,0\n"
                   "two-pass,2000,4,8,1.724e-07,1e-08,0\n"
                   "welford,2000,4,8,3.677e-05,1e-06,0\n"
                   "one-pass,10000,4,8,3.5e+01,1,3\n")
        text = docs.variance_block(self.src, self.tmp, "en")
        self.assertIn("| 2,000 | 9.5e-01 | 1.7e-07 | 3.7e-05 | 0 |", text)
        # A method without a row at that mean is shown as missing, not as 0.
        self.assertIn(f"| 10,000 | 3.5e+01 | {docs.NONE_MARK} | {docs.NONE_MARK} | 3 |", text)
        self.assertIn("](plots/variance.png)", text)
        self.assertEqual(self.src.linked, [os.path.join(self.tmp, "plots", "variance.png")])
        zh = docs.variance_block(self.src, self.tmp, "zh-CN")
        self.assertIn("| 2,000 | 9.5e-01 | 1.7e-07 | 3.7e-05 | 0 |", zh)
        self.assertIn("数据来源：plots/variance.csv。", zh)

    def test_bad_csv_is_one_error(self):
        for text, words in (("a,b\n1,2\n", "not tools/variance.c's CSV"),
                            (VARIANCE_HEADER + "kahan,1,1,1,1,1,0\n", "unknown method"),
                            (VARIANCE_HEADER + "welford,x,1,1,1,1,0\n", "not a number"),
                            (VARIANCE_HEADER, "no rows")):
            self.write(text)
            with self.assertRaises(docs.DocsError) as caught:
                docs.variance_block(self.src, self.tmp, "en")
            self.assertIn(words, str(caught.exception))
        self.assertEqual(subprocess.run([sys.executable, os.path.join(REPO, "tools",
                                                                     "variance_chart.py"),
                                         self.csv], capture_output=True).returncode, 2)


class RowLimitsTests(unittest.TestCase):
    """rows/README's counters at every profiled shape (rows_docs.limits_block)
    from made-up profiles: the default shape's file and a sibling's."""

    def test_each_shape_a_column_and_a_stale_file_its_command(self):
        import rows_docs
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        results = os.path.join(tmp, "h200-rows.csv")
        shutil.copy(os.path.join(REPO, "plots", "reference", "h200-rows.csv"), results)

        def profile(name, code, dram):
            with open(os.path.join(tmp, name), "w") as f:
                f.write("step,kernel,metric,value,unit,gpu,git_rev,code_hash\n")
                for step in ("rows/copy", "rows/step17_layernorm_cluster"):
                    for metric, value in (
                            ("dram__throughput.avg.pct_of_peak_sustained_elapsed", dram),
                            ("sm__warps_active.avg.pct_of_peak_sustained_active", 45.4),
                            ("launch__block_size", 256), ("launch__grid_size", 4096),
                            ("launch__registers_per_thread", 56), ("gpu__time_duration.sum", 1)):
                        f.write(f"{step},k,{metric},{value},x,NVIDIA H200,abc1234,{code}\n")
        profile("h200-rows-profile.csv", "new", 79.4)
        profile("h200-rows-profile-4096x50257.csv", "old", 63.2)

        class Old(stale.Hashes):
            def is_stale(self, label, measured):
                return measured == "old"
        rsrc = rows_docs.RowSources(REPO, results, os.path.join(tmp, "h200-rows-profile.csv"),
                                    Old(REPO))
        text = rows_docs.limits_block(rsrc, lambda t, **v: docs.tr(t, "en", **v))
        self.assertIn("| program | 32768 x 1024 | 4096 x 50257 |", text)
        self.assertIn("| rows/step17_layernorm_cluster | 79% | 63% † |", text)
        self.assertIn("| rows/copy | 45% | 45% † |", text)
        self.assertIn("| rows/copy | 256 x 4096, 56 | 256 x 4096, 56 † |", text)
        self.assertIn("`make profile-all ONLY=rows/step17_layernorm_cluster,rows/baseline_copy "
                      "SHAPE=4096x50257 OUT_DIR=plots/reference`", text)
        self.assertNotIn("make verify", text)   # the default shape's file is current
        # steps the profiles do not hold (softmax, bfloat16, ...) get no row
        self.assertNotIn("rows/step15_cluster", text)
        self.assertIn("| rows/copy | `k` | `k` † |", text)
        # each copy above its steps
        self.assertLess(text.index("| rows/copy |"), text.index("| rows/step17_layernorm_cluster |"))
        zh = rows_docs.limits_block(rsrc, lambda t, **v: docs.tr(t, "zh-CN", **v))
        self.assertIn("| 程序 | 32768 x 1024 | 4096 x 50257 |", zh)
        # the default shape's file stale: make verify profiles it; a program
        # missing from a file shows "—"
        profile("h200-rows-profile.csv", "old", 79.4)
        with open(os.path.join(tmp, "h200-rows-profile-4096x50257.csv")) as f:
            kept = [line for line in f if not line.startswith("rows/copy,")]
        with open(os.path.join(tmp, "h200-rows-profile-4096x50257.csv"), "w") as f:
            f.writelines(kept)
        rsrc = rows_docs.RowSources(REPO, results, os.path.join(tmp, "h200-rows-profile.csv"),
                                    Old(REPO))
        text = rows_docs.limits_block(rsrc, lambda t, **v: docs.tr(t, "en", **v))
        self.assertIn("| rows/copy | 79% † | — |", text)
        self.assertIn("`make verify ONLY=rows/step17_layernorm_cluster,rows/baseline_copy "
                      "OUT_DIR=plots/reference`", text)


class RowTargetsTests(unittest.TestCase):
    """Part 2's targets table (tools/rows_targets.py) on made-up rows of known
    speeds: LayerNorm's step 17 beside the copy, PyTorch eager and compiled,
    and step 13."""

    STEP, COPY = "rows/step17_layernorm_cluster", "rows/copy"
    BIG, THOUSAND, ODD, TINY = (32768, 1024), (32768, 1000), (8192, 4097), (256, 1024)
    LABEL = "LayerNorm "

    def results(self, *runs):
        """A results file of runs, each {program: {shape: (round times) or one}}."""
        with open(os.path.join(REPO, "plots", "reference", "h200-rows.csv"), newline="") as f:
            template = next(r for r in csv.DictReader(f) if r["step"] == "rows/copy")
        rows = []
        for k, times in enumerate(runs, 1):
            for step, by_shape in times.items():
                op = "layernorm" if step != self.COPY else "copy"
                for shape, us in by_shape.items():
                    us = us if isinstance(us, tuple) else (us, us, us)
                    n = shape[0] * shape[1]
                    for rnd, t in enumerate(us, 1):
                        rows.append(dict(template, step=step, op=op, rows=str(shape[0]),
                                         cols=str(shape[1]), n=str(n), median_us=str(t),
                                         gbps=str(8 * n / (t * 1e3)), round=str(rnd),
                                         run=f"2026010{k}T000001Z", git_rev=f"abc123{k}",
                                         role=""))
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "h200-rows.csv")
        with open(path, "w", newline="") as f:
            f.write(csv_text(rows))
        return compare.RowMeasurements.load(path)

    def table(self, m, lang="en"):
        """({label: [step, met, missed]}, the block's text)."""
        import rows_targets
        text = rows_targets.targets_block(
            m, "x.csv", lambda t, **v: docs.tr(t, lang, **v))
        return {row[0]: row[1:] for row in (
            [c.strip() for c in line.strip("|").split("|")] for line in text.split("\n")
            if line.startswith("| ") and not line.startswith(("| target", "| 目标")))}, text

    def known(self):
        return {
            self.COPY: {self.BIG: 100, self.THOUSAND: 100, self.ODD: 100, self.TINY: 10},
            # 95.0% at 32768 x 1024 (on the line: met), 94.6% at 32768 x 1000
            # (rounds to 95%: a miss, shown with its decimal), 88% at 8192 x 4097
            self.STEP: {self.BIG: 100 / 0.95, self.THOUSAND: 100 / 0.946, self.ODD: 100 / 0.88,
                        self.TINY: (10, 11, 12)},
            "torch/layernorm": {self.BIG: 160, self.THOUSAND: 160, self.ODD: 200,
                                self.TINY: (11, 11.5, 30)},
            "torch/compiled/layernorm": {self.BIG: 100, self.THOUSAND: 200, self.ODD: 200,
                                         self.TINY: 20},
            "rows/step13_layernorm_aligned": {self.BIG: 100 / 0.95, self.THOUSAND: 100,
                                              self.ODD: 120, self.TINY: (10, 11, 12)},
        }

    def test_each_kind_of_target_on_known_speeds(self):
        rows, text = self.table(self.results(self.known()))
        got = {label[len(self.LABEL):]: cells for label, cells in rows.items()}
        self.assertEqual(got["at 0.95x the copy's bandwidth or more, at every shape of 64 MiB or "
                             "more"],
                         [self.STEP, "32768 x 1024 (95%)",
                          "32768 x 1000 (94.6%); 8192 x 4097 (88%)"])
        # the same value reads alike in the 0.90 row, where it is met
        self.assertEqual(got["at 0.90x the copy or more at every shape of 64 MiB or more (step "
                             "17's issue)"][1], "32768 x 1024 (95%); 32768 x 1000 (94.6%)")
        self.assertEqual(got["at 0.90x the copy or more at 8192 x 4097 (step 13's issue)"][1:],
                         ["—", "8192 x 4097 (88%)"])
        self.assertEqual(got["at 1.4x PyTorch or more at 32768 x 1024"][1:],
                         ["32768 x 1024 (1.52x)", "—"])
        # every round faster: a win; rounds that overlap (256 x 1024): a tie
        self.assertEqual(got["ahead of PyTorch at every shape"][1:],
                         ["3 of 4 shapes, 1.51x to 1.76x (the most at 8192 x 4097)",
                          "ties: 256 x 1024 (1.05x)"])
        self.assertEqual(got["ahead of compiled PyTorch at every shape"][1:],
                         ["3 of 4 shapes, 1.76x to 1.89x (the most at 32768 x 1000)",
                          "losses: 32768 x 1024 (0.95x)"])
        # a loss says both times; a tie on the same time still meets it
        self.assertEqual(got["no slower than step 13 at any shape (step 17's issue)"][1:],
                         ["3 of 4 shapes: wins at 8192 x 4097 (1.06x); ties at the other 2",
                          "32768 x 1000 (0.95x: 105.7 against 100.0 us)"])
        self.assertIn("Runs: 20260101T000001Z at abc1231 (rows/step17_layernorm_cluster).", text)
        # no row sum, softmax, ... step in the file: their targets are left out
        self.assertFalse([r for r in rows if not r.startswith(self.LABEL)])
        zh, _ = self.table(self.results(self.known()), "zh-CN")
        self.assertIn([self.STEP, "32768 x 1024（95%）", "32768 x 1000（94.6%）；8192 x 4097（88%）"],
                      list(zh.values()))

    def test_a_miss_never_reads_as_its_line(self):
        # 94.99% of the copy and 1.3996x PyTorch: misses by a hair, with the
        # decimals that show it
        times = {self.COPY: {self.BIG: 100}, self.STEP: {self.BIG: 100 / 0.9499},
                 "torch/layernorm": {self.BIG: 100 / 0.9499 * 1.3996}}
        rows, _ = self.table(self.results(times))
        self.assertEqual(rows[self.LABEL + "at 0.95x the copy's bandwidth or more, at every shape "
                              "of 64 MiB or more"][1:], ["—", "32768 x 1024 (94.99%)"])
        self.assertEqual(rows[self.LABEL + "at 1.4x PyTorch or more at 32768 x 1024"][1:],
                         ["—", "32768 x 1024 (1.3996x)"])

    def test_a_shape_the_other_side_lacks_is_named(self):
        times = self.known()
        del times["torch/layernorm"][self.ODD]
        del times[self.COPY][self.ODD]
        rows, _ = self.table(self.results(times))
        self.assertEqual(rows[self.LABEL + "ahead of PyTorch at every shape"][1:],
                         ["2 of 4 shapes, 1.51x to 1.52x (the most at 32768 x 1024)",
                          "ties: 256 x 1024 (1.05x); torch/layernorm not timed at 8192 x 4097"])
        self.assertEqual(rows[self.LABEL + "at 0.90x the copy or more at 8192 x 4097 (step 13's "
                              "issue)"][1:], ["—", "rows/copy not timed at 8192 x 4097"])

    def test_every_shape_a_win_and_a_second_run(self):
        # step 13 timed again alone in a later run: step 17's own run still
        # holds the older step 13, which is the one it is set beside
        first = self.known()
        first["rows/step13_layernorm_aligned"] = {s: 200 for s in first[self.COPY]}
        later = {"rows/step13_layernorm_aligned": {s: 1 for s in first[self.COPY]}}
        rows, text = self.table(self.results(first, later))
        self.assertEqual(rows[self.LABEL + "no slower than step 13 at any shape (step 17's "
                              "issue)"][1:],
                         ["every shape: wins at 256 x 1024 (18.18x), 32768 x 1024 (1.90x), "
                          "32768 x 1000 (1.89x) and 8192 x 4097 (1.76x)", "—"])
        self.assertIn("Runs: 20260101T000001Z at abc1231 (rows/step17_layernorm_cluster).", text)

    def test_a_program_missing_from_the_steps_run_is_said(self):
        m = self.results({self.COPY: {self.BIG: 100}, self.STEP: {self.BIG: 100}})
        rows, _ = self.table(m)
        self.assertEqual(rows[self.LABEL + "no slower than step 13 at any shape (step 17's "
                              "issue)"],
                         [self.STEP, "—", "rows/step13_layernorm_aligned was not timed in "
                                          "rows/step17_layernorm_cluster's run"])
        self.assertEqual(rows[self.LABEL + "at 0.90x the copy or more at 8192 x 4097 (step 13's "
                              "issue)"],
                         [self.STEP, "—", "rows/step17_layernorm_cluster's run has none of "
                                          "these shapes"])


class LearningPathTests(unittest.TestCase):
    """rows/README's learning path names, for every step, the step its diff
    starts from (make diff and the step's README diff block): the one
    answer tools/steps.py gives, in both languages."""

    def test_each_step_names_its_diff_base(self):
        import steps
        for page, word in (("rows/README.md", "step {}"), ("rows/README.zh-CN.md", "第 {} 步")):
            with open(os.path.join(REPO, page), encoding="utf-8") as handle:
                text = handle.read()
            found = {}
            for line in text.splitlines():
                m = re.match(r"^\| (\d+) \| .* \| ([^|]+) \| \[(step\d+_[a-z0-9_]+)\]", line)
                if m:
                    found[m.group(3)] = m.group(2).strip()
            # The shipped steps: a student's own (make new) is not on the
            # path, and must not fail make test (the homework flow).
            folders = [os.path.basename(d) for d in steps.step_dirs(REPO, "rows/", source=True)
                       if d in schema.SHIPPED_ROWS]
            self.assertEqual(sorted(found), sorted(folders), page)
            for folder, cell in found.items():
                base = steps.diff_base(REPO, "rows/" + folder, source=True)
                want = "—" if base is None else word.format(schema.step_number(base))
                self.assertEqual(cell, want, (page, folder))


class RowOpsTests(unittest.TestCase):
    """Part 2's blocks group the steps by operation: softmax, the newest, gets
    its table and its chart only once a softmax step is measured (the
    committed reference may predate it, as a student's step predates its rows)."""

    REFERENCE = os.path.join(REPO, "plots", "reference", "h200-rows.csv")

    def rsrc(self, extra_steps=(), bf16=False):
        """The committed part 2 results without their softmax and bfloat16 steps
        (if any; all of them with bf16), plus made-up rows (copies of step 7's)
        for extra_steps, as softmax steps."""
        import csv
        import rows_docs
        with open(self.REFERENCE, newline="") as f:
            rows = [r for r in csv.DictReader(f)
                    if bf16 or not ((r["op"] == "softmax" and r["step"].startswith("rows/step"))
                                    or r["op"].endswith("_bf16"))]
        rows += [dict(r, step=step, op="softmax") for step in extra_steps for r in rows
                 if r["step"] == "rows/step7_wide"]
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "h200-rows.csv")
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return rows_docs.RowSources(REPO, path, None), rows_docs

    def block(self, rsrc, rows_docs, lang):
        tr = (lambda text, **values: docs.tr(text, lang, **values))
        return rows_docs.results_block(rsrc, lambda text: docs.zh_strings.summary(text, lang), tr)

    def test_no_softmax_table_or_chart_before_a_softmax_step(self):
        rsrc, rows_docs = self.rsrc()
        self.assertIsNone(rows_docs.softmax_chart(rsrc))
        text = self.block(rsrc, rows_docs, "en")
        self.assertIn(f"LayerNorm, {rsrc.m.last_step('layernorm')}, at every shape", text)
        self.assertNotIn("Softmax,", text)
        self.assertNotIn("-softmax.png", text)

    def test_softmax_table_and_chart_once_measured(self):
        rsrc, rows_docs = self.rsrc(("rows/step8_softmax", "rows/step9_online"))
        for lang, title in (("en", "Softmax, rows/step9_online, at every shape"),
                            ("zh-CN", "softmax：rows/step9_online 在各个形状上的结果")):
            text = self.block(rsrc, rows_docs, lang)
            self.assertIn(title, text)
            self.assertTrue(text.endswith("/h200-rows-softmax.png)"), text[-200:])
            # Its last step, against the copy and PyTorch's softmax, at every shape it ran
            # (step 7's twelve: the file's softmax-only shapes have no made-up rows).
            table = text.split(title)[1]
            measured = [s for s in rsrc.m.shapes if rsrc.m.get("rows/step9_online", s)]
            self.assertEqual(len(measured), 12)
            self.assertEqual(len(table_rows(table)), len(measured))
        self.assertTrue(rows_docs.softmax_chart(rsrc).endswith("h200-rows-softmax.png"))
        # Step 8 follows a LayerNorm: its step before is step 7, of another op.
        self.assertEqual(rsrc.m.previous("rows/step8_softmax"), "rows/step7_wide")

    def test_a_step_page_says_where_its_figures_come_from(self):
        # GPU, driver, CUDA, build, revision, code hash and run beside the table
        rsrc, rows_docs = self.rsrc()
        for lang, start in (("en", "Measured on NVIDIA H200 (driver "), ("zh-CN", "测量于 NVIDIA H200（驱动 ")):
            tr = (lambda text, _lang=lang, **values: docs.tr(text, _lang, **values))
            text = rows_docs.measured_block(rsrc, "rows/step7_wide", tr)
            line = text.split("\n\n")[1]
            self.assertTrue(line.startswith(start), line)
            row = rsrc.m.get("rows/step7_wide", (32768, 1024))
            for value in (row.git_rev, row.code_hash, row.run, row.cuda, row.driver):
                self.assertIn(value, line)
            # and how many rounds the cells are the median of (the file's rounds of step 7)
            rounds = rsrc.m.rounds[("rows/step7_wide", (32768, 1024))]
            self.assertIn({"en": f", {rounds} rounds.", "zh-CN": f"，共 {rounds} 轮。"}[lang], line)

    def test_an_unmeasured_step_names_the_command_that_measures_it(self):
        # A step with no rows in the results file (a new one, or one measured
        # on another card only): its page says so and how to measure it.
        rsrc, rows_docs = self.rsrc()
        for lang in ("en", "zh-CN"):
            tr = (lambda text, _lang=lang, **values: docs.tr(text, _lang, **values))
            text = rows_docs.measured_block(rsrc, "rows/step99_mine", tr)
            self.assertIn("`make verify ONLY=rows/step99_mine`", text)
            self.assertIn({"en": "Not measured yet", "zh-CN": "尚未测量"}[lang], text)

    def test_the_map_is_shown_once_drawn(self):
        rsrc, rows_docs = self.rsrc()
        self.assertIsNone(rows_docs.widths_chart(rsrc))
        self.assertNotIn("bench-widths", self.block(rsrc, rows_docs, "en"))
        chart = os.path.join(os.path.dirname(rsrc.m.path), "h200-rows-widths-gbps.png")
        open(chart, "wb").close()
        self.assertEqual(rows_docs.widths_chart(rsrc), chart)
        for lang, words in (("en", "Part 2's map"), ("zh-CN", "第 2 部分的全景图")):
            text = self.block(rsrc, rows_docs, lang)
            self.assertIn(words, text)
            self.assertIn("h200-rows-widths.csv", text)
            self.assertIn("`make bench-widths`", text)
            self.assertTrue(text.rstrip().endswith("/h200-rows-widths-gbps.png)"), text[-200:])

    def test_the_maps_numbers_come_from_its_file(self):
        # Made-up map rows of known speeds, in one run of three rounds: the
        # shares and the verdicts the tables under the chart must give.
        rsrc, rows_docs = self.rsrc()
        folder = os.path.dirname(rsrc.m.path)
        with open(os.path.join(REPO, "plots", "reference", "h200-rows-widths.csv"),
                  newline="") as f:
            template = next(r for r in csv.DictReader(f) if r["step"] == "rows/copy")
        rows = []

        def add(step, op, times, gbps, widths=(1024, 50257)):
            for cols in widths:
                for rnd, us in enumerate(times, 1):
                    shape = (dict(rows="", cols="", n=str(1 << 26)) if cols is None else
                             dict(rows=str((1 << 26) // cols), cols=str(cols),
                                  n=str((1 << 26) // cols * cols)))
                    rows.append(dict(template, step=step, op=op, median_us=str(us),
                                     gbps=str(gbps(cols)), round=str(rnd),
                                     run="20260101T000001Z", role="", **shape))
        add("rows/copy", "copy", (10, 10, 10), lambda c: 4000)
        add("rows/step15_cluster", "softmax", (10, 11, 12), lambda c: 3000 if c == 1024 else 2000)
        add("torch/softmax", "softmax", (20, 21, 22), lambda c: 1)
        add("torch/compiled/softmax", "softmax", (10.5, 11, 11.5), lambda c: 1)
        add("rows/step4_group", "sum", (10, 10, 10), lambda c: 4400)
        # the row sum's bar: step 9 on 2^26 floats, which 50257 columns do not divide
        add("step9_singlepass", "", (10, 10, 10), lambda c: 4000, widths=(None,))
        with open(os.path.join(folder, "h200-rows-widths.csv"), "w", newline="") as f:
            f.write(csv_text(rows))
        open(os.path.join(folder, "h200-rows-widths-gbps.png"), "wb").close()
        text = self.block(rsrc, rows_docs, "en")
        for line in ("| op | last step | 1k | 50257 |",
                     "| the copy, GB/s | rows/copy | 4000 | 4000 |",
                     "| row sum | rows/step4_group | 110% | 110% |",
                     "| softmax | rows/step15_cluster | 75% | 50% |",
                     "| softmax | rows/step15_cluster | 1.91x win | 1.91x win |",
                     "| softmax | rows/step15_cluster | 1.00x tie | 1.00x tie |"):
            self.assertIn(line + "\n", text + "\n")
        self.assertIn("(4000 GB/s)", text)
        # the counts under each verdict table: PyTorch has no row sum on this map
        for counts in ("wins 2, ties 0, losses 0; from 50257 to 151936 columns, the "
                       "vocabularies' widths: wins 1, ties 0, losses 0.",
                       "wins 0, ties 2, losses 0; from 50257 to 151936 columns, the "
                       "vocabularies' widths: wins 0, ties 1, losses 0."):
            self.assertIn("The last steps over the table's 2 points: " + counts, text)
        self.assertNotIn("| LayerNorm |", text)   # no step of it on this map
        self.assertNotIn("bfloat16 copy, GB/s", text)
        zh = self.block(rsrc, rows_docs, "zh-CN")
        self.assertIn("| 按行求和 | rows/step4_group | 110% | 110% |", zh)
        self.assertIn("| softmax | rows/step15_cluster | 1.91x（领先） | 1.91x（领先） |", zh)

    def test_an_ops_first_step_is_beside_the_nearest_of_its_element_type(self):
        # RMSNorm's first step (19) follows step 17, the float LayerNorm it
        # builds on, not step 18 (bfloat16), in its counters and its ratios;
        # its bfloat16 twin (20) is beside step 19, the step it converts.
        import rows_docs
        profile = os.path.join(REPO, "plots", "reference", "h200-rows-profile.csv")
        rsrc = rows_docs.RowSources(REPO, self.REFERENCE, profile)
        tr = (lambda text, **values: docs.tr(text, "en", **values))
        for step, prev in (("rows/step19_rmsnorm", "rows/step17_layernorm_cluster"),
                           ("rows/step20_bf16_rmsnorm", "rows/step19_rmsnorm"),
                           ("rows/step12_bf16_layernorm", "rows/step7_wide")):
            text = rows_docs.counters_block(rsrc, step, tr, docs.counter_row, docs.fmt_count)
            self.assertIn(f"| counter | previous ({prev}", text, step)
        rows, path = [], os.path.join(tempfile.mkdtemp(), "h200-rows.csv")
        self.addCleanup(shutil.rmtree, os.path.dirname(path))
        import csv
        with open(self.REFERENCE, newline="") as f:
            rows = list(csv.DictReader(f))
        rows += [dict(r, step="rows/step19_rmsnorm", op="rmsnorm") for r in rows
                 if r["step"] == "rows/step17_layernorm_cluster"]
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        m = rows_docs.RowSources(REPO, path, None).m
        self.assertEqual(m.previous("rows/step19_rmsnorm"), "rows/step17_layernorm_cluster")

    def test_bf16_tables_against_the_bf16_copy(self):
        """bfloat16 steps get their own tables and chart, with the bfloat16 copy
        as their bar, and none of it while no bfloat16 step is measured."""
        import steps
        rsrc, rows_docs = self.rsrc()
        self.assertIsNone(rows_docs.bf16_chart(rsrc))
        self.assertNotIn("bfloat16", self.block(rsrc, rows_docs, "en"))
        rsrc, rows_docs = self.rsrc(bf16=True)
        m = rsrc.m
        if not m.last_step("softmax_bf16"):
            self.skipTest("the committed results have no bfloat16 step")
        text = self.block(rsrc, rows_docs, "en")
        self.assertTrue(text.endswith("/h200-rows-bf16.png)"), text[-200:])
        for op in ("softmax_bf16", "layernorm_bf16"):
            step = m.last_step(op)
            self.assertEqual(m.ceiling(step), "rows/copy16")
            shape = rows_docs.ROW_SEED_SHAPE
            # Both from the step's own run: a ratio never mixes runs.
            view = m.within(step)
            self.assertAlmostEqual(rows_docs.share(m, step, shape),
                                   view.get(step, shape).gbps / view.get("rows/copy16", shape).gbps)
            title = ("Softmax" if op.startswith("softmax") else "LayerNorm") + \
                f" in bfloat16, {step}, at every shape"
            table = table_rows(text.split(title)[1].split("\n\n![")[0].split("bfloat16, rows/")[0])
            # One line per shape the step was measured at (softmax runs two
            # shapes more than LayerNorm: 4096 x 151936 and 1 x 262144).
            measured = {shape for s, shape in m.rows if s == step and isinstance(shape, tuple)}
            self.assertEqual(len(table), len(measured))
            # MiB of 2-byte elements: 32768 x 1024 is 64 MiB.
            self.assertIn("| 32768 x 1024 | 64 |", text.split(title)[1])
            # The last bfloat16 step converts the last float step of its op,
            # or builds on bfloat16 steps that lead back to one that does
            # (step 24 on 23 on 16, a twin of 15; step 25 on 18, a twin of 17).
            first = step
            while steps.float_twin(steps.REPO, first) is None:
                first = m.previous(first)
            self.assertEqual(steps.float_twin(steps.REPO, first), m.last_step(op[:-len("_bf16")]))
        # The first bfloat16 LayerNorm converts step 7; a later one (step 14)
        # converts step 13, and is compared with step 12 as its step before.
        self.assertEqual(steps.float_twin(steps.REPO, "rows/step12_bf16_layernorm"), "rows/step7_wide")
        if "rows/step14_bf16_layernorm_aligned" in m.steps:
            self.assertEqual(steps.float_twin(steps.REPO, "rows/step14_bf16_layernorm_aligned"),
                             "rows/step13_layernorm_aligned")
            self.assertEqual(m.previous("rows/step14_bf16_layernorm_aligned"),
                             "rows/step12_bf16_layernorm")


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("docs", verbosity=1))
