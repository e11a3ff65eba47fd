"""The generated block of ACCURACY.md: measured errors, the cost of Kahan,
and which programs agree bit for bit, in English or Chinese.

    accuracy_block(rows, lang, source) -> markdown
        rows: dicts as accuracy_data.read_rows gives ([] when not measured)
        lang: "en" or "zh-CN"; source: the CSV's path as the page shows it

tools/docs.py (`make docs`) is the one writer of the page: it fills the
lines between <!-- BEGIN accuracy --> and <!-- END accuracy --> with this
block, in ACCURACY.md and ACCURACY.zh-CN.md alike. Without a results file
the block says how to measure; it never holds invented numbers. The labels
are TEXT's English and, on the Chinese page, tools/zh_strings.py's forms of it.
"""
import accuracy_data as data
import schema
import zh_strings
from schema import power_label

LANGS = ("en", "zh-CN")

# Every label of the block, in English; its Chinese form lives only in
# tools/zh_strings.py (STRINGS, keyed by this English), which say() looks up.
# Numbers, program names and CUDA identifiers stay as they are. A Chinese
# form written here fails tests/test_editions.py.
TEXT = {
    "chart_alt": "accuracy",
    "not_measured":
        "Not measured yet: on a machine with a GPU, `make accuracy OUT_DIR=plots/reference`"
        " writes `{source}`, then `make docs` fills this block from it.",
    "provenance":
        "Measured on {gpu} ({sms} SMs; driver {driver}, CUDA {cuda}) at revision {rev}. Each"
        " point is one verified run (`--check`){seeds}. Error = |result − reference| / Σ|x|,"
        " where the reference is a double-precision sum; u = 2^-24 ≈ {u}. Source: {source}.",
    "seeds": ", the median of {k} seeds up to n = {n}",
    "table_title": "**Relative error at n = {n}**",
    "program": "program",
    "cpu_seq": "CPU sequential float loop",
    "cpu_kahan": "CPU Kahan float loop",
    "exact": "0 (exact)",
    "bounds":
        "Textbook bounds at n = {n}: sequential (n−1)u = {seq}, pairwise ⌈log2 n⌉u = {pair},"
        " Kahan 2u = {kahan}.",
    "ratio_title":
        "**What each choice does to the error at n = {n}** (ratio of relative errors; below 1"
        " means the first is more accurate)",
    "choice": "choice",
    "ratio_chain": "a chain in each thread: median of steps {chain} ÷ median of steps {tree}",
    "ratio_kahan": "compensating the chain: {kahan} ÷ {base}",
    "ratio_loop": "a loop instead of a tree: CPU sequential ÷ median of steps {tree}",
    "ratio_cpu_kahan": "compensating the loop: CPU Kahan ÷ CPU sequential",
    "cost_title":
        "**What compensation costs** (timed runs, L2 flushed; per n the median of {rounds}"
        " alternating runs of each program, each the median of its repetitions)",
    "cost_header": "| n | {base} us | {kahan} us | {kahan} / {base} |",
    "cost_none": "No timed runs of {base} and {kahan} in the data.",
    "distinct":
        "Different sums one input gave in a run's timed repetitions, each summed once more"
        " untimed: {distinct} (1 = every repetition's sum came back bit for bit).",
    "same_title": "**Same bits?**",
    "repeat_all":
        "Run to run: {count} of {total} programs ran a second time, in a new process, on fill"
        " {fill}, n = {n}, seed {seed}, and returned the same bits.",
    "repeat_differ": " Different bits: {steps}.",
    "groups":
        "Order decides the bits: on fill {fill}, n = {n}, seed {seed} the programs returned"
        " {count} different floats; programs in one group returned the same float:",
}


def label(key, lang):
    """TEXT's English for `key`, or its Chinese form from tools/zh_strings.py."""
    english = TEXT[key]
    return {"en": english, "zh-CN": zh_strings.STRINGS[english]}[lang]


def say(key, lang, **values):
    return label(key, lang).format(**values)


def fmt_err(value, lang):
    return say("exact", lang) if value == 0 else f"{value:.1e}"


def fmt_bound(value):
    return f"{value:.2g}"


def series_label(series, lang):
    if series == data.CPU_SEQ:
        return say("cpu_seq", lang)
    if series == data.CPU_KAHAN:
        return say("cpu_kahan", lang)
    return series


def provenance(rows, source, lang):
    seeds = data.seed_counts(rows)
    several = [n for n, k in seeds.items() if k > 1]
    seed_text = (say("seeds", lang, k=max(seeds.values()), n=power_label(max(several)))
                 if several else "")
    return say("provenance", lang, gpu=data.describe(rows, "gpu"),
               sms=data.describe(rows, "sms"), driver=data.describe(rows, "driver"),
               cuda=data.describe(rows, "cuda"), rev=data.describe(rows, "git_rev"),
               seeds=seed_text, u=f"{data.U:.3g}", source=source)


def table_size(curves):
    """The largest n that every fill reached."""
    sizes = [{n for (_, f), points in curves.items() if f == fill for n, _ in points}
             for fill in data.fills_present(curves)]
    return max(set.intersection(*sizes))


