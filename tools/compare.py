"""What the charts (tools/plot.py) and the README tables (tools/docs.py) both
derive from a results file and a profile file: one row per (step, n), the
speed-ups between steps, how far apart repeated rounds landed, and the
counters per step.

make bench runs every program in ROUNDS separate processes (tools/bench.py);
a (step, n) measured in several rounds is represented by its median round
(the row whose median_us is the median of the rounds'), and its spread is
the fastest and slowest round. A ratio between two programs is a win or a
loss only where their spreads do not overlap; otherwise it is a tie
(verdict()). Files without rounds keep the latest row per (step, n).

A file may hold several runs (make bench ONLY=... adds one for the programs it
names, with what they are compared against: schema.py's run and role
columns). Each program's figures come from its current run, the newest that
measured it as a program asked for; a ratio of two programs is only ever
taken within the first one's current run (within()), never across runs.

Rows come through tools/schema.py, so failed runs (pass != 1) and check-mode
rows never get here.
"""
import copy
import os
from dataclasses import dataclass

import schema
import steps

# The two sizes every table and the progression chart use: 2^25 floats
# (128 MiB, the seed articles' size) and 2^28 floats (1 GiB, far beyond L2).
N_MID = 1 << 25
N_BIG = 1 << 28
TABLE_SIZES = (N_MID, N_BIG)

# From this step on, the kernels are memory-bound and race CUB (the vs-CUB chart).
FIRST_VS_CUB_STEP = 6

# Nsight Compute metrics the profile chart and the counters tables show, in
# display order, with a plain-words label (tools/docs.py translates it).
COUNTERS = (
    ("smsp__inst_executed.sum", "warp instructions executed"),
    ("smsp__thread_inst_executed_per_inst_executed.ratio",
     "threads active per warp instruction"),
    ("smsp__thread_inst_executed_pred_on.sum",
     "thread instructions with the predicate on"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
     "shared-memory bank conflicts, loads"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
     "shared-memory bank conflicts, stores"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed",
     "DRAM throughput, % of peak"),
    ("gpu__time_duration.sum", "kernel duration"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active",
     "achieved occupancy, % of peak warps"),
)
COUNTER_LABELS = dict(COUNTERS)

# A ratio of two counters: the average number of lanes that really work per
# warp instruction. "threads active" counts predicated-off lanes as active, so
# it stays near 32 when the compiler predicates a divergent branch; this one
# does not.
LANES_ON = "lanes with the predicate on per warp instruction"
LANES_ON_PARTS = ("smsp__thread_inst_executed_pred_on.sum", "smsp__inst_executed.sum")


def distinct(values):
    """Distinct values in first-seen order, joined; normally just one."""
    seen = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return " / ".join(seen)


