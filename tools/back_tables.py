#!/usr/bin/env python3
"""Part 3's bench tables (back/README.md and back/README.zh-CN.md) are written
by hand: their rows, ideas and layout are prose, but every timed cell must be
what its run's rows in plots/reference/h200-back.csv say. A table is one whose
header names shapes ("32768 x 1024") and whose rows name programs
(`stepN_name`, `baseline_...`, then PyTorch eager and compiled); its run is the
id in the paragraph after it, else before it. A cell is the median round's
time, the fastest and slowest rounds, then the bar's time over the program's.

  python3 tools/back_tables.py            check: one line per wrong cell, exit 1
  python3 tools/back_tables.py --write    fill every timed cell from its run
  ... --write --run OLD=NEW               first move the tables of run OLD to NEW

After part 3 is measured again: --write --run with the new run id, then read
the prose around the tables again (tests/test_claims.py runs the check).
A bold figure stays bold where it was: which figure the prose stresses is
the prose's to say."""
import argparse
import csv
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "plots", "reference", "h200-back.csv")
PAGES = ("back/README.md", "back/README.zh-CN.md")
RUN_ID = re.compile(r"\b\d{8}T\d{6}Z(?:-[0-9A-Za-z]+)?\b")
SHAPE = re.compile(r"^(\d+) [x×] (\d+)$")
PROGRAM = re.compile(r"`((?:step\d+|baseline)_\w+)`")


def rounds_of(path=RESULTS):
    """{(run, step, rows, cols): [(each round's median_us, op)]} of a results file."""
    rounds = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            key = (r["run"], r["step"], int(r["rows"]), int(r["cols"]))
            rounds.setdefault(key, []).append((float(r["median_us"]), r["op"]))
    return rounds


