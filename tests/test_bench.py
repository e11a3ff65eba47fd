#!/usr/bin/env python3
"""CPU tests for tools/bench.py (make bench's measuring): the programs it
finds, its rounds, its files and log, part 2's shapes beside step 9 and
PyTorch (tools/torch_rows.py, here a fake Python that writes its rows),
--only, --round and --run-id. No GPU needed: the step programs are the fakes
of tests/fakes.py, which take the harness's flags, write its CSV rows and
fail with its exit codes and messages. Run: python3 tests/test_bench.py
"""
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import threading

from fakes import (BACK_BF16_PROGRAMS, BACK_LABELS, BACK_OPS, BACK_PROGRAMS,
                   BACK_SOFTMAX_PROGRAM,
                   BACK_SOFTMAX_STEP_OP, BACK_STEP_OPS, FAKE_ARCH, FAKE_TOOLCHAIN, HARNESS_COLUMNS, PART1, PART1_LABELS, QUICK, REPO, ROW_LABELS, ROW_OPS,
                   ROW_PROGRAMS, ROW_STEP_OPS, TORCH_OPS, ScriptTest, bench, clean_env, load,
                   make_root, make_torch_python, python_without_torch, row_bytes, size_of)

import schema

CONTRACT_COLUMNS = list(schema.RESULT_COLUMNS)   # what bench files: the harness's + round


def check_first_with(sweep, fake_run):
    """sweep.check_first() with bench.run_program replaced by fake_run."""
    saved = bench.run_program
    bench.run_program = fake_run
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            sweep.check_first()
    finally:
        bench.run_program = saved


def assert_round_one_failed(test, proc, root):
    """step1_b (FAKE_WRONG_STEP) failed round 1's checks at each quick size,
    with the harness's reason and the command that ran."""
    path = os.path.join(root, "step1_b", "run")
    for n in QUICK:
        test.assertIn(f"bench: step1_b n={n} failed (exit 1): check -n {n} --offset 0 "
                      f"--fill exact: FAIL: the run gave {n + 7}, not the reference\n",
                      proc.stderr)
        test.assertIn(f"bench:   command: {path} -n {n} --reps 20 --warmup 3 --csv ",
                      proc.stderr)


class BenchUnitTest(ScriptTest):
    def test_discovery_orders_by_step_number(self):
        os.makedirs(os.path.join(self.root, "step2_notes"))  # no source, no binary: ignored
        os.makedirs(os.path.join(self.root, "stepx_bad"))
        self.assertEqual(bench.program_dirs(self.root),
                         ["step0_a", "step1_b", "step10_c", "baseline_cub"])

    def test_shapes_option(self):
        """--shapes: ROWSxCOLS pairs, comma-separated; anything else one usage error."""
        self.assertEqual(bench._shapes("32768x1024, 8192x4096"), ((32768, 1024), (8192, 4096)))
        for bad in ("4x", "0x3", "3*4", "32768x1024,", "x"):
            with self.assertRaises(bench.argparse.ArgumentTypeError, msg=bad):
                bench._shapes(bad)

    def test_torch_ops_follow_the_ops_that_ran(self):
        """PyTorch's float ops always; its bfloat16 ones once a bfloat16 row
        was written; RMSNorm's forms only once one of ours computed them."""
        sweep = bench.Sweep([("rows/x", "x/run", [])], 1, 1, 0, 1, self.root, None,
                            torch=("python3", [(4, 8)], None))
        self.assertEqual(sweep.torch_ops().split(","),
                         ["sum", "compiled/sum", "layernorm", "compiled/layernorm", "softmax",
                          "compiled/softmax", "copy"])
        sweep.rows = [{"op": "softmax_bf16"}, {"op": "add_rmsnorm_bf16"}]
        ops = sweep.torch_ops().split(",")
        self.assertIn("compiled/layernorm_bf16", ops)
        self.assertIn("compiled/add_rmsnorm_bf16", ops)
        self.assertNotIn("rmsnorm", ops)
        self.assertNotIn("rmsnorm_bf16", ops)

    def test_row_programs_in_step_order_then_baselines(self):
        self.assertEqual(bench.row_program_dirs(self.root), [])   # no rows/: no part 2
        make_root(self.top, ("rows/step10_late", "rows/baseline_copy") + ROW_PROGRAMS)
        os.makedirs(os.path.join(self.root, "rows", "step3_notes"))
        self.assertEqual(bench.row_program_dirs(self.root),
                         ["rows/step0_thread", "rows/step5_layernorm", "rows/step10_late",
                          "rows/baseline_copy", "rows/baseline_cub"])

    def test_find_programs_returns_run_paths(self):
        programs = bench.find_programs(self.root)
        self.assertEqual(programs[2], ("step10_c", os.path.join(self.root, "step10_c", "run")))

    def test_unbuilt_student_step_is_reported(self):
        os.makedirs(os.path.join(self.root, "step9_mine"))
        open(os.path.join(self.root, "step9_mine", "reduce.cu"), "w").close()
        with self.assertRaises(bench.BenchError) as caught:
            bench.find_programs(self.root)
        self.assertEqual(caught.exception.code, 2)
        self.assertIn("step9_mine/run", str(caught.exception))

    def test_full_sizes(self):
        sizes = bench.sweep_sizes()
        self.assertEqual(sizes, sorted(set(sizes)))
        for k in range(10, 29):
            self.assertIn(1 << k, sizes)
        for n in (1000, 100003, 3 * 2**20 + 7, 10**7 + 1, 2**27 + 5, 2**25, 2**28):
            self.assertIn(n, sizes)
        self.assertTrue(all(1 <= n <= 2**31 - 1 for n in sizes))

    def test_quick_sizes(self):
        self.assertEqual(bench.sweep_sizes(quick=True), [1 << 20, 1 << 25])

    def test_gpu_slug(self):
        cases = {"NVIDIA H200": "h200", "NVIDIA GeForce RTX 4090": "geforce-rtx-4090",
                 "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb", "  Tesla V100  ": "tesla-v100",
                 "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada-generation", "": "unknown-gpu"}
        for name, slug in cases.items():
            self.assertEqual(schema.gpu_slug(name), slug, name)

    def test_plans_of_both_parts(self):
        self.add_rows_programs()
        args = bench.parse_args(["--root", self.root, "--quick"])
        [(sum_suffix, sums, roles1, _), (rows_suffix, rows, roles2, ops)] = bench.plans(args)
        self.assertEqual((set(roles1.values()), set(roles2.values()), ops), ({""}, {""}, None))
        self.assertEqual((sum_suffix, rows_suffix), ("", "-rows"))
        self.assertEqual([name for name, _, _ in sums], list(PART1[:2]) +
                         ["step9_singlepass", "step10_c", "baseline_cub"])
        self.assertEqual([name for name, _, _ in rows], list(ROW_PROGRAMS) + ["step9_singlepass"])
        for name, path, runs in rows:
            self.assertEqual(path, os.path.join(self.root, name, "run"))
            args = [run.args() for run in runs]
            if name.startswith("rows/"):
                self.assertEqual(args, [["--rows", str(r), "--cols", str(c)]
                                        for r, c in bench.QUICK_ROW_SHAPES])
            else:
                self.assertEqual(args, [["-n", str(r * c)] for r, c in bench.QUICK_ROW_SHAPES])
        [(suffix, _, _, _)] = bench.plans(bench.parse_args(["--root", self.root, "--part", "sum"]))
        self.assertEqual(suffix, "")


