"""grade_report.py: the grader's checks written as JUnit XML or as Gradescope's
results.json, for CI systems and course tools.

    write_junit(reports, path, gpu="")
    write_gradescope(reports, path, gpu="")

`reports` is the list tools/grade.py builds. Only attributes are read, so any
objects with the same shape will do (the tests pass plain stand-ins):
    report.name, report.outcomes, report.program (optional)
    outcome.case, outcome.ok, outcome.skipped, outcome.code, outcome.reason
    case.kind, case.label (the check's command line, after its sanitizer tool)
An outcome is skipped if `skipped` is true, failed if not ok and not skipped,
and passed otherwise, the same rule as grade.py's Report.

JUnit: one <testsuite> per program, one <testcase> per check (classname = the
check's kind, name = its command line), <failure message="reason"> or
<skipped message="reason"> inside it. The attributes follow the JUnit XML
schema most CI tools read (Jenkins' junit-10.xsd, which pytest also tests
against): name, tests, failures and errors on every <testsuite>, name on every
<testcase>; classname and skipped are written too.

Gradescope: the results.json format documented at
    https://gradescope-autograders.readthedocs.io/en/latest/specs/
("Output format" and "Test case status"). Every check is one test worth one
point: score 1 and status "passed", or score 0 and status "failed". A check
with points of its own (outcome.score and outcome.max_score: grade.py's
speed check) is worth those, and its output is its measurement. A skipped
check (compute-sanitizer not installed, say) is listed with score 0 of
max_score 0, so it neither adds nor costs a point, and its output says why it
was skipped. The top-level score is the sum of the tests' scores.

Both files are written to a temporary file in the same folder and moved into
place with os.replace, so a reader sees the old file or the whole new one.
Standard library only; Python 3.9 or newer. Does not import grade.py.
"""
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

# XML 1.0 cannot hold these characters at all, escaped or not (a program's
# output may carry an ANSI colour escape, say); they are written as \xNN.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def status(outcome):
    """passed, failed or skipped: grade.py's rule."""
    if outcome.skipped:
        return SKIPPED
    return PASSED if outcome.ok else FAILED


def label(outcome):
    """The check's command line (case.label). A skipped sanitizer check has no
    arguments, so its label is "memcheck: "; the trailing ": " is dropped."""
    text = str(outcome.case.label).strip().rstrip(":").rstrip()
    return text or str(outcome.case.kind)


def counts(report):
    """{passed, failed, skipped}: the number of checks in each state."""
    found = {PASSED: 0, FAILED: 0, SKIPPED: 0}
    for outcome in report.outcomes:
        found[status(outcome)] += 1
    return found


def _xml_text(value):
    return _NOT_XML.sub(lambda m: "\\x%02x" % ord(m.group(0)), str(value))


def _one_line(value):
    return " ".join(str(value).split())