def error_table(curves, n, lang):
    """Every series at n, one column per fill."""
    fills = data.fills_present(curves)
    lines = [say("table_title", lang, n=power_label(n)), "",
             f"| {say('program', lang)} | " + " | ".join(fills) + " |",
             "|---|" + "--:|" * len(fills)]
    for series in data.series_names(curves):
        cells = []
        for fill in fills:
            value = dict(curves.get((series, fill), [])).get(n)
            cells.append("—" if value is None else fmt_err(value, lang))
        if any(c != "—" for c in cells):
            lines.append(f"| {series_label(series, lang)} | " + " | ".join(cells) + " |")
    lines += ["", say("bounds", lang, n=power_label(n),
                      seq=fmt_bound(data.bound_sequential(n)),
                      pair=fmt_bound(data.bound_pairwise(n)),
                      kahan=fmt_bound(data.bound_kahan(n)))]
    return lines


def fmt_ratio(top, bottom):
    """Two or three significant digits, in e-notation only far from 1."""
    if top is None or bottom is None or bottom == 0:
        return "—"
    r = top / bottom
    if r == 0 or r < 0.01 or r >= 10000:
        return f"{r:.1e}x"
    return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"


def step_range(names):
    numbers = [schema.step_number(s) for s in names]
    return f"{min(numbers)}-{max(numbers)}" if len(numbers) > 1 else str(numbers[0])


def ratio_table(curves, n, lang):
    """Each lesson of the page as one ratio per fill, from the measured errors."""
    fills, tree, chain = data.fills_present(curves), data.tree_steps(curves), data.chain_steps(curves)
    med = lambda names, fill: data.median_error(curves, names, fill, n)  # noqa: E731
    at = lambda series, fill: data.error_at(curves, series, fill, n)  # noqa: E731
    rows = []
    if tree and chain:
        rows.append((say("ratio_chain", lang, chain=step_range(chain), tree=step_range(tree)),
                     [fmt_ratio(med(chain, f), med(tree, f)) for f in fills]))
    if any(at(data.COST_KAHAN, f) is not None for f in fills):
        rows.append((say("ratio_kahan", lang, kahan=data.COST_KAHAN, base=data.COST_BASE),
                     [fmt_ratio(at(data.COST_KAHAN, f), at(data.COST_BASE, f)) for f in fills]))
    if tree and any(at(data.CPU_SEQ, f) is not None for f in fills):
        rows.append((say("ratio_loop", lang, tree=step_range(tree)),
                     [fmt_ratio(at(data.CPU_SEQ, f), med(tree, f)) for f in fills]))
        rows.append((say("ratio_cpu_kahan", lang),
                     [fmt_ratio(at(data.CPU_KAHAN, f), at(data.CPU_SEQ, f)) for f in fills]))
    if not rows:
        return []
    lines = [say("ratio_title", lang, n=power_label(n)), "",
             f"| {say('choice', lang)} | " + " | ".join(fills) + " |",
             "|---|" + "--:|" * len(fills)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return lines + [""]


def cost_section(rows, lang):
    costs = data.costs(rows)
    names = dict(base=data.COST_BASE, kahan=data.COST_KAHAN)
    if not costs:
        return [say("cost_none", lang, **names)]
    lines = [say("cost_title", lang, rounds=min(c.rounds for c in costs)), "",
             say("cost_header", lang, **names), "|---|--:|--:|--:|"]
    for c in costs:
        lines.append(f"| {power_label(c.n)} | {c.base_us:.1f} | {c.kahan_us:.1f} | "
                     f"{c.ratio:.3f}x |")
    lines += ["", say("distinct", lang, distinct=" / ".join(sorted({c.distinct for c in costs})))]
    return lines


def same_bits_section(rows, lang):
    lines = [say("same_title", lang), ""]
    for (fill, n, seed), again in sorted(data.run_to_run(rows).items()):
        text = say("repeat_all", lang, count=sum(again.values()), total=len(again), fill=fill,
                   n=power_label(n), seed=seed)
        differ = sorted((s for s, same in again.items() if not same), key=data.series_key)
        if differ:
            text += say("repeat_differ", lang, steps=", ".join(differ))
        groups = data.same_bits_groups(rows, fill, n, seed)
        lines += [f"- {text}",
                  "- " + say("groups", lang, fill=fill, n=power_label(n), seed=seed,
                             count=len(groups)) + " "
                  + " · ".join("{" + ", ".join(g) + "}" for g in groups)]
    return lines


def accuracy_block(rows, lang, source, chart=None):
    """The markdown between the accuracy markers, from the rows of `source`;
    chart: the link to the chart shown (default: the .png beside `source`)."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, not {lang!r}")
    curves = data.errors(rows) if rows else {}
    if not curves:
        return say("not_measured", lang, source=source)
    if chart is None:
        chart = source[:-4] + ".png" if source.endswith(".csv") else source + ".png"
    lines = [provenance(rows, source, lang), "", f"![{say('chart_alt', lang)}]({chart})", ""]
    n = table_size(curves)
    lines += error_table(curves, n, lang) + [""] + ratio_table(curves, n, lang)
    lines += cost_section(rows, lang)
    lines += [""] + same_bits_section(rows, lang)
    return "\n".join(lines).rstrip("\n")
