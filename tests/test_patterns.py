#!/usr/bin/env python3
"""The access-pattern model (tools/patterns.py) and its pictures, checked
against the source code and against the Nsight Compute counters.

    python3 tests/test_patterns.py     last line: "patterns: N passed, N failed[, N skipped]"

1. The model on its own: every source line it names still says what the
   model transcribes, every tree folds in each partial sum exactly once,
   every load model reads each element exactly once, and the fast per-warp
   counts equal the literal per-thread transcription.
2. The model against the committed profile (PROFILE below, n = 2^25):
   where they must agree (exactly, or within a stated factor) and where they
   are known NOT to agree. The known disagreements are asserted too, so a
   change on either side is noticed and the README prose gets re-checked.
   Each comparison is a function that returns its problems; tests also feed
   it doctored counters, to show that it can fail.
3. The pictures: every step README links exactly its step's pictures (the
   block text itself is tools/docs.py's, checked byte for byte by
   tests/test_claims.py); with matplotlib, the PNGs are small, deterministic
   and up to date, and drawing them never touches a README. Without
   matplotlib only part 3's drawing tests are skipped.
"""
import contextlib
import csv
import importlib.util
import io
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from types import SimpleNamespace
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import diagrams  # noqa: E402
import chart_zh  # noqa: E402
import patterns as pt  # noqa: E402
from generated import markers  # noqa: E402

# The committed reference data. It moves to plots/reference/ (branch
# tooling); this is the one line to change.
REFERENCE_DIR = os.path.join(REPO, "plots", "reference")
PROFILE = os.path.join(REFERENCE_DIR, "h200-profile.csv")
RESULTS = os.path.join(REFERENCE_DIR, "h200.csv")      # for the SM count
SASS = os.path.join(REFERENCE_DIR, "sm90-sass.txt")     # `make sass`
PROFILE_N = 1 << 25          # tools/profile.py profiles every step at n = 2^25
MAX_PNG_BYTES = 60_000
DIAGRAMS = os.path.join(REPO, "tools", "diagrams.py")
FIGURES = os.path.join(REPO, "plots", "diagrams")

INST = "smsp__inst_executed.sum"
SHARED_LD = "smsp__inst_executed_op_shared_ld.sum"
SHARED_ST = "smsp__inst_executed_op_shared_st.sum"
GLOBAL_LD = "smsp__inst_executed_op_global_ld.sum"
BANK_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
BANK_ST = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
GRID = "launch__grid_size"
PRED_ON = "smsp__thread_inst_executed_pred_on.sum"

