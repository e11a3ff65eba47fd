#!/usr/bin/env python3
"""Tests of the multigpu part that need no GPU: the program's command line
(built where nccl.h is found, else the one line `make multigpu` gives), its
CSV columns against tools/schema.py, the fixture files' loading, the targets
summary, the charts, and the device script's syntax.

Run: python3 tests/test_multigpu.py (with matplotlib for the chart tests).
The last line printed is `multigpu: N passed, N failed[, N skipped]`.
"""
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import counting  # noqa: E402
import multigpu_chart  # noqa: E402
import multigpu_docs  # noqa: E402
import schema  # noqa: E402
import stale  # noqa: E402
import torch_dist  # noqa: E402

FIXTURES = os.path.join(REPO, "tests", "multigpu")
SUM_FIXTURE = os.path.join(FIXTURES, "h200x2-multigpu.csv")
VEC_FIXTURE = os.path.join(FIXTURES, "h200x2-allreduce.csv")
PROGRAM = os.path.join(REPO, "multigpu", "run")


# MULTIGPU_TEST_NO_NCCL=1 plays a machine without NCCL here (the Makefile's
# NCCL_INC emptied), so the refusal's test runs on a machine that has NCCL too.
NO_NCCL = os.environ.get("MULTIGPU_TEST_NO_NCCL") == "1"


def make(*targets, no_nccl=NO_NCCL):
    extra = ["NCCL_INC="] if no_nccl else []
    return subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO, *extra, *targets],
                          capture_output=True, text=True, timeout=600)


def nccl_header():
    """The include folder make found nccl.h in, or '' (the Makefile decides)."""
    if NO_NCCL:
        return ""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO, "-p", "-n",
                          "hash-flags"], capture_output=True, text=True, timeout=120).stdout
    match = re.search(r"^NCCL_INC := (.*)$", out, re.M)
    return match.group(1).strip() if match else ""


def header_macro(name):
    """A CSV header macro of multigpu/plan.h: its string literals, joined."""
    with open(os.path.join(REPO, "multigpu", "plan.h")) as handle:
        text = handle.read()
    definition = re.search(r"#define " + name + r"\s*\\\n((?:.*\\\n)*.*\n)", text).group(1)
    return "".join(re.findall(r'"([^"]*)"', definition))


def has_gpu():
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0


