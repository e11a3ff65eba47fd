#!/usr/bin/env python3
"""Round 1's checks of run 20261205T053700Z as bench.py --checks-only would
have written them. They were made in session 27's first call (deadd7f, the
H200, --check-jobs 8) and all passed: round1-cut-off-progress.log's
"checks: round 1's exact checks of 30 programs (367 sizes) made first, 8 at
a time, in 361.8 s: 367 passed"; the call was then cut off while timing, so
no file was written. The sizes are the plan's (tools/bench.py, --only rows),
the code hashes and GPU those of the rows the same build wrote in rounds 2
and 3 (h200-rows.csv here), with their arch and toolchain. The timed round 1
that reads this file fails any run whose code hash, GPU or build is not
these. Needs the part 2 programs built (bench's plan checks them).
    python3 wip-harness/remeasure27/make_checks_record.py > FILE"""
import csv, json, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench, schema  # noqa: E402

RUN = "20261205T053700Z"
args = bench.parse_args(["--root", ROOT, "--only", "rows", "--rounds", "3", "--round", "1",
                         "--run-id", RUN])
made = {}
with open(os.path.join(HERE, "h200-rows.csv")) as handle:
    for row in csv.DictReader(handle):
        if row["run"] == RUN:
            made.setdefault(row["step"], set()).add(bench.made_as_of(row))
with open(os.path.join(HERE, "round1-cut-off-progress.log")) as handle:
    logged = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in
              re.finditer(r"^checks: (\S+): (\d+) of (\d+) sizes passed", handle.read(), re.M)}
programs, sizes = {}, 0
for _, plan, roles, _ in bench.plans(args):
    for name, _, runs in plan:
        runs = [r for r in runs if r.n <= bench.CHECKED_MAX]
        if roles.get(name) or not runs:
            continue
        [made_as] = made[schema.step_label(name)]
        programs[name] = dict(zip(bench.MADE_AS, made_as), sizes=sorted(r.args() for r in runs))
        sizes += len(runs)
        assert logged[name] == (len(runs), len(runs)), (name, logged.get(name), len(runs))
assert (len(programs), sizes, len(logged)) == (30, 367, 30), (len(programs), sizes, len(logged))
json.dump({"format": bench.CHECKS_FORMAT, "run": RUN,
           "command": "made in session 27's first call (bench.py --check-jobs 8, round 1); "
                      "this file written after, by wip-harness/remeasure27/make_checks_record.py",
           "made": "2026-12-05T05:58Z, about (the call's start plus the log's 361.8 s)",
           "programs": programs}, sys.stdout, indent=1)
print()
