#!/usr/bin/env python3
"""Turn a results CSV into charts and markdown tables.

    python3 plots/plot.py --results plots/results/h200.csv [--profile CSV]
                          [--out-dir DIR] [--readme README.md] [--steps-root DIR]

The results columns and the step naming are defined in common/README.md.
Charts: <slug>-progression.png, <slug>-sweep.png and, with --profile,
<slug>-profile.png, where <slug> is the results file name without ".csv".
With --readme, the text between <!-- BEGIN results --> and <!-- END results -->
is regenerated. With --steps-root, each stepN_*/README.md gets its
"measured", "counters" and "diff" marker blocks regenerated.

Exit codes: 0 done, 2 bad input (one line on stderr), 3 matplotlib missing.
"""

import argparse
import csv
import difflib
import io
import math
import os
import re
import sys
from dataclasses import dataclass
from types import SimpleNamespace

# The two sizes every table and the progression chart use: 2^25 floats
# (128 MiB, the seed articles' size) and 2^28 floats (1 GiB, far beyond L2).
N_MID = 1 << 25
N_BIG = 1 << 28
TABLE_SIZES = (N_MID, N_BIG)

STEP_RE = re.compile(r"^step(\d+)_(.+)$")
CUB = "cub"
NONE_MARK = "—"

# Only the columns this script reads are required, so extra columns
# added to the harness later do not break plotting.
RESULT_COLUMNS = ("step", "n", "reps", "median_us", "gbps", "gpu", "driver",
                  "cuda", "peak_gbps", "flush", "git_rev")
PROFILE_COLUMNS = ("step", "metric", "value")

# Quoted from the seed articles (shared/seeds), NOT measured here:
# V100, their own harness, 2^25 floats, median-free single timings.
SEED_V100_US = (("v0", 788.29), ("v1", 502.43), ("v2", 375.90),
                ("v3", 205.89), ("v4", 176.86), ("final", 162.21))

