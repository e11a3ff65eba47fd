#!/usr/bin/env python3
"""multigpu_chart.py --sum S.csv --allreduce A.csv [--out-dir DIR] [--summary]

The multigpu part's two charts, beside their CSVs (or in --out-dir):
  <prefix>-scaling.png    speed-up of the GPUs over one GPU against n, the
                          crossover marked (nccl's all-reduce, and torch's)
  <prefix>-allreduce.png  all-reduce time and bus bandwidth against bytes,
                          NCCL called directly against torch.distributed
where S.csv is <prefix>-multigpu.csv. A file that does not exist is left
out; failed and untimed rows are never drawn. --summary prints the issue's
targets instead, MET or MISSED with the numbers (no matplotlib needed).
"""
import argparse
import os
import sys

import chart_zh  # the Chinese twin of each chart
import charts  # matplotlib loaded, charts saved
import schema

BIG_NS = (1 << 30, (1 << 31) - 1)   # where two GPUs must reach SPEEDUP_TARGET
SPEEDUP_TARGET = 1.9
CROSSOVER_TARGET = 1 << 25
LATENCY_RATIO_TARGET = 1 / 3
GIB = 1 << 30


def timed(rows):
    return [r for r in rows if r["pass_"] == 1 and r["median_us"] is not None]


def scaling(rows, source, launch=None):
    """{n: speed-up} of the all-reduce combine, from one source's rows: one
    process driving every GPU for nccl, one per GPU for torch (its only way)."""
    launch = launch or ("per-process" if source == "torch" else "single")
    return {r["n"]: r["speedup"] for r in timed(rows)
            if r["source"] == source and r["launch"] == launch and r["combine"] == "allreduce"
            and r["speedup"] is not None}


def crossover(speedups):
    """The smallest n from which every larger measured n is a win (speed-up
    above 1), or None when the largest n still loses."""
    found = None
    for n in sorted(speedups, reverse=True):
        if speedups[n] <= 1.0:
            break
        found = n
    return found


def by_bytes(rows, source):
    return {r["bytes"]: r for r in timed(rows) if r["source"] == source}


def label(n):
    return schema.power_label(n) if n & (n - 1) == 0 else ("2^31-1" if n == (1 << 31) - 1 else str(n))


def summary(sum_rows, vec_rows):
    """The issue's targets, one line each: MET, MISSED or no data."""
    lines = []
    nccl = scaling(sum_rows, "nccl")
    for n in BIG_NS:
        s = nccl.get(n)
        lines.append(f"target speed-up at n = {label(n)} >= {SPEEDUP_TARGET}x: " +
                     ("no data" if s is None else
                      f"{'MET' if s >= SPEEDUP_TARGET else 'MISSED'} ({s:.2f}x)"))
    c = crossover(nccl)
    lines.append(f"target crossover <= 2^25: " +
                 ("no data" if not nccl else "MISSED (two GPUs never win)" if c is None else
                  f"{'MET' if c <= CROSSOVER_TARGET else 'MISSED'} (from n = {label(c)})"))
    torch_c = crossover(scaling(sum_rows, "torch"))
    if torch_c is not None:
        lines.append(f"  torch.distributed's crossover: n = {label(torch_c)}")
    mine, theirs = by_bytes(vec_rows, "nccl"), by_bytes(vec_rows, "torch")
    small = min(set(mine) & set(theirs), default=None)
    lines.append("target small all-reduce latency <= 1/3 of torch's: " +
                 ("no data" if small is None else
                  f"{'MET' if mine[small]['median_us'] <= theirs[small]['median_us'] * LATENCY_RATIO_TARGET else 'MISSED'}"
                  f" ({small} B: {mine[small]['median_us']:.1f} us against "
                  f"{theirs[small]['median_us']:.1f} us)"))
    lines.append("target 1 GiB busbw >= torch's: " +
                 ("no data" if GIB not in mine or GIB not in theirs else
                  f"{'MET' if mine[GIB]['busbw_gbps'] >= theirs[GIB]['busbw_gbps'] else 'MISSED'}"
                  f" ({mine[GIB]['busbw_gbps']:.1f} GB/s against {theirs[GIB]['busbw_gbps']:.1f} GB/s)"))
    return lines


