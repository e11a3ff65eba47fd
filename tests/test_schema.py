#!/usr/bin/env python3
"""Tests for tools/schema.py: columns, step names, and the loaders' rules.

Run: python3 tests/test_schema.py. The last line printed is
`schema: N passed, N failed`.
"""
import csv
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
import schema  # noqa: E402

# The header the harness writes (common.md, decision 2), spelled out once more
# here so that a change to the schema module or to the harness is a visible,
# deliberate change. bench.py adds `round` when it merges its rounds.
HARNESS_HEADER = ("step,n,reps,warmup,median_us,min_us,max_us,gbps,pct_peak,result,reference,"
                  "abs_err,tol,pass,gpu,cc,driver,cuda,peak_gbps,l2_mb,sms,flush,offset,fill,"
                  "seed,git_rev,mode,distinct,code_hash,sum_abs,cpu_seq,cpu_kahan,rows,cols,"
                  "op,bytes,arch,toolchain")
BENCH_COLUMNS = ("round", "run", "role")
FIXTURE = os.path.join(REPO, "tests", "plots", "fixture.csv")


def fixture_rows():
    with open(FIXTURE, newline="") as handle:
        return list(csv.DictReader(handle))


class Files(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="schema-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def write(self, rows, columns=schema.RESULT_COLUMNS, name="r.csv"):
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        path = os.path.join(self.tmp, name)
        with open(path, "w") as handle:
            handle.write(out.getvalue())
        return path


def csv_header_macro():
    """CSV_HEADER as common/harness.h defines it: its string literals, joined."""
    with open(os.path.join(REPO, "common", "harness.h")) as handle:
        text = handle.read()
    definition = re.search(r"#define CSV_HEADER\s*\\\n((?:.*\\\n)*.*\n)", text).group(1)
    return "".join(re.findall(r'"([^"]*)"', definition))


class ColumnTests(unittest.TestCase):
    def test_result_columns_are_the_harness_header_and_the_bench_columns(self):
        self.assertEqual(",".join(schema.RESULT_COLUMNS),
                         HARNESS_HEADER + "".join("," + c for c in BENCH_COLUMNS))

    def test_harness_header_is_common_harness_h(self):
        self.assertEqual(csv_header_macro(), HARNESS_HEADER)

    def test_new_columns_are_the_last_ones(self):
        # Files from before them still load (read_results), and each is optional.
        new = schema.NEW_RESULT_COLUMNS
        self.assertEqual(schema.RESULT_COLUMNS[-len(new):], new)
        kinds = {name: kind for name, kind, _ in schema.RESULT_SCHEMA}
        self.assertEqual([name for name in new if not kinds[name].endswith("?")], [])
        self.assertEqual([kinds[c] for c in ("rows", "cols", "op", "bytes", "arch", "toolchain",
                                              "round")],
                         ["int?", "int?", "str?", "float?", "str?", "str?", "int?"])

    def test_profile_columns_end_with_code_hash(self):
        self.assertEqual(",".join(schema.PROFILE_COLUMNS),
                         "step,kernel,metric,value,unit,gpu,git_rev,code_hash")

    def test_every_column_has_a_meaning(self):
        for name, kind, meaning in schema.RESULT_SCHEMA + schema.PROFILE_SCHEMA:
            self.assertIn(kind.rstrip("?"), ("str", "int", "float"), name)
            self.assertTrue(meaning, name)


class StepNameTests(unittest.TestCase):
    def test_numbers_and_order(self):
        names = ["cub", "step10_more", "step9_singlepass", "step0_naive", "step2_x"]
        self.assertEqual(sorted(names, key=schema.step_sort_key),
                         ["step0_naive", "step2_x", "step9_singlepass", "step10_more", "cub"])
        self.assertEqual(schema.step_number("step10_more"), 10)
        self.assertIsNone(schema.step_number("cub"))
        self.assertIsNone(schema.step_number("stepx_bad"))
        self.assertTrue(schema.is_program("cub") and schema.is_program("step10_more"))
        self.assertFalse(schema.is_program("baseline_cub") or schema.is_program("total"))

    def test_cub_directory_and_label(self):
        self.assertEqual(schema.step_label("baseline_cub"), "cub")
        self.assertEqual(schema.step_label("/x/step3_idle/"), "step3_idle")
        self.assertEqual(schema.program_dir("cub"), "baseline_cub")
        self.assertEqual(schema.program_dir("step3_idle"), "step3_idle")

    def test_shipped(self):
        self.assertEqual(schema.SHIPPED[-2:], ("step9_singlepass", "cub"))
        self.assertEqual([schema.step_number(s) for s in schema.SHIPPED[:-1]], list(range(10)))

    def test_step_dirs_of_this_repository(self):
        found = schema.step_dirs(REPO)
        self.assertEqual(found[:9], list(schema.SHIPPED[:9]))
        self.assertNotIn("baseline_cub", found)


class LoaderTests(Files):
    def test_failed_and_check_rows_left_out_with_a_note(self):
        rows = fixture_rows()
        rows[0] = dict(rows[0], **{"pass": "0"})
        rows[1] = dict(rows[1], mode="check", median_us="", min_us="", max_us="", gbps="",
                       pct_peak="")
        path = self.write(rows)
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import schema; "
             "print(len(schema.load_results(sys.argv[2])), "
             "len(schema.load_results(sys.argv[2], need_speed=False, quiet=True)))",
             os.path.join(REPO, "tools"), path], capture_output=True, text=True)
        self.assertEqual(proc.stdout.split(), [str(len(rows) - 2), str(len(rows) - 1)])
        self.assertEqual(proc.stderr.strip(), f"-c: r.csv: left out 2 of {len(rows)} rows: "
                         "1 failed (pass != 1), 1 without timing (check mode)")

    def test_check_row_types(self):
        row = dict(fixture_rows()[0], mode="check", reps="1", median_us="", gbps="",
                   distinct="", cpu_seq="512", cpu_kahan="512")
        [typed] = schema.read_results(self.write([row]))
        self.assertIsNone(typed.median_us)
        self.assertFalse(typed.timed)
        self.assertTrue(typed.passed)
        self.assertEqual((typed.cpu_seq, typed.distinct, typed.n), (512.0, None, 1024))

    def test_old_file_reads_new_columns_as_empty(self):
        old = [c for c in schema.RESULT_COLUMNS if c not in schema.NEW_RESULT_COLUMNS]
        [typed] = schema.read_results(self.write(fixture_rows()[:1], columns=old))
        self.assertEqual((typed.mode, typed.code_hash, typed.distinct), ("", "", None))
        self.assertTrue(typed.timed)  # old rows are timed runs
        self.assertNotIn("code_hash", schema.header_of(os.path.join(self.tmp, "r.csv")))

    def test_part_2_row_types(self):
        row = dict(fixture_rows()[0], step="rows/step5_layernorm", n="33554432", rows="32768",
                   cols="1024", op="layernorm", bytes="268697600", arch="sm_75 sm_80 sm_90",
                   toolchain="nvcc 13.0.88 CCCL 3.0.1", round="2")
        [typed] = schema.read_results(self.write([row]))
        self.assertEqual((typed.rows, typed.cols, typed.op, typed.bytes, typed.round),
                         (32768, 1024, "layernorm", 268697600.0, 2))
        self.assertEqual((typed.arch, typed.toolchain), ("sm_75 sm_80 sm_90",
                                                         "nvcc 13.0.88 CCCL 3.0.1"))
        # A program of part 2: its step number is read past the rows/ prefix.
        self.assertTrue(schema.is_program(typed.step))
        self.assertEqual(schema.step_number(typed.step), 5)
        self.assertFalse(schema.is_program("rows/notes"))

    def test_part_1_row_leaves_the_row_columns_empty(self):
        row = dict(fixture_rows()[0], rows="", cols="", op="", bytes="4096", arch="sm_90",
                   toolchain="nvcc 13.0.88 CCCL 3.0.1", round="")
        [typed] = schema.read_results(self.write([row]))
        self.assertEqual((typed.rows, typed.cols, typed.op, typed.bytes, typed.round),
                         (None, None, "", 4096.0, None))
        self.assertTrue(typed.timed and typed.passed)

    def test_new_columns_typed_like_the_others(self):
        for column, text in (("rows", "many"), ("cols", "1.5"), ("bytes", "lots"),
                             ("round", "first")):
            row = dict(fixture_rows()[0], **{column: text})
            with self.assertRaises(schema.SchemaError) as caught:
                schema.read_results(self.write([row]))
            self.assertIn(f"column '{column}'", str(caught.exception))

    def test_nan_result_still_loads(self):
        row = dict(fixture_rows()[0], result="nan", abs_err="nan", **{"pass": "0"})
        [typed] = schema.read_results(self.write([row]))
        self.assertFalse(typed.passed)

    def test_bad_values_are_one_line_errors(self):
        for column, text in (("n", "32M"), ("pass", ""), ("gbps", "fast")):
            row = dict(fixture_rows()[0], **{column: text})
            with self.assertRaises(schema.SchemaError) as caught:
                schema.read_results(self.write([row]))
            self.assertIn(f"column '{column}'", str(caught.exception))
            self.assertIn("line 2", str(caught.exception))

    def test_profile_na_is_none(self):
        path = os.path.join(self.tmp, "p.csv")
        with open(path, "w") as handle:
            handle.write("step,kernel,metric,value,unit,gpu,git_rev\n"
                         "step0_naive,k,gpu__time_duration.sum,n/a,ns,G,r\n")
        [row] = schema.load_profile(path)
        self.assertIsNone(row.value)
        self.assertEqual(row.code_hash, "")  # an old profile file


