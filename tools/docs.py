#!/usr/bin/env python3
"""Regenerate the generated blocks of every page from the committed data:
the one writer of README blocks (`make docs`).

    python3 tools/docs.py [--results CSV] [--profile CSV] [--accuracy CSV]
                          [--root DIR] [--check]

A block is the text between a `<!-- BEGIN name -->` line and its
`<!-- END name -->` line (tools/generated.py); everything outside blocks is
left alone.
  README.md          results   provenance, charts, tables at n = 2^25 and 2^28
  ACCURACY.md        accuracy  measured errors, Kahan's cost, equal bits
                               (tools/accuracy_docs.py, from the accuracy CSV)
  stepN_*/README.md  measured  this step at both sizes, against the previous step, step 0, CUB
                     vs-cub    this step, the previous one and CUB at every size (step 9)
                     determinism  different sums in 100 runs (the -determinism.csv sibling)
                     tried     this step's knob sweep (the -tune-stepN.csv sibling)
                     counters  its Nsight Compute counters beside the previous step's
                     diff      its reduce.cu against the previous step's
                     figures   its access-pattern pictures (tools/diagrams.py draws them)
NAME.zh-CN.md beside a NAME.md gets the same blocks with Chinese labels
(tools/zh_strings.py, for the English of STRINGS below and of
accuracy_docs.TEXT); step names, CUDA identifiers and
numbers are the same in both. Failed and check-mode rows never reach a table
(tools/schema.py). Running it twice changes nothing.

Defaults: --results plots/reference/h200.csv; --profile the results file's
-profile.csv sibling when it exists; --accuracy its -accuracy.csv sibling,
and when that does not exist yet the accuracy block says how to measure it.
--check writes nothing and exits 1 when a page differs from what it would
write.

Exit codes: 0 done (or up to date), 1 --check found a page out of date,
2 bad input (one line on stderr).
"""
import argparse
import math
import os
import re
import sys
import types

import accuracy_data  # the accuracy CSV's rows
import chart_zh  # a Chinese page shows a chart's Chinese twin
import accuracy_docs  # ACCURACY.md's block
import variance_chart  # ACCURACY.md's variance block reads its CSV
import compare  # rows per step and n, speed-ups, counters
import diagrams  # which pictures a step has, their alt text
import patterns  # the access-pattern model behind the pictures
import rows_docs  # part 2's blocks
import multigpu_docs  # multigpu/'s Measured table
import rows_targets  # part 2's targets table
import cli  # how main() ends
import schema  # the CSV files, step names and the reference card
import stale  # rows measured on an earlier version of the code
import steps  # the step a step's diff block compares with, as make diff
import zh_strings  # the Chinese forms, docs/glossary.zh-CN.md
from compare import TABLE_SIZES
import generated  # the diff blocks
from generated import fill_blocks, has_block, markers, read_text, write_if_changed
from rows_docs import NONE_MARK  # an empty cell, the same in every table
from schema import power_label

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULT_RESULTS = os.path.join("plots", "reference", schema.REFERENCE_GPU + ".csv")
EXIT_STALE, EXIT_INPUT = cli.EXIT_FAILED, cli.EXIT_USAGE   # blocks out of date; bad input

# A page in English is NAME.md; its Chinese edition, NAME.zh-CN.md beside it.
LANGS = ((".md", "en"), (".zh-CN.md", "zh-CN"))

# Quoted from the seed articles (shared/seeds), NOT measured here:
# V100, their own harness, 2^25 floats, single timings.
SEED_V100_US = (("v0", 788.29), ("v1", 502.43), ("v2", 375.90),
                ("v3", 205.89), ("v4", 176.86), ("final", 162.21))