class BenchRunTest(ScriptTest):
    def rounds(self, processes, programs=len(PART1)):
        """The processes of each round: every program once, rounds in turn."""
        return [processes[k:k + programs] for k in range(0, len(processes), programs)]

    def test_quick_runs_every_program_once_per_round(self):
        proc = self.bench("--quick", "--reps", "5", "--warmup", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        processes = self.processes()
        self.assertEqual(len(processes), 3 * len(PART1))
        for k, batch in enumerate(self.rounds(processes), 1):
            self.assertEqual(sorted(step for _, step, _, _, _ in batch), sorted(PART1_LABELS), k)
            for _, step, argv, lines, _ in batch:
                # One process per program and round: every size through --runs.
                self.assertEqual((argv[0], argv[2], len(argv)), ("--runs", "--csv", 4), argv)
                self.assertEqual(sorted(size_of(line) for line in lines),
                                 sorted(str(n) for n in QUICK))
                for line in lines:
                    self.assertEqual(line[2:], ["--reps", "5", "--warmup", "1"] +
                                     (["--no-verify"] if k > 1 else []), (k, step, line))

    def test_rounds_are_processes_in_a_shuffled_seeded_order(self):
        def orders(*args):
            if os.path.exists(self.log):
                os.remove(self.log)
            self.assertEqual(self.bench("--quick", "--rounds", "4", *args).returncode, 0)
            processes = self.processes()
            self.assertEqual(len({pid for pid, _, _, _, _ in processes}), 4 * len(PART1))
            return [tuple(step for _, step, _, _, _ in batch) for batch in self.rounds(processes)]

        first = orders()
        self.assertEqual(len(first), 4)
        for order in first:
            self.assertEqual(sorted(order), sorted(PART1_LABELS))
        self.assertGreater(len(set(first)), 1, first)   # the order changes from round to round
        self.assertEqual(orders("--seed", "1"), first)  # the default seed, and repeatable
        self.assertNotEqual(orders("--seed", "2"), first)

    def test_round_column_in_the_merged_csv(self):
        proc = self.bench("--quick")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(self.out, "h200.csv")) as f:
            self.assertEqual(f.readline().strip().split(","), CONTRACT_COLUMNS)
        self.assertEqual(CONTRACT_COLUMNS[-3:], ["round", "run", "role"])
        for column in ("round", "run", "role"):   # the programs do not write them: bench does
            self.assertNotIn(column, HARNESS_COLUMNS)
        rows = self.results()
        self.assertEqual([r["round"] for r in rows], ["1"] * 8 + ["2"] * 8 + ["3"] * 8)
        # One run id in every row of one bench, and every program asked for.
        self.assertEqual(len({r["run"] for r in rows}), 1)
        self.assertRegex(rows[0]["run"], r"^\d{8}T\d{6}Z$")
        self.assertEqual({r["role"] for r in rows}, {""})
        for k, batch in enumerate(self.rounds(self.processes()), 1):
            ran = [step for _, step, _, _, _ in batch]
            filed = [r["step"] for r in rows if r["round"] == str(k)]
            self.assertEqual(filed[::2], ran)   # in the order the programs ran
            self.assertEqual(sorted((r["step"], int(r["n"])) for r in rows if r["round"] == str(k)),
                             sorted((s, n) for s in PART1_LABELS for n in QUICK))
        typed = schema.read_results(os.path.join(self.out, "h200.csv"))
        self.assertEqual({r.round for r in typed}, {1, 2, 3})

    def test_round_one_skips_the_checks_past_checked_max(self):
        # 4096 x 151936 is past 2^28 elements: its checks would take minutes.
        sweep = bench.Sweep([("rows/step15_cluster", "", [])], 3, 20, 3, 1, self.out, None)
        small = bench.Run(rows=4096, cols=50257)
        big = bench.Run(rows=4096, cols=151936)
        self.assertLessEqual(small.n, bench.CHECKED_MAX)
        self.assertGreater(big.n, bench.CHECKED_MAX)
        self.assertNotIn("--no-verify", sweep.flags(1, "rows/step15_cluster", small))
        self.assertIn("--no-verify", sweep.flags(1, "rows/step15_cluster", big))
        self.assertIn("--no-verify", sweep.flags(2, "rows/step15_cluster", small))
        self.assertIn((4096, 151936), bench.ROW_PARTS["rows"].shapes(False, "softmax"))
        self.assertNotIn((4096, 151936), bench.ROW_PARTS["rows"].shapes(False, "layernorm"))

    def test_no_verify_on_the_rounds_after_the_first(self):
        proc = self.bench("--quick", "--rounds", "3", FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        wrong = [p for p in self.processes() if p[1] == "step1_b"]
        batches = [p for p in wrong if p[2][0] == "--runs"]
        alone = [p for p in wrong if p[2][0] != "--runs"]
        self.assertEqual([["--no-verify" in line for line in lines]
                          for _, _, _, lines, _ in batches],
                         [[False, False], [True, True], [True, True]])
        # Round 1's checks fail before timing, so no row: each size again alone,
        # with round 1's flags.
        self.assertEqual(sorted(size_of(argv) for _, _, argv, _, _ in alone),
                         sorted(str(n) for n in QUICK))
        for _, _, argv, _, _ in alone:
            self.assertNotIn("--no-verify", argv)
        # Later rounds skip those checks: the timed run's own row, pass = 0.
        rows = [r for r in self.results() if r["step"] == "step1_b"]
        self.assertEqual(sorted((r["round"], r["n"], r["pass"]) for r in rows),
                         sorted((k, str(n), "0") for k in ("2", "3") for n in QUICK))

    def test_progress_lines_come_from_the_csv(self):
        proc = self.bench("--quick")
        progress = [l for l in proc.stdout.splitlines() if l.startswith("[")]
        self.assertEqual(len(progress), 12)
        rows = self.results()
        for line, (_, step, _, _, _) in zip(progress, self.processes()):
            match = re.fullmatch(r"\[round (\d)/3\] (\S+)\s+2 runs  2\^25 (\d+\.\d) us  PASS", line)
            self.assertTrue(match, line)
            self.assertEqual(match.group(2), schema.program_dir(step))
            [row] = [r for r in rows if (r["round"], r["step"], r["n"]) ==
                     (match.group(1), step, str(1 << 25))]
            self.assertEqual(match.group(3), f"{float(row['median_us']):.1f}")
        self.assertRegex(progress[0], r"^\[round 1/3\] \S+ +2 runs")
        self.assertNotIn("== run", proc.stdout)  # the programs' own stdout is not shown
        self.assertNotIn("PASS: exact fills", proc.stdout)

    def test_results_file_named_by_gpu_replaces_old_one(self):
        os.makedirs(self.out)
        for name in ("h200.csv", "a100.csv"):
            with open(os.path.join(self.out, name), "w") as f:
                f.write("old\n")
        proc = self.bench("--quick", FAKE_GPU="NVIDIA H200")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = self.results()
        self.assertEqual(len(rows), 24)
        self.assertEqual(list(rows[0]), CONTRACT_COLUMNS)
        self.assertEqual({r["gpu"] for r in rows}, {"NVIDIA H200"})
        with open(os.path.join(self.out, "a100.csv")) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(sorted(os.listdir(self.out)),  # no temporary file left
                         ["a100.csv", "h200-bench.log", "h200.csv"])
        lines = proc.stdout.splitlines()
        self.assertTrue(lines[-2].startswith("results: ") and lines[-2].endswith("h200.csv"))
        self.assertRegex(lines[-1], r"^bench: 24 runs in 3 rounds \(run \d{8}T\d{6}Z\), \d+\.\d s -> "
                                    r".*h200\.csv$")

    def test_slug_of_consumer_gpu(self):
        proc = self.bench("--quick", FAKE_GPU="NVIDIA GeForce RTX 4090")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["geforce-rtx-4090-bench.log", "geforce-rtx-4090.csv"])

    def test_out_of_memory_is_skipped(self):
        proc = self.bench("--quick", FAKE_OOM_ABOVE=str(1 << 24))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for step in PART1:
            self.assertEqual(proc.stdout.count(f"skip: {step} n=33554432 does not fit in device "
                                               "memory\n"), 3, step)   # once per round
        rows = self.results()
        self.assertEqual(sorted((r["step"], r["n"], r["round"]) for r in rows),
                         sorted((s, "1048576", k) for s in PART1_LABELS for k in "123"))
        self.assertIn("(12 skipped)", proc.stdout.splitlines()[-1])
        self.assertEqual(proc.stderr, "")

    def test_no_device_stops_with_one_line(self):
        proc = self.bench("--quick", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        line = self.assert_one_line(proc.stderr, "bench: no CUDA device: ")
        self.assertEqual(line, "bench: no CUDA device: no CUDA-capable device is detected")
        self.assertEqual(proc.stdout, "")
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))
        self.assertEqual(len(self.processes()), 1)  # stopped after the first process

    def test_a_batch_that_dies_is_rerun_size_by_size(self):
        crash = 1 << 20
        proc = self.bench("--rounds", "1", FAKE_CRASH_STEP="step10_c", FAKE_CRASH_N=str(crash))
        self.assertEqual(proc.returncode, 1)
        runs = [p for p in self.processes() if p[1] == "step10_c"]
        [(ran, held)] = [(ran, held) for _, _, argv, ran, held in runs if argv[0] == "--runs"]
        order = [size_of(line) for line in held]
        at = order.index(str(crash))
        self.assertTrue(0 < at < len(order) - 1, order)   # it dies midway
        self.assertEqual([size_of(line) for line in ran], order[:at + 1])
        # The size that killed it and every size after it, each in a process of its own.
        self.assertEqual([size_of(argv) for _, _, argv, _, _ in runs if argv[0] != "--runs"],
                         order[at:])
        failures = [l for l in proc.stderr.splitlines() if " failed" in l]
        self.assertEqual(failures[0], f"bench: step10_c n={crash} failed (exit 3): error: kernel "
                                      "launch: an illegal memory access was encountered "
                                      "(reduce.cu:42)")
        self.assertEqual(len(failures), 2, proc.stderr)   # that one, and the tally
        self.assertIn(f"bench:   command: {os.path.join(self.root, 'step10_c', 'run')} "
                      f"-n {crash} --reps 20 --warmup 3 --csv ", proc.stderr)
        rows = self.results()
        sizes = bench.sweep_sizes()
        self.assertEqual(sorted(int(r["n"]) for r in rows if r["step"] == "step10_c"),
                         [n for n in sizes if n != crash])
        self.assertEqual(len(rows), 4 * len(sizes) - 1)
        self.assertTrue(all(r["pass"] == "1" for r in rows))
        self.assertRegex(proc.stdout.splitlines()[-1],
                         rf"^bench: {4 * len(sizes) - 1} runs \(1 failed\) in 1 round ")

    def test_an_unreadable_csv_is_a_failure_of_that_program(self):
        proc = self.bench("--quick", FAKE_BAD_CSV_STEP="step10_c")
        self.assertEqual(proc.returncode, 1)
        for n in QUICK:
            self.assertEqual(proc.stderr.count(f"bench: step10_c n={n} failed (exit 0): its CSV "
                                               "cannot be read: "), 3, proc.stderr)
        self.assertIn("not UTF-8 text", proc.stderr)
        # The sweep goes on: every other program's rows are filed.
        rows = self.results()
        self.assertEqual(sorted((r["step"], r["n"], r["round"]) for r in rows),
                         sorted((s, str(n), k) for s in PART1_LABELS if s != "step10_c"
                                for n in QUICK for k in "123"))
        self.assertRegex(proc.stdout.splitlines()[-1], r"^bench: 18 runs \(6 failed\) in 3 rounds")

    def test_wrong_result_is_a_failure_but_results_are_kept(self):
        proc = self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        # Round 1: the checks before timing fail (the harness says why on stdout).
        assert_round_one_failed(self, proc, self.root)
        for n in QUICK:
            for k in (2, 3):
                self.assertIn(f"bench: step1_b n={n} failed its check (round {k}): its row is "
                              "kept with pass = 0", proc.stderr)
        self.assertRegex(proc.stdout, r"\[round 1/3\] step1_b\s+0 runs\s+FAIL\n")
        self.assertRegex(proc.stdout, r"\[round 2/3\] step1_b\s+2 runs  2\^25 \d+\.\d us  FAIL\n")
        self.assertEqual(len(self.results()), 22)
        self.assertRegex(proc.stdout.splitlines()[-1], r"^bench: 22 runs \(6 failed\) in 3 rounds")

    def test_log_holds_everything_printed(self):
        proc = self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        with open(os.path.join(self.out, "h200-bench.log")) as f:
            log = f.read().splitlines()
        self.assertEqual(log[0], f"$ bench.py --root {self.root} --out-dir {self.out} --quick")
        for line in proc.stdout.splitlines() + proc.stderr.splitlines():
            self.assertIn(line, log)
        self.assertRegex(log[-1], r"^bench: 22 runs \(6 failed\) in 3 rounds")
        self.assertIn("bench: 6 runs failed (see above); rows of wrong results are kept, "
                      "with pass = 0", log)

    def test_failed_rows_stay_in_the_csv(self):
        self.bench("--quick", FAKE_WRONG_STEP="step1_b")
        rows = schema.read_results(os.path.join(self.out, "h200.csv"))
        self.assertEqual([(r.step, r.pass_, r.round) for r in rows if not r.passed],
                         [("step1_b", 0, 2)] * 2 + [("step1_b", 0, 3)] * 2)
        self.assertEqual(len(rows), 22)

    def test_record_path_names_the_results_file(self):
        record = os.path.join(self.top, "where.txt")
        self.assertEqual(self.bench("--quick", "--record-path", record).returncode, 0)
        with open(record) as f:
            self.assertEqual(f.read(), os.path.join(self.out, "h200.csv") + "\n")

    def test_mixed_gpus_is_an_error(self):
        proc = self.bench("--quick", FAKE_ALT_GPU_STEP="step10_c")
        self.assertEqual(proc.returncode, 1)
        line = self.assert_one_line(proc.stderr, "bench: rows from several GPUs")
        self.assertIn("NVIDIA A100-SXM4-80GB", line)
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))   # nothing written

    def test_missing_binary_asks_for_make(self):
        os.remove(os.path.join(self.root, "step1_b", "run"))
        open(os.path.join(self.root, "step1_b", "reduce.cu"), "w").close()
        proc = self.bench("--quick")
        self.assertEqual(proc.returncode, 2)
        line = self.assert_one_line(proc.stderr, "bench: not built: step1_b/run")
        self.assertIn("make", line)
        self.assertFalse(os.path.exists(self.log))


