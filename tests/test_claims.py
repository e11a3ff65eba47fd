#!/usr/bin/env python3
"""Every claim the docs make must match the committed reference results.

No GPU needed: these tests read plots/reference/ (written on the reference
GPU by `make bench OUT_DIR=plots/reference` and `make profile-all
OUT_DIR=plots/reference`) and check
  - that every committed row, of both parts, measured the code as it is now
    (code_hash: the program's source, its part's harness and the flags,
    exactly as `make code-hash DIR=...` computes it),
  - the speed targets of the tutorial (step 8 against CUB and the peak),
  - that every shipped step's source points to its README for its effect,
    with no figure of its own,
  - the counter movements the step READMEs describe,
  - the loop lengths the READMEs quote from `make sass`,
  - that `make docs` writes every generated page (README.md, ACCURACY.md,
    rows/README.md and the step READMEs of both parts, both languages)
    byte for byte as committed, every block in them (results, accuracy, measured, counters, diff, figures),
    so no number in them was typed by hand.
  - that part 3's bench tables, written by hand (back/README, both
    languages), are cell by cell what their runs in h200-back.csv say.
Only the shipped programs (tools/schema.py SHIPPED) are covered, so a
student's own step never breaks `make test`. Step 9 arrived with the
code_hash columns: a reference without them predates it, and the step-9
checks are skipped until it is re-measured.
Ends with "claims: N passed, N failed[, N skipped]".
"""
import contextlib
import csv
import glob
import io
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import back_tables  # noqa: E402
import bench  # noqa: E402
import compare  # noqa: E402
import docs  # noqa: E402
import schema  # noqa: E402

REFERENCE = os.path.join(REPO, "plots", "reference")
RESULTS = os.path.join(REFERENCE, "h200.csv")
PROFILE = os.path.join(REFERENCE, "h200-profile.csv")
SASS = os.path.join(REFERENCE, "sm90-sass.txt")
FLUSH_CU = os.path.join("common", "flush.cu")
N25, N28 = 1 << 25, 1 << 28
STEP9 = "step9_singlepass"

REMEASURE = ("make bench OUT_DIR=plots/reference && make profile-all OUT_DIR=plots/reference "
             "&& make plot && make docs")


def rel(path):
    return os.path.relpath(path, REPO)