def cell_text(times, bar, chinese):
    """A table cell as the page writes it: the median round's median, the
    fastest and slowest rounds, then the bar's time over the program's."""
    us, comma = (" 微秒", "，") if chinese else (" us", ", ")

    def fmt(t, unit=True):
        text, u = (f"{t / 1000:.2f}", " ms") if t >= 1000 else (f"{t:.1f}", us)
        return text + (u if unit else "")
    med = sorted(times)[len(times) // 2]
    cell = f"{fmt(med)} [{fmt(min(times), False)}-{fmt(max(times))}]"
    if bar is not None:
        bar_med = sorted(bar)[len(bar) // 2]
        cell += f"{comma}{bar_med / med:.2f}"
    return cell


def paragraph(lines, j, step):
    """The paragraph at or beyond line j, walking by step (+1 or -1)."""
    while 0 <= j < len(lines) and not lines[j].strip():
        j += step
    out = []
    while 0 <= j < len(lines) and lines[j].strip():
        out.append(lines[j])
        j += step
    return " ".join(out)


def table_cells(text, rounds, chinese):
    """Every timed cell of a page's bench tables, in order, as (line index,
    column, the cell as written, the cell its run gives or None, what is
    wrong or None); the number of cells checked is the count of those with
    a cell to give."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("|"):
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].startswith("|"):
            i += 1
        table = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[start:i]]
        shapes = {k: tuple(map(int, m.groups())) for k, h in enumerate(table[0])
                  if (m := SHAPE.match(h))}
        body = table[2:]
        if not shapes or not any(re.fullmatch(r"`step\d+_\w+`", r[0]) for r in body):
            continue
        where = f"the table at line {start + 1}"
        runs = RUN_ID.findall(paragraph(lines, i, 1)) or RUN_ID.findall(
            paragraph(lines, start - 1, -1))
        if not runs:
            yield start, None, "", None, f"{where}: no run id beside it"
            continue
        run = runs[0]
        bar_row = next((r for r in body if r[0].startswith("`baseline_")), None)
        bar_step = "back/" + bar_row[0].strip("`")[len("baseline_"):] if bar_row else None
        op = None
        for n, r in enumerate(body):
            label, line = r[0], start + 2 + n
            if m := PROGRAM.fullmatch(label):
                name = m.group(1)
                step = "back/" + (name[len("baseline_"):] if name.startswith("baseline_") else name)
            elif label.startswith("PyTorch") and op:
                compiled = "compiled" in label or "编译后" in label
                step = "torch/compiled/" + op if compiled else "torch/" + op
            else:
                yield line, None, "", None, f"{where}: a row the check does not know: {label}"
                continue
            for k, (nrows, ncols) in shapes.items():
                cell = r[k] if k < len(r) else ""
                if not cell:
                    continue
                got = rounds.get((run, step, nrows, ncols))
                if not got:
                    yield (line, k, cell, None,
                           f"{where}: {step} at {nrows} x {ncols}: no rows of run {run}")
                    continue
                if step.startswith("back/step"):
                    op = got[0][1]
                bar = None
                if step != bar_step and bar_step:
                    bar = [t for t, _ in rounds.get((run, bar_step, nrows, ncols), [])] or None
                want = cell_text([t for t, _ in got], bar, chinese)
                wrong = None if cell.replace("**", "") == want else (
                    f"{where}: {step} at {nrows} x {ncols} says {cell.replace('**', '')!r}, "
                    f"run {run} says {want!r}")
                yield line, k, cell, want, wrong


def table_errors(text, rounds, chinese):
    """(every wrong cell or table of a page, said in one line each, the
    number of cells checked)."""
    found = list(table_cells(text, rounds, chinese))
    return [w for *_, w in found if w], sum(1 for *_, want, _ in found if want is not None)


def bolded(old, new):
    """new with the old cell's bold kept: a bold ratio ("..., **0.88**") stays
    bold on the new ratio."""
    m = re.search(r"(?:, |，)([0-9.]+)$", new)
    if not (old.endswith("**") and m):
        return new
    return f"{new[:m.start(1)]}**{m.group(1)}**"


def filled(text, rounds, chinese):
    """(the page with every timed cell its run gives written in, the cells
    changed); a cell with no run to give it is left as it is."""
    lines = text.split("\n")
    changed = 0
    for line, k, cell, want, _ in list(table_cells(text, rounds, chinese)):
        if want is None or cell.replace("**", "") == want:
            continue
        parts = lines[line].split("|")
        # parts[0] is what precedes the first "|" (nothing): column k is parts[k + 1]
        parts[k + 1] = f" {bolded(cell, want)} "
        lines[line] = "|".join(parts)
        changed += 1
    return "\n".join(lines), changed


def moved(text, old, new):
    """text with every whole run id OLD made NEW (never part of a name or a longer id)."""
    return re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, text)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="back_tables.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help="fill every timed cell from its run (both pages)")
    parser.add_argument("--run", metavar="OLD=NEW",
                        help="with --write: first move the tables of run OLD to run NEW")
    parser.add_argument("--results", default=RESULTS, help="part 3's results file")
    args = parser.parse_args(argv)
    if args.run is not None:
        old, _, new = args.run.partition("=")
        if not args.write:
            print("back_tables.py: --run OLD=NEW goes with --write", file=sys.stderr)
            return 2
        if not (RUN_ID.fullmatch(old) and RUN_ID.fullmatch(new)):
            print(f"back_tables.py: --run {args.run}: give two run ids, OLD=NEW "
                  "(such as 20261204T152900Z-ln=20261210T090000Z-ln)", file=sys.stderr)
            return 2
    try:
        rounds = rounds_of(args.results)
    except (OSError, KeyError, ValueError) as e:
        print(f"back_tables.py: cannot read {args.results}: {e}", file=sys.stderr)
        return 2
    bad = 0
    for page in PAGES:
        path = os.path.join(REPO, page)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        chinese = page.endswith(".zh-CN.md")
        if args.write:
            if args.run is not None:
                text = moved(text, old, new)
            text, changed = filled(text, rounds, chinese)
        errors, checked = table_errors(text, rounds, chinese)
        for e in errors:
            print(f"{page}: {e}")
        bad += len(errors)
        if args.write and not errors:   # a page that still has a wrong cell is left as it was
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"back_tables.py: {page}: {changed} cells written")
        else:
            print(f"back_tables.py: {page}: {checked} cells checked, {len(errors)} wrong"
                  + (", nothing written" if args.write else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
