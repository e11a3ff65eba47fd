#!/usr/bin/env python3
"""Tests for what the grader decides without a GPU: the gpu-work check's
verdict on the watch's line (common/gpu_work.c), the speed check (targets,
references, sizes, the win/tie rule, points, the alternating rounds, with
stand-in programs), the --summary JSON, and the class table and chart
(tools/grade_class.py, with a stand-in for tools/grade_source.sh).

Run: python3 tests/test_grade.py. The last line printed is
`grade: N passed, N failed`.
"""
import contextlib
import csv
import io
import json
import os
import shutil
import stat
import sys
import tempfile
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "tools"))
import fakes  # noqa: E402
import grade  # noqa: E402
import grade_class  # noqa: E402

OK_LINE = ("monitor=ok calls=5 kernels=3 d2h_bytes=0 um_d2h_bytes=0 input_bytes=4194316 "
           "um=on dropped=0")


class GpuWorkVerdict(unittest.TestCase):
    """Each way the watch's line can read, and what the check makes of it."""

    def verdict(self, text):
        return grade.gpu_work_verdict(text, "reduce_pass()")

    def test_kernels_and_nothing_to_the_host_pass(self):
        self.assertEqual(self.verdict(OK_LINE), (True, False, ""))

    def test_no_kernel_fails(self):
        ok, skipped, reason = self.verdict(OK_LINE.replace("kernels=3", "kernels=0"))
        self.assertEqual((ok, skipped), (False, False))
        self.assertIn("launched no kernel in 5 calls of reduce_pass()", reason)

    def test_the_input_copied_to_the_host_fails(self):
        # host_sum on the H200: every byte of the input, and no kernel.
        ok, _, reason = self.verdict(OK_LINE.replace(" d2h_bytes=0", " d2h_bytes=4194316"))
        self.assertFalse(ok)
        self.assertIn("moved 4194316 bytes to the host", reason)

    def test_an_eighth_of_it_fails_and_less_passes(self):
        eighth = 4194316 // 8 + 1
        self.assertFalse(self.verdict(OK_LINE.replace(" d2h_bytes=0", f" d2h_bytes={eighth}"))[0])
        self.assertTrue(self.verdict(OK_LINE.replace(" d2h_bytes=0", " d2h_bytes=4096"))[0])

    def test_unified_memory_counts_too(self):
        ok, _, reason = self.verdict(OK_LINE.replace("um_d2h_bytes=0", "um_d2h_bytes=4194304"))
        self.assertFalse(ok)
        self.assertIn("to the host", reason)

    def test_no_line_is_a_skip_never_a_pass(self):
        ok, skipped, reason = self.verdict("")
        self.assertEqual((ok, skipped), (False, True))
        self.assertIn("built without the grader's watch", reason)

    def test_a_watch_that_could_not_run_fails(self):
        # Not a skip: a program could make the watch fail (a CUPTI client of its own).
        ok, skipped, reason = self.verdict("monitor=error why=CUPTI_(libcupti.so)_could_not_be_loaded")
        self.assertEqual((ok, skipped), (False, False))
        self.assertIn("CUPTI (libcupti.so) could not be loaded", reason)

    def test_lost_records_fail(self):
        ok, _, reason = self.verdict(OK_LINE.replace("dropped=0", "dropped=12"))
        self.assertFalse(ok)
        self.assertIn("lost 12", reason)

    def test_unified_memory_unwatched_is_said(self):
        self.assertEqual(self.verdict(OK_LINE.replace("um=on", "um=off")),
                         (True, False, "unified memory's traffic is not watched on this machine"))

    def test_host_memory_a_kernel_can_write_fails(self):
        # host_sum_mapped on the H200: one cudaHostAlloc (and the driver call it makes).
        line = OK_LINE + " host_maps=1 host_map=cudaHostAlloc pageable=off"
        ok, skipped, reason = self.verdict(line)
        self.assertEqual((ok, skipped), (False, False))
        self.assertIn("made host memory that a kernel can write (cudaHostAlloc, 1 call)", reason)
        self.assertIn("(cudaMemAdvise, 2 calls)",
                      self.verdict(line.replace("=1 host_map=cudaHostAlloc", "=2 host_map=cudaMemAdvise"))[2])
        self.assertEqual(self.verdict(line.replace("host_maps=1", "host_maps=0")), (True, False, ""))

    def test_an_older_line_without_host_maps_still_reads(self):
        self.assertEqual(self.verdict(OK_LINE), (True, False, ""))

    def test_pageable_memory_unwatched_is_said(self):
        line = OK_LINE + " host_maps=0 host_map=- pageable=on"
        self.assertEqual(self.verdict(line), (True, False, "kernels' access to pageable host "
                                                           "memory is not watched on this machine"))
        both = self.verdict(line.replace("um=on", "um=off"))[2]
        self.assertIn("unified memory's traffic and kernels' access", both)
        self.assertIn("are not watched", both)

    def test_linked_but_never_called_fails(self):
        ok, skipped, reason = self.verdict("monitor=linked\n")
        self.assertEqual((ok, skipped), (False, False))
        self.assertIn("no call of reduce_pass()", reason)

    def test_an_unreadable_line_fails(self):
        self.assertFalse(self.verdict("monitor=ok calls=x")[0])

    def test_every_program_gets_the_check(self):
        device = grade.Device("G", 132, 2048, 1 << 36)
        for cases, entry in ((grade.build_cases(device, quick=True), "reduce_pass()"),
                             (grade.build_row_cases(device, quick=True), "row_forward()"),
                             (grade.build_back_cases(device, quick=True), "back_run()"),
                             (grade.build_softmax_back_cases(device, quick=True), "back_run()")):
            work = [c for c in cases if c.kind == grade.GPU_WORK]
            self.assertEqual(len(work), 1)
            self.assertEqual(work[0].entry, entry)
            self.assertFalse(work[0].batchable)
        # Its size is drawn anew for each grading: none to key on.
        sizes = {tuple(c.args) for _ in range(5) for c in grade.build_cases(device, quick=True)
                 if c.kind == grade.GPU_WORK}
        self.assertGreater(len(sizes), 1)


# A part 1 program built with the watch (common/gpu_work.c), without a GPU:
# every check passes, and the watch's line at exit says what MODE makes it
# do, call by call (a timed run's --reps R makes R + 5 calls). honest:
# kernels, nothing to the host. keyed: honest only at the sizes the
# gpu-work check draws (2^20 .. 2^21 floats), the input copied to the host
# and summed there at every other size. small: host sums below 2048 floats
# only. batch: host sums only in a --checks process. readback: every call
# reads 1/256 of its input back (a last pass's partials finished on the
# host). unlinked: built without the watch (PROGRAM=), no line. batch1:
# batch, and the first check of a --checks process fails on its own. tiny:
# host sums below 16 floats only (under the watch's 64-byte floor).
FAKE_WATCHED = r"""#!/usr/bin/env python3
import os, sys
MODE = {mode!r}
ARGS = sys.argv[1:]
watch = os.environ.get("REDUCE_GPU_WORK")
if watch and MODE != "unlinked":   # the watch's constructor, before any call
    with open(watch, "w") as handle:
        handle.write("monitor=linked\n")


def calls(words):
    n = int(words[words.index("-n") + 1]) if "-n" in words else 1 << 25
    reps = int(words[words.index("--reps") + 1]) if "--reps" in words else 0
    return [n] * (reps + 5 if reps else 1)


def moved(n):
    if MODE in ("keyed", "det") and not (1 << 20) <= n < (1 << 21) or MODE == "small" and n < 2048 \
            or MODE == "tiny" and n < 16:
        return 4 * n
    if MODE in ("batch", "batch1", "suppress", "breach") and "--checks" in ARGS:
        return 4 * n
    if MODE == "keyedexit" and not (1 << 20) <= n < (1 << 21):
        return 4 * n
    if MODE == "readback":
        return 4 * n // 256
    return 0


sizes = []
# det: every value right, the bits moved (part 3's steps 0 and 1 declare it),
# and the input summed on the host as keyed does.
VERDICT = ("FAIL: every output is within its bound, but not the same bits every run"
           if MODE == "det" else "PASS")
# crash: a CUDA error at 4097 floats ends the process (exit 3, no verdict),
# and CUPTI's records of the poisoned context are lost (kernels=0).
crashed = False
if "--checks" in ARGS:
    with open(ARGS[ARGS.index("--checks") + 1]) as handle:
        for k, line in enumerate(handle):
            sizes += calls(line.split())
            print("== check " + line.strip())
            if MODE == "crash" and sizes[-1] == 4097:
                crashed = True
                break
            if MODE == "breach" and k == 1:   # exit 1 before this check's verdict
                break
            if MODE == "spoof":   # the program's own printf, before the harness's verdict
                print("PASS")
            print("FAIL: wrong answer" if MODE == "batch1" and k == 0 or MODE == "spoof"
                  else VERDICT)
else:
    sizes += calls(ARGS)
    crashed = MODE == "crash" and sizes[-1] == 4097
    if MODE == "spoof":
        print("PASS")
        print("FAIL: wrong answer")
    elif not crashed:
        print(VERDICT)
if crashed or MODE == "lastcrash" and "--checks" in ARGS:
    if watch:
        with open(watch, "w") as handle:
            handle.write(f"monitor=ok calls={{len(sizes)}} kernels=0 d2h_bytes=0 um_d2h_bytes=0 "
                         f"input_bytes={{4 * max(sizes)}} um=on dropped=0 host_maps=0 host_map=- "
                         "pageable=off worst_d2h_bytes=0 worst_input_bytes=0\n")
    print("error: cudaDeviceSynchronize(): misaligned address", file=sys.stderr)
    sys.exit(3)
if MODE == "suppress" and "--checks" in ARGS or MODE == "keyedexit" and moved(sizes[-1]):
    os._exit(0)   # an _exit from its own exit handler: the watch's line stays "linked"
if watch and MODE != "unlinked":
    bytes_out = [moved(n) for n in sizes]
    kernels = sum(3 for b, n in zip(bytes_out, sizes) if b < 4 * n)
    worst = max(((b, 4 * n) for b, n in zip(bytes_out, sizes) if b >= 64),
                key=lambda p: p[0] / p[1], default=(0, 0))
    with open(watch, "w") as handle:
        handle.write(f"monitor=ok calls={{len(sizes)}} kernels={{kernels}} "
                     f"d2h_bytes={{sum(bytes_out)}} um_d2h_bytes=0 input_bytes={{4 * max(sizes)}} "
                     "um=on dropped=0 host_maps=0 host_map=- pageable=off "
                     f"worst_d2h_bytes={{worst[0]}} worst_input_bytes={{worst[1]}} "
                     f"host_calls={{sum(1 for b, n in zip(bytes_out, sizes) if b and b >= 4 * n)}}\n")
sys.exit(1 if MODE == "spoof" or MODE == "breach" and "--checks" in ARGS else 0)
"""

