"""Part 2's targets (rows/README, "Where part 2 ends"): what part 2's issues
asked of each op, checked against the results file by tools/docs.py, so that
the table that says where each target is met and missed is never typed by
hand. A target reads one step in that step's own run: the op's last step,
or the step whose issue asked it (`step`):

  share    its GB/s over its bar's (the copy of its element type; for a row
           sum, part 1's step 9 on the same floats) at least this much
  ratio    its speed over another program's (median over median) at least this
  ahead    a win over another program: every round faster (compare.verdict)
  no_worse no loss to another program (a win or a tie)

over the shapes the target names: all of the step's, those of MIN_MIB or
more (in the step's element type), those of a width, or a list. A share or
ratio exactly on its line counts as met; one a hair below it is a miss, and
shows the decimals that say so (94.6%, not 95%; 94.99%, not 95.0%) in every
row of its op. A shape where the program it is set beside was not timed is
named in the missed cell, never dropped.

Every string goes through the translate function docs.py passes in (English
-> Chinese in tools/zh_strings.py)."""
import collections
import re

import compare
import rows_docs
import schema
import stale
from compare import BF16, ROW_CUB, shape_label, shape_mib
from rows_docs import NONE_MARK

TORCH, COMPILED = "torch", "compiled"   # the other side: PyTorch's op, eager or compiled

Target = collections.namedtuple("Target", "label op test line other min_mib cols shapes step",
                                defaults=(None,) * 6)