def repo_path(path, root):
    """The path as a README or caption shows it: relative to the repository."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return os.path.basename(path) if rel.startswith("..") else rel.replace(os.sep, "/")


@dataclass(frozen=True)
class Speedups:
    vs_previous: float | None
    vs_step0: float | None
    vs_cub: float | None


def median_round(rows):
    """(the row of the median round, (fastest, slowest) median_us, rounds).

    An even number of rounds takes the faster of the two middle ones, so the
    row shown is always one that was measured."""
    ordered = sorted(rows, key=lambda r: r.median_us)
    times = [r.median_us for r in ordered]
    return ordered[(len(ordered) - 1) // 2], (times[0], times[-1]), len(ordered)


WIN, TIE, LOSS = "win", "tie", "loss"


def current_runs(rows):
    """{program: its current run}: the newest run (run ids are UTC times; a
    file from before runs is run "") that measured it as a program asked for,
    or, for one only ever timed as a comparison, its newest run."""
    asked, any_run = {}, {}
    for row in rows:
        run = row.run or ""
        any_run[row.step] = max(any_run.get(row.step, run), run)
        if row.role != schema.COMPARED:
            asked[row.step] = max(asked.get(row.step, run), run)
    return {step: asked.get(step, run) for step, run in any_run.items()}


def summarize(group):
    """(row, (fastest, slowest) median_us, rounds) of one program at one size
    in one run: the median round, or the latest row where there are no rounds."""
    with_round = [r for r in group if r.round is not None]
    if len(with_round) > 1:
        return median_round(with_round)
    row = group[-1]   # a later run replaces an earlier one
    return row, (row.median_us, row.median_us), 1


class RunIndex:
    """Rows of (program, key) summarized per run, the current run of each
    program, and views of one run (within()). Measurements and
    RowMeasurements share it; key is n in part 1, a shape or n in part 2."""

    def index(self, grouped, stale=None):
        """grouped: {(step, key): [rows]}. stale: label, code hash -> True when
        that hash is not the program's now (tools/stale.py), or None."""
        self.current = current_runs([r for group in grouped.values() for r in group])
        self.by_run, self.round_sets = {}, {}
        for key, group in grouped.items():
            per_run = {}
            for row in group:
                per_run.setdefault(row.run or "", []).append(row)
            self.by_run[key] = {run: summarize(rows) for run, rows in per_run.items()}
            for run, rows in per_run.items():
                self.round_sets[(key, run)] = {r.round for r in rows if r.round is not None}
        self.runs = sorted({run for entries in self.by_run.values() for run in entries})
        self.stale_check = stale
        self._views = {}
        self._fill(lambda step: self.current[step])

    def _fill(self, run_of):
        self.rows, self.spreads, self.rounds = {}, {}, {}
        shown = set()
        for key, entries in self.by_run.items():
            run = run_of(key[0])
            if run in entries:
                self.rows[key], self.spreads[key], self.rounds[key] = entries[run]
                shown |= self.round_sets[(key, run)]
        # The rounds of the rows shown here: runs may differ in their rounds.
        self.round_numbers = sorted(shown)

    def within(self, step):
        """This file as step's current run saw it: every program's row from
        that run (None where the run did not time it), so that a ratio of
        step to anything is a ratio of one run. A file of one run is itself."""
        if len(self.runs) <= 1 or step not in self.current:
            return self
        run = self.current[step]
        if run not in self._views:
            view = copy.copy(self)
            view._fill(lambda _step: run)
            view._views = {}
            view.within = lambda _step, view=view: view
            self._views[run] = view
        return self._views[run]

    def only(self, steps):
        """This file with only these programs' rows (each from its current
        run): what a chart that draws them alone should describe, its
        revisions and rounds among them."""
        view = copy.copy(self)
        view.by_run = {key: runs for key, runs in self.by_run.items() if key[0] in steps}
        view._fill(lambda step: self.current[step])
        view._views = {}
        return view

    def is_stale(self, row):
        """True when row measured an earlier version of its program's code."""
        return bool(row) and self.stale_check is not None and \
            self.stale_check(row.step, row.code_hash)

    def stale_rows(self, rows):
        """{label: revision} of the stale rows among rows (None skipped)."""
        return {row.step: row.git_rev for row in rows if row is not None and self.is_stale(row)}


def verdict(spread, other_spread):
    """WIN if every round of the first ran faster than every round of the
    second, LOSS if every one ran slower, else TIE (the spreads overlap)."""
    (lo, hi), (other_lo, other_hi) = spread, other_spread
    if hi < other_lo:
        return WIN
    if lo > other_hi:
        return LOSS
    return TIE


