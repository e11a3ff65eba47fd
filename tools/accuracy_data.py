"""The accuracy lesson's data: the rows `make accuracy` writes, turned into
relative errors, and the textbook error bounds they are drawn against.

Shared by accuracy_chart.py (the chart) and accuracy_docs.py (the markdown
block of ACCURACY.md); tools/accuracy.py writes the rows. The columns are the
results CSV's (common/README.md). Only verified rows (pass = 1) count.
"""
import math
import statistics
import struct
from dataclasses import dataclass

import schema

# Unit roundoff of float32 with round-to-nearest: half the gap between 1 and
# the next float, so one add's result is off by at most U times its size.
U = 2.0 ** -24

FILLS = ("random", "positive", "wide")
CPU_SEQ = "CPU sequential"    # harness --cpu-sums: a plain float loop, i = 0 .. n-1
CPU_KAHAN = "CPU Kahan"       # the same loop, Kahan-compensated
CPU_COLUMNS = ((CPU_SEQ, "cpu_seq"), (CPU_KAHAN, "cpu_kahan"))

# The timed pair that prices compensation: step 8 and its Kahan variant.
COST_BASE, COST_KAHAN = "step8_vector", "kahan_step8"

# Steps from 6 on add n / threads elements serially in each thread before
# their tree (Brent's theorem, step6_multi/README.md); steps 0-5 are trees.
CHAIN_FROM_STEP = 6
REQUIRED = ("step", "n", "mode", "fill", "seed", "pass", "result", "reference",
            "sum_abs", "gpu")


class AccuracyError(Exception):
    """Bad input: the scripts report it as one line."""


# ---------------------------------------------------------------- reading

def read_rows(path):
    """Every row of an accuracy CSV as a dict of strings, header checked
    (tools/schema.py reads it; the rows stay untyped, because a failed run's
    row may hold anything and is still kept in the file)."""
    try:
        header, records = schema.read_records(path)
    except schema.SchemaError as err:
        raise AccuracyError(str(err)) from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise AccuracyError(f"{path}: missing column(s) {', '.join(missing)} "
                            "(written by an older harness? rebuild and rerun make accuracy)")
    if not records:
        raise AccuracyError(f"{path}: no rows")
    return [record for _, record in records]


def number(row, column):
    """A float from a row; one clear error for an empty or broken cell."""
    text = (row.get(column) or "").strip()
    try:
        return float(text)
    except ValueError:
        raise AccuracyError(f"{row.get('step', '?')} n={row.get('n', '?')}: "
                            f"column {column} is not a number: {text!r}") from None


def passed(row):
    return (row.get("pass") or "").strip() == "1"


# ------------------------------------------------------------------ bounds

def log2_ceil(n):
    """ceil(log2 n) for an integer n >= 1, exactly (no float log)."""
    return (n - 1).bit_length()


def bound_sequential(n):
    """A left-to-right loop: |error| <= (n - 1) u sum|x| (to first order in u)."""
    return (n - 1) * U


def bound_pairwise(n):
    """A balanced tree of depth ceil(log2 n): |error| <= ceil(log2 n) u sum|x|."""
    return log2_ceil(n) * U


def bound_kahan(n):
    """Kahan's compensated loop: |error| <= 2u sum|x|, whatever n (+ O(n u^2))."""
    return 2 * U


# Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., ch. 4.
BOUNDS = (("sequential", "(n-1)u", bound_sequential),
          ("pairwise", "ceil(log2 n)u", bound_pairwise),
          ("Kahan", "2u", bound_kahan))


# ----------------------------------------------------------------- errors

def relative_error(value, reference, sum_abs):
    """|value - reference| / sum|x|: the error in the units the bounds use."""
    if sum_abs <= 0:
        return 0.0 if value == reference else math.inf
    return abs(value - reference) / sum_abs


def float_bits(text):
    """The float32 a %.9g field names (9 digits identify a float32 exactly)."""
    return struct.pack("<f", float(text))


def series_key(name):
    """Plot and table order: steps by number, CUB, extras, then the CPU loops."""
    number = schema.step_number(name)
    if number is not None:
        return (0, number, name)
    if name == schema.CUB:
        return (1, 0, name)
    if name in (CPU_SEQ, CPU_KAHAN):
        return (3, [CPU_SEQ, CPU_KAHAN].index(name), name)
    return (2, 0, name)


def check_rows(rows):
    """Verified check-mode rows of the three fills, first run per input only.

    A program run again on the same input (the run-to-run test) repeats its
    key; the later rows are for run_to_run(), not for the error curves.
    """
    first = {}
    for row in rows:
        if row.get("mode") != "check" or row.get("fill") not in FILLS or not passed(row):
            continue
        key = (row["step"], row["fill"], int(row["n"]), int(row["seed"]))
        first.setdefault(key, row)
    return first


