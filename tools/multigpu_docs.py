"""multigpu/README's generated block: the Measured table (block "measured").

Read from the committed <gpu>x<count>-multigpu.csv and its -allreduce.csv
twin, one column a setup: multigpu/run driving every GPU from one process,
multigpu/run one process per GPU (--rank), torch.distributed one process per
GPU. A cell is the median round, [fastest-slowest round] beside it where the
file has rounds; a cell the run did not measure is NONE. tools/docs.py calls
measured_block(); the figures come from tools/multigpu_chart.py's readers, so
the table, the charts and nccl-check's summary read the rows alike."""
import glob
import os
import statistics

import compare
import multigpu_chart as mc
import schema
import stale

NONE = "—"

# (source, launch) of each column, and its heading.
SETUPS = (("nccl", "single"), ("nccl", "per-process"), ("torch", "per-process"))
HEAD = ("| measurement | multigpu/run: one process drives every GPU | "
        "multigpu/run: one process per GPU | torch.distributed: one process per GPU |")
LATENCY_BYTES = 4
BUSBW_BYTES = mc.GIB

STRINGS = {
    HEAD: "",
    "all-reduce of {bytes} bytes, median us": "",
    "all-reduce of 1 GiB, busbw GB/s": "",
    "speed-up of {gpus} GPUs at n = {n}": "",
    "sum of n = {n} on {gpus} GPUs, median us": "",
    "its one-GPU baseline at n = {n}, median us": "",
    "crossover (the GPUs ahead from n =)": "",
    "{n} ({ratio}; the smallest n it ran)": "",
    "{n} ({ratio})": "",
    "Each cell is the median of {rounds} rounds, the fastest and slowest in brackets.": "",
    "One run, no rounds: nothing here tells a small win from a tie.": "",
    "{none}: not measured in this run. Speed-ups are against one GPU running step 9 "
    "on all n in the same run (torch's: one GPU's `torch.sum`; a process of one rank "
    "runs no one-GPU baseline, so its speed-up is taken against the one-process run's "
    "one GPU at the same n and round), with the all-reduce combine.": "",
    "From {sum} and {allreduce}: {gpus} x {gpu}, NCCL {nccl}, revision {rev}.": "",
    " PyTorch: {torch}, its own NCCL {nccl}.": "",
}


def files(results_dir):
    """[(sum CSV, all-reduce CSV or None)] committed in results_dir, fewest GPUs first."""
    out = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*-multigpu.csv"))):
        twin = path[:-len("-multigpu.csv")] + "-allreduce.csv"
        out.append((path, twin if os.path.isfile(twin) else None))
    return out


def stale_rows(hashes):
    """A stale.Marks stale_rows for the CSVs' rows (dicts)."""
    def judge(rows):
        return {r["step"]: r["git_rev"] for r in rows
                if r is not None and hashes is not None and hashes.is_stale(r["step"], r["code_hash"])}
    return judge


def _cell(values, fmt, rows, marks, unit=""):
    if not values:
        return NONE
    text = fmt(statistics.median(values)) + unit + mc.spread_text(values, fmt)
    return marks.cell(text, *rows)