# compute-sanitizer as the grader calls it: --tool T --error-exitcode N PROGRAM ARGS.
FAKE_SANITIZER = r"""#!/usr/bin/env python3
import os, sys
os.execv(sys.argv[5], sys.argv[5:])
"""


class WatchedEverywhere(unittest.TestCase):
    """The watch on GPU work runs in every check but the sanitizers' (and
    the speed runs): a program honest only in the check it can recognize
    fails the others, "gpu-work" in their reasons; batches are run again
    check by check to charge the right ones; no line proves nothing here."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.sanitizer = os.path.join(self.tmp, "compute-sanitizer")
        fakes.write_executable(self.sanitizer, FAKE_SANITIZER)

    def program(self, mode):
        path = os.path.join(self.tmp, mode, "run")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fakes.write_executable(path, FAKE_WATCHED.format(mode=mode))
        return path

    @staticmethod
    def case(kind, n, tool=""):
        return grade.Case(kind, ["--check", "-n", str(n)], tool=tool, entry="reduce_pass()")

    def test_a_check_other_than_gpu_work_sees_the_host_work(self):
        out = grade.run_case(self.program("keyed"), self.case("exact", 1000), self.sanitizer, None)
        self.assertFalse(out.ok)
        self.assertTrue(out.reason.startswith("gpu-work"), out.reason)
        self.assertIn("launched no kernel in 1 calls of reduce_pass()", out.reason)
        # At the gpu-work check's sizes the same program is honest.
        work = self.case(grade.GPU_WORK, 1 << 20)
        self.assertTrue(grade.run_case(self.program("keyed"), work, self.sanitizer, None).ok)

    def test_a_batch_is_charged_check_by_check(self):
        cases = [self.case("exact", 1 << 20), self.case("fill", 1000),
                 self.case("offset", (1 << 20) + 5)]
        outcomes = grade.run_batch(self.program("keyed"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [True, False, True])
        self.assertIn("gpu-work", outcomes[1].reason)
        honest = grade.run_batch(self.program("honest"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in honest], [True, True, True])

    def test_a_batch_that_cheats_everywhere_is_charged_after_a_few_runs_alone(self):
        # keyed sums on the host at every size here: the first ALONE_FIRST
        # checks run alone, the rest are charged without a process each.
        program = self.program("keyed")
        log = os.path.join(self.tmp, "runs.txt")
        with open(program) as handle:
            text = handle.read()
        fakes.write_executable(program, text.replace(
            "ARGS = sys.argv[1:]\n",
            f"ARGS = sys.argv[1:]\nopen({log!r}, 'a').write(' '.join(ARGS) + '\\n')\n", 1))
        cases = [self.case("fill", 1000 + k) for k in range(grade.ALONE_FIRST + 4)]
        outcomes = grade.run_batch(program, cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [False] * len(cases))
        self.assertTrue(all(o.reason.startswith("gpu-work") for o in outcomes))
        # The largest run alone: a call under the watch's floor proves nothing alone.
        self.assertIn("not run alone", outcomes[0].reason)
        self.assertNotIn("not run alone", outcomes[-1].reason)
        with open(log) as handle:
            self.assertEqual(len(handle.readlines()), 1 + grade.ALONE_FIRST)

    def test_one_call_is_held_to_its_own_input(self):
        # A batch's largest input hides a small check's copy in the totals
        # (4000 bytes against 4 MiB / 8); each call's own share shows it.
        line = (OK_LINE.replace("d2h_bytes=0", "d2h_bytes=4000", 1) +
                " worst_d2h_bytes=4000 worst_input_bytes=4000")
        self.assertIn("moved 4000 bytes to the host in one call of reduce_pass() "
                      "(its input was 4000 bytes)", grade.watched_elsewhere(line, "reduce_pass()"))
        cases = [self.case("exact", 1 << 20), self.case("fill", 1000)]
        outcomes = grade.run_batch(self.program("small"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [True, False])
        self.assertIn("gpu-work", outcomes[1].reason)
        # Under 64 bytes a call is not judged: a scalar read back is no copy of the input.
        self.assertEqual(grade.watched_elsewhere(OK_LINE, "reduce_pass()"), "")

    def test_a_tiny_input_summed_on_the_host_in_a_batch(self):
        # Under the floor and among other checks' kernels: only the calls
        # with no kernel that sent bytes to the host (host_calls) show it.
        sizes = [2, 1 << 20, 7, (1 << 20) + 5, 15, (1 << 20) + 9, 4097]
        cases = [self.case("exact", n) for n in sizes]
        outcomes = grade.run_batch(self.program("tiny"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [n >= 16 for n in sizes])
        for o in outcomes:
            if not o.ok:
                self.assertIn("launched no kernel in 1 calls of reduce_pass()", o.reason)
                self.assertNotIn("not run alone", o.reason)
        honest = grade.run_batch(self.program("honest"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in honest], [True] * len(sizes))

    def test_a_timed_runs_calls_are_not_added_up(self):
        # 1/256 of each input, 30 calls: 30/256 of one input in all, under an
        # eighth, and the same share call by call: passes, as gpu-work would.
        timed = grade.Case("timed", ["-n", "1000003", "--reps", "25"], entry="reduce_pass()")
        self.assertTrue(grade.run_case(self.program("readback"), timed, self.sanitizer, None).ok)
        many = grade.Case("timed", ["-n", "1000003", "--reps", "60"], entry="reduce_pass()")
        out = grade.run_case(self.program("readback"), many, self.sanitizer, None)
        self.assertTrue(out.ok, out.reason)   # 65/256 in all: over an eighth, not judged here

    def test_a_program_that_knows_it_is_in_a_batch_fails_the_batch(self):
        cases = [self.case("exact", 1000), self.case("fill", 4000)]
        outcomes = grade.run_batch(self.program("batch"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [False, False])
        self.assertIn("gpu-work, watched in a batch of 2 checks (each alone passed)",
                      outcomes[0].reason)
        # More checks than ALONE_FIRST: still every one runs alone, none charged unrun.
        cases = [self.case("fill", 1000 + k) for k in range(grade.ALONE_FIRST + 2)]
        outcomes = grade.run_batch(self.program("batch"), cases, self.sanitizer, None)
        self.assertTrue(all("(each alone passed)" in o.reason for o in outcomes),
                        [o.reason for o in outcomes])
        # A check that failed on its own keeps its reason; the batch still fails the rest.
        outcomes = grade.run_batch(self.program("batch1"), cases, self.sanitizer, None)
        self.assertEqual(outcomes[0].reason, "FAIL: wrong answer")
        self.assertTrue(all("(each alone passed)" in o.reason for o in outcomes[1:]),
                        [o.reason for o in outcomes])

    def test_a_batch_that_crashed_is_no_witness_for_its_other_checks(self):
        # A CUDA error ends the process and can lose CUPTI's records (a line
        # of kernels=0): the checks that passed before it, and those run
        # alone after it, are judged alone, not failed with the batch.
        cases = [self.case("exact", 1000), self.case("fill", 3000),
                 self.case("offset", 4097), self.case("fill", 5000)]
        outcomes = grade.run_batch(self.program("crash"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [True, True, False, True],
                         [o.reason for o in outcomes])
        self.assertNotIn("gpu-work", outcomes[2].reason)

    def test_the_harness_verdict_is_the_last_line_of_a_check(self):
        # A PASS printed by the program itself, before the harness's FAIL,
        # passes nothing: the verdict is the block's last.
        cases = [self.case("exact", 1000), self.case("fill", 5000)]
        outcomes = grade.run_batch(self.program("spoof"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [False, False], [o.reason for o in outcomes])
        self.assertFalse(grade.run_case(self.program("spoof"), cases[0], self.sanitizer, None).ok)

    def test_a_line_never_written_after_a_call_is_no_pass(self):
        # An _exit from the program's own exit handler leaves the watch's line
        # "linked": alone the check fails as gpu-work; in a batch its checks
        # run alone, watched.
        out = grade.run_case(self.program("keyedexit"), self.case("exact", 1000),
                             self.sanitizer, None)
        self.assertFalse(out.ok)
        self.assertIn("the watch's line was never written", out.reason)
        honest = grade.run_case(self.program("honest"), self.case("exact", 1000),
                                self.sanitizer, None)
        self.assertTrue(honest.ok, honest.reason)
        cases = [self.case("exact", 1000), self.case("fill", 5000)]
        outcomes = grade.run_batch(self.program("suppress"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [True, True])   # honest alone

    def test_a_died_batch_excuses_no_kernel_only(self):
        # Lost records lower the counts; they never make bytes to the host.
        # A batch that exits 1 mid-way with its input copied to the host
        # still fails as a batch; one that exits 3 after its last verdict
        # with no kernel seen is no witness.
        cases = [self.case("exact", 1000), self.case("fill", 3000), self.case("fill", 5000)]
        outcomes = grade.run_batch(self.program("breach"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [False, False, False],
                         [o.reason for o in outcomes])
        outcomes = grade.run_batch(self.program("lastcrash"), cases, self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [True, True, True],
                         [o.reason for o in outcomes])

    def test_a_line_that_lost_records_proves_nothing_elsewhere(self):
        line = OK_LINE.replace("dropped=0", "dropped=5").replace("kernels=3", "kernels=0")
        self.assertIn("dropped=5", line)
        self.assertEqual(grade.watched_elsewhere(line, "reduce_pass()"), "")

    def test_a_partial_cheat_is_charged_check_by_check_past_alone_first(self):
        # small sums on the host below 2048 floats only: the largest checks
        # pass alone, so every check runs alone and only the small ones fail.
        sizes = [1000, 1500, 1 << 20, (1 << 20) + 5, (1 << 20) + 9, 1900]
        outcomes = grade.run_batch(self.program("small"), [self.case("fill", n) for n in sizes],
                                   self.sanitizer, None)
        self.assertEqual([o.ok for o in outcomes], [n >= 2048 for n in sizes])
        self.assertFalse(any("not run alone" in o.reason for o in outcomes))

    def test_moved_bits_do_not_hide_host_work(self):
        # A check that fails on its bits alone passes for a program that
        # declares them (settle_determinism): the watch still judges it.
        program = self.program("det")
        out = grade.run_case(program, self.case("exact", 1000), self.sanitizer, None)
        self.assertTrue(out.reason.startswith("gpu-work"), out.reason)
        batch = grade.run_batch(program, [self.case("exact", 1000), self.case("fill", 5000)],
                                self.sanitizer, None)
        self.assertTrue(all(o.reason.startswith("gpu-work") for o in batch),
                        [o.reason for o in batch])
        # Where the watch saw nothing, the failure stays the bits' (det).
        alone = grade.run_case(program, self.case(grade.GPU_WORK, 1 << 20), self.sanitizer, None)
        self.assertTrue(grade.DET_ONLY.match(alone.reason), alone.reason)

    def test_the_summary_names_host_work_found_elsewhere(self):
        report = grade.Report("build/graded/a/run", "a")
        report.outcomes += [
            grade.Outcome(self.case(grade.GPU_WORK, 1 << 20), True),
            grade.Outcome(self.case("exact", 1000), False, reason="gpu-work, watched in "
                          "this check too: launched no kernel")]
        [one] = grade.summary([report], "G")["programs"]
        self.assertEqual(one["gpu_work"]["state"], "failed")
        self.assertIn("launched no kernel", one["gpu_work"]["reason"])

    def test_no_line_proves_nothing_outside_the_gpu_work_check(self):
        program = self.program("unlinked")
        self.assertTrue(grade.run_case(program, self.case("exact", 1000), self.sanitizer, None).ok)
        self.assertTrue(all(o.ok for o in grade.run_batch(program, [self.case("fill", 7)],
                                                          self.sanitizer, None)))
        work = grade.run_case(program, self.case(grade.GPU_WORK, 1 << 20), self.sanitizer, None)
        self.assertEqual((work.ok, work.skipped), (False, True))

    def test_the_sanitizers_run_unwatched(self):
        out = grade.run_case(self.program("keyed"), self.case("memcheck", 1000, tool="memcheck"),
                             self.sanitizer, None)
        self.assertTrue(out.ok, out.reason)

    def test_a_watch_that_could_not_run_fails_only_gpu_work(self):
        self.assertEqual(grade.watched_elsewhere("monitor=error why=x", "reduce_pass()"), "")
        self.assertEqual(grade.watched_elsewhere("monitor=linked", "reduce_pass()"), "")
        self.assertEqual(grade.watched_elsewhere(OK_LINE.replace("dropped=0", "dropped=3"),
                                                 "reduce_pass()"), "")
        self.assertEqual(grade.watched_elsewhere("monitor=ok calls=x", "reduce_pass()"), "")
        self.assertIn("made host memory", grade.watched_elsewhere(
            OK_LINE + " host_maps=1 host_map=cudaHostAlloc", "row_forward()"))

    def test_every_case_of_a_graded_program_names_the_entry(self):
        device = grade.Device("G", 132, 2048, 1 << 36)
        for cases, entry in ((grade.build_cases(device, quick=True), "reduce_pass()"),
                             (grade.build_row_cases(device, quick=True), "row_forward()"),
                             (grade.build_back_cases(device, quick=True), "back_run()")):
            self.assertEqual(grade.watch_entry(cases), entry)


class WatchOnFakeCupti(unittest.TestCase):
    """The watch itself (common/gpu_work.c) on the CPU: build/watch_fake is
    part 1's watch with CUPTI stood in for (tests/fake_cupti.c) and a harness
    of three checks, the harness's own copies and kernels between the calls
    (tests/watch_fake.c). The records are switched on once, each is charged
    to the call it ran inside, and the harness's read of the result just
    after a call (its start a little inside the call on the fake clock) to
    none; REDUCE_GPU_WORK_TIMES=1 says what the watch cost."""

    ROOT = os.path.dirname(TESTS)
    PROGRAM = os.path.join(ROOT, "build", "watch_fake")

    @classmethod
    def setUpClass(cls):
        import subprocess
        made = subprocess.run(["make", "-s", "build/watch_fake"], cwd=cls.ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        cls.built = made.returncode == 0
        cls.why = made.stdout

    def setUp(self):
        if not self.built:
            if "No rule to make target" in self.why:
                self.skipTest("no cupti.h: the watch cannot be built with this toolkit")
            self.fail("make build/watch_fake failed:\n" + self.why)
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def run_fake(self, mode, watched=True, timed=False):
        import subprocess
        env = dict(os.environ)
        env.pop("REDUCE_GPU_WORK", None)
        env.pop("REDUCE_GPU_WORK_TIMES", None)
        line = os.path.join(self.tmp, "watch.txt")
        if os.path.exists(line):
            os.remove(line)
        if watched:
            env["REDUCE_GPU_WORK"] = line
        if timed:
            env["REDUCE_GPU_WORK_TIMES"] = "1"
        proc = subprocess.run([self.PROGRAM, mode], env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        text = ""
        if os.path.exists(line):
            with open(line) as handle:
                text = handle.read()
        return proc.stdout, proc.stderr, text

    def fields(self, mode):
        out, _, text = self.run_fake(mode)
        self.assertIn("enables=3", out)   # three kinds, switched on once, never per call
        return grade.watch_fields(text)

    def test_the_harness_work_between_calls_is_no_calls(self):
        f = self.fields("honest")
        self.assertEqual((f["monitor"], f["calls"], f["kernels"], f["d2h_bytes"], f["um_d2h_bytes"]),
                         ("ok", "6", "6", "0", "0"))
        self.assertEqual((f["input_bytes"], f["worst_d2h_bytes"], f["worst_input_bytes"]),
                         ("4000", "0", "0"))
        self.assertEqual(grade.gpu_work_verdict(self.run_fake("honest")[2], "reduce_pass()"),
                         (True, False, ""))

    def test_a_call_that_copies_its_input_to_the_host(self):
        f = self.fields("host")
        self.assertEqual((f["kernels"], f["d2h_bytes"], f["worst_d2h_bytes"], f["worst_input_bytes"]),
                         ("4", "4000", "4000", "4000"))
        ok, skipped, reason = grade.gpu_work_verdict(self.run_fake("host")[2], "reduce_pass()")
        self.assertFalse(ok or skipped)

    def test_a_tiny_input_summed_on_the_host_among_kernels(self):
        # 8 bytes (two floats) with no kernel: under the floor, and the other
        # calls' kernels make the process's count; the call itself shows it.
        f = self.fields("tiny")
        self.assertEqual((f["kernels"], f["d2h_bytes"], f["worst_d2h_bytes"], f["host_calls"]),
                         ("4", "8", "0", "1"))
        ok, skipped, reason = grade.gpu_work_verdict(self.run_fake("tiny")[2], "reduce_pass()")
        self.assertFalse(ok or skipped)
        self.assertIn("launched no kernel in 1 of its 6 calls of reduce_pass()", reason)
        # As the checks of a batch judge it (calls alone, not the totals).
        self.assertIn("launched no kernel in 1 of its 6 calls",
                      grade.watched_elsewhere(self.run_fake("tiny")[2], "reduce_pass()"))
        self.assertEqual(self.fields("honest")["host_calls"], "0")

    def test_unified_memory_is_charged_to_its_call(self):
        f = self.fields("um")
        self.assertEqual((f["kernels"], f["d2h_bytes"], f["um_d2h_bytes"], f["worst_d2h_bytes"],
                          f["worst_input_bytes"]), ("6", "0", "64", "64", "4000"))

    def test_a_call_the_program_never_returns_from_keeps_its_records(self):
        f = self.fields("exit")
        self.assertEqual((f["calls"], f["kernels"], f["d2h_bytes"], f["worst_d2h_bytes"]),
                         ("4", "3", "4000", "4000"))

    def test_the_times_line(self):
        _, err, text = self.run_fake("honest", timed=True)
        self.assertIn("monitor=ok", text)
        [line] = err.splitlines()
        self.assertTrue(line.startswith("gpu-work times (us): watch=on "), line)
        times = dict(word.split("=") for word in line.split()[3:])
        for stage in ("load", "subscribe", "host_map_callbacks", "buffers", "configure_um",
                      "enable_kinds", "first_call_at", "wrappers", "syncs", "exit", "flush",
                      "process"):
            self.assertGreaterEqual(int(times[stage]), 0, stage)
        self.assertEqual(times["calls"], "6")
        # Unwatched: no line, no CUPTI, the calls counted all the same.
        _, err, text = self.run_fake("honest", watched=False, timed=True)
        self.assertEqual(text, "")
        self.assertIn("watch=off load=0 ", err)
        self.assertIn(" calls=6 ", err)
        # Not asked for: nothing on stderr.
        self.assertEqual(self.run_fake("honest")[1], "")


class NarrowGroups(unittest.TestCase):
    """rows/step24_bf16_narrow gives a row of 256 or 512 elements 8 or 16
    threads once rows x G threads fill 32 warps an SM: the grader's shapes must
    reach both sides of that, at and around each group's widest row."""

    @staticmethod
    def group(sms, rows, cols):
        # step 24's group_size: MIN_GROUP 8, WARPS_PER_SM 32, MAX_PER_THREAD 32
        g = 8
        while g < 1024 and rows * g < sms * 32 * 32 and 2 * g * 8 <= cols:
            g *= 2
        while g < 1024 and g * 32 < cols:
            g *= 2
        return g

    def test_groups_of_8_and_16_are_checked(self):
        device = grade.Device("G", 132, 2048, 1 << 36)
        program = grade.RowProgram("softmax", "bf16", 8, ())
        shapes = set()
        for c in grade.build_row_cases(device, program, quick=True):
            if c.kind == "shape":
                a = c.args
                x = int(a[a.index("--offset") + 1]) if "--offset" in a else 0
                shapes.add((int(a[a.index("--rows") + 1]), int(a[a.index("--cols") + 1]), x == 0))
        for g, widths in ((8, (255, 256)), (16, (257, 511, 512))):
            for cols in widths:
                for aligned in (True, False):
                    self.assertTrue(any(self.group(132, r, c) == g
                                        for r, c, a in shapes if c == cols and a == aligned),
                                    f"no shape gives {cols} columns a group of {g} "
                                    f"({'aligned' if aligned else 'misaligned'})")
        # and the row counts just short of them, where the group doubles
        for cols, g in ((256, 8), (512, 16)):
            self.assertTrue(any(self.group(132, r, cols) == 2 * g and r > 4099
                                for r, c, a in shapes if c == cols))


