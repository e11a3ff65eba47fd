#!/usr/bin/env python3
"""Tests for tools/grade_report.py: the grader's checks as JUnit XML and as
Gradescope's results.json. No GPU needed: the reports are stand-ins built here.

validate_junit(path) and validate_gradescope(path) check a written file and
return its problems (an empty list when there are none); the tests run them on
the files grade_report.py writes and on hand-written broken files, which they
must reject.

Run: python3 tests/test_grade_report.py. The last line printed is
`grade_report: N passed, N failed`.
"""
import ast
import json
import os
import shutil
import stat
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from types import SimpleNamespace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import grade_report  # noqa: E402

GPU = "NVIDIA H200"
COUNTS = ("tests", "failures", "errors", "skipped")
RESULT_TAGS = {"failure": "failures", "error": "errors", "skipped": "skipped"}
VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
# Gradescope's test fields this repository always writes, with their JSON types.
TEST_FIELDS = {"name": str, "score": (int, float), "max_score": (int, float),
               "status": str, "output": str}


# ------------------------------------------------------------------ validators

def _count(value):
    """A non-negative integer attribute, or None."""
    if value is None or not value.isdigit():
        return None
    return int(value)


def _junit_suite(suite, where, problems):
    """Checks one <testsuite>; returns the counts found in it."""
    for key in ("name", "tests", "failures", "errors"):    # required by junit-10.xsd
        if suite.get(key) is None:
            problems.append(f"{where}: no {key} attribute")
    found = dict.fromkeys(COUNTS, 0)
    seen_case = False
    for child in suite:
        if child.tag == "properties":
            if seen_case:
                problems.append(f"{where}: <properties> after a <testcase>")
            for prop in child:
                if prop.tag != "property" or prop.get("name") is None or prop.get("value") is None:
                    problems.append(f"{where}: a property needs a name and a value")
        elif child.tag == "testcase":
            seen_case = True
            found["tests"] += 1
            name = child.get("name")
            case = f"{where}, testcase {name!r}"
            if not name:
                problems.append(f"{where}: a testcase without a name")
            if child.get("classname") is None:
                problems.append(f"{case}: no classname")
            results = [c for c in child if c.tag in RESULT_TAGS]
            if len(results) > 1:
                problems.append(f"{case}: more than one of failure, error, skipped")
            for result in results:
                found[RESULT_TAGS[result.tag]] += 1
                if result.get("message") is None:
                    problems.append(f"{case}: <{result.tag}> without a message")
            for other in child:
                if other.tag not in RESULT_TAGS and other.tag not in ("system-out", "system-err"):
                    problems.append(f"{case}: unexpected <{other.tag}>")
        elif child.tag not in ("system-out", "system-err"):
            problems.append(f"{where}: unexpected <{child.tag}>")
    for key in COUNTS:
        declared = suite.get(key)
        if declared is None:
            continue                     # reported above if required; skipped is optional
        if _count(declared) is None:
            problems.append(f"{where}: {key}={declared!r} is not a count")
        elif int(declared) != found[key]:
            problems.append(f"{where}: {key}={declared} but it holds {found[key]}")
    return found


