#!/usr/bin/env python3
"""grade_class.py [--out DIR] [--timeout MIN] [grader options] SUBMISSIONS:
grade a whole class into one table and one chart, as a leaderboard shows it.

SUBMISSIONS holds a folder per student with its reduce.cu (part 1), rows.cu
(part 2) or back.cu (part 3, which has no speed check yet). Each is graded by tools/grade_source.sh, one submission at a time,
so that no two share the GPU and a speed round never overlaps another's
checks: built with this repository's harness (the student's file only) and
the watch on GPU work, then the grader with the options given (--speed,
--speed-at, --quick, ...), under a time limit per submission (--timeout,
minutes, build included). While it runs it holds the lock file GRADE_LOCK
(default /tmp/grade.lock, the one docs/grading.md gives to flock), so that
graders started the same way wait for it.

Writes in DIR (default reports/):
  <name>.txt, <name>.xml, <name>.json   what the grader printed, its JUnit
                                       report and its --summary, per student
  class.csv, class.md                  one row per student, sorted: every
                                       check passed first, by speed ratio;
                                       then by checks failed; then the
                                       submissions that were not graded
  class.png (--chinese: class.zh-CN.png too)   the same as a chart, where
                                       matplotlib imports; --redraw DIR draws it
                                       again from DIR's class.csv and class.md
                                       (as make plot draws the results charts)
A submission that cannot be graded (it does not build, runs out of time, or
stops the grader: a program that cannot even say what it is) gets a row that
says why, and the class goes on; the table is written after every student,
so a class stopped halfway keeps what it graded. SIGTERM or Ctrl-C stops the
grading running then, with every process it started.
Exit status: 0 every submission was graded or found ungradable, 2 usage
error (a wrong speed target stops it before the first student), 3 no CUDA
device, 130 stopped.
"""
import argparse
import contextlib
import csv
import fcntl
import io
import json
import os
import signal
import subprocess
import sys
import time

import charts  # matplotlib loaded
import cli  # the exit codes
import grade
from grade import ratio_text  # 1.82x, 0.0043x: as the grader writes them

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# grade_source.sh's "does not build" is the tools' 4: what the run needs failed.
EXIT_USAGE, EXIT_DEVICE, EXIT_NO_BUILD = cli.EXIT_USAGE, cli.EXIT_DEVICE, cli.EXIT_NEEDS
SOURCES = ("reduce.cu", "rows.cu", "back.cu")   # part 1, 2 or 3
COLUMNS = ("rank", "submission", "verdict", "checks_passed", "checks", "gpu_work", "ratio",
           "ratio_lo", "ratio_hi", "target", "target_verdict", "points", "max_points", "seconds",
           "note")
CHILD = {}   # the grading running now, for the signal handler


class ClassError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def submissions(folder):
    """[(name, source path or None, why not)] for every folder in SUBMISSIONS."""
    if not os.path.isdir(folder):
        raise ClassError(EXIT_USAGE, f"{folder}: no such folder (one folder per student, "
                                     "each with its reduce.cu, rows.cu or back.cu)")
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isdir(path) or name.startswith("."):
            continue
        sources = [s for s in SOURCES if os.path.isfile(os.path.join(path, s))]
        if len(sources) == 1:
            found.append((name, os.path.join(path, sources[0]), ""))
        else:
            found.append((name, None, "no reduce.cu, rows.cu or back.cu" if not sources
                          else f"{' and '.join(sources)}: give one"))
    if not found:
        raise ClassError(EXIT_USAGE, f"{folder} has no submission folders")
    return found