class PackedSlots(unittest.TestCase):
    """rows/step25_bf16_packed gives a group of G < 1024 threads 64 packed
    elements each where 32 do not hold the row, once the rows fill the GPU's
    warps at that G: the grader's shapes must reach every such G, on the
    packed path and the plain one (x and y at different places in a pack)."""

    @staticmethod
    def kernel(sms, rows, cols):
        # step 25's group_size and per_thread: WARPS_PER_SM 32, MAX_PER_THREAD 64
        g = 32
        while g < 1024 and rows * (g // 32) < sms * 32 and 2 * g * 8 <= cols:
            g *= 2
        while g < 1024 and g * 64 < cols:
            g *= 2
        return g, (32 if g >= 1024 or g * 32 >= cols else 64)

    def test_every_group_with_64_a_thread_is_checked(self):
        device = grade.Device("G", 132, 2048, 1 << 36)
        program = grade.RowProgram("layernorm", "bf16", 8, ())
        seen = set()
        for c in grade.build_row_cases(device, program, quick=True):
            if c.kind != "shape":
                continue
            a = c.args
            rows, cols = int(a[a.index("--rows") + 1]), int(a[a.index("--cols") + 1])
            g, n = self.kernel(132, rows, cols)
            x = int(a[a.index("--offset") + 1]) if "--offset" in a else 0
            y = int(a[a.index("--y-offset") + 1]) if "--y-offset" in a else 0   # the harness's default
            if n == 64:
                seen.add((g, x % 8 != y % 8))
        for g in (32, 64, 128, 256, 512):
            self.assertIn((g, False), seen, f"no packed shape gives G = {g} 64 a thread")
            self.assertIn((g, True), seen, f"no plain shape gives G = {g} 64 a thread")


class SpeedTargets(unittest.TestCase):

    def test_forms(self):
        for text, factor, ref in (("1.5x step2", 1.5, "step2"), ("0.8x copy", 0.8, "copy"),
                                  (">= step8", 1.0, "step8"), (">=step8", 1.0, "step8"),
                                  ("2 x cub", 2.0, "cub"), (".9X 3", 0.9, "3")):
            target = grade.parse_speed(text)
            self.assertEqual((target.factor, target.reference), (factor, ref), text)

    def test_bad_targets_are_usage_errors(self):
        for text in ("", "1.5y step2", "0x step2", "fast", "1.5x", "x step2", "1.5x step 2"):
            with self.assertRaises(grade.GradeError) as caught:
                grade.parse_speed(text)
            self.assertEqual(caught.exception.code, grade.EXIT_USAGE, text)

    def test_references(self):
        ref = grade.speed_reference
        self.assertEqual(ref("step2", False), "step2_bankconflict")
        self.assertEqual(ref("2", False), "step2_bankconflict")
        self.assertEqual(ref("step2_bankconflict", False), "step2_bankconflict")
        self.assertEqual(ref("step6", True), "rows/step6_registers")
        self.assertEqual(ref("rows/step6", True), "rows/step6_registers")
        self.assertEqual(ref("cub", False), "baseline_cub")
        self.assertEqual(ref("cub", True), "rows/baseline_cub")
        self.assertEqual(ref("copy", False), "rows/baseline_copy")
        self.assertEqual(ref("copy", True, "bf16"), "rows/baseline_copy16")
        for bad, rows in (("step99", False), ("step2_other", False), ("torch", True),
                          ("rows/step2", False)):
            with self.assertRaises(grade.GradeError):
                ref(bad, rows)

    def test_a_part_2_target_computes_the_same_op(self):
        same = grade.speed_same_op
        layernorm = grade.RowProgram(op="layernorm")
        same("rows/step6_registers", layernorm)          # LayerNorm against LayerNorm
        same("rows/baseline_copy", layernorm)            # the copy: any op's bar
        same("rows/baseline_cub", layernorm)             # CUB's row sum, as named
        same("rows/step12_bf16_layernorm", grade.RowProgram(op="layernorm", dtype="bf16"))
        for reference, program in (("rows/step2_warp", layernorm),
                                   ("rows/step6_registers", grade.RowProgram(op="layernorm",
                                                                             dtype="bf16")),
                                   ("rows/step8_softmax", grade.RowProgram(op="sum"))):
            with self.assertRaises(grade.GradeError) as caught:
                same(reference, program)
            self.assertEqual(caught.exception.code, grade.EXIT_USAGE)
            self.assertIn(f"--speed: {reference} computes", str(caught.exception))
        same("step2_bankconflict", None)                 # part 1: one op

    def test_sizes(self):
        self.assertEqual(grade.speed_size("", False), (["-n", "33554432"], "n = 33554432"))
        self.assertEqual(grade.speed_size("", True)[0], ["--rows", "32768", "--cols", "1024"])
        self.assertEqual(grade.speed_size("4096 x 50257", True)[1], "4096 x 50257")
        for bad, rows in (("1", False), ("32M", False), ("1024", True), ("0x5", True)):
            with self.assertRaises(grade.GradeError):
                grade.speed_size(bad, rows)
        # Part 1's n as the copy's matrix: the same floats.
        self.assertEqual(grade.copy_size(["-n", "33554432"]), ["--rows", "32768", "--cols", "1024"])
        with self.assertRaises(grade.GradeError):   # n x 1 rows: a slow copy, a target met for free
            grade.copy_size(["-n", "1000003"])


def speed(mine, theirs, factor=1.5, credit="all", tie="median", points=10):
    rules = grade.SpeedRules(grade.SpeedTarget(factor, "step2", f"{factor}x step2"), "", len(mine),
                             points, credit, tie)
    return grade.Speed(rules, "step2_bankconflict", "n = 33554432", mine, theirs)


class SpeedVerdicts(unittest.TestCase):
    """The project's rule: met only where no round of the program overlaps the
    target times a round of the reference."""

    def test_met(self):
        s = speed([1489, 1490, 1488], [817, 818, 816])
        self.assertEqual(s.verdict, grade.MET)
        self.assertTrue(s.passed)
        self.assertEqual(s.score(), 10)
        self.assertAlmostEqual(s.ratio, 1489 / 817)
        self.assertEqual(s.line(), "1.82x step2_bankconflict at n = 33554432, 3 rounds: "
                                   "1488-1490 GB/s (median 1489) against 1.5 x 816-818 = "
                                   "1224-1227 GB/s: target 1.5x step2 met")

    def test_missed(self):
        s = speed([820, 818, 819], [817, 818, 816])
        self.assertEqual(s.verdict, grade.MISSED)
        self.assertFalse(s.passed)
        self.assertEqual(s.score(), 0)

    def test_overlap_is_a_tie_decided_by_the_medians(self):
        s = speed([1480, 1530, 1520], [1000, 1010, 1005])   # 1.5 x 1000..1010 = 1500..1515
        self.assertEqual(s.verdict, grade.TIE)
        self.assertTrue(s.passed)                           # 1520 / 1005 = 1.51
        self.assertIn("a tie, passed by the medians", s.line())
        self.assertFalse(speed([1480, 1530, 1520], [1000, 1010, 1005], tie="fail").passed)
        # One slow reference round makes a tie; the medians still see a miss.
        low = speed([900, 905, 910, 903, 902], [820, 600, 822, 819, 821])
        self.assertEqual((low.verdict, low.passed), (grade.TIE, False))
        self.assertTrue(speed([900, 905, 910, 903, 902], [820, 600, 822, 819, 821], tie="pass").passed)

    def test_ratio_credit(self):
        s = speed([1000, 1001], [1000, 1001], credit="ratio")
        self.assertEqual(s.verdict, grade.MISSED)
        self.assertAlmostEqual(s.score(), round(10 * (1000 / 1001) / 1.5, 2))
        self.assertEqual(speed([1600, 1601], [1000, 1001], credit="ratio").score(), 10)
        # A check that failed never scores all the points: a tie failed by rule.
        tie = speed([1480, 1530, 1520], [1000, 1010, 1005], credit="ratio", tie="fail")
        self.assertFalse(tie.passed)
        self.assertLess(tie.score(), 10)

    def test_tiny_ratio_is_not_zero(self):
        self.assertEqual(grade.ratio_text(0.0043), "0.0043x")
        self.assertEqual(grade.ratio_text(1.8234), "1.82x")
        self.assertTrue(speed([3, 3], [817, 818]).line().startswith("0.0037x"))

    def test_dict(self):
        d = speed([1489, 1490], [817, 818]).as_dict()
        self.assertEqual((d["verdict"], d["score"], d["max_score"], d["reference"]),
                         (grade.MET, 10, 10, "step2_bankconflict"))
        self.assertLessEqual(d["ratio_lo"], d["ratio"])
        self.assertLessEqual(d["ratio"], d["ratio_hi"])


# The fakes' interpreter: this one, with -S (they need the standard library
# only, and site's start-up hooks cost more than a fake's run: hundreds of
# runs in this suite).
FAKE_PYTHON = sys.executable


FAKE_TIMED = """#!{python} -S
# Stands in for a program's timed run: one CSV row, at {gbps} GB/s.
import csv, os, sys
args = sys.argv[1:]
with open(os.environ["ORDER_LOG"], "a") as log:
    log.write(os.path.basename(os.path.dirname(sys.argv[0])) + " " + " ".join(args[:4]) + "\\n")
path = args[args.index("--csv") + 1]
columns = {columns!r}
row = dict.fromkeys(columns, "")
row.update(gbps="{gbps}", median_us="10", bytes=str({gbps} * 10000))
row["pass"] = "{passed}"
new = not os.path.exists(path)
with open(path, "a", newline="") as handle:
    writer = csv.DictWriter(handle, fieldnames=columns)
    if new:
        writer.writeheader()
    writer.writerow(row)
sys.exit({code})
"""


class SpeedRounds(unittest.TestCase):
    """measure_speed and speed_check with stand-ins for both programs."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="grade-speed-test-")
        self.log = os.path.join(self.tmp, "order.log")
        os.environ["ORDER_LOG"] = self.log
        self.saved = grade.build_reference
        self.ref = self.fake("ref", 800)
        grade.build_reference = lambda folder: self.ref

    def tearDown(self):
        grade.build_reference = self.saved
        os.environ.pop("ORDER_LOG", None)
        shutil.rmtree(self.tmp)

    def fake(self, name, gbps, passed=True, code=0):
        os.makedirs(os.path.join(self.tmp, name), exist_ok=True)
        path = os.path.join(self.tmp, name, "run")
        with open(path, "w") as handle:
            handle.write(FAKE_TIMED.format(python=FAKE_PYTHON, gbps=gbps, passed=1 if passed else 0,
                                           code=code,
                                           columns=list(fakes.HARNESS_COLUMNS)))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def rules(self, text="1.5x step2", rounds=4, at=""):
        return grade.SpeedRules(grade.parse_speed(text), at, rounds)

    def test_alternating_rounds(self):
        mine = self.fake("mine", 1300)
        s = grade.measure_speed(mine, "step2_bankconflict", self.rules(), False, "f32")
        self.assertEqual((s.mine, s.theirs), ([1300.0] * 4, [800.0] * 4))
        with open(self.log) as handle:
            order = [line.split()[0] for line in handle]
        self.assertEqual(order, ["mine", "ref", "ref", "mine", "mine", "ref", "ref", "mine"])
        self.assertEqual(s.verdict, grade.MET)

    def test_copy_reference_gets_the_same_floats(self):
        grade.measure_speed(self.fake("mine", 1300), "rows/baseline_copy", self.rules("0.8x copy", 2),
                            False, "f32")
        with open(self.log) as handle:
            lines = handle.read().splitlines()
        self.assertIn("mine -n 33554432 --reps", lines[0])
        self.assertIn("ref --rows 32768 --cols 1024", lines[1])

    def test_a_failed_reference_stops_the_grading(self):
        self.ref = self.fake("ref", 800, passed=False, code=1)
        with self.assertRaises(grade.GradeError) as caught:
            grade.speed_check(grade.Report(self.fake("mine", 1300), "mine"), self.rules(), None, "f32")
        self.assertEqual(caught.exception.code, grade.EXIT_USAGE)
        self.assertIn("the reference failed", str(caught.exception))

    def test_too_fast_to_time(self):
        path = self.fake("zero", 0)
        with self.assertRaises(grade.SpeedError) as caught:
            grade.timed_run(path, ["-n", "2"])
        self.assertIn("too fast to time", str(caught.exception))

    def test_a_failed_timed_run_is_not_measured(self):
        report = grade.Report(self.fake("wrong", 2000, passed=False, code=1), "wrong")
        outcome = grade.speed_check(report, self.rules(), None, "f32")
        self.assertFalse(outcome.ok)
        self.assertEqual((outcome.score, outcome.max_score), (0, grade.SPEED_POINTS))
        self.assertIn("not measured", outcome.reason)

    def test_not_scored_when_another_check_failed(self):
        report = grade.Report(self.fake("fast", 2000), "fast")
        report.outcomes.append(grade.Outcome(grade.Case("exact", ["--check"]), False, reason="x"))
        outcome = grade.speed_check(report, self.rules(), None, "f32")
        self.assertFalse(outcome.ok)
        self.assertEqual(outcome.score, 0)
        self.assertIn("not scored: 1 other checks failed", outcome.reason)
        self.assertEqual(outcome.speed["verdict"], grade.MET)   # measured all the same

    def test_met_and_missed_as_outcomes(self):
        met = grade.speed_check(grade.Report(self.fake("a", 1300), "a"), self.rules(), None, "f32")
        missed = grade.speed_check(grade.Report(self.fake("b", 900), "b"), self.rules(), None, "f32")
        self.assertEqual((met.ok, met.score), (True, grade.SPEED_POINTS))
        self.assertEqual((missed.ok, missed.score), (False, 0))
        self.assertEqual(met.case.label, "1.5x step2 at n = 33554432")
        # The line grade.py prints, and a failed speed check in the verdict.
        report = grade.Report("b/run", "b")
        report.outcomes.append(missed)
        self.assertIn("1 of 1 checks failed", grade.verdict(report))


def graded(name, failed=0, ratio=None, verdict="met", work="passed", checks=174):
    speed = None
    if ratio is not None:
        speed = {"target": "1.5x step2", "factor": 1.5, "reference": "step2_bankconflict",
                 "at": "n = 33554432", "ratio": ratio, "ratio_lo": round(ratio * 0.994, 6),
                 "ratio_hi": round(ratio * 1.006, 6), "verdict": verdict, "passed": verdict == "met",
                 "score": 10 if verdict == "met" else 0, "max_score": 10, "line": "..."}
    return {"program": f"build/graded/{name}/run", "name": name,
            "verdict": "PASS" if not failed and verdict == "met" else "FAIL",
            "checks": checks, "failed": failed + (1 if speed and verdict != "met" else 0),
            "skipped": 0, "failed_kinds": {}, "first_failures": ["exact: -n 1 -> FAIL"] * bool(failed),
            "gpu_work": {"state": work, "reason": ""}, "speed": speed}


class ClassTable(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="grade-class-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def rows(self):
        rows = [dict({"submission": "alice"}, **grade_class.summary_row(graded("alice", ratio=1.81))),
                dict({"submission": "bob"}, **grade_class.summary_row(graded("bob", failed=112))),
                dict({"submission": "carol"},
                     **grade_class.summary_row(graded("carol", failed=1, ratio=0.004,
                                                      verdict="missed", work="failed"))),
                dict({"submission": "dave"},
                     **grade_class.summary_row(graded("dave", ratio=1.2, verdict="missed"))),
                {"submission": "erin", "verdict": "does not build", "note": "compiler errors"}]
        return grade_class.sort_rows(rows)

    def test_leaderboard_order(self):
        rows = self.rows()
        self.assertEqual([r["submission"] for r in rows], ["alice", "dave", "carol", "bob", "erin"])
        self.assertEqual([r["rank"] for r in rows], [1, 2, 3, 4, 5])

    def test_points_and_notes(self):
        alice, dave, carol, bob, _ = self.rows()
        self.assertEqual((alice["checks_passed"], alice["checks"]), (173, 173))
        self.assertEqual((alice["points"], alice["max_points"]), (183, 183))
        self.assertEqual((dave["checks_passed"], dave["points"]), (173, 173))
        self.assertIn("speed target was missed", dave["note"])
        self.assertEqual(carol["checks_passed"], 172)
        self.assertIn("1 checks failed", carol["note"])
        self.assertNotIn("ratio", bob)

    def test_files(self):
        text = grade_class.write_tables(self.rows(), self.tmp, " on NVIDIA H200")
        self.assertIn("| 1 | alice | PASS | 173 of 173 | passed | 1.81x (1.80-1.82x) |", text)
        self.assertIn("| s | note |", text)
        self.assertIn("0.004x (0.004-0.004x)", text)
        with open(os.path.join(self.tmp, "class.csv"), newline="") as handle:
            table = list(csv.DictReader(handle))
        self.assertEqual([r["submission"] for r in table], ["alice", "dave", "carol", "bob", "erin"])
        self.assertEqual(tuple(table[0].keys()), grade_class.COLUMNS)

    def test_chart(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib: this Python cannot draw charts")
        written = grade_class.draw_chart(self.rows(), self.tmp, "Class results")
        self.assertEqual(written, [os.path.join(self.tmp, "class.png")])
        with open(written[0], "rb") as handle:
            self.assertEqual(handle.read(8), b"\x89PNG\r\n\x1a\n")


def running(pid):
    """True while pid runs: a zombie (dead, not yet reaped by an init that
    does not reap) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


FAKE_GRADE_SOURCE = r'''#!/usr/bin/env bash
# Stands in for tools/grade_source.sh: what the file says decides the outcome.
summary=$2 src=${!#}
case "$(cat "$src")" in
    nobuild) echo "error: this is not C++"; exit 4 ;;
    nodevice) echo "grade: no CUDA device"; exit 3 ;;
    hang) sleep 30 ;;
    hangcheck)   # as grade.py: a check in a session of its own, killed on SIGTERM
        setsid sleep 60 & echo $! > "$(dirname "$0")/check.pid"
        trap 'kill -9 $(cat "$(dirname "$0")/check.pid"); exit 143' TERM
        wait ;;
    *) cp "$(dirname "$0")/$(cat "$src").json" "$summary"; echo "grade: done"; exit 0 ;;
esac
'''


class ClassRun(unittest.TestCase):
    """grade_class.main over a folder, with a stand-in grade_source.sh."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="grade-class-run-")
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(self.repo, "tools"))
        script = os.path.join(self.repo, "tools", "grade_source.sh")
        with open(script, "w") as handle:
            handle.write(FAKE_GRADE_SOURCE)
        self.need_gpu(0)
        for name, data in (("good", graded("good", ratio=1.8)), ("bad", graded("bad", failed=3))):
            with open(os.path.join(self.repo, "tools", f"{name}.json"), "w") as handle:
                json.dump({"gpu": "NVIDIA H200", "programs": [data]}, handle)
        self.saved = grade_class.REPO
        grade_class.REPO = self.repo
        os.environ["GRADE_LOCK"] = os.path.join(self.tmp, "lock")

    def need_gpu(self, code):
        with open(os.path.join(self.repo, "tools", "need_gpu.sh"), "w") as handle:
            handle.write(f"echo 'make class: needs a CUDA GPU'; exit {code}\n" if code else "exit 0\n")

    def tearDown(self):
        grade_class.REPO = self.saved
        os.environ.pop("GRADE_LOCK", None)
        shutil.rmtree(self.tmp)

    def submit(self, **students):
        folder = os.path.join(self.tmp, "class")
        for name, text in students.items():
            os.makedirs(os.path.join(folder, name), exist_ok=True)
            with open(os.path.join(folder, name, "reduce.cu"), "w") as handle:
                handle.write(text)
        return folder

    def run_class(self, folder, *options):
        out = os.path.join(self.tmp, "reports")
        code = grade_class.main(["--out", out, *options, folder])
        return code, out

    def test_a_class(self):
        folder = self.submit(ann="bad", ben="good", cal="nobuild")
        os.makedirs(os.path.join(folder, "empty"))
        code, out = self.run_class(folder, "--speed", "1.5x step2")
        self.assertEqual(code, 0)
        with open(os.path.join(out, "class.csv"), newline="") as handle:
            rows = list(csv.DictReader(handle))
        self.assertEqual([(r["submission"], r["verdict"]) for r in rows],
                         [("ben", "PASS"), ("ann", "FAIL"), ("cal", "does not build"),
                          ("empty", "not graded")])
        self.assertTrue(os.path.isfile(os.path.join(out, "ann.txt")))
        with open(os.path.join(out, "class.md")) as handle:
            self.assertIn("# Class results on NVIDIA H200", handle.read())

    def test_no_device_stops_the_class(self):
        self.need_gpu(3)
        code, _ = self.run_class(self.submit(ann="good"))
        self.assertEqual(code, grade_class.EXIT_DEVICE)

    def test_a_submission_that_stops_the_grader_is_a_row(self):
        # A program's constructor can print anything and exit 3: it ends its row only.
        code, out = self.run_class(self.submit(ann="nodevice", ben="good"))
        self.assertEqual(code, 0)
        with open(os.path.join(out, "class.csv"), newline="") as handle:
            rows = {r["submission"]: r for r in csv.DictReader(handle)}
        self.assertEqual(rows["ben"]["verdict"], "PASS")
        self.assertIn("the grader stopped (exit 3): grade: no CUDA device", rows["ann"]["note"])

    def test_a_bad_target_stops_before_grading(self):
        code, out = self.run_class(self.submit(ann="good"), "--speed", "fast")
        self.assertEqual(code, grade_class.EXIT_USAGE)
        self.assertFalse(os.path.exists(os.path.join(out, "ann.txt")))

    def test_a_bad_grader_option_stops_before_grading(self):
        for bad in (["--jobs", "abc"], ["--jobs", "0"], ["--speed-credit", "some"],
                    ["--speed", "1.5x step2", "--speed-rounds", "1"],
                    ["--speed", "1.5x step2", "--speed-points", "nan"]):
            code, out = self.run_class(self.submit(ann="good"), *bad)
            self.assertEqual(code, grade_class.EXIT_USAGE, bad)
            self.assertFalse(os.path.exists(os.path.join(out, "ann.txt")), bad)

    def test_an_unknown_op_stops_before_grading(self):
        code, out = self.run_class(self.submit(ann="good"), "--op", "layer_norm")
        self.assertEqual(code, grade_class.EXIT_USAGE)
        self.assertFalse(os.path.exists(os.path.join(out, "ann.txt")))

    def test_a_speed_target_for_part_3_stops_before_grading(self):
        folder = self.submit(ann="good")
        os.makedirs(os.path.join(folder, "bob"))
        with open(os.path.join(folder, "bob", "back.cu"), "w") as handle:
            handle.write("good")
        code, out = self.run_class(folder, "--speed", "1.5x step2")
        self.assertEqual(code, grade_class.EXIT_USAGE)
        self.assertFalse(os.path.exists(os.path.join(out, "ann.txt")))

    def test_a_hang_runs_out_of_its_time(self):
        code, out = self.run_class(self.submit(ann="hang"), "--timeout", "0.02")
        self.assertEqual(code, 0)
        with open(os.path.join(out, "class.csv"), newline="") as handle:
            self.assertIn("ran out of its 0.02 minutes", next(csv.DictReader(handle))["note"])

    def test_each_part_is_a_submission(self):
        folder = os.path.join(self.tmp, "parts")
        for name, files in (("ann", ["reduce.cu"]), ("ben", ["rows.cu"]), ("cal", ["back.cu"]),
                            ("dan", []), ("eve", ["rows.cu", "back.cu"])):
            os.makedirs(os.path.join(folder, name))
            for f in files:
                open(os.path.join(folder, name, f), "w").close()
        found = {name: (source and os.path.basename(source), why)
                 for name, source, why in grade_class.submissions(folder)}
        self.assertEqual(found, {"ann": ("reduce.cu", ""), "ben": ("rows.cu", ""),
                                 "cal": ("back.cu", ""),
                                 "dan": (None, "no reduce.cu, rows.cu or back.cu"),
                                 "eve": (None, "rows.cu and back.cu: give one")})

    def test_the_time_limit_lets_the_grader_kill_its_checks(self):
        # SIGTERM first (the grader's checks are out of its group's reach), then SIGKILL
        code, out = self.run_class(self.submit(ann="hangcheck"), "--timeout", "0.02")
        self.assertEqual(code, 0)
        with open(os.path.join(self.repo, "tools", "check.pid")) as handle:
            pid = int(handle.read())
        import time
        time.sleep(0.2)
        self.assertFalse(running(pid), "the check outlived its grading")

    def test_usage(self):
        self.assertEqual(grade_class.main([os.path.join(self.tmp, "none")]), grade_class.EXIT_USAGE)
        self.assertEqual(grade_class.main(["--timeout", "0", self.tmp]), grade_class.EXIT_USAGE)


class LabDocs(unittest.TestCase):
    """docs/grading.md (both languages) quotes the lab as the H200 wrote it
    (docs/lab/): the speed lines, the miss, the class table, the cheats."""

    def lines(self, *path):
        with open(os.path.join(os.path.dirname(TESTS), *path)) as handle:
            return [line.rstrip("\n") for line in handle]

    def test_quotes(self):
        quoted = [line for line in self.lines("docs", "lab", "step3.txt")
                  if line.startswith(("speed:", "grade:"))]
        quoted += [line for line in self.lines("docs", "lab", "miss.txt")
                   if line.startswith(("speed:", "grade: FAIL", "bob", "  "))]
        quoted += [line for line in self.lines("docs", "lab", "class", "class.md")
                   if line.startswith("| ")]
        quoted += [line for line in self.lines("docs", "lab", "rows6.txt")
                   if line.startswith("speed:")]
        first = {}   # each cheat's line from the log's newest run (its first section)
        for line in self.lines("plots", "reference", "h200-gpu-check.log"):
            if "caught by gpu-work" in line:
                first.setdefault(line.split()[1], line)
        self.assertEqual(len(first), 8)   # four that copy or migrate, four zero-copy
        quoted += list(first.values())
        self.assertGreaterEqual(len(quoted), 16)
        for page in ("grading.md", "grading.zh-CN.md"):
            text = "\n".join(self.lines("docs", page))
            for line in quoted:
                if line.startswith("| rank") or line.startswith("| --:"):
                    continue
                self.assertTrue(line in text, f"docs/{page} does not quote docs/lab as "
                                              f"written: {line[:100]}")

    def test_the_class_table_is_quoted_whole(self):
        # The table as class.md has it, in one block: a row left twice (the
        # separator once was) or in another order is not what the class gave.
        table = [line for line in self.lines("docs", "lab", "class", "class.md")
                 if line.startswith("| ")]
        self.assertGreaterEqual(len(table), 5)
        for page in ("grading.md", "grading.zh-CN.md"):
            text = "\n".join(self.lines("docs", page))
            self.assertEqual(text.count(table[0]), 1, page)
            start = text.index(table[0])
            block = text[start:].split("\n\n", 1)[0].split("\n")
            self.assertEqual(block, table, f"docs/{page}: the class table is not class.md's")

    def test_points_of_the_miss(self):
        with open(os.path.join(os.path.dirname(TESTS), "docs", "lab", "miss.json")) as handle:
            data = json.load(handle)
        most = sum(t["max_score"] for t in data["tests"])
        self.assertEqual((data["score"], most), (179.65, 183))
        self.assertIn("179.65 of 183 points", "\n".join(self.lines("docs", "grading.md")))


class Summary(unittest.TestCase):

    def test_summary_of_reports(self):
        report = grade.Report("build/graded/a/run", "a (code 0123)")
        work = grade.Case(grade.GPU_WORK, ["--check"], entry="reduce_pass()")
        report.outcomes += [grade.Outcome(grade.Case("exact", ["--check"]), True),
                            grade.Outcome(work, False, reason="launched no kernel")]
        data = grade.summary([report], "NVIDIA H200")
        [one] = data["programs"]
        self.assertEqual((one["verdict"], one["checks"], one["failed"]), ("FAIL", 2, 1))
        self.assertEqual(one["gpu_work"], {"state": "failed", "reason": "launched no kernel"})
        self.assertIsNone(one["speed"])
        self.assertEqual(one["failed_kinds"], {grade.GPU_WORK: 1})


# A part 3 program (back/*/run) without a GPU: it answers --version,
# --gpu-info (deterministic=DET, as common/back_driver.c prints it), one
# check, --checks FILE (a "== check" line and a verdict per line, as
# run_lines in common/harness.c) and a timed run, with the driver's own
# verdict lines. MODE picks what it gets wrong; OP is the op its --gpu-info
# names (layernorm_backward, or softmax_backward: back/step10 on).
FAKE_BACK = r"""#!{python} -S
import sys
MODE, DET = {mode!r}, {det}
DET_LINE = ("FAIL: every output is within its bound, but not the same bits every run "
            "(dgamma[3] moved): the sums' order changes from run to run (atomics, or a race)")


def verdict(words):
    o = {{}}
    k = 0
    while k < len(words):
        if words[k] in ("--check", "--no-flush", "--no-verify"):
            k += 1
            continue
        o[words[k]] = words[k + 1]
        k += 2
    rows, cols = int(o.get("--rows", 32768)), int(o.get("--cols", 1024))
    fill = o.get("--fill", "random")
    wrong = ""
    if MODE == "drop_partial" and fill == "exact" and rows % 8:
        wrong = "FAIL: dgamma[col 0] is 3, not 4 (tolerance 0: exact); 1 of the outputs are wrong"
    if MODE == "dx_offset" and o.get("--y-offset", "0") != "0":
        wrong = ("FAIL: dx[row 0, col 0] is nan, not 1 (tolerance 1e-06); 5 of the outputs are "
                 "wrong (NaN: an output nothing wrote, or a read outside the input)")
    if MODE == "ticket":
        wrong = "FAIL: a run left its workspace's counters non-zero (the next run needs them at 0)"
    if MODE in ("wrong_atomic",) and cols == 4097:
        wrong = "FAIL: dbeta[col 4096] is 0, not 7 (tolerance 0: exact); 1 of the outputs are wrong"
    if MODE == "past_a_block" and cols > 16384:   # a row wider than one block holds
        wrong = ("FAIL: dx[row 0, col 16384] is 0.5, not 0.25 (tolerance 0: exact); 1 of the "
                 "outputs are wrong")
    if wrong:
        return wrong
    if MODE in ("atomic", "wrong_atomic"):
        return DET_LINE
    return "PASS"


args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("back/fake code_hash=0123456789ab arch=sm_90")
    sys.exit(0)
if args[:1] == ["--gpu-info"]:
    print("gpu=Fake H200\nsms=132\nsm_threads=2048\nfree_bytes=68719476736\n"
          "op={op}\ndtype={dtype}\npack={pack}\nmax_cols=1048576\n"
          f"max_n=4294967296\ndeterministic={{DET}}")
    sys.exit(0)
if args[:1] == ["--checks"] and MODE == "hang":   # a kernel that never ends
    import os, time
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"hung.{{os.getpid()}}"), "w").close()
    time.sleep(120)
