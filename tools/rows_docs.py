"""Part 2's generated blocks (rows/README.md and rows/stepN_*/README.md), for
tools/docs.py, the one writer of README blocks: the same provenance, the
same rounds and verdicts as part 1, with the copy kernel, part 1's step 9 and
PyTorch as the bars.

  rows/README.md          rows-results  every program at 32768 x 1024, then
                                        LayerNorm, the row sum and softmax at
                                        every shape (and softmax's chart)
  rows/stepN_*/README.md  measured      this step at every shape
                          counters      its Nsight Compute counters beside the previous step's
                          diff          its rows.cu against the previous step's

Every string goes through the translate function docs.py passes in (English
-> Chinese in tools/zh_strings.py)."""
import csv
import glob
import os

import compare
import generated
import schema
import stale
import steps
from compare import BF16, COPY, COPY16, ONE_ARRAY, ROW_CUB, ROW_SEED_SHAPE, shape_label, shape_mib

NONE_MARK = "—"   # an empty cell of a generated table; docs.py and rows_targets.py take it from here
# The line under every step page's measured table (tools/zh_strings.py has its Chinese).
STEP_PROVENANCE = (
    "Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for {arch}) at "
    "revision {rev}, code hash {hash}, run {run}, {rounds} rounds. A cell is the median round "
    "(of an even number, the faster of the middle two; each round the median of its "
    "repetitions, in a process of its own), the fastest and slowest rounds in brackets; a "
    "ratio is a win or a loss only where the two programs' rounds do not overlap, otherwise a "
    "tie ([the baselines](../README.md#the-baselines)). Source: {source}.")