# What the issues asked, in the order the table shows them; the step column
# says which step each reads.
TARGETS = (
    Target("LayerNorm at 0.95x the copy's bandwidth or more, at every shape of 64 MiB "
           "or more", "layernorm", "share", 0.95, min_mib=64),
    Target("LayerNorm at 0.90x the copy or more at every shape of 64 MiB or more "
           "(step 17's issue)", "layernorm", "share", 0.90, min_mib=64),
    Target("LayerNorm at 0.90x the copy or more at 8192 x 4097 (step 13's issue)",
           "layernorm", "share", 0.90, shapes=((8192, 4097),)),
    Target("LayerNorm at 1.4x PyTorch or more at 32768 x 1024", "layernorm", "ratio",
           1.4, TORCH, shapes=((32768, 1024),)),
    Target("LayerNorm ahead of PyTorch at every shape", "layernorm", "ahead",
           other=TORCH),
    Target("LayerNorm ahead of compiled PyTorch at every shape", "layernorm", "ahead",
           other=COMPILED),
    Target("LayerNorm no slower than step 13 at any shape (step 17's issue)",
           "layernorm", "no_worse", other="rows/step13_layernorm_aligned"),
    Target("Row sum at 1.8x CUB's segmented reduce or more at 1024 columns", "sum",
           "ratio", 1.8, ROW_CUB, cols=1024),
    Target("Row sum at 0.95x part 1's step 9 on the same floats or more", "sum",
           "share", 0.95),
    Target("Row sum ahead of PyTorch at every shape", "sum", "ahead", other=TORCH),
    Target("Softmax at 0.95x the copy's bandwidth or more, at every shape of 64 MiB "
           "or more", "softmax", "share", 0.95, min_mib=64),
    Target("Softmax at 0.90x the copy or more at every shape of 64 MiB or more (step "
           "15's issue)", "softmax", "share", 0.90, min_mib=64),
    Target("Softmax at 1.5x PyTorch or more at 4096 x 8192", "softmax", "ratio", 1.5,
           TORCH, shapes=((4096, 8192),)),
    Target("Softmax ahead of PyTorch at every shape", "softmax", "ahead", other=TORCH),
    Target("Softmax ahead of compiled PyTorch at every shape (step 15's issue)",
           "softmax", "ahead", other=COMPILED),
    Target("Softmax no slower than step 10 at any shape (step 15's issue)", "softmax",
           "no_worse", other="rows/step10_aligned"),
    Target("bfloat16 softmax at 0.9x the bfloat16 copy or more, at every shape of 32 "
           "MiB or more", "softmax_bf16", "share", 0.90, min_mib=32),
    Target("bfloat16 softmax ahead of PyTorch's at every shape (step 16's issue)",
           "softmax_bf16", "ahead", other=TORCH),
    Target("bfloat16 softmax ahead of compiled PyTorch's at every shape (step 16's "
           "issue)", "softmax_bf16", "ahead", other=COMPILED),
    Target("bfloat16 softmax no slower than step 11 at any shape (step 16's issue)",
           "softmax_bf16", "no_worse", other="rows/step11_bf16", step="rows/step16_bf16_cluster"),
    Target("bfloat16 softmax no slower than step 16 at any shape", "softmax_bf16", "no_worse",
           other="rows/step16_bf16_cluster"),
    Target("bfloat16 softmax no slower than step 23 at any shape", "softmax_bf16",
           "no_worse", other="rows/step23_bf16_bulk"),
    Target("bfloat16 LayerNorm at 0.9x the bfloat16 copy or more, at every shape of 32 "
           "MiB or more (step 17's issue)", "layernorm_bf16", "share", 0.90, min_mib=32),
    Target("bfloat16 LayerNorm at 0.85x the bfloat16 copy or more at 8192 x 4097 "
           "(step 14's issue)", "layernorm_bf16", "share", 0.85, shapes=((8192, 4097),)),
    Target("bfloat16 LayerNorm at 2x PyTorch's bfloat16 layer_norm or more at 32768 x "
           "1024", "layernorm_bf16", "ratio", 2.0, TORCH, shapes=((32768, 1024),)),
    Target("bfloat16 LayerNorm ahead of PyTorch's at every shape (step 17's issue)",
           "layernorm_bf16", "ahead", other=TORCH),
    Target("bfloat16 LayerNorm ahead of compiled PyTorch's at every shape (step 17's "
           "issue)", "layernorm_bf16", "ahead", other=COMPILED),
    Target("bfloat16 LayerNorm no slower than step 14 at any shape (step 17's issue)",
           "layernorm_bf16", "no_worse", other="rows/step14_bf16_layernorm_aligned",
           step="rows/step18_bf16_layernorm_cluster"),
    Target("bfloat16 LayerNorm no slower than step 18 at any shape", "layernorm_bf16",
           "no_worse", other="rows/step18_bf16_layernorm_cluster"),
    Target("RMSNorm at 0.95x the copy or more at every bench shape from 32768 x 1024 "
           "to 4096 x 8192 (steps 19-21's issue)", "rmsnorm", "share", 0.95,
           shapes=((32768, 1024), (65536, 768), (8192, 4096), (4096, 8192))),
    Target("RMSNorm at 0.90x the copy or more at every shape of 64 MiB or more (steps "
           "19-21's issue)", "rmsnorm", "share", 0.90, min_mib=64),
    Target("The fused residual add and RMSNorm in bfloat16 at 0.90x the bfloat16 copy "
           "or more (its GB/s count x, the residual, h and y), at every shape of 32 MiB or more "
           "(steps 19-21's issue)", "add_rmsnorm_bf16", "share", 0.90, min_mib=32),
    Target("RMSNorm ahead of PyTorch's at every shape (steps 19-21's issue)", "rmsnorm",
           "ahead", other=TORCH),
    Target("RMSNorm ahead of compiled PyTorch's at every shape (steps 19-21's issue)",
           "rmsnorm", "ahead", other=COMPILED),
    Target("bfloat16 RMSNorm ahead of PyTorch's at every shape (steps 19-21's issue)",
           "rmsnorm_bf16", "ahead", other=TORCH),
    Target("bfloat16 RMSNorm ahead of compiled PyTorch's at every shape (steps 19-21's "
           "issue)", "rmsnorm_bf16", "ahead", other=COMPILED),
    Target("The fused residual add and RMSNorm ahead of PyTorch's at every shape "
           "(steps 19-21's issue)", "add_rmsnorm_bf16", "ahead", other=TORCH),
    Target("The fused residual add and RMSNorm ahead of compiled PyTorch's at every "
           "shape (steps 19-21's issue)", "add_rmsnorm_bf16", "ahead", other=COMPILED),
)