class Measurements(RunIndex):
    """The usable rows of one results file: one per (step, n), the median
    round of the step's current run where there are rounds, else the latest row."""

    def __init__(self, path, rows, stale=None):
        self.path = path
        grouped = {}
        for row in rows:
            if schema.is_program(row.step) and not row.rows:
                grouped.setdefault((row.step, row.n), []).append(row)
        self.index(grouped, stale)
        if not self.rows:
            raise schema.SchemaError(f"{path}: no usable rows of stepN_name or cub programs")

    @classmethod
    def load(cls, path, stale=None):
        return cls(path, schema.load_results(path, need_speed=True), stale)

    def require_table_sizes(self):
        if not any(n in TABLE_SIZES for _, n in self.rows):
            raise schema.SchemaError(f"{self.path}: no usable rows at the required sizes "
                                     "n = 2^25 or n = 2^28")

    @property
    def slug(self):
        """'h200' for .../h200.csv: the charts' file-name prefix."""
        name = os.path.basename(self.path)
        return name[:-4] if name.lower().endswith(".csv") else name

    @property
    def steps(self):
        return sorted({step for step, _ in self.rows}, key=schema.step_sort_key)

    @property
    def sizes(self):
        return sorted({n for _, n in self.rows})

    def get(self, step, n):
        return self.rows.get((step, n))

    def spread(self, step, n):
        """(fastest, slowest) of the rounds' median times, in us."""
        return self.spreads.get((step, n))

    @property
    def round_count(self):
        """The rounds of the file (1 for a file without rounds)."""
        return len(self.round_numbers) or 1

    def verdict_vs(self, step, other, n):
        """win, tie or loss of step against other at n, in step's current run
        (tie if either is missing)."""
        view = self.within(step)
        a, b = view.spread(step, n), view.spread(other, n)
        return verdict(a, b) if a and b else TIE

    def steps_at(self, n):
        return [step for step in self.steps if (step, n) in self.rows]

    def sizes_of(self, step):
        return [n for n in self.sizes if (step, n) in self.rows]

    def describe(self, field):
        """The distinct values of a column, e.g. the GPU's name, joined with ' / '."""
        return distinct(str(getattr(row, field)) for row in self.rows.values())

    @property
    def gpu(self):
        return self.describe("gpu")

    @property
    def peak(self):
        return max(row.peak_gbps for row in self.rows.values())

    def flush_state(self):
        """'all' when L2 was flushed before every repetition of every row,
        'none' when never, 'some' for a mix."""
        flushes = {row.flush for row in self.rows.values()}
        return "all" if flushes == {1} else "none" if flushes == {0} else "some"

    def reps_text(self):
        """'20', or '5–20' when rows differ."""
        reps = sorted({row.reps for row in self.rows.values()})
        return str(reps[0]) if len(reps) == 1 else f"{reps[0]}–{reps[-1]}"

    def previous(self, step, n):
        """The nearest lower-numbered step measured at n in step's current
        run; CUB has none."""
        if step == schema.CUB:
            return None
        view = self.within(step)
        earlier = [other for other in view.steps_at(n) if other != schema.CUB and
                   schema.step_sort_key(other) < schema.step_sort_key(step)]
        return view.get(earlier[-1], n) if earlier else None

    def step0(self, n):
        for step in self.steps_at(n):
            if schema.step_number(step) == 0:
                return self.get(step, n)
        return None

    def speedups(self, step, n):
        """Speed-ups compare median times at the same n; vs CUB compares GB/s,
        so 0.98x reads as "reaches 98 % of CUB's bandwidth". All within
        step's current run."""
        view = self.within(step)
        row, prev, base = view.get(step, n), view.previous(step, n), view.step0(n)
        cub = view.get(schema.CUB, n)
        return Speedups(
            vs_previous=prev.median_us / row.median_us if prev else None,
            vs_step0=base.median_us / row.median_us if base and base.step != step else None,
            vs_cub=row.gbps / cub.gbps if cub and cub.gbps > 0 else None)

    def vs_cub_steps(self):
        """Steps from FIRST_VS_CUB_STEP on that share a size with CUB: the
        lines of the vs-CUB chart (empty: no such chart)."""
        cub_sizes = set(self.sizes_of(schema.CUB))
        return [step for step in self.steps
                if (schema.step_number(step) or -1) >= FIRST_VS_CUB_STEP
                and cub_sizes & set(self.sizes_of(step))]