class BenchCheckJobsTest(ScriptTest):
    """--check-jobs N: round 1's exact checks made first, N programs at a
    time, each program's sizes in one process at one rep; round 1 times a
    size whose checks passed there with --no-verify, and any other makes
    them in its timed run, as without the option (its failure reported
    there, with its reason)."""

    CHECK_FLAGS = ["--reps", "1", "--warmup", "0"]

    def split(self):
        """(the check processes, the rounds' processes) in the order they
        started: every check process (its runs file in a checks- folder)
        before the first timed one."""
        processes = self.processes()
        checks = [p for p in processes if p[2][0] == "--runs" and
                  os.path.basename(os.path.dirname(p[2][1])).startswith("checks-")]
        timed = [p for p in processes if p not in checks]
        if checks and timed:
            self.assertLess(processes.index(checks[-1]), processes.index(timed[0]))
        return checks, timed

    def check_line(self, stdout):
        [line] = [l for l in stdout.splitlines() if l.startswith("checks: round 1's ")]
        return re.sub(r"in \d+\.\d s", "in T s", line)

    def test_round_one_is_timed_without_the_checks_made_first(self):
        omp_log = os.path.join(self.top, "omp.log")
        proc = self.bench("--quick", "--check-jobs", "4", FAKE_OMP_LOG=omp_log)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, timed = self.split()
        self.assertEqual(sorted(step for _, step, _, _, _ in checks), sorted(PART1_LABELS))
        for _, step, argv, ran, held in checks:
            self.assertEqual(argv[0], "--runs")
            self.assertEqual(sorted(held), sorted(["-n", str(n)] + self.CHECK_FLAGS
                                                  for n in QUICK), step)
            self.assertEqual(len(ran), len(QUICK))
        # Every round's lines skip the checks, round 1's included: they were made.
        self.assertEqual(len(timed), 3 * len(PART1))
        for _, step, _, ran, held in timed:
            self.assertEqual(len(held), len(QUICK))
            for line in held:
                self.assertEqual(line[2:], ["--reps", "20", "--warmup", "3", "--no-verify"], step)
        # The checks' processes share the cores; the timed ones inherit ours.
        with open(omp_log) as f:
            omp = dict(line.split() for line in f)
        share = str(max(1, len(os.sched_getaffinity(0)) // 4))
        inherited = os.environ.get("OMP_NUM_THREADS", "-")
        self.assertEqual({omp[pid] for pid, _, _, _, _ in checks}, {f"OMP_NUM_THREADS={share}"})
        self.assertEqual({omp[pid] for pid, _, _, _, _ in timed},
                         {f"OMP_NUM_THREADS={inherited}"})
        self.assertEqual(self.check_line(proc.stdout),
                         "checks: round 1's exact checks of 4 programs (8 sizes) made first, "
                         "4 at a time, in T s: 8 passed")
        # A line as each program ends, before the summary.
        ends = [l for l in proc.stdout.splitlines()
                if re.fullmatch(r"checks: \S+: 2 of 2 sizes passed \(\d+\.\d s\)", l)]
        self.assertEqual(len(ends), len(PART1))
        rows = self.results()
        self.assertEqual(len(rows), 24)
        self.assertEqual({r["pass"] for r in rows}, {"1"})
        with open(os.path.join(self.out, "h200-bench.log")) as f:
            self.assertIn("checks: round 1's exact checks of 4 programs", f.read())

    def test_only_the_programs_asked_for_are_checked_first(self):
        self.add_rows_programs()
        for name, op in ROW_STEP_OPS.items():   # what each computes: its comparisons
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{op};\n")
        proc = self.bench("--quick", "--rounds", "1", "--only", "rows/step5_layernorm",
                          "--check-jobs", "4")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, timed = self.split()
        self.assertEqual([step for _, step, _, _, _ in checks], ["rows/step5_layernorm"])
        [(_, _, _, _, held)] = checks
        self.assertEqual(sorted(held), sorted(["--rows", str(r), "--cols", str(c)] +
                                              self.CHECK_FLAGS for r, c in bench.QUICK_ROW_SHAPES))
        self.assertEqual(sorted(step for _, step, _, _, _ in timed),
                         ["rows/copy", "rows/step0_thread", "rows/step5_layernorm"])
        for _, step, _, _, held in timed:
            self.assertTrue(all(line[-1] == "--no-verify" for line in held), (step, held))
        self.assertEqual(self.check_line(proc.stdout),
                         "checks: round 1's exact checks of 1 program (2 sizes) made first, "
                         "1 at a time, in T s: 2 passed")   # --check-jobs 4, one program to check

    def test_a_failed_check_made_first_is_made_again_in_round_one(self):
        proc = self.bench("--quick", "--check-jobs", "4", FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        checks, timed = self.split()
        self.assertEqual(sorted(step for _, step, _, _, _ in checks), sorted(PART1_LABELS))
        # step1_b's checks failed first: round 1 makes them again, and they
        # fail there, reported as without --check-jobs.
        batches = [held for _, step, argv, _, held in timed
                   if step == "step1_b" and argv[0] == "--runs"]
        self.assertEqual([["--no-verify" in line for line in held] for held in batches],
                         [[False, False], [True, True], [True, True]])
        assert_round_one_failed(self, proc, self.root)
        others = [held for _, step, _, _, held in timed if step != "step1_b"]
        self.assertTrue(all(line[-1] == "--no-verify" for held in others for line in held))
        self.assertEqual(self.check_line(proc.stdout),
                         "checks: round 1's exact checks of 4 programs (8 sizes) made first, "
                         "4 at a time, in T s: 6 passed; 2 sizes left to their timed runs")
        self.assertEqual(len(self.results()), 22)
        self.assertRegex(proc.stdout.splitlines()[-1], r"^bench: 22 runs \(6 failed\) in 3 rounds")

    def test_a_size_that_crashed_the_checks_is_checked_in_round_one(self):
        crash = QUICK[1]   # the checks' second line: the first passed before it
        proc = self.bench("--quick", "--rounds", "1", "--check-jobs", "2",
                          FAKE_CRASH_STEP="step10_c", FAKE_CRASH_N=str(crash))
        self.assertEqual(proc.returncode, 1)
        checks, timed = self.split()
        [held] = [held for _, step, _, _, held in checks if step == "step10_c"]
        self.assertEqual([size_of(line) for line in held], [str(n) for n in QUICK])
        [batch] = [held for _, step, argv, _, held in timed
                   if step == "step10_c" and argv[0] == "--runs"]
        self.assertEqual({size_of(line): "--no-verify" in line for line in batch},
                         {str(QUICK[0]): True, str(crash): False})
        # The batch dies at the crash: that size alone again, round 1's flags.
        [alone] = [argv for _, step, argv, _, _ in timed if step == "step10_c" and
                   argv[0] != "--runs" and size_of(argv) == str(crash)]
        self.assertNotIn("--no-verify", alone)
        self.assertIn(f"bench: step10_c n={crash} failed (exit 3): error: kernel launch: an "
                      "illegal memory access was encountered (reduce.cu:42)", proc.stderr)
        self.assertIn("7 passed; 1 size left to their timed runs", proc.stdout)

    def test_sizes_past_checked_max_are_not_checked_first(self):
        self.add_rows_programs()
        big = (4096, 151936)   # 2^29.2 elements: past CHECKED_MAX
        self.assertGreater(big[0] * big[1], bench.CHECKED_MAX)
        proc = self.bench("--rounds", "1", "--only", "rows/step0_thread", "--shapes",
                          "4096x1024,4096x151936", "--check-jobs", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, timed = self.split()
        self.assertEqual([(step, [size_of(line) for line in held])
                          for _, step, _, _, held in checks],
                         [("rows/step0_thread", ["4096x1024"])])
        [batch] = [held for _, step, _, _, held in timed if step == "rows/step0_thread"]
        self.assertTrue(all(line[-1] == "--no-verify" for line in batch), batch)
        # A program of only such sizes is not checked first at all.
        os.remove(self.log)
        proc = self.bench("--rounds", "1", "--only", "rows/step0_thread", "--shapes",
                          "4096x151936", "--check-jobs", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.split()[0], [])
        self.assertNotIn("checks: ", proc.stdout)

    def test_round_one_alone_checks_first_and_later_rounds_do_not(self):
        for k in ("1", "2"):
            if os.path.exists(self.log):
                os.remove(self.log)
            proc = self.bench("--quick", "--rounds", "2", "--round", k, "--run-id",
                              "20260101T000001Z", "--check-jobs", "4")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(len(self.split()[0]), len(PART1) if k == "1" else 0, k)

    def test_widths_make_no_checks_first(self):
        """--widths makes no exact checks: none first either."""
        self.add_rows_programs()
        for name, op in ROW_STEP_OPS.items():
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{op};\n")
        proc = self.bench("--widths", "--quick", "--rounds", "1", "--check-jobs", "4")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, timed = self.split()
        self.assertEqual(checks, [])
        self.assertTrue(timed)
        self.assertNotIn("checks: ", proc.stdout)

    def test_the_checks_run_side_by_side(self):
        """N programs' checks at once: each fake waits until all three have
        started, which a pool running one at a time never lets happen."""
        runs = [bench.Run(rows=4, cols=8)]
        barrier = threading.Barrier(3, timeout=10)

        def fake_run(cmd, timeout=bench.RUN_TIMEOUT_S, env=None):
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                return 1, "alone"
            with open(cmd[cmd.index("--csv") + 1], "w") as f:
                f.write("rows,cols,n,pass\n4,8,32,1\n")
            return 0, ""

        plan = [(f"rows/step{k}_x", "run", runs) for k in range(3)]
        sweep = bench.Sweep(plan, 3, 20, 3, 1, self.top, bench.Output(), check_jobs=3)
        check_first_with(sweep, fake_run)
        self.assertEqual(sweep.checked, {name: {("--rows", "4", "--cols", "8")}
                                         for name, _, _ in plan})

    def test_the_checks_kept_are_the_passed_rows(self):
        """A size whose row passed is recorded; one whose row failed (pass 0)
        or is missing is not, so round 1 makes its checks."""
        runs = [bench.Run(rows=4, cols=8), bench.Run(rows=4, cols=9), bench.Run(rows=4, cols=10)]
        seen = []

        def fake_run(cmd, timeout=bench.RUN_TIMEOUT_S, env=None):
            seen.append((cmd, env))
            with open(cmd[cmd.index("--csv") + 1], "w") as f:
                f.write("rows,cols,n,pass\n4,8,32,1\n4,9,36,0\n")
            return 1, ""

        output = bench.Output()
        sweep = bench.Sweep([("rows/step0_thread", "run", runs), ("rows/copy", "run", runs)],
                            3, 20, 3, 1, self.top, output,
                            roles={"rows/copy": schema.COMPARED}, check_jobs=3)
        check_first_with(sweep, fake_run)
        self.assertEqual(len(seen), 1)   # the comparison is not checked
        # One program to check: it gets every core, not a third of them.
        self.assertEqual(seen[0][1]["OMP_NUM_THREADS"], str(len(os.sched_getaffinity(0))))
        self.assertEqual(sweep.checked, {"rows/step0_thread": {("--rows", "4", "--cols", "8")}})
        self.assertEqual(["--no-verify" in sweep.flags(1, "rows/step0_thread", run)
                          for run in runs], [True, False, False])
        self.assertIn("--no-verify", sweep.flags(1, "rows/copy", runs[1]))
        self.assertIn("1 passed; 2 sizes left to their timed runs", output.lines[-1])

    def checks_file(self, *extra, **env):
        """Round 1's checks alone (--checks-only) into a file: (proc, path)."""
        path = os.path.join(self.top, "checks.json")
        proc = self.bench("--quick", "--rounds", "3", "--round", "1", "--run-id",
                          "20260101T000001Z", "--checks-only", path, *extra, **env)
        return proc, path

    def round_one_from(self, path, **env):
        """Round 1 timed with the checks of an earlier call (--checks-from)."""
        if os.path.exists(self.log):
            os.remove(self.log)
        return self.bench("--quick", "--rounds", "3", "--round", "1", "--run-id",
                          "20260101T000001Z", "--checks-from", path, **env)

    def test_checks_only_times_nothing_and_writes_what_passed(self):
        """Round 1 split over two calls: the first makes the checks alone
        and files no row; the second times every size without them."""
        proc, path = self.checks_file("--check-jobs", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, timed = self.split()
        self.assertEqual(sorted(step for _, step, _, _, _ in checks), sorted(PART1_LABELS))
        self.assertEqual(timed, [])
        self.assertFalse(os.path.exists(os.path.join(self.out, "h200.csv")))
        self.assertRegex(proc.stdout.splitlines()[-1],
                         r"^bench: round 1's exact checks alone, 8 of 8 sizes passed, in "
                         r"\d+ s -> .*checks\.json$")
        with open(path) as f:
            record = json.load(f)
        self.assertEqual(record["run"], "20260101T000001Z")
        self.assertEqual(sorted(record["programs"]), sorted(PART1))
        for name, mine in record["programs"].items():
            self.assertEqual(mine["sizes"], sorted(["-n", str(n)] for n in QUICK), name)
            self.assertEqual(mine["gpu"], "NVIDIA H200")
            self.assertEqual(len(mine["code_hash"]), 12)
            self.assertEqual((mine["arch"], mine["toolchain"]), (FAKE_ARCH, FAKE_TOOLCHAIN))
        proc = self.round_one_from(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        checks, timed = self.split()
        self.assertEqual(checks, [])
        self.assertEqual(len(timed), len(PART1))
        for _, step, _, _, held in timed:
            self.assertTrue(all(line[-1] == "--no-verify" for line in held), (step, held))
        self.assertIn("checks: round 1's exact checks of 4 programs (8 sizes passed) from ",
                      proc.stdout)
        rows = self.results()
        self.assertEqual(({r["round"] for r in rows}, {r["pass"] for r in rows}), ({"1"}, {"1"}))

    def test_a_program_built_from_other_code_makes_its_checks_again(self):
        """Its --version says so before round 1 times it: the checks are made
        in its timed runs, as without the file."""
        proc, path = self.checks_file()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = self.round_one_from(path, FAKE_CHANGED_STEP="step1_b")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("checks: step1_b: built as code hash ", proc.stdout)
        self.assertIn("checks: round 1's exact checks of 3 programs (6 sizes passed) from ",
                      proc.stdout)
        for _, step, _, _, held in self.split()[1]:
            self.assertEqual([line[-1] == "--no-verify" for line in held],
                             [step != "step1_b"] * len(QUICK), step)

    def test_a_run_of_other_code_or_gpu_than_checked_fails(self):
        """The file vouches for the code and GPU it checked, no other: a row
        that says otherwise (a build whose --version cannot tell, another
        GPU) fails, kept with pass = 0."""
        proc, path = self.checks_file()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for env, what in (({"FAKE_CHANGED_STEP": "step1_b", "FAKE_NO_VERSION": "1"}, "step1_b"),
                          ({"FAKE_GPU": "NVIDIA H100 80GB HBM3"}, None)):
            with self.subTest(env=env):
                proc = self.round_one_from(path, **env)
                self.assertEqual(proc.returncode, 1)
                failed = [l for l in proc.stderr.splitlines() if "its checks were made as" in l]
                self.assertEqual(len(failed), len(QUICK) * (1 if what else len(PART1)), failed)
                if what:
                    self.assertTrue(all(l.startswith(f"bench: {what} n=") for l in failed))
                self.assertTrue(all(l.endswith("; make round 1's checks again") for l in failed))
                # Timed unchecked, of other code: its rows are not passed rows.
                rows = self.results("h200.csv" if what else "h100-80gb-hbm3.csv")
                self.assertEqual(sorted(r["step"] for r in rows if r["pass"] != "1"),
                                 sorted(r["step"] for r in rows if not what or r["step"] == what))
                self.assertEqual(len([r for r in rows if r["pass"] != "1"]), len(failed))

    def test_a_size_that_failed_its_checks_alone_is_checked_in_round_one(self):
        proc, path = self.checks_file(FAKE_WRONG_STEP="step1_b")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("6 of 8 sizes passed (2 left to their timed runs)", proc.stdout)
        # A call of the checks alone says why, as no timed run will.
        self.assertIn(f"checks: step1_b: check -n {QUICK[0]} --offset 0 --fill exact: FAIL: "
                      f"the run gave {QUICK[0] + 7}, not the reference", proc.stdout)
        with open(path) as f:
            self.assertEqual(json.load(f)["programs"]["step1_b"]["sizes"], [])
        proc = self.round_one_from(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        [(_, _, _, _, held)] = [p for p in self.processes() if p[1] == "step1_b"]
        self.assertFalse(any("--no-verify" in line for line in held), held)

    def test_step_9_in_both_parts_is_checked_once_a_size(self):
        self.add_rows_programs()
        path = os.path.join(self.top, "checks.json")
        proc = self.bench("--quick", "--rounds", "1", "--checks-only", path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(path) as f:
            sizes = json.load(f)["programs"]["step9_singlepass"]["sizes"]
        self.assertEqual(len(sizes), len({tuple(s) for s in sizes}))
        self.assertEqual(sorted(s[1] for s in sizes), sorted({str(n) for n in QUICK} |
                         {str(r * c) for r, c in bench.QUICK_ROW_SHAPES}))
        with open(path) as f:
            total = sum(len(p["sizes"]) for p in json.load(f)["programs"].values())
        self.assertRegex(proc.stdout, rf"alone, {total} of {total} sizes passed")

    def test_a_file_that_is_not_a_record_is_a_usage_error(self):
        path = os.path.join(self.top, "bad.json")
        good = {"format": bench.CHECKS_FORMAT, "run": "x", "programs": {
            "step1_b": {"code_hash": "a", "gpu": "g", "arch": "s", "toolchain": "t",
                        "sizes": [["-n", "1"]]}}}
        bad = [[], dict(good, programs=[]), dict(good, format="other"),
               dict(good, programs={"step1_b": 3}),
               dict(good, programs={"step1_b": {"code_hash": "a", "gpu": "g", "arch": "s",
                                                "toolchain": "t"}}),
               dict(good, programs={"step1_b": dict(good["programs"]["step1_b"], sizes="abc")}),
               dict(good, programs={"step1_b": dict(good["programs"]["step1_b"], arch=None)})]
        for record in bad:
            with self.subTest(record=record):
                with open(path, "w") as f:
                    json.dump(record, f)
                proc = self.bench("--quick", "--checks-from", path)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assert_one_line(proc.stderr, f"bench: --checks-from {path}: ")
        with open(path, "w") as f:
            f.write("{not json")
        proc = self.bench("--quick", "--checks-from", path)
        self.assertEqual(proc.returncode, 2)
        with open(path, "w") as f:
            json.dump(good, f)
        proc = self.bench("--quick", "--rounds", "1", "--checks-from", path)
        # step1_b's size in the file is none of the run's: every size checks in its timed run
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(" (made for run x); ", proc.stdout)

    def test_the_split_options_are_round_one_s_alone(self):
        path = os.path.join(self.top, "none.json")
        for args in (["--checks-only", path, "--round", "2", "--run-id", "20260101T000001Z"],
                     ["--checks-from", path, "--widths"],
                     ["--checks-only", path, "--checks-from", path]):
            with self.subTest(args=args):
                proc = self.bench("--quick", *args)
                self.assertEqual(proc.returncode, 2)
                self.assertIn("--checks-", proc.stderr)
        proc = self.bench("--quick", "--checks-from", path)
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, f"bench: --checks-from {path}: ")
        self.assertFalse(self.processes())

    def test_check_jobs_takes_a_count(self):
        self.assertEqual(bench.parse_args(["--root", self.root]).check_jobs, 1)
        for bad in ("0", "x"):
            proc = self.bench("--quick", "--check-jobs", bad)
            self.assertEqual(proc.returncode, 2, bad)
            self.assertIn("--check-jobs", proc.stderr)

    def test_no_device_stops_with_one_line(self):
        proc = self.bench("--quick", "--check-jobs", "4", FAKE_NO_DEVICE="1")
        self.assertEqual(proc.returncode, 3)
        self.assert_one_line(proc.stderr, "bench: no CUDA device: no CUDA-capable device is "
                                          "detected")
        self.assertEqual(proc.stdout, "")
        self.assertEqual(len(self.split()[1]), 0)   # round 1 never started


class BenchRowsTest(ScriptTest):
    """Part 2: rows/*/run over shapes, beside step 9 summing each shape as one array."""

    def setUp(self):
        super().setUp()
        self.add_rows_programs()

    def test_both_parts_write_their_files(self):
        record = os.path.join(self.top, "where.txt")
        proc = self.bench("--quick", "--record-path", record)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["h200-bench.log", "h200-rows.csv", "h200.csv"])
        with open(record) as f:
            self.assertEqual(f.read().splitlines(), [os.path.join(self.out, "h200.csv"),
                                                     os.path.join(self.out, "h200-rows.csv")])
        part1 = self.results()
        self.assertEqual({r["step"] for r in part1}, set(PART1_LABELS) | {"step9_singlepass"})
        self.assertEqual({(r["n"], r["rows"], r["cols"], r["op"]) for r in part1},
                         {(str(n), "", "", "") for n in QUICK})
        self.assertEqual(len(part1), 3 * 5 * 2)
        rows = self.results("h200-rows.csv")
        with open(os.path.join(self.out, "h200-rows.csv")) as f:
            self.assertEqual(f.readline().strip().split(","), CONTRACT_COLUMNS)
        shapes = sorted(bench.QUICK_ROW_SHAPES)
        for label in ROW_LABELS:
            mine = [r for r in rows if r["step"] == label]
            for k in "123":
                got = sorted((int(r["rows"]), int(r["cols"])) for r in mine if r["round"] == k)
                self.assertEqual(got, shapes, (label, k))
            for r in mine:
                rr, cc = int(r["rows"]), int(r["cols"])
                self.assertEqual((r["op"], int(r["n"]), float(r["bytes"]), r["pass"]),
                                 (ROW_OPS[label], rr * cc, row_bytes(ROW_OPS[label], rr, cc), "1"))
        ones = [r for r in rows if r["step"] == "step9_singlepass"]
        self.assertEqual(sorted((r["round"], int(r["n"])) for r in ones),
                         sorted((k, r * c) for k in "123" for r, c in shapes))
        self.assertEqual({(r["rows"], r["cols"], r["op"]) for r in ones}, {("", "", "")})
        self.assertEqual(len(rows), 3 * (len(ROW_LABELS) + 1) * len(shapes))
        # Row programs get shapes, step 9 (in part 2's process) the same floats as -n.
        for _, step, _, lines, _ in self.processes():
            sizes = sorted(size_of(line) for line in lines)
            if step.startswith("rows/"):
                self.assertEqual(sizes, sorted(f"{r}x{c}" for r, c in shapes))
                self.assertTrue(all("-n" not in line for line in lines))
        one_array = [sorted(int(size_of(line)) for line in lines)
                     for _, step, _, lines, _ in self.processes() if step == "step9_singlepass"]
        self.assertEqual(one_array, [sorted(QUICK)] * 3 + [sorted(r * c for r, c in shapes)] * 3)
        progress = [l for l in proc.stdout.splitlines() if l.startswith("[round 1/3] rows/")]
        self.assertEqual(len(progress), len(ROW_LABELS))
        self.assertRegex(proc.stdout, r"\[round 1/3\] rows/step0_thread\s+2 runs  "
                                      r"32768x1024 \d+\.\d us  PASS\n")
        self.assertRegex(proc.stdout.splitlines()[-1],
                         rf"^bench: {len(part1) + len(rows)} runs in 3 rounds \(run \d{{8}}T\d{{6}}Z\), "
                         r"\d+\.\d s -> "
                         r"\S*h200\.csv, \S*h200-rows\.csv$")

    def test_one_array_rows_once_per_size(self):
        # Four of the shapes hold 2^25 floats: step 9 sums 2^25 once per round.
        proc = self.bench("--part", "rows", "--rounds", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-rows-bench.log", "h200-rows.csv"])
        sizes = sorted({r * c for r, c in bench.ROW_SHAPES})
        self.assertLess(len(sizes), len(bench.ROW_SHAPES))
        rows = self.results("h200-rows.csv")
        for k in "12":
            self.assertEqual(sorted(int(r["n"]) for r in rows
                                    if r["step"] == "step9_singlepass" and r["round"] == k), sizes)
            for label in ROW_LABELS:
                self.assertEqual(sorted((int(r["rows"]), int(r["cols"])) for r in rows
                                        if r["step"] == label and r["round"] == k),
                                 sorted(bench.ROW_SHAPES))
        for _, step, _, lines, _ in self.processes():
            if step == "step9_singlepass":
                self.assertEqual(sorted(int(size_of(line)) for line in lines), sizes)

    def test_part_selection(self):
        proc = self.bench("--quick", "--part", "sum")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-bench.log", "h200.csv"])
        self.assertNotIn("PyTorch", proc.stdout)
        self.assertFalse(any(step.startswith("rows/") for _, step, _, _, _ in self.processes()))
        shutil.rmtree(os.path.join(self.root, "rows"))
        proc = self.bench("--quick", "--part", "rows")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, f"bench: no part 2 programs under {self.root}/rows; "
                                          "run `make` first")

    def test_part_2_needs_step_9_built(self):
        os.remove(os.path.join(self.root, "step9_singlepass", "run"))
        proc = self.bench("--quick", "--part", "rows")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "bench: not built: step9_singlepass/run")

    def test_torch_is_left_out_with_one_line(self):
        proc = self.bench("--quick", "--part", "rows")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stdout.splitlines() if "torch" in l.lower()],
                         ["bench: no --torch-python: PyTorch is left out of part 2"])
        python = python_without_torch(self.top)
        os.remove(self.log)
        proc = self.bench("--quick", "--part", "rows", "--torch-python", python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stdout.splitlines() if "torch" in l.lower()],
                         [f"bench: {python} cannot run torch on a GPU (exit 1): PyTorch is left "
                          "out of part 2"])
        self.assertEqual(proc.stderr, "")
        rows = self.results("h200-rows.csv")
        self.assertFalse([r for r in rows if r["step"].startswith("torch/")])
        self.assertEqual(len(rows), 3 * (len(ROW_LABELS) + 1) * len(bench.QUICK_ROW_SHAPES))
        with open(os.path.join(self.out, "h200-rows-bench.log")) as f:
            self.assertIn(f"bench: {python} cannot run torch on a GPU (exit 1): PyTorch is left "
                          "out of part 2", f.read().splitlines())

    def test_torch_rows_join_part_2_in_every_round(self):
        python = make_torch_python(self.top)
        proc = self.bench("--quick", "--part", "rows", "--torch-python", python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("PyTorch is left out", proc.stdout)
        torch = [(pid, argv) for pid, step, argv, _, _ in self.processes() if step == "torch"]
        self.assertEqual(torch[0][1][0], "-c")   # the probe first, then once per round
        shapes = ",".join(f"{r}x{c}" for r, c in bench.QUICK_ROW_SHAPES)
        for k, (_, argv) in enumerate(torch[1:], 1):
            self.assertEqual(argv[0], os.path.join(REPO, "tools", "torch_rows.py"))
            self.assertEqual(argv[3:], ["--shapes", shapes, "--ops", ",".join(TORCH_OPS),
                                        "--reps", "20", "--warmup", "3", "--round", str(k)])
        self.assertEqual(len(torch), 4)
        rows = [r for r in self.results("h200-rows.csv") if r["step"].startswith("torch/")]
        self.assertEqual(sorted((r["round"], r["step"], r["rows"], r["cols"]) for r in rows),
                         sorted((k, "torch/" + op, str(r), str(c)) for k in "123"
                                for op in TORCH_OPS for r, c in bench.QUICK_ROW_SHAPES))
        # The compiled ops keep the op's own name in the op column.
        self.assertEqual({r["op"] for r in rows if r["step"].startswith("torch/compiled/")},
                         {"sum", "layernorm", "softmax"})
        self.assertEqual(len([l for l in proc.stdout.splitlines()
                              if re.match(r"\[round \d/3\] torch +14 runs .* PASS$", l)]), 3)

    def test_the_log_says_when_torch_made_repetitions_again(self):
        python = make_torch_python(self.top)
        proc = self.bench("--quick", "--part", "rows", "--rounds", "1", "--torch-python", python,
                          FAKE_TORCH_LATE="3")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("torch round 1: 3 repetitions made again with a longer wait: the host "
                      "queued the op after the GPU's wait had ended", proc.stdout.splitlines())


class BenchWidthsTest(ScriptTest):
    """--widths: part 2's map, each op's last step and the copies at one input
    size over SWEEP_COLS, PyTorch's forms of their ops, into its own file."""

    def setUp(self):
        super().setUp()
        self.add_rows_programs()
        for name, op in ROW_STEP_OPS.items():
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"// {name}\nconst enum row_op step_op = ROW_{op};\n")

    def test_each_ops_last_step_and_the_copy_at_one_input_size(self):
        args = bench.parse_args(["--root", self.root, "--widths"])
        suffix, plan, roles, ops = bench.width_plan(args)
        self.assertEqual(suffix, "-rows-widths")
        # CUB's segmented sum is the row sum's bar, not a last step: left out.
        # and part 1's step 9 on 256 MiB of floats as one array: the row sum's bar.
        self.assertEqual([name for name, _, _ in plan],
                         ["rows/step0_thread", "rows/step5_layernorm", "rows/baseline_copy",
                          "step9_singlepass"])
        self.assertEqual([r.n for r in plan[-1][2]], [bench.SWEEP_BYTES // 4])
        self.assertEqual(set(roles.values()), {""})
        self.assertEqual(ops, ["sum", "compiled/sum", "layernorm", "compiled/layernorm"])
        for _, _, runs in plan[:-1]:
            self.assertEqual([r.cols for r in runs], list(bench.SWEEP_COLS))
            for r in runs:   # 256 MiB of floats, or as near as whole rows come
                self.assertLessEqual(r.rows * r.cols * 4, bench.SWEEP_BYTES)
                self.assertGreater((r.rows + 1) * r.cols * 4, bench.SWEEP_BYTES)
        self.assertEqual(bench.width_shapes("softmax_bf16")[0], (2 * bench.SWEEP_BYTES // 1024, 256))

    def test_a_run_files_its_rows_without_the_exact_checks(self):
        python = make_torch_python(self.top)
        proc = self.bench("--widths", "--quick", "--rounds", "2", "--torch-python", python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["h200-rows-widths-bench.log", "h200-rows-widths.csv"])
        rows = self.results("h200-rows-widths.csv")
        ours = [r for r in rows if not r["step"].startswith("torch/") and r["rows"]]
        self.assertEqual(sorted({r["step"] for r in ours}),
                         ["rows/copy", "rows/step0_thread", "rows/step5_layernorm"])
        self.assertEqual([r["n"] for r in rows if r["step"] == "step9_singlepass"],
                         [str(bench.SWEEP_BYTES // 4)] * 2)
        self.assertEqual(len(ours), 2 * 3 * len(bench.QUICK_SWEEP_COLS))
        self.assertEqual({r["cols"] for r in ours}, {str(c) for c in bench.QUICK_SWEEP_COLS})
        for _, step, argv, lines, _ in self.processes():
            if step != "torch" and argv and argv[0] == "--runs":
                self.assertTrue(all("--no-verify" in line for line in lines), (step, lines))
        torch = {r["step"] for r in rows if r["step"].startswith("torch/")}
        self.assertEqual(torch, {"torch/sum", "torch/compiled/sum", "torch/layernorm",
                                 "torch/compiled/layernorm"})

    def test_a_run_split_over_calls_by_round(self):
        for k in ("1", "2"):
            proc = self.bench("--widths", "--quick", "--rounds", "2", "--round", k,
                              "--run-id", "20260101T000001Z")
            self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = self.results("h200-rows-widths.csv")
        self.assertEqual(sorted({r["round"] for r in rows}), ["1", "2"])
        self.assertEqual(len(rows), 2 * (3 * len(bench.QUICK_SWEEP_COLS) + 1))   # + step 9

    def test_it_takes_no_other_selection(self):
        for extra in (["--shapes", "4x8"], ["--part", "rows"], ["--merge-into", self.out]):
            proc = self.bench("--widths", *extra)
            self.assertEqual(proc.returncode, 2, extra)
            self.assertIn("--widths runs its own programs", proc.stderr)

    def test_only_measures_one_op_again_beside_its_bar_and_pytorch(self):
        python = make_torch_python(self.top)
        proc = self.bench("--widths", "--quick", "--rounds", "2", "--torch-python", python,
                          "--run-id", "20260101T000001Z")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = self.bench("--widths", "--quick", "--rounds", "2", "--torch-python", python,
                          "--only", "rows/step5_layernorm", "--run-id", "20260101T000002Z")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = self.results("h200-rows-widths.csv")
        new = [r for r in rows if r["run"] == "20260101T000002Z"]
        self.assertEqual({(r["step"], r["role"]) for r in new},
                         {("rows/step5_layernorm", ""), ("rows/copy", "compared"),
                          ("torch/layernorm", "compared"), ("torch/compiled/layernorm", "compared")})
        self.assertEqual({r["cols"] for r in new}, {str(c) for c in bench.QUICK_SWEEP_COLS})
        # The first run still holds the row sum's figures, so it is kept whole.
        old = {r["step"] for r in rows if r["run"] == "20260101T000001Z"}
        self.assertIn("rows/step0_thread", old)
        self.assertIn("torch/sum", old)

    def test_only_a_program_of_the_map(self):
        args = bench.parse_args(["--root", self.root, "--widths", "--only", "rows/step0_thread"])
        _, plan, roles, ops = bench.width_plan(args)
        # A row sum's bar is part 1's step 9 on one array, not the copy.
        self.assertEqual([name for name, _, _ in plan], ["rows/step0_thread", "step9_singlepass"])
        self.assertEqual(roles, {"rows/step0_thread": "", "step9_singlepass": "compared",
                                 "torch": "compared"})
        self.assertEqual(ops, ["sum", "compiled/sum"])
        proc = self.bench("--widths", "--only", "rows/baseline_cub")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("rows/baseline_cub is not on the map", proc.stderr)


class BenchOnlyTest(ScriptTest):
    """--only: the programs named and what their ratios are read against, in
    one run, merged into the files; --round and --run-id: one run over calls."""

    # Run ids are UTC times: later runs sort after earlier ones.
    A, B, C, D, R2, S = ("20260101T000001Z", "20260101T000002Z", "20260101T000003Z",
                         "20260101T000004Z", "20260101T000005Z", "20260101T000006Z")
    OPS = ROW_STEP_OPS

    def setUp(self):
        super().setUp()
        self.add_rows_programs()
        # What each program computes, as its rows.cu says it (bench.row_program_op).
        for name, op in self.OPS.items():
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"// {name}\nconst enum row_op step_op = ROW_{op};\n")
        self.python = make_torch_python(self.top)

    def ran(self):
        return sorted({step for _, step, _, _, _ in self.processes() if step != "torch"})

    def test_comparisons_of_each_part(self):
        self.assertEqual(bench.comparisons(self.root, "step10_c"),
                         (["step9_singlepass", "step0_a", "baseline_cub"], []))
        self.assertEqual(bench.comparisons(self.root, "step0_a"), (["baseline_cub"], []))
        self.assertEqual(bench.comparisons(self.root, "rows/step5_layernorm"),
                         (["rows/step0_thread", "rows/baseline_copy"],
                          ["layernorm", "compiled/layernorm"]))
        self.assertEqual(bench.comparisons(self.root, "rows/step0_thread"),
                         (["step9_singlepass", "rows/baseline_cub"], ["sum", "compiled/sum"]))
        self.assertEqual(bench.comparisons(self.root, "rows/baseline_copy"), ([], ["copy"]))
        # A bfloat16 step: its float twin and the bfloat16 copy.
        make_root(self.top, ("rows/step7_bf16_layernorm", "rows/baseline_copy16"))
        for name, text in (("rows/step7_bf16_layernorm", "LAYERNORM;\nconst enum row_dtype "
                            "step_dtype = ROW_BF16"), ("rows/baseline_copy16", "COPY")):
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{text};\n")
        self.assertEqual(bench.comparisons(self.root, "rows/step7_bf16_layernorm"),
                         (["rows/step5_layernorm", "rows/baseline_copy16"],
                          ["layernorm_bf16", "compiled/layernorm_bf16"]))

    def test_the_step_before_is_the_same_ops(self):
        """A step is read beside the nearest lower step of its op (step 13, a
        LayerNorm after a bfloat16 step, beside step 5 here); a bfloat16
        step's lesson is its diff against its float twin."""
        make_root(self.top, ("rows/step6_bf16_layernorm", "rows/step7_layernorm_aligned",
                             "rows/step8_bf16_layernorm_aligned", "rows/baseline_copy16"))
        for name, text in (("rows/step6_bf16_layernorm", "LAYERNORM;\nconst enum row_dtype "
                            "step_dtype = ROW_BF16"), ("rows/step7_layernorm_aligned", "LAYERNORM"),
                           ("rows/step8_bf16_layernorm_aligned", "LAYERNORM;\nconst enum "
                            "row_dtype step_dtype = ROW_BF16"), ("rows/baseline_copy16", "COPY")):
            with open(os.path.join(self.root, name, "rows.cu"), "w") as f:
                f.write(f"const enum row_op step_op = ROW_{text};\n")
        prev, base = bench.previous_step, bench.diff_base
        self.assertEqual(prev(self.root, "rows/step7_layernorm_aligned"), "rows/step5_layernorm")
        self.assertEqual(base(self.root, "rows/step7_layernorm_aligned"), "rows/step5_layernorm")
        self.assertEqual(prev(self.root, "rows/step8_bf16_layernorm_aligned"),
                         "rows/step6_bf16_layernorm")
        self.assertEqual(base(self.root, "rows/step8_bf16_layernorm_aligned"),
                         "rows/step7_layernorm_aligned")
        # The first bfloat16 LayerNorm: no earlier one, so the nearest lower step.
        self.assertEqual(prev(self.root, "rows/step6_bf16_layernorm"), "rows/step5_layernorm")
        self.assertEqual(base(self.root, "rows/step6_bf16_layernorm"), "rows/step5_layernorm")
        self.assertIsNone(prev(self.root, "rows/baseline_copy16"))
        self.assertEqual(bench.comparisons(self.root, "rows/step7_layernorm_aligned")[0],
                         ["rows/step5_layernorm", "rows/baseline_copy"])
        self.assertEqual(bench.comparisons(self.root, "rows/step8_bf16_layernorm_aligned")[0],
                         ["rows/step6_bf16_layernorm", "rows/step7_layernorm_aligned",
                          "rows/baseline_copy16"])

    def test_only_runs_the_named_and_their_comparisons_in_one_run(self):
        proc = self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.R2,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.ran(), ["rows/copy", "rows/step0_thread",
                                      "rows/step5_layernorm"])
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-rows-bench.log", "h200-rows.csv"])
        rows = self.results("h200-rows.csv")
        self.assertEqual({r["run"] for r in rows}, {self.R2})
        roles = {r["step"]: r["role"] for r in rows}
        self.assertEqual(roles, {"rows/step5_layernorm": "", "rows/step0_thread": "compared",
                                 "rows/copy": "compared", "torch/layernorm": "compared",
                                 "torch/compiled/layernorm": "compared"})
        self.assertIn("(compared)", proc.stdout)
        # Round 1's exact checks: the program asked for makes them, the ones
        # it is compared with do not (their timed runs are still verified).
        checked = {}
        for _, step, _, lines, _ in self.processes():
            if step != "torch":
                checked[step] = checked.get(step, False) or any("--no-verify" not in l
                                                                for l in lines)
        self.assertEqual(checked, {"rows/step5_layernorm": True, "rows/step0_thread": False,
                                   "rows/copy": False})
        self.assertRegex(proc.stdout.splitlines()[-1],
                         r"^bench: \d+ runs in 3 rounds, only rows/step5_layernorm and what it is "
                         r"compared with \(run " + self.R2 + r"\)")

    def test_merge_keeps_other_runs_and_drops_dead_ones(self):
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A,
                                    "--torch-python", self.python).returncode, 0)
        full = self.results("h200-rows.csv")
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.B,
                                    "--torch-python", self.python).returncode, 0)
        rows = self.results("h200-rows.csv")
        # Run A is whole (every other program's figures, and step 5's old rows
        # for what reads them); run B beside it.
        self.assertEqual([r for r in rows if r["run"] == self.A], full)
        self.assertEqual({r["step"] for r in rows if r["run"] == self.B},
                         {"rows/step5_layernorm", "rows/step0_thread", "rows/copy",
                          "torch/layernorm", "torch/compiled/layernorm"})
        # Step 5 again: run B holds nobody's figures any more and goes.
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.C,
                                    "--torch-python", self.python).returncode, 0)
        self.assertEqual(sorted({r["run"] for r in self.results("h200-rows.csv")}), [self.A, self.C])
        # Every program named: run A goes too.
        self.assertEqual(self.bench("--quick", "--only", "rows", "--run-id", self.D,
                                    "--torch-python", self.python).returncode, 0)
        rows = self.results("h200-rows.csv")
        self.assertEqual({r["run"] for r in rows}, {self.D})
        self.assertEqual({r["role"] for r in rows}, {""})
        with open(os.path.join(self.out, "h200-rows-bench.log")) as f:
            log = f.read()
        self.assertEqual(log.count("$ bench.py"), 4)   # every run's lines, the earlier first

    def test_figures_and_ratios_come_from_one_run(self):
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A).returncode, 0)
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id",
                                    self.B).returncode, 0, )
        path = os.path.join(self.out, "h200-rows.csv")
        rows = schema.read_results(path)
        # Make run B's copy slower, so that a ratio across runs would show.
        rows = [r if not (r.step == "rows/copy" and r.run == self.B)
                else r.__class__(**{**r.__dict__, "median_us": r.median_us * 2,
                                    "gbps": r.gbps / 2}) for r in rows]
        import compare
        m = compare.RowMeasurements(path, rows)
        shape = (32768, 1024)
        self.assertEqual(m.current["rows/step5_layernorm"], self.B)
        self.assertEqual(m.current["rows/copy"], self.A)
        self.assertEqual(m.get("rows/copy", shape).run, self.A)
        self.assertEqual(m.within("rows/step5_layernorm").get("rows/copy", shape).run, self.B)
        self.assertEqual(m.within("rows/step0_thread").get("rows/copy", shape).run, self.A)
        self.assertEqual(m.previous("rows/step5_layernorm"), "rows/step0_thread")

    def test_a_run_over_calls(self):
        for k in "12":
            proc = self.bench("--quick", "--part", "rows", "--rounds", "2", "--round", k,
                              "--run-id", self.S)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn(f"in round {k} of 2", proc.stdout.splitlines()[-1])
        rows = self.results("h200-rows.csv")
        self.assertEqual(sorted({r["round"] for r in rows}), ["1", "2"])
        count = len(rows)
        # A call again takes the place of its own rows only.
        self.assertEqual(self.bench("--quick", "--part", "rows", "--rounds", "2", "--round", "2",
                                    "--run-id", self.S).returncode, 0)
        self.assertEqual(len(self.results("h200-rows.csv")), count)
        # Round 1 makes the exact checks; round 2 does not.
        checked = [l for _, step, _, lines, _ in self.processes() for l in lines
                   if "--no-verify" not in l]
        self.assertTrue(checked)

    def test_step_9_named_is_timed_in_both_files(self):
        # Part 2's row sums read step 9 on one array: naming it re-times those rows too.
        proc = self.bench("--quick", "--only", "step9_singlepass", "--run-id", self.A)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = self.results("h200-rows.csv")
        self.assertEqual({(r["step"], r["role"]) for r in rows}, {("step9_singlepass", "")})

    def test_a_failed_run_does_not_take_a_programs_figures(self):
        # bench and tools/compare.py agree: a run whose rows all failed is no
        # program's current run, and the run before it stays.
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A).returncode, 0)
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id",
                                    self.B).returncode, 0)
        proc = self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id", self.C,
                          FAKE_WRONG_STEP="rows/step5_layernorm")
        self.assertEqual(proc.returncode, 1)
        rows = self.results("h200-rows.csv")
        self.assertEqual(sorted({r["run"] for r in rows}), [self.A, self.B, self.C])
        import compare
        m = compare.RowMeasurements.load(os.path.join(self.out, "h200-rows.csv"))
        self.assertEqual(m.current["rows/step5_layernorm"], self.B)

    def test_run_ids_are_times_and_one_id_is_one_plan(self):
        proc = self.bench("--quick", "--only", "rows/step0_thread", "--run-id", "verify-a")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("a UTC time such as 20261202T052253Z", proc.stderr)
        self.assertEqual(self.bench("--quick", "--only", "rows/step5_layernorm", "--run-id",
                                    self.A, "--rounds", "2", "--round", "1").returncode, 0)
        proc = self.bench("--quick", "--only", "rows/step0_thread", "--run-id", self.A,
                          "--rounds", "2", "--round", "2")
        self.assertEqual(proc.returncode, 2)
        self.assertIn(f"--run-id {self.A} already holds a run of other programs", proc.stderr)

    def test_a_deleted_program_and_torch_alone_keep_no_run(self):
        self.assertEqual(self.bench("--quick", "--part", "rows", "--run-id", self.A,
                                    "--torch-python", self.python).returncode, 0)
        shutil.rmtree(os.path.join(self.root, "rows", "step5_layernorm"))
        # Every program named again, without PyTorch: run A holds nothing of ours.
        self.assertEqual(self.bench("--quick", "--only", "rows", "--run-id", self.B).returncode, 0)
        rows = self.results("h200-rows.csv")
        self.assertEqual({r["run"] for r in rows}, {self.B})
        self.assertNotIn("rows/step5_layernorm", {r["step"] for r in rows})

    def test_only_refuses_what_is_not_a_program(self):
        proc = self.bench("--quick", "--only", "rows/step99_none")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "bench: --only: no program rows/step99_none")
        proc = self.bench("--quick", "--rounds", "2", "--round", "3")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--round 3 is past --rounds 2", proc.stderr)
        # Paths the bench writes after its timing are checked before it.
        a_file = os.path.join(REPO, "README.md")
        for args, said in ((["--out-dir", a_file], "--out-dir"), (["--merge-into", a_file], "--merge-into"),
                           (["--record-path", os.path.join(REPO, "no-such", "x")], "--record-path")):
            proc = self.bench("--quick", *args)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn(f"bench.py: error: {said} ", proc.stderr)

    def test_only_accepts_labels_and_parts(self):
        self.assertEqual(bench.resolve_only(self.root, ["rows/copy", "cub", "step1_b"]),
                         ["rows/baseline_copy", "baseline_cub", "step1_b"])
        self.assertEqual(bench.resolve_only(self.root, ["sum"]), bench.program_dirs(self.root))
        # A root with no program is said as such (it once raised IndexError).
        empty = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, empty)
        with self.assertRaises(bench.BenchError) as caught:
            bench.resolve_only(empty, ["step3_idle"])
        self.assertIn("holds no program", str(caught.exception))


