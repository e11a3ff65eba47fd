#!/usr/bin/env python3
"""Tests for tools/cli.py: how a tool's main() ends. A failure is one line on
stderr and an exit code, never a traceback, unless TOOLS_DEBUG asks for it;
and the tools end that way, not by wrappers of their own.

Run: python3 tests/test_cli.py. The last line printed is
`tool_main: N passed, N failed`.
"""
import contextlib
import glob
import io
import os
import re
import sys
import tempfile
import unittest
from unittest import mock

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import cli  # noqa: E402


class OwnError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def ended(work, **options):
    """(exit code, stderr) of cli.guarded over work."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.guarded("tool", work, **options)
    return code, err.getvalue()


def raising(error):
    def work():
        raise error
    return work


class GuardTests(unittest.TestCase):

    def setUp(self):
        patcher = mock.patch.dict(os.environ)
        patcher.start()
        self.addCleanup(patcher.stop)
        for name in (cli.DEBUG, "PLOT_DEBUG"):
            os.environ.pop(name, None)

    def test_a_run_that_ends_gives_its_code(self):
        self.assertEqual(ended(lambda: 0), (0, ""))
        self.assertEqual(ended(lambda: 3), (3, ""))

    def test_the_tools_own_error_is_its_line_and_its_code(self):
        self.assertEqual(ended(raising(OwnError(3, "no CUDA device")), known=(OwnError,)),
                         (3, "tool: no CUDA device\n"))

    def test_with_a_code_the_error_is_one_error_line(self):
        self.assertEqual(ended(raising(OwnError(9, "bad\n   row  7")), known=(OwnError,), code=2),
                         (2, "tool: error: bad row 7\n"))
        missing = FileNotFoundError(2, "No such file or directory", "a.csv")
        self.assertEqual(ended(raising(missing), code=2),
                         (2, "tool: error: No such file or directory: a.csv\n"))

    def test_a_file_error_without_a_code_is_internal(self):
        code, err = ended(raising(FileNotFoundError(2, "No such file", "a.csv")), internal=4)
        self.assertEqual(code, 4)
        self.assertRegex(err, r"^tool: internal error: FileNotFoundError: .*TOOLS_DEBUG=1.*\n$")

    def test_ctrl_c_is_130(self):
        self.assertEqual(ended(raising(KeyboardInterrupt())), (130, "tool: interrupted\n"))

    def test_an_internal_error_is_one_line_unless_debugging(self):
        code, err = ended(raising(ValueError("x\ny")))
        self.assertEqual((code, err.count("\n")), (cli.EXIT_FAILED, 1))
        self.assertIn("tool: internal error: ValueError: x y", err)
        os.environ[cli.DEBUG] = "1"
        with self.assertRaises(ValueError):
            ended(raising(ValueError("x")))
        del os.environ[cli.DEBUG]
        os.environ["PLOT_DEBUG"] = "1"
        with self.assertRaises(ValueError):
            ended(raising(ValueError("x")), debug="PLOT_DEBUG")
        self.assertEqual(ended(raising(ValueError("x")))[0], cli.EXIT_FAILED)


class OutputPathTests(unittest.TestCase):
    """cli.output_problem: what every tool asks of a path it writes after
    its work (a folder it fills, made if missing; or a file)."""

    def test_each_problem_and_none(self):
        with tempfile.TemporaryDirectory() as tmp:
            a_file = os.path.join(tmp, "f.csv")
            open(a_file, "w").close()
            self.assertEqual(cli.output_problem(None), "")
            self.assertEqual(cli.output_problem(a_file), "")
            self.assertEqual(cli.output_problem(os.path.join(tmp, "new.csv")), "")
            self.assertEqual(cli.output_problem(tmp), "a folder, not a file")
            self.assertEqual(cli.output_problem(""), "an empty path")
            self.assertIn("does not exist", cli.output_problem(os.path.join(tmp, "no", "x.csv")))
            self.assertEqual(cli.output_problem(tmp, folder=True), "")
            self.assertEqual(cli.output_problem(os.path.join(tmp, "new"), folder=True), "")
            self.assertEqual(cli.output_problem(a_file, folder=True), "a file, not a folder")


class ToolsTests(unittest.TestCase):

    def test_the_tools_mains_end_through_it(self):
        """No tool keeps a try/except wrapper of its own in main()."""
        for name in ("accuracy", "bench", "diagrams", "docs", "plot", "profile"):
            with open(os.path.join(REPO, "tools", f"{name}.py"), encoding="utf-8") as handle:
                text = handle.read()
            body = re.search(r"^def main\(argv=None\):\n((?:    .*\n|\n)*)", text, re.M)
            with self.subTest(name):
                self.assertIsNotNone(body)
                self.assertIn("cli.guarded(", body.group(1))
                self.assertNotIn("except", body.group(1))


# A tool's exit code named with a number of its own: EXIT_X = 2, or a tuple of them.
OWN_NUMBER = re.compile(r"^(EXIT_\w+(?:, EXIT_\w+)*) = (\d+(?:, \d+)*)\s*(#.*)?$", re.M)


class ExitCodeTests(unittest.TestCase):
    """One set of exit codes (tools/cli.py): the tools take theirs from it."""

    def test_no_tool_numbers_its_own(self):
        own = []
        for path in sorted(glob.glob(os.path.join(REPO, "tools", "*.py"))):
            if os.path.basename(path) == "cli.py":
                continue
            with open(path, encoding="utf-8") as handle:
                own += [f"{os.path.basename(path)}: {m.group(0)}"
                        for m in OWN_NUMBER.finditer(handle.read())]
        self.assertEqual(own, [])

    def test_the_check_sees_a_number_of_its_own(self):
        self.assertIsNotNone(OWN_NUMBER.search("x = 1\nEXIT_USAGE, EXIT_DEVICE = 2, 3\n"))
        self.assertIsNone(OWN_NUMBER.search("EXIT_USAGE = cli.EXIT_USAGE\n"))

    def test_the_tools_codes_are_clis(self):
        import bench
        import grade
        import grade_class
        import profile as profile_tool
        import publish
        import steps
        self.assertEqual((bench.EXIT_FAILED, bench.EXIT_USAGE, bench.EXIT_DEVICE), (1, 2, 3))
        self.assertEqual((grade.EXIT_FAILED, grade.EXIT_USAGE, grade.EXIT_DEVICE), (1, 2, 3))
        self.assertEqual((profile_tool.EXIT_NCU, profile_tool.EXIT_PERM),
                         (cli.EXIT_NEEDS, cli.EXIT_PERMISSION))
        self.assertEqual((publish.EXIT_USAGE, steps.EXIT_USAGE), (cli.EXIT_USAGE,) * 2)
        # grade_source.sh's "does not build", which grade_class.py reads, is cli's 4.
        with open(os.path.join(REPO, "tools", "grade_source.sh"), encoding="utf-8") as handle:
            shell = re.search(r"EXIT_NO_BUILD=(\d+)", handle.read())
        self.assertEqual(int(shell.group(1)), cli.EXIT_NEEDS)
        self.assertEqual(grade_class.EXIT_NO_BUILD, cli.EXIT_NEEDS)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("tool_main", verbosity=1))