def load_code_hash():
    spec = importlib.util.spec_from_file_location("code_hash",
                                                  os.path.join(REPO, "tools", "code_hash.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


code_hash_module = load_code_hash()
code_hash = code_hash_module.code_hash


def hash_flags():
    """The compiler flags every program's hash covers: the Makefile's HASH_FLAGS,
    read by make itself so the test and the build can never disagree."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO, "hash-flags"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


FLAGS = hash_flags()


def program_directory(label):
    """The folder of a CSV step value (cub, rows/copy, kahan_step8 ...), or None
    where the tree holds no program of that name (a tuning variant, a protocol A/B)."""
    for candidate in (schema.program_dir(label), os.path.join("extras", label)):
        folder = os.path.join(REPO, candidate)
        if any(os.path.isfile(os.path.join(folder, f))
               for f in ("reduce.cu", "rows.cu", "back.cu", "multigpu.c")):
            return candidate
    return None


def current_hash(label):
    folder = program_directory(label)
    return None if folder is None else code_hash_module.program_hash(folder, FLAGS, REPO)


def source(step):
    return os.path.join(REPO, schema.program_dir(step), "reduce.cu")


# The shipped programs in this tree, in step order, CUB last.
PRESENT = [s for s in schema.SHIPPED if os.path.isfile(source(s))]
RESULT_ROWS = schema.read_results(RESULTS)
PROFILE_ROWS = schema.load_profile(PROFILE)
OLD_RESULTS = "code_hash" not in schema.header_of(RESULTS)
OLD_PROFILE = "code_hash" not in schema.header_of(PROFILE)
PREDATES_STEP9 = OLD_RESULTS
# The steps whose rows the reference must hold.
MEASURED = [s for s in PRESENT if not (s == STEP9 and PREDATES_STEP9)]
MEASURED_STEPS = [s for s in MEASURED if s != schema.CUB]
PREDATES_MESSAGE = (f"{rel(RESULTS)} predates {STEP9} (it has no code_hash column); "
                    f"re-measure: {REMEASURE}")

M = compare.Measurements(RESULTS, schema.usable(RESULT_ROWS, RESULTS, quiet=True))
C = compare.Counters(PROFILE, PROFILE_ROWS)


def row(step, n):
    found = M.get(step, n)
    if found is None:
        raise AssertionError(f"no usable row for {step} at n={n} in {rel(RESULTS)}")
    return found


def counter(step, metric):
    value = C.value(step, metric)
    if value is None:
        raise AssertionError(f"no {metric} for {step} in {rel(PROFILE)}")
    return value


INST = "smsp__inst_executed.sum"
PRED_ON = "smsp__thread_inst_executed_pred_on.sum"
BANK_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SHARED_LD = "smsp__inst_executed_op_shared_ld.sum"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"


# ----------------------------------------------------------------- code hashes

import stale  # noqa: E402  (tools/stale.py: rows that measured an earlier version)

HASHES = stale.Hashes(REPO)


def hash_mismatches(path, rows, command):
    """One message per program in the tree whose rows carry a hash other than
    the one make builds into it now (`make code-hash DIR=...`)."""
    found = {}
    for r in rows:
        found.setdefault(r.step, set()).add(r.code_hash or "(empty)")
    messages = []
    for step in sorted(found):
        wanted = current_hash(step)
        if wanted is None:
            continue
        hashes = found[step] - {wanted}
        if hashes:
            messages.append(
                f"{step}: {rel(path)} has code_hash {', '.join(sorted(hashes))} but "
                f"`make code-hash DIR={program_directory(step)}` is {wanted} now: "
                f"the code changed after it was measured; re-measure: {command}")
    return messages


class CodeHashTests(unittest.TestCase):
    """A committed row whose code hash is not the code's now is stale: not a
    failure (make test names it in one line, tools/stale.py), but never shown
    as current. These tests hold the marking, and the hash itself."""

    def test_every_file_has_the_code_hash_column(self):
        # Without it no row can be matched with the code it measured.
        for path in (RESULTS, PROFILE):
            self.assertFalse("code_hash" not in schema.header_of(path),
                             f"{rel(path)} is in the old schema, written before the code_hash "
                             f"column existed; re-measure on the reference GPU: {REMEASURE}")

    def test_stale_py_agrees_with_the_make_hashes(self):
        # tools/stale.py's judgement is the one `make code-hash` would give:
        # it flags no program whose rows all carry make's hash, and it flags
        # every program whose current run (the one its figures come from,
        # bench.current_runs) does not. (A run a newer one replaced may stay
        # in the file for another program's figures; its rows of the
        # replaced programs are stale and shown nowhere.)
        for path in sorted(glob.glob(os.path.join(REFERENCE, "*.csv"))):
            header = schema.header_of(path)
            if "code_hash" not in header:
                continue
            records = [record for _, record in schema.read_records(path)[1]]
            current = bench.current_runs(records) if "run" in header else {}
            rows = [HashedRow(record) for record in records]
            latest = [HashedRow(record) for record in records
                      if current.get(record.get("step", ""), record.get("run") or "")
                      == (record.get("run") or "")]
            mismatched = {p.split(":")[0] for p in hash_mismatches(path, rows, "")}
            in_newest = {p.split(":")[0] for p in hash_mismatches(path, latest, "")}
            flagged = {label for label in stale.stale_rows(path, HASHES)
                       if program_directory(label) is not None}
            self.assertLessEqual(flagged, mismatched, rel(path))
            self.assertLessEqual(in_newest, flagged, rel(path))

    def test_every_stale_row_is_marked_where_it_is_shown(self):
        # The pages and the stale line say what tools/stale.py finds.
        found = stale.scan(REPO, HASHES)
        line = stale.summary_line(found, REPO)
        self.assertEqual(bool(line), bool(found))
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        block = readme.split("<!-- BEGIN stale -->")[1].split("<!-- END stale -->")[0]
        self.assertEqual(bool(block.strip()), bool(found), "README.md's stale block")

    def test_the_makefile_flags_are_the_ones_make_hashes(self):
        self.assertEqual(code_hash_module.makefile_flags(REPO), FLAGS)


class HashedRow:
    """The two columns the hash check reads, from any CSV with step and code_hash."""

    def __init__(self, record):
        self.step, self.code_hash = record.get("step", ""), record.get("code_hash", "")


class MovedHashes(stale.Hashes):
    """As if every committed row had measured the code as it is, and then the
    programs `moved` changed: only their rows are stale, whatever the tree's
    own state."""

    def __init__(self, moved):
        super().__init__(REPO)
        self.moved = moved

    def is_stale(self, label, measured):
        return bool(measured) and label in self.moved


class StaleMarkTests(unittest.TestCase):
    """When a program's hash moves, every page and table that shows its
    figures says so; the others do not change."""

    def regenerate(self, moved):
        src = docs.Sources(REPO, RESULTS, PROFILE)
        hashes = MovedHashes(moved)
        # The sources as docs.py builds them, judged with the moved hashes.
        src.hashes = hashes
        src.m = compare.Measurements.load(RESULTS, hashes.is_stale)
        src.stale_found = stale.scan(REPO, hashes)
        if src.rows is not None:
            src.rows.hashes = hashes
            src.rows.m = compare.RowMeasurements.load(src.rows.m.path, hashes.is_stale)
        return {path: new for path, _, new in docs.regenerate(src)}

    def test_the_mark_appears_when_a_hash_moves(self):
        step, row_step = "step3_idle", "rows/step7_wide"
        pages = self.regenerate({step, row_step})
        now = self.regenerate(set())
        mark = stale.MARK
        def block(text, name):
            return text.split(f"<!-- BEGIN {name} -->")[1].split(f"<!-- END {name}")[0]
        for path in (os.path.join(REPO, step, "README.md"),
                     os.path.join(REPO, step, "README.zh-CN.md"),
                     os.path.join(REPO, row_step, "README.md"),
                     os.path.join(REPO, row_step, "README.zh-CN.md")):
            with self.subTest(rel(path)):
                for name in ("stale", "measured"):
                    self.assertNotIn(mark, block(now[path], name))
                    self.assertIn(mark, block(pages[path], name))
                folder = row_step if rel(path).startswith("rows/") else schema.program_dir(step)
                self.assertIn(f"make verify ONLY={folder}", block(pages[path], "stale"))
                # ... and names the file its stale figures come from.
                csv_name = "h200-rows.csv" if rel(path).startswith("rows/") else "h200.csv"
                self.assertIn(csv_name, block(pages[path], "stale"))
        # The tables of the top pages mark the program, and only it.
        readme = pages[os.path.join(REPO, "README.md")]
        self.assertIn(f"{mark} Measured on an earlier version of the code", readme)
        self.assertIn(f"{step} (", readme.split("<!-- BEGIN results")[1])
        rows_readme = pages[os.path.join(REPO, "rows", "README.md")]
        self.assertIn(row_step, rows_readme.split("<!-- BEGIN stale -->")[1].split("<!-- END")[0])
        # An untouched step's page does not change.
        other = os.path.join(REPO, "step5_unroll", "README.md")
        self.assertEqual(pages[other].split("<!-- BEGIN stale -->")[1].split("<!-- END")[0],
                         now[other].split("<!-- BEGIN stale -->")[1].split("<!-- END")[0])

    def test_a_students_step_does_not_split_a_stale_part(self):
        # Every shipped part 2 program stale, and a student's own step (no
        # committed rows) beside them: the part is still named whole.
        root = tempfile.mkdtemp(prefix="stale-part-")
        self.addCleanup(shutil.rmtree, root)
        shipped = [schema.program_dir(s) for s in schema.SHIPPED_ROWS]
        for folder in shipped + ["rows/step99_mine"]:
            os.makedirs(os.path.join(root, folder))
            with open(os.path.join(root, folder, "rows.cu"), "w") as f:
                f.write("const enum row_op step_op = ROW_SUM;\n")
        self.assertEqual(stale.only_list(shipped, root), "rows")
        self.assertEqual(stale.only_list(shipped[:-1], root).split(",")[0], shipped[0])

    def test_a_step_measured_on_no_reference_card_does_not_split_a_stale_part(self):
        # Every part 2 program with rows on the reference card stale, and a
        # new shipped step measured only on another card (an H100's file
        # beside the H200's): the part is still named whole, and ONLY=rows
        # measures the new step with the others.
        root = tempfile.mkdtemp(prefix="stale-new-")
        self.addCleanup(shutil.rmtree, root)
        shipped = [schema.program_dir(s) for s in schema.SHIPPED_ROWS]
        for folder in shipped:
            os.makedirs(os.path.join(root, folder))
            with open(os.path.join(root, folder, "rows.cu"), "w") as f:
                f.write("const enum row_op step_op = ROW_SUM;\n")
        os.makedirs(os.path.join(root, "plots", "reference"))
        with open(os.path.join(REPO, "plots", "reference", "h200-rows.csv"), encoding="utf-8") as f:
            header, template = f.readline(), f.readline()
        first = template.split(",", 1)[1]
        new = [d for d in shipped if schema.step_number(d) is not None][-1]
        old = [d for d in shipped if d != new]
        for gpu, names in (("h200", old), ("h100-80gb-hbm3", [new])):
            with open(os.path.join(root, "plots", "reference", f"{gpu}-rows.csv"), "w",
                      encoding="utf-8") as f:
                f.write(header + "".join(f"{n},{first}" for n in names))
        self.assertEqual(stale.only_list(old, root), "rows")
        # Seen failing: with the H100's file counted, the new step splits the part.
        self.assertNotEqual(stale.only_list(old[:-1], root), "rows")

    def test_the_stale_line_names_the_program_and_the_command(self):
        found = stale.scan(REPO, MovedHashes({"rows/step7_wide"}))
        line = stale.summary_line(found, REPO)
        self.assertTrue(line.startswith("stale: rows/step7_wide: measured on an earlier "
                                        "version of the code"), line)
        # Step 7 and the programs whose ratios read its rows in their run.
        self.assertRegex(line, r"make verify ONLY=(\S*,)?rows/step7_wide(,\S*)? "
                               r"OUT_DIR=plots/reference")


class StaleAttributionTests(unittest.TestCase):
    """What clears a stale row: measuring its program again, or, for a row
    another program's ratios still read from an older run, that program."""

    class Old(stale.Hashes):
        def is_stale(self, label, measured):
            return measured == "old"

    def write(self, rows):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "h200-rows.csv")
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(schema.RESULT_COLUMNS), restval="")
            writer.writeheader()
            writer.writerows(rows)
        return path

    @staticmethod
    def row(step, run, code, role=""):
        return {"step": step, "run": run, "role": role, "code_hash": code, "git_rev": run[:4],
                "pass": "1", "mode": "timed", "median_us": "10", "rows": "8", "cols": "8",
                "round": "1"}

    def test_a_row_read_from_an_older_run_names_its_reader(self):
        five, six = "rows/step5_layernorm", "rows/step6_registers"
        path = self.write([self.row(five, "20260101T000001Z", "old"),
                           self.row(six, "20260101T000001Z", "new"),
                           self.row(five, "20260101T000002Z", "new"),
                           self.row("rows/step4_group", "20260101T000002Z", "new", "compared")])
        found, again = stale.shown_stale(path, self.Old(REPO), REPO)
        self.assertEqual(found, {five: ["2026"]})
        self.assertEqual(again, {five: {six}})   # step 6's vs-previous reads it
        line = stale.summary_line([(path, found, again)], REPO)
        self.assertIn("make verify ONLY=rows/step6_registers", line)
        # Read by nobody (no step 6 in that run): kept, shown nowhere, not stale.
        path = self.write([self.row(five, "20260101T000001Z", "old"),
                           self.row("rows/step9_online", "20260101T000001Z", "new"),
                           self.row(five, "20260101T000002Z", "new")])
        self.assertEqual(stale.shown_stale(path, self.Old(REPO), REPO), ({}, {}))

    def test_a_cells_mark_names_its_owner_and_its_files_command(self):
        class Row:
            def __init__(self, step, code):
                self.step, self.code_hash, self.git_rev = step, code, "abc1234"
        judge = stale.rows_stale(self.Old(REPO))
        marks = stale.Marks(judge)
        marks.cell("1.32x win", Row("rows/step5_layernorm", "old"), owner="rows/step6_registers")
        self.assertIn("`make verify ONLY=rows/step6_registers OUT_DIR=plots/reference`",
                      marks.note(lambda text, **values: text.format(**values))[1])
        tune = stale.Marks(judge, os.path.join(REFERENCE, "h200-tune.csv"))
        tune.cell("step8_vector UNROLL 2", Row("step8_vector-UNROLL-2", "old"))
        note = tune.note(lambda text, **values: text.format(**values))[1]
        self.assertIn("gpu_check.sh", note)
        self.assertNotIn("make verify", note)


    def test_a_mark_names_every_revision_its_cells_measured(self):
        class Row:
            def __init__(self, step, rev):
                self.step, self.code_hash, self.git_rev = step, "old", rev
        marks = stale.Marks(stale.rows_stale(self.Old(REPO)))
        for rev in ("bbb2222", "aaa1111", "bbb2222"):   # the copy of three runs
            marks.cell("4000", Row("rows/copy", rev), owner="rows/step17_layernorm_cluster")
        note = marks.note(lambda text, **values: text.format(**values))[1]
        self.assertIn("rows/copy (aaa1111, bbb2222)", note)

    def test_the_map_and_the_other_shapes_name_their_own_commands(self):
        # make verify measures neither the map nor part 2's counters at other
        # shapes: their notes name make bench-widths and profile-all SHAPE=.
        class Row:
            def __init__(self, step, code):
                self.step, self.code_hash, self.git_rev = step, code, "abc1234"
        judge = stale.rows_stale(self.Old(REPO))
        widths = stale.Marks(judge, os.path.join(REFERENCE, "h200-rows-widths.csv"))
        widths.cell("rows/step4_group", Row("rows/step4_group", "old"))
        note = widths.note(lambda text, **values: text.format(**values))[1]
        self.assertIn("`make bench-widths OUT_DIR=plots/reference`", note)
        self.assertNotIn("make verify", note)
        step = "rows/step4_group"
        found = [(os.path.join(REFERENCE, f"h200-rows-profile-{shape}.csv"), {step: ["abc1234"]},
                  {}) for shape in ("4096x50257", "512x128256")]
        found.append((os.path.join(REFERENCE, "h200-rows.csv"), {step: ["abc1234"]}, {}))
        self.assertEqual(stale.commands_for(found, REPO), [
            f"make verify ONLY={step} OUT_DIR=plots/reference",
            f"make profile-all ONLY={step} SHAPE=4096x50257,512x128256 OUT_DIR=plots/reference"])