if args[:1] == ["--checks"]:
    worst = 0
    for line in open(args[1]):
        print("== check " + line.strip())
        line_verdict = verdict(line.split())
        print(line_verdict)
        worst = worst if line_verdict == "PASS" else 1
    sys.exit(worst)
line_verdict = verdict(args)
print(line_verdict)
sys.exit(0 if line_verdict == "PASS" else 1)
"""


class FakeBackTest(unittest.TestCase):
    """Part 3's fake programs (FAKE_BACK) in a folder of their own, graded."""

    device = grade.Device("Fake H200", 132, 2048, 1 << 36)

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def fake(self, mode, det=1, op="layernorm_backward"):
        path = os.path.join(self.tmp, f"{mode}_{det}_{op}", "run")
        os.makedirs(os.path.dirname(path))
        bf16 = op.endswith("_bf16")
        with open(path, "w") as handle:
            handle.write(FAKE_BACK.format(python=FAKE_PYTHON, mode=mode, det=det, op=op,
                                          dtype="bf16" if bf16 else "f32", pack=8 if bf16 else 4))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def graded(self, mode, det=1, op="layernorm_backward"):
        [report], gpu = grade.grade([self.fake(mode, det, op)], jobs=4)
        self.assertEqual(gpu, "Fake H200")
        return report