def end_group(proc, grace_s=15):
    """Stop a grading and everything it started: SIGTERM first, so that the
    grader kills its checks (each in a session of its own, out of this
    group's reach), then SIGKILL whatever is left of the group."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return proc.wait()
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        proc.poll()   # the leader reaped once it ends (a zombie still counts)
        try:
            os.killpg(proc.pid, 0)   # anyone left in the group?
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return proc.wait()


def grade_one(name, source, out, options, timeout_min):
    """The row of one submission (a dict of COLUMNS), from its grading."""
    row = {"submission": name, "verdict": "not graded", "note": ""}
    files = {k: os.path.join(out, f"{name}.{k}") for k in ("txt", "xml", "json")}
    for path in files.values():
        if os.path.exists(path):
            os.remove(path)
    cmd = ["bash", os.path.join(REPO, "tools", "grade_source.sh"), "--summary",
           os.path.abspath(files["json"]), "--junit", os.path.abspath(files["xml"]),
           *options, os.path.abspath(source)]
    start = time.monotonic()
    with open(files["txt"], "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        CHILD["proc"] = proc
        try:
            code = proc.wait(timeout=timeout_min * 60)
        except subprocess.TimeoutExpired:
            code = None
        finally:   # whatever it started goes with it
            end_group(proc)
            CHILD.pop("proc", None)
    row["seconds"] = round(time.monotonic() - start)
    if code is None:
        row["note"] = f"ran out of its {timeout_min:g} minutes"
        return row
    if code == EXIT_NO_BUILD:
        row["verdict"], row["note"] = "does not build", f"compiler errors in {name}.txt"
        return row
    if code in (EXIT_USAGE, EXIT_DEVICE):
        # Its own doing (a program that cannot even say what it is), or the
        # machine's: the row says which line ended it, and the class goes on.
        with open(files["txt"], errors="replace") as log:
            lines = [line.strip() for line in log if line.strip()]
        row["note"] = f"the grader stopped (exit {code}): {lines[-1] if lines else ''}"
        return row
    try:
        with open(files["json"]) as handle:
            graded = json.load(handle)["programs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        row["note"] = f"the grader stopped (exit {code}): see {name}.txt"
        return row
    return dict(row, **summary_row(graded))


def summary_row(graded):
    """The columns a grader's --summary gives one program."""
    speed = graded.get("speed") or {}
    work = graded.get("gpu_work") or {}
    speed_failed = 1 if speed and not speed.get("passed") else 0
    checks = graded["checks"] - (1 if speed else 0)
    passed = checks - (graded["failed"] - speed_failed)
    row = {"verdict": graded["verdict"], "checks_passed": passed, "checks": checks,
           "gpu_work": work.get("state", ""),
           "points": passed + (speed.get("score") or 0),
           "max_points": checks + (speed.get("max_score") or 0)}
    if speed.get("ratio") is not None:
        row.update(ratio=speed["ratio"], ratio_lo=speed["ratio_lo"], ratio_hi=speed["ratio_hi"],
                   factor=speed["factor"],
                   target=f"{speed['target']} ({speed['reference']} at {speed['at']})",
                   target_verdict=speed["verdict"])
    elif speed:
        row["target"] = speed.get("line", "")
    if graded["failed"] - speed_failed:
        first = (graded.get("first_failures") or [""])[0]
        row["note"] = f"{graded['failed'] - speed_failed} checks failed; first: {first}"
    elif speed and not speed.get("passed"):
        row["note"] = ("every check passed; the speed target was missed" if "ratio" in speed
                       else f"every check passed; the speed was {speed.get('line', '')}")
    if graded.get("declares_nondeterministic"):   # part 3's step_deterministic = 0
        row["note"] = "; ".join(n for n in (row.get("note", ""),
                                            "declares itself not deterministic") if n)
    return row


def sort_rows(rows):
    """Every check right first, fastest first; then by checks failed; then the rest."""
    def key(row):
        if "checks" not in row:
            return (2, 0, row["submission"])
        wrong = row["checks"] - row["checks_passed"]
        if wrong:
            return (1, wrong, row["submission"])
        return (0, -(row.get("ratio") or 0), row["submission"])
    rows = sorted(rows, key=key)
    for k, row in enumerate(rows, 1):
        row["rank"] = k
    return rows