class RunViewTests(unittest.TestCase):
    """A program's view of its own run: its rounds."""

    def test_rounds_of_a_run(self):
        rows = []
        for rnd in (1, 2, 3):   # an old run of 3 rounds: step 5 and step 6
            for step in ("rows/step5_layernorm", "rows/step6_registers", "rows/copy"):
                rows.append(StaleAttributionTests.row(step, "20260101T000001Z", "x"))
                rows[-1].update(round=str(rnd), rows="32768", cols="1024", op="layernorm",
                                n=str(32768 * 1024))
        for step, role in (("rows/step6_registers", ""), ("rows/copy", "compared")):
            rows.append(StaleAttributionTests.row(step, "20260101T000002Z", "x", role))
            rows[-1].update(rows="32768", cols="1024", op="layernorm", n=str(32768 * 1024))
        for row in rows:
            row.update(reps="20", warmup="3", min_us="9", max_us="11", gbps="100", result="0",
                       reference="0", abs_err="0", tol="0", gpu="NVIDIA H200", cc="9.0",
                       cuda="13.0", peak_gbps="4800", l2_mb="60", sms="132", flush="1",
                       offset="0", fill="random", seed="1", bytes="1")
        path = StaleAttributionTests.write(self, rows)
        m = compare.RowMeasurements.load(path)
        self.assertEqual(m.within("rows/step5_layernorm").round_count, 3)
        self.assertEqual(m.within("rows/step6_registers").round_count, 1)


