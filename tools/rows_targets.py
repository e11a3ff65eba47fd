"""Part 2's targets (rows/README, "Where part 2 ends"): what part 2's issues
asked of each op, checked against the results file by tools/docs.py, so that
the table that says where each target is met and missed is never typed by
hand. A target reads one op's last step in its own run:

  share    its GB/s over its bar's (the copy of its element type; for a row
           sum, part 1's step 9 on the same floats) at least this much
  ratio    its speed over another program's (median over median) at least this
  ahead    a win over another program: every round faster (compare.verdict)
  no_worse no loss to another program (a win or a tie)

over the shapes the target names: all of the step's, those of MIN_MIB or
more (in the step's element type), those of a width, or a list. A share or
ratio exactly on its line counts as met; one a hair below it is a miss, and
shows the decimal that says so (94.6%, not 95%).

Every string goes through the translate function docs.py passes in (English
-> Chinese in tools/zh_strings.py)."""
import collections

import compare
import stale
from compare import BF16, ROW_CUB, shape_label, shape_mib

NONE_MARK = "—"
TORCH, COMPILED = "torch", "compiled"   # the other side: PyTorch's op, eager or compiled

Target = collections.namedtuple("Target", "label op test line other min_mib cols shapes",
                                defaults=(None,) * 5)