# The counters a part 2 step's page shows, with a plain-words label.
ROW_COUNTERS = (
    ("gpu__time_duration.sum", "kernel duration"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput, % of peak"),
    ("dram__bytes_read.sum", "bytes read from DRAM"),
    ("dram__bytes_write.sum", "bytes written to DRAM"),
    ("lts__t_sector_hit_rate.pct", "L2 hit rate, %"),
    ("smsp__inst_executed.sum", "warp instructions executed"),
    ("smsp__inst_executed_op_global_ld.sum", "warp-level global load instructions"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy, % of peak warps"),
    ("launch__registers_per_thread", "registers per thread"),
)
SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
SECTORS_LABEL = "32-byte sectors per global load request"

SOFTMAX_CHART_ALT = "softmax against the copy and PyTorch, per shape"
BF16_CHART_ALT = "the bfloat16 steps against the bfloat16 copy and PyTorch, per shape"
WIDTHS_CHART_ALT = "GB/s against the width: each op's last step, the copy and PyTorch"
WIDTHS_TEXT = ("Part 2's map ({source}, `make bench-widths`): each op's last step beside its "
               "copy and PyTorch, eager and compiled, at 256 MiB of x from 256 to 262144 "
               "columns, where the rows halve as the width doubles.")
# The same before PyTorch has run in the file (a bench without --torch-python).
WIDTHS_CHART_ALT_OURS = "GB/s against the width: each op's last step and the copy"
WIDTHS_TEXT_OURS = ("Part 2's map ({source}, `make bench-widths`): each op's last step beside its "
                    "copy at 256 MiB of x from 256 to 262144 columns, where the rows halve as the "
                    "width doubles. PyTorch is not in this run yet.")

# The map's numbers under its chart (map_lines): one table of shares, two of verdicts.
MAP_TEXT = ("The map in numbers ({source}): each op's last step at each width, all in the step's "
            "own run. First its GB/s as a share of its bar's: the copy of its element type, and "
            "for the row sum part 1's step 9 reading the same 256 MiB as one array "
            "({one} GB/s); then its speed against PyTorch's, eager and through torch.compile. "
            "A figure is the median round's ({rounds} rounds, each a process of its own); a ratio is "
            "a "
            "win or a loss only where the rounds do not overlap, otherwise a tie, so a tie may "
            "carry a large ratio where the other side's rounds spread widely. The two copy rows "
            "give each copy in the newest run that timed it for itself; a share divides by the "
            "copy timed in its step's run. A width's rows are 256 MiB over a row's bytes, twice "
            "as many in bfloat16: not the bench's shapes of the tables above.")
MAP_SHARE_TITLE = "Share of the bar, by width (columns a row)"
MAP_EAGER_TITLE = "Against PyTorch (eager), by width"
MAP_COMPILED_TITLE = "Against torch.compile, by width"
MAP_COPY_LABEL = {COPY: "the copy, GB/s", COPY16: "the bfloat16 copy, GB/s"}
MAP_VOCAB = (50257, 151936)   # GPT-2's vocabulary to Qwen's: the widths language models run
MAP_COUNT = ("The last steps over the table's {count} points: wins {wins}, ties {ties}, losses "
             "{losses}; from {lo} to {hi} columns, the vocabularies' widths: wins {vwins}, ties "
             "{vties}, losses {vlosses}.")

# What limits each op's last step (the rows-limits block): Nsight Compute at
# the shapes profiled, one launch each.
LIMITS_TEXT = ("Nsight Compute on each op's last step, below its copy, one launch each, at the "
               "shapes profiled ({sources}): how busy DRAM was and how full the SMs were, then "
               "the kernel that ran and its launch (blocks counts every block of a cluster). A "
               "bfloat16 step reads against the bfloat16 copy; — where a profile holds no value.")
LIMITS_TABLES = (("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                  "DRAM throughput, % of peak"),
                 ("sm__warps_active.avg.pct_of_peak_sustained_active",
                  "achieved occupancy, % of peak warps"),
                 ("launch", "threads a block x blocks, registers a thread"),
                 ("kernel", "the kernel profiled"))
LIMITS_LAUNCH = "{block} x {grid}, {regs}"

# Every string part 2's blocks contain, registered with an empty value as in
# docs.py's STRINGS: the Chinese forms live only in tools/zh_strings.py.
STRINGS = {
    "Part 2 at {shape} (the seed article's LayerNorm: 64 x 512 rows of 1024 floats)": "",
    "| program | what changed | median us | rounds us | GB/s | share of its bar | vs "
    "previous | vs PyTorch | vs torch.compile |": "",
    "A row sum's bar is part 1's step 9 summing the same floats as one array; the bar of "
    "LayerNorm, softmax and the copy is the copy kernel, which moves the same bytes. vs "
    "PyTorch compares the same operation in the same run ({torch}), eager and through "
    "torch.compile (compiled once per shape before the timing).": "",
    "LayerNorm, {step}, at every shape": "",
    "| shape | MiB | copy us | {step} us | share of the copy | PyTorch us | vs PyTorch | vs "
    "torch.compile |": "",
    "Row sum, {step}, at every shape": "",
    "Softmax, {step}, at every shape": "",
    SOFTMAX_CHART_ALT: "",
    WIDTHS_CHART_ALT: "",
    WIDTHS_TEXT: "",
    WIDTHS_CHART_ALT_OURS: "",
    WIDTHS_TEXT_OURS: "",
    "Softmax in bfloat16, {step}, at every shape": "",
    "LayerNorm in bfloat16, {step}, at every shape": "",
    BF16_CHART_ALT: "",
    "The bfloat16 steps move 2 bytes an element: their bar is the copy in bfloat16 "
    "(rows/copy16), and PyTorch runs the same operation on bfloat16 tensors.": "",
    "| shape | MiB | bf16 copy us | {step} us | share of the bf16 copy | PyTorch bf16 us | vs "
    "PyTorch | vs torch.compile |": "",
    "| shape | {step} us | step 9, one array, us | share of step 9 | CUB segmented us | vs CUB "
    "| PyTorch us | vs PyTorch | vs torch.compile |": "",
    "| shape | median us | rounds us | GB/s | share of its bar | vs previous step | vs PyTorch "
    "| vs torch.compile |": "",
    STEP_PROVENANCE: "",
    "Not measured yet: {source} has no rows for {step} (`make verify ONLY={step}` on a GPU "
    "measures it).": "",
    "{this}/rows.cu is identical to {prev}/rows.cu.": "",
    "{step} is the first step of part 2; there is no previous step.": "",
    "bytes read from DRAM": "", "bytes written to DRAM": "", "L2 hit rate, %": "",
    "warp-level global load instructions": "", "registers per thread": "",
    "32-byte sectors per global load request": "",
    "Nsight Compute at {shape}, {gpu} at revision {rev}, from {source}.": "",
    stale.Marks.NOTE: "",
    MAP_TEXT: "", MAP_SHARE_TITLE: "", MAP_EAGER_TITLE: "", MAP_COMPILED_TITLE: "",
    "| op | last step | {widths} |": "",
    "the copy, GB/s": "", "the bfloat16 copy, GB/s": "", MAP_COUNT: "",
    LIMITS_TEXT: "", LIMITS_LAUNCH: "", stale.Marks.NOTE_MANY: "", "| program | {shapes} |": "",
    "threads a block x blocks, registers a thread": "", "the kernel profiled": "",
    # the map's ops, as compare.WIDTH_TITLES names them
    "row sum": "", "LayerNorm": "", "softmax": "", "RMSNorm": "", "LayerNorm, bfloat16": "",
    "softmax, bfloat16": "", "RMSNorm, bfloat16": "", "residual add + RMSNorm, bfloat16": "",
}


class RowSources:
    """Part 2's inputs: the results file and, when it exists, its profile."""

    def __init__(self, root, results_path, profile_path, hashes=None):
        self.root = root
        self.hashes = hashes    # stale.Hashes: marks what measured an earlier version
        self.m = compare.RowMeasurements.load(results_path, hashes.is_stale if hashes else None)
        self.counters = None
        if profile_path and os.path.isfile(profile_path):
            self.counters = compare.Counters(profile_path, schema.load_profile(profile_path),
                                             metrics=[m for m, _ in ROW_COUNTERS])

    def path(self, path):
        return compare.repo_path(path, self.root)

    def source_file(self, step):
        return os.path.join(self.root, step, "rows.cu")

    def what_changed(self, step):
        path = os.path.join(self.root, schema.program_dir(step), "rows.cu")
        if not os.path.isfile(path):
            return ""
        with open(path, encoding="utf-8") as handle:
            first = handle.readline().strip()
        return first[2:].strip() if first.startswith("//") else ""


def fmt_ratio(value):
    return NONE_MARK if value is None else f"{value:.2f}x"


def fmt_spread(spread):
    return NONE_MARK if not spread else f"[{spread[0]:.1f}–{spread[1]:.1f}]"


def verdict_cell(m, a, b, shape, tr, marks=None):
    """a's speed over b's at shape, in a's current run, and what the rounds
    say of it; marked where b's row measured an earlier version."""
    view = m.within(a)
    ra, rb = view.get(a, shape), view.get(b, shape)
    if ra is None or rb is None:
        return NONE_MARK
    text = tr("{ratio} {verdict}", ratio=fmt_ratio(rb.median_us / ra.median_us),
              verdict=tr(m.verdict_vs(a, b, shape)))
    return marks.cell(text, rb, owner=a) if marks else text


def torch_of(m, step, compiled=False):
    """PyTorch's program for step's op: eager (torch/<op>) or compiled."""
    op = m.op(step)
    return (compare.TORCH_COMPILED if compiled else compare.TORCH) + op if op else None


def share(m, step, shape):
    """This program's bandwidth as a share of its bar's (copy or step 9), or None."""
    bar, view = m.ceiling(step), m.within(step)
    row, ref = view.get(step, shape), view.get(bar, shape)
    if row is None or ref is None:
        return None
    if bar == ONE_ARRAY:   # the same floats read: compare times
        return ref.median_us / row.median_us
    return row.gbps / ref.gbps


def fmt_share(value):
    return NONE_MARK if value is None else f"{100 * value:.0f}%"


def step_row_cells(m, step, shape, tr, marks):
    view = m.within(step)
    row = view.get(step, shape)
    prev = m.previous(step)
    torch = torch_of(m, step)
    vs_prev = verdict_cell(m, step, prev, shape, tr, marks) \
        if prev and m.op(prev) == m.op(step) else NONE_MARK
    vs_torch = verdict_cell(m, step, torch, shape, tr, marks) if torch else NONE_MARK
    compiled = torch_of(m, step, compiled=True)
    vs_compiled = verdict_cell(m, step, compiled, shape, tr, marks) if compiled else NONE_MARK
    bar = view.get(m.ceiling(step), shape)
    return (f"{marks.cell(f'{row.median_us:.1f}', row)} | {fmt_spread(m.spread(step, shape))} | "
            f"{row.gbps:.0f} | {marks.cell(fmt_share(share(m, step, shape)), bar, owner=step)} | {vs_prev} | "
            f"{vs_torch} | {vs_compiled}")


def results_block(rsrc, summary, tr, chart=lambda path: path):
    """rows/README.md's block: the seed shape, then the last step of each
    operation at every shape; softmax's table, the newest, ends with its chart
    (tools/plot.py draws it beside the others once a softmax step is measured)."""
    m = rsrc.m
    shape = ROW_SEED_SHAPE
    marks = stale.Marks(m.stale_rows)
    lines = [tr("Part 2 at {shape} (the seed article's LayerNorm: 64 x 512 rows of 1024 floats)",
                shape=shape_label(shape)), "",
             tr("| program | what changed | median us | rounds us | GB/s | share of its bar | vs "
                "previous | vs PyTorch | vs torch.compile |"),
             "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for step in m.programs:
        if step.startswith(compare.TORCH) or m.get(step, shape) is None:
            continue
        what = summary(rsrc.what_changed(step)).replace("|", "\\|")
        lines.append(f"| {step} | {what} | {step_row_cells(m, step, shape, tr, marks)} |")
    lines += ["", tr("A row sum's bar is part 1's step 9 summing the same floats as one array; "
                     "the bar of LayerNorm, softmax and the copy is the copy kernel, which moves "
                     "the same bytes. vs PyTorch compares the same operation in the same run "
                     "({torch}), eager and through torch.compile (compiled once per shape "
                     "before the timing).", torch=m.torch_version() or NONE_MARK)]
    lines += copy_bar_table(m, "layernorm", "LayerNorm, {step}, at every shape", tr, marks)
    total = m.last_step("sum")
    if total:
        lines += ["", tr("Row sum, {step}, at every shape", step=total), "",
                  tr("| shape | {step} us | step 9, one array, us | share of step 9 | CUB "
                     "segmented us | vs CUB | PyTorch us | vs PyTorch | vs torch.compile |",
                     step=total),
                  "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
        view = m.within(total)
        compiled = compare.TORCH_COMPILED + "sum"
        for s in m.shapes:
            row, one, cub, torch = (view.get(total, s), view.get(ONE_ARRAY, s),
                                    view.get(ROW_CUB, s), view.get("torch/sum", s))
            if row is None:
                continue
            lines.append(f"| {shape_label(s)} | {marks.cell(f'{row.median_us:.1f}', row)} | "
                         f"{marks.cell(f'{one.median_us:.1f}', one, owner=total) if one else NONE_MARK} | "
                         f"{fmt_share(share(m, total, s))} | "
                         f"{marks.cell(f'{cub.median_us:.1f}', cub, owner=total) if cub else NONE_MARK} | "
                         f"{verdict_cell(m, total, ROW_CUB, s, tr)} | "
                         f"{f'{torch.median_us:.1f}' if torch else NONE_MARK} | "
                         f"{verdict_cell(m, total, 'torch/sum', s, tr)} | "
                         f"{verdict_cell(m, total, compiled, s, tr)} |")
    softmax = copy_bar_table(m, "softmax", "Softmax, {step}, at every shape", tr, marks)
    if softmax:
        link = os.path.relpath(chart(softmax_chart(rsrc)), os.path.join(rsrc.root, "rows"))
        lines += softmax + ["", f"![{tr(SOFTMAX_CHART_ALT)}]({link.replace(os.sep, '/')})"]
    bf16 = (copy_bar_table(m, "softmax" + BF16, "Softmax in bfloat16, {step}, at every shape", tr,
                           marks)
            + copy_bar_table(m, "layernorm" + BF16, "LayerNorm in bfloat16, {step}, at every shape",
                             tr, marks))
    if bf16:
        link = os.path.relpath(chart(bf16_chart(rsrc)), os.path.join(rsrc.root, "rows"))
        lines += (["", tr("The bfloat16 steps move 2 bytes an element: their bar is the copy in "
                          "bfloat16 (rows/copy16), and PyTorch runs the same operation on "
                          "bfloat16 tensors.")] + bf16 +
                  ["", f"![{tr(BF16_CHART_ALT)}]({link.replace(os.sep, '/')})"])
    widths = widths_chart(rsrc)
    if widths:
        rows_dir = os.path.join(rsrc.root, "rows")
        link = os.path.relpath(chart(widths), rows_dir).replace(os.sep, "/")
        data = widths[:-len("-gbps.png")] + ".csv"
        source = os.path.relpath(data, rsrc.root).replace(os.sep, "/")
        text, alt = ((WIDTHS_TEXT, WIDTHS_CHART_ALT) if widths_have_torch(data) else
                     (WIDTHS_TEXT_OURS, WIDTHS_CHART_ALT_OURS))
        lines += ["", tr(text, source=source), "", f"![{tr(alt)}]({link})"]
    lines += marks.note(tr)
    if widths:
        lines += map_lines(rsrc, data, tr)
    return "\n".join(lines)


def map_lines(rsrc, data, tr):
    """[lines]: the map's figures under its chart, from its results file: each
    op's last step at each width as a share of its bar (the chart's distance
    to the copy, in numbers), then its verdicts against PyTorch, eager and
    compiled; none while the file has no row of ours. Its stale rows are
    marked on the step's name, and measured again by make bench-widths."""
    try:
        m = compare.RowMeasurements.load(data, rsrc.hashes.is_stale if rsrc.hashes else None)
    except (OSError, schema.SchemaError):
        return []
    ops = [(op, m.last_step(op)) for panel in compare.WIDTH_PANELS for op in panel]
    ops = [(op, step) for op, step in ops if step]
    if not ops:
        return []
    marks = stale.Marks(m.stale_rows, data)
    widths = sorted({shape[1] for shape in m.shapes})
    one = [row for (step, _), row in m.rows.items() if step == ONE_ARRAY]

    def at(step, view, width):
        """step's shape at width in view (float and bfloat16 rows differ), or None."""
        return next((s for s in m.shapes if s[1] == width and view.get(step, s)), None)

    def label(step, view):
        return marks.cell(step, *(view.get(step, at(step, view, w)) for w in widths
                                  if at(step, view, w)))

    def share_at(step, width):
        view = m.within(step)
        s = at(step, view, width)
        if s is None:
            return NONE_MARK
        bar = ([r for (name, _), r in view.rows.items() if name == ONE_ARRAY]
               if m.ceiling(step) == ONE_ARRAY else [view.get(m.ceiling(step), s)])
        return fmt_share(view.get(step, s).gbps / bar[0].gbps) if bar and bar[0] else NONE_MARK

    def verdicts_at(step, width, compiled):
        view = m.within(step)
        s = at(step, view, width)
        return verdict_cell(m, step, torch_of(m, step, compiled), s, tr) if s else NONE_MARK

    head = [tr("| op | last step | {widths} |",
               widths=" | ".join(compare.width_label(w) for w in widths)),
            "|---|---|" + "--:|" * len(widths)]
    lines = ["", tr(MAP_TEXT, source=os.path.relpath(data, rsrc.root).replace(os.sep, "/"),
                    one=f"{one[0].gbps:.0f}" if one else NONE_MARK, rounds=m.round_count),
             "", tr(MAP_SHARE_TITLE), ""] + head
    for copy in (COPY, COPY16):
        view = m.within(copy)
        if any(at(copy, view, w) for w in widths):
            cells = [f"{view.get(copy, at(copy, view, w)).gbps:.0f}" if at(copy, view, w)
                     else NONE_MARK for w in widths]
            lines.append(f"| {tr(MAP_COPY_LABEL[copy])} | {label(copy, view)} | "
                         f"{' | '.join(cells)} |")
    for op, step in ops:
        lines.append(f"| {tr(compare.WIDTH_TITLES[op])} | {label(step, m.within(step))} | "
                     f"{' | '.join(share_at(step, w) for w in widths)} |")
    for title, compiled in ((MAP_EAGER_TITLE, False), (MAP_COMPILED_TITLE, True)):
        lines += ["", tr(title), ""] + head
        for op, step in ops:
            lines.append(f"| {tr(compare.WIDTH_TITLES[op])} | {label(step, m.within(step))} | "
                         f"{' | '.join(verdicts_at(step, w, compiled) for w in widths)} |")
        # The counts the prose quotes, so that it need not count cells by hand.
        found = [(w, m.verdict_vs(step, torch_of(m, step, compiled), s))
                 for op, step in ops for w in widths
                 for s in [at(step, m.within(step), w)]
                 if s and m.within(step).get(torch_of(m, step, compiled), s)]
        vocab = [v for w, v in found if MAP_VOCAB[0] <= w <= MAP_VOCAB[1]]
        lines += ["", tr(MAP_COUNT, count=len(found), lo=MAP_VOCAB[0], hi=MAP_VOCAB[1],
                         **{key: [v for _, v in found].count(word) for key, word in
                            (("wins", compare.WIN), ("ties", compare.TIE),
                             ("losses", compare.LOSS))},
                         **{key: vocab.count(word) for key, word in
                            (("vwins", compare.WIN), ("vties", compare.TIE),
                             ("vlosses", compare.LOSS))})]
    return lines + marks.note(tr)


def softmax_chart(rsrc):
    """The path of the softmax chart (tools/plot.py's <slug>-softmax.png beside
    the results file), or None while no softmax step is measured."""
    if not rsrc.m.last_step("softmax"):
        return None
    path = rsrc.m.path
    return (path[:-len(".csv")] if path.endswith(".csv") else path) + "-softmax.png"


def bf16_chart(rsrc):
    """The path of the bfloat16 chart (tools/plot.py's <slug>-bf16.png), or None
    while no bfloat16 step is measured."""
    if not any(rsrc.m.op(s).endswith(BF16) for s in rsrc.m.steps):
        return None
    path = rsrc.m.path
    return (path[:-len(".csv")] if path.endswith(".csv") else path) + "-bf16.png"


def widths_chart(rsrc):
    """The path of part 2's map (tools/plot.py's <gpu>-rows-widths-gbps.png from
    bench.py --widths, beside the results file), or None until it is drawn."""
    path = rsrc.m.path
    stem = path[:-len("-rows.csv")] if path.endswith("-rows.csv") else path
    chart = stem + "-rows-widths-gbps.png"
    return chart if os.path.isfile(chart) else None


def widths_have_torch(path):
    """Whether the map's results file holds PyTorch's rows (False while it
    is missing: the chart was drawn from a file not kept)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return any(row.get("step", "").startswith(compare.TORCH)
                       for row in csv.DictReader(handle))
    except OSError:
        return False


def copy_bar_table(m, op, title, tr, marks):
    """[lines]: op's last step at every shape against its copy (float or
    bfloat16) and PyTorch's op, eager and compiled, all in the step's current
    run; none while no step computing op is measured."""
    step, torch = m.last_step(op), compare.TORCH + op
    if not step:
        return []
    compiled = compare.TORCH_COMPILED + op
    bf16 = op.endswith(BF16)
    header = ("| shape | MiB | bf16 copy us | {step} us | share of the bf16 copy | PyTorch bf16 us "
              "| vs PyTorch | vs torch.compile |" if bf16 else
              "| shape | MiB | copy us | {step} us | share of the copy | PyTorch us | vs "
              "PyTorch | vs torch.compile |")
    lines = ["", tr(title, step=step), "", tr(header, step=step),
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    view = m.within(step)
    for s in m.shapes:
        copy, row, theirs = (view.get(COPY16 if bf16 else COPY, s), view.get(step, s),
                             view.get(torch, s))
        if row is None:
            continue
        lines.append(f"| {shape_label(s)} | {shape_mib(s, 2 if bf16 else 4):g} | "
                     f"{marks.cell(f'{copy.median_us if copy else 0:.1f}', copy, owner=step)} | "
                     f"{marks.cell(f'{row.median_us:.1f}', row)} | "
                     f"{fmt_share(share(m, step, s))} | "
                     f"{f'{theirs.median_us:.1f}' if theirs else NONE_MARK} | "
                     f"{verdict_cell(m, step, torch, s, tr)} | "
                     f"{verdict_cell(m, step, compiled, s, tr)} |")
    return lines


def measured_block(rsrc, step, tr):
    m = rsrc.m
    shapes = [s for s in m.shapes if m.get(step, s)]
    if not shapes:
        return tr("Not measured yet: {source} has no rows for {step} (`make verify ONLY={step}` "
                  "on a GPU measures it).",
                  source=rsrc.path(m.path), step=step)
    marks = stale.Marks(m.stale_rows)
    lines = [tr("| shape | median us | rounds us | GB/s | share of its bar | vs previous step | "
                "vs PyTorch | vs torch.compile |"), "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for s in shapes:
        lines.append(f"| {shape_label(s)} | {step_row_cells(m, step, s, tr, marks)} |")
    # Where the figures come from, beside them: the step's own rows (a step
    # measured again alone has a run and a revision of its own).
    got = [m.get(step, s) for s in shapes]

    def of(field):
        return compare.distinct(str(getattr(r, field)) for r in got if getattr(r, field, ""))
    lines += ["", tr(STEP_PROVENANCE, gpu=of("gpu"), driver=of("driver"), cuda=of("cuda"),
                     toolchain=of("toolchain") or NONE_MARK, arch=of("arch") or NONE_MARK,
                     rev=of("git_rev"), hash=of("code_hash") or NONE_MARK,
                     run=of("run") or NONE_MARK,
                     rounds=compare.distinct(str(m.rounds.get((step, s), 1)) for s in shapes),
                     source=rsrc.path(m.path))]
    return "\n".join(lines + marks.note(tr))


def profiles_at_shapes(rsrc):
    """[(shape, compare.Counters)] of part 2's profiles: the default shape's
    file first, then its siblings <gpu>-rows-profile-RxC.csv, narrowest first."""
    if not rsrc.counters:
        return []
    stem, others = rsrc.counters.path[:-len(".csv")], []
    for path in glob.glob(stem + "-*x*.csv"):
        rows, _, cols = path[len(stem) + 1:-len(".csv")].partition("x")
        shape = (int(rows), int(cols)) if rows.isdigit() and cols.isdigit() else None
        if shape and shape != ROW_SEED_SHAPE:
            others.append((shape, compare.Counters(path, schema.load_profile(path),
                                                   metrics=[m for m, _ in ROW_COUNTERS])))
    return [(ROW_SEED_SHAPE, rsrc.counters)] + sorted(others, key=lambda sc: (sc[0][1], sc[0][0]))


def limits_block(rsrc, tr):
    """rows/README's counters of each op's last step and the copies at every
    shape profiled: DRAM throughput, achieved occupancy and the launch, one
    table each; a cell from a profile of an earlier version is marked, and
    the note names the command that profiles that file again."""
    profiles = profiles_at_shapes(rsrc)
    if not profiles:
        return tr("No Nsight Compute counters yet: run `make profile-all`, then `make docs`.")
    # each copy above the last steps it is the bar of; not the row sum, which
    # only reads (its bar, part 1's step 9, is not profiled here)
    names = [name for copy, panel in zip((COPY, COPY16), compare.WIDTH_PANELS)
             for name in [copy] + [rsrc.m.last_step(op) for op in panel if op != "sum"] if name]
    names = [n for n in dict.fromkeys(names)
             if any(c.version(n) is not None for _, c in profiles)]
    marks = stale.Marks(stale.rows_stale(rsrc.hashes))

    def cell(name, counters, text):
        return marks.cell(text, counters.version(name), path=counters.path)

    def value(name, counters, metric):
        if metric == "kernel":
            row = counters.version(name)
            kernel = (getattr(row, "kernel", "") or "").split("<")[0] if row else ""
            return cell(name, counters, f"`{kernel}`") if kernel else NONE_MARK
        if metric == "launch":
            block, grid, regs = (counters.value(name, m) for m in (
                "launch__block_size", "launch__grid_size", "launch__registers_per_thread"))
            if None in (block, grid, regs):
                return NONE_MARK
            return cell(name, counters, tr(LIMITS_LAUNCH, block=f"{block:.0f}",
                                           grid=f"{grid:.0f}", regs=f"{regs:.0f}"))
        got = counters.value(name, metric)
        return NONE_MARK if got is None else cell(name, counters, f"{got:.0f}%")

    sources = tr(", ").join(os.path.basename(c.path) for _, c in profiles)
    lines = [tr(LIMITS_TEXT, sources=sources)]
    for metric, title in LIMITS_TABLES:
        lines += ["", tr(title), "",
                  tr("| program | {shapes} |", shapes=" | ".join(shape_label(s) for s, _ in profiles)),
                  "|---|" + "--:|" * len(profiles)]
        for name in names:
            lines.append(f"| {name} | " + " | ".join(value(name, c, metric) for _, c in profiles)
                         + " |")
    lines += marks.note(tr)
    return "\n".join(lines)


def counters_block(rsrc, step, tr, counter_row, fmt_count):
    counters = rsrc.counters
    if counters is None:
        return tr("No Nsight Compute counters yet: run `make profile-all`, then `make docs`.")
    source = rsrc.path(counters.path)
    if step not in counters.steps:
        return tr("No counters for {step} in {source} yet.", step=step, source=source)
    # Beside the step before of the same op (step 13 beside step 7); an op's
    # first bfloat16 step beside its float twin, the step it converts; another
    # op's first step beside the nearest of its element type (19 beside 17).
    # Read from the sources (tools/steps.py), so a step profiled before it is
    # benched is set beside the same step.
    prev = steps.previous_step(rsrc.root, step, source=True)
    twin = steps.float_twin(rsrc.root, step, source=True)
    if twin and (prev is None or steps.row_op(rsrc.root, prev) != steps.row_op(rsrc.root, step)):
        prev = twin
    prev = prev or counters.previous(step)
    marks = stale.Marks(stale.rows_stale(rsrc.hashes), counters.path)
    lines = [tr("| counter | previous ({prev}) | this step ({step}) | change |",
                prev=marks.cell(prev, counters.version(prev)) if prev else NONE_MARK,
                step=marks.cell(step, counters.version(step))), "|---|--:|--:|--:|"]
    for metric, label in ROW_COUNTERS:
        now = counters.value(step, metric)
        if now is not None:
            before = counters.value(prev, metric) if prev else None
            lines.append(counter_row(f"{tr(label)} `{metric}`", before, now, fmt_count))
    per = counters.ratio(step, *SECTORS)
    if per is not None:
        formula = " / ".join(f"`{metric}`" for metric in SECTORS)
        lines.append(counter_row(f"{tr(SECTORS_LABEL)} {formula}",
                                 counters.ratio(prev, *SECTORS) if prev else None, per,
                                 lambda v: f"{v:.3g}"))
    lines += ["", tr("Nsight Compute at {shape}, {gpu} at revision {rev}, from {source}.",
                     shape=shape_label(ROW_SEED_SHAPE), gpu=counters.gpu or NONE_MARK,
                     rev=counters.git_rev or NONE_MARK, source=source)]
    return "\n".join(lines + marks.note(tr))


def diff_block(rsrc, step, tr):
    this_src = rsrc.source_file(step)
    # The step make diff shows (tools/steps.py's diff_base): a bfloat16 step's
    # float twin, the step it converts; else the step before of its op.
    prev = steps.diff_base(rsrc.root, step, source=True)
    if prev is None:
        return tr("{step} is the first step of part 2; there is no previous step.", step=step)
    block = generated.fenced_diff(rsrc.source_file(prev), this_src, f"{prev}/rows.cu",
                                  f"{step}/rows.cu")
    if block is None:
        return tr("{this}/rows.cu is identical to {prev}/rows.cu.", this=step, prev=prev)
    return block