# Every string the blocks contain, registered here with an empty value: the
# English is the key, so the English README reads the code's own text, and
# its Chinese form lives only in tools/zh_strings.py, which fills the values
# below (zh_strings.apply). A string missing here fails tests/test_docs.py; a
# Chinese value written here fails tests/test_editions.py.
STRINGS = {
    # README.md: results
    "Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for {arch}, "
    "peak {peak} GB/s from the device attributes) at revision {rev}; {flush}. Every program "
    "ran in {rounds} rounds, each in its own process, in an order shuffled per round; a "
    "round's time is the median of {reps} repetitions. A table gives the median round and, "
    "in brackets, the fastest and slowest; a ratio is called a win or a loss only where the "
    "rounds of the two programs do not overlap, otherwise a tie. Source: {source}.": "",
    "Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for {arch}, "
    "peak {peak} GB/s from the device attributes) at revision {rev}; {flush}; one run of each "
    "program, the median of {reps} repetitions; a ratio is called a win or a loss only where "
    "the two runs' ranges do not overlap, otherwise a tie. Source: {source}.": "",
    "L2 flushed before every repetition": "",
    "L2 not flushed (warm cache)": "",
    "L2 flushed in some runs only (see the flush column)": "",
    "**n = {power}** ({n} floats, {size})": "",
    "| step | what changed | median us | rounds us | GB/s | % of peak | vs previous | vs step 0 "
    "| vs CUB |": "",
    "{ratio} {verdict}": "",
    "win": "", "tie": "", "loss": "",
    "The seed articles (Chinese, named under Sources below; V100, their own harness, "
    "2^25 floats) report {first} us ({first_name}), {middle} and {last} us for their final "
    "version.": "",
    "{us} ({name})": "",
    ", ": "",
    "| seed version | V100 us (quoted, not measured here) | speed-up over v0 |": "",
    # stepN_*/README.md: measured
    "| n | median us | rounds us | GB/s | % of peak | vs previous step | vs step 0 | vs CUB |": "",
    "Measured on {gpu} (driver {driver}, CUDA {cuda}) at revision {rev}, from {source}.": "",
    "Not measured yet: {source} has no usable rows for {step} at n = 2^25 or 2^28. "
    "`make bench` measures it beside the other steps and draws its charts in plots/results/.": "",
    # stepN_*/README.md: counters
    "| counter | previous ({prev}) | this step ({step}) | change |": "",
    "Nsight Compute, {gpu} at revision {rev}, from {source}.": "",
    "No counters for {step} in {source} yet.": "",
    "No Nsight Compute counters yet: run `make profile-all`, then `make docs`.": "",
    "{label} ({unit})": "",
    "GPU not recorded": "",
    "not recorded": "",
    "warp instructions executed": "",
    "threads active per warp instruction": "",
    "thread instructions with the predicate on": "",
    "shared-memory bank conflicts, loads": "",
    "shared-memory bank conflicts, stores": "",
    "DRAM throughput, % of peak": "",
    "kernel duration": "",
    "achieved occupancy, % of peak warps": "",
    "lanes with the predicate on per warp instruction": "",
    # stepN_*/README.md: vs-cub, determinism, tried (step 9's)
    "| n | {prev} us | {step} us | CUB us | {step} vs {prev} | {step} vs CUB |": "",
    "Median round of {rounds} (each round the median of {reps} repetitions), L2 flushed, on "
    "{gpu}; a ratio above 1 means {step} is faster. Against CUB: {wins} wins, {ties} ties and "
    "{losses} losses over {sizes} sizes; {worst} at its slowest (n = {worst_n}); geometric "
    "mean {mean} over the powers of two from n = 2^12 to 2^22. From {source}.": "",
    "Not measured yet: {source} has no rows for {step} and CUB at the same sizes.": "",
    "| program | n | runs | different sums | median us |": "",
    "From {source}, on {gpu} at revision {rev} (`make determinism`).": "",
    "Not measured yet: `make determinism OUT_DIR=plots/reference`, then `make docs`.": "",
    "| variant | {sizes} |": "",
    "Median us per n, L2 flushed, from {source} (`make tune`, on {gpu} at revision {rev}); "
    "a variant is this step with one `#define` changed.": "",
    "Not measured yet: {source} does not exist.": "",
    "{step} as shipped": "",
    # stepN_*/README.md: diff
    "Step 0 is the starting point; there is no previous step.": "",
    "{step} is the first step; there is no previous step.": "",
    "There is no {step}/reduce.cu to compare yet.": "",
    "{this}/reduce.cu is identical to {prev}/reduce.cu.": "",
    # stepN_*/README.md: figures (alt text: tools/diagrams.py ALT_TEXT)
    "No access-pattern pictures for {step} yet: tools/patterns.py has no model of it.": "",
    diagrams.ALT_TEXT["lanes"]: "",
    diagrams.ALT_TEXT["banks"]: "",
    diagrams.ALT_TEXT["banks-conflict"]: "",
    diagrams.ALT_TEXT["shuffle"]: "",
    diagrams.ALT_TEXT["loads"]: "",
    diagrams.ALT_TEXT["loads-vector"]: "",
    diagrams.ALT_TEXT["ticket"]: "",
}

STRINGS.update(rows_docs.STRINGS)
STRINGS.update(rows_targets.STRINGS)
STRINGS.update(multigpu_docs.STRINGS)
STRINGS.update({stale.PAGE_NOTE: "", stale.Marks.NOTE: "", "; ": ""})
STRINGS.update({words: "" for words in stale.PART_WORDS.values()})
STRINGS.update({diagrams.ROW_ALT: "", diagrams.ROW_NO_PICTURE: "", diagrams.ROW_SPLIT_ALT: "",
                diagrams.ROW_PARAMS_ALT: ""})
# The alt text of the results charts: the English pages name the chart's kind.
CHART_ALT = {kind: kind for kind in ("progression", "sweep", "vs-cub", "profile")}
STRINGS.update({alt: "" for alt in CHART_ALT.values()})
STRINGS.update({
    "Not computed yet: run `make variance OUT_DIR={out}` (no GPU needed).": "",
    "| rows' mean (σ = 1) | one pass: E[x²] − E[x]² | two passes | Welford | rows whose "
    "one-pass variance is ≤ 0 |": "",
    "The largest relative error of a row's variance, over 1024 rows of 1024 floats with "
    "variance 1 at each mean, computed by `make variance` (tools/variance.c) in float32 "
    "on the CPU, in the warp-per-row kernel's order and with its fused multiply-adds: "
    "IEEE float32 rounds these operations the same on the GPU. Source: {source}.": "",
    "The largest relative error of a row's variance against the rows' mean, three ways": "",
})
zh_strings.apply(STRINGS)   # the Chinese forms: tools/zh_strings.py

FLUSH_TEXT = {"all": "L2 flushed before every repetition",
              "none": "L2 not flushed (warm cache)",
              "some": "L2 flushed in some runs only (see the flush column)"}


class DocsError(Exception):
    """Bad input: one line on stderr, exit status 2."""


def tr(text, lang, **values):
    """The text in `lang`, with its {placeholders} filled."""
    if lang != "en":
        text = STRINGS[text]
    return text.format(**values) if values else text


# ----------------------------------------------------------------------------
# Number formats (the same in every language)
# ----------------------------------------------------------------------------

def fmt_ratio(value, digits=2):
    return NONE_MARK if value is None else f"{value:.{digits}f}x"