# What the issues asked, in the order the table shows them. {step} is the
# step the target reads: the op's last step.
TARGETS = (
    Target("LayerNorm ({step}) at 0.95x the copy's bandwidth or more, at every shape of 64 MiB "
           "or more", "layernorm", "share", 0.95, min_mib=64),
    Target("LayerNorm ({step}) at 0.90x the copy or more at every shape of 64 MiB or more "
           "(step 17's issue)", "layernorm", "share", 0.90, min_mib=64),
    Target("LayerNorm ({step}) at 0.90x the copy or more at 8192 x 4097 (step 13's issue)",
           "layernorm", "share", 0.90, shapes=((8192, 4097),)),
    Target("LayerNorm ({step}) at 1.4x PyTorch or more at 32768 x 1024", "layernorm", "ratio",
           1.4, TORCH, shapes=((32768, 1024),)),
    Target("LayerNorm ({step}) ahead of PyTorch at every shape", "layernorm", "ahead",
           other=TORCH),
    Target("LayerNorm ({step}) ahead of compiled PyTorch at every shape", "layernorm", "ahead",
           other=COMPILED),
    Target("LayerNorm ({step}) no slower than step 13 at any shape (step 17's issue)",
           "layernorm", "no_worse", other="rows/step13_layernorm_aligned"),
    Target("Row sum ({step}) at 1.8x CUB's segmented reduce or more at 1024 columns", "sum",
           "ratio", 1.8, ROW_CUB, cols=1024),
    Target("Row sum ({step}) at 0.95x part 1's step 9 on the same floats or more", "sum",
           "share", 0.95),
    Target("Row sum ({step}) ahead of PyTorch at every shape", "sum", "ahead", other=TORCH),
    Target("Softmax ({step}) at 0.95x the copy's bandwidth or more, at every shape of 64 MiB "
           "or more", "softmax", "share", 0.95, min_mib=64),
    Target("Softmax ({step}) at 0.90x the copy or more at every shape of 64 MiB or more (step "
           "15's issue)", "softmax", "share", 0.90, min_mib=64),
    Target("Softmax ({step}) at 1.5x PyTorch or more at 4096 x 8192", "softmax", "ratio", 1.5,
           TORCH, shapes=((4096, 8192),)),
    Target("Softmax ({step}) ahead of PyTorch at every shape", "softmax", "ahead", other=TORCH),
    Target("Softmax ({step}) ahead of compiled PyTorch at every shape (step 15's issue)",
           "softmax", "ahead", other=COMPILED),
    Target("Softmax ({step}) no slower than step 10 at any shape (step 15's issue)", "softmax",
           "no_worse", other="rows/step10_aligned"),
    Target("bfloat16 softmax ({step}) at 0.9x the bfloat16 copy or more, at every shape of 32 "
           "MiB or more", "softmax_bf16", "share", 0.90, min_mib=32),
    Target("bfloat16 softmax ({step}) ahead of PyTorch's at every shape (step 16's issue)",
           "softmax_bf16", "ahead", other=TORCH),
    Target("bfloat16 softmax ({step}) ahead of compiled PyTorch's at every shape (step 16's "
           "issue)", "softmax_bf16", "ahead", other=COMPILED),
    Target("bfloat16 softmax ({step}) no slower than step 11 at any shape (step 16's issue)",
           "softmax_bf16", "no_worse", other="rows/step11_bf16"),
    Target("bfloat16 softmax ({step}) no slower than step 23 at any shape", "softmax_bf16",
           "no_worse", other="rows/step23_bf16_bulk"),
    Target("bfloat16 LayerNorm ({step}) at 0.9x the bfloat16 copy or more, at every shape of 32 "
           "MiB or more (step 17's issue)", "layernorm_bf16", "share", 0.90, min_mib=32),
    Target("bfloat16 LayerNorm ({step}) at 0.85x the bfloat16 copy or more at 8192 x 4097 "
           "(step 14's issue)", "layernorm_bf16", "share", 0.85, shapes=((8192, 4097),)),
    Target("bfloat16 LayerNorm ({step}) at 2x PyTorch's bfloat16 layer_norm or more at 32768 x "
           "1024", "layernorm_bf16", "ratio", 2.0, TORCH, shapes=((32768, 1024),)),
    Target("bfloat16 LayerNorm ({step}) ahead of PyTorch's at every shape (step 17's issue)",
           "layernorm_bf16", "ahead", other=TORCH),
    Target("bfloat16 LayerNorm ({step}) ahead of compiled PyTorch's at every shape (step 17's "
           "issue)", "layernorm_bf16", "ahead", other=COMPILED),
    Target("bfloat16 LayerNorm ({step}) no slower than step 14 at any shape (step 17's issue)",
           "layernorm_bf16", "no_worse", other="rows/step14_bf16_layernorm_aligned"),
    Target("bfloat16 LayerNorm ({step}) no slower than step 18 at any shape", "layernorm_bf16",
           "no_worse", other="rows/step18_bf16_layernorm_cluster"),
    Target("RMSNorm ({step}) at 0.95x the copy or more at every bench shape from 32768 x 1024 "
           "to 4096 x 8192 (steps 19-21's issue)", "rmsnorm", "share", 0.95,
           shapes=((32768, 1024), (65536, 768), (8192, 4096), (4096, 8192))),
    Target("RMSNorm ({step}) at 0.90x the copy or more at every shape of 64 MiB or more (steps "
           "19-21's issue)", "rmsnorm", "share", 0.90, min_mib=64),
    Target("The fused residual add and RMSNorm in bfloat16 ({step}) at 0.90x the bfloat16 copy "
           "or more (its GB/s count x, the residual, h and y), at every shape of 32 MiB or more "
           "(steps 19-21's issue)", "add_rmsnorm_bf16", "share", 0.90, min_mib=32),
    Target("RMSNorm ({step}) ahead of PyTorch's at every shape (steps 19-21's issue)", "rmsnorm",
           "ahead", other=TORCH),
    Target("RMSNorm ({step}) ahead of compiled PyTorch's at every shape (steps 19-21's issue)",
           "rmsnorm", "ahead", other=COMPILED),
    Target("bfloat16 RMSNorm ({step}) ahead of PyTorch's at every shape (steps 19-21's issue)",
           "rmsnorm_bf16", "ahead", other=TORCH),
    Target("bfloat16 RMSNorm ({step}) ahead of compiled PyTorch's at every shape (steps 19-21's "
           "issue)", "rmsnorm_bf16", "ahead", other=COMPILED),
    Target("The fused residual add and RMSNorm ({step}) ahead of PyTorch's at every shape "
           "(steps 19-21's issue)", "add_rmsnorm_bf16", "ahead", other=TORCH),
    Target("The fused residual add and RMSNorm ({step}) ahead of compiled PyTorch's at every "
           "shape (steps 19-21's issue)", "add_rmsnorm_bf16", "ahead", other=COMPILED),
)

HEADER = "| target | where it is met | where it is missed |"
SOURCE = ("Checked against {source} by `make docs` (tools/rows_targets.py): each target reads "
          "its step's own run, and a share or a ratio one hair below its line is a miss. Runs: "
          "{runs}.")