class ExpectedOp(FakeBackTest):
    """--op: a lab's op. A file that declares another (the copy, or the
    backward pass of the other op) would pass every check of its own op;
    it fails its one "op" check instead, and gets no other."""

    def test_another_op_fails_without_its_checks(self):
        [report], _ = grade.grade([self.fake("good", op="softmax_backward")], jobs=4,
                                  op="layernorm_backward")
        self.assertEqual([(o.case.kind, o.ok) for o in report.outcomes], [("op", False)])
        self.assertIn("this program computes softmax_backward (its step_op and step_dtype), "
                      "and --op asks for layernorm_backward", report.outcomes[0].reason)
        [bf16], _ = grade.grade([self.fake("good", op="layernorm_backward_bf16")], jobs=4,
                                op="layernorm_backward")
        self.assertEqual(bf16.outcomes[0].case.kind, "op")

    def test_the_same_op_is_graded_as_always(self):
        [report], _ = grade.grade([self.fake("good")], jobs=4, op="layernorm_backward")
        self.assertTrue(report.passed, grade.failure_table(report))
        self.assertNotIn("op", {o.case.kind for o in report.outcomes})
        self.assertGreater(len(report.outcomes), 100)

    def test_the_names(self):
        self.assertEqual(grade.program_op(None), "sum")
        self.assertEqual(grade.program_op(grade.RowProgram(op="layernorm", dtype="bf16")),
                         "layernorm_bf16")
        self.assertEqual(grade.program_op(grade.RowProgram(op="softmax_backward_bf16",
                                                           dtype="bf16")), "softmax_backward_bf16")
        self.assertEqual(grade.parse_op("rmsnorm_bf16"), "rmsnorm_bf16")
        for bad in ("LayerNorm", "layernorm_fp16", "", "rows/6"):
            with self.assertRaises(grade.GradeError) as caught:
                grade.parse_op(bad)
            self.assertEqual(caught.exception.code, grade.EXIT_USAGE)
        self.assertEqual(grade.main(["--op", "bogus", "no/such/run"]), grade.EXIT_USAGE)
        # A report that could not be written is said before the grading, not after it.
        program = self.fake("good")
        with tempfile.TemporaryDirectory() as tmp:
            for flag, path in (("--junit", os.path.join(tmp, "no", "x.xml")),
                               ("--summary", tmp), ("--gradescope", "")):
                with contextlib.redirect_stderr(io.StringIO()) as said:
                    self.assertEqual(grade.main([flag, path, program]), grade.EXIT_USAGE, flag)
                self.assertIn(f"grade: error: {flag} {path}: ", said.getvalue())
        self.assertEqual(grade.main(["--speed", "1.5x step2", "--speed-points", "nan",
                                     program]), grade.EXIT_USAGE)


