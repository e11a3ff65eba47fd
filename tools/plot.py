#!/usr/bin/env python3
"""Draw the charts of one results file (and, optionally, its profile file).

    python3 tools/plot.py --results plots/reference/h200.csv
                          [--profile plots/reference/h200-profile.csv] [--out-dir DIR]

Writes, into DIR (default: the results file's folder), where <slug> is the
results file name without ".csv":
  <slug>-progression.png  GB/s per step at n = 2^25 and 2^28, against peak and CUB
  <slug>-sweep.png        GB/s against n for every step and CUB
  <slug>-vs-cub.png       steps 6 and later relative to CUB across n (launch-bound region shaded)
  <slug>-profile.png      Nsight Compute counters per step (with --profile)
A part 2 results file (<gpu>-rows.csv) gets its own three, a fourth once a
softmax step is measured and a fifth once a bfloat16 step is (a part 3 file,
<gpu>-back.csv, the first and its own share charts, <slug>-layernorm_backward.png
and, once measured, <slug>-softmax_backward.png, against back/copy3, and
<slug>-bf16.png once a bfloat16 step is, against back/copy3_bf16):
  <slug>-progression.png  GB/s of every row program at 32768 x 1024, against the copy
  <slug>-layernorm.png    each LayerNorm step's and PyTorch's share of the copy's bandwidth, per shape
  <slug>-sum.png          each row sum's, CUB's and PyTorch's share of step 9 on one array, per shape
  <slug>-softmax.png      each softmax step's and PyTorch's share of the copy's bandwidth, per shape
  <slug>-bf16.png         each bfloat16 step's and PyTorch's share of the bfloat16 copy's, per shape
Every point or bar is the median round; its whisker spans the fastest and
slowest round (make bench runs every program in several rounds).
Failed runs (pass != 1) and check-mode rows are never drawn (tools/schema.py).
The READMEs' tables come from tools/docs.py, not from here.

Exit codes: 0 done, 2 bad input (one line on stderr), 3 matplotlib missing.
"""

import argparse
import math
import os
import sys

import chart_zh  # the Chinese twin of each chart
import cli  # how main() ends
import charts  # matplotlib loaded, charts saved
import compare  # rows per step and n, speed-ups, counters
import schema  # the CSV files and step names
import stale  # rows measured on an earlier version of the code
from compare import N_MID, TABLE_SIZES
from schema import CUB

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Colours: the two sizes are two shades of one hue; CUB is grey and hatched
# so the reference never reads as "just another step".
COLOUR_MID, COLOUR_BIG = "#8fb4e3", "#1f4e8c"
COLOUR_CUB_MID, COLOUR_CUB_BIG = "#c8c8c8", "#6e6e6e"
COLOUR_PEAK = "#c0392b"
COLOUR_LAUNCH = "#f3e3c3"
CHART_DPI = 100

# CUB's time within this factor of its fastest: the launches and fixed costs,
# not the bytes, set the time (the vs-CUB chart shades those sizes).
LAUNCH_BOUND_FACTOR = 2.0


class OneLineParser(argparse.ArgumentParser):
    """Usage errors follow the same one-line rule as every other error."""

    def error(self, message):
        print(f"plot.py: error: {message}", file=sys.stderr)
        sys.exit(2)


# ----------------------------------------------------------------------------
# Small formatting helpers
# ----------------------------------------------------------------------------

def tex_power_label(n):
    """schema.power_label in matplotlib's mathtext: $2^{25}$, a raised exponent."""
    base, caret, exponent = schema.power_label(n).partition("^")
    return f"${base}^{{{exponent}}}$" if caret else base


def fmt_gbps(value):
    return f"{value:.0f}"


def fmt_ratio(value):
    # Two decimals so a small regression (0.99x) is not rounded to 1.0x.
    return "—" if value is None else f"{value:.2f}x"


def fmt_compact(value):
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= divisor:
            return f"{value / divisor:.3g}{suffix}"
    return f"{value:.3g}"


FLUSH_TEXT = {"all": "L2 flushed before every repetition",
              "none": "L2 not flushed (warm cache)",
              "some": "L2 flushed in some runs only (see the flush column)"}


def provenance_caption(m):
    return (f"{m.gpu}  ·  driver {m.describe('driver')}  ·  CUDA {m.describe('cuda')}"
            f"  ·  git {m.describe('git_rev')}  ·  {FLUSH_TEXT[m.flush_state()]}  ·  "
            f"median of {m.reps_text()} reps  ·  {compare.repo_path(m.path, REPO)}"
            f"{stale_caption(m)}")


def stale_found(m):
    """{program: revision} of the programs whose figures in m measured an
    earlier version of their code (tools/stale.py)."""
    return m.stale_rows(m.rows.values())