RUN_AT = "{run} at {rev} ({steps})"
# The words of the cells; the Chinese forms live in tools/zh_strings.py.
EVERY = "every shape, {lo} to {hi}"
SOME = "{n} of {total} shapes, {lo} to {hi}"
LOSSES = "losses: {shapes}"
TIES = "ties: {shapes}"
NO_WORSE = "{n} of {total} shapes: wins at {shapes}; ties at the other {ties}"
NO_WORSE_ALL_TIES = "{n} of {total} shapes, all ties"
LOSS_TIMES = "{ratio}: {us} against {other_us} us"
NOT_IN_RUN = "{other} was not timed in {step}'s run"
NO_SHAPES = "{step}'s run has none of these shapes"
VALUE = "{what} ({value})"
# Registered with docs.py's STRINGS, as rows_docs.STRINGS are.
STRINGS = dict.fromkeys([t.label for t in TARGETS] + [
    HEADER, SOURCE, EVERY, SOME, LOSSES, TIES, NO_WORSE, NO_WORSE_ALL_TIES, LOSS_TIMES, NOT_IN_RUN,
    NO_SHAPES, VALUE, RUN_AT,
    "{first} and {last}"], "")


def other_program(m, step, other):
    """The program a target sets its step beside: PyTorch's op, eager or
    compiled, or a program named."""
    if other == TORCH:
        return compare.TORCH + m.op(step)
    if other == COMPILED:
        return compare.TORCH_COMPILED + m.op(step)
    return other


def shapes_of(m, target, step):
    """The shapes a target reads: those of its list, width or size that its
    step ran in its own run."""
    view = m.within(step)
    elem = 2 if m.op(step).endswith(BF16) else 4
    picked = []
    for s in m.shapes:
        if view.get(step, s) is None:
            continue
        if target.shapes is not None and s not in target.shapes:
            continue
        if target.cols is not None and s[1] != target.cols:
            continue
        if target.min_mib is not None and shape_mib(s, elem) < target.min_mib:
            continue
        picked.append(s)
    return picked


def share_of(m, step, s):
    """step's GB/s over its bar's at s, in its own run (rows_docs.share's rule)."""
    view = m.within(step)
    bar = m.ceiling(step)
    row, ref = view.get(step, s), view.get(bar, s)
    if row is None or ref is None:
        return None
    return ref.median_us / row.median_us if bar == compare.ONE_ARRAY else row.gbps / ref.gbps


def ratio_of(m, step, other, s):
    view = m.within(step)
    a, b = view.get(step, s), view.get(other, s)
    return None if a is None or b is None else b.median_us / a.median_us


EPS = 1e-9   # a share or ratio on its line to the last bits of a float is on it


def meets(value, line):
    return value >= line - EPS


def fmt_value(value, line, percent):
    """97% (or 1.54x); one decimal more where the rounded figure would sit
    on the line while the value does not (94.6%, not 95%)."""
    if percent:
        text = f"{100 * value:.0f}%"
        if round(100 * value) == round(100 * line) and not abs(value - line) < EPS:
            text = f"{100 * value:.1f}%"
        return text
    text = f"{value:.2f}x"
    if round(value, 2) == round(line, 2) and not abs(value - line) < EPS:
        text = f"{value:.3f}x"
    return text


def grouped(items, tr):
    """'A, B and C (97%); D (94.6%)': shapes that show the same figure in one
    group, the groups in the order given (best first)."""
    groups = []
    for s, text in items:
        if groups and groups[-1][1] == text:
            groups[-1][0].append(s)
        else:
            groups.append(([s], text))
    return tr("; ").join(tr(VALUE, what=joined([shape_label(s) for s in shapes], tr), value=text)
                         for shapes, text in groups)


def joined(words, tr):
    if len(words) <= 1:
        return "".join(words)
    return tr("{first} and {last}", first=tr(", ").join(words[:-1]), last=words[-1])


def listed(items, tr):
    """'A (1.26x), B (1.17x) and C (0.99x)'."""
    return joined([tr(VALUE, what=shape_label(s), value=text) for s, text in items], tr)