def _write_atomic(path, data):
    """Writes bytes to path through a temporary file in the same folder."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                    suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o644)     # mkstemp makes it 0600; a results file is read by others
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


# ------------------------------------------------------------------ JUnit XML

def junit_tree(reports, gpu=""):
    """The <testsuites> element of the reports."""
    root = ET.Element("testsuites", name="grade")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in reports:
        found = counts(report)
        suite_counts = {"tests": len(report.outcomes), "failures": found[FAILED],
                        "errors": 0, "skipped": found[SKIPPED]}
        suite = ET.SubElement(root, "testsuite", name=_xml_text(report.name),
                              **{key: str(value) for key, value in suite_counts.items()})
        properties = []
        if gpu:
            properties.append(("gpu", gpu))
        program = getattr(report, "program", "")
        if program:
            properties.append(("program", program))
        if getattr(report, "nondeterministic", False):   # step_deterministic = 0 (part 3)
            properties.append(("deterministic", "0"))
        if properties:   # before the test cases, as the Ant schema orders them
            holder = ET.SubElement(suite, "properties")
            for name, value in properties:
                ET.SubElement(holder, "property", name=name, value=_xml_text(value))
        for outcome in report.outcomes:
            case = ET.SubElement(suite, "testcase", classname=_xml_text(outcome.case.kind),
                                 name=_xml_text(label(outcome)))
            state = status(outcome)
            if state == FAILED:
                failure = ET.SubElement(case, "failure", message=_xml_text(outcome.reason),
                                        type=_xml_text(f"exit {outcome.code}"))
                failure.text = _xml_text(f"{label(outcome)}\nexit status: {outcome.code}\n"
                                         f"{outcome.reason}\n")
            elif state == SKIPPED:
                ET.SubElement(case, "skipped", message=_xml_text(outcome.reason))
            elif outcome.reason:   # a passed check that measured something (speed)
                ET.SubElement(case, "system-out").text = _xml_text(outcome.reason)
        for key, value in suite_counts.items():
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    return root


def write_junit(reports, path, gpu=""):
    """Writes the reports to path as JUnit XML (UTF-8, with an XML declaration)."""
    root = junit_tree(reports, gpu)
    ET.indent(root)
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
    _write_atomic(path, (text + "\n").encode("utf-8"))


# ------------------------------------------------------------------ Gradescope

def summary(reports, gpu=""):
    """One line: each program's verdict, then the GPU."""
    parts = []
    for report in reports:
        found = counts(report)
        graded = found[PASSED] + found[FAILED]
        verdict = "PASS" if not found[FAILED] else "FAIL"
        text = f"{report.name}: {verdict}, {found[PASSED]} of {graded} checks passed"
        if found[SKIPPED]:
            text += f", {found[SKIPPED]} skipped"
        if getattr(report, "nondeterministic", False):
            text += ", declares itself not deterministic"
        parts.append(text)
    line = "; ".join(parts) if parts else "no program graded"
    if gpu:
        line += f" (GPU: {gpu})"
    return _one_line(line)


def points(outcome):
    """(score, max_score): the check's own where it has them (the speed check,
    the instructor's points and credit rule), else 1 or 0 of 1."""
    most = getattr(outcome, "max_score", None)
    if most is None:
        return (1 if status(outcome) == PASSED else 0), 1
    return getattr(outcome, "score", 0) or 0, most


def gradescope_results(reports, gpu=""):
    """The results.json object of the reports."""
    tests = []
    several = len(reports) > 1
    for report in reports:
        for outcome in report.outcomes:
            name = f"{report.name}: {label(outcome)}" if several else label(outcome)
            state = status(outcome)
            if state == SKIPPED:
                test = {"name": f"(skipped) {name}", "score": 0, "max_score": 0,
                        "status": PASSED,
                        "output": f"Skipped, not scored: {outcome.reason}"}
            elif state == PASSED:
                test = {"name": name, "score": points(outcome)[0], "max_score": points(outcome)[1],
                        "status": PASSED, "output": outcome.reason or "passed"}
            else:
                test = {"name": name, "score": points(outcome)[0], "max_score": points(outcome)[1],
                        "status": FAILED,
                        "output": f"{outcome.reason}\nexit status: {outcome.code}"}
            test["tags"] = [str(outcome.case.kind)]
            tests.append(test)
    return {"score": sum(test["score"] for test in tests),
            "output": summary(reports, gpu),
            "output_format": "text",
            "visibility": "visible",
            "stdout_visibility": "visible",
            "tests": tests}


def write_json(data, path):
    """Writes any JSON object (grade.py's --summary) the same way."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    _write_atomic(path, (text + "\n").encode("utf-8"))


def write_gradescope(reports, path, gpu=""):
    """Writes the reports to path as Gradescope's results.json."""
    text = json.dumps(gradescope_results(reports, gpu), indent=2, ensure_ascii=False)
    _write_atomic(path, (text + "\n").encode("utf-8"))
