#!/usr/bin/env python3
"""Draw the variance chart from tools/variance.c's CSV.

    python3 tools/variance_chart.py [--chinese] CSV

Writes CSV's name with .png (and with --chinese its Chinese twin, .zh-CN.png): the largest relative error of a row's variance
against the rows' mean (in standard deviations), one line per method, on
log-log axes, with u = 2^-24 and 100% marked. Shift 0 has no place on a log
axis; ACCURACY.md's table gives it. The same rows give the same bytes.

Exit codes: 0 drawn, 2 bad input (one line on stderr), 3 matplotlib missing.
"""
import csv
import os
import sys

import chart_zh
import charts  # what a chart tool says without matplotlib
from plot import load_matplotlib, save_figure

COLUMNS = ("method", "shift", "rows", "cols", "max_rel_err", "median_rel_err", "nonpositive")
METHODS = {"one-pass": dict(label="one pass: E[x²] − E[x]²", color="#c0392b", marker="v"),
           "two-pass": dict(label="two passes: mean, then Σ(x − mean)²", color="#1f618d",
                            marker="o"),
           "welford": dict(label="Welford, lanes merged (Chan)", color="#239b56", marker="s")}


class ChartError(Exception):
    """Bad input: one line on stderr, exit status 2."""


def read_rows(path):
    """{method: [(shift, max_rel_err, nonpositive)]} in file order."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise ChartError(f"{path}: not tools/variance.c's CSV (columns "
                                 f"{','.join(reader.fieldnames or ())})")
            rows = {}
            for line, r in enumerate(reader, start=2):
                if r["method"] not in METHODS:
                    raise ChartError(f"{path} line {line}: unknown method '{r['method']}'")
                try:
                    rows.setdefault(r["method"], []).append(
                        (float(r["shift"]), float(r["max_rel_err"]), int(r["nonpositive"])))
                except ValueError:
                    raise ChartError(f"{path} line {line}: a number column is not a number")
    except OSError as err:
        raise ChartError(f"{path}: {err.strerror}")
    if not rows:
        raise ChartError(f"{path}: no rows")
    return rows


def draw(mpl, rows, path):
    fig, ax = mpl.plt.subplots(figsize=(8.5, 5.2))
    for method, style in METHODS.items():
        points = [(s, e) for s, e, _ in rows.get(method, []) if s > 0]
        if points:
            ax.plot([s for s, _ in points], [e for _, e in points], linewidth=2.0, **style)
    ax.axhline(2.0 ** -24, color="#888888", linestyle=":", linewidth=1.5,
               label="u = 2⁻²⁴ (one float rounding)")
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1.2, label="100%: no digit right")
    bad = [(s, e) for s, e, k in rows.get("one-pass", []) if s > 0 and k > 0]
    if bad:
        ax.scatter([s for s, _ in bad], [e for _, e in bad], s=120, facecolors="none",
                   edgecolors="black", zorder=5,
                   label="some rows' variance ≤ 0: rstd is NaN or huge")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("the rows' mean, in standard deviations (variance 1)")
    ax.set_ylabel("largest relative error of a row's variance")
    ax.set_title("A row's variance in float32, three ways (1024 rows of 1024 floats per point)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8.5, loc="upper left")
    fig.tight_layout()
    save_figure(mpl, fig, path, relayout=True)


def main(argv):
    chart_zh.enabled = "--chinese" in argv
    argv = [a for a in argv if a != "--chinese"]
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: tools/variance_chart.py [--chinese] CSV (tools/variance.c's output)",
              file=sys.stderr)
        return 2
    try:
        rows = read_rows(argv[0])
    except ChartError as err:
        print(f"variance_chart.py: {err}", file=sys.stderr)
        return 2
    mpl = load_matplotlib()
    if mpl is None:
        return charts.no_matplotlib("variance_chart.py", "variance")
    draw(mpl, rows, os.path.splitext(argv[0])[0] + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