def stale_caption(m):
    """A second caption line naming the stale programs, or ''."""
    found = stale_found(m)
    if not found:
        return ""
    # The labels say which programs; the caption says when, and stays one line.
    return (f"\n{stale.MARK} measured on an earlier version of the code, at revision "
            f"{', '.join(sorted(set(found.values())))}")


def marked(m, step, label=None):
    """A program's label with the stale mark where its figures are stale."""
    label = step if label is None else label
    return f"{label} {stale.MARK}" if step in stale_found(m) else label


def tick_label(step, m=None):
    if step == CUB:
        text = "CUB\n(library)"
    else:
        head, _, tail = step.partition("_")
        text = f"{head}\n{tail}"
    return marked(m, step, text) if m is not None else text


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------

load_matplotlib = charts.load_matplotlib


def save_figure(mpl, fig, path, relayout=False):
    """The figure as a PNG and its Chinese twin (tools/charts.py), at CHART_DPI."""
    charts.save_png(mpl.plt, fig, path, CHART_DPI, relayout=relayout)


def step_colours(mpl, m):
    """One colour per step (not CUB), the same in the sweep and vs-CUB charts."""
    steps = [s for s in m.steps if s != CUB]
    cmap = mpl.plt.get_cmap("viridis")
    return {step: cmap(0.92 * i / max(len(steps) - 1, 1)) for i, step in enumerate(steps)}


def size_ticks(sizes):
    """The measured powers of two, thinned so that a dense sweep stays legible."""
    powers = [n for n in sizes if n & (n - 1) == 0] or sizes
    stride = math.ceil(len(powers) / 16)
    return powers[::stride]


def log2_size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = size_ticks(sizes)
    ax.set_xticks(ticks, [tex_power_label(n) for n in ticks])
    ax.minorticks_off()
    ax.set_xlabel("n (floats, log2 scale)")


# ----------------------------------------------------------------------------
# Progression: one pair of bars per step
# ----------------------------------------------------------------------------

def bar_style(step, n):
    if step == CUB:
        colour = COLOUR_CUB_MID if n == N_MID else COLOUR_CUB_BIG
        return dict(color=colour, hatch="//", edgecolor="#333333")
    colour = COLOUR_MID if n == N_MID else COLOUR_BIG
    return dict(color=colour, edgecolor="#333333", linewidth=0.5)


def bar_annotation(m, step, n):
    if schema.step_number(step) == 0:
        return "base"
    ratios = m.speedups(step, n)
    return f"{fmt_ratio(ratios.vs_previous)}\n{fmt_ratio(ratios.vs_step0)}"


def gbps_whisker(row, spread):
    """[[below], [above]] the bar: GB/s of the slowest and fastest round."""
    lo, hi = spread
    return [[max(0.0, row.gbps - row.gbps * row.median_us / hi)],
            [max(0.0, row.gbps * row.median_us / lo - row.gbps)]]


def draw_progression_bars(ax, m, steps):
    width = 0.4
    for offset, n in zip((-width / 2, width / 2), TABLE_SIZES):
        for x, step in enumerate(steps):
            row = m.get(step, n)
            if row is None:
                continue
            ax.bar(x + offset, row.gbps, width, yerr=gbps_whisker(row, m.spread(step, n)),
                   error_kw=dict(elinewidth=1.2, capsize=3, ecolor="#222222"),
                   **bar_style(step, n))
            ax.annotate(bar_annotation(m, step, n), (x + offset, row.gbps), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8.5,
                        linespacing=1.1,
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.75, pad=0.5))


def draw_reference_lines(ax, m):
    """Peak and CUB lines, labelled at the left edge where bars are low."""
    lines = [(m.peak, COLOUR_PEAK, f"theoretical peak {fmt_gbps(m.peak)} GB/s")]
    for n, colour in zip(TABLE_SIZES, (COLOUR_MID, COLOUR_BIG)):
        cub = m.get(CUB, n)
        if cub:
            lines.append((cub.gbps, colour,
                          f"CUB at n = {tex_power_label(n)}: {fmt_gbps(cub.gbps)} GB/s"))
    lowest = min(value for value, _, _ in lines)
    for value, colour, label in lines:
        ax.axhline(value, color=colour, linestyle="--", linewidth=1.6)
        # The lowest label goes under its line so two close lines never
        # print their labels on top of each other.
        below = value == lowest and len(lines) > 1
        ax.text(-0.45, value, label, color=colour, fontsize=9.5, fontweight="bold",
                va="top" if below else "bottom",
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1.0))


