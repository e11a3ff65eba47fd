#!/usr/bin/env python3
"""The fakes of tests/fakes.py against the harness they stand in for: the
options of print_usage, the --version and --gpu-info fields, the CSV header,
and a --runs file's lines each run and each written. The bench, profile,
verify and make-target suites trust them. Run: python3 tests/test_fakes.py
"""
import os
import re
import subprocess
import sys

from fakes import (BACK_OPS, BACK_PROGRAMS, BACK_SOFTMAX_PROGRAM, FAKE_ARCH,
                   FAKE_TOOLCHAIN, HARNESS_COLUMNS, PROFILE, REPO, ScriptTest, bench, clean_env,
                   fake_hash, gpu_info_keys, harness_options, load, make_root, row_bytes,
                   version_fields)

profile = load(PROFILE, "reduce_profile")


class FakeProgramTest(ScriptTest):
    """The fakes answer as the harness does, as far as its sources say:
    the options of print_usage, the --version and --gpu-info fields, the
    CSV header, and a --runs file's lines each run and each written."""

    def setUp(self):
        super().setUp()
        self.add_rows_programs()

    def call(self, name, *args):
        return subprocess.run([os.path.join(self.root, name, "run"), *args], capture_output=True,
                              text=True, env=clean_env(), cwd=self.top, timeout=60)

    def test_options_are_the_harness_options(self):
        part_only = {"-n": "step0_a", "--cpu-sums": "step0_a"}
        part_only.update((option, "rows/step0_thread") for option in (
            "--rows", "--cols", "--y-offset", "--gamma-offset", "--beta-offset", "--mask",
            "--check-every"))
        csv_path = os.path.join(self.top, "o.csv")
        for option, valued in harness_options().items():
            for name in ("step0_a", "rows/step0_thread"):
                args = [option] + (["1"] if valued else [])
                if option != "--csv":
                    args += ["--csv", csv_path]
                proc = self.call(name, *args)
                unknown = f"error: unknown option '{option}'" in proc.stderr
                self.assertEqual(unknown, part_only.get(option, name) != name,
                                 (name, option, proc.stderr))
        proc = self.call("step0_a", "--rows", "4")
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, "error: unknown option '--rows': the number of floats is -n N "
                             "(try --help)\n"))
        proc = self.call("rows/step0_thread", "--n=5")
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, "error: unknown option '--n': the shape is --rows R and --cols C "
                             "(try --help)\n"))

    def test_version_and_gpu_info_fields(self):
        for name, label in (("step0_a", "step0_a"), ("rows/baseline_copy", "rows/copy")):
            line = self.call(name, "--version").stdout
            self.assertEqual(line, f"{label} code_hash={fake_hash(label)} git_rev=v"
                                   f"{os.path.basename(name)[:5]} arch={FAKE_ARCH} "
                                   f"toolchain={FAKE_TOOLCHAIN}\n")
            self.assertEqual(re.findall(r" ([a-z_]+)=", line), version_fields())
            self.assertRegex(line.strip(), profile.VERSION_RE)
            info = self.call(name, "--gpu-info")
            self.assertEqual(info.returncode, 0, info.stderr)
            self.assertEqual([l.split("=")[0] for l in info.stdout.splitlines()], gpu_info_keys())
        self.assertEqual(self.call("step0_a", "--gpu-info").stdout.splitlines()[0],
                         "gpu=NVIDIA H200")

    def test_runs_file_one_row_per_line(self):
        lines = os.path.join(self.top, "runs.txt")
        with open(lines, "w") as f:
            f.write("--rows 4 --cols 256 --reps 2\n\n# a comment\n--rows 8 --cols 1000 "
                    "--no-verify\n")
        csv_path = os.path.join(self.top, "r.csv")
        proc = self.call("rows/step5_layernorm", "--runs", lines, "--csv", csv_path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stdout.splitlines() if l.startswith("==")],
                         ["== run --rows 4 --cols 256 --reps 2",
                          "== run --rows 8 --cols 1000 --no-verify"])
        self.assertEqual(proc.stdout.count("check    PASS"), 1)   # --no-verify: no checks
        with open(csv_path) as f:
            self.assertEqual(tuple(f.readline().strip().split(",")), HARNESS_COLUMNS)
        rows = bench.read_rows(csv_path)
        self.assertEqual([(r["step"], r["rows"], r["cols"], r["n"], r["op"], r["reps"])
                          for r in rows],
                         [("rows/step5_layernorm", "4", "256", "1024", "layernorm", "2"),
                          ("rows/step5_layernorm", "8", "1000", "8000", "layernorm", "20")])
        self.assertEqual([float(r["bytes"]) for r in rows],
                         [row_bytes("layernorm", 4, 256), row_bytes("layernorm", 8, 1000)])
        self.assertEqual({(r["arch"], r["toolchain"]) for r in rows},
                         {(FAKE_ARCH, FAKE_TOOLCHAIN)})
        with open(lines, "a") as f:
            f.write("--runs x\n")
        proc = self.call("rows/step5_layernorm", "--runs", lines)
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr, f"error: --runs {lines} line 5: --checks and --runs "
                                      "cannot nest\n")

    def test_part_1_rows_leave_the_row_columns_empty(self):
        csv_path = os.path.join(self.top, "r.csv")
        self.assertEqual(self.call("baseline_cub", "-n", "1000", "--csv", csv_path).returncode, 0)
        [row] = bench.read_rows(csv_path)
        self.assertEqual((row["step"], row["n"], row["rows"], row["cols"], row["op"],
                          row["bytes"]), ("cub", "1000", "", "", "", "4000"))

    def test_part_3_rows_name_the_drivers_ops(self):
        """Part 3's fakes, softmax's step among them, write the op column as
        common/back_ref.h names it (BACK_OP_NAME, BACK_SOFTMAX_NAME,
        BACK_COPY3_NAME), with its bytes (row_bytes: back_bytes(),
        softmax_back_bytes() and back_copy3_bytes() of common/back_ref.c)."""
        with open(os.path.join(REPO, "common", "back_ref.h")) as f:
            names = dict(re.findall(r'^#define (BACK_\w*NAME) "([a-z0-9_]+)"', f.read(), re.M))
        want = {"back/step0_thread": names["BACK_OP_NAME"],
                BACK_SOFTMAX_PROGRAM: names["BACK_SOFTMAX_NAME"],
                "back/baseline_copy3": names["BACK_COPY3_NAME"]}
        self.assertEqual(want[BACK_SOFTMAX_PROGRAM], "softmax_backward")
        self.assertEqual(BACK_OPS["back/copy3"], want["back/baseline_copy3"])
        make_root(self.top, BACK_PROGRAMS + (BACK_SOFTMAX_PROGRAM,))
        for name, op in want.items():
            csv_path = os.path.join(self.top, name.replace("/", "-") + ".csv")
            proc = self.call(name, "--rows", "3", "--cols", "5", "--csv", csv_path)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            [row] = bench.read_rows(csv_path)
            self.assertEqual((row["op"], float(row["bytes"])), (op, row_bytes(op, 3, 5)), name)
        # softmax_back_bytes(3, 5): y and dy read, dx written.
        self.assertEqual(row_bytes("softmax_backward", 3, 5), 180.0)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("fakes", verbosity=1))
