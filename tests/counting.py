"""The one test runner of the Python suites: runs a module's unittest cases
and prints "<label>: N passed, N failed[, N skipped]" as the last line, the
line tests/run_tests.sh and CI read."""
import sys
import unittest


class CountingResult(unittest.TextTestResult):
    """TextTestResult keeps failures and skips but does not count passes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


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
    sys.stdout.flush()
    print(summary)
    return 1 if failed else 0
