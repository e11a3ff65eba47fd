#!/usr/bin/env python3
"""The GPU suite of `make test`: the grader (tools/grade.py) over every step
program and CUB, and over every broken fixture, each of which must FAIL it.
Each is graded as make check grades it: its twin under build/monitored/,
with the grader's watch on GPU work linked in.

  - every stepN_*/run (the shipped steps and any student's) and
    baseline_cub/run: the full grader; each check counts as one test;
  - every broken fixture (tests/broken/*/ and the mutants of
    tests/broken/mutants.txt, built under build/mutants/): the --quick grader
    must fail it, and one of its failures must be of the kind the fixture
    names ("caught by"); the first such failure is printed;
  - the timed CSV row, and --device out of range.
Without a CUDA device it prints one line and counts itself as skipped, never
as passed. Ends with "gpu: N passed, N failed[, N skipped]". GPU_JOBS sets
how many checks run at once. GPU_PART=sum, GPU_PART=rows or GPU_PART=back runs
one part's programs and fixtures alone (each part's suite fits a 10-minute
call on a lent GPU; `make test` runs parts 1 and 2: part 3 only with
GPU_PART=back, or by name in GPU_ONLY); GPU_ONLY=name,name... only the
programs and fixtures of those names (programs as make bench ONLY= names them:
a folder such as rows/step8_softmax, a label such as cub or rows/copy, sum,
rows or back for a whole part; fixtures by their folder's name, sm_bf16_sum), as
`make test SUITES=gpu ONLY=...` passes them; names that match nothing fail.
"""
import concurrent.futures
import csv
import glob
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import bench  # noqa: E402  (resolve_only: what ONLY= names)
import grade  # noqa: E402

CUB = "baseline_cub/run"
# Bugs a plain timed run cannot show: a race the hardware hides, one that
# appears only above 2^28 floats (the default n is 2^25), and one in part 2's
# path for rows wider than registers and shared memory hold, or in a
# thread-block cluster's (rows past one block's registers; the default
# shape's rows are 1024 wide). A fixture's "caught by" may add the last as
# "/wide": "shape/wide" is caught by a shape check, and not by a plain run.
# "odd" marks a bug seen only at widths that are not a power of two (the
# default 1024 is one). No fixture needs it since a plain LayerNorm run
# checks the centered fill one column fewer too: ln_bf16_one_pass_var, whose
# one-pass variance is exact at 1024 columns, fails there.
# "narrow": a bug in a group smaller than a warp, which only rows of 512 or
# fewer elements get (rows/step24_bf16_narrow); the default is 1024 wide.
# "gpu-work": a fixture whose every answer is right, computed on the host; only
# the grader's watch on the work sees it (common/gpu_work.c).
# "maybe": a part 3 fixture whose bug the hardware may hide (a missing
# fence): reported as caught or not, never counted as failed.
# "det": a program whose values are right and whose bits move between runs:
# a plain timed run compares only its first and last outputs, which may agree.
PLAIN_RUN_CANNOT_SEE = ("racecheck", "large", "wide", "odd", "narrow", "gpu-work", "maybe", "det")
PARTS = {"sum": ("", "reduce.cu"), "rows": ("rows/", "rows.cu"), "back": ("back/", "back.cu")}


def twin(run):
    """The program as the grader builds it, with its watch on GPU work: the
    same object and code hash, under build/monitored/ (make test builds it)."""
    return os.path.join("build", "monitored", run)


# Part 3 is graded in a call of its own (GPU_PART=back, about a minute on
# the H200): a plain run (make test on a GPU machine) keeps to parts 1 and 2.
DEFAULT_PARTS = ("sum", "rows")


def parts():
    """The parts this run covers: [("", "reduce.cu"), ("rows/", "rows.cu")],
    or the one GPU_PART names (back: [("back/", "back.cu")]), or, where
    GPU_ONLY names what to grade and GPU_PART does not, all three (a part 3
    fixture is found by its name alone)."""
    chosen = os.environ.get("GPU_PART", "")
    named = bool(os.environ.get("GPU_ONLY", ""))
    return [p for name, p in PARTS.items()
            if chosen == name or (not chosen and (named or name in DEFAULT_PARTS))]


