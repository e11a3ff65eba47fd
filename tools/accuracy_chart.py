#!/usr/bin/env python3
"""Draw the accuracy chart: relative error against n, one panel per fill.

    python3 tools/accuracy_chart.py CSV... [--out-dir DIR]

For each <name>-accuracy.csv (written by tools/accuracy.py) it draws
<name>-accuracy.png beside it (or in DIR): |result - reference| / sum|x| on
log-log axes for every program, the CPU's sequential and Kahan loops, and the
textbook bounds of the three ways to add (accuracy_data.BOUNDS). The same
rows give the same bytes.

Exit codes: 0 drawn, 2 bad input (one line on stderr), 3 matplotlib missing.
"""
import argparse
import os
import sys

import accuracy_data as data
import schema  # step names and size labels
import chart_zh
import charts  # what a chart tool says without matplotlib
from plot import load_matplotlib, save_figure, tex_power_label

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# An exact sum has error 0, which a log axis cannot show: it is drawn on this
# floor, far below anything a float32 sum of these inputs rounds to.
FLOOR = 2.0 ** -44
FILL_TITLES = {
    "random": "random: uniform in [-1, 1)",
    "positive": "positive: uniform in [0, 1)",
    "wide": "wide: ±m·2^e, e in -20..20",
}
# Steps in one colour ramp (read in order, like the sweep chart); CUB black
# as everywhere; the compensated sums and the CPU loops stand apart.
STYLE_CUB = dict(color="black", marker="s", linestyle="--", linewidth=2.2)
STYLE_EXTRA = dict(color="#c2185b", marker="D", linewidth=2.2)
STYLE_CPU = {data.CPU_SEQ: dict(color="#d35400", marker="v", linewidth=2.2),
             data.CPU_KAHAN: dict(color="#d35400", marker="^", linestyle=":", linewidth=2.2)}
STYLE_BOUNDS = {"sequential": "-", "pairwise": "--", "Kahan": "-."}
BOUND_COLOUR = "#888888"


class ChartError(Exception):
    """Bad input: one line on stderr, exit status 2."""


def series_style(mpl, series, steps):
    if series == schema.CUB:
        return dict(STYLE_CUB, label="CUB DeviceReduce")
    if series in STYLE_CPU:
        return dict(STYLE_CPU[series], label=f"{series} float loop")
    if series in steps:
        cmap = mpl.plt.get_cmap("viridis")
        shade = 0.92 * steps.index(series) / max(len(steps) - 1, 1)
        return dict(color=cmap(shade), marker="o", linewidth=1.4, markersize=4, label=series)
    return dict(STYLE_EXTRA, label=series)


def draw_panel(mpl, ax, curves, fill, series, steps, sizes):
    for name in series:
        points = curves.get((name, fill))
        if points:
            ns = [n for n, _ in points]
            ax.plot(ns, [max(err, FLOOR) for _, err in points],
                    **series_style(mpl, name, steps))
    for name, formula, bound in data.BOUNDS:
        ax.plot(sizes, [bound(n) for n in sizes], color=BOUND_COLOUR,
                linestyle=STYLE_BOUNDS[name], linewidth=1.2,
                label=f"bound, {name}: {formula}")
    ax.set_title(FILL_TITLES.get(fill, fill), fontsize=12)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=10)
    ax.set_xticks(sizes, [tex_power_label(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("n (floats)")
    ax.grid(alpha=0.3, which="major")


def caption(rows, source):
    seeds = data.seed_counts(rows)
    several = [n for n, k in seeds.items() if k > 1]
    seed_text = (f"median of {max(seeds.values())} seeds up to n = {schema.power_label(max(several))}"
                 if several else "one seed per n")
    return (f"{data.describe(rows, 'gpu')} ({data.describe(rows, 'sms')} SMs)  ·  driver "
            f"{data.describe(rows, 'driver')}  ·  CUDA {data.describe(rows, 'cuda')}  ·  git "
            f"{data.describe(rows, 'git_rev')}  ·  one verified run per point (--check), "
            f"{seed_text}  ·  u = 2^-24  ·  error 0 drawn at 2^-44  ·  {source}")


def draw(mpl, rows, source, path):
    curves = data.errors(rows)
    if not curves:
        raise ChartError(f"{source}: no verified check-mode rows of the fills "
                         f"{', '.join(data.FILLS)}")
    fills = data.fills_present(curves)
    series = data.series_names(curves)
    steps = [s for s in series if schema.step_number(s) is not None]
    sizes = sorted({n for points in curves.values() for n, _ in points})
    fig, axes = mpl.plt.subplots(1, len(fills), figsize=(6.2 * len(fills) + 3.2, 6.8),
                                 sharey=True, layout="constrained", squeeze=False)
    for ax, fill in zip(axes[0], fills):
        draw_panel(mpl, ax, curves, fill, series, steps, sizes)
    axes[0][0].set_ylabel("|result − reference| / Σ|x|")
    axes[0][0].set_ylim(FLOOR / 2, 2.0)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:  # a series missing from the first panel still gets a key
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="outside right center", fontsize=9.5)
    fig.suptitle("Rounding error of the float sum against n, per way of adding",
                 fontsize=15, fontweight="bold")
    fig.supxlabel(caption(rows, source), fontsize=9, color="#444444")
    save_figure(mpl, fig, path)


def source_name(path):
    """The CSV as the chart names it: relative to the repository when inside it."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full, REPO)
    return os.path.basename(full) if rel.startswith("..") else rel


def chart_path(csv_path, out_dir):
    base = os.path.basename(csv_path)
    stem = base[:-4] if base.lower().endswith(".csv") else base
    return os.path.join(out_dir or os.path.dirname(os.path.abspath(csv_path)), stem + ".png")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Draw <name>-accuracy.png from each "
                                                 "<name>-accuracy.csv.")
    parser.add_argument("csv", nargs="+", help="accuracy CSV written by tools/accuracy.py")
    parser.add_argument("--out-dir", help="where the PNGs go (default: beside each CSV)")
    parser.add_argument("--chinese", action="store_true",
                        help="also draw the Chinese twin, <name>.zh-CN.png")
    args = parser.parse_args(argv)
    chart_zh.enabled = args.chinese
    try:
        inputs = [(path, data.read_rows(path)) for path in args.csv]  # all read before drawing
        mpl = load_matplotlib()
        if mpl is None:
            return charts.no_matplotlib("accuracy_chart", "accuracy")
        if args.out_dir:
            os.makedirs(args.out_dir, exist_ok=True)
        for path, rows in inputs:
            draw(mpl, rows, source_name(path), chart_path(path, args.out_dir))
    except (data.AccuracyError, ChartError) as err:
        print(f"accuracy_chart: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"accuracy_chart: {err.strerror}: {err.filename}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
