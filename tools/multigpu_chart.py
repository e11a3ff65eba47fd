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
Each line is a setup: one process driving every GPU (launch single, NCCL
only: torch.distributed has no such mode) or one process per GPU (NCCL
through --rank, and torch.distributed). A file in rounds (tools/nccl_check.sh's
round column) gives each point its median round, whiskers the fastest and
slowest; a file without one is one round.
"""
import argparse
import os
import statistics
import sys

import chart_zh  # the Chinese twin of each chart
import charts  # matplotlib loaded, charts saved
import cli
import schema

BIG_NS = (1 << 30, (1 << 31) - 1)   # where two GPUs must reach SPEEDUP_TARGET
SPEEDUP_TARGET = 1.9
CROSSOVER_TARGET = 1 << 25
LATENCY_RATIO_TARGET = 1 / 3
GIB = 1 << 30


# The setups drawn, each (source, launch, label): like for like, NCCL one
# process per GPU beside torch.distributed's one process per GPU.
SUM_SETUPS = (("nccl", "single", "multigpu/run, one process for all GPUs (step 9 + ncclAllReduce)"),
              ("nccl", "per-process", "multigpu/run, one process per GPU"),
              ("torch", "per-process", "torch.sum + torch.distributed all_reduce, one process per GPU"))
VECTOR_SETUPS = (("nccl", "single", "NCCL, one process for all GPUs (multigpu/run --vector)"),
                 ("nccl", "per-process", "NCCL, one process per GPU (multigpu/run --rank)"),
                 ("torch", "per-process", "torch.distributed all_reduce, one process per GPU"))


def timed(rows):
    return [r for r in rows if r["pass_"] == 1 and r["median_us"] is not None]


def default_launch(source):
    return "per-process" if source == "torch" else "single"


def rounds_of(rows, key, value):
    """{key(row): [value(row) of each round]} over the timed rows."""
    out = {}
    for r in timed(rows):
        k, v = key(r), value(r)
        if k is not None and v is not None:
            out.setdefault(k, []).append(v)
    return out


def scaling_rounds(rows, source, launch=None):
    """{n: [speed-up of each round]} of the all-reduce combine, one setup.
    A process of one rank runs no one-GPU baseline (multigpu/run with
    --rank): its speed-up is taken against the one GPU of the single-process
    run of the same n and round, where the file has it."""
    launch = launch or default_launch(source)
    base = {(r["n"], r["round"]): r["one_gpu_us"] for r in timed(rows)
            if (r["source"], r["launch"], r["combine"]) == ("nccl", "single", "allreduce")
            and r["one_gpu_us"]}

    def speedup(r):
        if r["speedup"] is not None:
            return r["speedup"]
        one = base.get((r["n"], r["round"])) if r["source"] == "nccl" else None
        return one / r["median_us"] if one else None
    return rounds_of(rows, lambda r: r["n"] if (r["source"], r["launch"], r["combine"]) ==
                     (source, launch, "allreduce") else None, speedup)


def scaling(rows, source, launch=None):
    """{n: the median round's speed-up} of the all-reduce combine, from one
    setup's rows: by default one process driving every GPU for nccl, one per
    GPU for torch (its only way)."""
    return {n: statistics.median(v) for n, v in scaling_rounds(rows, source, launch).items()}


def crossover(speedups):
    """The smallest n from which every larger measured n is a win (speed-up
    above 1), or None when the largest n still loses."""
    found = None
    for n in sorted(speedups, reverse=True):
        if speedups[n] <= 1.0:
            break
        found = n
    return found


def by_bytes(rows, source, launch=None):
    """{bytes: {median_us, busbw_gbps: the median round's; spread: (fastest,
    slowest) round's median_us; times: every round's}} of one setup's
    all-reduce rows."""
    launch = launch or default_launch(source)
    key = lambda r: r["bytes"] if (r["source"], r["launch"]) == (source, launch) else None  # noqa: E731
    times = rounds_of(rows, key, lambda r: r["median_us"])
    busbw = rounds_of(rows, key, lambda r: r["busbw_gbps"])
    return {b: {"median_us": statistics.median(t), "spread": (min(t), max(t)), "times": t,
                "busbw_gbps": statistics.median(busbw[b]) if b in busbw else None}
            for b, t in times.items()}


def spread_text(values, fmt):
    """' [fastest-slowest]' of several rounds, '' of one."""
    return f" [{fmt(min(values))}-{fmt(max(values))}]" if len(values) > 1 else ""


def label(n):
    return schema.power_label(n) if n & (n - 1) == 0 else ("2^31-1" if n == (1 << 31) - 1 else str(n))


def summary(sum_rows, vec_rows):
    """The issue's targets, one line each: MET, MISSED or no data."""
    lines = []
    nccl = scaling(sum_rows, "nccl")
    nccl_rounds = scaling_rounds(sum_rows, "nccl")
    for n in BIG_NS:
        s = nccl.get(n)
        lines.append(f"target speed-up at n = {label(n)} >= {SPEEDUP_TARGET}x: " +
                     ("no data" if s is None else
                      f"{'MET' if s >= SPEEDUP_TARGET else 'MISSED'} ({s:.2f}x"
                      f"{spread_text(nccl_rounds[n], lambda v: f'{v:.2f}')})"))
    c = crossover(nccl)
    lines.append(f"target crossover <= 2^25: " +
                 ("no data" if not nccl else "MISSED (two GPUs never win)" if c is None else
                  f"{'MET' if c <= CROSSOVER_TARGET else 'MISSED'} (from n = {label(c)})"))
    torch_c = crossover(scaling(sum_rows, "torch"))
    if torch_c is not None:
        lines.append(f"  torch.distributed's crossover: n = {label(torch_c)}")
    # Like for like where the file has it: NCCL one process per GPU against
    # torch.distributed's one process per GPU; else the two setups, said so.
    theirs = by_bytes(vec_rows, "torch")
    mine = by_bytes(vec_rows, "nccl", "per-process")
    setup = "one process per GPU each"
    if not set(mine) & set(theirs):
        mine, setup = by_bytes(vec_rows, "nccl"), "two setups: NCCL one process for all GPUs"
    small = min(set(mine) & set(theirs), default=None)
    lines.append("target small all-reduce latency <= 1/3 of torch's: " +
                 ("no data" if small is None else
                  f"{'MET' if mine[small]['median_us'] <= theirs[small]['median_us'] * LATENCY_RATIO_TARGET else 'MISSED'}"
                  f" ({small} B: {mine[small]['median_us']:.1f} us"
                  f"{spread_text(mine[small]['times'], lambda v: f'{v:.1f}')} against "
                  f"{theirs[small]['median_us']:.1f} us"
                  f"{spread_text(theirs[small]['times'], lambda v: f'{v:.1f}')}; {setup})"))
    # The same choice at 1 GiB: per process against per process where both are there.
    mine, setup = by_bytes(vec_rows, "nccl", "per-process"), "one process per GPU each"
    if GIB not in mine:
        mine, setup = by_bytes(vec_rows, "nccl"), "two setups: NCCL one process for all GPUs"
    lines.append("target 1 GiB busbw >= torch's: " +
                 ("no data" if GIB not in mine or GIB not in theirs else
                  f"{'MET' if mine[GIB]['busbw_gbps'] >= theirs[GIB]['busbw_gbps'] else 'MISSED'}"
                  f" ({mine[GIB]['busbw_gbps']:.1f} GB/s against {theirs[GIB]['busbw_gbps']:.1f} GB/s; {setup})"))
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


