#!/usr/bin/env python3
"""Tests for tools/steps.py: which folders are steps, the folder of step K,
the step before a step, its command line, and that the scripts which used to
work these out themselves now give its answer.

Run: python3 tests/test_steps.py. The last line printed is
`steps: N passed, N failed`.
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
import bench  # noqa: E402
import grade  # noqa: E402
import schema  # noqa: E402
import steps  # noqa: E402

STEPS_PY = os.path.join(REPO, "tools", "steps.py")
BF16 = "LAYERNORM;\nconst enum row_dtype step_dtype = ROW_BF16"


class Tree(unittest.TestCase):
    """A tree of both parts: part 1's steps 0, 1, 2 and 10 (9 missing, step 3
    only built), part 2's sums, LayerNorms and a bfloat16 LayerNorm."""

    PART1 = ("step0_a", "step1_b", "step2_c", "step10_d")
    PART2 = {"rows/step0_sum": "SUM", "rows/step1_norm": "LAYERNORM",
             "rows/step2_sum": "SUM", "rows/step3_norm_bf16": BF16,
             "rows/step4_norm_aligned": "LAYERNORM", "rows/step5_norm_aligned_bf16": BF16,
             "rows/baseline_copy": "COPY", "rows/baseline_cub": "SUM"}

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="steps-test-")
        self.addCleanup(shutil.rmtree, self.root)
        for name in self.PART1 + ("baseline_cub",):
            self.write(f"{name}/reduce.cu", f"// {name}\n")
        self.write("step3_built/run", "")          # built elsewhere: a step, but no source
        os.makedirs(os.path.join(self.root, "step4_notes"))   # no program: no step
        self.write("step5_x/README.md", "")
        for name, op in self.PART2.items():
            self.write(f"{name}/rows.cu", f"const enum row_op step_op = ROW_{op};\n")

    def write(self, path, text):
        path = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)

    def cli(self, *args):
        return subprocess.run([sys.executable, STEPS_PY, "--root", self.root, *args],
                              capture_output=True, text=True)

    # ---------------------------------------------------------- the list

    def test_steps_in_number_order_with_source_or_run(self):
        self.assertEqual(steps.step_dirs(self.root),
                         ["step0_a", "step1_b", "step2_c", "step3_built", "step10_d"])
        self.assertEqual(steps.step_dirs(self.root, source=True),
                         ["step0_a", "step1_b", "step2_c", "step10_d"])
        self.assertEqual(steps.step_dirs(self.root, "rows/"),
                         [n for n in self.PART2 if "baseline" not in n])
        self.assertEqual(steps.step_dirs(os.path.join(self.root, "none")), [])

    def test_next_free_is_one_past_the_highest(self):
        self.assertEqual(steps.next_free(self.root), 11)
        self.assertEqual(steps.next_free(self.root, "rows/"), 6)
        empty = os.path.join(self.root, "empty")
        os.makedirs(empty)
        self.assertEqual(steps.next_free(empty), 0)

    # ---------------------------------------------------------- folders

    def test_folder_of_each_name(self):
        for name, want in (("0", "step0_a"), ("10", "step10_d"), ("rows/3", "rows/step3_norm_bf16"),
                           ("cub", "baseline_cub"), ("rows/cub", "rows/baseline_cub"),
                           ("rows/copy", "rows/baseline_copy")):
            with self.subTest(name):
                self.assertEqual(steps.folder(self.root, name), want)

    def test_folder_errors(self):
        for name, text in (("9", "no step 9 (no step9_*/reduce.cu)"),
                           ("3", "no step 3 (no step3_*/reduce.cu)"),     # built, no source
                           ("4", "no step 4"), ("rows/9", "no step rows/9 (no rows/step9_*/rows.cu)"),
                           ("02", "'02' is no step"), ("rows/", "'rows/' is no step"),
                           ("step0_a", "'step0_a' is no step"), ("-1", "'-1' is no step"),
                           ("rows/copy16", "no rows/copy16 in this tree")):
            with self.subTest(name):
                with self.assertRaises(steps.StepError) as caught:
                    steps.folder(self.root, name)
                self.assertIn(text, str(caught.exception))

    # ---------------------------------------------------------- the step before

    def test_previous_step(self):
        prev = lambda name: steps.previous_step(self.root, name)  # noqa: E731
        self.assertEqual(prev("step10_d"), "step3_built")      # the nearest lower, built or not
        self.assertEqual(steps.previous_step(self.root, "step10_d", source=True), "step2_c")
        self.assertIsNone(prev("step0_a"))
        self.assertIsNone(prev("baseline_cub"))
        self.assertIsNone(prev("rows/baseline_copy"))
        self.assertEqual(prev("rows/step2_sum"), "rows/step0_sum")          # the same op's
        self.assertEqual(prev("rows/step4_norm_aligned"), "rows/step1_norm")
        self.assertEqual(prev("rows/step3_norm_bf16"), "rows/step2_sum")    # none: the nearest
        self.assertEqual(prev("rows/step5_norm_aligned_bf16"), "rows/step3_norm_bf16")
        self.assertIsNone(prev("rows/step0_sum"))

    def test_an_ops_first_step_follows_one_of_its_element_type(self):
        # A float op's first step after a bfloat16 one is read beside (and
        # diffed against) the float step before it, not the bfloat16 one.
        self.write("rows/step6_rms/rows.cu", "const enum row_op step_op = ROW_RMSNORM;\n")
        self.assertEqual(steps.previous_step(self.root, "rows/step6_rms"), "rows/step4_norm_aligned")
        self.assertEqual(steps.diff_base(self.root, "rows/step6_rms"), "rows/step4_norm_aligned")
        self.write("rows/step7_rms_bf16/rows.cu",
                   "const enum row_op step_op = ROW_RMSNORM;\nconst enum row_dtype step_dtype = ROW_BF16;\n")
        self.assertEqual(steps.previous_step(self.root, "rows/step7_rms_bf16"),
                         "rows/step5_norm_aligned_bf16")
        self.assertEqual(steps.diff_base(self.root, "rows/step7_rms_bf16"), "rows/step6_rms")

    def test_diff_base(self):
        base = lambda name: steps.diff_base(self.root, name)  # noqa: E731
        self.assertEqual(base("rows/step3_norm_bf16"), "rows/step1_norm")   # its float twin
        self.assertEqual(base("rows/step5_norm_aligned_bf16"), "rows/step4_norm_aligned")
        self.assertEqual(base("rows/step4_norm_aligned"), "rows/step1_norm")
        self.assertEqual(base("step2_c"), "step1_b")
        self.assertIsNone(base("step0_a"))
        self.assertIsNone(base("rows/step0_sum"))
        self.assertIsNone(base("rows/baseline_cub"))
        self.assertEqual(steps.float_twin(self.root, "rows/step4_norm_aligned"), None)

    def test_a_bfloat16_step_on_a_bfloat16_step_converts_nothing(self):
        # rows/step25_bf16_packed builds on step 18 (bfloat16), not on the
        # float step before it; a side lesson (step 22 off 13) is no one's twin.
        self.write("rows/step6_norm_packed_bf16/rows.cu",
                   "const enum row_op step_op = ROW_LAYERNORM;\nconst enum row_dtype step_dtype = ROW_BF16;\n")
        self.assertIsNone(steps.float_twin(self.root, "rows/step6_norm_packed_bf16"))
        self.assertEqual(steps.float_twin(self.root, "rows/step5_norm_aligned_bf16"),
                         "rows/step4_norm_aligned")
        self.write("rows/step7_norm_side/rows.cu",
                   "// Started from step1_norm by make new: make diff STEP=rows/7 shows it.\n"
                   "const enum row_op step_op = ROW_LAYERNORM;\n")
        self.write("rows/step8_norm_more_bf16/rows.cu",
                   "const enum row_op step_op = ROW_LAYERNORM;\nconst enum row_dtype step_dtype = ROW_BF16;\n")
        self.assertTrue(steps.branches_off(self.root, "rows/step7_norm_side"))
        self.assertIsNone(steps.float_twin(self.root, "rows/step8_norm_more_bf16"))

    def test_a_step_made_from_another_is_diffed_against_it(self):
        self.write("step10_d/reduce.cu", "// step10_d\n// Started from step1_b by make new: "
                   "make diff STEP=10 shows your change against it.\n")
        self.assertEqual(steps.diff_base(self.root, "step10_d"), "step1_b")
        self.assertEqual(steps.previous_step(self.root, "step10_d"), "step3_built")
        # A step it names that is gone: the step before, as for any step.
        self.write("step10_d/reduce.cu", "// Started from step7_gone by make new: ...\n")
        self.assertEqual(steps.diff_base(self.root, "step10_d", source=True), "step2_c")

    def test_a_step_made_from_an_earlier_one_branches_off(self):
        """A step started from a step other than the one before it is a side
        lesson: its op's last step is read before it."""
        self.write("rows/step6_norm_welford/rows.cu", "// Started from step1_norm by make new: ...\n"
                   "const enum row_op step_op = ROW_LAYERNORM;\n")
        self.assertTrue(steps.branches_off(self.root, "rows/step6_norm_welford"))
        # Started from the step before it (make new without FROM): the line goes on.
        self.write("rows/step6_norm_welford/rows.cu", "// Started from step4_norm_aligned by make "
                   "new: ...\nconst enum row_op step_op = ROW_LAYERNORM;\n")
        self.assertFalse(steps.branches_off(self.root, "rows/step6_norm_welford"))
        for name in ("rows/step4_norm_aligned", "rows/step5_norm_aligned_bf16", "step2_c"):
            self.assertFalse(steps.branches_off(self.root, name))
        # The shipped tree: step 22 (Welford) branches off step 13, so step 17
        # stays LayerNorm's last step in the tables.
        self.assertTrue(steps.branches_off(REPO, "rows/step22_welford"))
        self.assertFalse(steps.branches_off(REPO, "rows/step17_layernorm_cluster"))

    def test_bench_reads_the_same_answer(self):
        """One implementation: bench's names are this module's functions."""
        self.assertIs(bench.previous_step, steps.previous_step)
        self.assertIs(bench.diff_base, steps.diff_base)
        self.assertIs(bench.row_program_op, steps.row_op)
        self.assertEqual(bench.program_dirs(self.root), steps.step_dirs(self.root) + ["baseline_cub"])

    def test_the_graders_speed_reference_is_a_step_of_the_list(self):
        ref = lambda name, rows=False: grade.speed_reference(name, rows, root=self.root)  # noqa: E731
        self.assertEqual(ref("step10"), "step10_d")
        self.assertEqual(ref("10"), "step10_d")
        self.assertEqual(ref("step1_b"), "step1_b")
        self.assertEqual(ref("rows/4", rows=True), "rows/step4_norm_aligned")
        for name in ("step3", "step1_x", "step9"):   # built without a source, a wrong slug, none
            with self.subTest(name):
                with self.assertRaises(grade.GradeError):
                    ref(name)

    # ---------------------------------------------------------- command line

    def test_command_line_answers(self):
        for args, out in ((("dir", "rows/4"), "rows/step4_norm_aligned\n"),
                          (("dir", "cub"), "baseline_cub\n"),
                          (("base", "rows/5"), "rows/step4_norm_aligned\n"),
                          (("base", "rows/step5_norm_aligned_bf16"), "rows/step4_norm_aligned\n"),
                          (("previous", "rows/5"), "rows/step3_norm_bf16\n"),
                          (("base", "0"), ""), (("base", "cub"), ""),
                          (("base", "10"), "step2_c\n"),      # the step before with a source
                          (("list",), "step0_a\nstep1_b\nstep2_c\nstep3_built\nstep10_d\n"),
                          (("--source", "list"), "step0_a\nstep1_b\nstep2_c\nstep10_d\n"),
                          (("list", "rows"), "".join(n + "\n" for n in steps.step_dirs(
                              self.root, "rows/"))),
                          (("next",), "11\n"), (("--source", "next"), "11\n"),
                          (("next", "rows"), "6\n"),
                          (("dir-base", "rows/5"),
                           "rows/step5_norm_aligned_bf16\nrows/step4_norm_aligned\n"),
                          (("dir-base", "0"), "step0_a\n\n")):
            with self.subTest(args):
                proc = self.cli(*args)
                self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, out, ""))

    def test_command_line_errors_are_one_line_exit_2(self):
        for args, text in ((("dir", "9"), "no step 9"), (("dir", "03"), "'03' is no step"),
                           (("base", "rows/9"), "no step rows/9"), (("dir",), "give a step"),
                           (("dir-base", "9"), "no step 9"),
                           (("list", "part3"), "got 'part3'"), (("bogus",), "invalid choice"),
                           ((), "required"), (("dir", "1", "2"), "unrecognized arguments"),
                           # A wrong --root is no tree of no steps.
                           (("--root", os.path.join(self.root, "none"), "list"), "is not a folder"),
                           (("--root", os.path.join(self.root, "none"), "next", "rows"),
                            "is not a folder"),
                           (("--root", "", "dir", "0"), "--root '' is not a folder")):
            with self.subTest(args):
                proc = self.cli(*args)
                self.assertEqual(proc.returncode, 2)
                self.assertEqual(proc.stdout, "")
                self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
                self.assertIn(text, proc.stderr)
                self.assertTrue(proc.stderr.startswith("steps: "), proc.stderr)


    def test_dir_base_prints_both_answers_or_neither(self):
        """make diff reads dir-base's two lines: where the step before
        cannot be told, the folder alone must not pass for a first step."""
        def broken(*args, **kwargs):
            raise steps.StepError("broken on purpose")
        saved, steps.diff_base = steps.diff_base, broken
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = steps.main(["--root", self.root, "dir-base", "rows/5"])
        finally:
            steps.diff_base = saved
        self.assertEqual((code, out.getvalue()), (2, ""))
        self.assertIn("broken on purpose", err.getvalue())