def part_of(step):
    """"rows/", "back/" or "" for a mutant's step (rows/step2_warp, back/step3_x, step3_idle)."""
    return next((p for p, _ in PARTS.values() if p and step.startswith(p)), "")


def step_programs():
    """Part 1's steps and CUB, then part 2's and part 3's steps and baselines, in step order."""
    found = []
    for part, source in parts():
        dirs = [d for d in glob.glob(part + "step*_*")
                if re.match(r"^step\d+_", os.path.basename(d))
                and os.path.isfile(os.path.join(d, source))]
        dirs.sort(key=lambda d: int(re.match(r"step(\d+)_", os.path.basename(d)).group(1)))
        found += [os.path.join(d, "run") for d in dirs]
        found += sorted(os.path.join(d, "run") for d in glob.glob(part + "baseline_*")
                        if os.path.isfile(os.path.join(d, source)))
    return found


def fixtures():
    """[(run path, what must catch it)] for the hand-written and mutant fixtures."""
    found = []
    covered = [p for p, _ in parts()]
    hand = sorted(glob.glob("tests/broken/*/reduce.cu")) if "" in covered else []
    hand += sorted(glob.glob("tests/broken/rows/*/rows.cu")) if "rows/" in covered else []
    hand += sorted(glob.glob("tests/broken/back/*/back.cu")) if "back/" in covered else []
    for src in hand:
        with open(src) as handle:
            match = re.search(r"^// caught by: (.+)$", handle.read(), re.M)
        found.append((os.path.join(os.path.dirname(src), "run"),
                      match.group(1).strip() if match else "?"))
    with open("tests/broken/mutants.txt") as handle:
        for line in handle:
            fields = [f.strip() for f in line.split("|")]
            if len(fields) >= 4 and not line.startswith("#"):
                part = part_of(fields[1])
                if part not in covered:
                    continue
                found.append((f"build/mutants/{part}{fields[0]}/run", fields[2]))
    return found


def caught_as(outcome, expected):
    """The failure is of the expected kind: its check's kind or its reason says so."""
    token = expected.split("/")[0].lower()
    return token in outcome.case.kind or token in outcome.reason.lower()


def extra_checks(tmp):
    """(label, ok, detail) for what the grader does not cover."""
    results = []
    part1 = "" in [p for p, _ in parts()]
    part2 = "rows/" in [p for p, _ in parts()]
    for program in ("step0_naive/run", CUB) if part1 else ():
        path = os.path.join(tmp, os.path.basename(os.path.dirname(program)) + ".csv")
        proc = subprocess.run([program, "-n", "100003", "--reps", "3", "--warmup", "1",
                               "--csv", path], capture_output=True, text=True)
        rows = []
        if os.path.isfile(path):
            with open(path, newline="") as handle:
                rows = list(csv.DictReader(handle))
        ok = (proc.returncode == 0 and len(rows) == 1 and rows[0]["pass"] == "1"
              and rows[0]["mode"] == "timed" and rows[0]["distinct"] == "1"
              and float(rows[0]["median_us"]) > 0 and len(rows[0]["code_hash"]) == 12)
        results.append((f"timed CSV row of {program}", ok, f"exit {proc.returncode}, rows {rows}"))
    for program in ("rows/step6_registers/run", "rows/baseline_copy/run") if part2 else ():
        path = os.path.join(tmp, program.replace("/", "_") + ".csv")
        proc = subprocess.run([program, "--rows", "1000", "--cols", "1000", "--reps", "3",
                               "--warmup", "1", "--csv", path], capture_output=True, text=True)
        rows = []
        if os.path.isfile(path):
            with open(path, newline="") as handle:
                rows = list(csv.DictReader(handle))
        ok = (proc.returncode == 0 and len(rows) == 1 and rows[0]["pass"] == "1"
              and rows[0]["rows"] == "1000" and rows[0]["cols"] == "1000"
              and rows[0]["op"] in ("layernorm", "copy") and float(rows[0]["bytes"]) >= 8e6
              and float(rows[0]["median_us"]) > 0 and rows[0]["arch"].startswith("sm_"))
        results.append((f"timed CSV row of {program}", ok, f"exit {proc.returncode}, rows {rows}"))
    if not part1:
        return results
    # --runs: many timed runs in one process, one row each (make bench's rounds).
    path = os.path.join(tmp, "runs.csv")
    lines = os.path.join(tmp, "runs.txt")
    with open(lines, "w") as handle:
        handle.write("-n 1000 --reps 2\n# a comment\n-n 4099 --reps 2 --no-verify\n")
    proc = subprocess.run(["step9_singlepass/run", "--runs", lines, "--csv", path],
                          capture_output=True, text=True)
    rows = list(csv.DictReader(open(path, newline=""))) if os.path.isfile(path) else []
    results.append(("--runs: two timed rows", proc.returncode == 0 and
                    [r["n"] for r in rows] == ["1000", "4099"], f"exit {proc.returncode}, {rows}"))
    proc = subprocess.run([CUB, "--check", "-n", "1000", "--device", "99"],
                          capture_output=True, text=True)
    results.append(("--device 99 is a usage error", proc.returncode == 2 and "only" in proc.stderr,
                    f"exit {proc.returncode}: {proc.stderr.strip()}"))
    return results