def validate_junit(path):
    """The problems of a JUnit XML file: well-formed UTF-8 XML with a
    declaration; a <testsuites> root holding <testsuite> elements; the
    attributes junit-10.xsd requires (name, tests, failures, errors on a suite,
    name on a test case) plus classname, which the Ant schema requires; at
    most one failure, error or skipped per test case, each with a message;
    properties before the test cases; and counts that match what the file
    holds, on every suite and on the root."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        return [f"cannot read {path}: {err.strerror}"]
    problems = []
    if not data.startswith(b"<?xml"):
        problems.append("no XML declaration")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("not UTF-8")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        return problems + [f"not well-formed XML: {err}"]
    if root.tag != "testsuites":
        return problems + [f"the root is <{root.tag}>, not <testsuites>"]
    totals = dict.fromkeys(COUNTS, 0)
    for number, suite in enumerate(root, 1):
        if suite.tag != "testsuite":
            problems.append(f"<testsuites> holds a <{suite.tag}>")
            continue
        where = f"testsuite {suite.get('name') or number}"
        found = _junit_suite(suite, where, problems)
        for key in COUNTS:
            totals[key] += found[key]
    for key in COUNTS:
        declared = root.get(key)
        if declared is None:
            problems.append(f"<testsuites>: no {key} attribute")
        elif _count(declared) is None:
            problems.append(f"<testsuites>: {key}={declared!r} is not a count")
        elif int(declared) != totals[key]:
            problems.append(f"<testsuites>: {key}={declared} but the suites hold {totals[key]}")
    return problems


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_gradescope(path):
    """The problems of a results.json: a JSON object whose `tests` is a list of
    objects, each with name, score, max_score, status and output of the right
    types, status "passed" or "failed", 0 <= score <= max_score; a numeric
    top-level score equal to the sum of the tests' scores; a string output;
    and visibility values Gradescope knows."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as err:
        return [f"cannot read {path}: {err.strerror}"]
    except ValueError as err:
        return [f"not JSON: {err}"]
    if not isinstance(data, dict):
        return ["the top level is not an object"]
    problems = []
    tests = data.get("tests")
    if not isinstance(tests, list):
        problems.append("tests is missing or not a list")
        tests = []
    total = 0
    for number, test in enumerate(tests, 1):
        if not isinstance(test, dict):
            problems.append(f"test {number} is not an object")
            continue
        where = f"test {number} ({test.get('name', '?')!r})"
        for key, kind in TEST_FIELDS.items():
            if key not in test:
                problems.append(f"{where}: no {key}")
            elif not isinstance(test[key], kind) or isinstance(test[key], bool):
                problems.append(f"{where}: {key} is a {type(test[key]).__name__}")
        if "status" in test and test["status"] not in ("passed", "failed"):
            problems.append(f"{where}: status {test['status']!r} is not passed or failed")
        score, most = test.get("score"), test.get("max_score")
        if _number(score) and _number(most):
            if not 0 <= score <= most:
                problems.append(f"{where}: score {score} is not between 0 and {most}")
        if _number(score):
            total += score
        if "visibility" in test and test["visibility"] not in VISIBILITY:
            problems.append(f"{where}: visibility {test['visibility']!r}")
    if not _number(data.get("score")):
        problems.append("no numeric top-level score")
    elif data["score"] != total:
        problems.append(f"top-level score {data['score']} but the tests add up to {total}")
    if not isinstance(data.get("output", ""), str):
        problems.append("output is not a string")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in VISIBILITY:
            problems.append(f"{key} {data[key]!r} is not one of {', '.join(VISIBILITY)}")
    return problems


# ------------------------------------------------------------------ stand-ins

def case(kind, args, tool=""):
    """A stand-in for grade.Case: its label is the command line, after the tool."""
    text = " ".join(args)
    return SimpleNamespace(kind=kind, args=args, tool=tool,
                           label=f"{tool}: {text}" if tool else text)


def passed(kind, *args):
    return SimpleNamespace(case=case(kind, list(args)), ok=True, skipped=False, code=0, reason="")


def failed(kind, args, reason, code=1):
    return SimpleNamespace(case=case(kind, list(args)), ok=False, skipped=False, code=code,
                           reason=reason)


def skipped(tool, reason="compute-sanitizer not found"):
    return SimpleNamespace(case=case(tool, [], tool), ok=False, skipped=True, code=None,
                           reason=reason)


def report(name, outcomes, program=None):
    return SimpleNamespace(name=name, program=program or f"{name}/run", outcomes=outcomes)


# A reason with every character XML and JSON must carry safely.
ODD_REASON = 'FAIL n=5: sum "4" <expected 5> & off by 1 \u2014 \u6c42\u548c\u9519\u8bef\nsecond line'
ODD_ARGS = ["--check", "-n", "5", "--fill", "exact", "--note", "a \"b\" <c> & \u00e9"]


def fake_reports():
    """A program that passes, one with two failed checks, one whose sanitizer
    checks were skipped."""
    good = report("step3_idle", [passed("exact", "--check", "-n", "1", "--fill", "exact"),
                                 passed("offset", "--check", "-n", "4097", "--offset", "3"),
                                 passed("timed", "-n", "4097", "--reps", "25")])
    bad = report("drop_tail", [passed("exact", "--check", "-n", "1"),
                               failed("exact", ODD_ARGS, ODD_REASON),
                               failed("large", ["--check", "-n", "2147483647"],
                                      "no answer in 900 s: a hang?", code="timeout"),
                               passed("fill", "--check", "-n", "100", "--fill", "ones")])
    mine = report("mine", [passed("exact", "--check", "-n", "7"),
                           skipped("memcheck"), skipped("racecheck"), skipped("synccheck")])
    return [good, bad, mine]