HEADER = "| target | step | where it is met | where it is missed |"
SOURCE = ("Checked against {source} by `make docs` (tools/rows_targets.py): each target reads "
          "its step's own run, and a share or a ratio one hair below its line is a miss. A "
          "ratio is the medians'; a win or a loss needs every round apart, so a tie may carry a "
          "large ratio where the other side's rounds spread widely. Runs: {runs}.")
RUN_AT = "{run} at {rev} ({steps})"
# The words of the cells; the Chinese forms live in tools/zh_strings.py.
EVERY = "every shape, {lo} to {hi} (the most at {top})"
SOME = "{n} of {total} shapes, {lo} to {hi} (the most at {top})"
LOSSES = "losses: {shapes}"
TIES = "ties: {shapes}"
HEAD = "{head}: {parts}"
EVERY_SHAPE = "every shape"
N_SHAPES = "{n} of {total} shapes"
WINS_AT = "wins at {shapes}"
TIES_REST = "ties at the other {ties}"
ALL_TIES = "all ties"
LOSS_TIMES = "{ratio}: {us} against {other_us} us"
NOT_IN_RUN = "{other} was not timed in {step}'s run"
NOT_AT = "{other} not timed at {shapes}"
NO_SHAPES = "{step}'s run has none of these shapes"
VALUE = "{what} ({value})"
# Registered with docs.py's STRINGS, as rows_docs.STRINGS are.
STRINGS = dict.fromkeys([t.label for t in TARGETS] + [
    HEADER, SOURCE, RUN_AT, EVERY, SOME, LOSSES, TIES, HEAD, EVERY_SHAPE, N_SHAPES, WINS_AT,
    TIES_REST, ALL_TIES, LOSS_TIMES, NOT_IN_RUN, NOT_AT, NO_SHAPES, VALUE,
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


def ratio_of(m, step, other, s):
    view = m.within(step)
    a, b = view.get(step, s), view.get(other, s)
    return None if a is None or b is None else b.median_us / a.median_us


EPS = 1e-9   # a share or ratio on its line to the last bits of a float is on it


def meets(value, line):
    return value >= line - EPS


def fmt_value(value, lines, percent):
    """97% (or 1.54x), with a decimal more while the figure would read as one
    of its op's lines and the value is not on it (94.6%, not 95%)."""
    scale, digits = (100, 0) if percent else (1, 2)
    for extra in range(4):
        d = digits + extra
        if not any(round(scale * value, d) == round(scale * line, d) and
                   abs(value - line) >= EPS for line in lines):
            break
    return f"{scale * value:.{d}f}" + ("%" if percent else "x")


def lines_of(target):
    """Every line of its op's targets of the same kind: a value shows alike
    in each of their rows."""
    return {t.line for t in TARGETS if t.op == target.op and t.test == target.test and t.line}


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


def compared_with(m, target, step):
    """The program a target sets its step beside: its bar for a share, else
    the other side it names."""
    return m.ceiling(step) if target.test == "share" else other_program(m, step, target.other)


def cells(m, target, step, tr):
    """(met, missed) of one target for its step; where the step's run has
    none of its shapes, or not the program it is set beside at some or all of
    them, the missed cell says so."""
    shapes = shapes_of(m, target, step)
    if not shapes:
        return NONE_MARK, tr(NO_SHAPES, step=step)
    other = compared_with(m, target, step)
    view = m.within(step)
    got = [(s, rows_docs.share(m, step, s) if target.test == "share" else
            ratio_of(m, step, other, s)) for s in shapes]
    values = sorted([(s, v) for s, v in got if v is not None], key=lambda sv: -sv[1])
    if not values and not any(view.get(other, s) for s in m.shapes):
        return NONE_MARK, tr(NOT_IN_RUN, other=other, step=step)
    absent = [s for s, v in got if v is None]
    unmeasured = (tr(NOT_AT, other=other, shapes=joined([shape_label(s) for s in absent], tr))
                  if absent else "")
    if target.test in ("share", "ratio"):
        met, missed = line_cells(target, values, tr)
    else:
        verdicts = {s: m.verdict_vs(step, other, s) for s, _ in values}
        wins, ties, losses = ([(s, v) for s, v in values if verdicts[s] == word]
                              for word in (compare.WIN, compare.TIE, compare.LOSS))
        if target.test == "ahead":
            met, missed = ahead_cells(wins, ties, losses, len(shapes), tr)
        else:
            met, missed = no_worse_cells(view, step, other, wins, ties, losses, len(shapes), tr)
    missed = tr("; ").join(x for x in (missed, unmeasured) if x)
    return met or NONE_MARK, missed or NONE_MARK


def line_cells(target, values, tr):
    """A share or a ratio against its line: the shapes on each side of it,
    each with its figure (shares that read alike grouped)."""
    shown = [(s, fmt_value(v, lines_of(target), target.test == "share"), meets(v, target.line))
             for s, v in values]
    join = grouped if target.test == "share" else listed
    return (join([(s, text) for s, text, ok in shown if ok], tr),
            join([(s, text) for s, text, ok in shown if not ok], tr))


def ahead_cells(wins, ties, losses, total, tr):
    """Ahead of the other side: the wins' span; the losses and ties by name."""
    met = ""
    if wins:
        span = dict(lo=f"{wins[-1][1]:.2f}x", hi=f"{wins[0][1]:.2f}x",
                    top=shape_label(wins[0][0]))
        met = (tr(EVERY, **span) if len(wins) == total else
               tr(SOME, n=len(wins), total=total, **span))
    missed = [tr(word, shapes=listed([(s, f"{v:.2f}x") for s, v in found], tr))
              for word, found in ((LOSSES, losses), (TIES, ties)) if found]
    return met, tr("; ").join(missed)


def no_worse_cells(view, step, other, wins, ties, losses, total, tr):
    """No slower than the other side: a win or a tie meets it; a loss says
    both times, so that the reader sees how small it may be."""
    met = ""
    if wins or ties:
        n = len(wins) + len(ties)
        if not wins:
            parts = [tr(ALL_TIES)]
        else:
            parts = [tr(WINS_AT, shapes=listed([(s, f"{v:.2f}x") for s, v in wins], tr))]
            parts += [tr(TIES_REST, ties=len(ties))] if ties else []
        met = tr(HEAD, head=tr(EVERY_SHAPE) if n == total else tr(N_SHAPES, n=n, total=total),
                 parts=tr("; ").join(parts))
    missed = [(s, tr(LOSS_TIMES, ratio=f"{v:.2f}x", us=f"{view.get(step, s).median_us:.1f}",
                     other_us=f"{view.get(other, s).median_us:.1f}")) for s, v in losses]
    return met, listed(missed, tr)


def targets_block(m, source, tr):
    """The targets table of rows/README (the rows-targets block), from the
    results file m was read from; a target whose op has no step yet, or
    whose issue's step is not in the file, is left out."""
    marks = stale.Marks(m.stale_rows)
    lines = [tr(HEADER), "|---|---|---|---|"]
    runs = {}
    for target in TARGETS:
        step = target.step or m.last_step(target.op)
        if not step or step not in m.current:
            continue
        view, shapes = m.within(step), shapes_of(m, target, step)
        revs, steps = runs.setdefault(m.current[step], (set(), set()))
        revs.update(r.git_rev for (name, _), r in view.rows.items() if name == step)
        steps.add(step)
        got = cells(m, target, step, tr)
        other = compared_with(m, target, step)
        rows = [view.get(name, s) for s in shapes for name in (step, other)]
        lines.append(f"| {tr(target.label)} | {marks.cell(step, *rows, owner=step)} | "
                     f"{got[0]} | {got[1]} |")
    ran = [tr(RUN_AT, run=run, rev=", ".join(sorted(revs)) or NONE_MARK,
              steps=joined(sorted(steps, key=schema.step_sort_key), tr))
           for run, (revs, steps) in sorted(runs.items())]
    text = "\n".join(lines + ["", tr(SOURCE, source=source, runs=tr("; ").join(ran))] +
                      marks.note(tr))
    # Chinese sets no space after a full-width bracket before a Chinese word
    # ("（1.03x）和"); the English text has none of these brackets.
    return re.sub(r"） (?=[\u4e00-\u9fff])", "）", text)