class StoppedGrading(FakeBackTest):
    """A grading stopped while checks hang (SIGTERM, as make class's time
    limit or a CI timeout sends it) ends at once, and kills the checks: each
    runs in a session of its own that the signal does not reach."""

    def test_sigterm_kills_the_hung_checks(self):
        import signal
        import subprocess
        import time
        program = self.fake("hang")
        folder = os.path.dirname(program)
        proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(TESTS), "tools", "grade.py"),
                                 "--no-sanitizer", "--quick", "--jobs", "2", program],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        hung = []
        deadline = time.monotonic() + 60
        while len(hung) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            hung = [int(f.split(".")[1]) for f in os.listdir(folder) if f.startswith("hung.")]
        self.assertEqual(len(hung), 2, "two checks should be hanging by now")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 130, out)
        self.assertIn("grade: interrupted", out)
        time.sleep(0.2)
        for pid in hung:
            self.assertFalse(running(pid), f"check {pid} outlived the grading")
        self.assertEqual(sorted(f for f in os.listdir(folder) if f.startswith("hung.")),
                         sorted(f"hung.{pid}" for pid in hung), "a queued check started after the stop")


class BackMatrix(FakeBackTest):
    """Part 3's matrix (build_back_cases) and how the grader reads a part 3
    program's outcomes, the determinism check's above all, with fake
    programs that answer as common/back_driver.c does."""

    def test_sanitizer_exit_echo_is_not_the_reason(self):
        """Under a sanitizer, a declared det failure makes the program exit 1
        and the sanitizer echo it: the reason must be the program's FAIL
        line (which settle_determinism then expects), not that echo; a real
        sanitizer error still comes first."""
        det = ("FAIL: every output is within its bound, but not the same bits every run "
               "(dgamma[0] moved)")
        out = f"{det}\n========= Target application returned an error\n" \
              "========= ERROR SUMMARY: 0 errors\n"
        self.assertEqual(grade.why(1, out, "memcheck"), det)
        self.assertRegex(grade.why(1, out, "memcheck"), grade.DET_ONLY)
        bad = "========= Invalid __global__ read of size 4 bytes\n" + out
        self.assertEqual(grade.why(1, bad, "memcheck"), "Invalid __global__ read of size 4 bytes")

    def values(self, flag):
        cases = grade.build_back_cases(self.device, sanitizer=True)
        found = set()
        for case in cases:
            for k, word in enumerate(case.args[:-1]):
                if word == flag:
                    found.add(case.args[k + 1])
        return found

    def test_the_matrix_names_its_shapes_offsets_and_fills(self):
        rows, cols = self.values("--rows"), self.values("--cols")
        for want in ("1", "7", "8", "9", "527", "528", "529", "4097"):
            self.assertIn(want, rows)
        for want in ("1", "3", "4", "5", "32", "256", "1000", "1023", "1024", "1025", "4096",
                     "4097"):
            self.assertIn(want, cols)
        # Both sides of a block's second and third chunk on this GPU's grid.
        self.assertTrue({"4223", "4224", "4225"} <= rows)
        for flag in ("--offset", "--y-offset", "--gamma-offset"):
            self.assertEqual(self.values(flag) - {"0"}, {"1", "2", "3"}, flag)
        self.assertEqual(self.values("--fill"), set(grade.BACK_FILLS))
        cases = grade.build_back_cases(self.device, sanitizer=True)
        kinds = {c.kind for c in cases}
        self.assertTrue({"shape", "offset", "fill", grade.DET, "timed"} <= kinds)
        self.assertTrue(set(grade.SANITIZER_TOOLS) <= kinds)
        # The watch on part 3's work (back_run()), as parts 1 and 2; no large check.
        self.assertIn(grade.GPU_WORK, kinds)
        self.assertNotIn("large", kinds)
        # 1 x 1, and every shape check on the exact fill, small enough to batch.
        self.assertIn(["--check", "--rows", "1", "--cols", "1"], [c.args[:5] for c in cases])
        for case in cases:
            if case.kind == "shape":
                self.assertIn("exact", case.args)
                r, c = int(case.args[2]), int(case.args[4])
                self.assertLessEqual(r * c, grade.BACK_CELLS)
        self.assertEqual([c for c in cases if c.kind == grade.DET and not c.batchable], [])

    def test_each_array_moves_alone_at_whole_packs(self):
        """A step that packs only where every pointer is aligned must be
        tested with each pointer alone out of its pack, at a width of whole
        packs that it packs (2048): the pairs of offsets always move x or
        gamma with dx, so step 8 without dx's test passed every check."""
        alone = set()
        for case in grade.build_back_cases(self.device, sanitizer=True):
            args = case.args
            if case.kind != "offset" or args[4] != "2048":
                continue
            moved = [flag for flag in ("--offset", "--y-offset", "--gamma-offset")
                     if flag in args and args[args.index(flag) + 1] != "0"]
            if len(moved) == 1:
                alone.add((moved[0], args[args.index(moved[0]) + 1]))
        self.assertEqual(alone, {(f, str(o)) for f in ("--offset", "--y-offset", "--gamma-offset")
                                 for o in (1, 2, 3)})

    def test_a_good_program_passes(self):
        report = self.graded("good")
        self.assertTrue(report.passed, grade.failure_table(report))
        self.assertEqual(report.expected, [])
        self.assertIn("grade: PASS back/fake (code 0123456789ab):", grade.verdict(report))
        self.assertNotIn("not deterministic", grade.verdict(report))

    def test_a_failing_program_is_reported_with_its_reason(self):
        report = self.graded("drop_partial")
        self.assertFalse(report.passed)
        kinds = {o.case.kind for o in report.failed}
        self.assertIn("shape", kinds)
        first = report.failed[0]
        self.assertIn("dgamma[col 0] is 3, not 4", first.reason)
        self.assertNotEqual(int(first.case.args[first.case.args.index("--rows") + 1]) % 8, 0)
        self.assertTrue(any("--rows 529" in o.case.label for o in report.failed))
        self.assertIn("grade: FAIL back/fake", grade.verdict(report))
        table = "\n".join(grade.failure_table(report))
        self.assertIn("-> FAIL: dgamma[col 0] is 3", table)

    def test_dx_moved_in_its_pack_fails_offset_checks(self):
        report = self.graded("dx_offset")
        self.assertIn("offset", {o.case.kind for o in report.failed})
        self.assertTrue(all("--y-offset" in o.case.args for o in report.failed))

    def test_a_ticket_left_set_is_caught_by_counters(self):
        report = self.graded("ticket")
        self.assertFalse(report.passed)
        self.assertTrue(all("counters" in o.reason for o in report.failed))

    def test_an_undeclared_atomic_program_fails_det(self):
        report = self.graded("atomic")
        self.assertFalse(report.passed)
        # Every failure is the determinism check's, charged to det, timed runs too.
        self.assertEqual({o.case.kind for o in report.failed}, {grade.DET})
        self.assertGreater(len(report.failed), len(grade.BACK_DET_SHAPES))
        self.assertEqual(report.expected, [])
        self.assertIn("same bits", report.failed[0].reason)

    def test_a_declared_atomic_program_passes_with_det_expected(self):
        report = self.graded("atomic", det=0)
        self.assertTrue(report.passed, grade.failure_table(report))
        self.assertGreater(len(report.expected), len(grade.BACK_DET_SHAPES))
        self.assertTrue(all(o.ok and o.case.kind == grade.DET for o in report.expected))
        line = grade.verdict(report)
        self.assertIn("grade: PASS", line)
        self.assertIn(f"not deterministic, as it declares: {len(report.expected)} det checks "
                      "saw other bits, expected", line)
        self.assertEqual(grade.summary([report], "G")["programs"][0]["expected_det"],
                         len(report.expected))

    def test_declaring_it_excuses_no_wrong_value(self):
        report = self.graded("wrong_atomic", det=0)
        self.assertFalse(report.passed)
        self.assertTrue(report.failed)
        self.assertTrue(all("dbeta[col 4096]" in o.reason for o in report.failed))
        # A det check of its own that got a value wrong is failed for the value.
        self.assertFalse([o for o in report.failed if grade.DET_ONLY.match(o.reason)])
        self.assertTrue(report.expected)

    def test_a_declared_program_whose_bits_hold_passes_plainly(self):
        report = self.graded("good", det=0)
        self.assertTrue(report.passed)
        self.assertEqual(report.expected, [])
        # ... and every report says it declared it, seen or not: a course that
        # asks for determinism finds it in the verdict, the summary, JUnit,
        # Gradescope's output and the class table's note.
        self.assertIn("(declares itself not deterministic: no det check saw other bits)",
                      grade.verdict(report))
        [one] = grade.summary([report], "G")["programs"]
        self.assertTrue(one["declares_nondeterministic"])
        self.assertIn("declares itself not deterministic", grade_class.summary_row(one)["note"])
        import grade_report
        properties = {p.get("name"): p.get("value")
                      for p in grade_report.junit_tree([report], "G").iter("property")}
        self.assertEqual(properties.get("deterministic"), "0")
        self.assertIn("declares itself not deterministic",
                      grade_report.gradescope_results([report], "G")["output"])
        plain = self.graded("good")
        self.assertNotIn("declares", grade.verdict(plain))
        self.assertFalse(grade.summary([plain], "G")["programs"][0]["declares_nondeterministic"])
        self.assertNotIn("deterministic", {p.get("name") for p in
                                           grade_report.junit_tree([plain], "G").iter("property")})

    def test_no_speed_check_for_part_3_yet(self):
        with self.assertRaises(grade.GradeError) as caught:
            grade.grade([self.fake("good")], jobs=1,
                        speed=grade.SpeedRules(grade.parse_speed("1.5x step2")))
        self.assertEqual(caught.exception.code, grade.EXIT_USAGE)
        self.assertIn("part 3", str(caught.exception))


