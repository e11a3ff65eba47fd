#!/usr/bin/env python3
"""verify.py: one GPU run of a change (`make verify ONLY=...`).

    python3 tools/verify.py --only NAMES [--out-dir DIR] [--verify-dir DIR]
                            [--torch-python PYTHON] [--rounds K] [--skip WHAT]
                            [--round K --run-id ID] [--check-jobs N]
                            [--checks-from FILE]
    python3 tools/verify.py --only NAMES --targets

For the programs named (folders such as rows/step13_cluster or step9_singlepass;
sum or rows for a whole part), in this order:
  grade    the grader on each, as `make check` grades it (its twin under
           build/monitored/, with the watch on GPU work)
  profile  Nsight Compute counters of each and of the step its counters are
           read beside, at part 2's profiled shapes (32768 x 1024 and every
           <gpu>-rows-profile-RxC.csv of the reference)
  bench    the programs and everything their ratios are read against, in one
           run of --rounds rounds (tools/bench.py --only)
Every file of this run goes under --verify-dir (default build/verify), alone;
the bench and profile rows are also merged into --out-dir's files (make's
OUT_DIR: plots/reference to publish), where each program's figures come from
its newest run and no ratio is taken across runs. The last lines are a short
table: each program's verdict and, per shape, its time, bandwidth, share of
its bar and ratios, from this run alone. --targets prints what make must
build first (no GPU needed).

Exit status: 0 everything passed, 1 a check, a run or a profile failed,
2 usage error, 3 no CUDA device.
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import bench  # the programs, --only and what a program is compared with
import compare
import rows_docs  # share(): a program's share of its bar
import schema

REPO = bench.REPO
STEPS = ("grade", "profile", "bench")
PROFILE_SHAPE = "32768x1024"


class VerifyError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def plan(root, names):
    """(named folders, every folder to build) for --only's names."""
    named = bench.resolve_only(root, names)
    builds = list(named)
    for name in named:
        builds += bench.comparisons(root, name)[0]
    if any(n.startswith("rows/") for n in named):
        builds.append(bench.ONE_ARRAY)   # part 2's bench always needs it built
    return named, list(dict.fromkeys(builds))


def make_targets(root, names):
    """What make builds before a verify: every program run, and the grader's
    twin of each named one."""
    named, builds = plan(root, names)
    return [f"{d}/run" for d in builds] + [f"build/monitored/{d}/run" for d in named]


def profile_shapes(out_dir, root):
    """Part 2's profiled shapes: the default, and each RxC of a committed
    <gpu>-rows-profile-RxC.csv (in out_dir, else in plots/reference)."""
    shapes = [PROFILE_SHAPE]
    for folder in (out_dir, os.path.join(root, "plots", "reference")):
        for path in sorted(glob.glob(os.path.join(folder, "*-rows-profile-*.csv"))):
            shape = os.path.basename(path)[:-len(".csv")].rsplit("-", 1)[1]
            if shape not in shapes:
                shapes.append(shape)
        if len(shapes) > 1:
            break
    return shapes


class Runner:
    """Runs the steps' commands, each into a log of its own under verify_dir."""

    def __init__(self, verify_dir, root):
        self.verify_dir, self.root = verify_dir, root
        self.failed, self.times = [], []

    def run(self, name, cmd, log):
        start = time.monotonic()
        print(f"verify: {name}: {shlex.join(cmd)}", flush=True)
        with open(os.path.join(self.verify_dir, log), "w") as handle:
            proc = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT, text=True,
                                  cwd=self.root)
        seconds = time.monotonic() - start
        self.times.append((name, seconds))
        with open(os.path.join(self.verify_dir, log)) as handle:
            text = handle.read()
        if proc.returncode == bench.EXIT_DEVICE and "no CUDA device" in text:
            raise VerifyError(3, f"{name}: no CUDA device ({log})")
        if proc.returncode != 0:
            self.failed.append(f"{name} (exit {proc.returncode}, {log})")
        print(f"verify: {name}: exit {proc.returncode} in {seconds:.0f} s -> "
              f"{bench.display_path(os.path.join(self.verify_dir, log))}", flush=True)
        return text


def grade_lines(text):
    return [line for line in text.splitlines() if line.startswith("grade:")]


def fmt(value, spec):
    return "—" if value is None else format(value, spec)