# Nsight Compute metrics the profile chart and the counters tables show,
# in display order, with a plain-words label.
PROFILE_METRICS = (
    ("smsp__inst_executed.sum", "warp instructions executed"),
    ("smsp__thread_inst_executed_per_inst_executed.ratio",
     "threads active per warp instruction"),
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
METRIC_LABELS = dict(PROFILE_METRICS)

# Colours: the two sizes are two shades of one hue; CUB is grey and hatched
# so the reference never reads as "just another step".
COLOUR_MID, COLOUR_BIG = "#8fb4e3", "#1f4e8c"
COLOUR_CUB_MID, COLOUR_CUB_BIG = "#c8c8c8", "#6e6e6e"
COLOUR_PEAK = "#c0392b"
CHART_DPI = 100


class PlotError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


# ----------------------------------------------------------------------------
# Step names and small formatting helpers
# ----------------------------------------------------------------------------

def step_number(name):
    match = STEP_RE.match(name)
    return int(match.group(1)) if match else None


def step_sort_key(name):
    # Numeric, not lexical, so step10 follows step9; CUB always last.
    number = step_number(name)
    return (1, 0, name) if number is None else (0, number, name)


def is_program(name):
    return name == CUB or step_number(name) is not None


def power_label(n):
    """2^25 for powers of two, the plain number otherwise."""
    if n > 0 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def tex_power_label(n):
    if n > 0 and n & (n - 1) == 0:
        return f"$2^{{{n.bit_length() - 1}}}$"
    return str(n)


def fmt_us(value):
    return f"{value:.1f}"


def fmt_gbps(value):
    return f"{value:.0f}"


def fmt_pct(value):
    return f"{value:.1f}"


def fmt_ratio(value, digits=2):
    return NONE_MARK if value is None else f"{value:.{digits}f}x"


def fmt_count(value):
    """Counter values: integers with separators, fractions to 3 digits."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def fmt_compact(value):
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= divisor:
            return f"{value / divisor:.3g}{suffix}"
    return f"{value:.3g}"


def md_cell(text):
    # A literal "|" would split the markdown table cell.
    return text.replace("|", "\\|")


def distinct(values):
    """Distinct values in first-seen order, joined; normally just one."""
    seen = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return " / ".join(seen)


def source_path(path):
    # Results and profiles live in plots/results/ by convention; the text
    # names that location so README links stay stable wherever we ran.
    return f"plots/results/{os.path.basename(path)}"


# ----------------------------------------------------------------------------
# Reading the CSV files
# ----------------------------------------------------------------------------

def read_csv_records(path, required, what):
    """Return [(line number, dict)] after checking file, header and columns."""
    if not os.path.isfile(path):
        raise PlotError(f"{what} file not found: {path}")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise PlotError(f"{what} file is not UTF-8 text: {path}") from None
    if not text.strip():
        raise PlotError(f"{what} file is empty: {path}")
    try:
        reader = csv.DictReader(io.StringIO(text))
        reader.fieldnames = [name.strip() for name in reader.fieldnames or []]
        missing = [name for name in required if name not in reader.fieldnames]
        if missing:
            raise PlotError(f"{path}: missing column(s): {', '.join(missing)}")
        records = [(reader.line_num, record) for record in reader]
    except csv.Error as err:
        raise PlotError(f"{path}: malformed CSV: {err}") from None
    if not records:
        raise PlotError(f"{path}: header but no data rows")
    return records


def field_text(where, record, column):
    value = record.get(column)
    if value is None or not value.strip():
        raise PlotError(f"{where}: empty or missing value in column '{column}'")
    return value.strip()


def field_int(where, record, column):
    text = field_text(where, record, column)
    try:
        return int(text)
    except ValueError:
        raise PlotError(
            f"{where}: column '{column}' is not an integer: {text!r}") from None


def field_float(where, record, column):
    text = field_text(where, record, column)
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise PlotError(f"{where}: column '{column}' is not a number: {text!r}")
    return value


@dataclass(frozen=True)
class Row:
    step: str
    n: int
    reps: int
    median_us: float
    gbps: float
    peak_gbps: float
    flush: int
    gpu: str
    driver: str
    cuda: str
    git_rev: str

    @property
    def pct_peak(self):
        return 100.0 * self.gbps / self.peak_gbps


def parse_result_row(where, record):
    row = Row(
        step=field_text(where, record, "step"),
        n=field_int(where, record, "n"),
        reps=field_int(where, record, "reps"),
        median_us=field_float(where, record, "median_us"),
        gbps=field_float(where, record, "gbps"),
        peak_gbps=field_float(where, record, "peak_gbps"),
        flush=field_int(where, record, "flush"),
        gpu=field_text(where, record, "gpu"),
        driver=field_text(where, record, "driver"),
        cuda=field_text(where, record, "cuda"),
        git_rev=field_text(where, record, "git_rev"),
    )
    # Zero or negative values would make every ratio below meaningless.
    if row.n < 1 or row.median_us <= 0 or row.peak_gbps <= 0 or row.gbps < 0:
        raise PlotError(f"{where}: n, median_us and peak_gbps must be positive")
    return row


@dataclass
class Results:
    path: str
    rows: dict  # (step, n) -> Row

    @property
    def slug(self):
        name = os.path.basename(self.path)
        return name[:-4] if name.lower().endswith(".csv") else name

    @property
    def steps(self):
        return sorted({step for step, _ in self.rows}, key=step_sort_key)

    @property
    def sizes(self):
        return sorted({n for _, n in self.rows})

    def get(self, step, n):
        return self.rows.get((step, n))

    def steps_at(self, n):
        return [step for step in self.steps if (step, n) in self.rows]

    def describe(self, field):
        return distinct(str(getattr(row, field)) for row in self.rows.values())

    @property
    def peak(self):
        return max(row.peak_gbps for row in self.rows.values())


def load_results(path):
    rows = {}
    for line, record in read_csv_records(path, RESULT_COLUMNS, "results"):
        row = parse_result_row(f"{path} line {line}", record)
        if is_program(row.step):
            rows[(row.step, row.n)] = row  # a later run replaces an earlier one
    if not rows:
        raise PlotError(f"{path}: no rows for step<N>_<name> or cub programs")
    if not any(n in TABLE_SIZES for _, n in rows):
        raise PlotError(f"{path}: no rows at the required sizes "
                        f"n = 2^25 or n = 2^28")
    return Results(path, rows)


@dataclass
class Profile:
    path: str
    values: dict  # (step, metric) -> float
    units: dict   # metric -> unit text
    gpu: str
    git_rev: str

    @property
    def steps(self):
        return sorted({step for step, _ in self.values}, key=step_sort_key)

    def metrics_present(self):
        present = {metric for _, metric in self.values}
        return [metric for metric, _ in PROFILE_METRICS if metric in present]


def is_not_available(text):
    return (text or "").strip().lower() in ("", "n/a")


def load_profile(path):
    values, units, gpus, revs = {}, {}, [], []
    for line, record in read_csv_records(path, PROFILE_COLUMNS, "profile"):
        where = f"{path} line {line}"
        step = field_text(where, record, "step")
        metric = field_text(where, record, "metric")
        # ncu prints "n/a" for a counter it could not collect and profile.py
        # passes that through: a missing value, not a broken file.
        if not is_program(step) or is_not_available(record.get("value")):
            continue
        value = field_float(where, record, "value")
        values[(step, metric)] = value  # one row per step+metric; last wins
        units.setdefault(metric, (record.get("unit") or "").strip())
        gpus.append((record.get("gpu") or "").strip())
        revs.append((record.get("git_rev") or "").strip())
    profile = Profile(path, values, units, distinct(filter(None, gpus)),
                      distinct(filter(None, revs)))
    if not profile.metrics_present():
        raise PlotError(f"{path}: none of the profile metrics plot.py shows "
                        f"(e.g. {PROFILE_METRICS[0][0]}) are present")
    return profile


# ----------------------------------------------------------------------------
# Comparisons between steps
# ----------------------------------------------------------------------------

def previous_row(results, step, n):
    """Nearest lower-numbered step measured at n; CUB has no 'previous'."""
    if step == CUB:
        return None
    earlier = [other for other in results.steps_at(n)
               if other != CUB and step_sort_key(other) < step_sort_key(step)]
    return results.get(earlier[-1], n) if earlier else None


def step0_row(results, n):
    for step in results.steps_at(n):
        if step_number(step) == 0:
            return results.get(step, n)
    return None


@dataclass(frozen=True)
class Speedups:
    vs_previous: float | None
    vs_step0: float | None
    vs_cub: float | None


def speedups(results, step, n):
    # Speed-ups compare median times at the same n; vs CUB compares GB/s,
    # so "0.98x" reads as "reaches 98 % of CUB's bandwidth".
    row = results.get(step, n)
    prev = previous_row(results, step, n)
    base = step0_row(results, n)
    cub = results.get(CUB, n)
    return Speedups(
        vs_previous=prev.median_us / row.median_us if prev else None,
        vs_step0=(base.median_us / row.median_us
                  if base and base.step != step else None),
        vs_cub=row.gbps / cub.gbps if cub and cub.gbps > 0 else None,
    )


# ----------------------------------------------------------------------------
# Charts
# ----------------------------------------------------------------------------

def load_matplotlib():
    """Import matplotlib with the file-only Agg backend, or None if missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed; works over SSH and in CI
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        return None
    return SimpleNamespace(plt=plt, Patch=Patch)


def provenance_caption(results):
    return (f"{results.describe('gpu')}  ·  driver {results.describe('driver')}"
            f"  ·  CUDA {results.describe('cuda')}  ·  git "
            f"{results.describe('git_rev')}  ·  {flush_text(results)}  ·  "
            f"median of {reps_text(results)} reps  ·  "
            f"{source_path(results.path)}")


def tick_label(step):
    if step == CUB:
        return "CUB\n(library)"
    head, _, tail = step.partition("_")
    return f"{head}\n{tail}"


def save_figure(mpl, fig, path):
    """Write the PNG only when its bytes changed, so reruns leave git clean."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=CHART_DPI)
    mpl.plt.close(fig)
    write_if_changed(path, buffer.getvalue())


def bar_style(step, n):
    if step == CUB:
        colour = COLOUR_CUB_MID if n == N_MID else COLOUR_CUB_BIG
        return dict(color=colour, hatch="//", edgecolor="#333333")
    colour = COLOUR_MID if n == N_MID else COLOUR_BIG
    return dict(color=colour, edgecolor="#333333", linewidth=0.5)


def bar_annotation(results, step, n):
    if step_number(step) == 0:
        return "base"
    ratios = speedups(results, step, n)
    # Two decimals so a small regression (0.99x) is not rounded to 1.0x.
    return f"{fmt_ratio(ratios.vs_previous)}\n{fmt_ratio(ratios.vs_step0)}"


def draw_progression_bars(ax, results, steps):
    width = 0.4
    for offset, n in zip((-width / 2, width / 2), TABLE_SIZES):
        for x, step in enumerate(steps):
            row = results.get(step, n)
            if row is None:
                continue
            ax.bar(x + offset, row.gbps, width, **bar_style(step, n))
            ax.annotate(bar_annotation(results, step, n),
                        (x + offset, row.gbps), xytext=(0, 3),
                        textcoords="offset points", ha="center",
                        va="bottom", fontsize=8.5, linespacing=1.1,
                        bbox=dict(facecolor="white", edgecolor="none",
                                  alpha=0.75, pad=0.5))


def draw_reference_lines(ax, results):
    """Peak and CUB lines, labelled at the left edge where bars are low."""
    lines = [(results.peak, COLOUR_PEAK,
              f"theoretical peak {fmt_gbps(results.peak)} GB/s")]
    for n, colour in zip(TABLE_SIZES, (COLOUR_MID, COLOUR_BIG)):
        cub = results.get(CUB, n)
        if cub:
            lines.append((cub.gbps, colour,
                          f"CUB at n = {tex_power_label(n)}: "
                          f"{fmt_gbps(cub.gbps)} GB/s"))
    lowest = min(value for value, _, _ in lines)
    for value, colour, label in lines:
        ax.axhline(value, color=colour, linestyle="--", linewidth=1.6)
        # The lowest label goes under its line so two close lines never
        # print their labels on top of each other.
        below = value == lowest and len(lines) > 1
        ax.text(-0.45, value, label, color=colour, fontsize=9.5,
                fontweight="bold", va="top" if below else "bottom",
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.8,
                          pad=1.0))


def draw_progression(mpl, results, path):
    steps = [s for s in results.steps
             if any(results.get(s, n) for n in TABLE_SIZES)]
    fig, ax = mpl.plt.subplots(figsize=(15, 7.5), layout="constrained")
    draw_progression_bars(ax, results, steps)
    draw_reference_lines(ax, results)
    tallest = max(row.gbps for row in results.rows.values()
                  if row.n in TABLE_SIZES)
    ax.set_ylim(0, 1.15 * max(results.peak, tallest))
    ax.set_xlim(-0.6, len(steps) - 0.4)
    ax.set_xticks(range(len(steps)), [tick_label(s) for s in steps])
    ax.set_ylabel("GB/s  (4·n bytes / median time, decimal GB)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Numbers above bars: speed-up over the previous step / over"
                 " step 0, from median time at the same n", fontsize=10.5)
    legend = [mpl.Patch(color=COLOUR_MID, label="n = $2^{25}$ (128 MiB)"),
              mpl.Patch(color=COLOUR_BIG, label="n = $2^{28}$ (1 GiB)"),
              mpl.Patch(facecolor=COLOUR_CUB_BIG, hatch="//",
                        edgecolor="#333333", label="CUB DeviceReduce")]
    # One row at the top, in the headroom above the peak line.
    ax.legend(handles=legend, loc="upper center", ncol=3, fontsize=10)
    fig.suptitle("Sum reduction, step by step: achieved bandwidth",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(provenance_caption(results), fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


def sweep_colours(mpl, count):
    cmap = mpl.plt.get_cmap("viridis")
    return [cmap(0.92 * i / max(count - 1, 1)) for i in range(count)]


def draw_sweep(mpl, results, path):
    fig, ax = mpl.plt.subplots(figsize=(15, 8), layout="constrained")
    steps = [s for s in results.steps if s != CUB]
    for step, colour in zip(steps, sweep_colours(mpl, len(steps))):
        sizes = [n for n in results.sizes if results.get(step, n)]
        ax.plot(sizes, [results.get(step, n).gbps for n in sizes], marker="o",
                color=colour, linewidth=1.6, label=step)
    cub_sizes = [n for n in results.sizes if results.get(CUB, n)]
    if cub_sizes:
        ax.plot(cub_sizes, [results.get(CUB, n).gbps for n in cub_sizes],
                marker="s", color="black", linestyle="--", linewidth=2.6,
                label="CUB DeviceReduce")
    ax.axhline(results.peak, color=COLOUR_PEAK, linestyle="--",
               label=f"theoretical peak {fmt_gbps(results.peak)} GB/s")
    style_sweep_axes(ax, results)
    fig.suptitle("Sum reduction: bandwidth against input size",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(provenance_caption(results), fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


def style_sweep_axes(ax, results):
    ax.set_xscale("log", base=2)
    # Log y: at small n the time is a constant launch cost, so GB/s rises
    # in proportion to n -- a straight slope that only a log axis shows.
    ax.set_yscale("log")
    ticks = sweep_ticks(results.sizes)
    ax.set_xticks(ticks, [tex_power_label(n) for n in ticks])
    ax.minorticks_off()
    ax.set_xlabel("n (floats, log2 scale)")
    ax.set_ylabel("GB/s (log scale)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=10)
    lowest = min(row.gbps for row in results.rows.values())
    ax.set_ylim(lowest / 6, results.peak * 1.6)  # room for the notes below
    annotate_regimes(ax, results)


def sweep_ticks(sizes):
    """The measured sizes, thinned so that a dense sweep stays legible."""
    powers = [n for n in sizes if n & (n - 1) == 0] or sizes
    step = math.ceil(len(powers) / 16)
    return powers[::step]


def annotate_regimes(ax, results):
    """Label the two regimes next to the data, under the bundle of lines."""
    note = dict(fontsize=10.5, color="#444444", style="italic", va="top")
    small, large = results.sizes[0], results.sizes[-1]
    low_small = min(r.gbps for r in results.rows.values() if r.n == small)
    low_large = min(r.gbps for r in results.rows.values() if r.n == large)
    # Lines climb to the right at small n, so the space just right of and
    # below the first points stays empty.
    ax.text(small * 1.3, low_small * 0.85, "small n: launch overhead "
            "dominates\n(time ≈ constant, so GB/s grows with n)", ha="left",
            **note)
    ax.text(large, low_large * 0.6, "large n: bandwidth bound\n(lines "
            "flatten below the peak)", ha="right", **note)


def axis_scale(values):
    """'log' or 'symlog' when values span two decades or more, else 'linear'."""
    positive = [v for v in values if v > 0]
    if len(positive) < 2 or max(positive) / min(positive) < 100:
        return "linear"
    return "symlog" if len(positive) < len(values) else "log"


def draw_profile_panel(ax, profile, metric, steps):
    present = [s for s in steps if (s, metric) in profile.values]
    values = [profile.values[(s, metric)] for s in present]
    colours = [COLOUR_CUB_BIG if s == CUB else COLOUR_BIG for s in present]
    hatches = ["//" if s == CUB else "" for s in present]
    bars = ax.bar(range(len(present)), values, color=colours,
                  edgecolor="#333333", linewidth=0.5)
    for bar, hatch, value in zip(bars, hatches, values):
        bar.set_hatch(hatch)
        ax.annotate(fmt_compact(value), (bar.get_x() + bar.get_width() / 2,
                    value), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7.5)
    scale = axis_scale(values)
    ax.set_yscale(scale, **({"linthresh": 1} if scale == "symlog" else {}))
    ax.set_xticks(range(len(present)), present, rotation=40, ha="right",
                  fontsize=8.5)
    unit = profile.units.get(metric, "")
    ax.set_title(f"{METRIC_LABELS[metric]}\n{metric}", fontsize=9.5)
    scale_note = {"linear": "", "log": "log scale",
                  "symlog": "log scale, zero at the base"}[scale]
    ax.set_ylabel(" ".join(filter(None, [unit, scale_note])), fontsize=9)
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)


def draw_profile(mpl, profile, results, path):
    metrics = profile.metrics_present()
    cols = min(3, len(metrics))
    rows = math.ceil(len(metrics) / cols)
    fig, axes = mpl.plt.subplots(rows, cols, figsize=(15, 4.2 * rows + 0.8),
                                 layout="constrained", squeeze=False)
    flat = [ax for line in axes for ax in line]
    for ax, metric in zip(flat, metrics):
        draw_profile_panel(ax, profile, metric, profile.steps)
    for ax in flat[len(metrics):]:
        ax.set_visible(False)
    gpu = profile.gpu or results.describe("gpu")
    rev = profile.git_rev or results.describe("git_rev")
    fig.suptitle("Nsight Compute counters per step", fontsize=15,
                 fontweight="bold")
    fig.supxlabel(f"{gpu}  ·  git {rev}  ·  {source_path(profile.path)}"
                  f"  ·  CUB hatched grey", fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


def draw_charts(mpl, results, profile, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    charts = {kind: os.path.join(out_dir, f"{results.slug}-{kind}.png")
              for kind in ("progression", "sweep")}
    draw_progression(mpl, results, charts["progression"])
    draw_sweep(mpl, results, charts["sweep"])
    if profile:
        charts["profile"] = os.path.join(out_dir, f"{results.slug}-profile.png")
        draw_profile(mpl, profile, results, charts["profile"])
    return charts


# ----------------------------------------------------------------------------
# Markdown: marker blocks and the generated text
# ----------------------------------------------------------------------------

def markers(name):
    return f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"


def replace_block(text, name, body):
    """Replace what lies between the marker lines; None if they are absent."""
    begin, end = markers(name)
    lines = text.split("\n")
    stripped = [line.strip() for line in lines]
    if begin not in stripped:
        return None
    first = stripped.index(begin)
    if end not in stripped[first + 1:]:
        return None
    last = stripped.index(end, first + 1)
    # Blank lines around the body keep tables from gluing onto the comments.
    new_lines = lines[:first + 1] + [""] + body.split("\n") + [""] + lines[last:]
    return "\n".join(new_lines)


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def write_if_changed(path, content):
    """Write text or bytes only when different; True if the file changed."""
    data = content if isinstance(content, bytes) else content.encode("utf-8")
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    with open(path, "wb") as handle:
        handle.write(data)
    print(f"plot.py: wrote {path}")
    return True


def flush_text(results):
    flushes = {row.flush for row in results.rows.values()}
    if flushes == {1}:
        return "L2 flushed before every repetition"
    if flushes == {0}:
        return "L2 not flushed (warm cache)"
    return "L2 flushed in some runs only (see the flush column)"


def reps_text(results):
    reps = sorted({row.reps for row in results.rows.values()})
    return str(reps[0]) if len(reps) == 1 else f"{reps[0]}–{reps[-1]}"


def provenance_sentence(results):
    peaks = distinct(fmt_gbps(row.peak_gbps) for row in results.rows.values())
    return (f"Measured on {results.describe('gpu')} (driver "
            f"{results.describe('driver')}, CUDA {results.describe('cuda')}, "
            f"peak {peaks} GB/s from the device attributes) at revision "
            f"{results.describe('git_rev')}; {flush_text(results)}; median of "
            f"{reps_text(results)} repetitions. "
            f"Source: {source_path(results.path)}.")


def what_changed(steps_root, step):
    """Line 1 of the step's reduce.cu without '// ' (common/README.md)."""
    folder = "baseline_cub" if step == CUB else step
    path = os.path.join(steps_root, folder, "reduce.cu")
    if not os.path.isfile(path):
        return ""
    first = (read_text(path).split("\n") or [""])[0].strip()
    return first[2:].strip() if first.startswith("//") else ""


def size_heading(n):
    mib = 4 * n / (1 << 20)
    size = f"{mib / 1024:g} GiB" if mib >= 1024 else f"{mib:g} MiB"
    return f"**n = {power_label(n)}** ({n:,} floats, {size})"


def results_table(results, n, steps_root):
    lines = ["| step | what changed | median us | GB/s | % of peak | "
             "vs previous | vs step 0 | vs CUB |",
             "|---|---|--:|--:|--:|--:|--:|--:|"]
    for step in results.steps_at(n):
        row, ratios = results.get(step, n), speedups(results, step, n)
        lines.append(
            f"| {step} | {md_cell(what_changed(steps_root, step))} | "
            f"{fmt_us(row.median_us)} | {fmt_gbps(row.gbps)} | "
            f"{fmt_pct(row.pct_peak)} | {fmt_ratio(ratios.vs_previous)} | "
            f"{fmt_ratio(ratios.vs_step0)} | {fmt_ratio(ratios.vs_cub)} |")
    return lines


def seed_sentence():
    quoted = [f"{us:.2f}" for _, us in SEED_V100_US]
    versions = [name for name, _ in SEED_V100_US]
    middle = ", ".join(f"{us} ({v})" for us, v in
                       zip(quoted[1:-1], versions[1:-1]))
    return ("The seed articles (Chinese, in shared/seeds; V100, their own "
            f"harness, 2^25 floats) report {quoted[0]} us ({versions[0]}), "
            f"{middle} and {quoted[-1]} us for their final version.")


def seed_table():
    base = SEED_V100_US[0][1]
    lines = ["| seed version | V100 us (quoted, not measured here) | "
             "speed-up over v0 |", "|---|--:|--:|"]
    for name, us in SEED_V100_US:
        lines.append(f"| {name} | {us:.2f} | {fmt_ratio(base / us)} |")
    return lines


def relative_link(path, base_dir):
    return os.path.relpath(os.path.abspath(path),
                           os.path.abspath(base_dir)).replace(os.sep, "/")


def results_section(results, charts, readme_dir, steps_root):
    parts = [provenance_sentence(results)]
    for kind, path in charts.items():
        parts += ["", f"![{kind}]({relative_link(path, readme_dir)})"]
    for n in TABLE_SIZES:
        if results.steps_at(n):
            parts += ["", size_heading(n), "",
                      *results_table(results, n, steps_root)]
    parts += ["", seed_sentence(), "", *seed_table()]
    return "\n".join(parts)


def read_marked_readme(path):
    """Read the main README early, so a bad one fails before any output."""
    if not os.path.isfile(path):
        raise PlotError(f"README file not found: {path}")
    text = read_text(path)
    if replace_block(text, "results", "") is None:
        begin, end = markers("results")
        raise PlotError(f"{path} has no '{begin}' ... '{end}' marker lines")
    return text


# ----------------------------------------------------------------------------
# Per-step READMEs
# ----------------------------------------------------------------------------

def list_step_dirs(root):
    names = [name for name in os.listdir(root)
             if step_number(name) is not None
             and os.path.isdir(os.path.join(root, name))]
    return sorted(names, key=step_sort_key)


def measured_block(results, step):
    sizes = [n for n in TABLE_SIZES if results.get(step, n)]
    source = source_path(results.path)
    if not sizes:
        return f"No measurements for {step} at n = 2^25 or 2^28 in {source} yet."
    lines = ["| n | median us | GB/s | % of peak | vs previous step | "
             "vs step 0 | vs CUB |", "|---|--:|--:|--:|--:|--:|--:|"]
    for n in sizes:
        row, ratios = results.get(step, n), speedups(results, step, n)
        lines.append(
            f"| {power_label(n)} | {fmt_us(row.median_us)} | "
            f"{fmt_gbps(row.gbps)} | {fmt_pct(row.pct_peak)} | "
            f"{fmt_ratio(ratios.vs_previous)} | {fmt_ratio(ratios.vs_step0)}"
            f" | {fmt_ratio(ratios.vs_cub)} |")
    lines += ["", f"Measured on {results.describe('gpu')} (driver "
              f"{results.describe('driver')}, CUDA {results.describe('cuda')})"
              f" at revision {results.describe('git_rev')}, from {source}."]
    return "\n".join(lines)


def previous_profiled(profile, step):
    earlier = [other for other in profile.steps
               if other != CUB and step_sort_key(other) < step_sort_key(step)]
    return earlier[-1] if earlier else None


def counters_block(profile, step):
    source = source_path(profile.path)
    if step not in profile.steps:
        return f"No counters for {step} in {source} yet."
    prev = previous_profiled(profile, step)
    lines = [f"| counter | previous ({prev or NONE_MARK}) | this step ({step})"
             " | change |", "|---|--:|--:|--:|"]
    for metric in profile.metrics_present():
        now = profile.values.get((step, metric))
        before = profile.values.get((prev, metric))
        if now is None:
            continue
        ratio = now / before if before else None
        unit = profile.units.get(metric)
        label = METRIC_LABELS[metric]
        if unit and unit not in label:
            label += f" ({unit})"
        lines.append(f"| {label} `{metric}` | "
                     f"{NONE_MARK if before is None else fmt_count(before)} | "
                     f"{fmt_count(now)} | {fmt_ratio(ratio)} |")
    lines += ["", f"Nsight Compute, {profile.gpu or 'GPU not recorded'} at "
              f"revision {profile.git_rev or 'not recorded'}, from {source}."]
    return "\n".join(lines)


def no_previous_text(step):
    if step_number(step) == 0:
        return "Step 0 is the starting point; there is no previous step."
    return f"{step} is the first step; there is no previous step."


def diff_block(root, dirs, index):
    this = dirs[index]
    this_src = os.path.join(root, this, "reduce.cu")
    if not os.path.isfile(this_src):
        return f"There is no {this}/reduce.cu to compare yet."
    earlier = [d for d in dirs[:index]
               if os.path.isfile(os.path.join(root, d, "reduce.cu"))]
    if not earlier:
        return no_previous_text(this)
    prev = earlier[-1]
    old = read_text(os.path.join(root, prev, "reduce.cu")).splitlines()
    new = read_text(this_src).splitlines()
    diff = "\n".join(difflib.unified_diff(
        old, new, f"{prev}/reduce.cu", f"{this}/reduce.cu", n=3, lineterm=""))
    if not diff:
        return f"{this}/reduce.cu is identical to {prev}/reduce.cu."
    fence = "```"
    while fence in diff:  # a longer fence if the source itself holds ```
        fence += "`"
    return f"{fence}diff\n{diff}\n{fence}"


def fill_block(text, name, body):
    replaced = replace_block(text, name, body)
    return text if replaced is None else replaced


def update_step_readmes(root, results, profile):
    dirs = list_step_dirs(root)
    for index, step in enumerate(dirs):
        path = os.path.join(root, step, "README.md")
        if not os.path.isfile(path):
            continue
        original = read_text(path)
        text = fill_block(original, "measured", measured_block(results, step))
        if profile:  # without a profile the counters block stays as it is
            text = fill_block(text, "counters", counters_block(profile, step))
        text = fill_block(text, "diff", diff_block(root, dirs, index))
        if text != original:
            write_if_changed(path, text)


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------

class OneLineParser(argparse.ArgumentParser):
    """Usage errors follow the same one-line rule as every other error."""

    def error(self, message):
        print(f"plot.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    parser = OneLineParser(
        prog="plot.py", description="Charts and README tables from a "
        "results CSV (columns: common/README.md).")
    parser.add_argument("--results", required=True, metavar="CSV",
                        help="results file written by the step programs")
    parser.add_argument("--profile", metavar="CSV",
                        help="long-format Nsight Compute counters "
                             "(step,kernel,metric,value,unit,gpu,git_rev)")
    parser.add_argument("--out-dir", metavar="DIR",
                        default=os.path.dirname(os.path.abspath(__file__)),
                        help="where the PNGs go (default: plots/)")
    parser.add_argument("--readme", metavar="MD",
                        help="README with <!-- BEGIN results --> and "
                             "<!-- END results --> lines to fill")
    parser.add_argument("--steps-root", metavar="DIR",
                        help="folder holding stepN_*/; fills their README "
                             "marker blocks (default for 'what changed': "
                             "the README's folder)")
    return parser.parse_args(argv)


def run(args):
    # Check every input before writing anything, so a bad input leaves
    # no half-updated output behind.
    results = load_results(args.results)
    profile = load_profile(args.profile) if args.profile else None
    readme_text = read_marked_readme(args.readme) if args.readme else None
    if args.steps_root and not os.path.isdir(args.steps_root):
        raise PlotError(f"steps root is not a directory: {args.steps_root}")
    mpl = load_matplotlib()
    if mpl is None:
        print("plot.py: error: matplotlib is not installed; run "
              "`pip install -r plots/requirements.txt` (or `make plot`, "
              "which creates a venv)", file=sys.stderr)
        return 3
    charts = draw_charts(mpl, results, profile, args.out_dir)
    if args.readme:
        readme_dir = os.path.dirname(os.path.abspath(args.readme))
        steps_root = args.steps_root or readme_dir
        section = results_section(results, charts, readme_dir, steps_root)
        write_if_changed(args.readme,
                         replace_block(readme_text, "results", section))
    if args.steps_root:
        update_step_readmes(args.steps_root, results, profile)
    return 0


def describe_os_error(err):
    where = f": {err.filename}" if err.filename else ""
    return f"{err.strerror or err}{where}"


def main(argv=None):
    args = parse_args(argv)
    try:
        return run(args)
    except PlotError as err:
        message = str(err)
    except OSError as err:
        message = describe_os_error(err)
    except Exception as err:  # never a traceback for users; PLOT_DEBUG shows it
        if os.environ.get("PLOT_DEBUG"):
            raise
        message = (f"internal error ({type(err).__name__}: {err}); "
                   f"rerun with PLOT_DEBUG=1 for the traceback")
    print(f"plot.py: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