def status_of(outcome):
    if outcome.skipped:
        return "skipped"
    return "passed" if outcome.ok else "failed"


class Files(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="grade-report-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def write_text(self, name, text):
        with open(self.path(name), "w", encoding="utf-8") as handle:
            handle.write(text)
        return self.path(name)


# ------------------------------------------------------------------ JUnit

class JunitTests(Files):
    def setUp(self):
        super().setUp()
        self.reports = fake_reports()
        self.file = self.path("report.xml")
        grade_report.write_junit(self.reports, self.file, GPU)
        self.root = ET.parse(self.file).getroot()

    def suites(self):
        return self.root.findall("testsuite")

    def test_the_file_passes_the_validator(self):
        self.assertEqual(validate_junit(self.file), [])

    def test_declaration_and_encoding(self):
        with open(self.file, "rb") as handle:
            first = handle.readline()
        self.assertEqual(first, b'<?xml version="1.0" encoding="UTF-8"?>\n')

    def test_root_is_testsuites_with_one_suite_per_program(self):
        self.assertEqual(self.root.tag, "testsuites")
        self.assertEqual([s.get("name") for s in self.suites()],
                         ["step3_idle", "drop_tail", "mine"])

    def test_counts_add_up(self):
        totals = dict.fromkeys(COUNTS, 0)
        for suite, rep in zip(self.suites(), self.reports):
            states = [status_of(o) for o in rep.outcomes]
            want = {"tests": len(states), "failures": states.count("failed"), "errors": 0,
                    "skipped": states.count("skipped")}
            self.assertEqual({k: int(suite.get(k)) for k in COUNTS}, want, suite.get("name"))
            self.assertEqual(len(suite.findall("testcase")), len(states))
            for key in COUNTS:
                totals[key] += want[key]
        self.assertEqual({k: int(self.root.get(k)) for k in COUNTS}, totals)
        self.assertEqual(totals, {"tests": 11, "failures": 2, "errors": 0, "skipped": 3})

    def test_testcase_is_kind_and_command_line(self):
        suite = self.suites()[0]
        got = [(c.get("classname"), c.get("name")) for c in suite.findall("testcase")]
        self.assertEqual(got, [(o.case.kind, o.case.label) for o in self.reports[0].outcomes])

    def test_each_failed_check_has_its_reason(self):
        suite = self.suites()[1]
        failures = [(c.get("name"), c.find("failure")) for c in suite.findall("testcase")
                    if c.find("failure") is not None]
        want = [o for o in self.reports[1].outcomes if status_of(o) == "failed"]
        self.assertEqual(len(failures), 2)
        for (name, failure), outcome in zip(failures, want):
            self.assertEqual(name, outcome.case.label)
            self.assertEqual(failure.get("message"), outcome.reason)
            self.assertIn(outcome.reason, failure.text)
            self.assertIn(f"exit status: {outcome.code}", failure.text)

    def test_passed_checks_have_no_result_element(self):
        for testcase in self.suites()[0].findall("testcase"):
            self.assertEqual(list(testcase), [])

    def test_skipped_checks(self):
        cases = self.suites()[2].findall("testcase")
        marks = [c.find("skipped") for c in cases]
        self.assertIsNone(marks[0])
        self.assertEqual([c.get("name") for c in cases[1:]], ["memcheck", "racecheck", "synccheck"])
        for mark in marks[1:]:
            self.assertEqual(mark.get("message"), "compute-sanitizer not found")

    def test_special_characters_survive(self):
        testcase = self.suites()[1].findall("testcase")[1]
        self.assertEqual(testcase.get("name"), " ".join(ODD_ARGS))
        self.assertEqual(testcase.find("failure").get("message"), ODD_REASON)
        self.assertIn("\n", testcase.find("failure").get("message"))

    def test_gpu_and_program_are_properties(self):
        for suite, rep in zip(self.suites(), self.reports):
            props = {p.get("name"): p.get("value") for p in suite.iter("property")}
            self.assertEqual(props, {"gpu": GPU, "program": rep.program})
            self.assertEqual(list(suite)[0].tag, "properties")

    def test_no_gpu_no_gpu_property(self):
        grade_report.write_junit(self.reports, self.file)
        names = [p.get("name") for p in ET.parse(self.file).getroot().iter("property")]
        self.assertNotIn("gpu", names)
        self.assertEqual(validate_junit(self.file), [])

    def test_control_characters_are_escaped(self):
        # An ANSI colour escape in a program's output cannot go into XML 1.0 as it is.
        rep = report("colour", [failed("memcheck", ["-n", "5"], "\x1b[31mInvalid read\x1b[0m\x00")])
        grade_report.write_junit([rep], self.file)
        self.assertEqual(validate_junit(self.file), [])
        message = ET.parse(self.file).getroot().find(".//failure").get("message")
        self.assertEqual(message, "\\x1b[31mInvalid read\\x1b[0m\\x00")

    def test_no_reports_is_an_empty_valid_file(self):
        grade_report.write_junit([], self.file)
        self.assertEqual(validate_junit(self.file), [])
        self.assertEqual(ET.parse(self.file).getroot().get("tests"), "0")


# ------------------------------------------------------------------ Gradescope

class GradescopeTests(Files):
    def setUp(self):
        super().setUp()
        self.reports = fake_reports()
        self.file = self.path("results.json")
        grade_report.write_gradescope(self.reports, self.file, GPU)
        with open(self.file, encoding="utf-8") as handle:
            self.data = json.load(handle)
        self.outcomes = [o for r in self.reports for o in r.outcomes]

    def test_the_file_passes_the_validator(self):
        self.assertEqual(validate_gradescope(self.file), [])

    def test_one_test_per_check_in_order(self):
        self.assertEqual(len(self.data["tests"]), len(self.outcomes))
        for test, outcome in zip(self.data["tests"], self.outcomes):
            self.assertIn(outcome.case.label.rstrip(": "), test["name"])
            self.assertEqual(test["tags"], [outcome.case.kind])

    def test_required_keys_and_types(self):
        for test in self.data["tests"]:
            for key, kind in TEST_FIELDS.items():
                self.assertIsInstance(test[key], kind, (test["name"], key))
            self.assertIn(test["status"], ("passed", "failed"))

    def test_score_is_the_passed_checks(self):
        states = [status_of(o) for o in self.outcomes]
        self.assertEqual(self.data["score"], states.count("passed"))
        self.assertEqual(self.data["score"], sum(t["score"] for t in self.data["tests"]))
        self.assertEqual(sum(t["max_score"] for t in self.data["tests"]),
                         states.count("passed") + states.count("failed"))

    def test_failed_checks(self):
        tests = [t for t in self.data["tests"] if t["status"] == "failed"]
        self.assertEqual([(t["score"], t["max_score"]) for t in tests], [(0, 1), (0, 1)])
        self.assertEqual(tests[0]["name"], "drop_tail: " + " ".join(ODD_ARGS))
        self.assertTrue(tests[0]["output"].startswith(ODD_REASON))
        self.assertIn("exit status: timeout", tests[1]["output"])

    def test_skipped_checks_score_nothing_and_say_why(self):
        tests = [t for t, o in zip(self.data["tests"], self.outcomes) if o.skipped]
        self.assertEqual(len(tests), 3)
        for test in tests:
            self.assertEqual((test["score"], test["max_score"]), (0, 0))
            self.assertIn("skipped", test["name"])
            self.assertIn("compute-sanitizer not found", test["output"])

    def test_visible_and_plain_text(self):
        self.assertEqual(self.data["visibility"], "visible")
        self.assertEqual(self.data["stdout_visibility"], "visible")
        self.assertEqual(self.data["output_format"], "text")

    def test_summary_is_one_line_with_the_gpu(self):
        output = self.data["output"]
        self.assertNotIn("\n", output)
        self.assertIn(GPU, output)
        self.assertIn("step3_idle: PASS, 3 of 3 checks passed", output)
        self.assertIn("drop_tail: FAIL, 2 of 4 checks passed", output)
        self.assertIn("mine: PASS, 1 of 1 checks passed, 3 skipped", output)

    def test_one_program_names_are_its_command_lines(self):
        grade_report.write_gradescope(self.reports[:1], self.file)
        with open(self.file, encoding="utf-8") as handle:
            data = json.load(handle)
        self.assertEqual([t["name"] for t in data["tests"]],
                         [o.case.label for o in self.reports[0].outcomes])
        self.assertNotIn("GPU", data["output"])
        self.assertEqual(validate_gradescope(self.file), [])

    def test_special_characters_survive(self):
        reasons = [t["output"] for t in self.data["tests"] if t["status"] == "failed"]
        self.assertIn(ODD_REASON, reasons[0])
        with open(self.file, encoding="utf-8") as handle:
            self.assertIn("\u6c42\u548c", handle.read())     # written as UTF-8, not \u escapes


# ------------------------------------------------------------------ the validators

GOOD_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" errors="0" skipped="1">
  <testsuite name="p" tests="3" failures="1" errors="0" skipped="1">
    <properties><property name="gpu" value="g" /></properties>
    <testcase classname="exact" name="--check -n 1" />
    <testcase classname="exact" name="--check -n 2"><failure message="bad">bad</failure></testcase>
    <testcase classname="memcheck" name="memcheck"><skipped message="no tool" /></testcase>
  </testsuite>
</testsuites>
"""

GOOD_GRADESCOPE = {
    "score": 1, "output": "p: FAIL", "visibility": "visible", "stdout_visibility": "visible",
    "tests": [{"name": "a", "score": 1, "max_score": 1, "status": "passed", "output": "passed"},
              {"name": "b", "score": 0, "max_score": 1, "status": "failed", "output": "bad"},
              {"name": "c", "score": 0, "max_score": 0, "status": "passed", "output": "skipped"}]}


class ValidatorTests(Files):
    def junit(self, text):
        return validate_junit(self.write_text("r.xml", text))

    def gradescope(self, change):
        data = json.loads(json.dumps(GOOD_GRADESCOPE))
        change(data)
        return validate_gradescope(self.write_text("results.json", json.dumps(data)))

    def assertRejected(self, problems, word):
        self.assertTrue(problems, "accepted")
        self.assertTrue(any(word in p for p in problems), problems)

    # JUnit
    def test_good_junit_passes(self):
        self.assertEqual(self.junit(GOOD_JUNIT), [])

    def test_junit_wrong_suite_count(self):
        self.assertRejected(self.junit(GOOD_JUNIT.replace('name="p" tests="3"', 'name="p" tests="4"')),
                            "tests=4")

    def test_junit_wrong_failure_count(self):
        text = GOOD_JUNIT.replace('tests="3" failures="1" errors="0" skipped="1">\n    <prop',
                                  'tests="3" failures="0" errors="0" skipped="1">\n    <prop')
        self.assertRejected(self.junit(text), "failures=0")

    def test_junit_wrong_root_count(self):
        text = GOOD_JUNIT.replace('<testsuites tests="3"', '<testsuites tests="2"')
        self.assertRejected(self.junit(text), "<testsuites>: tests=2")

    def test_junit_root_must_be_testsuites(self):
        start, end = GOOD_JUNIT.index("  <testsuite "), GOOD_JUNIT.index("</testsuites>")
        text = '<?xml version="1.0" encoding="UTF-8"?>\n' + GOOD_JUNIT[start:end]
        self.assertRejected(self.junit(text), "not <testsuites>")

    def test_junit_testcase_needs_a_name(self):
        self.assertRejected(self.junit(GOOD_JUNIT.replace(' name="--check -n 1"', "")),
                            "without a name")

    def test_junit_testcase_needs_a_classname(self):
        self.assertRejected(self.junit(GOOD_JUNIT.replace('classname="exact" ', "", 1)),
                            "no classname")

    def test_junit_suite_needs_errors(self):
        text = GOOD_JUNIT.replace('failures="1" errors="0" skipped="1">\n    <prop',
                                  'failures="1" skipped="1">\n    <prop')
        self.assertRejected(self.junit(text), "no errors attribute")

    def test_junit_failure_needs_a_message(self):
        self.assertRejected(self.junit(GOOD_JUNIT.replace(' message="bad"', "")),
                            "without a message")

    def test_junit_properties_come_first(self):
        props = '    <properties><property name="gpu" value="g" /></properties>\n'
        text = GOOD_JUNIT.replace(props, "").replace("  </testsuite>", props + "  </testsuite>")
        self.assertRejected(self.junit(text), "after a <testcase>")

    def test_junit_not_xml(self):
        self.assertRejected(self.junit(GOOD_JUNIT.replace("</testsuites>", "")), "not well-formed")

    def test_junit_needs_a_declaration(self):
        self.assertRejected(self.junit(GOOD_JUNIT.split("\n", 1)[1]), "declaration")

    # Gradescope
    def test_good_gradescope_passes(self):
        self.assertEqual(self.gradescope(lambda d: None), [])

    def test_gradescope_missing_max_score(self):
        self.assertRejected(self.gradescope(lambda d: d["tests"][0].pop("max_score")),
                            "no max_score")

    def test_gradescope_status_ok(self):
        self.assertRejected(self.gradescope(lambda d: d["tests"][0].update(status="ok")),
                            "'ok' is not passed or failed")

    def test_gradescope_score_as_text(self):
        self.assertRejected(self.gradescope(lambda d: d["tests"][0].update(score="1")),
                            "score is a str")

    def test_gradescope_score_as_boolean(self):
        self.assertRejected(self.gradescope(lambda d: d["tests"][0].update(score=True)),
                            "score is a bool")

    def test_gradescope_score_above_max(self):
        self.assertRejected(self.gradescope(lambda d: d["tests"][1].update(score=2)),
                            "not between")

    def test_gradescope_total_must_add_up(self):
        self.assertRejected(self.gradescope(lambda d: d.update(score=3)), "add up to 1")

    def test_gradescope_needs_a_total(self):
        self.assertRejected(self.gradescope(lambda d: d.pop("score")), "top-level score")

    def test_gradescope_tests_must_be_a_list(self):
        self.assertRejected(self.gradescope(lambda d: d.update(tests={})), "not a list")

    def test_gradescope_unknown_visibility(self):
        self.assertRejected(self.gradescope(lambda d: d.update(stdout_visibility="public")),
                            "stdout_visibility")

    def test_gradescope_not_json(self):
        self.assertRejected(validate_gradescope(self.write_text("results.json", "{'score': 1}")),
                            "not JSON")


# ------------------------------------------------------------------ writing

class WriteTests(Files):
    def test_no_temporary_file_left(self):
        grade_report.write_junit(fake_reports(), self.path("r.xml"))
        grade_report.write_gradescope(fake_reports(), self.path("results.json"))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["r.xml", "results.json"])

    def test_replaces_an_old_file(self):
        target = self.write_text("results.json", "old")
        grade_report.write_gradescope(fake_reports(), target)
        self.assertEqual(validate_gradescope(target), [])

    def test_a_failed_write_keeps_the_old_file(self):
        class Broken:
            kind = "exact"

            @property
            def label(self):
                raise RuntimeError("no label")
        rep = report("p", [SimpleNamespace(case=Broken(), ok=True, skipped=False, code=0,
                                           reason="")])
        for name, write in (("r.xml", grade_report.write_junit),
                            ("results.json", grade_report.write_gradescope)):
            target = self.write_text(name, "old")
            with self.assertRaises(RuntimeError):
                write([rep], target)
            with open(target, encoding="utf-8") as handle:
                self.assertEqual(handle.read(), "old")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["r.xml", "results.json"])

    def test_readable_by_others(self):
        target = self.path("r.xml")
        grade_report.write_junit(fake_reports(), target)
        self.assertTrue(os.stat(target).st_mode & stat.S_IROTH)


class ContractTests(Files):
    def test_the_real_grader_classes_work(self):
        # The stand-ins above match grade.py's dataclasses; check with the real ones.
        import grade
        rep = grade.Report("build/graded/alice/run", "alice", [
            grade.Outcome(grade.Case("exact", ["--check", "-n", "5"]), True, code=0),
            grade.Outcome(grade.Case("memcheck", ["--check", "-n", "5"], "memcheck"), False,
                          code=99, reason="Invalid __global__ read of size 4"),
            grade.Outcome(grade.Case("racecheck", [], "racecheck"), False, skipped=True,
                          reason="compute-sanitizer not found")])
        junit, results = self.path("r.xml"), self.path("results.json")
        grade_report.write_junit([rep], junit, GPU)
        grade_report.write_gradescope([rep], results, GPU)
        self.assertEqual(validate_junit(junit), [])
        self.assertEqual(validate_gradescope(results), [])
        names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
        self.assertEqual(names, ["--check -n 5", "memcheck: --check -n 5", "racecheck"])
        with open(results, encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["score"], 1)

    def test_does_not_import_grade(self):
        with open(grade_report.__file__, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module)
        self.assertNotIn("grade", imported)
        self.assertLessEqual(imported, {"json", "os", "re", "tempfile", "xml.etree.ElementTree"})


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("grade_report", verbosity=1))