def row_table(path, named):
    """Lines: each named part 2 program per shape, from this run's rows alone."""
    m = compare.RowMeasurements.load(path)
    lines = []
    for step in [schema.step_label(n) for n in named if n.startswith("rows/")]:
        if not any(m.get(step, s) for s in m.shapes):
            continue
        lines.append(f"{step}: shape, median us, GB/s, share of its bar, vs previous, "
                     "vs PyTorch, vs torch.compile")
        prev = m.previous(step)
        eager, compiled = (rows_docs.torch_of(m, step), rows_docs.torch_of(m, step, True))
        for s in m.shapes:
            row = m.get(step, s)
            if row is None:
                continue
            cells = [compare.shape_label(s), f"{row.median_us:.1f}", f"{row.gbps:.0f}",
                     rows_docs.fmt_share(rows_docs.share(m, step, s))]
            view = m.within(step)   # every comparison from this program's run
            for other in (prev if prev and m.op(prev) == m.op(step) else None, eager, compiled):
                theirs = view.get(other, s) if other else None
                cells.append(f"{theirs.median_us / row.median_us:.2f}x "
                             f"{m.verdict_vs(step, other, s)}" if theirs else "—")
            lines.append("  " + " | ".join(cells))
    return lines


def sum_table(path, named):
    """Lines: each named part 1 program at the table sizes, from this run alone."""
    m = compare.Measurements.load(path)
    lines = []
    for step in [schema.step_label(n) for n in named if not n.startswith("rows/")]:
        for n in compare.TABLE_SIZES:
            row = m.get(step, n)
            if row is None:
                continue
            ratios = m.speedups(step, n)
            prev = m.previous(step, n)
            lines.append(f"{step} n = {schema.power_label(n)}: {row.median_us:.1f} us, "
                         f"{row.gbps:.0f} GB/s, vs previous "
                         f"{fmt(ratios.vs_previous, '.2f')}x"
                         f"{' ' + m.verdict_vs(step, prev.step, n) if prev else ''}, vs CUB "
                         f"{fmt(ratios.vs_cub, '.2f')}x")
    return lines


def what_ran(skip):
    """The PASS line's words: what this run did, and what it was told to skip
    (a skipped grade is no pass of the grader's)."""
    done = [word for word, part in (("graded", "grade"), ("profiled", "profile"), ("timed", "bench"))
            if part not in skip]
    text = (", ".join(done[:-1]) + " and " + done[-1] if len(done) > 1 else
            done[0] if done else "nothing run")
    skipped = [part for part in ("grade", "profile", "bench") if part in skip]
    return text + (f" ({', '.join(skipped)} skipped)" if skipped else "")


