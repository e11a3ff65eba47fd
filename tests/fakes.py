"""What the script tests share, so that no test module carries its own copy:
fake step programs (executables that stand in for stepN_*/run and
baseline_cub/run on a machine without a GPU; each test module writes its own
program text) and the fixture results file tests/plots/fixture.csv."""
import csv
import io
import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "tools"))
import schema  # noqa: E402

FIXTURE_RESULTS = os.path.join(TESTS, "plots", "fixture.csv")


def write_executable(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def fake_repo(top, programs, text):
    """TOP/root with PROGRAM/run = text for each program directory; returns the root."""
    root = os.path.join(top, "root")
    for name in programs:
        write_executable(os.path.join(root, name, "run"), text)
    return root


def fixture_rows():
    """The fixture results file's rows, as dicts of text."""
    with open(FIXTURE_RESULTS, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fixture_row(step, n):
    return [r for r in fixture_rows() if r["step"] == step and int(r["n"]) == n][-1]


def csv_text(rows):
    """Rows (dicts) as a results file in the schema's column order."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=schema.RESULT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