# Model op -> the counter that counts the same warp instructions.
EXACT = (("LDS", SHARED_LD), ("STS", SHARED_ST), ("LDG", GLOBAL_LD))
# Known NOT to be equal, by an exact amount: step 9's last block. The model
# runs the source's loop over the partials, `for (b = tid; b < gridDim.x;
# b += BLOCK)`, trip by trip. nvcc 13 unrolls it by 4 and peels a first trip
# whose load is predicated on tid >= gridDim.x, the very condition of the
# branch that skips the loop just before it (sm90-sass.txt, step 9, after the
# ATOM; test_step9_peeled_load_is_in_the_sass checks the listing). So every
# warp of the last block issues one more global load, with no lane on: the
# counter is the model plus the warps of one block. (step, op) -> the extra,
# from the model's counts.
KNOWN_EXTRA = {("step9_singlepass", "LDG"): lambda counts: counts["warps"] // counts["blocks"]}
CONFLICTS = (("LDS_conflicts", BANK_LD), ("STS_conflicts", BANK_ST))

# Bank conflicts where the model predicts some (step 1): the counter is the
# model's count plus the same small residual every step shows, so it may
# exceed the model by at most this factor and never fall below it.
CONFLICT_FACTOR = 1.10
# Where the model predicts none (every other step): the counter still shows
# a residual we have not traced (it does not follow from the addressing).
# It must stay below this many conflicts per block ...
RESIDUAL_PER_BLOCK = 3.0
# ... and, for these steps (over 65536 blocks or more, so the residual is
# not a matter of luck), it must be there: if it vanishes, the READMEs that
# describe it need updating. Steps 6-8 run 1056 blocks; their residual is
# only bounded above.
KNOWN_RESIDUAL = ("step0_naive", "step2_bankconflict", "step3_idle",
                  "step4_warp", "step5_unroll")
# Step 1's conflicts dwarf the residual of steps 0 and 2, per block.
STEP1_OVER_RESIDUAL = 20.0

# Predication. The model counts the lane slots its source operations leave
# idle (condition false, lane gone). The counter's idle slots are
# 32 * smsp__inst_executed.sum - smsp__thread_inst_executed_pred_on.sum:
# never fewer (each modelled operation is at least one instruction under
# the same predicate), but more, because the compiler predicates address
# arithmetic too, and step 0's % has its own predicated fix-ups. The model
# is a lower bound and the counter may exceed it by at most this factor:
PREDICATION_FACTOR = 3.0        # steps 0-5: the tree dominates, 4 ops per level
# Steps 7-9 store one warp sum per warp with one lane, and nvcc predicates
# the 6 instructions that compute its address as well: the model, counting
# one store, sees only a fraction of those idle lanes.
PREDICATION_FACTOR_LOOP = 6.0   # steps 6-9
LOOP_STEPS = ("step6_multi", "step7_shfl", "step8_vector", "step9_singlepass")

# Instructions. The model predicts which warps issue which level, not how
# many instructions a level costs. Steps 2 and 3 run the same loop body, so
# their instruction ratio follows the model's ratio of levels issued
# (step 3: half the blocks), plus step 3's second load: within this factor.
ISSUE_FACTOR = 1.2
# Known NOT to follow the model: step 1 vs 0 and step 5 vs 4 issue the same
# levels in the same warps (model ratio 1), yet execute far fewer
# instructions: the % and the loop overhead are gone, which the index
# math cannot show. The measured ratio must stay below this.
FEWER_WITH_SAME_ISSUE = 0.9

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = unittest.skipUnless(
    HAVE_MATPLOTLIB, "no matplotlib: pip install -r tools/requirements.txt")


# ----------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------

def read_profile(path=PROFILE):
    """{(step, metric): value}; 'n/a' and empty values are left out."""
    values = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            text = (row.get("value") or "").strip()
            if text and text.lower() != "n/a":
                values[(row["step"], row["metric"])] = float(text)
    return values


def reference_sms(path=RESULTS):
    with open(path, newline="", encoding="utf-8") as handle:
        counts = {row["sms"] for row in csv.DictReader(handle) if row.get("sms")}
    if len(counts) != 1:
        raise AssertionError(f"{path}: expected one SM count, found {sorted(counts)}")
    return int(counts.pop())


def tiling_problem(loads, n):
    """None if the loads' spans cover 0 .. n - 1 once each, else what is
    wrong: sorted by their first element, each must start where the one
    before it ended (a gap or an element loaded twice otherwise)."""
    end = 0
    for first, width in sorted((ld.first, ld.width) for ld in loads if ld.width):
        if first != end:
            return (f"a gap at {end}" if first > end else f"element {first} loaded twice")
        end = first + width
    return None if end == n else f"the loads end at {end}, not {n}"


class Cache:
    """Built once: the models take a few seconds at n = 2^25."""
    _models, _counts = None, None

    @classmethod
    def models(cls):
        if cls._models is None:
            cls._models = {s: pt.build(REPO, s) for s in pt.modelled_steps(REPO)}
        return cls._models

    @classmethod
    def counts(cls):
        if cls._counts is None:
            sms = reference_sms()
            cls._counts = {s: pt.kernel_counts(m, PROFILE_N, sms)
                           for s, m in cls.models().items()}
        return cls._counts


def partial_problems(ticket, grid):
    """The last block's loop reads each of the grid's partials exactly once,
    and each thread reads its partials in block order."""
    loads = list(ticket.partial_loads(grid))
    seen = Counter(ld.first for ld in loads)
    problems = []
    if set(seen) != set(range(grid)) or max(seen.values()) != 1:
        problems.append(f"grid {grid}: partials not read exactly once")
    for tid in range(ticket.block):
        mine = [ld.first for ld in loads if ld.thread == tid]
        if mine != sorted(mine):
            problems.append(f"grid {grid}: thread {tid} reads out of block order")
    return problems


def profiled(profile, counts):
    return [s for s in counts if (s, INST) in profile]


def per_block(profile, step, metric):
    return profile[(step, metric)] / profile[(step, GRID)]


# ----------------------------------------------------------------------------
# The comparisons: each returns a list of problems (empty = agreement)
# ----------------------------------------------------------------------------

def grid_problems(counts, profile):
    return [f"{s}: model launches {counts[s]['blocks']} blocks at n = {PROFILE_N}, "
            f"{GRID} says {profile[(s, GRID)]:.0f}"
            for s in profiled(profile, counts) if counts[s]["blocks"] != profile[(s, GRID)]]


def exact_count_problems(counts, profile):
    """Shared loads, shared stores and global loads: every one is a source
    operation the model issues, warp by warp, so the counts must be equal
    (plus KNOWN_EXTRA where the compiler adds instructions)."""
    problems = []
    for step in profiled(profile, counts):
        for op, metric in EXACT:
            extra = KNOWN_EXTRA.get((step, op), lambda c: 0)(counts[step])
            if counts[step][op] + extra != profile[(step, metric)]:
                known = f" + known extra {extra}" if extra else ""
                problems.append(f"{step}: model {op} {counts[step][op]}{known}, "
                                f"{metric} {profile[(step, metric)]:.0f}")
    return problems


def sass_listing(step, path=SASS):
    """[(address, instruction)] of one step's kernel in the committed listing."""
    with open(path, encoding="utf-8") as handle:
        sections = handle.read().split("\n== ")
    for section in sections:
        name, _, body = section.partition("\n")
        if name.strip("= ").strip() == step:
            return re.findall(r"^([0-9a-f]{4})  (.*?) ?;", body, re.M)
    raise AssertionError(f"{path}: no listing of {step}")


def peeled_load_problems(listing):
    """Step 9's last block (after the ticket's ATOM): exactly one scalar
    global load is predicated, and on the same comparison, with the same
    sense, as the branch that skips the partials loop, so no lane is ever on.
    That is KNOWN_EXTRA's load."""
    code = [text for _, text in listing]
    after = next((k for k, text in enumerate(code) if text.startswith("ATOM")), None)
    if after is None:
        return ["no ATOM (the ticket) in the listing"]
    code = code[after:]

    def compare(pred, before):
        # The comparison that last set predicate `pred` before line `before`.
        for text in reversed(code[:before]):
            match = re.match(rf"ISETP\.(\S+) {pred}, PT, (.*)", text)
            if match:
                return match.group(1, 2)
        return None

    exit_at = next((k for k, text in enumerate(code) if text.endswith("EXIT")), None)
    skip = next((k for k, text in enumerate(code)
                 if exit_at is not None and k > exit_at and re.match(r"@P\d BRA", text)), None)
    loads = [k for k, text in enumerate(code) if re.match(r"@!?P\d LDG\.E R", text)]
    if skip is None or len(loads) != 1:
        return [f"expected one branch past the loop and one predicated scalar load "
                f"after the ATOM, found {0 if skip is None else 1} and {len(loads)}"]
    branch_pred = code[skip].split()[0][1:]
    load_pred = code[loads[0]].split()[0][1:]
    if load_pred.startswith("!"):
        return [f"the peeled load is predicated on !{load_pred[1:]}: it can be on"]
    skip_test, load_test = compare(branch_pred, skip), compare(load_pred, loads[0])
    if skip_test is None or skip_test != load_test:
        return [f"the peeled load tests {load_test}, the loop's branch {skip_test}"]
    return []


def conflict_problems(counts, profile):
    problems = []
    for step in profiled(profile, counts):
        for op, metric in CONFLICTS:
            model, measured = counts[step][op], profile[(step, metric)]
            if model:
                if not model <= measured <= CONFLICT_FACTOR * model:
                    problems.append(f"{step}: {metric} {measured:.0f}, model {model}: "
                                    f"not within 1x..{CONFLICT_FACTOR}x")
                continue
            residual = per_block(profile, step, metric)
            if residual > RESIDUAL_PER_BLOCK:
                problems.append(f"{step}: the model predicts no {metric}, the counter "
                                f"shows {residual:.2f} per block (> {RESIDUAL_PER_BLOCK})")
            if step in KNOWN_RESIDUAL and measured == 0:
                problems.append(f"{step}: the known residual of {metric} is gone; "
                                f"update the step READMEs that describe it")
    step1, others = "step1_divergence", ("step0_naive", "step2_bankconflict")
    if all((s, BANK_LD) in profile for s in (step1,) + others):
        for other in others:
            ratio = per_block(profile, step1, BANK_LD) / max(
                per_block(profile, other, BANK_LD), 1e-9)
            if ratio < STEP1_OVER_RESIDUAL:
                problems.append(f"step1 has only {ratio:.1f}x the load conflicts "
                                f"per block of {other}")
    return problems


def predication_problems(counts, profile):
    """Idle lane slots: the model is a lower bound within a stated factor."""
    problems = []
    for step in profiled(profile, counts):
        if (step, PRED_ON) not in profile:
            continue
        inst = profile[(step, INST)]
        measured = pt.WARP * inst - profile[(step, PRED_ON)]
        model = counts[step]["lanes_off"]
        factor = PREDICATION_FACTOR_LOOP if step in LOOP_STEPS else PREDICATION_FACTOR
        if not model <= measured <= factor * model:
            problems.append(
                f"{step}: idle lane slots 32 * {INST} - {PRED_ON} = {measured:.0f}, "
                f"model {model}: not within 1x..{factor}x (lanes with predicate on "
                f"per instruction: measured {profile[(step, PRED_ON)] / inst:.2f}, "
                f"model at most {pt.WARP - model / inst:.2f})")
    return problems


def issue_problems(counts, profile):
    problems = []

    def ratio(a, b):
        return profile[(b, INST)] / profile[(a, INST)]

    def have(*steps):
        return all(s in profiled(profile, counts) for s in steps)

    if have("step2_bankconflict", "step3_idle"):
        model = counts["step3_idle"]["tree_issues"] / counts["step2_bankconflict"]["tree_issues"]
        measured = ratio("step2_bankconflict", "step3_idle")
        if not model <= measured <= ISSUE_FACTOR * model:
            problems.append(f"step3/step2 {INST}: {measured:.3f}, model's levels issued "
                            f"{model:.3f}: not within 1x..{ISSUE_FACTOR}x")
    for a, b in (("step0_naive", "step1_divergence"), ("step4_warp", "step5_unroll")):
        if not have(a, b):
            continue
        if counts[a]["tree_issues"] != counts[b]["tree_issues"]:
            problems.append(f"the model no longer issues the same levels in {a} and {b}")
        if ratio(a, b) >= FEWER_WITH_SAME_ISSUE:
            problems.append(f"{b}/{a} {INST} is {ratio(a, b):.2f}: the known drop with "
                            f"the same levels issued is gone; update the READMEs")
    return problems


# ----------------------------------------------------------------------------
# 1. The model on its own
# ----------------------------------------------------------------------------

class ModelTests(unittest.TestCase):
    def test_every_shipped_step_has_a_model(self):
        steps = pt.modelled_steps(REPO)
        for k, name in enumerate(("step0_naive", "step1_divergence", "step2_bankconflict",
                                  "step3_idle", "step4_warp", "step5_unroll",
                                  "step6_multi", "step7_shfl", "step8_vector",
                                  "step9_singlepass")):
            self.assertIn(name, steps, f"step {k}")

    def test_source_lines_still_say_what_the_model_transcribes(self):
        problems = pt.source_problems(REPO, Cache.models().values())
        self.assertEqual(problems, [], "\n".join(problems))

    def test_an_edited_source_line_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            step = "step1_divergence"
            os.makedirs(os.path.join(tmp, step))
            with open(os.path.join(REPO, step, "reduce.cu"), encoding="utf-8") as f:
                lines = f.read().split("\n")
            src = next(s for s in Cache.models()[step].sources if "2 * s * tid" in s.text)
            line = pt.resolve_line(lines, src)
            lines[line - 1] = lines[line - 1].replace("2 * s * tid", "s * tid")
            lines.insert(0, "// one more line")     # and everything moves down
            with open(os.path.join(tmp, step, "reduce.cu"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
            problems = pt.source_problems(tmp, [Cache.models()[step]])
        self.assertTrue(any("no longer in the file" in p for p in problems), problems)

    def test_a_moved_source_line_is_found(self):
        """A comment added above the code moves every line: the model follows its text."""
        with tempfile.TemporaryDirectory() as tmp:
            step = "step1_divergence"
            os.makedirs(os.path.join(tmp, step))
            with open(os.path.join(REPO, step, "reduce.cu"), encoding="utf-8") as f:
                lines = f.read().split("\n")
            with open(os.path.join(tmp, step, "reduce.cu"), "w", encoding="utf-8") as f:
                f.write("\n".join(["// one more line"] * 3 + lines))
            self.assertEqual(pt.source_problems(tmp, [Cache.models()[step]]), [])

    def test_defines_come_from_the_source(self):
        defines = pt.read_defines(REPO, "step6_multi")
        self.assertEqual(Cache.models()["step6_multi"].block, defines["BLOCK_SIZE"])
        self.assertEqual(Cache.models()["step6_multi"].loads.unroll, defines["UNROLL"])
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "step6_multi"))
            with open(os.path.join(tmp, "step6_multi", "reduce.cu"), "w") as f:
                f.write("#define BLOCK_SIZE 128\n")
            with self.assertRaisesRegex(pt.ModelError, "UNROLL"):
                pt.build(tmp, "step6_multi")

    def test_bank_conflict_degree(self):
        def degree(words):
            on = tuple(w is not None for w in words)
            return pt.WarpInst(0, "LDS", on, tuple(words)).degree
        self.assertEqual(degree(range(32)), 1)                      # one word per bank
        self.assertEqual(degree([0] * 32), 1)                       # a broadcast
        self.assertEqual(degree([2 * k for k in range(32)]), 2)     # stride 2
        self.assertEqual(degree([32 * k for k in range(32)]), 32)   # one bank
        self.assertEqual(degree([8 * k for k in range(32)]), 8)     # step 1, s = 4
        self.assertEqual(degree([None] * 32), 0)                    # no lane on

    def test_every_tree_folds_in_each_partial_sum_once(self):
        for step, built in Cache.models().items():
            groups = {}
            for stage in built.tree():
                phase = stage.label.split(",")[0] if stage.kind == "shuffle" else "tree"
                # Step 9's last block runs a second tree: its own sums.
                once = any(stage is other for other in built.once)
                for group, item in pt.partners(stage):
                    groups.setdefault((phase, once, group), []).append(item)
            self.assertTrue(groups, step)
            for key, items in groups.items():
                size = pt.WARP if key[0] != "tree" else built.block
                self.assertEqual(sorted(items), list(range(1, size)), f"{step} {key}")

    def test_a_wrong_index_breaks_the_tree_check(self):
        # Step 1 with index = s * tid (a classic slip) folds some sums twice.
        block, stages = 256, []
        s = 1
        while s < block:
            stages.append(pt.shared_level(
                "step1_divergence", block, s, (28, 29),
                lambda tid, s=s: 2 * s * tid < block, lambda tid, s=s: s * tid, "", ""))
            s *= 2
        items = [item for st in stages for _, item in pt.partners(st)]
        self.assertNotEqual(sorted(items), list(range(1, block)))

    def test_every_element_is_loaded_exactly_once(self):
        for step, built in Cache.models().items():
            for n in (1, 3, 255, 256, 257, 4099, 70001):
                for sms in (1, 3):
                    for offset in range(4):
                        grid = built.loads.grid(n, sms)
                        loads = built.loads.thread_loads(n, grid, offset)
                        self.assertIsNone(tiling_problem(loads, n), f"{step} n={n}")
                        if not isinstance(built.loads, pt.VectorGridStride):
                            break  # the offset only matters to step 8

    def test_a_gap_or_a_second_load_is_caught(self):
        spans = [SimpleNamespace(first=f, width=w) for f, w in ((4, 4), (0, 4), (8, 2))]
        self.assertIsNone(tiling_problem(spans, 10))
        self.assertIn("gap", tiling_problem(spans[:2] + [SimpleNamespace(first=9, width=1)], 10))
        self.assertIn("twice", tiling_problem(spans + [SimpleNamespace(first=5, width=1)], 10))
        self.assertIn("end at 10, not 12", tiling_problem(spans, 12))

    def test_dropping_the_tail_is_caught(self):
        # The seed articles' float4 loop: no tail loads.
        loads = Cache.models()["step8_vector"].loads
        kept = [ld for ld in loads.thread_loads(1003, 1, 0) if ld.part != pt.TAIL]
        covered = {k for ld in kept for k in range(ld.first, ld.first + ld.width)}
        self.assertNotEqual(covered, set(range(1003)))

    def test_per_warp_counts_equal_the_per_thread_transcription(self):
        for step, built in Cache.models().items():
            for n, sms, offset in ((1, 1, 0), (45, 1, 1), (1000, 1, 3), (9000, 2, 2),
                                   (70001, 3, 1), (1 << 16, 1, 0)):
                grid = built.loads.grid(n, sms)
                literal = {}
                for load in built.loads.thread_loads(n, grid, offset):
                    key = (load.thread // pt.WARP, load.slot)
                    literal[key] = literal.get(key, 0) + 1
                by_warp = {}
                for (warp, _), lanes in literal.items():
                    by_warp.setdefault(warp, Counter())[lanes] += 1
                for warp, insts in enumerate(built.loads.warp_insts(n, grid, offset)):
                    fast = Counter(on for op, on in insts if op == "LDG" and on)
                    self.assertEqual(fast, by_warp.get(warp, Counter()),
                                     f"{step} n={n} warp {warp}")

    def test_warp_groups_equal_the_warps_one_by_one(self):
        # kernel_counts takes steps 0-5's warps in groups (a million warps at
        # 2^25): the groups must be what counting warp by warp gives.
        for step, built in Cache.models().items():
            if not hasattr(built.loads, "warp_groups"):
                continue
            for n, sms in ((1, 1), (31, 1), (32, 1), (33, 2), (1000, 1), (2047, 3),
                           (2048, 3), (2049, 3), (70001, 3), ((1 << 16) + 5, 1)):
                grid = built.loads.grid(n, sms)
                self.assertEqual(built.loads.warp_groups(n, grid),
                                 Counter(map(tuple, built.loads.warp_insts(n, grid))),
                                 f"{step} n={n}")

    def test_stages_of_one_block_per_launch_count_once(self):
        # Step 9's shape: step 7's block, plus a last block that runs
        # another round of shuffles over the partial sums.
        import dataclasses
        base = Cache.models()["step7_shfl"]
        extra = pt.shuffle_levels("step7_shfl", base.block, [0], "last block", 26)
        single = dataclasses.replace(base, once=extra)
        n, sms = 1 << 20, 132
        grown = pt.kernel_counts(single, n, sms)
        grown.subtract(pt.kernel_counts(base, n, sms))
        want = pt.stage_counts(extra)
        self.assertEqual(+grown, +want)   # unary +: drop zero counts
        self.assertEqual(want["SHFL"], 5)   # five levels, one warp, once

    def test_the_last_ticket_is_the_last_block_to_arrive(self):
        ticket = Cache.models()["step9_singlepass"].ticket
        for order in itertools.permutations(range(5)):
            draws = ticket.draws(order)
            self.assertEqual([t for _, t, _ in draws], list(range(5)))
            self.assertEqual([b for b, _, last in draws if last], [order[-1]])

    def test_the_last_block_reads_every_partial_once_in_block_order(self):
        built = Cache.models()["step9_singlepass"]
        for grid in (2, 3, 31, 33, 255, 256, 257, 1056, 1300):
            self.assertEqual(partial_problems(built.ticket, grid), [], f"grid {grid}")

    def test_a_wrong_partials_loop_is_caught(self):
        class HalfStride(pt.Ticket):
            def partial_loads(self, grid):   # b += BLOCK / 2: half the partials twice
                for tid in range(self.block):
                    for trip, b in enumerate(range(tid, grid, self.block // 2)):
                        yield pt.Load(tid, f"trip {trip}", b, 1, pt.BODY)
        self.assertTrue(partial_problems(HalfStride(256, []), 1056))

    def test_partials_stages_equal_the_per_thread_transcription(self):
        ticket = Cache.models()["step9_singlepass"].ticket
        for grid in (2, 45, 256, 300, 1056):
            literal = Counter((ld.thread // pt.WARP, ld.slot) for ld in ticket.partial_loads(grid))
            staged = Counter()
            for stage in ticket.gather(grid):
                trip = stage.label.split(", ")[1]
                for inst in stage.insts:
                    if inst.op == "LDG" and inst.lanes_on:
                        staged[(inst.warp, trip)] += inst.lanes_on
            self.assertEqual(staged, literal, f"grid {grid}")

    def test_step9_depends_on_the_grid(self):
        built = Cache.models()["step9_singlepass"]
        self.assertEqual(built.grid, pt.full_wave(pt.EXAMPLE_SMS, built.block))
        one = pt.kernel_counts(built, 4096, 132)        # MIN_PER_THREAD 16: one block
        self.assertEqual((one["blocks"], one["ATOM"], one["STG"]), (1, 0, 1))
        two = pt.kernel_counts(built, 4097, 132)
        self.assertEqual((two["blocks"], two["ATOM"], two["STG"]), (2, 2, 4))
        # Two blocks: one trip over the partials, in warp 0 only.
        gather = [st for st in built.for_grid(2).once if st.kind == "gather"]
        self.assertEqual([st.issuing_warps() for st in gather], [[0]])

    def test_example_sms_is_the_reference_gpu(self):
        self.assertEqual(pt.EXAMPLE_SMS, reference_sms())

    def test_which_warps_issue(self):
        # Step 1, s = 1: threads 0..127 work, all 8 warps issue (predicated).
        level = Cache.models()["step1_divergence"].stages[1]
        self.assertEqual(level.label, "s = 1")
        self.assertEqual(level.working_warps(), [0, 1, 2, 3])
        self.assertEqual(level.issuing_warps(), list(range(8)))
        # Step 4's warp levels: warp 0 alone, all 32 lanes run.
        warp_level = [st for st in Cache.models()["step4_warp"].stages
                      if st.kind == "warp level"][1]
        self.assertEqual(warp_level.issuing_warps(), [0])
        self.assertEqual(warp_level.threads[:32].count(pt.WORK), 16)
        self.assertEqual(warp_level.threads[:32].count(pt.SPARE), 16)


# ----------------------------------------------------------------------------
# 2. The model against the counters
# ----------------------------------------------------------------------------

class CounterTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.profile = read_profile()
        cls.counts = Cache.counts()

    def test_every_model_is_in_the_profile(self):
        missing = [s for s in self.counts if s not in profiled(self.profile, self.counts)]
        self.assertEqual(missing, [], f"no counters in {PROFILE}")

    def test_grid_sizes_agree(self):
        self.assertEqual(grid_problems(self.counts, self.profile), [])

    def test_shared_and_global_instruction_counts_agree_exactly(self):
        problems = exact_count_problems(self.counts, self.profile)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_bank_conflicts_agree_where_the_model_predicts_them(self):
        problems = conflict_problems(self.counts, self.profile)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_instruction_ratios(self):
        problems = issue_problems(self.counts, self.profile)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_lanes_with_predicate_on(self):
        steps = profiled(self.profile, self.counts)
        if not any((s, PRED_ON) in self.profile for s in steps):
            self.skipTest(f"{PRED_ON} is not in {os.path.relpath(PROFILE, REPO)} yet "
                          f"(it arrives with the next `make profile-all`)")
        missing = [s for s in steps if (s, PRED_ON) not in self.profile]
        self.assertEqual(missing, [], f"{PRED_ON} missing for some steps")
        problems = predication_problems(self.counts, self.profile)
        self.assertEqual(problems, [], "\n".join(problems))


class ComparisonsCanFailTests(unittest.TestCase):
    """Each comparison above, fed doctored counters, reports a problem."""

    @classmethod
    def setUpClass(cls):
        cls.profile = read_profile()
        cls.counts = Cache.counts()

    def with_value(self, step, metric, value):
        profile = dict(self.profile)
        profile[(step, metric)] = value
        return profile

    def test_one_shared_load_more_is_caught(self):
        value = self.profile[("step2_bankconflict", SHARED_LD)] + 1
        self.assertTrue(exact_count_problems(
            self.counts, self.with_value("step2_bankconflict", SHARED_LD, value)))

    def test_step9_without_its_known_extra_is_caught(self):
        step = "step9_singlepass"
        model = self.counts[step]["LDG"]
        self.assertTrue(exact_count_problems(self.counts, self.with_value(step, GLOBAL_LD, model)))

    def test_step9_peeled_load_is_in_the_sass(self):
        listing = sass_listing("step9_singlepass")
        self.assertEqual(peeled_load_problems(listing), [])
        # The same listing, doctored: the load on the opposite sense, or on
        # another comparison, could be on.
        k = next(k for k, (_, text) in enumerate(listing)
                 if re.match(r"@P\d LDG\.E R", text) and k > next(
                     j for j, (_, t) in enumerate(listing) if t.startswith("ATOM")))
        negated = list(listing)
        negated[k] = (listing[k][0], "@!" + listing[k][1][1:])
        self.assertTrue(peeled_load_problems(negated))
        pred = listing[k][1].split()[0][1:]
        j = max(j for j in range(k) if listing[j][1].startswith(f"ISETP.GE.U32.AND {pred},"))
        other = list(listing)
        other[j] = (listing[j][0], listing[j][1].replace(".GE.", ".LT."))
        self.assertTrue(peeled_load_problems(other))

    def test_a_different_grid_is_caught(self):
        self.assertTrue(grid_problems(self.counts, self.with_value("step6_multi", GRID, 1055)))

    def test_step1_conflicts_halved_are_caught(self):
        value = self.profile[("step1_divergence", BANK_LD)] / 2
        self.assertTrue(conflict_problems(
            self.counts, self.with_value("step1_divergence", BANK_LD, value)))

    def test_a_large_residual_is_caught(self):
        value = 10 * RESIDUAL_PER_BLOCK * self.profile[("step2_bankconflict", GRID)]
        self.assertTrue(conflict_problems(
            self.counts, self.with_value("step2_bankconflict", BANK_ST, value)))

    def test_a_vanished_residual_is_caught(self):
        self.assertTrue(conflict_problems(
            self.counts, self.with_value("step3_idle", BANK_LD, 0)))

    def test_instruction_ratio_changes_are_caught(self):
        same = self.profile[("step4_warp", INST)]
        self.assertTrue(issue_problems(self.counts, self.with_value("step5_unroll", INST, same)))
        doubled = 2 * self.profile[("step3_idle", INST)]
        self.assertTrue(issue_problems(self.counts, self.with_value("step3_idle", INST, doubled)))

    def test_predication_bounds(self):
        step = "step2_bankconflict"
        inst, model = self.profile[(step, INST)], self.counts[step]["lanes_off"]
        inside = self.with_value(step, PRED_ON, pt.WARP * inst - 1.5 * model)
        self.assertEqual(predication_problems(self.counts, inside), [])
        all_on = self.with_value(step, PRED_ON, pt.WARP * inst)    # fewer idle than modelled
        self.assertTrue(predication_problems(self.counts, all_on))
        too_idle = self.with_value(step, PRED_ON, pt.WARP * inst - 4 * model)
        self.assertTrue(predication_problems(self.counts, too_idle))


# ----------------------------------------------------------------------------
# 3. The pictures
# ----------------------------------------------------------------------------

README_NAMES = ("README.md", "README.zh-CN.md")


def readme_block(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    begin, end = markers("figures")
    if begin not in text or end not in text:
        return None
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def pinned_matplotlib():
    with open(os.path.join(REPO, "tools", "requirements.txt")) as handle:
        match = re.search(r"^matplotlib==(\S+)", handle.read(), re.M)
    return match.group(1) if match else None


def run_diagrams(*args, env=None):
    return subprocess.run([sys.executable, DIAGRAMS, *args], capture_output=True,
                          text=True, env=env, timeout=600)


def draw_here(*args):
    """diagrams.py's main() in this process, as run_diagrams() runs it in
    another: no matplotlib import per drawing where the command line is not
    what a test is about."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = diagrams.main(list(args))
    return subprocess.CompletedProcess(["diagrams.py", *args], code, out.getvalue(), err.getvalue())


class ReadmeBlockTests(unittest.TestCase):
    def test_step_readmes_link_their_pictures(self):
        for step, built in Cache.models().items():
            wanted = [f"../plots/diagrams/{diagrams.figure_name(step, kind)}"
                      for kind in diagrams.figure_kinds(built)]
            for name in README_NAMES:
                path = os.path.join(REPO, step, name)
                if not os.path.isfile(path):
                    continue
                block = readme_block(path)
                self.assertIsNotNone(block, f"{step}/{name} has no figures block")
                links = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", block)
                self.assertEqual(links, wanted, f"{step}/{name}: run make docs")

    def test_every_linked_picture_exists(self):
        for step, built in Cache.models().items():
            for kind in diagrams.figure_kinds(built):
                path = os.path.join(FIGURES, diagrams.figure_name(step, kind))
                self.assertTrue(os.path.isfile(path), f"{path}: run make diagrams")

    def test_no_stray_pictures(self):
        wanted = {diagrams.figure_name(s, k) for s, b in Cache.models().items()
                  for k in diagrams.figure_kinds(b)}
        # Part 2's pictures: one per step in diagrams.ROW_PICTURES.
        wanted |= {os.path.basename(diagrams.row_figure_path(s, FIGURES))
                   for s in list(diagrams.ROW_PICTURES) + list(diagrams.ROW_SPLIT) +
                   list(diagrams.ROW_PARAMS) + list(diagrams.ROW_CLUSTER)}
        # Part 3's: the column reduction and step 13's cluster, in English and Chinese.
        cluster = os.path.basename(diagrams.BACK_CLUSTER_FIGURE)
        wanted |= set(BACK_PICTURES) | {cluster, cluster.replace(".png", ".zh-CN.png")}
        # Part 3's step 14, in English and Chinese.
        bulk = os.path.basename(diagrams.BACK_BULK_FIGURE)
        wanted |= {bulk, bulk.replace(".png", ".zh-CN.png")}
        # Part 2's step 23, in English and Chinese.
        bulk = os.path.basename(diagrams.row_figure_path(diagrams.ROW_BULK_STEP, FIGURES))
        wanted |= {bulk, bulk.replace(".png", ".zh-CN.png")}
        self.assertEqual(set(os.listdir(FIGURES)) - wanted, set())

    def test_alt_text_is_english_unless_translated(self):
        built = Cache.models()["step1_divergence"]
        english = diagrams.figures_block(built, "step1_divergence", "plots/diagrams")
        self.assertIn("![step1_divergence: shared-memory bank map of each level; the worst "
                      "request puts ", english)
        marked = diagrams.figures_block(built, "step1_divergence", "plots/diagrams",
                                        translate=lambda t, **v: "<" + t.format(**v) + ">")
        self.assertEqual(marked.replace("![<", "![").replace(">](", "]("), english)


class RowSplitTests(unittest.TestCase):
    """The picture of rows/step10_aligned draws diagrams.row_split(), which must
    split rows as the kernel's split_row() does: read it from rows.cu and
    compare, so an edit to either is seen."""

    def test_the_pictures_rows(self):
        self.assertEqual(diagrams.row_split(4, 43, 4), [(0, 10, 3), (1, 10, 2), (2, 10, 1),
                                                         (3, 10, 0)])

    def test_every_row_is_covered_and_the_body_aligned(self):
        for pack in (4, 8):
            for cols in (1, 2, 3, 5, 7, 9, 31, 33, 1000, 4097):
                for r, (head, packs, tail) in enumerate(diagrams.row_split(9, cols, pack)):
                    self.assertEqual(head + packs * pack + tail, cols)
                    self.assertLess(tail, pack)
                    self.assertLessEqual(head, min(pack - 1, cols))
                    if packs:   # the body starts on a boundary of the flat array
                        self.assertEqual((r * cols + head) % pack, 0)

    def test_matches_split_row_in_the_kernel(self):
        with open(os.path.join(REPO, "rows", "step10_aligned", "rows.cu")) as f:
            src = " ".join(f.read().split())
        self.assertIn("unsigned int head = (unsigned int)((PACK - (size_t)x / sizeof(float) % PACK)"
                      " % PACK); head = min(head, cols); return {head, (cols - head) / PACK, "
                      "(cols - head) % PACK};", src)
        self.assertIn("rows/step10_aligned", diagrams.ROW_SPLIT)


class ParamPiecesTests(unittest.TestCase):
    """The pictures of rows/step13 and 14 draw diagrams.param_pieces(), which
    must cut a shifted pack of gamma as the kernels' load_pieces() does."""

    def test_pieces_are_aligned_loads_that_cover_the_pack(self):
        for pack in (4, 8):
            for pos in range(pack):
                pieces, at = diagrams.param_pieces(pos, pack), pos
                self.assertEqual(sum(pieces), pack)
                for n in pieces:
                    self.assertIn(n, (1, 2, 4, 8))
                    self.assertEqual(at % n, 0, (pack, pos, pieces))   # naturally aligned
                    at += n

    def test_the_loads_per_pack(self):
        self.assertEqual([len(diagrams.param_pieces(p, 4)) for p in range(4)], [1, 3, 2, 3])
        self.assertEqual([len(diagrams.param_pieces(p, 8)) for p in range(8)],
                         [1, 4, 3, 4, 2, 4, 3, 4])
        self.assertEqual(diagrams.param_pieces(1, 4), [1, 2, 1])
        self.assertEqual(diagrams.param_pieces(3, 8), [1, 4, 2, 1])

    def test_matches_load_pieces_in_the_kernels(self):
        rules = {"rows/step13_layernorm_aligned": (
                     "if constexpr (at == 0 && J + 4 <= PACK) {",
                     "} else if constexpr (at % 2 == 0 && J + 2 <= PACK) {"),
                 "rows/step14_bf16_layernorm_aligned": (
                     "constexpr unsigned int n = (at == 0 && J + 8 <= PACK) ? 8 "
                     ": (at % 4 == 0 && J + 4 <= PACK) ? 4 : (at % 2 == 0 && J + 2 <= PACK) ? 2 : 1;",)}
        for step, lines in rules.items():
            self.assertIn(step, diagrams.ROW_PARAMS)
            with open(os.path.join(REPO, step, "rows.cu")) as f:
                src = " ".join(f.read().split())
            for line in lines:
                self.assertIn(line, src, step)


class ClusterOwnerTests(unittest.TestCase):
    """The picture of rows/step15_cluster draws diagrams.cluster_owner(), which
    must place a row's packs as the kernel's index expressions do."""

    def test_each_block_holds_whole_runs_of_threads(self):
        blocks, threads, slots, packs = diagrams.ROW_CLUSTER["rows/step15_cluster"]
        g = blocks * threads
        owners = [diagrams.cluster_owner(i, blocks, threads, slots) for i in range(packs)]
        self.assertEqual([b for b, _ in owners[:g]], [i // threads for i in range(g)])
        self.assertEqual(owners[g], (0, "registers"))   # slot 1 starts over at block 0
        self.assertEqual([p for _, p in owners].count("shared"), packs - slots * g)
        self.assertEqual(diagrams.cluster_owner(slots * g + threads, blocks, threads, slots),
                         (1, "shared"))

    def test_matches_the_kernels_indexing(self):
        with open(os.path.join(REPO, "rows", "step15_cluster", "rows.cu")) as f:
            src = " ".join(f.read().split())
        for line in ("unsigned int rank = blockIdx.x % CLUSTER;",
                     "unsigned int t = rank * SHARE + b;",
                     "if (t + k * G < packs) load_pack<PACK>(x, k * G, v[k]);",
                     "store_pack<PACK>(s_rest, (i / G + k) * SHARE + b, r[k]);"):
            self.assertIn(line, src)

    def test_the_layernorm_clusters_indexing(self):
        """Step 17 places a row's packs as step 15 does (its picture uses the
        same cluster_owner): rest_slot() is step 15's slot in a cluster."""
        self.assertEqual(diagrams.ROW_CLUSTER["rows/step17_layernorm_cluster"],
                         diagrams.ROW_CLUSTER["rows/step15_cluster"])
        with open(os.path.join(REPO, "rows", "step17_layernorm_cluster", "rows.cu")) as f:
            src = " ".join(f.read().split())
        for line in ("unsigned int rank = blockIdx.x % CLUSTER;",
                     "unsigned int t = rank * SHARE + b;",
                     "if (t + k * G < packs) load_pack<PACK>(x, k * G, v[k]);",
                     "return CLUSTER == 1 ? i + k * G : (i / G + k) * (G / CLUSTER) + b;",
                     "store_pack<PACK>(s_rest, rest_slot<G, CLUSTER>(i, k, b), r[k]);",
                     "cluster_allreduce<CLUSTER>(sum, &s_cluster[0]);",
                     "cluster_allreduce<CLUSTER>(sum, &s_cluster[1]);"):
            self.assertIn(line, src)


BACK_PICTURES = ("back-columns.png", "back-columns.zh-CN.png")


def back_step0_problems(rows, cols):
    """What is wrong with diagrams.back_step0_reads(), against a direct
    enumeration of every (row, col): thread row reads (row, c) at trip c."""
    reads = diagrams.back_step0_reads(rows, cols)
    problems = []
    seen = [(row, col) for _, _, _, row, col in reads]
    if sorted(seen) != [(r, c) for r in range(rows) for c in range(cols)]:
        problems.append("not every (row, col) read exactly once")
    for c, b, tid, row, col in reads:
        if b * diagrams.BACK_BLOCK + tid != row or c != col:
            problems.append(f"thread {b}.{tid} at trip {c} reads ({row}, {col})")
            break
    for trip in range(cols):   # warp 0 at one trip: 32 rows, 32 sectors
        warp0 = [(row, col) for c, b, tid, row, col in reads if c == trip and b == 0 and tid < 32]
        if len({row for row, _ in warp0}) != min(32, rows) or len({col for _, col in warp0}) != 1:
            problems.append(f"warp 0 at trip {trip}: {warp0[:3]}...")
            break
    return problems


def back_step2_problems(rows, cols, grid):
    """What is wrong with diagrams.back_step2_reads(), against a direct
    enumeration: row r belongs to the block b with b rows / grid <= r <
    (b + 1) rows / grid, column c to thread c mod BLOCK_SIZE; each thread goes
    down its column in row order; 32 neighbouring threads read 32 neighbouring
    columns of one row at once."""
    reads = diagrams.back_step2_reads(rows, cols, grid)
    block = diagrams.BACK_BLOCK
    problems = []
    seen = [(row, col) for *_, row, col in reads]
    if sorted(seen) != [(r, c) for r in range(rows) for c in range(cols)]:
        problems.append("not every (row, col) read exactly once")
    owner = {}
    for r in range(rows):
        owner[r] = [b for b in range(grid) if b * rows // grid <= r < (b + 1) * rows // grid]
    for b, chunk, k, tid, row, col in reads:
        if owner.get(row) != [b] or tid != col % block or row != chunk + k or k >= diagrams.BACK_CHUNK:
            problems.append(f"block {b} thread {tid} reads ({row}, {col}) at chunk {chunk}, k {k}")
            break
    walk = {}
    for b, chunk, k, tid, row, col in reads:
        walk.setdefault((b, col), []).append(row)
    for (b, col), down in walk.items():
        if down != sorted(down):
            problems.append(f"block {b} column {col}: rows {down} out of order")
            break
    instant = {}
    for b, chunk, k, tid, row, col in reads:
        instant.setdefault((b, chunk, k, tid // 32, col // block), []).append((row, col))
    for key, cells in instant.items():
        cols_read = sorted(c for _, c in cells)
        if len({r for r, _ in cells}) != 1 or cols_read != list(range(cols_read[0],
                                                                      cols_read[0] + len(cells))):
            problems.append(f"warp load {key}: {cells[:3]}... not neighbours in one row")
            break
    return problems


def back_sums_problems(blocks, cols):
    """diagrams.back_partial_sums() against the loop it transcribes: in every
    column, each partial row once, warp w's rows w, w + 8, ... ascending."""
    warps = diagrams.BACK_BLOCK // 32
    problems = []
    sums = diagrams.back_partial_sums(blocks, cols)
    if sorted(sums) != list(range(cols)):
        problems.append(f"columns {sorted(sums)[:4]}..., not 0-{cols - 1}")
    for c, per_warp in sums.items():
        flat = sorted(b for rows in per_warp for b in rows)
        if flat != list(range(blocks)) or len(per_warp) != warps:
            problems.append(f"column {c}: {per_warp}")
            break
        for w, rows in enumerate(per_warp):
            if rows != sorted(rows) or any(b % warps != w for b in rows):
                problems.append(f"column {c}, warp {w}: {rows}")
                break
    return problems


BACK_SHAPES = ((32, 32), (20, 40), (33, 300), (7, 5), (300, 257), (1, 1))


class BackColumnsTests(unittest.TestCase):
    """Part 3's picture (plots/diagrams/back-columns.png) draws the index
    functions diagrams.back_*(): each against a direct enumeration of every
    cell, and each against the kernel lines it transcribes."""

    def test_step0_reads_against_an_enumeration(self):
        for rows, cols in BACK_SHAPES:
            self.assertEqual(back_step0_problems(rows, cols), [], (rows, cols))

    def test_step2_reads_against_an_enumeration(self):
        for rows, cols in BACK_SHAPES:
            for cap in (1, 3, 528):
                grid = diagrams.back_grid(rows, cap)
                self.assertEqual(back_step2_problems(rows, cols, grid), [], (rows, cols, grid))

    def test_partial_sums_against_an_enumeration(self):
        for blocks in (1, 3, 8, 9, 17, 528):
            for cols in (1, 32, 33, 100):
                self.assertEqual(back_sums_problems(blocks, cols), [], (blocks, cols))

    def test_the_pictures_slices(self):
        grid = diagrams.back_grid(diagrams.BACK_ROWS)
        self.assertEqual(grid, 3)
        self.assertEqual([diagrams.back_slice(b, 32, grid) for b in range(grid)],
                         [(0, 10), (10, 21), (21, 32)])
        self.assertEqual(diagrams.back_grid(16, 528), 2)   # a block per 8 rows at most

    def test_a_broken_index_function_is_caught(self):
        """Each check above fails on an index function off by one."""
        broken = {
            "back_slice": lambda b, rows, grid: (b * rows // grid, (b + 1) * rows // grid + 1),
            "back_step0_reads": lambda rows, cols, block=256: [
                (c, 0, r, r, (c + r) % cols) for r in range(rows) for c in range(cols)],
            "back_partial_sums": lambda blocks, cols, block=256: {
                c: [list(range(w, blocks, 4)) for w in range(8)] for c in range(cols)},
        }
        checks = {"back_slice": lambda: back_step2_problems(32, 32, 3),
                  "back_step0_reads": lambda: back_step0_problems(32, 32),
                  "back_partial_sums": lambda: back_sums_problems(9, 32)}
        for name, function in broken.items():
            original = getattr(diagrams, name)
            setattr(diagrams, name, function)
            try:
                self.assertNotEqual(checks[name](), [], name)
            finally:
                setattr(diagrams, name, original)
        # Loop 2 with a thread per row of the chunk: a warp's loads down a column.
        original = diagrams.back_step2_reads
        diagrams.back_step2_reads = lambda rows, cols, grid, block=256: [
            (b, ch, k, k, row, col) for b, ch, k, _, row, col in original(rows, cols, grid)]
        try:
            self.assertNotEqual(back_step2_problems(32, 32, 3), [])
        finally:
            diagrams.back_step2_reads = original

    def test_matches_the_kernels_indexing(self):
        lines = {diagrams.BACK_STEP0: (
                     "#define BLOCK_SIZE 256",
                     "unsigned int row = blockIdx.x * blockDim.x + threadIdx.x; if (row >= rows) "
                     "return;",
                     "for (unsigned int c = 0; c < cols; c++) {",
                     "atomicAdd(&g_dgamma[c], d * xhat);",
                     "unsigned int blocks = (unsigned int)((p->rows + BLOCK_SIZE - 1) / BLOCK_SIZE);"),
                 diagrams.BACK_STEP2: (
                     "#define BLOCK_SIZE 256",
                     "#define ROWS_PER_CHUNK (BLOCK_SIZE / WARP_SIZE)",
                     "unsigned int first = (unsigned int)((size_t)blockIdx.x * rows / gridDim.x);",
                     "unsigned int last = (unsigned int)((size_t)(blockIdx.x + 1) * rows / gridDim.x);",
                     "for (unsigned int chunk = first; chunk < last; chunk += ROWS_PER_CHUNK) {",
                     "unsigned int chunk_rows = min(ROWS_PER_CHUNK, last - chunk);",
                     "for (unsigned int c = threadIdx.x; c < cols; c += BLOCK_SIZE) {",
                     "for (unsigned int k = 0; k < ROWS_PER_CHUNK; k++) { if (k < chunk_rows) { "
                     "size_t i = (size_t)(chunk + k) * cols + c;",
                     "part_dgamma[c] = dgamma;",
                     "unsigned int c = tile * WARP_SIZE + lane;",
                     "for (unsigned int b = warp; b < blocks; b += WARPS) {",
                     "for (unsigned int w = 0; w < WARPS; w++) {",
                     "size_t blocks = (rows + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK; return "
                     "(unsigned int)(blocks < max_blocks ? blocks : max_blocks);")}
        for step, wanted in lines.items():
            with open(os.path.join(REPO, step, "back.cu")) as f:
                src = " ".join(f.read().split())
            for line in wanted:
                self.assertIn(line, src, step)

    def test_the_picture_exists_in_both_languages_and_is_shown(self):
        for name in BACK_PICTURES:
            self.assertTrue(os.path.isfile(os.path.join(FIGURES, name)),
                            f"plots/diagrams/{name}: run make diagrams")
        for readme, name in (("README.md", BACK_PICTURES[0]),
                             ("README.zh-CN.md", BACK_PICTURES[1])):
            with open(os.path.join(REPO, "back", readme), encoding="utf-8") as f:
                self.assertIn(f"](../plots/diagrams/{name})", f.read(), readme)

    def test_every_text_of_the_picture_has_a_chinese_form(self):
        if not HAVE_MATPLOTLIB:
            self.skipTest("no matplotlib: pip install -r tools/requirements.txt")
        mpl = diagrams.load_matplotlib()
        fig = diagrams.draw_back_columns(mpl, os.path.join(FIGURES, "back-columns.png"))
        try:
            self.assertEqual(chart_zh.untranslated(fig), [])
        finally:
            mpl.plt.close(fig)


class BackClusterTests(unittest.TestCase):
    """Part 3's picture of step 13 (plots/diagrams/back-step13_cluster-cluster.png)
    draws diagrams.back_cluster_owner(): against step 13's loops written out
    (back_cluster_floats, every float of a row once), and those loops against
    the kernel's lines."""

    SHAPES = ((4, 4, 2, 40), (1, 32, 16, 1000), (2, 256, 16, 8193), (13, 256, 16, 50257),
              (10, 1024, 16, 151936), (16, 1024, 16, 262145))

    def problems(self, blocks, threads, per, cols):
        found = diagrams.back_cluster_floats(blocks, threads, per, cols)
        wrong = [c for c in range(cols) if len(found.get(c, [])) != 1]
        wrong += [c for c in range(cols) if c in found and len(found[c]) == 1 and
                  diagrams.back_cluster_owner(c, blocks, threads, per) != found[c][0]]
        return wrong + sorted(set(found) - set(range(cols)))

    def test_every_float_once_and_the_owner_agrees(self):
        for shape in self.SHAPES:
            self.assertEqual(self.problems(*shape), [], shape)

    def test_a_broken_owner_is_caught(self):
        original = diagrams.back_cluster_owner
        diagrams.back_cluster_owner = lambda c, b, t, per: original(c + 1, b, t, per)
        try:
            self.assertNotEqual(self.problems(4, 4, 2, 40), [])
        finally:
            diagrams.back_cluster_owner = original
        original = diagrams.back_cluster_floats
        diagrams.back_cluster_floats = lambda b, t, per, cols: {
            c: v for c, v in original(b, t, per, cols).items() if c < b * t * per}
        try:
            self.assertNotEqual(self.problems(4, 4, 2, 40), [])   # the rest left out
        finally:
            diagrams.back_cluster_floats = original

    def test_matches_the_kernels_indexing(self):
        with open(os.path.join(REPO, diagrams.BACK_CLUSTER_STEP, "back.cu")) as f:
            src = " ".join(f.read().split())
        for line in ("unsigned int row = blockIdx.x / blocks, rank = blockIdx.x % blocks;",
                     "unsigned int first = rank * PER_THREAD * B + threadIdx.x;",
                     "y_r[k] = k < mine ? y[k * B] : 0.0f;",
                     "unsigned int rest = (blocks * PER_THREAD + rank) * B + threadIdx.x, "
                     "stride = blocks * B;",
                     "for (unsigned int c = rest; c < cols; c += stride)",
                     "float sum = lane < blocks ? *cluster.map_shared_rank(&s_block, (int)lane) "
                     ": 0.0f;"):
            self.assertIn(line, src)

    def test_the_picture_exists_in_both_languages_and_is_shown(self):
        name = os.path.basename(diagrams.BACK_CLUSTER_FIGURE)
        for readme, picture in (("README.md", name),
                                ("README.zh-CN.md", name.replace(".png", ".zh-CN.png"))):
            self.assertTrue(os.path.isfile(os.path.join(FIGURES, picture)),
                            f"plots/diagrams/{picture}: run make diagrams")
            with open(os.path.join(REPO, "back", readme), encoding="utf-8") as f:
                self.assertIn(f"](../plots/diagrams/{picture})", f.read(), readme)

    def test_every_text_of_the_picture_has_a_chinese_form(self):
        if not HAVE_MATPLOTLIB:
            self.skipTest("no matplotlib: pip install -r tools/requirements.txt")
        mpl = diagrams.load_matplotlib()
        fig = diagrams.draw_back_cluster(mpl, None)
        try:
            self.assertEqual(chart_zh.untranslated(fig), [])
        finally:
            mpl.plt.close(fig)


def bulk_problems(blocks, start, cols, pack=diagrams.ROW_BULK_PACK):
    """The elements of a row that diagrams.bulk_elements() (the kernel's
    expressions written out) does not give exactly one block, or gives
    another block than diagrams.bulk_owner() (the picture's), and any it
    gives past the row: [] for a sound model. Part 2's step 23 (packs of 8
    bfloat16s) and part 3's step 14 (packs of 4 floats) split their rows
    alike."""
    found = diagrams.bulk_elements(cols, start, blocks, pack=pack)
    wrong = [e for e in range(cols) if len(found.get(e, [])) != 1]
    wrong += [e for e in range(cols) if len(found.get(e, [])) == 1 and
              diagrams.bulk_owner(e, cols, start, blocks, pack=pack) != found[e][0]]
    return wrong + sorted(set(found) - set(range(cols)))


def slot_problems(blocks, warps):
    """[(block, its slots)] for each block whose slots, as the kernels' push
    loop (diagrams.bulk_pushes) fills them, are not 0 .. blocks x warps - 1
    once each (what each block's mbarrier counts), or that gets no pushes."""
    pushes = diagrams.bulk_pushes(blocks, warps)
    got = {rank: sorted(slot for slot, _, _ in pushes.get(rank, [])) for rank in range(blocks)}
    return [(rank, slots) for rank, slots in got.items() if slots != list(range(blocks * warps))]


class RowBulkTests(unittest.TestCase):
    """Part 2's picture of step 26 (plots/diagrams/rows-step26_bf16_push-bulk.png)
    draws diagrams.bulk_owner() and push_slot(): against the kernel's
    expressions written out (bulk_elements, every element of a row once),
    and those expressions against the kernel's lines."""

    SHAPES = ((4, 5, 70), (2, 0, 32769), (2, 3, 32775), (4, 7, 65536), (8, 1, 131072),
              (8, 6, 151936))   # blocks, elements past a boundary, cols

    def problems(self, blocks, start, cols):
        return bulk_problems(blocks, start, cols)

    def test_every_element_once_and_the_owner_agrees(self):
        for shape in self.SHAPES:
            self.assertEqual(self.problems(*shape), [], shape)

    def test_every_slot_once(self):
        for blocks, warps in ((4, 2), (8, 8), (2, 8)):
            self.assertEqual(slot_problems(blocks, warps), [], (blocks, warps))

    def test_a_broken_owner_is_caught(self):
        original = diagrams.bulk_owner
        diagrams.bulk_owner = lambda e, cols, start, blocks, pack=8: \
            original(e + 8, cols, start, blocks, pack) if e + 8 < cols else \
            original(e, cols, start, blocks, pack)
        try:
            self.assertNotEqual(self.problems(4, 5, 70), [])
        finally:
            diagrams.bulk_owner = original
        original = diagrams.bulk_elements
        diagrams.bulk_elements = lambda cols, start, blocks, pack=8: {
            e: v for e, v in original(cols, start, blocks, pack).items() if v[0][1] == "body"}
        try:
            self.assertNotEqual(self.problems(4, 5, 70), [])   # the head and tail left out
        finally:
            diagrams.bulk_elements = original

    def test_matches_the_kernels_indexing(self):
        with open(os.path.join(REPO, diagrams.ROW_BULK_STEP, "rows.cu")) as f:
            src = " ".join(f.read().split())
        for line in ("unsigned int head = (unsigned int)((PACK - (size_t)x / sizeof(__nv_bfloat16) "
                     "% PACK) % PACK); head = min(head, cols); return {head, (cols - head) / PACK, "
                     "(cols - head) % PACK};",
                     "unsigned int first = min(rank * share, split.packs);",
                     "unsigned int bytes = (min(first + share, split.packs) - first) * 16;",
                     "bool head = rank == 0 && t < split.head, tail = rank == blocks - 1 && "
                     "t < split.tail;",
                     "push_pair(&s_pairs[rank * WARPS_PER_BLOCK + warp], &s_pushed, lane, mine);",
                     "unsigned int packs = (unsigned int)(p->cols / 8);",
                     "unsigned int share = (packs + cluster - 1) / cluster;"):
            self.assertIn(line, src)

    def test_the_picture_exists_in_both_languages_and_is_shown(self):
        name = os.path.basename(diagrams.row_figure_path(diagrams.ROW_BULK_STEP, FIGURES))
        for readme, picture in (("README.md", name),
                                ("README.zh-CN.md", name.replace(".png", ".zh-CN.png"))):
            self.assertTrue(os.path.isfile(os.path.join(FIGURES, picture)),
                            f"plots/diagrams/{picture}: run make diagrams")
            with open(os.path.join(REPO, diagrams.ROW_BULK_STEP, readme), encoding="utf-8") as f:
                self.assertIn(f"](../../plots/diagrams/{picture})", f.read(), readme)

    def test_every_text_of_the_picture_has_a_chinese_form(self):
        if not HAVE_MATPLOTLIB:
            self.skipTest("no matplotlib: pip install -r tools/requirements.txt")
        mpl = diagrams.load_matplotlib()
        fig = diagrams.draw_row_bulk(mpl, None)
        try:
            self.assertEqual(chart_zh.untranslated(fig), [])
        finally:
            mpl.plt.close(fig)


class BackBulkTests(unittest.TestCase):
    """Part 3's picture of step 14 (plots/diagrams/back-step14_bulk-bulk.png)
    draws step 23's index rules with 16-byte packs of 4 floats:
    diagrams.bulk_owner() and push_slot(), against the kernel's loops written
    out (bulk_elements: every float of a row once; bulk_pushes: every slot of
    every block once), with shares of back_share_bytes() / 32 packs over the
    blocks back_bulk_cluster() picks; and all of them against the kernel's
    lines, so that an edit to the kernel or to the model fails here."""

    PACK = diagrams.BACK_BULK_PACK
    # (blocks, floats from a 16-byte boundary to y_row, cols): the picture's
    # row, then the vocabulary widths over the clusters the step picks for
    # them (test_the_clusters_of_the_vocabulary_widths), at every head offset.
    SHAPES = tuple((4, start, diagrams.BACK_BULK[3]) for start in range(4)) + tuple(
        (blocks, start, cols) for blocks, cols in ((8, 50257), (16, 128256), (16, 151936))
        for start in range(4))

    def problems(self, blocks, start, cols):
        return bulk_problems(blocks, start, cols, pack=self.PACK)

    def source(self):
        with open(os.path.join(REPO, diagrams.BACK_BULK_STEP, "back.cu")) as f:
            return " ".join(f.read().split())

    def test_the_pictures_row(self):
        blocks, warps, start, cols = diagrams.BACK_BULK
        self.assertEqual(diagrams.bulk_split(cols, start, self.PACK), (3, 11, 2))
        self.assertEqual(diagrams.bulk_share(cols, blocks, self.PACK), 3)
        self.assertEqual(self.problems(blocks, start, cols), [])

    def test_every_float_once_and_the_owner_agrees(self):
        for shape in self.SHAPES:
            self.assertEqual(self.problems(*shape), [], shape)

    def test_every_share_fits_its_half_of_shared_memory(self):
        # s_y holds `share` packs and s_dy starts `share` packs on: a block's
        # packs must fit them, and the launch asks for both halves.
        for blocks, start, cols in self.SHAPES:
            share = diagrams.back_share_bytes(cols, blocks) // 32
            self.assertEqual(share, diagrams.bulk_share(cols, blocks, self.PACK))
            packs = Counter(block for e, ((block, where),) in
                            diagrams.bulk_elements(cols, start, blocks, pack=self.PACK).items()
                            if where == "body")
            self.assertLessEqual(max(packs.values()), share * self.PACK, (blocks, start, cols))

    def test_the_clusters_of_the_vocabulary_widths(self):
        self.assertEqual([diagrams.back_bulk_cluster(cols) for cols in
                          (32768, 50257, 128256, 151936)], [0, 8, 16, 16])
        self.assertEqual(diagrams.back_bulk_cluster(151936, most=8), 8)
        for cols in (50257, 128256):   # the fewest blocks whose shares fit SHARE_BYTES
            c = diagrams.back_bulk_cluster(cols)
            self.assertLessEqual(diagrams.back_share_bytes(cols, c), diagrams.BACK_SHARE_BYTES)
            self.assertGreater(diagrams.back_share_bytes(cols, c // 2), diagrams.BACK_SHARE_BYTES)

    def test_share_bytes_is_the_kernels_expression(self):
        m = re.search(r"static size_t share_bytes\(size_t cols, unsigned int c\) \{ return "
                      r"([^;]+);", self.source())
        self.assertIsNotNone(m, "share_bytes() not found in back/step14_bulk/back.cu")
        self.assertRegex(m.group(1), r"^[\w\s()+\-*/]+$")
        expression = m.group(1).replace("/", "//")   # size_t division, in Python
        for cols in (32769, 50257, 65536, 128256, 131077, 151936, 262144):
            for c in (2, 4, 8, 16):
                self.assertEqual(eval(expression, {}, {"cols": cols, "c": c}),
                                 diagrams.back_share_bytes(cols, c), (cols, c))

    def test_every_block_gets_every_slot_once(self):
        for blocks in (2, 4, 8, 16):
            for warps in (2, 8):
                self.assertEqual(slot_problems(blocks, warps), [], (blocks, warps))

    def test_a_broken_model_is_caught(self):
        from unittest import mock
        blocks, warps, start, cols = diagrams.BACK_BULK
        original_owner, original_elements = diagrams.bulk_owner, diagrams.bulk_elements
        broken = {
            # every float one pack on: the owner of the next pack
            "bulk_owner": lambda e, c, s, b, pack=8: original_owner(min(e + pack, c - 1), c, s,
                                                                    b, pack),
            # the tail floats left out, as fixture back_bulk_tail_unsummed leaves them
            "bulk_elements": lambda c, s, b, pack=8: {
                e: v for e, v in original_elements(c, s, b, pack).items() if v[0][1] != "tail"},
            # shares one pack short: the last packs of the body belong to no block
            "bulk_share": lambda c, b, pack=8: -(-(c // pack) // b) - 1,
        }
        for name, function in broken.items():
            with mock.patch.object(diagrams, name, function):
                self.assertNotEqual(self.problems(blocks, start, cols), [], name)
                self.assertNotEqual(self.problems(16, 3, 151936), [], name)
        # slot `warp` alone, as fixture back_bulk_wrong_slot pushes
        with mock.patch.object(diagrams, "push_slot", lambda rank, warp, w: warp):
            self.assertNotEqual(slot_problems(blocks, warps), [])
            self.assertNotEqual(slot_problems(16, 8), [])
        # lanes 0 .. blocks - 2 only: the last block gets nothing
        original_pushes = diagrams.bulk_pushes
        with mock.patch.object(diagrams, "bulk_pushes", lambda b, w, lanes=32: {
                r: v for r, v in original_pushes(b, w, lanes).items() if r < b - 1}):
            self.assertNotEqual(slot_problems(blocks, warps), [])
        # shares of 128 KB at most: 4 blocks at 50257 columns, not 8
        with mock.patch.object(diagrams, "BACK_SHARE_BYTES", 128 * 1024):
            self.assertNotEqual(diagrams.back_bulk_cluster(50257), 8)

    def test_matches_the_kernels_indexing(self):
        src = self.source()
        for line in (f"#define MAX_CLUSTER {diagrams.BACK_MAX_CLUSTER}",
                     "#define BULK_BLOCK 256",
                     "#define BULK_WARPS (BULK_BLOCK / WARP_SIZE)",
                     f"#define SHARE_BYTES ({diagrams.BACK_SHARE_BYTES // 1024} * 1024)",
                     f"#define MIN_BULK_COLS {diagrams.BACK_MIN_BULK_COLS}",
                     "unsigned int head = (unsigned int)((4 - (size_t)y_row / sizeof(float) % 4) "
                     "% 4); head = min(head, cols); unsigned int body = (cols - head) / 4, tail = "
                     "(cols - head) % 4; unsigned int first = min(rank * share, body); unsigned int "
                     "packs = min(first + share, body) - first, bytes = packs * 16;",
                     "const float *y = y_row + head + (size_t)first * 4, *dy = dy_row + head + "
                     "(size_t)first * 4; float *dx = dx_row + head + (size_t)first * 4; float4 "
                     "*s_y = s_share, *s_dy = s_share + share; unsigned int sums = blocks * "
                     "BULK_WARPS;",
                     "mbarrier_expect(&s_pushed, sums * sizeof(float));",
                     "bulk_load((char *)s_y + b, (const char *)y + b, n, &s_loaded); "
                     "bulk_load((char *)s_dy + b, (const char *)dy + b, n, &s_loaded);",
                     "bool has_head = rank == 0 && t < head, has_tail = rank == blocks - 1 && "
                     "t < tail; unsigned int edge = has_head ? t : cols - tail + t;",
                     "if (lane < blocks) push_sum(&s_sums[rank * BULK_WARPS + warp], &s_pushed, "
                     "lane, sum);",
                     "s_dy[i] = make_float4(",
                     "dx_row[edge] = e_y * (e_dy - s);",
                     "bulk_store((char *)dx + b, (const char *)s_dy + b, min(CHUNK, bytes - b));",
                     "return (cols / 4 + c - 1) / c * 2 * 16;",
                     "if (p->cols <= MIN_BULK_COLS ||",
                     "unsigned int c = 2; while (c < bulk_max_cluster() && share_bytes(p->cols, c) "
                     "> SHARE_BYTES) c *= 2;",
                     "unsigned int share = (unsigned int)(share_bytes(p->cols, cluster) / 32);"):
            self.assertIn(line, src)

    def test_the_picture_exists_in_both_languages_and_is_shown(self):
        blocks, warps, _, cols = diagrams.BACK_BULK
        values = dict(step=diagrams.BACK_BULK_STEP, blocks=blocks, cols=cols, warps=warps)
        name = os.path.basename(diagrams.BACK_BULK_FIGURE)
        for readme, picture, alt in (
                ("README.md", name, diagrams.english(diagrams.BACK_BULK_ALT, **values)),
                ("README.zh-CN.md", name.replace(".png", ".zh-CN.png"),
                 chart_zh.zh_strings.STRINGS[diagrams.BACK_BULK_ALT].format(**values))):
            self.assertTrue(os.path.isfile(os.path.join(FIGURES, picture)),
                            f"plots/diagrams/{picture}: run make diagrams")
            with open(os.path.join(REPO, "back", readme), encoding="utf-8") as f:
                self.assertIn(f"![{alt}](../plots/diagrams/{picture})", f.read(), readme)

    def test_every_text_of_the_picture_has_a_chinese_form(self):
        if not HAVE_MATPLOTLIB:
            self.skipTest("no matplotlib: pip install -r tools/requirements.txt")
        mpl = diagrams.load_matplotlib()
        fig = diagrams.draw_back_bulk(mpl, None)
        try:
            self.assertEqual(chart_zh.untranslated(fig), [])
        finally:
            mpl.plt.close(fig)


class DrawingTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="diagrams-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    @needs_matplotlib
    def test_pictures_are_small_deterministic_and_committed(self):
        # With the pinned matplotlib, one drawing equal to the committed one
        # (drawn by another process, on another day) shows both that the
        # drawing is deterministic and that the pictures are current; with
        # another version, two drawings are compared with each other.
        import matplotlib
        same_version = matplotlib.__version__ == pinned_matplotlib()
        first, second = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        for out in (first,) if same_version else (first, second):
            proc = run_diagrams("--out-dir", out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        names = sorted(os.listdir(first))
        committed = sorted(os.listdir(FIGURES))
        if chart_zh.font_path() is None:   # no Chinese twin drawn without the font
            committed = [n for n in committed if not n.endswith(chart_zh.ZH + ".png")]
        self.assertEqual(names, committed)
        other = FIGURES if same_version else second
        for name in names:
            with open(os.path.join(first, name), "rb") as a, \
                    open(os.path.join(other, name), "rb") as b:
                data = a.read()
                self.assertEqual(data, b.read(), f"plots/diagrams/{name} is stale: run make diagrams"
                                 if same_version else f"{name} differs between two runs")
            self.assertLess(len(data), MAX_PNG_BYTES, name)

    @needs_matplotlib
    def test_drawing_never_touches_a_readme_and_rerun_writes_nothing(self):
        step = "step2_bankconflict"
        shutil.copytree(os.path.join(REPO, step), os.path.join(self.tmp, step),
                        ignore=shutil.ignore_patterns("run"))
        readme = os.path.join(self.tmp, step, "README.md")
        begin, end = markers("figures")
        with open(readme, encoding="utf-8") as handle:
            original = handle.read()
        stale = original.split(begin)[0] + f"{begin}\nstale\n{end}" + original.split(end)[1]
        with open(readme, "w", encoding="utf-8") as handle:
            handle.write(stale)
        args = ("--root", self.tmp, "--steps", step)
        proc = draw_here(*args)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"diagrams.py: wrote {os.path.join(self.tmp, 'plots', 'diagrams')}",
                      proc.stdout)
        with open(readme, encoding="utf-8") as handle:
            self.assertEqual(handle.read(), stale)   # make docs fills it, not this
        again = draw_here(*args)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertNotIn("wrote", again.stdout)

    def test_missing_matplotlib_exits_3(self):
        fake = os.path.join(self.tmp, "fake")
        os.makedirs(os.path.join(fake, "matplotlib"))
        with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as handle:
            handle.write("raise ImportError('hidden by the test')\n")
        env = dict(os.environ, PYTHONPATH=fake)
        proc = run_diagrams("--out-dir", self.tmp, env=env)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertEqual(len(proc.stderr.strip().split("\n")), 1, proc.stderr)

    def test_bad_root_is_one_line_exit_2(self):
        proc = run_diagrams("--root", self.tmp, "--steps", "step1_divergence")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("diagrams.py: error:"), lines[0])
        self.assertNotIn("Traceback", proc.stderr)

    def test_missing_root_is_one_line_exit_2_and_makes_nothing(self):
        # Said before matplotlib is looked for, and no plots/diagrams/ made under it.
        missing = os.path.join(self.tmp, "none")
        for args in (("--root", missing), ("--root", missing, "--steps", "step1_divergence")):
            with self.subTest(args):
                proc = run_diagrams(*args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertEqual(proc.stderr, f"diagrams.py: error: --root {missing!r} is not a "
                                              "folder\n")
                self.assertFalse(os.path.exists(missing))


if __name__ == "__main__":
    from counting import run_module
    sys.exit(run_module("patterns", verbosity=1))