def load(path, reader):
    # A run that failed before its first row leaves no file or an empty one.
    if path is None or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return []
    return reader(path)


def save(plt, fig, path):
    """The chart, and with --chinese its Chinese twin <name>.zh-CN.png (tools/chart_zh.py)."""
    for done in charts.save_png(plt, fig, path, 110, relayout=True,
                                metadata={"Software": None}, quiet=True):
        if done != path:   # the English chart's line is the caller's
            print(f"wrote {done}")


def draw_scaling(rows, path):
    plt = charts.load_matplotlib().plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    gpus = max((r["gpus"] for r in rows), default=0)
    gpu = rows[0]["gpu"] if rows else ""
    for source, style, name in (("nccl", "o-", "multigpu/run (step 9 + ncclAllReduce)"),
                                ("torch", "s--", "torch.sum + torch.distributed all_reduce")):
        points = scaling(rows, source)
        if not points:
            continue
        ns = sorted(points)
        line, = ax.plot(ns, [points[n] for n in ns], style, label=name)
        c = crossover(points)
        if c is not None:
            ax.axvline(c, color=line.get_color(), linestyle=":", linewidth=1)
            ax.annotate(f"above 1 from {label(c)}", (c, points[c]), textcoords="offset points",
                        xytext=(6, -14), color=line.get_color(), fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.text(0.01, 1.02, "one GPU", fontsize=8, va="bottom", transform=ax.get_yaxis_transform())
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (floats, all GPUs together)")
    ax.set_ylabel(f"speed-up of {gpus} GPUs over one")
    ax.set_title(f"The sum over {gpus} x {gpu} against one (L2 flushed, median)")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save(plt, fig, path)


def draw_allreduce(rows, path):
    plt = charts.load_matplotlib().plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    gpus = max((r["gpus"] for r in rows), default=0)
    for source, style, name in (("nccl", "o-", "NCCL (multigpu/run --vector)"),
                                ("torch", "s--", "torch.distributed all_reduce")):
        points = by_bytes([r for r in rows if r["launch"] in ("single", "per-process")], source)
        if not points:
            continue
        xs = sorted(points)
        left.plot(xs, [points[b]["median_us"] for b in xs], style, label=name)
        right.plot(xs, [points[b]["busbw_gbps"] for b in xs], style, label=name)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes per GPU")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    left.set_yscale("log")
    left.set_ylabel("time, us (median)")
    left.set_title("All-reduce time: flat while latency-bound")
    right.set_ylabel("bus bandwidth, GB/s")
    right.set_title(f"busbw = algbw x 2({gpus}-1)/{gpus}")
    fig.tight_layout()
    save(plt, fig, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sum")
    parser.add_argument("--allreduce")
    parser.add_argument("--out-dir")
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--chinese", action="store_true",
                        help="also draw each chart's Chinese twin, <name>.zh-CN.png")
    args = parser.parse_args(argv)
    chart_zh.enabled = args.chinese
    try:
        sum_rows = load(args.sum, schema.read_multigpu_sum)
        vec_rows = load(args.allreduce, schema.read_allreduce)
    except schema.SchemaError as err:
        print(f"multigpu_chart.py: error: {err}", file=sys.stderr)
        return 1
    if args.summary:
        print("\n".join(summary(sum_rows, vec_rows)))
        return 0
    if (timed(sum_rows) or timed(vec_rows)) and charts.load_matplotlib() is None:
        return charts.no_matplotlib("multigpu_chart.py", "plot")
    if timed(sum_rows):
        base = os.path.basename(args.sum)
        name = base[:-len("-multigpu.csv")] if base.endswith("-multigpu.csv") else base[:-4]
        out = os.path.join(args.out_dir or os.path.dirname(args.sum), name + "-scaling.png")
        draw_scaling(timed(sum_rows), out)
        print(f"wrote {out}")
    if timed(vec_rows):
        base = os.path.basename(args.allreduce)
        out = os.path.join(args.out_dir or os.path.dirname(args.allreduce), base[:-4] + ".png")
        draw_allreduce(timed(vec_rows), out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