class Counters:
    """The values of one profile file: (step, metric) -> number, in base units."""

    def __init__(self, path, rows, metrics=None):
        self.path = path
        self.shown = metrics or [metric for metric, _ in COUNTERS]
        self.values, self.units, self.versions = {}, {}, {}
        gpus, revs = [], []
        for row in rows:
            if not schema.is_program(row.step) or row.value is None:
                continue  # ncu's "n/a" for a counter it could not collect
            self.values[(row.step, row.metric)] = row.value  # the last row wins
            self.versions[row.step] = row
            self.units.setdefault(row.metric, row.unit)
            gpus.append(row.gpu)
            revs.append(row.git_rev)
        self.gpu = distinct(filter(None, gpus))
        self.git_rev = distinct(filter(None, revs))
        if not self.metrics_present():
            raise schema.SchemaError(f"{path}: none of the counters the charts and tables "
                                     f"show (e.g. {self.shown[0]}) are present")

    @classmethod
    def load(cls, path):
        return cls(path, schema.load_profile(path))

    @property
    def steps(self):
        return sorted({step for step, _ in self.values}, key=schema.step_sort_key)

    def metrics_present(self):
        present = {metric for _, metric in self.values}
        return [metric for metric in self.shown if metric in present]

    def ratio(self, step, numerator, denominator):
        """One counter over another for a step (e.g. sectors per request), or None."""
        a, b = self.value(step, numerator), self.value(step, denominator)
        return a / b if a is not None and b else None

    def value(self, step, metric):
        return self.values.get((step, metric))

    def version(self, step):
        """The profile row that says which code step's counters measured
        (step, code_hash, git_rev), or None."""
        return self.versions.get(step)

    def lanes_on(self, step):
        """smsp__thread_inst_executed_pred_on.sum / smsp__inst_executed.sum, or None."""
        on, inst = (self.value(step, metric) for metric in LANES_ON_PARTS)
        return on / inst if on is not None and inst else None

    def previous(self, step):
        """The nearest lower-numbered profiled step; CUB and step 0 have none."""
        earlier = [other for other in self.steps if schema.step_number(other) is not None and
                   schema.step_sort_key(other) < schema.step_sort_key(step)]
        return earlier[-1] if earlier else None


def chart_kinds(measurements, counters):
    """The charts plot.py draws for these inputs, in the order READMEs show them."""
    kinds = ["progression", "sweep"]
    if measurements.vs_cub_steps():
        kinds.append("vs-cub")
    if counters is not None:
        kinds.append("profile")
    return kinds


def chart_path(measurements, kind, out_dir=None):
    """<out_dir>/<slug>-<kind>.png; out_dir defaults to the results file's folder."""
    folder = out_dir or os.path.dirname(os.path.abspath(measurements.path))
    return os.path.join(folder, f"{measurements.slug}-{kind}.png")


# ----------------------------------------------------------------- part 2

ROW_SEED_SHAPE = (32768, 1024)   # the seed article's LayerNorm: batch 64 x sequence 512 rows
ONE_ARRAY = "step9_singlepass"   # part 1's last step, summing a shape's floats as one array
COPY = "rows/copy"
BACK_COPY = schema.BACK_BASELINES[0]   # part 3's bar: dx = x + dy, its three streams
BACK_COPY16 = schema.BACK_BASELINES[1]   # the same in bfloat16: part 3's bfloat16 steps' bar
COPY16 = "rows/copy16"   # the copy in bfloat16: the bar of the bfloat16 steps
BF16 = "_bf16"           # an op's suffix when its data are bfloat16 (softmax_bf16)
ROW_CUB = "rows/cub"
TORCH = "torch/"                     # PyTorch eager: torch/<op> (tools/torch_rows.py)
TORCH_COMPILED = TORCH + "compiled/"  # the same op through torch.compile (Inductor)


def shape_label(shape):
    return f"{shape[0]} x {shape[1]}"


# Part 2's map (bench.py --widths): its ops, float first and bfloat16 below,
# as the chart's panels and the README's tables show them, with their names.
WIDTH_PANELS = (("sum", "layernorm", "softmax", "rmsnorm"),
                ("layernorm_bf16", "softmax_bf16", "rmsnorm_bf16", "add_rmsnorm_bf16"))
WIDTH_TITLES = {"sum": "row sum", "layernorm": "LayerNorm", "softmax": "softmax",
                "rmsnorm": "RMSNorm", "layernorm_bf16": "LayerNorm, bfloat16",
                "softmax_bf16": "softmax, bfloat16", "rmsnorm_bf16": "RMSNorm, bfloat16",
                "add_rmsnorm_bf16": "residual add + RMSNorm, bfloat16"}


def width_label(cols):
    """A width as a tick or a column head: 1024 -> 1k, 65536 -> 64k; a width
    that is not a whole number of 1024s in full (50257, 151936), so that it
    reads as one."""
    return f"{cols // 1024}k" if cols % 1024 == 0 else f"{cols}"