class HashCheckSelfTest(unittest.TestCase):
    """The hash check itself, on rows made up here: it must catch a stale row."""

    def test_catches_a_stale_row_and_names_the_command(self):
        step = PRESENT[0]
        rows = [HashedRow({"step": step, "code_hash": current_hash(step)}),
                HashedRow({"step": "rows/step4_group", "code_hash": current_hash("rows/step4_group")}),
                HashedRow({"step": schema.CUB, "code_hash": "000000000000"}),
                HashedRow({"step": "rows/copy", "code_hash": "111111111111"}),
                HashedRow({"step": "step99_student", "code_hash": "ffffffffffff"})]
        problems = hash_mismatches(RESULTS, rows, "make bench OUT_DIR=plots/reference")
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(problems[0].startswith("cub: plots/reference/h200.csv has code_hash "
                                               "000000000000 but `make code-hash "
                                               "DIR=baseline_cub` is"), problems[0])
        self.assertTrue(problems[1].startswith("rows/copy: "), problems[1])
        self.assertIn("re-measure: make bench OUT_DIR=plots/reference", problems[0])

    def test_a_harness_edit_or_a_flag_changes_the_hash(self):
        # The timing loop and the flags decide a timing as much as the kernel does.
        folder = program_directory(PRESENT[0])
        files = code_hash_module.program_files(folder, REPO)
        self.assertIn(os.path.join(REPO, "common", "harness.c"), files)
        self.assertNotEqual(code_hash_module.program_hash(folder, FLAGS, REPO),
                            code_hash_module.program_hash(folder, FLAGS + " -DX", REPO))

    def test_the_hash_is_the_one_make_builds_in(self):
        for folder in (program_directory(PRESENT[0]), "rows/step4_group"):
            made = subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO,
                                   "code-hash", f"DIR={folder}"], capture_output=True,
                                  text=True, check=True).stdout.strip()
            self.assertEqual(made, code_hash_module.program_hash(folder, FLAGS, REPO))

    def test_comments_do_not_change_the_hash(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.cu"), os.path.join(tmp, "b.cu")
            with open(source(PRESENT[0])) as f:
                text = f.read()
            with open(a, "w") as f:
                f.write(text)
            with open(b, "w") as f:
                f.write("// a new comment\n" + text.replace("\n", "  \n"))
            self.assertEqual(code_hash([a]), code_hash([b]))

    def test_the_command_line_helps_and_refuses_an_unknown_option(self):
        def run(*args):   # -S, as make runs it
            return subprocess.run([sys.executable, "-S", os.path.join(REPO, "tools", "code_hash.py"),
                                   *args], capture_output=True, text=True, timeout=60)
        for args in (["--help"], ["-h"], ["--flags", "-O3", "--help"]):
            with self.subTest(args):
                proc = run(*args)
                self.assertEqual((proc.returncode, proc.stderr), (0, ""))
                self.assertTrue(proc.stdout.startswith("usage: code_hash.py [--flags TEXT]"),
                                proc.stdout)
        for args, said in ((["--bogus"], "unknown option '--bogus'"),
                           (["--program", "step0_naive", "-x"], "unknown option '-x'"),
                           (["--program"], "usage: code_hash.py"), ([], "usage: code_hash.py")):
            with self.subTest(args):
                proc = run(*args)
                self.assertEqual((proc.returncode, proc.stdout), (2, ""), proc.stderr)
                self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
                self.assertIn(said, proc.stderr)


# ------------------------------------------------------------------ provenance

class ProvenanceTests(unittest.TestCase):
    def test_every_row_verified_and_labelled(self):
        for r in RESULT_ROWS:
            where = f"{rel(RESULTS)} line {r.line} ({r.step} n={r.n})"
            self.assertTrue(r.passed, f"{where} did not verify")
            self.assertTrue(r.timed, f"{where} has no timing")
            self.assertEqual(r.flush, 1, f"{where}: headline results are L2-flushed")
            for column in ("gpu", "driver", "cuda", "git_rev"):
                self.assertNotIn(getattr(r, column), ("", "unknown"), f"{where}: {column}")
            self.assertNotIn("dirty", r.git_rev, f"{where}: not from a committed revision")

    def test_one_gpu_and_one_revision(self):
        gpus = {r.gpu for r in RESULT_ROWS}
        self.assertEqual(len(gpus), 1, gpus)
        # The file is named after the GPU that measured it.
        self.assertEqual(schema.gpu_slug(gpus.pop()), "h200")
        revisions = {r.git_rev for r in RESULT_ROWS}
        self.assertEqual(len(revisions), 1, revisions)
        self.assertEqual({r.git_rev for r in PROFILE_ROWS}, revisions)

    def test_every_shipped_program_measured(self):
        for n in (N25, N28):
            steps = {r.step for r in RESULT_ROWS if r.n == n}
            self.assertEqual(sorted(set(MEASURED) - steps), [], f"missing at n={n}")

    def test_every_shipped_program_profiled(self):
        for step in MEASURED:
            counter(step, INST)

    def test_step9_measured_and_profiled(self):
        if PREDATES_STEP9:
            self.skipTest(PREDATES_MESSAGE)
        self.assertIn(STEP9, PRESENT, f"{STEP9}/reduce.cu is missing")
        for n in (N25, N28):
            row(STEP9, n)
        counter(STEP9, INST)


# --------------------------------------------------------------------- targets

class TargetTests(unittest.TestCase):
    """The speed targets of the tutorial, on the committed numbers."""

    # Steps that need not beat the one before at n = 2^25, with why and the
    # range their speed-up must stay in.
    EXPLAINED = {
        "step7_shfl": ("memory-bound from step 6 on: shuffles cannot speed up the loads",
                       0.95, 1.05),
        STEP9: ("one launch instead of two matters at small n; at 2^25 it may only tie",
                0.95, None),
    }

    def test_step8_close_to_cub_as_its_readme_says(self):
        # "At 2^28, step 8 reaches about 91% of the peak and 0.98x of CUB ...
        # At 2^25 it is at 1.02x of CUB, a tie": the README's words, from the data.
        with open(os.path.join(REPO, "step8_vector", "README.md"), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        for n, label in ((N28, "2^28"), (N25, "2^25")):
            ratio = row("step8_vector", n).gbps / row("cub", n).gbps
            self.assertGreaterEqual(ratio, 0.97, f"step8 at n={n} is {ratio:.3f}x CUB")
            self.assertIn(f"{ratio:.2f}x of CUB", text, f"step 8's README at {label}")
        peak = 100 * row("step8_vector", N28).gbps / row("step8_vector", N28).peak_gbps
        self.assertIn(f"about {peak:.0f}% of the peak", text)

    def test_step8_near_peak_at_2_28(self):
        r = row("step8_vector", N28)
        self.assertGreaterEqual(100 * r.gbps / r.peak_gbps, 90.0)

    def test_each_step_faster_or_explained(self):
        for prev, this in zip(MEASURED_STEPS, MEASURED_STEPS[1:]):
            speedup = row(prev, N25).median_us / row(this, N25).median_us
            why, low, high = self.EXPLAINED.get(this, ("", 1.0, None))
            self.assertGreater(speedup, low, f"{this} against {prev}: {speedup:.3f}x {why}")
            if high is not None:
                self.assertLess(speedup, high, f"{this} against {prev}: {speedup:.3f}x {why}")


class HomeworkExampleTests(unittest.TestCase):
    """The pages' `make new NAME=stepK_...` examples name the number make new
    accepts now (the next free one): a shipped step that takes it turns the
    newcomer's first command into an error."""

    PAGES = ("README.md", "README.zh-CN.md", "rows/README.md", "rows/README.zh-CN.md")

    def test_make_new_examples_use_the_next_free_number(self):
        # Past the shipped steps: a student's own step (the homework flow)
        # takes that number in their tree, and the pages stay as they are.
        def free(shipped):
            return 1 + max(schema.step_number(s) for s in shipped
                           if schema.step_number(s) is not None)
        free = {"": free(schema.SHIPPED), "rows/": free(schema.SHIPPED_ROWS)}
        seen = 0
        for page in self.PAGES:
            with open(os.path.join(REPO, page), encoding="utf-8") as f:
                text = f.read()
            for part, number in re.findall(r"make new NAME=(rows/)?step(\d+)_", text):
                seen += 1
                self.assertEqual(int(number), free[part],
                                 f"{page}: make new NAME={part}step{number}_...: the next free "
                                 f"number is {free[part]}")
        self.assertGreaterEqual(seen, 6)


def started_by_make_new(path):
    """Whether a step's source carries make new's "Started from" line."""
    with open(path, encoding="utf-8") as f:
        return re.search(r"^// Started from step[0-9]*_[a-z0-9_]* by make new", f.read(), re.M) is not None


class EffectLineTests(unittest.TestCase):
    """Every shipped step's source has one '// Effect:' comment, the same in
    every step: it sends the reader to the README beside it, whose tables
    make docs writes. A figure in a source would go stale at the next
    re-measure and show up in every step's diff."""

    EFFECT = re.compile(r"^// Effect:.*\n(?://         .*\n)*", re.M)
    FIGURE = re.compile(r"\d(\.\d+)?\s*(x\b|us\b|GB/s|%)")

    def assert_one_effect_line(self, sources, readme):
        """Each source has one Effect comment naming readme, with no figure
        in it, and all of them the same line."""
        seen = set()
        for path in sources:
            with open(path, encoding="utf-8") as f:
                found = self.EFFECT.findall(f.read())
            self.assertEqual(len(found), 1, f"{rel(path)}: {len(found)} '// Effect:' comments")
            self.assertIn(readme, found[0], rel(path))
            self.assertIsNone(self.FIGURE.search(found[0]), f"{rel(path)}: a figure in {found[0]!r}")
            seen.add(found[0])
        self.assertEqual(len(seen), 1, f"the Effect comments differ: {sorted(seen)}")

    def test_every_step_points_to_its_readme(self):
        sources = [source(s) for s in MEASURED_STEPS]
        sources += [os.path.join(REPO, s, "rows.cu") for s in schema.SHIPPED_ROWS
                    if os.path.isdir(os.path.join(REPO, s))]
        self.assert_one_effect_line(sources, "README.md")

    def test_every_part3_step_points_to_the_part_readme(self):
        """Part 3 has one README for its steps (back/README.md): each step's
        Effect comment sends the reader there, the same line in every step."""
        sources = [path for path in sorted(glob.glob(os.path.join(REPO, "back", "step*_*", "back.cu")))
                   if not started_by_make_new(path)]
        self.assertGreaterEqual(len(sources), 10)
        self.assert_one_effect_line(sources, "back/README.md")

    def test_a_students_part3_step_is_not_held_to_it(self):
        """A step that `make new` started (back/README's "Your own step") says
        "not measured yet" in its Effect line until its author measures it:
        the shipped steps' rule leaves it alone, as parts 1 and 2 do (they
        check the shipped steps only)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "back.cu")
            with open(path, "w", encoding="utf-8") as f:
                f.write("// Effect: not measured yet (make bench; compare with back/step14_bulk).\n"
                        "// Started from step14_bulk by make new: make diff STEP=back/15 shows your "
                        "change against it.\n")
            self.assertTrue(started_by_make_new(path))
        self.assertFalse(started_by_make_new(os.path.join(REPO, "back", "step14_bulk", "back.cu")))

    def test_the_check_sees_a_figure(self):
        self.assertIsNotNone(self.FIGURE.search("// Effect: 1.78x at 2^25 floats, a win"))
        self.assertIsNotNone(self.FIGURE.search("// Effect: 36.0 us"))
        self.assertIsNone(self.FIGURE.search(
            "// Effect: measured in README.md beside this file (plots/reference)"))


# -------------------------------------------------------------------- counters

class CounterTests(unittest.TestCase):
    """The counter movements the step READMEs state."""

    def test_step1_fewer_instructions_more_conflicts(self):
        self.assertLess(counter("step1_divergence", INST), 0.6 * counter("step0_naive", INST))
        self.assertGreater(counter("step1_divergence", BANK_LD),
                           10 * counter("step0_naive", BANK_LD))

    def test_divergence_ratio_stays_high(self):
        # The folklore metric barely moves: divergence shows as instructions issued.
        for step in MEASURED_STEPS:
            self.assertGreater(counter(step, THREADS_PER_INST), 31.0, step)

    def test_lanes_with_predicate_on_within_active_threads(self):
        # The new counter: lanes that really work per warp instruction can be
        # at most the threads active per instruction (predicated-off lanes count
        # as active), and at most 32.
        if OLD_PROFILE:
            self.skipTest(f"{rel(PROFILE)} predates {PRED_ON}; re-profile: "
                          "make profile-all OUT_DIR=plots/reference")
        for step in MEASURED:
            lanes = counter(step, PRED_ON) / counter(step, INST)
            self.assertLessEqual(lanes, counter(step, THREADS_PER_INST) + 0.05, step)
            self.assertGreater(lanes, 0.0, step)

    def test_step2_removes_the_conflicts(self):
        self.assertLess(counter("step2_bankconflict", BANK_LD),
                        0.1 * counter("step1_divergence", BANK_LD))

    def test_instructions_fall_through_step6_and_step8(self):
        order = ["step2_bankconflict", "step3_idle", "step4_warp", "step5_unroll", "step6_multi"]
        for a, b in zip(order, order[1:]):
            self.assertLess(counter(b, INST), counter(a, INST), f"{a} -> {b}")
        self.assertLess(counter("step8_vector", INST), 0.5 * counter("step7_shfl", INST))

    def test_step6_memory_bound(self):
        self.assertGreater(counter("step6_multi", DRAM_PCT), 75.0)
        self.assertGreater(counter("step6_multi", DRAM_PCT),
                           1.5 * counter("step5_unroll", DRAM_PCT))

    def test_step7_drops_shared_loads(self):
        self.assertLess(counter("step7_shfl", SHARED_LD), 0.2 * counter("step6_multi", SHARED_LD))


# ------------------------------------------------------------------------ sass

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
                    "step2_bankconflict": [10], "step4_warp": [11], "step5_unroll": [],
                    "step8_vector": [34]}
        # Step 9's first loop is its grid-stride loop, the one its README compares.
        expected_first = {"step9_singlepass": 43}
        for step, want in expected.items():
            self.assertEqual(loops[step], want, step)
        for step, want in expected_first.items():
            self.assertEqual(loops[step][:1], [want], step)

    def test_cited_counts_are_in_the_readmes(self):
        for step, text in (("step0_naive", "28 instructions per level"),
                           ("step1_divergence", "from 28 to 14 instructions"),
                           ("step2_bankconflict", "to 10 instructions"),
                           ("step9_singlepass", "grid-stride loop is 34 instructions and step 9's is 43")):
            with open(os.path.join(REPO, step, "README.md")) as f:
                self.assertIn(text, f.read())


# ------------------------------------------------------------------ tolerances

class ToleranceTests(unittest.TestCase):
    """rows/README.md's words about part 2's bounds (make tolerances): the
    bounds of the exact-sum fills do not grow with the width, the others'
    sums do, as adds in any order can."""

    found = None   # the table, read once: both tests read the same run (seconds of float math)

    def table(self):
        if ToleranceTests.found is not None:
            return ToleranceTests.found
        program = os.path.join(REPO, "build", "tolerances")
        self.assertTrue(os.path.isfile(program), "build/tolerances is missing: make build/tolerances")
        out = subprocess.run([program, "1024", "100003", "1048576"], capture_output=True,
                             text=True, check=True).stdout
        found = {}
        for line in out.splitlines()[1:]:
            op, fill, cols, rest = line.split(None, 3)
            found[(op, fill, int(cols))] = [float(v) for v in re.findall(r"[0-9.]+e[-+][0-9]+|\b[0-9.]+\b", rest)]
        ToleranceTests.found = found
        return found

    def test_exact_fills_stay_narrow(self):
        t = self.table()
        u = 2.0 ** -24
        for cols in (1024, 100003, 1 << 20):
            self.assertAlmostEqual(t[("softmax", "levels", cols)][0], 4 * u, delta=1e-9)
            self.assertAlmostEqual(t[("softmax", "levels/causal", cols)][0], 4 * u, delta=1e-9)
            mean, rstd, y, largest = t[("layernorm", "centered", cols)]
            self.assertLess(max(rstd, y), 10 * u)   # rsqrtf's 2 ulps are up to 4u
            self.assertEqual(t[("sum", "exact", cols)][0] if cols < 500000 else 0.0, 0.0)
        # "2.4% at that width": the general softmax bound at 100003 columns.
        self.assertAlmostEqual(t[("softmax", "random", 100003)][0], 0.024, delta=0.0005)
        self.assertGreater(t[("softmax", "random", 1 << 20)][0], 0.3)

    def test_the_wide_fill_is_weighted(self):
        # u D alone was about 12% for values up to 2^21; weighted, it is gone.
        t = self.table()
        self.assertLess(t[("softmax", "wide", 1024)][0], 1e-6)


# -------------------------------------------------------------------- variance

class VarianceTests(unittest.TestCase):
    """plots/reference/variance.csv is what tools/variance.c writes now (it is
    float32 arithmetic on the CPU, the same on every machine), and ACCURACY.md's
    words about it hold."""

    CSV = os.path.join(REFERENCE, "variance.csv")

    def rows(self):
        import csv
        with open(self.CSV, newline="") as f:
            return {(r["method"], float(r["shift"])): r for r in csv.DictReader(f)}

    def test_committed_csv_is_what_the_tool_writes(self):
        program = os.path.join(REPO, "build", "variance")
        self.assertTrue(os.path.isfile(program), "build/variance is missing: make build/variance")
        out = subprocess.run([program], capture_output=True, text=True, check=True).stdout
        with open(self.CSV) as f:
            self.assertEqual(out, f.read(), "make variance OUT_DIR=plots/reference && make docs")

    def test_the_lessons_claims(self):
        rows = self.rows()
        err = {k: float(r["max_rel_err"]) for k, r in rows.items()}
        bad = {k: int(r["nonpositive"]) for k, r in rows.items()}
        u = 2.0 ** -24
        # One pass: error grows with the square of the mean (x100 per x10).
        for a, b in ((10, 100), (100, 1000)):
            ratio = err[("one-pass", b)] / err[("one-pass", a)]
            self.assertTrue(50 < ratio < 200, ratio)
        self.assertGreater(err[("one-pass", 2000)], 0.9)        # "off by almost 100%"
        self.assertEqual(bad[("one-pass", 2000)], 0)             # "from mean 3000 on"
        self.assertGreater(bad[("one-pass", 3000)], 0)
        for shift in (0, 10, 100, 1000, 2000, 3000):            # "about 3u up to mean 3000"
            self.assertLess(err[("two-pass", shift)], 3.5 * u, shift)
        for shift in (2000, 3000, 10000, 30000, 100000):        # "more than four orders"
            self.assertGreater(err[("one-pass", shift)] / err[("welford", shift)], 1e4, shift)
            self.assertEqual(bad[("two-pass", shift)] + bad[("welford", shift)], 0)


# ----------------------------------------------------------------------- ptxas

class PtxasTests(unittest.TestCase):
    """The register counts rows/README.md quotes, from plots/reference/h200-ptxas.log
    (make ptxas ARCH=sm_90)."""

    LOG = os.path.join(REFERENCE, "h200-ptxas.log")

    def kernels(self):
        """{(program, kernel name with its template arguments): (registers, spill bytes)}"""
        found, program, kernel = {}, None, None
        with open(self.LOG) as f:
            for line in f:
                if line.startswith("== "):
                    program = line[3:].strip()
                m = re.search(r"Compiling entry function '([^']+)'", line)
                if m:
                    kernel = m.group(1)
                m = re.search(r"(\d+) bytes spill stores", line)
                if m:
                    spill = int(m.group(1))
                m = re.search(r"Used (\d+) registers", line)
                if m:
                    found[(program, kernel)] = (int(m.group(1)), spill)
        return found

    def registers(self, program, g, pack):
        name = f"26layernorm_registers_kernelILj{g}ELj{pack}E"
        hits = [v for (p, k), v in self.kernels().items() if p == program and name in k]
        self.assertEqual(len(hits), 1, (program, name))
        return hits[0]

    def test_register_counts_in_rows_readme(self):
        with open(os.path.join(REPO, "rows", "README.md"), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        step6, step7 = "rows/step6_registers", "rows/step7_wide"
        self.assertEqual(self.registers(step6, 1024, 4), (56, 0))
        regs7, spill7 = self.registers(step7, 1024, 4)
        self.assertEqual(regs7, 62)
        self.assertGreater(spill7, 0)                       # "spills a few bytes"
        self.assertIn("56 registers per thread (step 6's LayerNorm kernel at G = 1024; 62 in "
                      "step 7)", text)
        self.assertEqual([self.registers(s, 256, 4)[0] for s in (step6, step7)], [56, 56])
        self.assertIn("56 with `float4`s (LayerNorm's kernel at G = 256 in steps 6 and 7)", text)
        plain = [self.registers(step6, g, 1)[0] for g in (32, 64, 128, 256, 512, 1024)]
        self.assertEqual((min(plain), max(plain)), (64, 114))
        self.assertEqual(self.registers(step6, 256, 1)[0], 80)
        self.assertIn("needs 64 to 114 registers", text)
        self.assertIn("G is 256 and the kernel needs 80", text)


# ---------------------------------------------------------------- generated docs

def shipped_readmes():
    """[(path, lang)]: the top pages (README, ACCURACY) and the READMEs of the
    shipped steps."""
    top = [found for page in docs.TOP_PAGES for found in docs.pages(REPO, page)]
    steps = [os.path.join(REPO, s) for s in PRESENT if s != schema.CUB]
    return top + [found for folder in steps for found in docs.pages(folder)]


class GeneratedDocsTests(unittest.TestCase):
    """`make docs` from plots/reference changes no README (English or Chinese)."""

    def test_readmes_are_what_make_docs_writes(self):
        # Both parts' pages; docs.py writes no source.
        src = docs.Sources(REPO, RESULTS, PROFILE)
        folders = {REPO, os.path.join(REPO, "rows"), os.path.join(REPO, "multigpu")}
        folders |= {os.path.join(REPO, schema.program_dir(s)) for s in PRESENT}
        folders |= {os.path.join(REPO, s) for s in schema.SHIPPED_ROWS}
        changes = docs.regenerate(src)
        self.assertIn(os.path.join(REPO, "rows", "README.md"), [c[0] for c in changes])
        self.assertEqual([rel(c[0]) for c in changes if not c[0].endswith(".md")], [])
        stale = [rel(path) for path, old, new in changes
                 if os.path.dirname(path) in folders and new != old]
        self.assertEqual(stale, [], "these differ from what `make docs` writes from "
                                    f"{rel(REFERENCE)}: run make docs")

    def test_every_block_in_the_pages_is_generated(self):
        # A block docs.py does not know would never be refilled, and the
        # byte-for-byte check above could not see it go stale.
        top = {os.path.join(REPO, page + suffix): set(blocks)
               for page, blocks in docs.TOP_PAGES.items() for suffix, _ in docs.LANGS}
        seen = set()
        for path, _ in shipped_readmes():
            with open(path, encoding="utf-8") as f:
                names = re.findall(r"^\s*<!-- BEGIN (\S+) -->\s*$", f.read(), re.M)
            known = top.get(path, set(docs.STEP_BLOCKS))
            self.assertEqual(sorted(set(names) - known), [], rel(path))
            seen.update(names)
        self.assertEqual(seen, {"stale", "results", "accuracy", "variance", "measured",
                                "counters", "diff", "figures", "vs-cub", "determinism", "tried"})

    def test_both_languages_covered(self):
        # A Chinese README, where there is one, is among those checked above.
        for path, lang in shipped_readmes():
            self.assertEqual(lang, "zh-CN" if path.endswith(".zh-CN.md") else "en")
        self.assertIn((os.path.join(REPO, "README.md"), "en"), shipped_readmes())

    def test_headings_name_no_gpu(self):
        # Headings stay true on any GPU; the generated text names the one measured.
        short = M.gpu.replace("NVIDIA ", "").lower()
        for path, _ in shipped_readmes():
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for line in docs_outside_blocks(text).split("\n"):
                if line.startswith("#"):
                    self.assertNotIn(short, line.lower(), f"{rel(path)}: {line}")

    def test_linked_charts_exist(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", f.read())
        self.assertTrue(links)
        for link in links:
            self.assertTrue(os.path.isfile(os.path.join(REPO, link)), f"{link}: run make plot")


def docs_outside_blocks(text):
    return re.sub(r"<!-- BEGIN (\w+) -->.*?<!-- END \1 -->", "", text, flags=re.S)



# ---------------------------------------------------------------- charts
# make plot draws every chart of plots/reference from its data; a data file
# committed after its chart (h200-accuracy.csv at d3756b8, its chart left as
# drawn at 809d091) leaves make plot rewriting a tracked file at HEAD.

MULTIGPU_CHART_INPUTS = ("h200x2-multigpu.csv", "h200x2-allreduce.csv")


def chart_inputs(png, csvs):
    """The data files a committed chart is drawn from: the CSV whose name is
    the chart's, or the longest one whose name the chart's extends with
    "-kind" (h200-rows-sum.png: h200-rows.csv); multigpu_chart.py's two. A
    Chinese twin (name.zh-CN.png) is drawn from its English chart's data."""
    stem = os.path.basename(png)[:-len(".png")].removesuffix(".zh-CN")
    if stem.startswith("h200x2-"):
        return [os.path.join(REFERENCE, name) for name in MULTIGPU_CHART_INPUTS]
    found = [c for c in csvs if stem == os.path.basename(c)[:-4]
             or stem.startswith(os.path.basename(c)[:-4] + "-")]
    return [max(found, key=len)] if found else []


def git(*args):
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)


def stale_charts(pngs, csvs, last_commit, is_ancestor):
    """[(chart, data file)] where the data file's last commit is not in the
    chart's history: the data changed after the chart was drawn."""
    stale = []
    for png in pngs:
        drawn = last_commit(png)
        for data in chart_inputs(png, csvs):
            measured = last_commit(data)
            if drawn and measured and not is_ancestor(measured, drawn):
                stale.append((rel(png), rel(data)))
    return stale


class ChartFreshnessTests(unittest.TestCase):
    """Every committed chart was committed with, or after, the data it shows."""

    def test_no_chart_is_older_than_its_data(self):
        if git("rev-parse", "--git-dir").returncode != 0:
            self.skipTest("no git history: a copy of the tree without .git")
        pngs = sorted(glob.glob(os.path.join(REFERENCE, "*.png")))
        csvs = sorted(glob.glob(os.path.join(REFERENCE, "*.csv")))
        self.assertTrue(all(chart_inputs(png, csvs) for png in pngs),
                        [rel(p) for p in pngs if not chart_inputs(p, csvs)])

        def last_commit(path):
            return git("log", "-1", "--format=%H", "--", path).stdout.strip()

        def is_ancestor(a, b):
            return git("merge-base", "--is-ancestor", a, b).returncode == 0
        stale = stale_charts(pngs, csvs, last_commit, is_ancestor)
        self.assertEqual(stale, [], "committed after their charts: run make plot and commit "
                                    "the charts with the data")

    def test_the_inputs_and_a_stale_chart(self):
        csvs = [os.path.join(REFERENCE, n) for n in ("h200.csv", "h200-rows.csv",
                                                     "h200-accuracy.csv", "variance.csv")]
        self.assertEqual([rel(c) for c in chart_inputs(
            os.path.join(REFERENCE, "h200-rows-sum.png"), csvs)], ["plots/reference/h200-rows.csv"])
        self.assertEqual([rel(c) for c in chart_inputs(
            os.path.join(REFERENCE, "h200-sweep.png"), csvs)], ["plots/reference/h200.csv"])
        self.assertEqual(len(chart_inputs(os.path.join(REFERENCE, "h200x2-scaling.png"), csvs)), 2)
        # d3756b8's history: the data in a commit the chart's does not contain.
        commits = {"h200-accuracy.png": "809d091", "h200-accuracy.csv": "d3756b8",
                   "variance.png": "v2", "variance.csv": "v1"}
        history = {("d3756b8", "809d091"): False, ("v1", "v2"): True}
        pngs = [os.path.join(REFERENCE, n) for n in ("h200-accuracy.png", "variance.png")]
        self.assertEqual(stale_charts(pngs, csvs, lambda p: commits[os.path.basename(p)],
                                      lambda a, b: history[(a, b)]),
                         [("plots/reference/h200-accuracy.png",
                           "plots/reference/h200-accuracy.csv")])

# ------------------------------------------------- part 3's hand-written tables

BACK_PAGES = back_tables.PAGES


def back_rounds():
    return back_tables.rounds_of()


def back_table_errors(text, rounds, chinese):
    return back_tables.table_errors(text, rounds, chinese)


class BackTableTests(unittest.TestCase):
    """Part 3's bench tables are written by hand (back/README, both
    languages): every cell must be what its run's rows in
    plots/reference/h200-back.csv say."""

    def test_every_cell_is_its_runs(self):
        rounds = back_rounds()
        for page in BACK_PAGES:
            with self.subTest(page):
                with open(os.path.join(REPO, page), encoding="utf-8") as f:
                    text = f.read()
                errors, checked = back_table_errors(text, rounds, page.endswith(".zh-CN.md"))
                self.assertEqual(errors, [])
                # LayerNorm's 2 shapes x 13 rows, softmax's 7 x 8, bfloat16's 71 cells.
                self.assertEqual(checked, 26 + 56 + 43)

    def test_a_changed_cell_and_a_missing_run_are_seen(self):
        rounds = back_rounds()
        with open(os.path.join(REPO, BACK_PAGES[0]), encoding="utf-8") as f:
            text = f.read()
        old = "105.2 us [105.0-105.4 us], **0.88**"
        self.assertIn(old, text)
        errors, _ = back_table_errors(text.replace(old, "104.2 us [105.0-105.4 us], **0.88**"),
                                      rounds, False)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("back/step9_ahead at 32768 x 1024", errors[0])
        errors, _ = back_table_errors(text.replace("20261204T152900Z-sm", "20261204T152900Z-xx"),
                                      rounds, False)
        self.assertTrue(errors, errors)
        self.assertIn("back/step10_softmax at 32768 x 1024: no rows of run 20261204T152900Z-xx",
                      errors[0])
        # The bar's ratio too: the copy's time over the program's.
        errors, _ = back_table_errors(text.replace("79.0 us [78.8-79.5 us], 0.58",
                                                   "79.0 us [78.8-79.5 us], 0.68"), rounds, False)
        self.assertEqual(len(errors), 1, errors)

    def test_run_moves_whole_run_ids_only(self):
        text = "`step0_thread`, run 20261204T152900Z-ln and 20261204T152900Z-lnx, 20261204T152900Z"
        self.assertEqual(back_tables.moved(text, "20261204T152900Z-ln", "20261210T090000Z-ln"),
                         "`step0_thread`, run 20261210T090000Z-ln and 20261204T152900Z-lnx, "
                         "20261204T152900Z")
        self.assertEqual(back_tables.moved(text, "20261204T152900Z", "20261210T090000Z"),
                         "`step0_thread`, run 20261204T152900Z-ln and 20261204T152900Z-lnx, "
                         "20261210T090000Z")
        self.assertEqual(back_tables.moved(text, "a", "b"), text)
        with contextlib.redirect_stderr(io.StringIO()):
            for bad in (["--write", "--run", "a=b"], ["--write", "--run", "="],
                        ["--run", "20261204T152900Z-ln=20261210T090000Z-ln"]):
                self.assertEqual(back_tables.main(bad), 2, bad)

    def test_write_fills_each_cell_from_its_run_and_keeps_the_bold(self):
        # what part 3's next run needs: tools/back_tables.py --write
        rounds = back_rounds()
        for page, cells in ((BACK_PAGES[0], ("105.2 us [105.0-105.4 us], **0.88**",
                                             "79.0 us [78.8-79.5 us], 0.58")),
                            (BACK_PAGES[1], ("105.2 微秒 [105.0-105.4 微秒]，**0.88**",))):
            with open(os.path.join(REPO, page), encoding="utf-8") as f:
                text = f.read()
            broken = text
            for cell in cells:
                self.assertEqual(text.count(cell), 1, cell)
                broken = broken.replace(cell, "1.0 us [1.0-1.0 us], **0.11**" if "**" in cell
                                        else "1.0 us [1.0-1.0 us], 0.11")
            chinese = page.endswith(".zh-CN.md")
            fixed, changed = back_tables.filled(broken, rounds, chinese)
            self.assertEqual(changed, len(cells))
            self.assertEqual(fixed, text)
            self.assertEqual(back_tables.filled(text, rounds, chinese), (text, 0))
        self.assertEqual(back_tables.main(["--run", "a=b"]), 2)   # --run goes with --write


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("claims", verbosity=1))