def verify(args):
    named, _ = plan(args.root, args.only)
    if os.path.isdir(args.verify_dir):
        shutil.rmtree(args.verify_dir)   # this run's files alone
    os.makedirs(args.verify_dir)
    os.makedirs(args.out_dir, exist_ok=True)
    runner = Runner(args.verify_dir, args.root)
    py = sys.executable
    tools = os.path.dirname(os.path.abspath(__file__))   # this checkout's scripts
    only = ",".join(args.only)
    start = time.monotonic()
    verdicts = []
    if "grade" not in args.skip:
        text = runner.run("grade", [py, os.path.join(tools, "grade.py"), "--summary",
                                    os.path.join(args.verify_dir, "grade.json")] +
                          [os.path.join("build", "monitored", d, "run") for d in named],
                          "grade.log")
        verdicts = grade_lines(text)
    if "profile" not in args.skip:
        common = [py, os.path.join(tools, "profile.py"), "--root", args.root, "--only", only,
                  "--out-dir", args.verify_dir, "--merge-into", args.out_dir]
        if any(not d.startswith(("rows/", "back/")) for d in named):
            runner.run("profile, part 1", common, "profile-sum.log")
        if any(d.startswith("back/") for d in named):
            # tools/profile.py has no part 3 yet: its counters are ncu's own
            # lines (back/README.md, plots/reference/h200-back-counters.log).
            print("verify: profile: part 3 (back/) has no profile step yet: skipped", flush=True)
        if any(d.startswith("rows/") for d in named):
            for shape in profile_shapes(args.out_dir, args.root):
                runner.run(f"profile, part 2 at {shape}", common + ["--rows", "--shape", shape],
                           f"profile-rows-{shape}.log")
    if "bench" not in args.skip:
        cmd = [py, os.path.join(tools, "bench.py"), "--root", args.root, "--only", only,
               "--out-dir", args.verify_dir, "--merge-into", args.out_dir,
               "--rounds", str(args.rounds)]
        if args.round:   # one run over calls, each with a time limit
            cmd += ["--round", str(args.round), "--run-id", args.run_id]
        if args.torch_python:
            cmd += ["--torch-python", args.torch_python]
        if args.check_jobs:   # round 1's checks first, N programs at a time
            cmd += ["--check-jobs", str(args.check_jobs)]
        if args.checks_from:  # round 1's checks made by an earlier call (bench --checks-only)
            cmd += ["--checks-from", os.path.abspath(args.checks_from)]
        runner.run("bench", cmd, "bench.log")
    lines = [f"verify: {only} in {time.monotonic() - start:.0f} s "
             f"({', '.join(f'{name} {s:.0f} s' for name, s in runner.times)}); "
             f"this run's files: {bench.display_path(args.verify_dir)}, merged into "
             f"{bench.display_path(args.out_dir)}"]
    lines += verdicts
    for suffix, table in (("-rows.csv", row_table), (".csv", sum_table)):
        # bench.py's files: <gpu>-rows.csv and <gpu>.csv (not the profiles).
        found = [p for p in glob.glob(os.path.join(args.verify_dir, "*" + suffix))
                 if "-profile" not in p and (suffix != ".csv" or "-rows" not in p)]
        for path in found:
            try:
                lines += table(path, named)
            except schema.SchemaError as err:
                lines.append(f"verify: {err}")
    if runner.failed:
        lines.append(f"verify: FAILED: {'; '.join(runner.failed)}")
    else:
        lines.append("verify: PASS: " + what_ran(args.skip))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.verify_dir, "summary.txt"), "w") as handle:
        handle.write(text)
    with open(os.path.join(args.verify_dir, "summary.json"), "w") as handle:
        json.dump({"only": args.only, "named": named, "failed": runner.failed,
                   "seconds": dict(runner.times)}, handle, indent=1)
    print(text, end="")
    return 1 if runner.failed else 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Grade, profile and time the programs "
                                                 "named, merge their rows, print a table.")
    parser.add_argument("--only", required=True, metavar="NAMES",
                        type=bench.program_names)
    parser.add_argument("--root", default=REPO)
    parser.add_argument("--out-dir", help="the files to merge into (default ROOT/plots/results)")
    parser.add_argument("--verify-dir", help="this run's files (default ROOT/build/verify)")
    parser.add_argument("--torch-python", metavar="PYTHON")
    parser.add_argument("--rounds", type=bench._int_at_least(1), default=bench.DEFAULT_ROUNDS)
    parser.add_argument("--round", type=bench._int_at_least(1), metavar="K",
                        help="time round K of --rounds alone (with --run-id: one run over "
                             "several calls; tools/bench.py --round)")
    parser.add_argument("--run-id", metavar="ID", help="the run's id, the same in each call")
    parser.add_argument("--check-jobs", type=bench._int_at_least(1), metavar="N",
                        help="the bench makes round 1's exact checks first, N programs at a "
                             "time (tools/bench.py --check-jobs)")
    parser.add_argument("--checks-from", metavar="FILE",
                        help="round 1 takes its exact checks from FILE, written by an earlier "
                             "call's tools/bench.py --checks-only (tools/bench.py --checks-from)")
    parser.add_argument("--skip", default="", type=lambda t: [w for w in t.split(",") if w],
                        help=f"leave out some of {', '.join(STEPS)} (comma-separated)")
    parser.add_argument("--targets", action="store_true",
                        help="print what make must build first, and stop")
    args = parser.parse_args(argv)
    if args.round and not args.run_id:
        parser.error("--round needs --run-id: the calls of one run share it")
    bad = [w for w in args.skip if w not in STEPS]
    if bad or not args.only:
        parser.error(f"--skip takes {', '.join(STEPS)}" if bad else "--only names no program")
    args.root = os.path.abspath(args.root)
    args.out_dir = os.path.abspath(args.out_dir or os.path.join(args.root, "plots", "results"))
    args.verify_dir = os.path.abspath(args.verify_dir or os.path.join(args.root, "build",
                                                                      "verify"))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.targets:
            print(" ".join(make_targets(args.root, args.only)))
            return 0
        return verify(args)
    except (VerifyError, bench.BenchError) as err:
        print(f"verify: {err}", file=sys.stderr)
        return err.code
    except KeyboardInterrupt:
        print("verify: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