def shape_mib(shape, elem=4):
    return elem * shape[0] * shape[1] / (1 << 20)


# The folders whose stepN_* programs a results file orders by number.
STEP_PARTS = (schema.ROWS + "step", schema.BACK + "step")


class RowMeasurements(RunIndex):
    """Part 2's results file (make bench's <gpu>-rows.csv): one row per
    (program, shape), the median round of its current run, with its spread;
    part 1's step 9 on the same floats as one array is filed under the shape
    of the same size."""

    def __init__(self, path, rows, stale=None):
        self.path = path
        grouped = {}
        for row in rows:
            if row.rows:
                grouped.setdefault((row.step, (row.rows, row.cols)), []).append(row)
            elif row.step == ONE_ARRAY:
                grouped.setdefault((row.step, row.n), []).append(row)
        self.index(grouped, stale)
        self.shapes = sorted({shape for step, shape in self.rows if isinstance(shape, tuple)},
                             key=lambda s: (s != ROW_SEED_SHAPE, s[1], s[0]))
        if not self.shapes:
            raise schema.SchemaError(f"{path}: no usable rows of part 2 programs")

    @classmethod
    def load(cls, path, stale=None):
        return cls(path, schema.load_results(path, need_speed=True, quiet=True), stale)

    @property
    def programs(self):
        """rows/stepN_* (or back/stepN_*) in step order, then the baselines,
        then torch/*."""
        names = {step for step, shape in self.rows if isinstance(shape, tuple)}
        steps = sorted((n for n in names if n.startswith(STEP_PARTS)), key=schema.step_sort_key)
        return steps + sorted(n for n in names if not n.startswith(STEP_PARTS))

    @property
    def steps(self):
        return [p for p in self.programs if schema.step_number(p) is not None]

    def get(self, step, shape):
        if step == ONE_ARRAY:
            return self.rows.get((step, shape[0] * shape[1]))
        return self.rows.get((step, shape))

    def spread(self, step, shape):
        key = (step, shape[0] * shape[1]) if step == ONE_ARRAY else (step, shape)
        return self.spreads.get(key)

    def verdict_vs(self, step, other, shape):
        """win, tie or loss of step against other, in step's current run."""
        view = self.within(step)
        a, b = view.spread(step, shape), view.spread(other, shape)
        return verdict(a, b) if a and b else TIE

    def op(self, step):
        for (name, _), row in self.rows.items():
            if name == step:
                return row.op
        return ""

    def last_step(self, op):
        """The highest-numbered step computing op (sum, layernorm, ...), less
        the steps that branch off an earlier one (steps.branches_off)."""
        found = [s for s in self.steps if self.op(s) == op and not steps.branches_off(steps.REPO, s)]
        return found[-1] if found else None

    def previous(self, step):
        """The nearest lower-numbered step of the file computing the same op,
        else (an op's first step) the nearest of the same element type, else
        the nearest of any op (bench.previous_step's rule): which step that is
        does not depend on runs; its figures beside step's come from step's run
        (within()), and a run without it has none to show. A baseline
        (rows/copy, rows/cub) has none."""
        if schema.step_number(step) is None:
            return None
        earlier = [s for s in self.steps if schema.step_sort_key(s) < schema.step_sort_key(step)]
        return steps.nearest_of_op(self.op(step), earlier, self.op)

    def ceiling(self, step):
        """What a program is measured against: the copy for ops that write a row
        per row (layernorm, softmax, copy), the bfloat16 copy for their bfloat16
        forms, step 9's one-array sum for sums."""
        op = self.op(step)
        return ONE_ARRAY if op == "sum" else COPY16 if op.endswith(BF16) else COPY

    def describe(self, field):
        return distinct(str(getattr(row, field)) for (step, _), row in self.rows.items()
                        if not step.startswith(TORCH) and getattr(row, field) not in (None, ""))

    @property
    def round_count(self):
        return len(self.round_numbers) or 1

    def torch_version(self):
        return distinct(row.toolchain for (step, _), row in self.rows.items()
                        if step.startswith(TORCH))