def draw_progression(mpl, m, path):
    steps = [s for s in m.steps if any(m.get(s, n) for n in TABLE_SIZES)]
    fig, ax = mpl.plt.subplots(figsize=(15, 7.5), layout="constrained")
    draw_progression_bars(ax, m, steps)
    draw_reference_lines(ax, m)
    tallest = max(row.gbps for row in m.rows.values() if row.n in TABLE_SIZES)
    ax.set_ylim(0, 1.15 * max(m.peak, tallest))
    ax.set_xlim(-0.6, len(steps) - 0.4)
    ax.set_xticks(range(len(steps)), [tick_label(s, m) for s in steps])
    ax.set_ylabel("GB/s  (4·n bytes / median time, decimal GB)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Numbers above bars: speed-up over the previous step / over step 0, "
                 "from median time at the same n", fontsize=10.5)
    legend = [mpl.Patch(color=COLOUR_MID, label="n = $2^{25}$ (128 MiB)"),
              mpl.Patch(color=COLOUR_BIG, label="n = $2^{28}$ (1 GiB)"),
              mpl.Patch(facecolor=COLOUR_CUB_BIG, hatch="//", edgecolor="#333333",
                        label="CUB DeviceReduce")]
    # One row at the top, in the headroom above the peak line.
    ax.legend(handles=legend, loc="upper center", ncol=3, fontsize=10)
    fig.suptitle(f"Sum reduction on {m.gpu}, step by step: achieved bandwidth",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(provenance_caption(m), fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


# ----------------------------------------------------------------------------
# Sweep: GB/s against n
# ----------------------------------------------------------------------------

def draw_sweep(mpl, m, path):
    fig, ax = mpl.plt.subplots(figsize=(15, 8), layout="constrained")
    for step, colour in step_colours(mpl, m).items():
        sizes = m.sizes_of(step)
        ax.plot(sizes, [m.get(step, n).gbps for n in sizes], marker="o", color=colour,
                linewidth=1.6, label=marked(m, step))
    cub_sizes = m.sizes_of(CUB)
    if cub_sizes:
        ax.plot(cub_sizes, [m.get(CUB, n).gbps for n in cub_sizes], marker="s",
                color="black", linestyle="--", linewidth=2.6, label="CUB DeviceReduce")
    ax.axhline(m.peak, color=COLOUR_PEAK, linestyle="--",
               label=f"theoretical peak {fmt_gbps(m.peak)} GB/s")
    log2_size_axis(ax, m.sizes)
    # Log y: at small n the time is a constant launch cost, so GB/s rises
    # in proportion to n -- a straight slope that only a log axis shows.
    ax.set_yscale("log")
    ax.set_ylabel("GB/s (log scale)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=10)
    lowest = min(row.gbps for row in m.rows.values())
    ax.set_ylim(lowest / 6, m.peak * 1.6)  # room for the notes below
    annotate_regimes(ax, m)
    fig.suptitle(f"Sum reduction on {m.gpu}: bandwidth against input size",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(provenance_caption(m), fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


def annotate_regimes(ax, m):
    """Label the two regimes next to the data, under the bundle of lines."""
    note = dict(fontsize=10.5, color="#444444", style="italic", va="top")
    small, large = m.sizes[0], m.sizes[-1]
    low_small = min(r.gbps for r in m.rows.values() if r.n == small)
    low_large = min(r.gbps for r in m.rows.values() if r.n == large)
    # Lines climb to the right at small n, so the space just right of and
    # below the first points stays empty.
    ax.text(small * 1.3, low_small * 0.85, "small n: launch overhead dominates\n"
            "(time ≈ constant, so GB/s grows with n)", ha="left", **note)
    ax.text(large, low_large * 0.6, "large n: bandwidth bound\n(lines flatten below the peak)",
            ha="right", **note)


# ----------------------------------------------------------------------------
# vs CUB: the late steps relative to the library, across n
# ----------------------------------------------------------------------------

def launch_bound_sizes(m):
    """The smallest sizes, up to the first where CUB's time leaves
    LAUNCH_BOUND_FACTOR x its fastest time, and that fastest time."""
    times = [(n, m.get(CUB, n).median_us) for n in m.sizes_of(CUB)]
    fastest = min(t for _, t in times)
    bound = []
    for n, t in times:
        if t > LAUNCH_BOUND_FACTOR * fastest:
            break
        bound.append(n)
    return bound, fastest


def shade_launch_bound(ax, m):
    bound, fastest = launch_bound_sizes(m)
    if not bound:  # CUB's smallest size already takes over twice its fastest time
        return
    cub_sizes = m.sizes_of(CUB)
    following = cub_sizes[len(bound)] if len(bound) < len(cub_sizes) else bound[-1]
    # The edge halfway (on the log axis) between the last launch-bound size and the next.
    edge = math.sqrt(bound[-1] * following)
    ax.axvspan(m.sizes[0] / 1.3, edge, color=COLOUR_LAUNCH, alpha=0.6, zorder=0,
               label=f"launch-bound: CUB's time within {LAUNCH_BOUND_FACTOR:g}x of its "
                     f"fastest ({fastest:.1f} us)")


def draw_vs_cub(mpl, m, path):
    steps = m.vs_cub_steps()
    colours = step_colours(mpl, m)
    fig, ax = mpl.plt.subplots(figsize=(15, 7.5), layout="constrained")
    shade_launch_bound(ax, m)
    ratios = [1.0]
    for step in steps:
        view = m.within(step)   # CUB from the same run as this step
        sizes = [n for n in view.sizes_of(step) if view.get(CUB, n)]
        values = [view.get(step, n).gbps / view.get(CUB, n).gbps for n in sizes]
        # The whisker: the ratio from the rounds least and most in this step's favour.
        low = [view.spread(CUB, n)[0] / view.spread(step, n)[1] for n in sizes]
        high = [view.spread(CUB, n)[1] / view.spread(step, n)[0] for n in sizes]
        ratios += low + high
        ax.errorbar(sizes, values, yerr=[[max(0.0, v - lo) for v, lo in zip(values, low)],
                                         [max(0.0, hi - v) for v, hi in zip(values, high)]],
                    marker="o", color=colours[step], linewidth=1.8, capsize=2.5,
                    label=marked(m, step))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=2.0,
               label="CUB DeviceReduce (= 1.0)")
    log2_size_axis(ax, m.sizes)
    ax.set_xlim(m.sizes[0] / 1.3, m.sizes[-1] * 1.3)
    span = max(ratios) - min(ratios)
    ax.set_ylim(min(ratios) - 0.08 * span - 0.02, max(ratios) + 0.08 * span + 0.02)
    ax.set_ylabel("GB/s relative to CUB at the same n  (above 1: faster than CUB)\n"
                  "whiskers: the rounds least and most in the step's favour")
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=10)
    fig.suptitle(f"Sum reduction on {m.gpu}: {steps[0]} and later against CUB, across n",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(provenance_caption(m), fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


# ----------------------------------------------------------------------------
# Profile: one panel per counter
# ----------------------------------------------------------------------------

def axis_scale(values):
    """'log' or 'symlog' when values span two decades or more, else 'linear'."""
    positive = [v for v in values if v > 0]
    if len(positive) < 2 or max(positive) / min(positive) < 100:
        return "linear"
    return "symlog" if len(positive) < len(values) else "log"


def profile_panels(counters):
    """[(title, subtitle, unit, {step: value})]: each counter present, then the
    lanes-with-predicate-on ratio when both of its counters are present."""
    panels = []
    for metric in counters.metrics_present():
        values = {s: counters.value(s, metric) for s in counters.steps
                  if counters.value(s, metric) is not None}
        panels.append((compare.COUNTER_LABELS[metric], metric,
                       counters.units.get(metric, ""), values))
    lanes = {s: counters.lanes_on(s) for s in counters.steps
             if counters.lanes_on(s) is not None}
    if lanes:
        panels.append((compare.LANES_ON, " / ".join(compare.LANES_ON_PARTS), "lanes", lanes))
    return panels


def draw_profile_panel(ax, title, subtitle, unit, values):
    present = list(values)
    heights = [values[s] for s in present]
    bars = ax.bar(range(len(present)), heights,
                  color=[COLOUR_CUB_BIG if s == CUB else COLOUR_BIG for s in present],
                  edgecolor="#333333", linewidth=0.5)
    for bar, step, value in zip(bars, present, heights):
        bar.set_hatch("//" if step == CUB else "")
        ax.annotate(fmt_compact(value), (bar.get_x() + bar.get_width() / 2, value),
                    xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                    fontsize=7.5)
    scale = axis_scale(heights)
    ax.set_yscale(scale, **({"linthresh": 1} if scale == "symlog" else {}))
    ax.set_xticks(range(len(present)), present, rotation=40, ha="right", fontsize=8.5)
    ax.set_title(f"{title}\n{subtitle}", fontsize=9.5)
    scale_note = {"linear": "", "log": "log scale", "symlog": "log scale, zero at the base"}
    ax.set_ylabel(" ".join(filter(None, [unit, scale_note[scale]])), fontsize=9)
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)


def draw_profile(mpl, counters, m, path):
    panels = profile_panels(counters)
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = mpl.plt.subplots(rows, cols, figsize=(15, 4.2 * rows + 0.8),
                                 layout="constrained", squeeze=False)
    flat = [ax for line in axes for ax in line]
    for ax, panel in zip(flat, panels):
        draw_profile_panel(ax, *panel)
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    gpu = counters.gpu or m.gpu
    rev = counters.git_rev or m.describe("git_rev")
    fig.suptitle(f"Nsight Compute counters per step on {gpu}", fontsize=15,
                 fontweight="bold")
    fig.supxlabel(f"{gpu}  ·  git {rev}  ·  {compare.repo_path(counters.path, REPO)}"
                  "  ·  CUB hatched grey", fontsize=9.5, color="#444444")
    save_figure(mpl, fig, path)


# ----------------------------------------------------------------------------
# Part 2: row programs
# ----------------------------------------------------------------------------

ROW_CHARTS = ("progression", "layernorm", "sum", "softmax", "bf16")
COLOUR_COPY, COLOUR_TORCH, COLOUR_TORCH_LIGHT = "#6e6e6e", "#e67e22", "#f5c28b"
COLOUR_SOFTMAX, COLOUR_BF16 = "#2e8b57", "#8e44ad"
# The bar colour and legend label of each operation's steps in the progression.
ROW_OP_COLOURS = (("sum", COLOUR_MID, "row sum steps"), ("layernorm", COLOUR_BIG, "LayerNorm steps"),
                  ("softmax", COLOUR_SOFTMAX, "softmax steps"),
                  ("softmax" + compare.BF16, COLOUR_BF16, "bfloat16 steps (2 bytes an element)"),
                  ("layernorm" + compare.BF16, COLOUR_BF16, None),
                  ("layernorm_backward", COLOUR_BIG, "LayerNorm backward steps"),
                  ("softmax_backward", COLOUR_SOFTMAX, "softmax backward steps"),
                  ("softmax_backward" + compare.BF16, COLOUR_BF16, None),
                  ("layernorm_backward" + compare.BF16, COLOUR_BF16, None))
# Part 3's bfloat16 ops, their chart (<slug>-back-bf16.png) against its bfloat16 copy.
BACK_BF16_OPS = ("softmax_backward" + compare.BF16, "layernorm_backward" + compare.BF16)
STEP_PREFIXES = tuple(part + "step" for part in schema.PARTS)   # part 2's and part 3's steps


def is_back(rm):
    """True for part 3's results (tools/bench.py --only back): back/ programs."""
    return any(p.startswith(schema.BACK) for p in rm.programs)


def row_caption(rm):
    # Two lines: on one, the revisions of several runs and PyTorch's versions
    # ran past the figure's edges and were cut off on both sides.
    return (f"{rm.describe('gpu')}, {rm.describe('toolchain')}, revision {rm.describe('git_rev')}; "
            f"median of {rm.round_count} rounds, whiskers the fastest and slowest; L2 flushed\n"
            f"PyTorch: {rm.torch_version() or 'not measured'}. Source: "
            f"{compare.repo_path(rm.path, REPO)}{stale_caption(rm)}")


def torch_style(step, colour):
    """PyTorch's bars: eager plain, compiled hatched."""
    if step.startswith(compare.TORCH_COMPILED):
        return dict(facecolor=colour, hatch="//", edgecolor="#7a4a12", linewidth=0.5)
    return dict(color=colour)


def row_chart_path(rm, kind, out_dir):
    name = os.path.basename(rm.path)
    return os.path.join(out_dir, f"{name[:-4] if name.endswith('.csv') else name}-{kind}.png")


def draw_rows_progression(mpl, rm, path):
    shape = compare.ROW_SEED_SHAPE
    programs = [p for p in rm.programs if rm.get(p, shape)]
    back = is_back(rm)
    fig, ax = mpl.plt.subplots(figsize=(max(15, 0.72 * len(programs)), 7.5), layout="constrained")
    for x, step in enumerate(programs):
        row = rm.get(step, shape)
        colour = (COLOUR_TORCH if step.startswith(compare.TORCH) else
                  COLOUR_COPY if not step.startswith(STEP_PREFIXES) else
                  dict((op, c) for op, c, _ in ROW_OP_COLOURS).get(row.op, COLOUR_BIG))
        ax.bar(x, row.gbps, 0.7, yerr=gbps_whisker(row, rm.spread(step, shape)),
               error_kw=dict(elinewidth=1.2, capsize=3, ecolor="#222222"),
               **torch_style(step, colour))
        ax.annotate(f"{row.median_us:.1f} us", (x, row.gbps), xytext=(0, 4),
                    textcoords="offset points", ha="center", fontsize=8.5)
    copy = rm.get(compare.BACK_COPY if back else compare.COPY, shape)
    one = rm.get(compare.ONE_ARRAY, shape)
    if copy:
        ax.axhline(copy.gbps, color=COLOUR_COPY, linestyle="--", linewidth=1.5,
                   label=(f"copy of the same three streams: {copy.gbps:.0f} GB/s" if back else
                          f"copy of the same bytes: {copy.gbps:.0f} GB/s"))
    if one:
        ax.axhline(one.gbps, color=COLOUR_MID, linestyle=":", linewidth=1.8,
                   label=f"part 1's step 9 on the same floats as one array: {one.gbps:.0f} GB/s")
    peak = max(r.peak_gbps for r in rm.rows.values())
    if peak > 0:
        ax.axhline(peak, color=COLOUR_PEAK, linestyle="--", linewidth=1.2,
                   label=f"theoretical peak {peak:.0f} GB/s")
    ax.set_xticks(range(len(programs)),
                  [marked(rm, p, p.replace(schema.ROWS, "").replace(schema.BACK, "").replace("_", "\n")
                          .replace("/", "\n"))
                   for p in programs], fontsize=8.5)
    ax.set_ylabel("GB/s  (bytes one run must move / median time)")
    ax.set_ylim(0, 1.3 * max(peak, max(rm.get(p, shape).gbps for p in programs)))
    ax.grid(axis="y", alpha=0.3)
    ops = {rm.op(p) for p in programs if p.startswith(STEP_PREFIXES)}
    ax.legend(handles=ax.get_legend_handles_labels()[0] + [
        mpl.Patch(color=colour, label=label) for op, colour, label in ROW_OP_COLOURS
        if label and (op in ops or op.endswith(compare.BF16) and
                      any(o.endswith(compare.BF16) for o in ops))] + [
        mpl.Patch(color=COLOUR_COPY, label="the three-stream copy" if back else
                  "copy and CUB segmented sum"),
        mpl.Patch(color=COLOUR_TORCH, label="PyTorch"),
        mpl.Patch(label="PyTorch, torch.compile", **torch_style(compare.TORCH_COMPILED,
                                                                 COLOUR_TORCH))],
        loc="upper left", fontsize=9.5, ncol=2)
    fig.suptitle(f"Part 3 on {rm.describe('gpu')}: backward passes, every program at "
                 f"{compare.shape_label(shape)}" if back else
                 f"Part 2 on {rm.describe('gpu')}: every row program at {compare.shape_label(shape)}",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(row_caption(rm), fontsize=9, color="#444444")
    save_figure(mpl, fig, path)


def draw_rows_shares(mpl, rm, path, ops, bar, title):
    """Each program of ops (and PyTorch's) as a share of bar's speed, per shape."""
    shapes = rm.shapes
    programs = [p for p in rm.programs if rm.op(p) in ops and p.startswith(STEP_PREFIXES)]
    programs += [p for p in [compare.ROW_CUB if "sum" in ops else None] +
                 [compare.TORCH + op for op in ops] + [compare.TORCH_COMPILED + op for op in ops]
                 if p and any(rm.get(p, s) for s in shapes)]
    fig, ax = mpl.plt.subplots(figsize=(15, 7.5), layout="constrained")
    cmap = mpl.plt.get_cmap("viridis")
    width = 0.8 / max(1, len(programs))
    for k, step in enumerate(programs):
        xs, ys, lo, hi = [], [], [], []
        view = rm.within(step)   # the bar from the same run as this program
        for x, s in enumerate(shapes):
            row, ref = view.get(step, s), view.get(bar, s)
            if row is None or ref is None:
                continue
            # A share of the bar's speed: its time over this one's for the same floats
            # (a sum), or GB/s over GB/s for the same bytes moved (the copy).
            a, b = view.spread(bar, s), view.spread(step, s)
            if bar == compare.ONE_ARRAY:
                value = ref.median_us / row.median_us
            else:
                value = row.gbps / ref.gbps
            # The rounds least and most in this program's favour.
            low = value * (a[0] / ref.median_us) * (row.median_us / b[1])
            high = value * (a[1] / ref.median_us) * (row.median_us / b[0])
            xs.append(x + (k - (len(programs) - 1) / 2) * width)
            ys.append(value)
            lo.append(max(0.0, value - low))
            hi.append(max(0.0, high - value))
        # PyTorch's ops in turn (dark, light), each eager plain and compiled hatched.
        op_k = ops.index(rm.op(step)) if rm.op(step) in ops else 0
        colour = (COLOUR_TORCH_LIGHT if op_k else COLOUR_TORCH) \
            if step.startswith(compare.TORCH) else COLOUR_COPY if step == compare.ROW_CUB else \
            cmap(0.15 + 0.7 * k / max(1, len(programs)))
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, error_kw=dict(elinewidth=1),
               label=marked(rm, step), **torch_style(step, colour))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1.5,
               label={compare.COPY: "copy of the same bytes (= 1)",
                      compare.BACK_COPY: "copy of the same three streams (= 1)",
                      compare.BACK_COPY16: "bfloat16 copy of the same three streams (= 1)",
                      compare.COPY16: "bfloat16 copy of the same bytes (= 1)"}.get(
                   bar, "step 9 on the same floats as one array (= 1)"))
    elem = 2 if bar in (compare.COPY16, compare.BACK_COPY16) else 4
    mib = [compare.shape_mib(s, elem) for s in shapes]
    ax.set_xticks(range(len(shapes)), [f"{compare.shape_label(s)}\n{m:.0f} MiB" if m >= 1 else
                                       f"{compare.shape_label(s)}\n{m:g} MiB"
                                       for s, m in zip(shapes, mib)],
                  fontsize=9)
    ax.set_ylabel("share of the bar's speed  (1 = as fast)")
    ax.set_ylim(0, 1.25)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper right", fontsize=9.5, ncol=2)
    fig.suptitle(title, fontsize=15, fontweight="bold")
    fig.supxlabel(row_caption(rm), fontsize=9, color="#444444")
    save_figure(mpl, fig, path)


def draw_row_charts(mpl, rm, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    gpu = rm.describe("gpu")
    draw_rows_progression(mpl, rm, row_chart_path(rm, "progression", out_dir))
    if is_back(rm):   # part 3: its one operation against its own bar
        draw_rows_shares(mpl, rm, row_chart_path(rm, "layernorm_backward", out_dir),
                         ("layernorm_backward",), compare.BACK_COPY,
                         f"LayerNorm backward on {gpu}: share of the three-stream copy's speed, "
                         f"per shape")
        if rm.last_step("softmax_backward"):   # issue 42's steps, once measured
            draw_rows_shares(mpl, rm, row_chart_path(rm, "softmax_backward", out_dir),
                             ("softmax_backward",), compare.BACK_COPY,
                             f"Softmax backward on {gpu}: share of the three-stream copy's speed, "
                             f"per shape")
        if any(rm.last_step(op) for op in BACK_BF16_OPS):   # back/step15 on, once measured
            draw_rows_shares(mpl, rm, row_chart_path(rm, "bf16", out_dir), BACK_BF16_OPS,
                             compare.BACK_COPY16,
                             f"bfloat16 softmax and LayerNorm backward on {gpu}: share of the "
                             f"bfloat16 three-stream copy's speed, per shape")
        return
    draw_rows_shares(mpl, rm, row_chart_path(rm, "layernorm", out_dir), ("layernorm",),
                     compare.COPY, f"LayerNorm on {gpu}: share of the copy kernel's speed, per shape")
    draw_rows_shares(mpl, rm, row_chart_path(rm, "sum", out_dir), ("sum",), compare.ONE_ARRAY,
                     f"Row sums on {gpu}: share of part 1's step 9 on the same floats, per shape")
    if rm.last_step("softmax"):   # a newer operation: no chart before its first step
        draw_rows_shares(mpl, rm, row_chart_path(rm, "softmax", out_dir), ("softmax",),
                         compare.COPY,
                         f"Softmax on {gpu}: share of the copy kernel's speed, per shape")
    bf16 = ("softmax" + compare.BF16, "layernorm" + compare.BF16)
    if any(rm.last_step(op) for op in bf16):
        draw_rows_shares(mpl, rm, row_chart_path(rm, "bf16", out_dir), bf16, compare.COPY16,
                         f"bfloat16 softmax and LayerNorm on {gpu}: share of the bfloat16 "
                         f"copy's speed, per shape")


# bench.py --widths (make bench-widths): part 2's map, GB/s against the width
# at one input size. One panel per op, float on top and bfloat16 below: the
# copy of the op's element type, the op's last step, PyTorch eager and
# compiled.
WIDTH_PANELS, WIDTH_TITLES = compare.WIDTH_PANELS, compare.WIDTH_TITLES


def is_widths_file(path):
    return os.path.basename(path).endswith("-rows-widths.csv")


def width_line(rm, step):
    """[(cols, GB/s, [below, above])] of a program over the widths it ran,
    narrowest first; below and above: how far its slowest and fastest
    rounds lie from the median (the error bar's two arms)."""
    points = []
    for shape in rm.shapes:
        row = rm.get(step, shape)
        if row is not None:
            whisker = gbps_whisker(row, rm.spread(step, shape))
            points.append((shape[1], row.gbps, [whisker[0][0], whisker[1][0]]))
    return sorted(points)


width_label = compare.width_label


def width_labels(cols):
    """Ticks for sorted widths: a label within an octave of the one before it
    (50257 and 64k) goes one line lower, so that the two do not overlap."""
    labels, lowered = [], False
    for i, c in enumerate(cols):
        lowered = i > 0 and c < 2 * cols[i - 1] and not lowered
        labels.append(("\n" if lowered else "") + width_label(c))
    return labels


def draw_widths(mpl, rm, path):
    fig, axes = mpl.plt.subplots(2, 4, figsize=(18, 9), layout="constrained", sharey=True)
    drawn = {compare.ONE_ARRAY}   # the caption's revisions: the lines' alone
    peak = max(r.peak_gbps for r in rm.rows.values())
    cols = sorted({shape[1] for shape in rm.shapes})
    for panel_ops, row_axes in zip(WIDTH_PANELS, axes):
        for op, ax in zip(panel_ops, row_axes):
            copy = compare.COPY16 if op.endswith(compare.BF16) else compare.COPY
            ours = rm.last_step(op)
            lines = [(copy, "the copy" if copy == compare.COPY else "bfloat16 copy",
                      dict(color="#222222", linestyle="--", linewidth=1.8)),
                     (ours, ours.replace(schema.ROWS, "") if ours else None,
                      dict(color=COLOUR_SOFTMAX, linewidth=2.4, marker="o")),
                     (compare.TORCH + op, "PyTorch", dict(color=COLOUR_TORCH, linewidth=1.6,
                                                          marker="s", markersize=4)),
                     (compare.TORCH_COMPILED + op, "torch.compile",
                      dict(color=COLOUR_TORCH_LIGHT, linewidth=1.6, linestyle="-.",
                           marker="^", markersize=4))]
            one = [row for (step, key), row in rm.rows.items() if step == compare.ONE_ARRAY]
            if op == "sum" and one:   # a sum only reads: its bar is step 9 on one array
                ax.axhline(one[0].gbps, color=COLOUR_MID, linestyle=":", linewidth=1.8,
                           label="part 1's step 9, the same floats as one array")
            for step, label, style in lines:
                points = width_line(rm, step) if step else []
                if points:
                    drawn.add(step)
                    xs, ys = [p[0] for p in points], [p[1] for p in points]
                    ax.plot(xs, ys, label=marked(rm, step, label), **style)
                    ax.errorbar(xs, ys, yerr=[[p[2][0] for p in points], [p[2][1] for p in points]],
                                fmt="none", ecolor=style["color"], elinewidth=1.0, capsize=2)
            if peak > 0:
                ax.axhline(peak, color=COLOUR_PEAK, linestyle=":", linewidth=1.0)
            ax.set_xscale("log", base=2)
            ax.set_xticks(cols, width_labels(cols), fontsize=8)
            ax.minorticks_off()
            ax.set_title(WIDTH_TITLES.get(op, op), fontsize=11.5)
            ax.set_ylim(0, 1.08 * peak if peak > 0 else None)
            ax.grid(alpha=0.3)
            ax.legend(loc="lower left", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("GB/s  (bytes one run must move / median time)")
    for ax in axes[1]:
        ax.set_xlabel("columns a row (log2 scale), 256 MiB of x")
    # A run kept in the file for a program the map no longer draws (an
    # earlier last step) must not lend the caption its revision or rounds.
    fig.supxlabel(row_caption(rm.only(drawn)), fontsize=9, color="#444444")
    torch = any(step.startswith(compare.TORCH) for step, _ in rm.rows)
    fig.suptitle(f"Part 2 on {rm.describe('gpu')}: GB/s against the width, each op's last step "
                 f"beside the copy{' and PyTorch' if torch else ''} (dotted: the theoretical "
                 f"peak, {peak:.0f} GB/s)", fontsize=14, fontweight="bold")
    save_figure(mpl, fig, path)


def is_rows_file(path):
    header = schema.header_of(path)
    if "rows" not in header:
        return False
    return any(record.get("rows") for _, record in schema.read_records(path)[1])


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------

def draw_charts(mpl, m, counters, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    draw = {"progression": lambda p: draw_progression(mpl, m, p),
            "sweep": lambda p: draw_sweep(mpl, m, p),
            "vs-cub": lambda p: draw_vs_cub(mpl, m, p),
            "profile": lambda p: draw_profile(mpl, counters, m, p)}
    charts = {}
    for kind in compare.chart_kinds(m, counters):
        charts[kind] = compare.chart_path(m, kind, out_dir)
        draw[kind](charts[kind])
    return charts


def parse_args(argv):
    parser = OneLineParser(
        prog="plot.py", description="Charts from a results CSV (columns: tools/schema.py).")
    parser.add_argument("--results", required=True, metavar="CSV",
                        help="results file written by the step programs (make bench)")
    parser.add_argument("--profile", metavar="CSV",
                        help="Nsight Compute counters from make profile-all")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where the PNGs go (default: the results file's folder)")
    parser.add_argument("--chinese", action="store_true",
                        help="also draw each chart's Chinese twin, <name>.zh-CN.png")
    return parser.parse_args(argv)


def run(args):
    chart_zh.enabled = args.chinese
    # Check every input before drawing anything, so a bad input leaves no
    # half-drawn set of charts behind.
    # Rows that measured an earlier version of this tree's code are marked.
    hashes = stale.hashes_for(args.results)
    judge = hashes.is_stale if hashes else None
    rows = os.path.isfile(args.results) and is_rows_file(args.results)
    if rows:
        rm = compare.RowMeasurements.load(args.results, judge)
    else:
        m = compare.Measurements.load(args.results, judge)
        m.require_table_sizes()
        counters = compare.Counters.load(args.profile) if args.profile else None
    mpl = load_matplotlib()
    if mpl is None:
        return charts.no_matplotlib("plot.py", "plot")
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.results))
    if rows and is_widths_file(args.results):
        os.makedirs(out_dir, exist_ok=True)
        draw_widths(mpl, rm, row_chart_path(rm, "gbps", out_dir))
    elif rows:
        draw_row_charts(mpl, rm, out_dir)
    else:
        draw_charts(mpl, m, counters, out_dir)
    return 0


def main(argv=None):
    args = parse_args(argv)
    return cli.guarded("plot.py", lambda: run(args), known=(schema.SchemaError,), code=2,
                       internal=2, debug="PLOT_DEBUG")


if __name__ == "__main__":
    sys.exit(main())