class ThisRepository(unittest.TestCase):
    """The shipped steps, as the commands name them."""

    def test_every_step_of_both_parts(self):
        for part, shipped in (("", schema.SHIPPED), ("rows/", schema.SHIPPED_ROWS)):
            names = [n for n in shipped if schema.step_number(n) is not None]
            self.assertEqual(steps.step_dirs(REPO, part)[:len(names)], list(names))
            for name in names:
                self.assertEqual(steps.folder(REPO, f"{part}{schema.step_number(name)}"), name)
        for name in ("cub", "rows/cub", "rows/copy", "rows/copy16"):
            self.assertEqual(steps.folder(REPO, name), schema.program_dir(name))

    def test_the_step_before_of_part_2s_later_steps(self):
        """Step 13 builds on step 7 (the last float LayerNorm), not on step
        12's bfloat16 one; a bfloat16 step's lesson is its float twin."""
        for name, prev, base in (("rows/step12_bf16_layernorm", "rows/step11_bf16", "rows/step7_wide"),
                                 ("rows/step13_layernorm_aligned", "rows/step7_wide",
                                  "rows/step7_wide"),
                                 ("rows/step14_bf16_layernorm_aligned", "rows/step12_bf16_layernorm",
                                  "rows/step13_layernorm_aligned"),
                                 ("step3_idle", "step2_bankconflict", "step2_bankconflict")):
            with self.subTest(name):
                self.assertEqual(steps.previous_step(REPO, name), prev)
                self.assertEqual(steps.diff_base(REPO, name), base)

    def test_make_diff_is_the_diff_against_diff_base(self):
        """make diff (tools/step.sh) shows, for every step of both parts, the
        step diff_base names, or says it is the first."""
        for part in ("", "rows/", "back/"):
            for name in steps.step_dirs(REPO, part, source=True):
                k = schema.step_number(name)
                proc = subprocess.run(["bash", os.path.join(REPO, "tools", "step.sh"), "diff",
                                       f"{part}{k}"], capture_output=True, text=True)
                first = proc.stdout.splitlines()[0] if proc.stdout else ""
                want = steps.diff_base(REPO, name, source=True)
                with self.subTest(name):
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    if want is None:
                        self.assertIn(f"{name} is the first step", first)
                    else:
                        self.assertEqual(first, f"--- {want}/{steps.source_file(name)}")

    def test_part_3s_step_5_is_read_against_step_2(self):
        """Steps 3 and 4 of part 3 are a detour (slower, kept as lessons):
        step 5 says it was started from step 2, so its diff is the layout's."""
        self.assertEqual(steps.diff_base(REPO, "back/step5_rows", source=True),
                         "back/step2_partials")
        self.assertEqual(steps.diff_base(REPO, "back/step6_tiles", source=True), "back/step5_rows")

    def make_variables(self):
        """The Makefile's variables as make expands them (make -p -n)."""
        out = subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO, "-p", "-n",
                              "hash-flags"], capture_output=True, text=True, timeout=120).stdout
        return dict(re.findall(r"^([A-Z_]+) :?= (.*)$", out, re.M))

    def test_the_makefile_builds_the_steps_this_module_lists(self):
        """The Makefile finds each part's steps with a wildcard of its own (a
        Python call on every make would cost make test tens of seconds): it
        must find the steps steps.py lists, in the same order."""
        found = self.make_variables()
        for var, part in (("STEP_DIRS", ""), ("ROW_STEP_DIRS", "rows/"), ("BACK_STEP_DIRS", "back/")):
            with self.subTest(var):
                self.assertEqual(found[var].split(), steps.step_dirs(REPO, part, source=True))

    def test_the_makefile_links_the_harness_the_hash_covers(self):
        """Each part's programs link the harness objects of the sources that
        tools/code_hash.py hashes for it: a file linked but not hashed could
        change a timing and leave the results looking current."""
        import code_hash
        found = self.make_variables()
        for var, part in (("HARNESS", "sum"), ("ROWS_HARNESS", "rows"), ("BACK_HARNESS", "back")):
            linked = set()
            for obj in found[var].split():
                stem = os.path.basename(obj)[:-len(".o")]
                if stem == "version":   # the revision's string, written by make: no code
                    continue
                sources = [f"common/{stem}{ext}" for ext in (".c", ".cu")
                           if os.path.isfile(os.path.join(REPO, "common", stem + ext))]
                self.assertEqual(len(sources), 1, f"{var}: {obj} has no one source in common/")
                linked.add(sources[0])
            hashed = {f for f in code_hash.HARNESS[part] if f.endswith((".c", ".cu"))}
            with self.subTest(var):
                self.assertEqual(linked, hashed)

    def test_each_readmes_diff_block_is_make_diffs(self):
        """The generated diff block of every shipped step's README (both
        languages) compares with the step diff_base names, the one make diff
        shows. A student's `make new` step is left out: its block stays empty
        until make docs fills it."""
        shipped = set(schema.SHIPPED) | set(schema.SHIPPED_ROWS)
        for part in ("", "rows/"):
            for name in steps.step_dirs(REPO, part, source=True):
                if name not in shipped:
                    continue
                want = steps.diff_base(REPO, name, source=True)
                for page in ("README.md", "README.zh-CN.md"):
                    path = os.path.join(REPO, name, page)
                    if not os.path.isfile(path):
                        continue
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                    if "<!-- BEGIN diff -->" not in text:
                        continue
                    block = text.split("<!-- BEGIN diff -->")[1].split("<!-- END diff -->")[0]
                    with self.subTest(path=path):
                        if want is None:
                            self.assertNotIn("\n--- ", block)
                        else:
                            self.assertIn(f"\n--- {want}/{steps.source_file(name)}\n", block)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("steps", verbosity=1))