class BenchBackTest(ScriptTest):
    """Part 3 (back/, a draft): benched only when asked for (--only back,
    --only back/<step>, --part back), over its own shapes, beside its bar
    (back/copy3) and PyTorch's layernorm_backward, into <gpu>-back.csv;
    part 2's files are never touched by it."""

    A, B = "20260101T000001Z", "20260101T000002Z"
    TORCH_BACK = ["layernorm_backward", "compiled/layernorm_backward"]

    def setUp(self):
        super().setUp()
        self.add_rows_programs()
        make_root(self.top, BACK_PROGRAMS)
        for name, op in list(ROW_STEP_OPS.items()) + list(BACK_STEP_OPS.items()):
            back = name.startswith("back/")
            source = "back.cu" if back else "rows.cu"
            enum = "back_op step_op = BACK_" if back else "row_op step_op = ROW_"
            with open(os.path.join(self.root, name, source), "w") as f:
                f.write(f"// {name}\nconst enum {enum}{op};\n")
        self.python = make_torch_python(self.top)

    def ran(self):
        return sorted({step for _, step, _, _, _ in self.processes() if step != "torch"})

    def file_bytes(self, name):
        with open(os.path.join(self.out, name), "rb") as f:
            return f.read()

    def test_part_3_programs_and_what_they_are_read_against(self):
        self.assertEqual(bench.row_program_dirs(self.root, "back/"), list(BACK_PROGRAMS))
        self.assertEqual(bench.comparisons(self.root, "back/step1_warp"),
                         (["back/step0_thread", "back/baseline_copy3"], self.TORCH_BACK))
        self.assertEqual(bench.comparisons(self.root, "back/step0_thread"),
                         (["back/baseline_copy3"], self.TORCH_BACK))
        # The copy is the bar: nothing of PyTorch's to read it against.
        self.assertEqual(bench.comparisons(self.root, "back/baseline_copy3"), ([], []))
        self.assertEqual([schema.step_label(d) for d in BACK_PROGRAMS], list(BACK_LABELS))
        self.assertEqual([schema.program_dir(label) for label in BACK_LABELS], list(BACK_PROGRAMS))
        self.assertEqual(bench.resolve_only(self.root, ["back/copy3", "back"]),
                         ["back/baseline_copy3", "back/step0_thread", "back/step1_warp"])
        # Issue 41's targets are among part 3's shapes, and every shape is
        # one of part 2's.
        self.assertIn((32768, 1024), bench.BACK_SHAPES)
        self.assertIn((8192, 4096), bench.BACK_SHAPES)
        self.assertTrue(set(bench.BACK_SHAPES) <= set(bench.ROW_SHAPES))

    def test_the_default_run_leaves_part_3_out(self):
        proc = self.bench("--quick", "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["h200-bench.log", "h200-rows.csv", "h200.csv"])
        self.assertFalse([s for s in self.ran() if s.startswith("back/")])
        torch = [argv for _, step, argv, _, _ in self.processes() if step == "torch"]
        self.assertFalse([a for a in torch if "layernorm_backward" in " ".join(a)])
        [(_, _, _, ops)] = [p for p in bench.plans(bench.parse_args(
            ["--root", self.root, "--part", "rows"]))]
        self.assertIsNone(ops)

    def test_only_back_writes_its_own_file(self):
        self.assertEqual(self.bench("--quick", "--run-id", self.A,
                                    "--torch-python", self.python).returncode, 0)
        before = {name: self.file_bytes(name) for name in os.listdir(self.out)}
        os.remove(self.log)
        proc = self.bench("--rounds", "1", "--only", "back", "--run-id", self.B,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # Part 1's and part 2's files and log are as they were, byte for byte.
        for name, text in before.items():
            self.assertEqual(self.file_bytes(name), text, name)
        self.assertEqual(sorted(set(os.listdir(self.out)) - set(before)),
                         ["h200-back-bench.log", "h200-back.csv"])
        self.assertEqual(self.ran(), sorted(BACK_LABELS))
        rows = self.results("h200-back.csv")
        shapes = sorted(bench.BACK_SHAPES)
        for label in BACK_LABELS:
            mine = [r for r in rows if r["step"] == label]
            self.assertEqual(sorted((int(r["rows"]), int(r["cols"])) for r in mine), shapes, label)
            for r in mine:
                rr, cc = int(r["rows"]), int(r["cols"])
                self.assertEqual((r["op"], int(r["n"]), float(r["bytes"]), r["role"], r["run"]),
                                 (BACK_OPS[label], rr * cc, row_bytes(BACK_OPS[label], rr, cc),
                                  "", self.B))
        # PyTorch's backward pass, eager and compiled, on the same shapes and
        # with the driver's bytes; asked for by name, nothing of part 2's.
        [(_, probe), (_, argv)] = [(pid, argv) for pid, step, argv, _, _ in self.processes()
                                   if step == "torch"]
        self.assertEqual(probe[0], "-c")
        self.assertEqual(argv[3:7], ["--shapes", ",".join(f"{r}x{c}" for r, c in bench.BACK_SHAPES),
                                     "--ops", ",".join(self.TORCH_BACK)])
        torch = [r for r in rows if r["step"].startswith("torch/")]
        self.assertEqual(sorted((r["step"], int(r["rows"]), int(r["cols"])) for r in torch),
                         sorted(("torch/" + op, r, c) for op in self.TORCH_BACK for r, c in shapes))
        for r in torch:
            self.assertEqual((r["op"], float(r["bytes"]), r["role"]),
                             ("layernorm_backward",
                              row_bytes("layernorm_backward", int(r["rows"]), int(r["cols"])), ""))
        self.assertEqual(len(rows), (len(BACK_LABELS) + 2) * len(shapes))
        self.assertRegex(proc.stdout.splitlines()[-2], r"^results: \S*h200-back\.csv$")

    def test_only_a_step_brings_its_comparisons(self):
        proc = self.bench("--quick", "--only", "back/step1_warp", "--run-id", self.A,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.ran(), ["back/copy3", "back/step0_thread", "back/step1_warp"])
        self.assertEqual(sorted(os.listdir(self.out)), ["h200-back-bench.log", "h200-back.csv"])
        roles = {r["step"]: r["role"] for r in self.results("h200-back.csv")}
        self.assertEqual(roles, {"back/step1_warp": "", "back/step0_thread": "compared",
                                 "back/copy3": "compared",
                                 "torch/layernorm_backward": "compared",
                                 "torch/compiled/layernorm_backward": "compared"})
        # Round 1's checks: the step asked for makes them, its comparisons do not.
        checked = {}
        for _, step, _, lines, _ in self.processes():
            if step != "torch":
                checked[step] = checked.get(step, False) or any("--no-verify" not in l
                                                                for l in lines)
        self.assertEqual(checked, {"back/step1_warp": True, "back/step0_thread": False,
                                   "back/copy3": False})
        # --part back: the whole part, as --only back.
        os.remove(self.log)
        self.assertEqual(self.bench("--quick", "--part", "back", "--run-id", self.B).returncode, 0)
        self.assertEqual(self.ran(), sorted(BACK_LABELS))
        with open(os.path.join(self.out, "h200-back-bench.log")) as f:
            self.assertIn("PyTorch is left out of part 3", f.read())

    # Softmax's backward pass (issue 42) beside LayerNorm's: shapes of its own.
    TORCH_SOFTMAX = ["softmax_backward", "compiled/softmax_backward"]

    def add_softmax(self):
        """back/step10_softmax, a fake whose back.cu says BACK_SOFTMAX."""
        make_root(self.top, (BACK_SOFTMAX_PROGRAM,))
        with open(os.path.join(self.root, BACK_SOFTMAX_PROGRAM, "back.cu"), "w") as f:
            f.write(f"// {BACK_SOFTMAX_PROGRAM}\n"
                    f"const enum back_op step_op = BACK_{BACK_SOFTMAX_STEP_OP};\n")

    def shapes_run(self):
        """{step: [(rows, cols) of each --runs line, in the order run]} (torch aside)."""
        found = {}
        for _, step, _, lines, _ in self.processes():
            if step != "torch":
                found.setdefault(step, []).extend(
                    tuple(int(line[line.index(flag) + 1]) for flag in ("--rows", "--cols"))
                    for line in lines)
        return found

    def torch_calls(self):
        """(shapes, ops) of each call of tools/torch_rows.py (the -c probe aside)."""
        calls = []
        for _, step, argv, _, _ in self.processes():
            if step == "torch" and argv[0] != "-c":
                self.assertEqual((argv[3], argv[5]), ("--shapes", "--ops"), argv)
                shapes = tuple(tuple(int(x) for x in s.split("x")) for s in argv[4].split(","))
                calls.append((shapes, argv[6].split(",")))
        return calls

    def test_softmax_backward_runs_at_its_own_shapes(self):
        """A softmax backward step runs at SOFTMAX_BACK_SHAPES, LayerNorm's at
        BACK_SHAPES, and the bar back/copy3 at both lists, in that order,
        each shape once; PyTorch is called once for each list of shapes,
        with the ops of that list, and the rows name each one's op and bytes."""
        self.add_softmax()
        self.assertEqual(bench.row_program_op(self.root, BACK_SOFTMAX_PROGRAM), "softmax_backward")
        union = list(dict.fromkeys(bench.BACK_SHAPES + bench.SOFTMAX_BACK_SHAPES))
        self.assertLess(len(union), len(bench.BACK_SHAPES) + len(bench.SOFTMAX_BACK_SHAPES))
        # The bar's rows are read beside every program's: a shape only
        # softmax takes (a vocabulary) is among them.
        self.assertIn((1024, 50257), union)
        self.assertIn((128, 262144), bench.SOFTMAX_BACK_SHAPES)
        [(suffix, plan, _, ops)] = bench.plans(bench.parse_args(
            ["--root", self.root, "--part", "back"]))
        self.assertEqual(suffix, "-back")
        self.assertEqual(ops, self.TORCH_BACK + self.TORCH_SOFTMAX)
        planned = {name: [(run.rows, run.cols) for run in runs] for name, _, runs in plan}
        self.assertEqual(planned, {"back/step0_thread": list(bench.BACK_SHAPES),
                                   "back/step1_warp": list(bench.BACK_SHAPES),
                                   BACK_SOFTMAX_PROGRAM: list(bench.SOFTMAX_BACK_SHAPES),
                                   "back/baseline_copy3": union})

        proc = self.bench("--rounds", "1", "--only", "back", "--run-id", self.B,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ran = self.shapes_run()
        self.assertEqual(sorted(ran), sorted(BACK_LABELS + (BACK_SOFTMAX_PROGRAM,)))
        self.assertEqual(sorted(ran[BACK_SOFTMAX_PROGRAM]), sorted(bench.SOFTMAX_BACK_SHAPES))
        self.assertEqual(sorted(ran["back/step1_warp"]), sorted(bench.BACK_SHAPES))
        self.assertEqual(sorted(ran["back/copy3"]), sorted(union))
        self.assertEqual(len(ran["back/copy3"]), len(set(ran["back/copy3"])))
        self.assertEqual(sorted(self.torch_calls()),
                         sorted([(bench.BACK_SHAPES, self.TORCH_BACK),
                                 (bench.SOFTMAX_BACK_SHAPES, self.TORCH_SOFTMAX)]))
        rows = self.results("h200-back.csv")
        mine = [r for r in rows if r["step"] == BACK_SOFTMAX_PROGRAM]
        self.assertEqual(sorted((int(r["rows"]), int(r["cols"])) for r in mine),
                         sorted(bench.SOFTMAX_BACK_SHAPES))
        for r in mine + [r for r in rows if r["step"] == "torch/softmax_backward"]:
            rr, cc = int(r["rows"]), int(r["cols"])
            self.assertEqual((r["op"], float(r["bytes"])),
                             ("softmax_backward", row_bytes("softmax_backward", rr, cc)))
            self.assertEqual(float(r["bytes"]), 12.0 * rr * cc)
        torch = sorted((r["step"], int(r["rows"]), int(r["cols"])) for r in rows
                       if r["step"].startswith("torch/"))
        self.assertEqual(torch, sorted([("torch/" + op, r, c) for op in self.TORCH_BACK
                                        for r, c in bench.BACK_SHAPES] +
                                       [("torch/" + op, r, c) for op in self.TORCH_SOFTMAX
                                        for r, c in bench.SOFTMAX_BACK_SHAPES]))
        self.assertEqual(len(rows), 2 * len(bench.BACK_SHAPES) +
                         len(bench.SOFTMAX_BACK_SHAPES) + len(union) +
                         2 * len(bench.BACK_SHAPES) + 2 * len(bench.SOFTMAX_BACK_SHAPES))

    def test_softmax_backward_with_shapes_given_or_quick(self):
        """--shapes: every program, the bar and PyTorch (one call, every op)
        at those; --quick: at the quick shapes, the same for every op."""
        self.add_softmax()
        given = ((64, 33), (16, 262145))
        proc = self.bench("--rounds", "1", "--only", "back", "--shapes", "64x33,16x262145",
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ran = self.shapes_run()
        self.assertEqual({step: sorted(shapes) for step, shapes in ran.items()},
                         {step: sorted(given) for step in BACK_LABELS + (BACK_SOFTMAX_PROGRAM,)})
        self.assertEqual(self.torch_calls(), [(given, self.TORCH_BACK + self.TORCH_SOFTMAX)])
        os.remove(self.log)
        proc = self.bench("--quick", "--rounds", "1", "--only", "back",
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        quick = tuple(bench.QUICK_ROW_SHAPES)
        self.assertEqual({step: sorted(shapes) for step, shapes in self.shapes_run().items()},
                         {step: sorted(quick) for step in BACK_LABELS + (BACK_SOFTMAX_PROGRAM,)})
        self.assertEqual(self.torch_calls(), [(quick, self.TORCH_BACK + self.TORCH_SOFTMAX)])

    def test_only_the_softmax_step(self):
        """--only back/step10_softmax: the step at its shapes, the step before
        it (LayerNorm's, compared) at LayerNorm's, the bar at both, and
        PyTorch's softmax backward alone at softmax's shapes."""
        self.add_softmax()
        proc = self.bench("--rounds", "1", "--only", BACK_SOFTMAX_PROGRAM,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ran = self.shapes_run()
        self.assertEqual({step: sorted(shapes) for step, shapes in ran.items()},
                         {BACK_SOFTMAX_PROGRAM: sorted(bench.SOFTMAX_BACK_SHAPES),
                          "back/step1_warp": sorted(bench.BACK_SHAPES),
                          "back/copy3": sorted(dict.fromkeys(bench.BACK_SHAPES +
                                                             bench.SOFTMAX_BACK_SHAPES))})
        self.assertEqual(self.torch_calls(), [(bench.SOFTMAX_BACK_SHAPES, self.TORCH_SOFTMAX)])
        roles = {r["step"]: r["role"] for r in self.results("h200-back.csv")}
        self.assertEqual(roles, {BACK_SOFTMAX_PROGRAM: "", "back/step1_warp": "compared",
                                 "back/copy3": "compared",
                                 "torch/softmax_backward": "compared",
                                 "torch/compiled/softmax_backward": "compared"})

    # Part 3 in bfloat16: its steps against the bfloat16 copy and PyTorch's
    # bfloat16 ops, each at its op's shapes.
    TORCH_SOFTMAX_BF16 = ["softmax_backward_bf16", "compiled/softmax_backward_bf16"]
    TORCH_LAYERNORM_BF16 = ["layernorm_backward_bf16", "compiled/layernorm_backward_bf16"]
    SOFTMAX_BF16, LAYERNORM_BF16, COPY3_BF16 = BACK_BF16_PROGRAMS

    def add_bf16(self):
        """back/step10_softmax, then a bfloat16 softmax backward step, a
        bfloat16 LayerNorm backward step and the bfloat16 copy, fakes whose
        back.cu says BACK_BF16."""
        self.add_softmax()
        make_root(self.top, tuple(BACK_BF16_PROGRAMS))
        for name, op in BACK_BF16_PROGRAMS.items():
            with open(os.path.join(self.root, name, "back.cu"), "w") as f:
                f.write(f"// {name}\nconst enum back_op step_op = BACK_{op};\n"
                        "const enum back_dtype step_dtype = BACK_BF16;\n")

    def test_bfloat16_steps_are_read_against_the_bfloat16_copy_and_torch(self):
        """A bfloat16 step's op picks PyTorch's bfloat16 op, its bar is the
        bfloat16 copy; the float steps keep theirs."""
        self.add_bf16()
        self.assertEqual([bench.row_program_op(self.root, n) for n in BACK_BF16_PROGRAMS],
                         ["softmax_backward_bf16", "layernorm_backward_bf16", "copy3_bf16"])
        self.assertEqual(bench.comparisons(self.root, self.SOFTMAX_BF16),
                         ([BACK_SOFTMAX_PROGRAM, self.COPY3_BF16], self.TORCH_SOFTMAX_BF16))
        self.assertEqual(bench.comparisons(self.root, self.LAYERNORM_BF16),
                         ([self.SOFTMAX_BF16, "back/step1_warp", self.COPY3_BF16],
                          self.TORCH_LAYERNORM_BF16))
        self.assertEqual(bench.comparisons(self.root, BACK_SOFTMAX_PROGRAM),
                         (["back/step1_warp", "back/baseline_copy3"], self.TORCH_SOFTMAX))
        self.assertEqual(bench.comparisons(self.root, self.COPY3_BF16), ([], []))

    def test_only_back_runs_the_bfloat16_steps_their_bar_and_torch(self):
        """--only back: each bfloat16 step at its op's shapes (softmax's at
        SOFTMAX_BACK_SHAPES, LayerNorm's at BACK_SHAPES), both copies at
        every shape, and PyTorch's float and bfloat16 ops, each at its op's
        shapes, one call per list; the rows name each op and its bytes."""
        self.add_bf16()
        union = list(dict.fromkeys(bench.BACK_SHAPES + bench.SOFTMAX_BACK_SHAPES))
        [(_, plan, _, ops)] = bench.plans(bench.parse_args(["--root", self.root, "--only", "back"]))
        self.assertEqual(ops, self.TORCH_BACK + self.TORCH_SOFTMAX + self.TORCH_SOFTMAX_BF16 +
                         self.TORCH_LAYERNORM_BF16)
        planned = {name: [(run.rows, run.cols) for run in runs] for name, _, runs in plan}
        self.assertEqual(planned[self.SOFTMAX_BF16], list(bench.SOFTMAX_BACK_SHAPES))
        self.assertEqual(planned[self.LAYERNORM_BF16], list(bench.BACK_SHAPES))
        self.assertEqual(planned[self.COPY3_BF16], union)
        self.assertEqual(planned["back/baseline_copy3"], union)

        proc = self.bench("--rounds", "1", "--only", "back", "--run-id", self.B,
                          "--torch-python", self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ran = self.shapes_run()
        self.assertEqual(sorted(ran), sorted(BACK_LABELS + (BACK_SOFTMAX_PROGRAM, self.SOFTMAX_BF16,
                                                            self.LAYERNORM_BF16, "back/copy3_bf16")))
        self.assertEqual(sorted(ran["back/copy3_bf16"]), sorted(union))
        self.assertEqual(sorted(ran[self.SOFTMAX_BF16]), sorted(bench.SOFTMAX_BACK_SHAPES))
        self.assertEqual(sorted(self.torch_calls()),
                         sorted([(bench.BACK_SHAPES, self.TORCH_BACK + self.TORCH_LAYERNORM_BF16),
                                 (bench.SOFTMAX_BACK_SHAPES,
                                  self.TORCH_SOFTMAX + self.TORCH_SOFTMAX_BF16)]))
        rows = self.results("h200-back.csv")
        for step, op, shapes in (("torch/softmax_backward_bf16", "softmax_backward_bf16",
                                  bench.SOFTMAX_BACK_SHAPES),
                                 ("torch/compiled/layernorm_backward_bf16",
                                  "layernorm_backward_bf16", bench.BACK_SHAPES),
                                 ("back/copy3_bf16", "copy3_bf16", union),
                                 (self.SOFTMAX_BF16, "softmax_backward_bf16",
                                  bench.SOFTMAX_BACK_SHAPES)):
            mine = [r for r in rows if r["step"] == step]
            self.assertEqual(sorted((int(r["rows"]), int(r["cols"])) for r in mine), sorted(shapes))
            for r in mine:
                rr, cc = int(r["rows"]), int(r["cols"])
                self.assertEqual((r["op"], float(r["bytes"])), (op, row_bytes(op, rr, cc)), step)
        self.assertEqual(row_bytes("softmax_backward_bf16", 4, 8), 6 * 4 * 8)

    def test_only_the_bfloat16_softmax_step(self):
        """--only back/step15_...: the step, the float step it converts and
        the bfloat16 copy at softmax's shapes, and PyTorch's bfloat16
        softmax backward alone, eager and compiled; none of the float ones."""
        self.add_bf16()
        proc = self.bench("--rounds", "1", "--only", self.SOFTMAX_BF16, "--torch-python",
                          self.python)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        shapes = sorted(bench.SOFTMAX_BACK_SHAPES)
        self.assertEqual({step: sorted(s) for step, s in self.shapes_run().items()},
                         {self.SOFTMAX_BF16: shapes, BACK_SOFTMAX_PROGRAM: shapes,
                          "back/copy3_bf16": shapes})
        self.assertEqual(self.torch_calls(), [(bench.SOFTMAX_BACK_SHAPES, self.TORCH_SOFTMAX_BF16)])
        roles = {r["step"]: r["role"] for r in self.results("h200-back.csv")}
        self.assertEqual(roles, {self.SOFTMAX_BF16: "", BACK_SOFTMAX_PROGRAM: "compared",
                                 "back/copy3_bf16": "compared",
                                 "torch/softmax_backward_bf16": "compared",
                                 "torch/compiled/softmax_backward_bf16": "compared"})
        # The bfloat16 LayerNorm step: LayerNorm's shapes, its bar at them.
        os.remove(self.log)
        # Its own run id: two runs in one second would share the clock's.
        proc = self.bench("--rounds", "1", "--only", self.LAYERNORM_BF16, "--torch-python",
                          self.python, "--run-id", "20260101T000002Z")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ran = self.shapes_run()
        self.assertEqual(sorted(ran["back/copy3_bf16"]), sorted(dict.fromkeys(
            bench.BACK_SHAPES + bench.SOFTMAX_BACK_SHAPES)))   # the softmax step beside it
        self.assertEqual(sorted(ran[self.LAYERNORM_BF16]), sorted(bench.BACK_SHAPES))
        self.assertEqual(self.torch_calls(), [(bench.BACK_SHAPES, self.TORCH_LAYERNORM_BF16)])

    def test_part_3_refuses_bad_input_with_one_line(self):
        proc = self.bench("--quick", "--only", "back/step9_none")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "bench: --only: no program back/step9_none (give a "
                                          "folder such as rows/baseline_cub, or sum, rows or back "
                                          "for a whole part)")
        proc = self.bench("--quick", "--part", "bogus")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("invalid choice: 'bogus'", proc.stderr)
        os.remove(os.path.join(self.root, "back", "baseline_copy3", "run"))
        proc = self.bench("--quick", "--only", "back/step0_thread")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "bench: not built: back/baseline_copy3/run; run `make "
                                          "back/baseline_copy3/run` first")
        shutil.rmtree(os.path.join(self.root, "back"))
        proc = self.bench("--quick", "--part", "back")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, f"bench: no part 3 programs under {self.root}/back; "
                                          "run `make` first")
        self.assertFalse(os.path.exists(self.log))   # nothing ran
        self.assertFalse(os.path.exists(self.out))


class TorchRowsTest(ScriptTest):
    """tools/torch_rows.py without torch: part 3's op is known, eager and
    compiled, with the driver's bytes; part 2's ops and bytes are as they were."""

    TORCH_ROWS = os.path.join(REPO, "tools", "torch_rows.py")

    def timed(self, late, sleep=None):
        """Runner.time over a stand-in torch whose stream is a list: (the
        stream's entries, the times, the runner). late[k]: the start event's
        query() at the k-th repetition made (True: the GPU passed it first)."""
        torch_rows = load(self.TORCH_ROWS, "reduce_torch_rows")
        stream, answers = [], iter(late)

        class Event:
            def __init__(self, enable_timing):
                self.name = "start" if not any(isinstance(e, Event) for e in made) else "stop"
                made.append(self)
            def record(self):
                stream.append(self.name)
            def query(self):
                return next(answers, False)
            def synchronize(self):
                pass
            def elapsed_time(self, other):
                return 0.05   # ms

        made = []
        cuda = type("cuda", (), {"Event": Event,
                                 "_sleep": staticmethod(lambda c: stream.append(("sleep", c)))})
        runner = torch_rows.Runner.__new__(torch_rows.Runner)
        runner.torch, runner.reps, runner.warmup, runner.late = type("t", (), {"cuda": cuda}), 4, 1, 0
        runner.sleep_cycles = torch_rows.SLEEP_CYCLES if sleep is None else sleep
        runner.flush_buf = type("b", (), {"sum": lambda self: stream.append("flush")})()
        times, out = runner.time(lambda: stream.append("op") or "y")
        return stream, times, runner, torch_rows

    def test_the_gpu_waits_while_the_host_queues_the_op(self):
        """Each repetition: the flush, the GPU's wait, then the op between
        its events; the events time the op alone."""
        stream, times, runner, torch_rows = self.timed([])
        one = ["flush", ("sleep", torch_rows.SLEEP_CYCLES), "start", "op", "stop"]
        self.assertEqual(stream, one * 5)   # one warm-up, four timed
        self.assertEqual(times, [50.0] * 4)
        self.assertEqual(runner.late, 0)

    def test_a_repetition_queued_after_the_wait_is_made_again_with_a_longer_one(self):
        stream, times, runner, torch_rows = self.timed([False, False, True, False])
        sleeps = [e[1] for e in stream if isinstance(e, tuple)]
        wait = torch_rows.SLEEP_CYCLES
        self.assertEqual(sleeps, [wait, wait, wait, 2 * wait, 2 * wait, 2 * wait])
        self.assertEqual((len(times), runner.late), (4, 1))   # still four timed repetitions

    def test_no_wait_is_the_timing_as_it_was(self):
        """--sleep-cycles 0: no spin and no query, for a comparison with it."""
        stream, times, runner, _ = self.timed([True] * 9, sleep=0)
        self.assertEqual(stream, ["flush", "start", "op", "stop"] * 5)
        self.assertEqual((len(times), runner.late), (4, 0))

    def test_an_op_never_queued_in_time_fails(self):
        with self.assertRaisesRegex(RuntimeError, "still not queued after the GPU waited"):
            self.timed([True] * 100)

    def test_layernorm_backward_bytes_are_the_drivers(self):
        torch_rows = load(self.TORCH_ROWS, "reduce_torch_rows")
        self.assertIn("layernorm_backward", torch_rows.OPS)
        # common/back_ref.c's back_bytes() at 64 x 33, as tests/cli_tests.sh
        # reads it from the driver's CSV row.
        self.assertEqual(torch_rows.row_bytes("layernorm_backward", 64, 33), 26252)
        for r, c in bench.BACK_SHAPES:
            self.assertEqual(torch_rows.row_bytes("layernorm_backward", r, c),
                             row_bytes("layernorm_backward", r, c))
        for op in ("sum", "layernorm", "softmax", "copy"):
            self.assertEqual(torch_rows.row_bytes(op, 4096, 1024), row_bytes(op, 4096, 1024), op)

    def test_softmax_backward_is_an_op_with_the_drivers_bytes(self):
        """softmax_backward: y and dy read, dx written (common/back_ref.c's
        softmax_back_bytes(), 12 an element, as the bar's three streams)."""
        torch_rows = load(self.TORCH_ROWS, "reduce_torch_rows")
        self.assertIn("softmax_backward", torch_rows.OPS)
        self.assertIn("softmax_backward", bench.TORCH_BACK_OPS)
        self.assertEqual(torch_rows.row_bytes("softmax_backward", 64, 33), 12 * 64 * 33)
        for r, c in bench.SOFTMAX_BACK_SHAPES:
            self.assertEqual(torch_rows.row_bytes("softmax_backward", r, c),
                             row_bytes("softmax_backward", r, c))
            self.assertEqual(row_bytes("softmax_backward", r, c), row_bytes("copy3", r, c))

    def test_the_bfloat16_backward_ops_and_their_bytes(self):
        """softmax_backward_bf16: y and dy read and dx written at 2 bytes
        (common/back_ref.c's softmax_back_bf16_bytes(), 6 an element, the
        bfloat16 copy's); layernorm_backward_bf16: back_bytes() with x, dy
        and dx at 2 bytes, its gamma, dgamma, dbeta, mean and rstd float.
        Both are part 3's PyTorch ops in bench."""
        torch_rows = load(self.TORCH_ROWS, "reduce_torch_rows")
        for op in ("softmax_backward_bf16", "layernorm_backward_bf16"):
            self.assertIn(op, torch_rows.OPS)
            self.assertIn(op, bench.TORCH_BACK_OPS)
        self.assertEqual(torch_rows.row_bytes("softmax_backward_bf16", 64, 33), 6 * 64 * 33)
        self.assertEqual(torch_rows.row_bytes("layernorm_backward_bf16", 64, 33),
                         6 * 64 * 33 + 12 * 33 + 8 * 64)
        for r, c in bench.SOFTMAX_BACK_SHAPES:
            self.assertEqual(torch_rows.row_bytes("softmax_backward_bf16", r, c), 6.0 * r * c)
        for r, c in bench.BACK_SHAPES:
            self.assertEqual(torch_rows.row_bytes("layernorm_backward_bf16", r, c),
                             row_bytes("layernorm_backward", r, c) - 6.0 * r * c)
        # The float ops' bytes are as they were.
        self.assertEqual(torch_rows.row_bytes("layernorm_backward", 64, 33), 26252)
        self.assertEqual(torch_rows.row_bytes("softmax_backward", 64, 33), 12 * 64 * 33)

    def test_bfloat16_backward_ops_run_and_are_checked(self):
        """On tests/fake_torch: eager and compiled rows of both bfloat16 ops
        (17 rows: the 16th is fully masked), their bytes, verified; the
        float ops beside them still pass. Each check is seen failing: a
        softmax backward without its sum, a LayerNorm backward over N - 1,
        and outputs in float32 (other bytes than counted) fail; a fake
        that does not round its bfloat16 outputs is right to 1e-7, so the
        reference reads the very inputs the op did (the rounded ones)."""
        fake = os.path.join(REPO, "tests", "fake_torch")
        csv_path = os.path.join(self.top, "t.csv")
        ops = ["softmax_backward_bf16", "compiled/softmax_backward_bf16",
               "layernorm_backward_bf16", "compiled/layernorm_backward_bf16"]
        shapes = (("17", "9"), ("3", "40"))

        def run(broken="", more=()):
            if os.path.exists(csv_path):
                os.remove(csv_path)
            proc = self.run_torch_rows(sys.executable, ",".join(ops + list(more)), "17x9,3x40",
                                       PYTHONPATH=fake, FAKE_TORCH_BROKEN=broken)
            return proc, {(r["step"], r["rows"], r["cols"]): r for r in bench.read_rows(csv_path)}

        proc, rows = run(more=("softmax_backward", "layernorm_backward"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(rows), sorted(("torch/" + op, r, c) for r, c in shapes
                                              for op in ops + ["softmax_backward",
                                                               "layernorm_backward"]))
        for (step, r, c), row in rows.items():
            op = step.removeprefix("torch/").removeprefix("compiled/")
            want = (6.0 if op.endswith("_bf16") else 12.0) * int(r) * int(c)
            if op.startswith("layernorm"):
                want += 12.0 * int(c) + 8.0 * int(r)
            self.assertEqual((row["op"], float(row["bytes"]), row["pass"]), (op, want, "1"), step)
            # bfloat16: dx's own rounding shows (and stays within its bound).
            if op.endswith("_bf16"):
                self.assertGreater(float(row["abs_err"]), 1e-4, step)
        for broken, failing in (("nos", "softmax"), ("nm1", "layernorm"),
                                ("float32", "softmax layernorm")):
            proc, rows = run(broken)
            self.assertEqual(proc.returncode, 1, broken)
            for (step, _, _), row in rows.items():
                self.assertEqual(row["pass"], "0" if step.split("/")[-1].split("_")[0] in failing
                                 else "1", (broken, step))
            if broken == "float32":
                self.assertIn("outputs of other types than counted (float32, not bfloat16",
                              proc.stderr)
        proc, rows = run("unrounded")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for step, row in rows.items():
            self.assertLess(float(row["abs_err"]), 1e-6, step)

    def test_what_the_bfloat16_ops_are_given(self):
        """The torch calls' arguments, on tests/fake_torch in this process:
        softmax_backward_bf16 gives _softmax_backward_data bfloat16 dy and y,
        dim -1 and input_dtype bfloat16. PyTorch's CUDA LayerNorm backward
        refuses a float gamma beside bfloat16 x (seen with torch 2.11 on the
        H200; the fake refuses it too): layernorm_backward_bf16 gives it
        bfloat16 dy, x, gamma and beta, float mean and rstd, every output."""
        fake = os.path.join(REPO, "tests", "fake_torch")
        sys.path.insert(0, fake)
        try:
            import torch
            torch_rows = load(self.TORCH_ROWS, "reduce_torch_rows_gamma")
            runner = torch_rows.Runner(torch, 1, 0)

            def called(name, op, rows, cols):
                seen, real = [], getattr(torch.ops.aten, name)
                setattr(torch.ops.aten, name, lambda *a: seen.append(a) or real(*a))
                try:
                    _, err, ok = runner.run(op, rows, cols, 1)
                finally:
                    setattr(torch.ops.aten, name, real)
                self.assertTrue(ok, (op, err))
                return seen[0], real
            (dy, y, dim, dtype), _ = called("_softmax_backward_data", "softmax_backward_bf16",
                                            17, 8)
            self.assertEqual((dy.dtype, y.dtype, dim, dtype),
                             ("bfloat16", "bfloat16", -1, "bfloat16"))
            (dy, y, dim, dtype), _ = called("_softmax_backward_data",
                                            "compiled/softmax_backward", 17, 8)
            self.assertEqual((dy.dtype, y.dtype, dim, dtype), ("float32", "float32", -1, "float32"))
            args, real = called("native_layer_norm_backward", "layernorm_backward_bf16", 3, 8)
            (dy, x, _, mean, rstd, gamma, beta, mask) = args
            self.assertEqual([t.dtype for t in (dy, x, mean, rstd, gamma, beta)],
                             ["bfloat16", "bfloat16", "float32", "float32", "bfloat16",
                              "bfloat16"])
            self.assertEqual(mask, [True, True, True])
            with self.assertRaisesRegex(RuntimeError, "expected scalar type"):
                real(dy, x, [8], mean, rstd, gamma.float(), beta.float(), mask)
        finally:
            sys.path.remove(fake)
            for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
                del sys.modules[name]

    def run_torch_rows(self, python, ops, shapes="64x33", **env):
        import subprocess
        return subprocess.run([python, self.TORCH_ROWS, "--csv", os.path.join(self.top, "t.csv"),
                               "--shapes", shapes, "--ops", ops, "--reps", "2", "--warmup", "1"],
                              capture_output=True, text=True, env=clean_env(**env), timeout=120)

    def test_bad_ops_and_a_csv_it_cannot_write_are_said_before_torch(self):
        import subprocess
        fake = os.path.join(REPO, "tests", "fake_torch")
        # A torch that cannot be imported: a check made after the import would exit 3.
        absent = os.path.join(self.top, "absent_torch")
        os.makedirs(os.path.join(absent, "torch"))
        with open(os.path.join(absent, "torch", "__init__.py"), "w") as handle:
            handle.write("raise ImportError('torch imported before the checks')\n")
        for args, said in ((["--csv", self.top, "--ops", "sum"], "--csv"),
                           (["--csv", os.path.join(self.top, "no", "t.csv"), "--ops", "sum"], "--csv"),
                           (["--csv", os.path.join(self.top, "t.csv"), "--ops", ""], "--ops"),
                           (["--csv", os.path.join(self.top, "t.csv"), "--ops", " , "], "--ops"),
                           (["--csv", os.path.join(self.top, "t.csv"), "--ops", "sum", "--reps", "0"],
                            "--reps")):
            for torch_path in (fake, absent):
                with self.subTest(args=args, torch=os.path.basename(torch_path)):
                    proc = subprocess.run([sys.executable, self.TORCH_ROWS, *args],
                                          capture_output=True, text=True,
                                          env=clean_env(PYTHONPATH=torch_path), timeout=120)
                    self.assertEqual(proc.returncode, 2, proc.stderr)
                    self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
                    self.assertIn(f"torch_rows: error: {said}", proc.stderr)

    def test_each_op_says_how_many_repetitions_it_made_again(self):
        """On tests/fake_torch, whose first two start events say the GPU got
        there first: the first op's two repetitions made again, named."""
        fake = os.path.join(REPO, "tests", "fake_torch")
        proc = self.run_torch_rows(sys.executable, "layernorm_backward,compiled/layernorm_backward",
                                   "3x5", PYTHONPATH=fake, FAKE_TORCH_LATE_QUERIES="2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([l for l in proc.stderr.splitlines() if "made again" in l],
                         ["torch_rows: torch/layernorm_backward 3x5: 2 repetitions made again "
                          "with a longer wait: the host queued the op after the GPU's wait had "
                          "ended"])
        self.assertEqual(len(bench.read_rows(os.path.join(self.top, "t.csv"))), 2)

    def test_layernorm_backward_runs_and_is_checked(self):
        """The whole path, on tests/fake_torch (a stand-in for torch in plain
        Python): eager and compiled rows of op layernorm_backward with the
        driver's bytes, verified; a backward pass with its means over N - 1
        fails the float64 check (pass 0, exit 1)."""
        fake = os.path.join(REPO, "tests", "fake_torch")
        proc = self.run_torch_rows(sys.executable, "layernorm_backward,compiled/layernorm_backward",
                                   "3x5,4x7", PYTHONPATH=fake)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = bench.read_rows(os.path.join(self.top, "t.csv"))
        self.assertEqual([(r["step"], r["rows"], r["cols"]) for r in rows],
                         [("torch/" + op, r, c) for r, c in (("3", "5"), ("4", "7"))
                          for op in ("layernorm_backward", "compiled/layernorm_backward")])
        for r in rows:
            self.assertEqual((r["op"], float(r["bytes"]), r["pass"], r["mode"]),
                             ("layernorm_backward",
                              row_bytes("layernorm_backward", int(r["rows"]), int(r["cols"])),
                              "1", "timed"))
            self.assertLess(float(r["abs_err"]), 1e-6)
        os.remove(os.path.join(self.top, "t.csv"))
        proc = self.run_torch_rows(sys.executable, "layernorm_backward", "3x5", PYTHONPATH=fake,
                                   FAKE_TORCH_BROKEN="nm1")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        [row] = bench.read_rows(os.path.join(self.top, "t.csv"))
        self.assertEqual(row["pass"], "0")
        self.assertGreater(float(row["abs_err"]), 1e-3)

    def test_the_op_is_taken_and_a_wrong_one_refused(self):
        python = python_without_torch(self.top)
        proc = self.run_torch_rows(python, "layernorm_backward,compiled/layernorm_backward")
        self.assertEqual((proc.returncode, proc.stderr.strip()),
                         (3, "torch_rows: no torch in this python (skipped)"))
        proc = self.run_torch_rows(python, "layernorm_backward_f16")
        self.assertEqual(proc.returncode, 2)
        self.assert_one_line(proc.stderr, "torch_rows: error: --ops 'layernorm_backward_f16': ops are ")
        self.assertIn("layernorm_backward", proc.stderr)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("bench", verbosity=1))