def chosen(only):
    """GPU_ONLY's names as make bench and make verify read them (bench.py's
    resolve_only: folders, CSV labels such as cub or rows/copy, sum or rows
    for a whole part), and the rest as fixture names (sm_bf16_sum)."""
    folders, fixtures = set(), set()
    for name in only:
        try:
            folders.update(bench.resolve_only(REPO, [name]))
        except bench.BenchError:
            fixtures.add(name)
    return folders, fixtures


def main():
    os.chdir(REPO)
    programs = step_programs()
    broken = fixtures()
    only = [n for n in os.environ.get("GPU_ONLY", "").split(",") if n]
    if only:
        folders, names = chosen(only)
        programs = [p for p in programs if os.path.dirname(p) in folders]
        broken = [(f, e) for f, e in broken if os.path.basename(os.path.dirname(f)) in names]
        if not programs and not broken:
            print(f"gpu: GPU_ONLY={','.join(only)} names no program or fixture")
            print("gpu: 0 passed, 1 failed")
            return 1
    # Asked first: without a device make test builds no broken fixture.
    probe = subprocess.run([CUB, "--check", "-n", "1"], capture_output=True, text=True) \
        if os.access(CUB, os.X_OK) else None
    if probe and probe.returncode == 3 and "no CUDA device" in probe.stderr:
        print(f"gpu: skipped: {probe.stderr.strip().removeprefix('error: ')}")
        print("gpu: 0 passed, 0 failed, 1 skipped")
        return 0
    missing = [p for p in programs + [f for f, _ in broken] for p in (p, twin(p))
               if not os.access(p, os.X_OK)]
    if missing:
        print(f"gpu: not built: {', '.join(missing)} (make test builds them; so does "
              f"make {' '.join(missing)})")
        print("gpu: 0 passed, 1 failed")
        return 1

    jobs = int(os.environ.get("GPU_JOBS", min(16, os.cpu_count() or 1)))
    sanitizer = grade.find_sanitizer()
    fixture_runs = [f for f, _ in broken]
    quick = {f for f, expected in broken if expected != "large"}
    # A fixture whose bug only a sanitizer sees gets the sanitizers; the others
    # need not pay for them (their failures are in the plain checks).
    sanitized = [f for f, expected in broken if expected in grade.SANITIZER_TOOLS]
    plain = [f for f in fixture_runs if f not in sanitized]
    try:
        progress = open(os.environ["GPU_PROGRESS"], "w") if os.environ.get("GPU_PROGRESS") else None
        reports, gpu = grade.grade([twin(p) for p in programs + sanitized], jobs,
                                   quick={twin(f) for f in quick}, sanitizer=sanitizer,
                                   progress=progress)
        more, plain_gpu = grade.grade([twin(f) for f in plain], jobs,
                                      quick={twin(f) for f in quick}, sanitizer=None,
                                      progress=progress)
    except grade.GradeError as err:
        print(f"gpu: the grader stopped: {err}")
        print("gpu: 0 passed, 1 failed")
        return 1
    by_program = {r.program: r for r in reports[len(programs):] + more}
    fixture_runs = [twin(f) for f in fixture_runs]
    gpu = gpu or plain_gpu
    reports = reports[:len(programs)] + [by_program[f] for f in fixture_runs]
    passed = failed = skipped = 0
    which = {"sum": " (part 1 only)", "rows": " (part 2 only)",
             "back": " (part 3 only)"}.get(os.environ.get("GPU_PART", ""), "")
    print(f"gpu: {sum(len(r.outcomes) for r in reports)} checks on {gpu}, "
          f"{len(programs)} programs and {len(broken)} broken fixtures{which}")
    for report in reports[:len(programs)]:
        grade.print_report(report)
        passed += len(report.outcomes) - len(report.failed) - len(report.skipped)
        failed += len(report.failed)
        skipped += len(report.skipped)
    for report, (_, expected) in zip(reports[len(programs):], broken):
        hits = [o for o in report.failed if caught_as(o, expected)]
        # The check of that kind first (gpu-work's own, not a batch's first
        # check whose watch also saw the host work).
        hits.sort(key=lambda o: o.case.kind != expected.split("/")[0])
        if hits:
            passed += 1
            print(f"ok    {report.name} fails the grader ({len(report.failed)} checks), "
                  f"caught by {expected}: {hits[0].case.label} -> {hits[0].reason}")
        elif "maybe" in expected.split("/"):
            skipped += 1
            first = report.failed[0] if report.failed else None
            print(f"note  {report.name}: not caught by {expected} on this GPU, a bug the "
                  "hardware may hide" + (f" ({len(report.failed)} other failures, first "
                                         f"{first.case.label} -> {first.reason})" if first
                                         else " (it passed the grader)"))
        else:
            failed += 1
            first = report.failed[0] if report.failed else None
            print(f"FAIL  {report.name} was not caught by {expected}: "
                  + (f"{len(report.failed)} other failures, first {first.case.label} -> "
                     f"{first.reason}" if first else "it PASSED the grader"))
    # The everyday command must mean what the grader means at its size: a
    # plain timed run of every fixture fails, except where only a sanitizer
    # or a size above 2^28 can see the bug. A few at a time: each fills 128 MiB.
    def plain_run(run):
        return run, subprocess.run([run, "--reps", "2", "--warmup", "0"], capture_output=True,
                                   text=True, timeout=600)
    plain_runs = [run for run, expected in broken
                  if not set(expected.split("/")) & set(PLAIN_RUN_CANNOT_SEE)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        for run, proc in pool.map(plain_run, plain_runs):
            if proc.returncode != 0 and re.search(r"^(FAIL|error)", proc.stdout + proc.stderr, re.M):
                passed += 1
            else:
                failed += 1
                print(f"FAIL  {run} (plain timed run at the default size) exited "
                      f"{proc.returncode} without a FAIL line: {proc.stdout.strip().splitlines()[-1:]}")
    # The whole-part checks need programs that GPU_ONLY may leave unbuilt.
    if only:
        skipped += 1
        print("gpu: skipped: the whole-part checks (timed CSV rows), under GPU_ONLY")
    with tempfile.TemporaryDirectory() as tmp:
        for label, ok, detail in (extra_checks(tmp) if not only else ()):
            if ok:
                passed += 1
            else:
                failed += 1
                print(f"FAIL  {label}: {detail}")
    line = f"gpu: {passed} passed, {failed} failed"
    print(line + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