def table(sum_rows, vec_rows, hashes, tr, sum_path, vec_path, rel):
    """The block's lines for one pair of files; rel(path) names a file."""
    marks = stale.Marks(stale_rows(hashes), sum_path)
    sums, vecs = mc.timed(sum_rows), mc.timed(vec_rows)
    gpus = max((r["gpus"] for r in sums + vecs), default=2)
    lines = [tr(HEAD), "|---|--:|--:|--:|"]

    def vec_cells(nbytes, field, fmt):
        cells = []
        for source, launch in SETUPS:
            rows = [r for r in vecs if (r["source"], r["launch"], r["bytes"]) ==
                    (source, launch, nbytes) and r[field] is not None]
            cells.append(_cell([r[field] for r in rows], fmt, rows, marks))
        return cells

    def sum_rows_at(source, launch, n):
        mine = [r for r in sums if (r["source"], r["launch"], r["n"], r["combine"]) ==
                (source, launch, n, "allreduce")]
        if launch == "per-process" and source == "nccl":   # its baseline is the one-process run's
            mine += [r for r in sums if (r["source"], r["launch"], r["n"], r["combine"]) ==
                     ("nccl", "single", n, "allreduce")]
        return mine

    lines.append("| " + " | ".join([tr("all-reduce of {bytes} bytes, median us", bytes=LATENCY_BYTES)]
                                   + vec_cells(LATENCY_BYTES, "median_us", lambda v: f"{v:.1f}")) + " |")
    lines.append("| " + " | ".join([tr("all-reduce of 1 GiB, busbw GB/s")]
                                   + vec_cells(BUSBW_BYTES, "busbw_gbps", lambda v: f"{v:.1f}")) + " |")
    speedups = {setup: mc.scaling_rounds(sum_rows, *setup) for setup in SETUPS}
    ratio = lambda v: f"{v:.2f}"  # noqa: E731
    # Under each speed-up, the two times it divides: each setup has its own one-GPU
    # run (step 9 in the same process; for a process of one rank, the one-process
    # run's; one GPU's torch.sum for torch), so both are shown.
    time = lambda v: f"{v:.1f}"  # noqa: E731
    for n in mc.BIG_NS:
        cells, two, one = [], [], []
        for source, launch in SETUPS:
            both = sum_rows_at(source, launch, n)
            cells.append(_cell(speedups[(source, launch)].get(n, []), ratio, both, marks, "x"))
            mine = [r for r in both if r["launch"] == launch]
            base = [r for r in both if r["one_gpu_us"]] if mine else []
            two.append(_cell([r["median_us"] for r in mine], time, mine, marks))
            one.append(_cell([r["one_gpu_us"] for r in base], time, base, marks))
        lines.append("| " + " | ".join([tr("speed-up of {gpus} GPUs at n = {n}", gpus=gpus,
                                           n=mc.label(n))] + cells) + " |")
        lines.append("| " + " | ".join([tr("sum of n = {n} on {gpus} GPUs, median us", n=mc.label(n),
                                           gpus=gpus)] + two) + " |")
        lines.append("| " + " | ".join([tr("its one-GPU baseline at n = {n}, median us",
                                           n=mc.label(n))] + one) + " |")
    cells = []
    for setup in SETUPS:
        medians = {n: statistics.median(v) for n, v in speedups[setup].items()}
        n = mc.crossover(medians)
        if n is None:
            cells.append(NONE)
            continue
        ratio_text = f"{medians[n]:.2f}x"
        text = (tr("{n} ({ratio}; the smallest n it ran)", n=mc.label(n), ratio=ratio_text)
                if n == min(medians) else tr("{n} ({ratio})", n=mc.label(n), ratio=ratio_text))
        cells.append(marks.cell(text, *sum_rows_at(*setup, n)))
    lines.append("| " + " | ".join([tr("crossover (the GPUs ahead from n =)")] + cells) + " |")

    rounds = len({r["round"] for r in sums + vecs}) or 1
    lines += ["", tr("Each cell is the median of {rounds} rounds, the fastest and slowest in "
                     "brackets.", rounds=rounds) if rounds > 1 else
              tr("One run, no rounds: nothing here tells a small win from a tie."),
              tr("{none}: not measured in this run. Speed-ups are against one GPU running step 9 "
                 "on all n in the same run (torch's: one GPU's `torch.sum`; a process of one rank "
                 "runs no one-GPU baseline, so its speed-up is taken against the one-process run's "
                 "one GPU at the same n and round), with the all-reduce combine.", none=NONE),
              tr("From {sum} and {allreduce}: {gpus} x {gpu}, NCCL {nccl}, revision {rev}.",
                 sum=f"`{rel(sum_path)}`", allreduce=f"`{rel(vec_path)}`" if vec_path else NONE,
                 gpus=gpus, gpu=_versions(r["gpu"] for r in sums + vecs),
                 nccl=_versions(r["nccl"] for r in sums + vecs if r["source"] == "nccl"),
                 rev=_versions(r["git_rev"] for r in sums + vecs))]
    theirs = [r for r in sums + vecs if r["source"] == "torch"]
    if theirs:
        lines[-1] += tr(" PyTorch: {torch}, its own NCCL {nccl}.",
                        torch=_versions(r["toolchain"] for r in theirs),
                        nccl=_versions(r["nccl"] for r in theirs))
    return lines + marks.note(tr)


def _versions(values):
    """compare.distinct of the non-empty values, NONE for none."""
    return compare.distinct(v for v in values if v) or NONE


def measured_block(results_dir, hashes, tr, rel):
    """The Measured table of every committed multi-GPU run in results_dir."""
    pairs = files(results_dir)
    if not pairs:
        return tr("Not measured yet: `make nccl-check OUT_DIR=plots/reference` on a machine "
                  "with two GPUs, then `make docs`.")
    lines = []
    for sum_path, vec_path in pairs:
        sum_rows = schema.read_multigpu_sum(sum_path)
        vec_rows = schema.read_allreduce(vec_path) if vec_path else []
        lines += ([""] if lines else []) + table(sum_rows, vec_rows, hashes, tr, sum_path,
                                                  vec_path, rel)
    return "\n".join(lines)


STRINGS["Not measured yet: `make nccl-check OUT_DIR=plots/reference` on a machine "
        "with two GPUs, then `make docs`."] = ""