def cells(m, target, step, tr):
    """(met, missed) of one target for its step; where the step's run has
    none of its shapes, or not the program it is set beside, the missed cell
    says so."""
    shapes = shapes_of(m, target, step)
    if not shapes:
        return NONE_MARK, tr(NO_SHAPES, step=step)
    if target.test == "share":
        values = [(s, share_of(m, step, s)) for s in shapes]
        values = sorted([(s, v) for s, v in values if v is not None], key=lambda sv: -sv[1])
        if not values:
            return NONE_MARK, tr(NOT_IN_RUN, other=m.ceiling(step), step=step)
        shown = [(s, fmt_value(v, target.line, True), meets(v, target.line)) for s, v in values]
        met = [(s, text) for s, text, ok in shown if ok]
        missed = [(s, text) for s, text, ok in shown if not ok]
        return grouped(met, tr) or NONE_MARK, grouped(missed, tr) or NONE_MARK
    other = other_program(m, step, target.other)
    values = [(s, ratio_of(m, step, other, s)) for s in shapes]
    values = sorted([(s, v) for s, v in values if v is not None], key=lambda sv: -sv[1])
    if not values:
        return NONE_MARK, tr(NOT_IN_RUN, other=other, step=step)
    if target.test == "ratio":
        shown = [(s, fmt_value(v, target.line, False), meets(v, target.line)) for s, v in values]
        met = [(s, text) for s, text, ok in shown if ok]
        missed = [(s, text) for s, text, ok in shown if not ok]
        return listed(met, tr) or NONE_MARK, listed(missed, tr) or NONE_MARK
    verdicts = {s: m.verdict_vs(step, other, s) for s, _ in values}
    wins = [(s, v) for s, v in values if verdicts[s] == compare.WIN]
    ties = [(s, v) for s, v in values if verdicts[s] == compare.TIE]
    losses = [(s, v) for s, v in values if verdicts[s] == compare.LOSS]
    if target.test == "ahead":
        if not wins:
            met = NONE_MARK
        elif len(wins) == len(values):
            met = tr(EVERY, lo=f"{wins[-1][1]:.2f}x", hi=f"{wins[0][1]:.2f}x")
        else:
            met = tr(SOME, n=len(wins), total=len(values), lo=f"{wins[-1][1]:.2f}x",
                     hi=f"{wins[0][1]:.2f}x")
        missed = [tr(LOSSES, shapes=listed([(s, f"{v:.2f}x") for s, v in losses], tr))
                  if losses else "",
                  tr(TIES, shapes=listed([(s, f"{v:.2f}x") for s, v in ties], tr)) if ties else ""]
        return met, tr("; ").join(x for x in missed if x) or NONE_MARK
    # no_worse: a win or a tie meets it; a loss says both times, so that the
    # reader sees how small it may be
    if wins:
        met = tr(NO_WORSE, n=len(wins) + len(ties), total=len(values),
                 shapes=listed([(s, f"{v:.2f}x") for s, v in wins], tr), ties=len(ties))
    elif ties:
        met = tr(NO_WORSE_ALL_TIES, n=len(ties), total=len(values))
    else:
        met = NONE_MARK
    view = m.within(step)
    missed = [(s, tr(LOSS_TIMES, ratio=f"{v:.2f}x", us=f"{view.get(step, s).median_us:.1f}",
                     other_us=f"{view.get(other, s).median_us:.1f}")) for s, v in losses]
    return met, listed(missed, tr) or NONE_MARK


def targets_block(m, source, tr):
    """The targets table of rows/README (the rows-targets block), from the
    results file m was read from; a target whose op has no step yet is left
    out."""
    marks = stale.Marks(m.stale_rows)
    lines = [tr(HEADER), "|---|---|---|"]
    runs = {}
    for target in TARGETS:
        step = m.last_step(target.op)
        if not step:
            continue
        run = m.current.get(step, "")
        steps = runs.setdefault(run, ({r.git_rev for r in m.within(step).rows.values()
                                       if r.step == step}, []))[1]
        if step not in steps:
            steps.append(step)
        got = cells(m, target, step, tr)
        view, shapes = m.within(step), shapes_of(m, target, step)
        other = (m.ceiling(step) if target.test == "share" else
                 other_program(m, step, target.other))
        rows = [view.get(name, s) for s in shapes for name in (step, other)]
        label = marks.cell(tr(target.label, step=step), *rows, owner=step)
        lines.append(f"| {label} | {got[0]} | {got[1]} |")
    ran = [tr(RUN_AT, run=run or NONE_MARK, rev=", ".join(sorted(revs)) or NONE_MARK,
              steps=joined(steps, tr)) for run, (revs, steps) in sorted(runs.items())]
    return "\n".join(lines + ["", tr(SOURCE, source=source, runs=tr("; ").join(ran))] +
                     marks.note(tr))