class BackBf16LayerNormMatrix(FakeBackTest):
    """A bfloat16 LayerNorm backward (op layernorm_backward_bf16, back/step17
    on) and the grader: LayerNorm's matrix, over its pack of 8."""

    @staticmethod
    def value(case, flag, default="0"):
        return case.args[case.args.index(flag) + 1] if flag in case.args else default

    def test_the_grader_gives_a_bfloat16_layernorm_program_its_matrix(self):
        """op=layernorm_backward_bf16 gets build_back_cases with every place
        in its pack of 8 (from --gpu-info): x and dy, dx each at 1-7, gamma
        (a float) at 1-3 only (the driver refuses 4 and more: its guards
        hold 3; 7 smashed the host's stack on the H200), every fill at each
        of x's offsets 0-7; every check runs; a program that drops a partial
        row fails."""
        op = "layernorm_backward_bf16"
        report = self.graded("good", op=op)
        self.assertTrue(report.passed, grade.failure_table(report))
        program = grade.RowProgram(op=op, dtype="bf16", pack=8, part="back")
        want = grade.build_back_cases(self.device, program, sanitizer=False)
        ran = [o.case.label for o in report.outcomes if not o.skipped]
        self.assertEqual(sorted(ran), sorted(c.label for c in want if c.kind != grade.GPU_WORK))
        for flag, pack in (("--offset", 8), ("--y-offset", 8), ("--gamma-offset", 4)):
            found = {self.value(c, flag) for c in want if c.kind == "offset"}
            self.assertEqual(found, {str(k) for k in range(pack)}, flag)
        self.assertLessEqual({self.value(c, "--gamma-offset", "0") for c in want},
                             {"0", "1", "2", "3"})
        fills = {(self.value(c, "--fill"), int(self.value(c, "--offset")))
                 for c in want if c.kind == "fill"}
        self.assertEqual(fills, {(f, o) for f in grade.BACK_FILLS for o in range(8)})
        # The float matrix is as it was: offsets 0-3.
        floats = grade.build_back_cases(self.device, sanitizer=False)
        self.assertEqual({self.value(c, "--offset") for c in floats if c.kind == "offset"},
                         {"0", "1", "2", "3"})
        self.assertFalse(self.graded("drop_partial", op=op).passed)