class ProgramTests(unittest.TestCase):
    """The built program where NCCL is here; the one-line refusal where not."""

    @classmethod
    def setUpClass(cls):
        cls.inc = nccl_header()
        cls.build = make("multigpu") if cls.inc else None

    def run_program(self, *args):
        return subprocess.run([PROGRAM, *args], capture_output=True, text=True, timeout=60)

    def need_program(self):
        if not self.inc:
            self.skipTest("no nccl.h: make multigpu says how to get NCCL")
        self.assertEqual(self.build.returncode, 0, self.build.stderr[-2000:])

    def test_without_nccl_make_multigpu_says_how_in_one_line(self):
        # Where nccl.h is found, the Makefile's NCCL_INC emptied plays a
        # machine without it.
        proc = make("multigpu", no_nccl=True)
        self.assertNotEqual(proc.returncode, 0)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("NCCL not found", lines[0])
        self.assertIn("NCCL_HOME", lines[0])

    def test_compiles_where_nccl_h_is(self):
        self.need_program()
        self.assertTrue(os.access(PROGRAM, os.X_OK))

    def test_help(self):
        self.need_program()
        proc = self.run_program("--help")
        self.assertEqual(proc.returncode, 0)
        for word in ("--combine", "--rank", "--id-file", "--vector", "exit status"):
            self.assertIn(word, proc.stdout)

    def test_version_names_the_code_hash_make_computes(self):
        self.need_program()
        proc = self.run_program("--version")
        wanted = make("code-hash", "DIR=multigpu").stdout.strip()
        self.assertEqual(proc.returncode, 0)
        self.assertIn(f"code_hash={wanted}", proc.stdout)

    def test_usage_errors_exit_2_in_one_line(self):
        self.need_program()
        for args in (["--n", "abc"], ["--n", "0"], ["--combine", "sum"], ["--reps", "0"],
                     ["--rank", "2", "--world", "2", "--id-file", "/tmp/x"],
                     ["--rank", "0", "--world", "2"],
                     ["--rank", "0", "--world", "2", "--id-file", "f", "--combine", "host"],
                     ["--bogus"], ["--csv", "/no/such/dir/x.csv", "--check"],
                     ["--n", "1,,2", "--check"], ["--vector", "--n", "1M", "--check"],
                     ["--vector", "--combine", "reduce", "--check"]):
            with self.subTest(args=args):
                proc = self.run_program(*args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
                self.assertTrue(proc.stderr.startswith("error: "), proc.stderr)

    def test_no_gpu_exits_3_in_one_line(self):
        self.need_program()
        if has_gpu():
            self.skipTest("a CUDA device is here: tools/nccl_check.sh runs the program")
        for args in (["--check", "--n", "10"], ["--vector", "--check"],
                     ["--rank", "1", "--world", "2", "--id-file", "/tmp/none", "--wait", "1"]):
            with self.subTest(args=args):
                proc = self.run_program(*args)
                self.assertEqual(proc.returncode, 3, proc.stderr)
                self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
                self.assertIn("no CUDA device", proc.stderr)


class ColumnTests(unittest.TestCase):
    """One list of columns: the C program's, the schema's and torch_dist.py's."""

    def test_sum_columns(self):
        columns = tuple(header_macro("MG_SUM_HEADER").split(","))
        self.assertEqual(columns, schema.MULTIGPU_SUM_COLUMNS)
        self.assertEqual(tuple(torch_dist.SUM_COLUMNS), schema.MULTIGPU_SUM_COLUMNS)

    def test_vector_columns(self):
        columns = tuple(header_macro("MG_VECTOR_HEADER").split(","))
        self.assertEqual(columns, schema.ALLREDUCE_COLUMNS)
        self.assertEqual(tuple(torch_dist.VECTOR_COLUMNS), schema.ALLREDUCE_COLUMNS)

    def test_torch_shards_are_the_programs(self):
        # torch_dist.shard() must split as plan.c's shard_of() (tested in C).
        self.assertEqual([torch_dist.shard(7, 3, r) for r in range(3)], [(0, 3), (3, 2), (5, 2)])
        self.assertEqual(torch_dist.shard(1, 2, 1), (1, 0))
        self.assertEqual([torch_dist.pattern_sum(n) for n in (3, 4, 5, 6)], [0, -1, -1, 0])

    def test_torch_dist_refuses_bad_input_before_torch(self):
        # Each rank would otherwise fail after NCCL started (or do nothing, exit 0).
        self.assertEqual(torch_dist.sizes("1M, 2G,7"), [1 << 20, 2 << 30, 7])
        for bad in ("abc", "1,,2", "0", "-4"):
            with self.assertRaises(ValueError, msg=bad):
                torch_dist.sizes(bad)
        for argv in (["--allreduce-csv", "a.csv", "--reps", "0"], [],
                     ["--sum-csv", "s.csv"], ["--sum-csv", "s.csv", "--sizes", "1,,2"],
                     ["--allreduce-csv", "a.csv", "--max-bytes", "0"]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as caught:
                torch_dist.main(argv)
            self.assertEqual(caught.exception.code, 2, argv)


class FixtureTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="multigpu-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_fixtures_load_typed(self):
        rows = schema.read_multigpu_sum(SUM_FIXTURE)
        self.assertEqual({r["source"] for r in rows}, {"nccl", "torch"})
        self.assertTrue(all(isinstance(r["n"], int) for r in rows))
        vec = schema.read_allreduce(VEC_FIXTURE)
        self.assertEqual(vec[0]["bytes"], 4)
        self.assertIn(1 << 30, {r["bytes"] for r in vec})

    def test_a_missing_column_is_one_error(self):
        path = os.path.join(self.tmp, "bad.csv")
        with open(VEC_FIXTURE) as src, open(path, "w") as out:
            lines = src.read().splitlines()
            out.write(lines[0].replace("busbw_gbps", "bus") + "\n" + lines[1] + "\n")
        with self.assertRaises(schema.SchemaError) as caught:
            schema.read_allreduce(path)
        self.assertIn("busbw_gbps", str(caught.exception))

    def test_a_non_number_is_one_error(self):
        path = os.path.join(self.tmp, "bad.csv")
        with open(SUM_FIXTURE) as src, open(path, "w") as out:
            lines = src.read().splitlines()
            out.write(lines[0] + "\n" + lines[1].replace(",single,", ",single,", 1)
                      .replace("multigpu,nccl,1048576,", "multigpu,nccl,lots,") + "\n")
        with self.assertRaises(schema.SchemaError):
            schema.read_multigpu_sum(path)

    def test_summary_of_the_fixtures(self):
        lines = multigpu_chart.summary(schema.read_multigpu_sum(SUM_FIXTURE),
                                       schema.read_allreduce(VEC_FIXTURE))
        text = "\n".join(lines)
        self.assertIn("speed-up at n = 2^30 >= 1.9x: MET (1.92x)", text)
        self.assertIn("crossover <= 2^25: MET (from n = 2^24)", text)
        # The fixture has no NCCL row of one process per GPU: the two setups, said so.
        self.assertIn("latency <= 1/3 of torch's: MET (4 B: 18.0 us against 85.0 us; two setups: "
                      "NCCL one process for all GPUs)", text)
        self.assertIn("busbw >= torch's: MET", text)

    def test_summary_without_data_says_so(self):
        lines = multigpu_chart.summary([], [])
        self.assertEqual(len(lines), 5)
        self.assertTrue(all(l.endswith("no data") for l in lines), lines)

    def test_an_empty_file_is_no_data(self):
        # multigpu/run creates its --csv before a run that may then fail.
        empty = os.path.join(self.tmp, "empty.csv")
        open(empty, "w").close()
        self.assertEqual(multigpu_chart.load(empty, schema.read_multigpu_sum), [])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(multigpu_chart.main(["--summary", "--sum", empty, "--allreduce", empty]), 0)
        self.assertEqual(out.getvalue().splitlines(), multigpu_chart.summary([], []))

    def test_an_out_dir_that_is_a_file_is_said_first(self):
        with tempfile.NamedTemporaryFile() as handle, \
                contextlib.redirect_stderr(io.StringIO()) as said:
            self.assertEqual(multigpu_chart.main(["--sum", SUM_FIXTURE, "--out-dir",
                                                  handle.name]), 2)
        self.assertIn("not a folder", said.getvalue())

    def test_crossover(self):
        c = multigpu_chart.crossover
        self.assertEqual(c({1: 0.5, 2: 1.2, 4: 0.9, 8: 1.5, 16: 1.9}), 8)
        self.assertEqual(c({1: 1.1, 2: 1.2}), 1)
        self.assertIsNone(c({1: 0.5, 2: 0.9}))
        self.assertIsNone(c({}))

    def test_failed_rows_never_count(self):
        rows = schema.read_multigpu_sum(SUM_FIXTURE)
        self.assertTrue(any(r["pass_"] == 0 for r in rows))
        self.assertTrue(all(r["pass_"] == 1 for r in multigpu_chart.timed(rows)))


def rounds_file(tmp, src, name, scale=(1.0, 1.1, 0.9), extra=None):
    """src's rows in three rounds (each round's times scaled, the speed-up
    the other way), plus extra rows (a dict of column changes: a copy of each
    nccl row so changed), as tools/nccl_check.sh writes them: round last."""
    import csv as csv_module
    with open(src, newline="") as f:
        rows = list(csv_module.DictReader(f))
    out = []
    for k, factor in enumerate(scale, 1):
        for r in rows + [dict(r, **extra) for r in rows if extra and r["source"] == "nccl"]:
            r = dict(r, round=str(k))
            for col in ("median_us", "min_us", "max_us"):
                if r[col]:
                    r[col] = f"{float(r[col]) * factor:.3f}"
            if r.get("speedup"):
                r["speedup"] = f"{float(r['speedup']) / factor:.4f}"
            out.append(r)
    path = os.path.join(tmp, name)
    with open(path, "w", newline="") as f:
        w = csv_module.DictWriter(f, fieldnames=list(out[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    return path


class RoundTests(unittest.TestCase):
    """A file in rounds: each point its median round, the spread beside it,
    and the setups compared like for like."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="multigpu-rounds-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_the_median_round_and_its_spread(self):
        sums = schema.read_multigpu_sum(rounds_file(self.tmp, SUM_FIXTURE, "s.csv"))
        self.assertEqual({r["round"] for r in sums}, {1, 2, 3})
        one = multigpu_chart.scaling(schema.read_multigpu_sum(SUM_FIXTURE), "nccl")
        three = multigpu_chart.scaling(sums, "nccl")
        self.assertEqual(sorted(three), sorted(one))
        self.assertAlmostEqual(three[1 << 30], one[1 << 30], places=3)   # the 1.0 round
        text = "\n".join(multigpu_chart.summary(sums, schema.read_allreduce(VEC_FIXTURE)))
        # 1.92 / 1.1 and 1.92 / 0.9: the slowest and fastest rounds' speed-ups.
        self.assertIn("speed-up at n = 2^30 >= 1.9x: MET (1.92x [1.75-2.14])", text)

    def test_like_for_like_when_the_file_has_it(self):
        vec = schema.read_allreduce(rounds_file(self.tmp, VEC_FIXTURE, "v.csv",
                                                extra={"launch": "per-process"}))
        mine = multigpu_chart.by_bytes(vec, "nccl", "per-process")
        self.assertEqual(mine[4]["times"], [18.0, 19.8, 16.2])
        self.assertEqual((mine[4]["median_us"], mine[4]["spread"]), (18.0, (16.2, 19.8)))
        text = "\n".join(multigpu_chart.summary([], vec))
        self.assertIn("MET (4 B: 18.0 us [16.2-19.8] against 85.0 us [76.5-93.5]; "
                      "one process per GPU each)", text)
        busbw = next(line for line in text.splitlines() if "1 GiB busbw" in line)
        self.assertTrue(busbw.endswith("; one process per GPU each)"), busbw)
        # Without per-process rows, the line says it compares two setups.
        single = schema.read_allreduce(rounds_file(self.tmp, VEC_FIXTURE, "v1.csv"))
        busbw = next(line for line in multigpu_chart.summary([], single) if "1 GiB busbw" in line)
        self.assertTrue(busbw.endswith("; two setups: NCCL one process for all GPUs)"), busbw)

    def test_one_rank_a_process_against_the_single_process_one_gpu(self):
        # A run with --rank has no one-GPU baseline: its speed-up is the
        # single-process run's one_gpu_us of the same n and round over its time.
        sums = schema.read_multigpu_sum(rounds_file(
            self.tmp, SUM_FIXTURE, "s.csv", extra={"launch": "per-process", "speedup": "",
                                                   "one_gpu_us": ""}))
        single = {(r["n"], r["round"]): r for r in sums if r["source"] == "nccl" and
                  r["launch"] == "single" and r["combine"] == "allreduce" and r["pass_"] == 1}
        per = multigpu_chart.scaling_rounds(sums, "nccl", "per-process")
        n = 1 << 30
        self.assertEqual(len(per[n]), 3)
        r = single[(n, 2)]
        self.assertIn(r["one_gpu_us"] / r["median_us"], per[n])

    def test_a_bad_round_is_one_error(self):
        path = rounds_file(self.tmp, VEC_FIXTURE, "v.csv")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace(",2\n", ",two\n", 1))
        with self.assertRaises(schema.SchemaError) as caught:
            schema.read_allreduce(path)
        self.assertIn("round is 'two'", str(caught.exception))

    def test_the_script_adds_the_round_column(self):
        # nccl_check.sh's add_round, run alone: the header once, then each
        # round's rows with the round last; the round's file is removed.
        with open(os.path.join(REPO, "tools", "nccl_check.sh")) as f:
            script = f.read()
        start = script.index("add_round() {")
        body = script[start:script.index("\n}\n", start) + 3]
        dest = os.path.join(self.tmp, "all.csv")
        for k in (1, 2):
            src = os.path.join(self.tmp, f"r{k}.csv")
            with open(src, "w") as f:
                f.write(f"step,median_us\nmultigpu,{k}0.5\n")
            proc = subprocess.run(["bash", "-c", body + f'\nadd_round "{src}" "{dest}" {k}'],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertFalse(os.path.exists(src))
        with open(dest) as f:
            self.assertEqual(f.read(), "step,median_us,round\nmultigpu,10.5,1\nmultigpu,20.5,2\n")


class ChartTests(unittest.TestCase):
    def setUp(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib: make test installs it")
        self.tmp = tempfile.mkdtemp(prefix="multigpu-chart-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def assert_png(self, path):
        with open(path, "rb") as handle:
            self.assertEqual(handle.read(8), b"\x89PNG\r\n\x1a\n")

    def test_both_charts_from_the_fixtures(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(multigpu_chart.main(["--sum", SUM_FIXTURE, "--allreduce", VEC_FIXTURE,
                                                  "--out-dir", self.tmp]), 0)
        self.assertIn(f"wrote {os.path.join(self.tmp, 'h200x2-scaling.png')}", out.getvalue())
        self.assert_png(os.path.join(self.tmp, "h200x2-scaling.png"))
        self.assert_png(os.path.join(self.tmp, "h200x2-allreduce.png"))

    def test_both_charts_from_a_file_in_rounds(self):
        tmp = tempfile.mkdtemp(prefix="multigpu-rounds-", dir=self.tmp)
        sums = rounds_file(tmp, SUM_FIXTURE, "h200x2-multigpu.csv", extra={"launch": "per-process"})
        vec = rounds_file(tmp, VEC_FIXTURE, "h200x2-allreduce.csv", extra={"launch": "per-process"})
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(multigpu_chart.main(["--sum", sums, "--allreduce", vec,
                                                  "--out-dir", self.tmp]), 0)
        self.assert_png(os.path.join(self.tmp, "h200x2-scaling.png"))
        self.assert_png(os.path.join(self.tmp, "h200x2-allreduce.png"))

    def test_a_line_breaks_where_its_setup_missed_a_size(self):
        # The per-process rows lack n = 2^28: its line must not join 2^26 to 2^30.
        tmp = tempfile.mkdtemp(prefix="multigpu-gap-", dir=self.tmp)
        sums = rounds_file(tmp, SUM_FIXTURE, "h200x2-multigpu.csv", extra={"launch": "per-process"})
        with open(sums) as f:
            lines = f.read().splitlines(keepends=True)
        with open(sums, "w") as f:
            f.writelines(line for line in lines if not (",per-process," in line and f",{1 << 28}," in line))
        figures = []
        saved = multigpu_chart.save
        multigpu_chart.save = lambda plt, fig, path: figures.append(fig)
        self.addCleanup(setattr, multigpu_chart, "save", saved)
        multigpu_chart.draw_scaling(multigpu_chart.timed(schema.read_multigpu_sum(sums)), "x.png")
        ax = figures[0].axes[0]
        line = next(c.lines[0] for c in ax.containers if c.get_label() == multigpu_chart.SUM_SETUPS[1][2])
        xs, ys = list(line.get_xdata()), list(line.get_ydata())
        self.assertIn(1 << 28, xs)
        self.assertNotEqual(ys[xs.index(1 << 28)], ys[xs.index(1 << 28)])   # nan: the line breaks
        self.assertEqual(ys[xs.index(1 << 26)], ys[xs.index(1 << 26)])

    def test_a_missing_out_dir_is_made(self):
        out = os.path.join(self.tmp, "new", "charts")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(multigpu_chart.main(["--sum", SUM_FIXTURE, "--out-dir", out]), 0)
        self.assert_png(os.path.join(out, "h200x2-scaling.png"))

    def test_missing_files_draw_nothing(self):
        self.assertEqual(multigpu_chart.main(["--sum", os.path.join(self.tmp, "no.csv"),
                                              "--allreduce", os.path.join(self.tmp, "no2.csv"),
                                              "--out-dir", self.tmp]), 0)
        self.assertEqual(os.listdir(self.tmp), [])


class DeviceScriptTests(unittest.TestCase):
    def test_syntax(self):
        proc = subprocess.run(["bash", "-n", os.path.join(REPO, "tools", "nccl_check.sh")],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_every_command_has_a_timeout(self):
        # The script runs once on a borrowed machine: nothing may hang it.
        with open(os.path.join(REPO, "tools", "nccl_check.sh")) as handle:
            text = handle.read()
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith(('step ', 'in_budget ')) and ' step ' in f" {stripped} ":
                self.assertRegex(stripped, r'step "?[\w$-]+"? \d+ (\d+|"\$\(left \d+\)") ', stripped)
        self.assertIn('timeout "$limit"', text)
        self.assertIn('timeout "$(left 120)" "$RUN" --rank 1', text)   # held to the budget


class MeasuredTableTests(unittest.TestCase):
    """multigpu/README's Measured table (tools/multigpu_docs.py): each cell
    the median round, its spread where there are rounds, the file's figures."""

    REF = os.path.join(REPO, "plots", "reference")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="multigpu-measured-")
        self.addCleanup(shutil.rmtree, self.tmp)

    @staticmethod
    def tr(text, **values):
        return text.format(**values) if values else text

    def block(self, folder, hashes=None):
        return multigpu_docs.measured_block(folder, hashes, self.tr, os.path.basename)

    @staticmethod
    def row(text, first):
        return next(line for line in text.splitlines() if line.startswith("| " + first))

    def test_the_committed_run(self):
        text = self.block(self.REF)
        # Each row whole, found by its label; under each speed-up, the two times it
        # divides, and no baseline where the setup did not run.
        for expected in (
                "| all-reduce of 4 bytes, median us | 26.4 | — | 85.3 |",
                "| all-reduce of 1 GiB, busbw GB/s | 325.7 | — | 318.3 |",
                "| speed-up of 2 GPUs at n = 2^30 | 1.95x | 1.96x | 1.71x |",
                "| speed-up of 2 GPUs at n = 2^31-1 | 1.96x | — | 1.82x |",
                "| sum of n = 2^30 on 2 GPUs, median us | 502.4 | 499.1 | 607.4 |",
                "| its one-GPU baseline at n = 2^30, median us | 977.6 | 977.6 | 1038.8 |",
                "| its one-GPU baseline at n = 2^31-1, median us | 1944.4 | — | 2024.1 |"):
            self.assertEqual(self.row(text, expected.split(" | ")[0][2:]), expected)
        lines = text.splitlines()
        at = lines.index(self.row(text, "speed-up of 2 GPUs at n = 2^30"))
        self.assertTrue(lines[at + 1].startswith("| sum of n = 2^30 on 2 GPUs"))
        self.assertEqual(self.row(text, "crossover"),
                         "| crossover (the GPUs ahead from n =) | 2^25 (1.03x) | "
                         "2^25 (1.27x; the smallest n it ran) | 2^27 (1.07x) |")
        self.assertIn("One run, no rounds", text)
        self.assertIn("NCCL 2.28.3, revision 8dab833. PyTorch: torch 2.11.0+cu130, its own "
                      "NCCL 2.28.9.", text)
        self.assertNotIn(stale.MARK, text)

    def test_stale_cells_are_marked_and_named(self):
        class Stale:
            @staticmethod
            def is_stale(step, code_hash):
                return step == "multigpu"
        text = self.block(self.REF, Stale())
        self.assertIn(f"| 26.4 {stale.MARK} | — | 85.3 |", text)
        self.assertIn("multigpu (8dab833). `make nccl-check OUT_DIR=plots/reference`", text)

    def test_rounds_give_the_median_and_the_spread(self):
        rounds_file(self.tmp, SUM_FIXTURE, "h200x2-multigpu.csv")
        rounds_file(self.tmp, VEC_FIXTURE, "h200x2-allreduce.csv",
                    extra={"launch": "per-process"})
        text = self.block(self.tmp)
        self.assertIn("| all-reduce of 4 bytes, median us | 18.0 [16.2-19.8] | "
                      "18.0 [16.2-19.8] | 85.0 [76.5-93.5] |", text)
        self.assertIn("| speed-up of 2 GPUs at n = 2^30 | 1.92x [1.75-2.14] |", text)
        self.assertIn("Each cell is the median of 3 rounds", text)
        self.assertNotIn("One run", text)

    def test_no_run_and_no_vectors(self):
        self.assertIn("Not measured yet", self.block(self.tmp))
        shutil.copy(SUM_FIXTURE, self.tmp)
        text = self.block(self.tmp)
        self.assertEqual(self.row(text, "all-reduce of 4 bytes"),
                         "| all-reduce of 4 bytes, median us | — | — | — |")
        self.assertIn("and —:", text)


if __name__ == "__main__":
    sys.exit(counting.run_module("multigpu"))
