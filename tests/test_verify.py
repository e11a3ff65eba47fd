#!/usr/bin/env python3
"""CPU tests for tools/verify.py (make verify): profile and bench of the
programs named, on the fakes of tests/fakes.py (ncu and PyTorch included).
No GPU needed. Run: python3 tests/test_verify.py
"""
import os
import re
import sys
import unittest

from fakes import REPO, ROW_STEP_OPS, ScriptTest, make_ncu, make_torch_python


class VerifyTest(ScriptTest):
    """tools/verify.py (make verify): profile and bench of the programs named
    on the fakes (the grader has its own tests), this run's files apart, the
    rows merged, a table last."""

    def test_verify_one_part_2_program(self):
        self.add_rows_programs()
        for name, op in ROW_STEP_OPS.items():
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{op};\n")
        bindir = make_ncu(self.top)
        python = make_torch_python(self.top)
        verify_dir = os.path.join(self.top, "verify")
        proc = self.run_script(os.path.join(REPO, "tools", "verify.py"),
                               ["--root", self.root, "--only", "rows/step5_layernorm",
                                "--out-dir", self.out, "--verify-dir", verify_dir,
                                "--torch-python", python, "--skip", "grade"],
                               PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                               FAKE_NCU_LOG=os.path.join(self.top, "ncu.log"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(sorted(os.listdir(verify_dir)),
                         ["bench.log", "h200-rows-bench.log", "h200-rows-profile.csv",
                          "h200-rows.csv", "profile-rows-32768x1024.log", "summary.json",
                          "summary.txt"])
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["h200-rows-bench.log", "h200-rows-profile.csv", "h200-rows.csv"])
        lines = proc.stdout.splitlines()
        # It says what ran: a skipped grade is not reported as graded.
        self.assertEqual(lines[-1], "verify: PASS: profiled and timed (grade skipped)")
        self.assertIn("rows/step5_layernorm: shape, median us, GB/s, share of its bar, "
                      "vs previous, vs PyTorch, vs torch.compile", lines)
        self.assertTrue(any(re.match(r"  32768 x 1024 \| [\d.]+ \| \d+ \| \d+% \| — \| "
                                     r"[\d.]+x (win|tie|loss) \| [\d.]+x (win|tie|loss)$", l)
                            for l in lines), lines)
        # The make targets it needs: the programs, and the grader's twin.
        proc = self.run_script(os.path.join(REPO, "tools", "verify.py"),
                               ["--root", self.root, "--only", "rows/step5_layernorm",
                                "--targets"])
        self.assertEqual(proc.stdout.split(),
                         ["rows/step5_layernorm/run", "rows/step0_thread/run",
                          "rows/baseline_copy/run", "step9_singlepass/run",
                          "build/monitored/rows/step5_layernorm/run"])

    def test_check_jobs_reaches_the_bench_only_when_given(self):
        """--check-jobs N goes to bench.py's command, whose round 1 then
        makes the named program's checks first; without it, no such flag."""
        def bench_command(*extra):
            verify_dir = os.path.join(self.top, "verify")
            proc = self.run_script(os.path.join(REPO, "tools", "verify.py"),
                                   ["--root", self.root, "--only", "step10_c", "--out-dir",
                                    self.out, "--verify-dir", verify_dir, "--rounds", "1",
                                    "--skip", "grade,profile", *extra])
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            # Its first line names the command, the second its exit.
            lines = [l for l in proc.stdout.splitlines() if l.startswith("verify: bench: ")]
            return lines[0].split()
        command = bench_command("--check-jobs", "3")
        self.assertEqual(command[command.index("--check-jobs") + 1], "3")
        checks = [step for _, step, argv, _, _ in self.processes()
                  if argv[0] == "--runs" and "/checks-" in argv[1]]
        self.assertEqual(checks, ["step10_c"])   # the program named, not its comparisons
        os.remove(self.log)
        self.assertNotIn("--check-jobs", bench_command())
        self.assertFalse([argv for _, _, argv, _, _ in self.processes()
                          if argv[0] == "--runs" and "/checks-" in argv[1]])

    def test_checks_from_reaches_the_bench(self):
        """--checks-from FILE (round 1's checks made by an earlier call,
        bench.py --checks-only) goes to bench.py, whose round 1 then times
        the program named without its checks and makes none first."""
        path = os.path.join(self.top, "checks.json")
        proc = self.run_script(os.path.join(REPO, "tools", "bench.py"),
                               ["--root", self.root, "--only", "step10_c", "--rounds", "1",
                                "--checks-only", path])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        os.remove(self.log)
        proc = self.run_script(os.path.join(REPO, "tools", "verify.py"),
                               ["--root", self.root, "--only", "step10_c", "--out-dir", self.out,
                                "--verify-dir", os.path.join(self.top, "verify"), "--rounds",
                                "1", "--skip", "grade,profile", "--checks-from", path])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # Its first line names the command, the second its exit.
        command = [l for l in proc.stdout.splitlines() if l.startswith("verify: bench: ")][0].split()
        self.assertEqual(command[command.index("--checks-from") + 1], path)
        [(_, _, _, _, held)] = [p for p in self.processes() if p[1] == "step10_c"]
        self.assertTrue(held and all(words[-1] == "--no-verify" for words in held), held)


class WhatRanTest(unittest.TestCase):
    def test_the_pass_line_names_what_ran(self):
        import verify   # tools/ is on sys.path: fakes puts it there
        self.assertEqual(verify.what_ran([]), "graded, profiled and timed")
        self.assertEqual(verify.what_ran(["grade", "profile"]), "timed (grade, profile skipped)")
        self.assertEqual(verify.what_ran(["bench", "grade", "profile"]),
                         "nothing run (grade, profile, bench skipped)")


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("verify", verbosity=1))