class BackSoftmaxMatrix(FakeBackTest):
    """Softmax's backward pass (back/step10 on, issue 42): its matrix
    (build_softmax_back_cases) and the grader's choice of it for a program
    whose --gpu-info says op=softmax_backward."""

    program = grade.RowProgram(op="softmax_backward", part="back")

    def cases(self):
        return grade.build_softmax_back_cases(self.device, self.program, sanitizer=True)

    @staticmethod
    def value(case, flag, default=None):
        return case.args[case.args.index(flag) + 1] if flag in case.args else default

    def shape_of(self, case):
        return int(self.value(case, "--rows")), int(self.value(case, "--cols"))

    def test_no_gamma_to_move(self):
        cases = self.cases()
        self.assertEqual([c.label for c in cases if "--gamma-offset" in c.args], [])
        for case in cases:
            for flag in ("--offset", "--y-offset"):
                self.assertIn(self.value(case, flag, "0"), {"0", "1", "2", "3"}, case.label)
        # The program's default is softmax's: the same matrix (but the
        # gpu-work check's shape, drawn for each grading).
        def drawn_apart(cases):
            return [c for c in cases if c.kind != grade.GPU_WORK]
        self.assertEqual(drawn_apart(grade.build_softmax_back_cases(self.device, sanitizer=True)),
                         drawn_apart(cases))

    def test_the_widths_and_rows_of_its_paths(self):
        cases = self.cases()
        cols = {int(self.value(c, "--cols")) for c in cases if "--cols" in c.args}
        # The vocabularies of GPT-2, Llama 3 and Qwen; the widest row a
        # cluster holds and one more; a block's 16384 floats and one more.
        self.assertTrue({50257, 128256, 151936, 262144, 262145, 16384, 16385} <= cols, cols)
        shapes = [c for c in cases if c.kind == "shape"]
        self.assertTrue(all(self.value(c, "--fill") == "exact" for c in shapes))
        at = {self.shape_of(c) for c in shapes}
        for width in grade.SOFTMAX_BACK_COLS:
            # 16 rows: the exact fill's fully masked row 15 at every width.
            self.assertIn((16, width), at, width)
            self.assertIn((1, width), at, width)
        self.assertEqual({r for r, _ in at}, set(grade.SOFTMAX_BACK_ROWS))
        for r, c in at:
            self.assertTrue(r * c <= grade.SOFTMAX_BACK_CELLS or r <= 16, (r, c))
        kinds = {c.kind for c in cases}
        self.assertTrue({"shape", "offset", "fill", grade.DET, "timed"} <= kinds)
        self.assertTrue(set(grade.SANITIZER_TOOLS) <= kinds)
        self.assertIn(grade.GPU_WORK, kinds)
        self.assertNotIn("large", kinds)
        self.assertEqual([c for c in cases if c.kind == grade.DET and not c.batchable], [])

    def test_every_pair_of_offsets(self):
        """y and dy (--offset) and dx (--y-offset) at every pair of places
        in a 16-byte pack at each offset shape, wide ones among them; each
        alone out of its pack at 2048 columns."""
        pairs = {}
        alone = set()
        for case in self.cases():
            if case.kind != "offset":
                continue
            self.assertEqual(self.value(case, "--fill"), "exact")
            place = (int(self.value(case, "--offset")), int(self.value(case, "--y-offset", "0")))
            pairs.setdefault(self.shape_of(case), set()).add(place)
            if self.shape_of(case) == (33, 2048):
                alone.add(place)
        every = {(a, b) for a in range(4) for b in range(4)}
        for shape in grade.SOFTMAX_BACK_OFFSET_SHAPES:
            self.assertEqual(pairs.get(shape), every, shape)
        self.assertTrue({(5, 50257), (3, 151936)} <= set(grade.SOFTMAX_BACK_OFFSET_SHAPES))
        self.assertEqual(alone, {(k, 0) for k in (1, 2, 3)} | {(0, k) for k in (1, 2, 3)})

    def test_every_fill_at_every_offset(self):
        found = {}
        for case in self.cases():
            if case.kind == "fill":
                found.setdefault(self.shape_of(case), set()).add(
                    (self.value(case, "--fill"), int(self.value(case, "--offset"))))
        want = {(f, o) for f in ("random", "exact", "shifted", "tiny") for o in range(4)}
        self.assertEqual(set(grade.BACK_FILLS), {"random", "exact", "shifted", "tiny"})
        self.assertEqual(found, {shape: want for shape in grade.SOFTMAX_BACK_FILL_SHAPES})

    def test_the_grader_gives_a_softmax_program_its_matrix(self):
        """The op of --gpu-info chooses the matrix: softmax_backward gets
        build_softmax_back_cases, layernorm_backward build_back_cases;
        every check of it runs, and no other."""
        for op, build in (("softmax_backward", grade.build_softmax_back_cases),
                          ("layernorm_backward", grade.build_back_cases)):
            report = self.graded("good", op=op)
            self.assertTrue(report.passed, grade.failure_table(report))
            want = build(self.device, grade.RowProgram(op=op, part="back"), sanitizer=False)
            ran = [o.case.label for o in report.outcomes if not o.skipped]
            # (the stand-ins link no watch: their gpu-work check is skipped)
            self.assertEqual(sorted(ran), sorted(c.label for c in want
                                                 if c.kind != grade.GPU_WORK), op)

    def test_the_grader_gives_a_bfloat16_softmax_program_its_matrix(self):
        """op=softmax_backward_bf16 (back/step15 on) gets softmax's matrix,
        with every place in its pack of 8 bfloat16s: y and dy, and dx, at
        every pair of offsets 0-7, and every fill at each; every check runs."""
        op = "softmax_backward_bf16"
        report = self.graded("good", op=op)
        self.assertTrue(report.passed, grade.failure_table(report))
        program = grade.RowProgram(op=op, dtype="bf16", pack=8, part="back")
        want = grade.build_softmax_back_cases(self.device, program, sanitizer=False)
        ran = [o.case.label for o in report.outcomes if not o.skipped]
        self.assertEqual(sorted(ran), sorted(c.label for c in want if c.kind != grade.GPU_WORK))
        pairs = set()
        for case in want:
            if case.kind == "offset" and self.shape_of(case) == grade.SOFTMAX_BACK_OFFSET_SHAPES[0]:
                pairs.add((int(self.value(case, "--offset")),
                           int(self.value(case, "--y-offset", "0"))))
        self.assertEqual(pairs, {(a, b) for a in range(8) for b in range(8)})
        fills = {(self.value(c, "--fill"), int(self.value(c, "--offset")))
                 for c in want if c.kind == "fill"}
        self.assertEqual(fills, {(f, o) for f in grade.BACK_FILLS for o in range(8)})
        self.assertFalse(self.graded("past_a_block", op=op).passed)

    def test_a_softmax_program_wrong_past_a_block_fails(self):
        """A program right up to 16384 columns and wrong past them: failed
        as a softmax program, at softmax's widths only (shape, offset and
        fill checks); LayerNorm's matrix never goes so wide."""
        report = self.graded("past_a_block", op="softmax_backward")
        self.assertFalse(report.passed)
        self.assertTrue({"shape", "offset", "fill"} <= {o.case.kind for o in report.failed})
        self.assertTrue(all(int(self.value(o.case, "--cols")) > 16384 for o in report.failed))
        self.assertIn("dx[row 0, col 16384] is 0.5", report.failed[0].reason)
        self.assertIn("grade: FAIL", grade.verdict(report))
        self.assertTrue(self.graded("past_a_block", op="layernorm_backward").passed)


class BackFixtures(unittest.TestCase):
    """Part 3's mutants (tests/broken/mutants.txt) name kinds the grader
    produces: a check's kind in build_back_cases, or a word of a reason the
    driver (common/back_driver.c) writes."""

    def test_caught_by_kinds_are_real(self):
        root = os.path.dirname(TESTS)
        kinds = {c.kind for c in grade.build_back_cases(BackMatrix.device, sanitizer=True)}
        # A softmax step's (back.cu: BACK_SOFTMAX) are graded by its own matrix.
        softmax_kinds = {c.kind for c in grade.build_softmax_back_cases(BackMatrix.device,
                                                                         sanitizer=True)}
        with open(os.path.join(root, "common", "back_driver.c")) as handle:
            driver = handle.read().lower()
        found = found_softmax = 0
        with open(os.path.join(root, "tests", "broken", "mutants.txt")) as handle:
            for line in handle:
                fields = [f.strip() for f in line.split("|")]
                if line.startswith("#") or len(fields) < 4 or not fields[1].startswith("back/"):
                    continue
                found += 1
                token = fields[2].split("/")[0]
                self.assertTrue(os.path.isfile(os.path.join(root, fields[1], "back.cu")),
                                fields[1])
                with open(os.path.join(root, fields[1], "back.cu")) as handle:
                    softmax = "const enum back_op step_op = BACK_SOFTMAX;" in handle.read()
                found_softmax += softmax
                self.assertTrue(token in (softmax_kinds if softmax else kinds) or token in driver,
                                f"{fields[0]}: caught by {fields[2]}, a kind the grader "
                                "never produces")
        self.assertGreaterEqual(found, 6)
        self.assertGreaterEqual(found_softmax, 5)


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("grade", verbosity=1))