def speed_cell(row):
    if row.get("ratio") is None:
        return ""
    return (f"{ratio_text(row['ratio'])} ({ratio_text(row['ratio_lo'])[:-1]}-"
            f"{ratio_text(row['ratio_hi'])})")


def write_tables(rows, out, gpu_line):
    with open(os.path.join(out, "class.csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in COLUMNS})
    lines = [f"# Class results{gpu_line}", "",
             "| rank | submission | verdict | checks passed | GPU work | speed (rounds) | target | points | s | note |",
             "| --: | --- | --- | --: | --- | --- | --- | --: | --: | --- |"]
    for row in rows:
        checks = f"{row['checks_passed']} of {row['checks']}" if "checks" in row else ""
        points = f"{row['points']:g} of {row['max_points']:g}" if "points" in row else ""
        target = f"{row.get('target', '')} {row.get('target_verdict', '')}".strip().replace("|", "\\|")
        note = row.get("note", "").replace("|", "\\|")
        lines.append(f"| {row['rank']} | {row['submission']} | {row['verdict']} | {checks} | "
                     f"{row.get('gpu_work', '')} | {speed_cell(row)} | {target} | {points} | "
                     f"{row.get('seconds', '')} | {note} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "class.md"), "w") as handle:
        handle.write(text)
    return text


def draw_chart(rows, out, title, chinese=False):
    """class.png: each submission's speed ratio (whiskers: its slowest and
    fastest round) or, without a speed target, its share of checks passed."""
    mpl = charts.load_matplotlib()
    if mpl is None:
        print("grade_class: class.png not drawn: matplotlib does not import (make venv)")
        return []
    plt = mpl.plt
    with_speed = any(row.get("ratio") is not None for row in rows)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(rows)))
    colors = {"PASS": "#2e7d32", "FAIL": "#c62828"}
    for k, row in enumerate(rows):
        y = len(rows) - 1 - k
        if with_speed and row.get("ratio") is not None:
            value = row["ratio"]
            err = [[value - row["ratio_lo"]], [row["ratio_hi"] - value]]
        elif "checks" in row and not with_speed:
            value, err = row["checks_passed"] / max(1, row["checks"]), None
        else:   # no bar: not graded, or (on a speed chart) not timed
            text = (f"not timed: {row['checks'] - row['checks_passed']} checks failed"
                    if "checks" in row else f"{row['verdict']}: {row.get('note', '')}")
            ax.text(0.01, y, text, va="center", fontsize=8, transform=ax.get_yaxis_transform())
            continue
        wrong = row["checks"] - row["checks_passed"]
        color = "#ef6c00" if not wrong and row["verdict"] == "FAIL" else colors[
            "FAIL" if wrong else "PASS"]
        ax.barh(y, value, color=color, hatch="//" if wrong else None, edgecolor="white",
                xerr=err, capsize=4)
        label = ratio_text(value) if with_speed and row.get("ratio") is not None else f"{value:.0%}"
        if wrong:
            label += f"  ({wrong} checks failed)"
        ax.text(value, y, "  " + label, va="center", fontsize=8)
    factor = next((row["factor"] for row in rows if row.get("factor")), None)
    targeted = with_speed and factor
    if targeted:
        # The label sits above the top bar, inside the frame (set_ylim below
        # leaves it the room), not on the frame's top edge.
        ax.axvline(factor, color="black", linestyle="--", linewidth=1)
        ax.text(factor, len(rows) - 0.5, f" target {factor:g}x", fontsize=8, va="bottom")
    ax.set_yticks(range(len(rows)), [row["submission"] for row in reversed(rows)])
    ax.set_xlabel("speed ratio: the submission's GB/s over the reference's\n(median of rounds; "
                  "whiskers: slowest and fastest round)" if with_speed else
                  "share of the grader's checks passed")
    from matplotlib.patches import Patch
    legend = [Patch(color=colors["PASS"], label="every check passed" +
                    (", target met" if with_speed else "")),
              Patch(facecolor=colors["FAIL"], hatch="//", edgecolor="white",
                    label="checks failed")]
    if with_speed:
        legend.insert(1, Patch(color="#ef6c00", label="every check passed, target missed"))
    ax.legend(handles=legend, loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(-0.6, len(rows) + (0.3 if targeted else -0.2))
    ax.margins(x=0.25)
    fig.tight_layout()
    written = [os.path.join(out, "class.png")]
    fig.savefig(written[0], dpi=120)
    if chinese:
        import chart_zh
        chart_zh.enabled = True
        data = chart_zh.chinese_png(fig, relayout=True, dpi=120)
        if data:
            written.append(os.path.join(out, "class.zh-CN.png"))
            with open(written[-1], "wb") as handle:
                handle.write(data)
    plt.close(fig)
    return written


def read_table(folder):
    """The rows and the title class.csv and class.md in folder hold (--redraw)."""
    try:
        with open(os.path.join(folder, "class.csv"), newline="") as handle:
            rows = list(csv.DictReader(handle))
        with open(os.path.join(folder, "class.md")) as handle:
            heading = handle.readline().lstrip("# ").strip()
    except OSError as err:
        raise ClassError(EXIT_USAGE, f"--redraw {folder}: {err.strerror}: {err.filename}") from None
    for row in rows:
        for key in ("rank", "checks_passed", "checks", "seconds"):
            if row.get(key):
                row[key] = int(row[key])
        for key in ("ratio", "ratio_lo", "ratio_hi", "points", "max_points"):
            row[key] = float(row[key]) if row.get(key) else None
        if row["ratio"] is not None:
            row["factor"] = grade.parse_speed(row["target"].split(" (")[0]).factor
        for key in [k for k, v in row.items() if v in ("", None)]:
            del row[key]
    return rows, heading


def chart_title(rows, heading):
    target = next((row["target"] for row in rows if row.get("target")), "")
    return heading + (f": speed against {target}" if target else "")


def open_lock(path):
    """The lock file, opened for flock (read-only where another account made it)."""
    for mode in ("a", "r"):
        try:
            return open(path, mode)
        except PermissionError:
            continue
        except OSError as err:
            raise ClassError(EXIT_USAGE, f"the lock {path}: {err.strerror}") from None
    raise ClassError(EXIT_USAGE, f"the lock {path} cannot be opened (GRADE_LOCK= names another)")


def stop_grading(signum, frame):
    """SIGTERM: the grading running now goes too, then the class stops."""
    proc = CHILD.get("proc")
    if proc is not None:   # grade_one's finally then ends the group (end_group)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    raise KeyboardInterrupt


def check_grade_options(options):
    """The options every grading gets, read as grade.py reads them: a bad one
    stops the class once (exit 2), not each student's grading."""
    with contextlib.redirect_stderr(io.StringIO()) as said:
        try:
            graded = grade.parse_args(options + ["SUBMISSION"])
        except SystemExit:
            last = said.getvalue().strip().splitlines()[-1:] or ["a bad option"]
            raise ClassError(EXIT_USAGE, last[0].replace("grade.py: error: ", "")) from None
    if graded.jobs < 1:
        raise ClassError(EXIT_USAGE, "--jobs must be at least 1")
    if graded.speed is not None and not 2 <= graded.speed_rounds <= 100:
        raise ClassError(EXIT_USAGE, "--speed-rounds must be 2 to 100")
    if not graded.speed_points >= 0:   # NaN too
        raise ClassError(EXIT_USAGE, "--speed-points must be 0 or more")


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Grade a folder of submissions into one table.")
    parser.add_argument("submissions", metavar="SUBMISSIONS",
                        help="a folder with one folder per student (with --redraw: a folder "
                             "with a class.csv and class.md to draw again)")
    parser.add_argument("--redraw", action="store_true",
                        help="draw class.png again from the class.csv and class.md there")
    parser.add_argument("--out", default="reports", help="where the reports go (default reports)")
    parser.add_argument("--timeout", type=float, default=30,
                        help="minutes per submission, build included (default 30)")
    parser.add_argument("--chinese", action="store_true", help="also draw class.zh-CN.png")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-sanitizer", action="store_true")
    for flag in ("--jobs", "--op", "--speed", "--speed-at", "--speed-rounds", "--speed-points",
                 "--speed-credit", "--speed-tie"):
        parser.add_argument(flag)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.redraw:
        try:
            rows, heading = read_table(args.submissions)
        except ClassError as err:
            print(f"grade_class: {err}", file=sys.stderr)
            return err.code
        for path in draw_chart(rows, args.submissions, chart_title(rows, heading), args.chinese):
            print(f"grade_class: wrote {path}")
        return 0
    try:
        if args.timeout <= 0:
            raise ClassError(EXIT_USAGE, "--timeout must be more than 0 minutes")
        if args.speed is not None:
            try:
                grade.parse_speed(args.speed)
            except grade.GradeError as err:
                raise ClassError(err.code, str(err)) from None
        found = submissions(args.submissions)
        backward = [name for name, source, _ in found if source and source.endswith("back.cu")]
        if args.speed is not None and backward:
            raise ClassError(EXIT_USAGE, f"--speed: part 3 (back.cu: {', '.join(backward[:3])}"
                                         f"{' ...' if len(backward) > 3 else ''}) has no speed "
                                         "check yet: grade them without SPEED")
        options = [f for f in ("--quick", "--no-sanitizer") if getattr(args, f[2:].replace("-", "_"))]
        if args.op is not None:
            try:
                grade.parse_op(args.op)
            except grade.GradeError as err:
                raise ClassError(err.code, str(err)) from None
        for flag in ("jobs", "op", "speed", "speed_at", "speed_rounds", "speed_points",
                     "speed_credit", "speed_tie"):
            value = getattr(args, flag)
            if value is not None:
                options += ["--" + flag.replace("_", "-"), value]
        check_grade_options(options)
        nogpu = subprocess.run(["bash", os.path.join(REPO, "tools", "need_gpu.sh"), "class"],
                               capture_output=True, text=True)
        if nogpu.returncode != 0:
            raise ClassError(EXIT_DEVICE, (nogpu.stdout or nogpu.stderr).strip())
        os.makedirs(args.out, exist_ok=True)
        lock = open_lock(os.environ.get("GRADE_LOCK", "/tmp/grade.lock"))
        signal.signal(signal.SIGTERM, stop_grading)
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            rows, gpu = [], ""
            for k, (name, source, why_not) in enumerate(found, 1):
                print(f"grade_class: [{k}/{len(found)}] {name}", flush=True)
                if source is None:
                    rows.append({"submission": name, "verdict": "not graded", "note": why_not})
                    continue
                rows.append(grade_one(name, source, args.out, options, args.timeout))
                try:
                    with open(os.path.join(args.out, f"{name}.json")) as handle:
                        gpu = gpu or json.load(handle).get("gpu", "")
                except (OSError, ValueError):
                    pass
                # The table so far, after every student: a stopped class keeps it.
                write_tables(sort_rows([dict(r) for r in rows]), args.out,
                             f" on {gpu}" if gpu else "")
    except ClassError as err:
        print(f"grade_class: {err}", file=sys.stderr)
        return err.code
    except KeyboardInterrupt:
        print("grade_class: stopped; the table so far is in class.md", file=sys.stderr)
        return 130
    rows = sort_rows(rows)
    gpu_line = f" on {gpu}" if gpu else ""
    print(write_tables(rows, args.out, gpu_line), end="")
    for path in draw_chart(rows, args.out, chart_title(rows, f"Class results{gpu_line}"),
                           args.chinese):
        print(f"grade_class: wrote {path}")
    print(f"grade_class: wrote {os.path.join(args.out, 'class.md')} and class.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
