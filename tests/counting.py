"""The one test runner of the Python suites: runs a module's unittest cases
and prints "<label>: N passed, N failed[, N skipped]" as the last line, the
line tests/run_tests.sh and CI read.

Before it, one line per skipped test, "skipped: CAUSE: detail (test)": the
cause is the skip reason up to its first colon ("no cuobjdump"), and
tests/run_tests.sh counts the skips of every suite by it. A failed assertion
is shown as its file, line and message; an unexpected exception keeps its
traceback."""
import os
import sys
import traceback
import unittest


class CountingResult(unittest.TextTestResult):
    """TextTestResult keeps failures and skips but does not count passes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def _exc_info_to_string(self, err, test):
        """A failed assertion: where, and its message; the frames of unittest
        itself say nothing about what went wrong. Errors keep the traceback."""
        kind, value, tb = err
        if not issubclass(kind, test.failureException):
            return super()._exc_info_to_string(err, test)
        frames = [f for f in traceback.extract_tb(tb) if "unittest" not in f.filename.split(os.sep)]
        where = f"{os.path.relpath(frames[-1].filename)}:{frames[-1].lineno}: " if frames else ""
        return f"{where}{value}\n"


def skip_lines(skipped):
    """One "skipped: reason (test)" line per skipped test."""
    return [f"skipped: {reason} ({test.id().split('.', 1)[-1]})" for test, reason in skipped]


def run_module(label, module_name="__main__", verbosity=1):
    """Runs every test in the module; returns the exit status (1 if any failed)."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[module_name])
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=verbosity,
                                     resultclass=CountingResult)
    result = runner.run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    summary = f"{label}: {result.passed} passed, {failed} failed"
    if result.skipped:
        summary += f", {len(result.skipped)} skipped"
    for line in skip_lines(result.skipped):
        print(line)
    sys.stdout.flush()
    print(summary)
    return 1 if failed else 0