def fmt_count(value):
    """Counter values: integers with separators, fractions to 3 digits."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def md_cell(text):
    return text.replace("|", "\\|")  # a literal "|" would split the table cell


# ----------------------------------------------------------------------------
# What the blocks are made from
# ----------------------------------------------------------------------------

class Sources:
    """The inputs of every block: the repository, the results, the counters,
    the accuracy rows and the access-pattern models."""

    def __init__(self, root, results_path, profile_path, accuracy_path=None):
        self.root = root
        # The code hash of every program now: rows with another measured an
        # earlier version, and every block that shows one says so.
        self.hashes = stale.Hashes(root)
        self.m = compare.Measurements.load(results_path, self.hashes.is_stale)
        # [(file, {label: revisions})]: the stale rows of every file beside the
        # results, for each page's stale block.
        self.stale_found = stale.scan(root, self.hashes, os.path.dirname(os.path.abspath(
            results_path)))
        self.m.require_table_sizes()
        self.counters = compare.Counters.load(profile_path) if profile_path else None
        # Not measured yet is a state the accuracy block describes, not an error.
        self.accuracy_path = accuracy_path or default_accuracy(results_path)
        self.accuracy_rows = (accuracy_data.read_rows(self.accuracy_path)
                              if os.path.isfile(self.accuracy_path) else [])
        self.steps = schema.step_dirs(root, has=("reduce.cu",) + tuple(
            "README" + suffix for suffix, _ in LANGS))
        self.models = {}
        self.linked = []    # every chart and picture a block links, for missing_charts()
        rows_path = sibling(results_path, "-rows.csv")
        self.rows = (rows_docs.RowSources(root, rows_path, sibling(results_path, "-rows-profile.csv"),
                                          self.hashes)
                     if os.path.isfile(rows_path) else None)
        rows_root = os.path.join(root, "rows")
        self.row_steps = (["rows/" + d for d in schema.step_dirs(rows_root, has=("rows.cu",))]
                          if os.path.isdir(rows_root) else [])

    def model(self, step):
        """The step's access-pattern model, or None when tools/patterns.py has none."""
        if step not in self.models:
            self.models[step] = (patterns.build(self.root, step)
                                 if step in patterns.MODELS else None)
        return self.models[step]

    def path(self, path):
        return compare.repo_path(path, self.root)

    def source_file(self, step):
        return os.path.join(self.root, schema.program_dir(step), "reduce.cu")

    def what_changed(self, step):
        """Line 1 of the program's reduce.cu without '// ' (common/README.md)."""
        path = self.source_file(step)
        if not os.path.isfile(path):
            return ""
        with open(path, encoding="utf-8") as handle:
            first = handle.readline().strip()
        return first[2:].strip() if first.startswith("//") else ""


# ----------------------------------------------------------------------------
# README.md: results
# ----------------------------------------------------------------------------

def provenance(src, lang, m=None):
    m = m or src.m
    peaks = compare.distinct(f"{row.peak_gbps:.0f}" for row in m.rows.values()
                             if row.peak_gbps > 0)
    values = dict(gpu=m.describe("gpu"), driver=m.describe("driver"), cuda=m.describe("cuda"),
                  toolchain=m.describe("toolchain") or tr("not recorded", lang),
                  arch=m.describe("arch") or tr("not recorded", lang), peak=peaks,
                  rev=m.describe("git_rev"), flush=tr(FLUSH_TEXT[flush_state(m)], lang),
                  rounds=m.round_count, reps=reps_text(m), source=src.path(m.path))
    if m.round_count == 1:
        return tr("Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for "
                  "{arch}, peak {peak} GB/s from the device attributes) at revision {rev}; "
                  "{flush}; one run of each program, the median of {reps} repetitions; a ratio "
                  "is called a win or a loss only where the two runs' ranges do not overlap, "
                  "otherwise a tie. Source: {source}.", lang, **values)
    return tr("Measured on {gpu} (driver {driver}, CUDA {cuda}, built with {toolchain} for "
              "{arch}, peak {peak} GB/s from the device attributes) at revision {rev}; "
              "{flush}. Every program ran in {rounds} rounds, each in its own process, in an "
              "order shuffled per round; a round's time is the median of {reps} repetitions. "
              "A table gives the median round and, in brackets, the fastest and slowest; a "
              "ratio is called a win or a loss only where the rounds of the two programs do "
              "not overlap, otherwise a tie. Source: {source}.", lang, **values)


def flush_state(m):
    flushes = {row.flush for row in m.rows.values()}
    return "all" if flushes == {1} else "none" if flushes == {0} else "some"


def reps_text(m):
    reps = sorted({row.reps for row in m.rows.values()})
    return str(reps[0]) if len(reps) == 1 else f"{reps[0]}–{reps[-1]}"


def fmt_spread(spread, digits=1):
    """'[35.1–35.4]': the fastest and slowest round."""
    return NONE_MARK if not spread else f"[{spread[0]:.{digits}f}–{spread[1]:.{digits}f}]"


def fmt_verdict(ratio, verdict, lang):
    """'1.06x win': the ratio and what the rounds say of it."""
    if ratio is None:
        return NONE_MARK
    return tr("{ratio} {verdict}", lang, ratio=fmt_ratio(ratio), verdict=tr(verdict, lang))


def size_heading(n, lang):
    mib = 4 * n / (1 << 20)
    size = f"{mib / 1024:g} GiB" if mib >= 1024 else f"{mib:g} MiB"
    return tr("**n = {power}** ({n} floats, {size})", lang, power=power_label(n),
              n=f"{n:,}", size=size)