class CommandLineTests(Files):
    """`schema.py slug`: how the shell scripts (determinism.sh, gpu_check.sh,
    nccl_check.sh) name a results file by its GPU, without sys.path lines."""

    def slug(self, *args, stdin=""):
        return subprocess.run([sys.executable, os.path.join(REPO, "tools", "schema.py"), "slug",
                               *args], input=stdin, capture_output=True, text=True)

    def test_a_name_its_stdin_and_a_files_first_row(self):
        self.assertEqual(self.slug("NVIDIA H200").stdout, "h200\n")
        self.assertEqual(self.slug("-", stdin="NVIDIA GeForce RTX 4090\n").stdout,
                         "geforce-rtx-4090\n")
        path = os.path.join(self.tmp, "r.csv")
        with open(path, "w") as handle:
            handle.write("step,gpu\nstep3_idle,NVIDIA H100 80GB HBM3\n")
        self.assertEqual(self.slug("--csv", path).stdout, "h100-80gb-hbm3\n")

    def test_bad_calls_are_one_line_and_exit_2(self):
        path = os.path.join(self.tmp, "empty.csv")
        with open(path, "w") as handle:
            handle.write("step,gpu\n")
        for args in ((), ("--csv", path), ("--csv", os.path.join(self.tmp, "none.csv"))):
            with self.subTest(args):
                proc = self.slug(*args)
                self.assertEqual(proc.returncode, 2)
                self.assertEqual(proc.stdout, "")
                self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("schema", verbosity=1))