def gapped(xs, points):
    """The x values of every setup, each with this setup's point or None: a line
    drawn through them breaks where this setup was not measured (matplotlib
    joins only neighbours), so it never joins two points across a size it missed."""
    return [points.get(x) for x in xs]


def nan(values):
    return [float("nan") if v is None else v for v in values]


def draw_scaling(rows, path):
    plt = charts.load_matplotlib().plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    gpus = max((r["gpus"] for r in rows), default=0)
    gpu = rows[0]["gpu"] if rows else ""
    every_n = sorted({n for source, launch, _ in SUM_SETUPS for n in scaling_rounds(rows, source, launch)})
    for (source, launch, name), style in zip(SUM_SETUPS, ("o-", "^-.", "s--")):
        per_round = scaling_rounds(rows, source, launch)
        points = {n: statistics.median(v) for n, v in per_round.items()}
        if not points:
            continue
        ns = sorted(points)
        ys = gapped(every_n, points)
        whiskers = [nan([y - min(per_round[n]) if y is not None else None for n, y in zip(every_n, ys)]),
                    nan([max(per_round[n]) - y if y is not None else None for n, y in zip(every_n, ys)])]
        line = ax.errorbar(every_n, nan(ys), yerr=whiskers, fmt=style, capsize=2,
                           label=name).lines[0]
        c = crossover(points)
        if c is not None and c > ns[0]:   # a crossover needs a measured loss below it
            ax.axvline(c, color=line.get_color(), linestyle=":", linewidth=1)
            ax.annotate(f"above 1 from {label(c)}", (c, points[c]), textcoords="offset points",
                        xytext=(6, -14), color=line.get_color(), fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.text(0.01, 1.02, "one GPU", fontsize=8, va="bottom", transform=ax.get_yaxis_transform())
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (floats, all GPUs together)")
    ax.set_ylabel(f"speed-up of {gpus} GPUs over one")
    ax.set_title(f"The sum over {gpus} x {gpu} against one (L2 flushed, median)")
    if max((r["round"] for r in rows), default=1) > 1:
        ax.text(0.99, 0.02, "whiskers: the fastest and slowest rounds", fontsize=8, ha="right",
                transform=ax.transAxes)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save(plt, fig, path)


def draw_allreduce(rows, path):
    plt = charts.load_matplotlib().plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    gpus = max((r["gpus"] for r in rows), default=0)
    every_b = sorted({b for source, launch, _ in VECTOR_SETUPS for b in by_bytes(rows, source, launch)})
    for (source, launch, name), style in zip(VECTOR_SETUPS, ("o-", "^-.", "s--")):
        points = by_bytes(rows, source, launch)
        if not points:
            continue
        ys = gapped(every_b, {b: p["median_us"] for b, p in points.items()})
        low = [y - points[b]["spread"][0] if y is not None else None for b, y in zip(every_b, ys)]
        high = [points[b]["spread"][1] - y if y is not None else None for b, y in zip(every_b, ys)]
        left.errorbar(every_b, nan(ys), yerr=[nan(low), nan(high)], fmt=style, capsize=2, label=name)
        right.plot(every_b, nan(gapped(every_b, {b: p["busbw_gbps"] for b, p in points.items()})),
                   style, label=name)
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
    problem = cli.output_problem(args.out_dir, folder=True)
    if problem:
        print(f"multigpu_chart.py: error: --out-dir {args.out_dir}: {problem}", file=sys.stderr)
        return 2
    try:
        sum_rows = load(args.sum, schema.read_multigpu_sum)
        vec_rows = load(args.allreduce, schema.read_allreduce)
    except schema.SchemaError as err:
        print(f"multigpu_chart.py: error: {err}", file=sys.stderr)
        return 2
    if args.summary:
        print("\n".join(summary(sum_rows, vec_rows)))
        return 0
    if (timed(sum_rows) or timed(vec_rows)) and charts.load_matplotlib() is None:
        return charts.no_matplotlib("multigpu_chart.py", "plot")
    if args.out_dir is not None and (timed(sum_rows) or timed(vec_rows)):
        os.makedirs(args.out_dir, exist_ok=True)   # as plot.py does
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