def step_cells(m, step, n, lang, marks):
    """median, rounds, GB/s, % of peak, vs previous, vs step 0, vs CUB: every
    ratio within step's current run; a cell from a stale row is marked."""
    view = m.within(step)
    row, ratios = view.get(step, n), m.speedups(step, n)
    prev = m.previous(step, n)
    vs_prev = (marks.cell(fmt_verdict(ratios.vs_previous, m.verdict_vs(step, prev.step, n), lang),
                          prev, owner=step)
               if prev else NONE_MARK)
    vs_cub = (fmt_verdict(ratios.vs_cub, m.verdict_vs(step, schema.CUB, n), lang)
              if step != schema.CUB and ratios.vs_cub is not None else fmt_ratio(ratios.vs_cub))
    base = view.step0(n)
    return (f"{marks.cell(f'{row.median_us:.1f}', row)} | {fmt_spread(m.spread(step, n))} | "
            f"{row.gbps:.0f} | {100 * row.gbps / row.peak_gbps:.1f} | {vs_prev} | "
            f"{marks.cell(fmt_ratio(ratios.vs_step0), base, owner=step) if ratios.vs_step0 else NONE_MARK} | "
            f"{marks.cell(vs_cub, view.get(schema.CUB, n), owner=step) if step != schema.CUB else vs_cub}")


