#!/usr/bin/env python3
"""Round 1's checks of run 20261205T053700Z as bench.py --checks-only would
have written them. They were made in session 27's first call (deadd7f, the
H200, --check-jobs 8) and all passed: round1-cut-off-progress.log's
"checks: round 1's exact checks of 30 programs (367 sizes) made first, 8 at
a time, in 361.8 s: 367 passed"; the call was then cut off while timing, so
no file was written. The sizes are the plan's (tools/bench.py, --only rows),
the code hashes and GPU those of the rows the same build wrote in rounds 2
and 3 (h200-rows.csv here). The timed round 1 that reads this file fails any
run whose code hash or GPU is not these.
    python3 wip-harness/remeasure27/make_checks_record.py > FILE"""
import csv, json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench, schema  # noqa: E402

RUN = "20261205T053700Z"
args = bench.parse_args(["--root", ROOT, "--only", "rows", "--rounds", "3", "--round", "1",
                         "--run-id", RUN])
made = {}
for row in csv.DictReader(open(os.path.join(HERE, "h200-rows.csv"))):
    if row["run"] == RUN:
        made.setdefault(row["step"], set()).add((row["code_hash"], row["gpu"]))
programs, sizes = {}, 0
for _, plan, roles, _ in bench.plans(args):
    for name, _, runs in plan:
        runs = [r for r in runs if r.n <= bench.CHECKED_MAX]
        if roles.get(name) or not runs:
            continue
        [(code, gpu)] = made[schema.step_label(name)]
        programs[name] = {"code_hash": code, "gpu": gpu,
                          "sizes": sorted(r.args() for r in runs)}
        sizes += len(runs)
assert (len(programs), sizes) == (30, 367), (len(programs), sizes)
json.dump({"format": bench.CHECKS_FORMAT, "run": RUN,
           "command": "made in session 27's first call (bench.py --check-jobs 8, round 1); "
                      "this file written after, by wip-harness/remeasure27/make_checks_record.py",
           "made": "2026-12-05T05:58:00Z", "programs": programs}, sys.stdout, indent=1)
print()