def errors(rows):
    """{(series, fill): [(n, relative error), ...] ascending in n}.

    Series are the programs (the `step` column) and the two CPU loops from
    the rows that carry cpu_seq / cpu_kahan. Where several seeds ran at one
    n, the point is their median.
    """
    samples = {}
    for (step, fill, n, _seed), row in check_rows(rows).items():
        reference, sum_abs = number(row, "reference"), number(row, "sum_abs")
        values = [(step, number(row, "result"))]
        values += [(series, number(row, column)) for series, column in CPU_COLUMNS
                   if (row.get(column) or "").strip()]
        for series, value in values:
            samples.setdefault((series, fill, n), []).append(
                relative_error(value, reference, sum_abs))
    curves = {}
    for (series, fill, n), errs in sorted(samples.items()):
        curves.setdefault((series, fill), []).append((n, statistics.median(errs)))
    return curves


def error_at(curves, series, fill, n):
    return dict(curves.get((series, fill), [])).get(n)


def median_error(curves, names, fill, n):
    """The median error of several series at one point; None if none has it."""
    errs = [e for e in (error_at(curves, s, fill, n) for s in names) if e is not None]
    return statistics.median(errs) if errs else None


def numbered_steps(curves):
    """[(step number, series)] of the series that are steps, in order."""
    return [(schema.step_number(s), s) for s in series_names(curves)
            if schema.step_number(s) is not None]


def tree_steps(curves):
    return [s for number, s in numbered_steps(curves) if number < CHAIN_FROM_STEP]


def chain_steps(curves):
    return [s for number, s in numbered_steps(curves) if number >= CHAIN_FROM_STEP]


def series_names(curves):
    return sorted({series for series, _ in curves}, key=series_key)


def fills_present(curves):
    return [fill for fill in FILLS if any(f == fill for _, f in curves)]


def seed_counts(rows):
    """{n: number of seeds} over the check rows, for the captions."""
    seeds = {}
    for (_step, _fill, n, seed) in check_rows(rows):
        seeds.setdefault(n, set()).add(seed)
    return {n: len(s) for n, s in sorted(seeds.items())}


# --------------------------------------------------- cost and determinism

@dataclass(frozen=True)
class Cost:
    n: int
    base_us: float      # median over rounds of step 8's median time
    kahan_us: float     # the same for the Kahan variant
    rounds: int
    distinct: str       # the `distinct` values seen, "1" when every rep agreed

    @property
    def ratio(self):
        return self.kahan_us / self.base_us


def costs(rows):
    """Step 8 against its Kahan variant, per n, from the verified timed rows."""
    times = {}
    distinct = {}
    for row in rows:
        if row.get("mode") != "timed" or not passed(row) or row["step"] not in (COST_BASE,
                                                                                 COST_KAHAN):
            continue
        n = int(row["n"])
        times.setdefault((row["step"], n), []).append(number(row, "median_us"))
        distinct.setdefault(n, set()).add((row.get("distinct") or "").strip() or "?")
    out = []
    for n in sorted({n for _, n in times}):
        base, kahan = times.get((COST_BASE, n)), times.get((COST_KAHAN, n))
        if base and kahan:
            out.append(Cost(n, statistics.median(base), statistics.median(kahan),
                            min(len(base), len(kahan)), "/".join(sorted(distinct[n]))))
    return out


def run_to_run(rows):
    """Programs run more than once on one input: {(fill, n, seed): {step: same bits?}}."""
    results = {}
    for row in rows:
        if row.get("mode") == "check" and passed(row):
            key = (row["fill"], int(row["n"]), int(row["seed"]))
            results.setdefault(key, {}).setdefault(row["step"], []).append(
                float_bits(row["result"]))
    repeated = {}
    for key, by_step in results.items():
        again = {step: len(set(bits)) == 1 for step, bits in by_step.items() if len(bits) > 1}
        if again:
            repeated[key] = again
    return repeated


def same_bits_groups(rows, fill, n, seed):
    """The programs at one input grouped by the exact float they returned."""
    groups = {}
    for (step, f, m, s), row in check_rows(rows).items():
        if (f, m, s) == (fill, n, seed):
            groups.setdefault(float_bits(row["result"]), []).append(step)
    return sorted((sorted(g, key=series_key) for g in groups.values()),
                  key=lambda g: series_key(g[0]))


def describe(rows, column):
    """The distinct values of a column, in first-seen order, joined."""
    seen = []
    for row in rows:
        value = (row.get(column) or "").strip() or "?"
        if value not in seen:
            seen.append(value)
    return " / ".join(seen)