def results_table(src, n, lang, marks):
    lines = [tr("| step | what changed | median us | rounds us | GB/s | % of peak | vs previous "
                "| vs step 0 | vs CUB |", lang), "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for step in src.m.steps_at(n):
        lines.append(f"| {step} | {md_cell(zh_strings.summary(src.what_changed(step), lang))} | "
                     f"{step_cells(src.m, step, n, lang, marks)} |")
    return lines


def seed_lines(lang):
    (first_name, first), *middle, (_, last) = SEED_V100_US
    sentence = tr("The seed articles (Chinese, named under Sources below; V100, their own "
                  "harness, 2^25 floats) report {first} us ({first_name}), {middle} and {last} "
                  "us for their final version.", lang, first=f"{first:.2f}", first_name=first_name,
                  middle=tr(", ", lang).join(tr("{us} ({name})", lang, us=f"{us:.2f}", name=name)
                                             for name, us in middle),
                  last=f"{last:.2f}")
    table = [tr("| seed version | V100 us (quoted, not measured here) | speed-up over v0 |",
                lang), "|---|--:|--:|"]
    table += [f"| {name} | {us:.2f} | {fmt_ratio(first / us)} |" for name, us in SEED_V100_US]
    return [sentence, "", *table]


def results_block(src, folder, lang):
    parts = [provenance(src, lang)]
    for kind in compare.chart_kinds(src.m, src.counters):
        chart = chart_zh.shown(compare.chart_path(src.m, kind), lang)
        src.linked.append(chart)
        link = os.path.relpath(chart, folder).replace(os.sep, "/")
        parts += ["", f"![{tr(CHART_ALT.get(kind, kind), lang)}]({link})"]
    marks = stale.Marks(src.m.stale_rows)
    for n in TABLE_SIZES:
        if src.m.steps_at(n):
            parts += ["", size_heading(n, lang), "", *results_table(src, n, lang, marks)]
    parts += marks.note(lambda text, **values: tr(text, lang, **values))
    return "\n".join(parts + [""] + seed_lines(lang))


# ----------------------------------------------------------------------------
# stepN_*/README.md: measured, counters, diff
# ----------------------------------------------------------------------------

def measured_block(src, step, lang):
    m = src.m
    sizes = [n for n in TABLE_SIZES if m.get(step, n)]
    if not sizes:
        return tr("Not measured yet: {source} has no usable rows for {step} at n = 2^25 or "
                  "2^28. `make bench` measures it beside the other steps and draws its charts "
                  "in plots/results/.", lang, source=src.path(m.path), step=step)
    lines = [tr("| n | median us | rounds us | GB/s | % of peak | vs previous step | vs step 0 "
                "| vs CUB |", lang), "|---|--:|--:|--:|--:|--:|--:|--:|"]
    marks = stale.Marks(m.stale_rows)
    for n in sizes:
        lines.append(f"| {power_label(n)} | {step_cells(m, step, n, lang, marks)} |")
    view = m.within(step)
    lines += ["", tr("Measured on {gpu} (driver {driver}, CUDA {cuda}) at revision {rev}, "
                     "from {source}.", lang, gpu=view.gpu, driver=view.describe("driver"),
                     cuda=view.describe("cuda"),
                     rev=compare.distinct(view.get(step, n).git_rev for n in sizes),
                     source=src.path(m.path))]
    lines += marks.note(lambda text, **values: tr(text, lang, **values))
    return "\n".join(lines)


def counter_label(metric, unit, lang):
    english = compare.COUNTER_LABELS[metric]
    label = tr(english, lang)
    # The unit only where the English words do not already say it ("instructions").
    return tr("{label} ({unit})", lang, label=label, unit=unit) \
        if unit and unit not in english else label


def counter_row(label, before, now, fmt):
    ratio = now / before if before else None
    return (f"| {label} | {NONE_MARK if before is None else fmt(before)} | {fmt(now)} | "
            f"{fmt_ratio(ratio)} |")


def counters_block(src, step, lang):
    counters = src.counters
    if counters is None:
        return tr("No Nsight Compute counters yet: run `make profile-all`, then `make docs`.",
                  lang)
    source = src.path(counters.path)
    if step not in counters.steps:
        return tr("No counters for {step} in {source} yet.", lang, step=step, source=source)
    prev = counters.previous(step)
    marks = stale.Marks(stale.rows_stale(src.hashes), counters.path)
    lines = [tr("| counter | previous ({prev}) | this step ({step}) | change |", lang,
                prev=marks.cell(prev, counters.version(prev)) if prev else NONE_MARK,
                step=marks.cell(step, counters.version(step))), "|---|--:|--:|--:|"]
    for metric in counters.metrics_present():
        now = counters.value(step, metric)
        if now is not None:
            label = counter_label(metric, counters.units.get(metric), lang)
            lines.append(counter_row(f"{label} `{metric}`", counters.value(prev, metric), now,
                                     fmt_count))
    lanes = counters.lanes_on(step)
    if lanes is not None:
        formula = " / ".join(f"`{metric}`" for metric in compare.LANES_ON_PARTS)
        lines.append(counter_row(f"{tr(compare.LANES_ON, lang)} {formula}",
                                 counters.lanes_on(prev) if prev else None, lanes,
                                 lambda v: f"{v:.3g}"))
    lines += ["", tr("Nsight Compute, {gpu} at revision {rev}, from {source}.", lang,
                     gpu=counters.gpu or tr("GPU not recorded", lang),
                     rev=counters.git_rev or tr("not recorded", lang), source=source)]
    lines += marks.note(lambda text, **values: tr(text, lang, **values))
    return "\n".join(lines)


def diff_block(src, step, lang):
    this_src = src.source_file(step)
    if not os.path.isfile(this_src):
        return tr("There is no {step}/reduce.cu to compare yet.", lang, step=step)
    # The step make diff shows (tools/steps.py: the step a make new step
    # started from, else the nearest lower one).
    prev = steps.diff_base(src.root, step, source=True)
    if prev is None:
        if schema.step_number(step) == 0:
            return tr("Step 0 is the starting point; there is no previous step.", lang)
        return tr("{step} is the first step; there is no previous step.", lang, step=step)
    block = generated.fenced_diff(src.source_file(prev), this_src, f"{prev}/reduce.cu",
                                  f"{step}/reduce.cu")
    if block is None:
        return tr("{this}/reduce.cu is identical to {prev}/reduce.cu.", lang, this=step,
                  prev=prev)
    return block


def figures_block(src, step, lang):
    built = src.model(step)
    if built is None:
        return tr("No access-pattern pictures for {step} yet: tools/patterns.py has no "
                  "model of it.", lang, step=step)
    out_dir = os.path.join(src.root, diagrams.FIGURES_DIR)
    src.linked += [os.path.join(out_dir, diagrams.figure_name(step, kind))
                   for kind in diagrams.figure_kinds(built)]
    return diagrams.figures_block(built, os.path.join(src.root, step), out_dir,
                                  translate=lambda template, **values: tr(template, lang,
                                                                          **values))


# ----------------------------------------------------------------------------
# ACCURACY.md: accuracy
# ----------------------------------------------------------------------------

def accuracy_block(src, folder, lang):
    chart = chart_zh.shown(sibling(src.accuracy_path, ".png"), lang)  # accuracy_chart.py draws it
    if accuracy_data.errors(src.accuracy_rows):
        src.linked.append(chart)
    source = os.path.relpath(src.accuracy_path, folder).replace(os.sep, "/")
    block = accuracy_docs.accuracy_block(src.accuracy_rows, lang, source,
                                         chart=os.path.relpath(chart, folder).replace(os.sep, "/"))
    marks = stale.Marks(stale.rows_stale(src.hashes), src.accuracy_path)
    for record in src.accuracy_rows:   # untyped rows: the three columns the marks read
        marks.cell("", schema_row(record))
    return "\n".join([block] + marks.note(lambda text, **values: tr(text, lang, **values)))


def schema_row(record):
    """A row of an untyped CSV as what stale.Marks reads (step, code_hash, git_rev)."""
    return types.SimpleNamespace(**{c: record.get(c, "") for c in ("step", "code_hash",
                                                                   "git_rev")})


VARIANCE_SHIFTS = (0, 10, 100, 1000, 2000, 3000, 10000, 100000)   # the table's rows


def variance_block(src, folder, lang):
    """ACCURACY.md's variance table, from tools/variance.c's CSV (make variance)."""
    path = os.path.join(os.path.dirname(src.accuracy_path), "variance.csv")
    source = os.path.relpath(path, folder).replace(os.sep, "/")
    if not os.path.isfile(path):
        return tr("Not computed yet: run `make variance OUT_DIR={out}` (no GPU needed).", lang,
                  out=os.path.relpath(os.path.dirname(path), src.root))
    try:
        rows = variance_chart.read_rows(path)
    except variance_chart.ChartError as err:
        raise DocsError(str(err))
    found = {(method, shift): (err, bad) for method, points in rows.items()
             for shift, err, bad in points}
    lines = [tr("| rows' mean (σ = 1) | one pass: E[x²] − E[x]² | two passes | Welford | rows whose "
                "one-pass variance is ≤ 0 |", lang), "|--:|--:|--:|--:|--:|"]
    for shift in VARIANCE_SHIFTS:
        if ("one-pass", shift) not in found:
            continue
        cells = [f"{found[(m, shift)][0]:.1e}" if (m, shift) in found else NONE_MARK
                 for m in ("one-pass", "two-pass", "welford")]
        rows_count = found[("one-pass", shift)][1]
        lines.append(f"| {shift:,} | " + " | ".join(cells) + f" | {rows_count} |")
    chart = chart_zh.shown(os.path.splitext(path)[0] + ".png", lang)
    src.linked.append(chart)
    rel_chart = os.path.relpath(chart, folder).replace(os.sep, "/")
    return "\n".join(lines + ["", tr(
        "The largest relative error of a row's variance, over 1024 rows of 1024 floats with "
        "variance 1 at each mean, computed by `make variance` (tools/variance.c) in float32 "
        "on the CPU, in the warp-per-row kernel's order and with its fused multiply-adds: "
        "IEEE float32 rounds these operations the same on the GPU. Source: {source}.", lang,
        source=source), "", "![" + tr("The largest relative error of a row's variance against the rows' mean, "
                   "three ways", lang) + f"]({rel_chart})"])


# ----------------------------------------------------------------------------
# step9_singlepass/README.md: vs-cub, determinism, tried
# ----------------------------------------------------------------------------

GEOMEAN_SIZES = tuple(1 << k for k in range(12, 23))   # the launch-bound middle


def vs_cub_block(src, step, lang):
    """This step against the previous one and CUB at every size both have,
    in this step's current run."""
    m = src.m.within(step)
    sizes = [n for n in m.sizes_of(step) if m.get(schema.CUB, n) and m.previous(step, n)]
    if not sizes:
        return tr("Not measured yet: {source} has no rows for {step} and CUB at the same "
                  "sizes.", lang, source=src.path(m.path), step=step)
    prev = m.previous(step, sizes[0]).step
    lines = [tr("| n | {prev} us | {step} us | CUB us | {step} vs {prev} | {step} vs CUB |",
                lang, prev=prev, step=step), "|---|--:|--:|--:|--:|--:|"]
    marks = stale.Marks(m.stale_rows)
    vs_cub, verdicts = {}, []
    for n in sizes:
        row, before, cub = m.get(step, n), m.previous(step, n), m.get(schema.CUB, n)
        vs_cub[n] = cub.median_us / row.median_us
        verdicts.append(m.verdict_vs(step, schema.CUB, n))
        lines.append(f"| {power_label(n)} | {marks.cell(f'{before.median_us:.2f}', before, owner=step)} | "
                     f"{marks.cell(f'{row.median_us:.2f}', row)} | "
                     f"{marks.cell(f'{cub.median_us:.2f}', cub, owner=step)} | "
                     f"{fmt_verdict(before.median_us / row.median_us, m.verdict_vs(step, before.step, n), lang)} | "
                     f"{fmt_verdict(vs_cub[n], verdicts[-1], lang)} |")
    worst = min(vs_cub, key=vs_cub.get)
    middle = [vs_cub[n] for n in GEOMEAN_SIZES if n in vs_cub]
    mean = fmt_ratio(math.exp(sum(map(math.log, middle)) / len(middle))) if middle else NONE_MARK
    lines += ["", tr("Median round of {rounds} (each round the median of {reps} repetitions), "
                     "L2 flushed, on {gpu}; a ratio above 1 means {step} is faster. Against "
                     "CUB: {wins} wins, {ties} ties and {losses} losses over {sizes} sizes; "
                     "{worst} at its slowest (n = {worst_n}); geometric mean {mean} over the "
                     "powers of two from n = 2^12 to 2^22. From {source}.", lang,
                     rounds=m.round_count, reps=m.reps_text(), gpu=m.gpu, step=step,
                     wins=verdicts.count(compare.WIN), ties=verdicts.count(compare.TIE),
                     losses=verdicts.count(compare.LOSS), sizes=len(sizes),
                     worst=fmt_ratio(vs_cub[worst]), worst_n=power_label(worst), mean=mean,
                     source=src.path(m.path))]
    lines += marks.note(lambda text, **values: tr(text, lang, **values))
    return "\n".join(lines)


def extra_rows(path):
    """Every row of a side file (determinism, tuning), failed ones too: a sum
    that moved is what the determinism table is about."""
    return schema.read_results(path) if os.path.isfile(path) else []


def determinism_block(src, step, lang):
    path = sibling(src.m.path, "-determinism.csv")
    rows = extra_rows(path)
    if not rows:
        return tr("Not measured yet: `make determinism OUT_DIR=plots/reference`, then "
                  "`make docs`.", lang)
    lines = [tr("| program | n | runs | different sums | median us |", lang),
             "|---|--:|--:|--:|--:|"]
    marks = stale.Marks(stale.rows_stale(src.hashes), path)
    for row in rows:
        lines.append(f"| {marks.cell(row.step, row)} | {power_label(row.n)} | {row.reps} | "
                     f"{row.distinct} | {row.median_us:.1f} |")
    lines += ["", tr("From {source}, on {gpu} at revision {rev} (`make determinism`).", lang,
                     source=src.path(path), gpu=compare.distinct(r.gpu for r in rows),
                     rev=compare.distinct(r.git_rev for r in rows))]
    lines += marks.note(lambda text, **values: tr(text, lang, **values))
    return "\n".join(lines)


TRIED_SIZES = tuple(1 << k for k in (10, 12, 13, 14, 16, 20, 24, 28))


def tried_block(src, step, lang):
    """The knob sweep of this step (tools/tune.sh): <slug>-tune-stepN.csv."""
    prefix = step.split("_", 1)[0]
    path = sibling(src.m.path, f"-tune-{prefix}.csv")
    rows = [r for r in extra_rows(path) if r.passed and r.timed]
    if not rows:
        return tr("Not measured yet: {source} does not exist.", lang, source=src.path(path))
    table, latest = {}, {}
    for row in rows:   # a later row replaces an earlier one, as everywhere
        table.setdefault(row.step, {})[row.n] = row.median_us
        latest[row.step] = row
    marks = stale.Marks(stale.rows_stale(src.hashes), path)
    sizes = [n for n in TRIED_SIZES if any(n in by_n for by_n in table.values())]
    lines = [tr("| variant | {sizes} |", lang, sizes=" | ".join(power_label(n) for n in sizes)),
             "|---|" + "--:|" * len(sizes)]
    for name, by_n in table.items():
        if name.startswith(step + "-"):
            label = name[len(step) + 1:].replace("-", " ")
        elif name == step:
            label = tr("{step} as shipped", lang, step=step)
        else:
            label = name
        cells = " | ".join(f"{by_n[n]:.2f}" if n in by_n else NONE_MARK for n in sizes)
        lines.append(f"| {marks.cell(label, latest[name])} | {cells} |")
    lines += ["", tr("Median us per n, L2 flushed, from {source} (`make tune`, on {gpu} at "
                     "revision {rev}); a variant is this step with one `#define` changed.",
                     lang, source=src.path(path), gpu=compare.distinct(r.gpu for r in rows),
                     rev=compare.distinct(r.git_rev for r in rows))]
    lines += marks.note(lambda text, **values: tr(text, lang, **values))
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Every page: stale (what its hand-written figures may quote from rows that
# measured an earlier version of the code)
# ----------------------------------------------------------------------------

def file_kind(path):
    """part1, rows, accuracy or multigpu: which pages a committed file feeds."""
    name = os.path.basename(path)
    if "-rows" in name:
        return "rows"
    if "-multigpu" in name or "-allreduce" in name:
        return "multigpu"
    if "-accuracy" in name or "-determinism" in name:
        return "accuracy"
    return "part1"


def stale_note(src, lang, kinds=None, step=None):
    """A page's stale block: the stale rows of the files of kinds (None: all)
    and, on a step's page, of that step (and its tuning variants)."""
    keep_file = (lambda path: True) if kinds is None else (lambda path: file_kind(path) in kinds)
    keep_label = ((lambda label: True) if step is None else
                  (lambda label: label == step or label.startswith(step + "-")))
    return stale.page_note(src.stale_found, lambda text, **values: tr(text, lang, **values),
                           keep_file, keep_label, src.root)


def top_stale_block(src, folder, lang):
    return stale_note(src, lang)


def accuracy_stale_block(src, folder, lang):
    return stale_note(src, lang, kinds=("accuracy",))


def step_stale_block(src, step, lang):
    return stale_note(src, lang, kinds=("part1", "accuracy"), step=step)


# block name -> (src, folder or step, lang) -> markdown
TOP_BLOCKS = {"stale": top_stale_block, "results": results_block}
ACCURACY_BLOCKS = {"stale": accuracy_stale_block, "accuracy": accuracy_block,
                   "variance": variance_block}
STEP_BLOCKS = {"stale": step_stale_block, "measured": measured_block,
               "counters": counters_block, "diff": diff_block,
               "figures": figures_block, "vs-cub": vs_cub_block,
               "determinism": determinism_block, "tried": tried_block}
# The pages at the top of the repository and the blocks each may hold; a
# stepN_*/README holds STEP_BLOCKS.
TOP_PAGES = {"README": TOP_BLOCKS, "ACCURACY": ACCURACY_BLOCKS}


# ----------------------------------------------------------------------------
# The whole tree
# ----------------------------------------------------------------------------

def pages(folder, name="README"):
    """[(path, lang)] of the languages of a page present in a folder."""
    found = [(os.path.join(folder, name + suffix), lang) for suffix, lang in LANGS]
    return [(path, lang) for path, lang in found if os.path.isfile(path)]


def regenerate(src):
    """[(path, old text, new text)] for every page the blocks touch."""
    top = os.path.join(src.root, "README.md")
    if not os.path.isfile(top) or not has_block(read_text(top), "results"):
        begin, end = markers("results")
        raise DocsError(f"{top} has no '{begin}' ... '{end}' lines")
    changes = []
    for page, blocks in TOP_PAGES.items():
        for path, lang in pages(src.root, page):
            old = read_text(path)
            new = fill_blocks(old, [(name, lambda f=f, lang=lang: f(src, src.root, lang))
                                    for name, f in blocks.items()])
            changes.append((path, old, new))
    for step in src.steps:
        for path, lang in pages(os.path.join(src.root, step)):
            old = read_text(path)
            new = fill_blocks(old, [(name, lambda f=f, lang=lang: f(src, step, lang))
                                    for name, f in STEP_BLOCKS.items()])
            changes.append((path, old, new))
    if src.rows is not None:
        changes += rows_changes(src)
    for path, lang in pages(os.path.join(src.root, "multigpu")):
        old = read_text(path)
        changes.append((path, old, fill_blocks(old, [
            ("stale", lambda lang=lang: stale_note(src, lang, kinds=("multigpu",))),
            ("measured", lambda lang=lang: multigpu_docs.measured_block(
                os.path.dirname(os.path.abspath(src.m.path)), src.hashes,
                lambda text, **values: tr(text, lang, **values), src.path))])))
    return changes


def row_figures(src, step, translate):
    out_dir = os.path.join(src.root, diagrams.FIGURES_DIR)
    if step in diagrams.ROW_PICTURES or step in diagrams.ROW_SPLIT or step in diagrams.ROW_PARAMS:
        src.linked.append(diagrams.row_figure_path(step, out_dir))
    if step == diagrams.ROW_BULK_STEP:   # drawn in both languages
        path = diagrams.row_figure_path(step, out_dir)
        src.linked += [path, path.replace(".png", ".zh-CN.png")]
    return diagrams.row_figures_block(step, os.path.join(src.root, step), out_dir,
                                      translate=lambda template, **values: translate(template,
                                                                                     **values))


def rows_changes(src):
    """Part 2: rows/README and each rows step's README blocks."""
    rsrc, changes = src.rows, []
    for path, lang in pages(os.path.join(src.root, "rows")):
        for chart in (rows_docs.softmax_chart(rsrc), rows_docs.bf16_chart(rsrc),
                      rows_docs.widths_chart(rsrc)):
            if chart:
                src.linked.append(chart_zh.shown(chart, lang))
        old = read_text(path)
        tr_lang = (lambda text, lang=lang, **values: tr(text, lang, **values))
        summary = (lambda text, lang=lang: zh_strings.summary(text, lang))
        new = fill_blocks(old, [("stale", lambda lang=lang: stale_note(src, lang, kinds=("rows",))),
                                ("rows-results",
                                 lambda tr_lang=tr_lang, summary=summary:
                                 rows_docs.results_block(
                                     rsrc, summary, tr_lang,
                                     chart=lambda path, lang=lang: chart_zh.shown(path, lang))),
                                ("rows-targets",
                                 lambda tr_lang=tr_lang: rows_targets.targets_block(
                                     rsrc.m, rsrc.path(rsrc.m.path), tr_lang)),
                                ("rows-limits",
                                 lambda tr_lang=tr_lang: rows_docs.limits_block(rsrc, tr_lang))])
        changes.append((path, old, new))
    for step in src.row_steps:
        for path, lang in pages(os.path.join(src.root, step)):
            old = read_text(path)
            tr_lang = (lambda text, lang=lang, **values: tr(text, lang, **values))
            blocks = [("stale", lambda lang=lang, step=step: stale_note(src, lang, kinds=("rows",),
                                                                      step=step)),
                      ("measured", lambda t=tr_lang: rows_docs.measured_block(rsrc, step, t)),
                      ("counters", lambda t=tr_lang: rows_docs.counters_block(
                          rsrc, step, t, counter_row, fmt_count)),
                      ("diff", lambda t=tr_lang: rows_docs.diff_block(rsrc, step, t)),
                      ("figures", lambda t=tr_lang, step=step: row_figures(src, step, t))]
            changes.append((path, old, fill_blocks(old, blocks)))
    return changes


def missing_charts(src):
    """The charts and pictures that the regenerated blocks link but nobody drew yet."""
    return [path for path in dict.fromkeys(src.linked) if not os.path.isfile(path)]


def sibling(results, suffix):
    """plots/reference/h200.csv -> plots/reference/h200<suffix>."""
    return (results[:-len(".csv")] if results.endswith(".csv") else results) + suffix


def default_profile(results):
    path = sibling(results, "-profile.csv")
    return path if os.path.isfile(path) else None


def default_accuracy(results):
    return sibling(results, "-accuracy.csv")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"docs: error: {message}", file=sys.stderr)
        sys.exit(EXIT_INPUT)


def parse_args(argv):
    parser = OneLineParser(prog="docs.py", description="Regenerate the generated blocks "
                           "of README.md, ACCURACY.md and every step README (results, "
                           "accuracy, measured, counters, diff, figures).")
    parser.add_argument("--root", default=REPO,
                        help="the repository: README.md, ACCURACY.md and the stepN_*/ "
                             "folders (default: this one)")
    parser.add_argument("--results", metavar="CSV",
                        help=f"results file (default: REPO/{DEFAULT_RESULTS})")
    parser.add_argument("--profile", metavar="CSV",
                        help="Nsight Compute counters (default: the results file's "
                             "-profile.csv sibling, when it exists)")
    parser.add_argument("--accuracy", metavar="CSV",
                        help="accuracy rows from make accuracy (default: the results "
                             "file's -accuracy.csv sibling; until it exists the block "
                             "says how to measure it)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any page is out of date")
    args = parser.parse_args(argv)
    # An empty value (an unset shell variable) is a mistake, not "the default".
    for option in ("results", "profile", "accuracy"):
        if getattr(args, option) == "":
            parser.error(f"--{option} needs a file, got ''")
    args.results = args.results or os.path.join(args.root, DEFAULT_RESULTS)
    if args.profile is None:
        args.profile = default_profile(args.results)
    return args


def check_given(path, option):
    """A file named on the command line must exist (a default may be missing)."""
    if path is not None and not os.path.isfile(path):
        raise DocsError(f"{option} {path}: file not found")


def run(args):
    if not os.path.isdir(args.root):
        raise DocsError(f"not a directory: {args.root}")
    check_given(args.accuracy, "--accuracy")
    src = Sources(args.root, args.results, args.profile, args.accuracy)
    changes = [(path, new) for path, old, new in regenerate(src) if new != old]
    for path in missing_charts(src):
        print(f"docs: note: {src.path(path)} does not exist yet; `make plot` draws it",
              file=sys.stderr)
    if args.check:
        for path, _ in changes:
            print(f"docs: {src.path(path)} is out of date: run `make docs`", file=sys.stderr)
        return EXIT_STALE if changes else 0
    # docs.py writes README blocks only, never a source that a diff block
    # quotes, so one round is enough.
    for path, new in changes:
        if write_if_changed(path, new):
            print(f"docs: wrote {src.path(path)}")
    return 0


def main(argv=None):
    args = parse_args(argv)
    return cli.guarded("docs", lambda: run(args),
                       known=(DocsError, schema.SchemaError, accuracy_data.AccuracyError,
                              patterns.ModelError),
                       code=EXIT_INPUT, internal=EXIT_INPUT, debug="DOCS_DEBUG")


if __name__ == "__main__":
    sys.exit(main())
