#!/usr/bin/env python3
"""stale.py: which committed results measured an earlier version of the code.

    python3 tools/stale.py [--root DIR] [--line]

Every results row carries the code hash of the program it measured
(tools/code_hash.py: its source, its part's harness, the flags). A row whose
hash is not the one the program has now measured code that no longer
exists. Such a row is not an error: the docs and charts mark it as measured
on an earlier version, with its revision (tools/docs.py, tools/plot.py), and
`make test` prints one line naming the stale programs and the command that
measures them again (--line). Nothing stale is shown as current.

A row's program is found by its `step` value: a program folder (cub ->
baseline_cub, rows/copy -> rows/baseline_copy, extras/<name>, multigpu), or a
tuning variant "stepK_slug-KNOB-VALUE", whose source is its step's with one
#define changed, as tools/tune.sh writes it. Rows of anything else (PyTorch,
tools/protocol.sh's variant) have no hash to compare and are never stale by
themselves; a block that shows them beside stale rows says so through those.

Without --line: one line per stale program and file. Exit status 0 either
way (stale is a state, not a failure); 2 for a usage error.
"""
import argparse
import glob
import os
import re
import sys

import bench  # current runs, and what a program is compared with
import code_hash
import schema

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("reduce.cu", "rows.cu", "back.cu", "multigpu.c")
VARIANT = re.compile(r"^(step\d+_[a-z0-9_]+)-([A-Z][A-Z0-9_]*)-(\d+)$")
MARK = "†"

# What measures each committed file again, by a part of its name; the bench
# and profile files of both parts (h200.csv, h200-rows-profile.csv ...):
# `make verify`, which times and profiles the programs named.
VERIFY = "make verify ONLY={programs} OUT_DIR=plots/reference"
PROFILE_AT = "make profile-all ONLY={programs} SHAPE={shape} OUT_DIR=plots/reference"
COMMANDS = (
    ("-rows-widths", "make bench-widths OUT_DIR=plots/reference"),   # part 2's map, all of it
    ("-accuracy", "make accuracy OUT_DIR=plots/reference"),
    ("-determinism", "make determinism OUT_DIR=plots/reference"),
    ("-tune", "OUT_DIR=plots/reference bash tools/gpu_check.sh build/gpu-check check"),
    ("-step9-protocol", "bash tools/protocol.sh plots/reference/h200-step9-protocol.csv"),
    ("-multigpu", "make nccl-check OUT_DIR=plots/reference"),   # on two GPUs
    ("-allreduce", "make nccl-check OUT_DIR=plots/reference"),
)


class Hashes:
    """The code hash each program has now, by the label its rows carry."""

    def __init__(self, root=REPO, flags=None):
        self.root = root
        self._flags = flags
        self.cache = {}

    @property
    def flags(self):
        """The Makefile's HASH_FLAGS, or None where there is no Makefile (a
        tree of test fixtures): then no hash is known and nothing is stale."""
        if self._flags is None:
            try:
                self._flags = code_hash.makefile_flags(self.root)
            except OSError:
                self._flags = False
        return self._flags or None

    def folder(self, label):
        """The program folder of a CSV step value, or None."""
        for candidate in (schema.program_dir(label), os.path.join("extras", label)):
            path = os.path.join(self.root, candidate)
            if any(os.path.isfile(os.path.join(path, f)) for f in SOURCES):
                return candidate
        return None

    def current(self, label):
        """The hash the program behind label has now; None if none can be known."""
        if label not in self.cache:
            try:
                self.cache[label] = self._compute(label) if self.flags is not None else None
            except OSError:   # a harness file missing: nothing to compare with
                self.cache[label] = None
        return self.cache[label]

    def _compute(self, label):
        folder = self.folder(label)
        if folder is not None:
            return code_hash.program_hash(folder, self.flags, self.root)
        variant = VARIANT.match(label)
        if variant and self.folder(variant.group(1)):
            step, knob, value = variant.groups()
            files = code_hash.program_files(step, self.root)
            with open(files[0], encoding="utf-8") as handle:
                text = handle.read()
            # tools/tune.sh's sed: "s/^#define KNOB [0-9]*/#define KNOB VALUE/"
            text = re.sub(rf"^#define {knob} [0-9]*", f"#define {knob} {value}", text,
                          flags=re.M)
            rest = []
            for path in files[1:]:
                with open(path, encoding="utf-8") as handle:
                    rest.append(handle.read())
            return code_hash.texts_hash([text] + rest, self.flags)
        return None

    def is_stale(self, label, measured):
        """True when the row's hash is known and is not the program's now."""
        now = self.current(label)
        return bool(measured) and now is not None and measured != now


def shown_stale(path, hashes, root=REPO):
    """({label: sorted revisions}, {label: labels to measure again}) of one
    CSV file: its stale rows that a page or chart shows, and what clears them.

    A row shows where it is its program's figures (its program's current
    run, tools/compare.py) and where another program's ratios read it: a
    row of an older run that a newer run of its program replaced stays in
    the file for the programs whose figures still come from that run, and
    only measuring those again clears it. Files without runs are one run."""
    header, records = schema.read_records(path)
    if "code_hash" not in header or "step" not in header:
        return {}, {}
    rows = [record for _, record in records]
    current = bench.current_runs(rows) if "run" in header else {}
    # What each program is read beside, asked once per program rather than
    # once per stale row (thousands of rows, a few dozen programs).
    compared = {}

    def read_beside(q):
        if q not in compared:
            compared[q] = bench.comparisons(root, schema.program_dir(q))[0]
        return compared[q]

    found, again = {}, {}
    for record in rows:
        label, measured = record.get("step", ""), record.get("code_hash", "")
        if not hashes.is_stale(label, measured):
            continue
        run = record.get("run") or ""
        if current.get(label, run) == run:
            readers = [label]          # its program's own figures
        else:
            folder = schema.program_dir(label)
            readers = [q for q, r in current.items() if r == run and q != label and
                       not q.startswith("torch/") and
                       folder in read_beside(q)]
            if not readers:
                continue               # kept in the file, shown nowhere
        found.setdefault(label, set()).add(record.get("git_rev", "") or "?")
        again.setdefault(label, set()).update(readers)
    return {label: sorted(revs) for label, revs in found.items()}, again


def stale_rows(path, hashes, root=REPO):
    """{label: sorted revisions} of the stale rows of one CSV file that show."""
    return shown_stale(path, hashes, root)[0]


def command_for(path, programs):
    name = os.path.splitext(os.path.basename(path))[0]
    shape = re.search(r"-rows-profile-(\d+x\d+)$", name)
    if shape:   # part 2's counters at another shape than make verify's (SHAPE=a,b: several)
        return PROFILE_AT.format(programs=",".join(programs), shape=shape.group(1))
    for part, command in COMMANDS:
        if part in name:
            return command.format(programs=",".join(programs))
    return VERIFY.format(programs=",".join(programs))


def part_programs(root):
    """{part: its shipped program folders}: when every one of them is stale,
    ONLY=sum or ONLY=rows (and "every part 2 program" on a page) names them.
    A student's own step has no committed rows, so it is never stale and must
    not keep its part from being named whole."""
    shipped = {schema.program_dir(s) for s in schema.SHIPPED + schema.SHIPPED_ROWS}

    def measured(pattern):
        found = set()
        for path in glob.glob(os.path.join(root, "plots", "reference", pattern)):
            try:
                _, records = schema.read_records(path)
            except schema.SchemaError:
                continue
            found |= {schema.program_dir(r.get("step", "")) for _, r in records}
        return found
    # Part 3 has no shipped list: its members are the programs its committed
    # results measured (ONLY=back measures the newer ones with them). A part
    # 2 step with no committed rows yet (new, measured on another card only)
    # is no member either: ONLY=rows measures it with the others.
    # A part's members are the programs measured on the card the pages are drawn from.
    rows = measured(schema.REFERENCE_GPU + "-rows*.csv")
    return {"sum": [d for d in bench.program_dirs(root) if d in shipped],
            "rows": [d for d in bench.row_program_dirs(root)
                     if d in shipped and (d in rows or not rows)],
            "back": [d for d in bench.row_program_dirs(root, schema.BACK)
                     if d in measured("*-back.csv")]}


def only_list(folders, root):
    """ONLY='s value for these folders: a whole part as its name (sum, rows, back)."""
    left, named = list(dict.fromkeys(folders)), []
    for part, members in part_programs(root).items():
        if members and set(members) <= set(left):
            named.append(part)
            left = [f for f in left if f not in members]
    return ",".join(named + sorted(left, key=schema.step_sort_key))


def scan(root=REPO, hashes=None, folder=None):
    """[(file, {label: revisions}, {labels to measure again})] for every CSV of
    folder (default: the committed plots/reference) with stale rows that show."""
    hashes = hashes or Hashes(root)
    folder = folder or os.path.join(root, "plots", "reference")
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        try:
            found, again = shown_stale(path, hashes, root)
        except schema.SchemaError:
            continue
        if found:
            out.append((path, found, again))
    return out


def folders_of(labels):
    """The program folders that measure labels again (a tuning variant: its step)."""
    return [schema.program_dir(VARIANT.match(l).group(1) if VARIANT.match(l) else l)
            for l in labels]


def summary_line(found, root=REPO):
    """One line: the stale programs (a whole part by its name) and the
    commands that measure them again; "" when nothing is stale."""
    if not found:
        return ""
    named = only_list(folders_of(l for _, labels, _ in found for l in labels), root).split(",")
    what = ", ".join(PART_WORDS.get(name, name) for name in named)
    return (f"stale: {what}: measured on an earlier version of the code (the docs and charts "
            f"say so); to measure again: {'; '.join(commands_for(found, root))} "
            "(python3 tools/stale.py lists each file)")


def commands_for(found, root=REPO):
    """The commands that measure the stale rows of found again, one per kind
    of file: every make verify of them as one, and every part 2 profile at
    another shape as one (SHAPE=a,b)."""
    verify, commands, shapes, profiled = [], [], [], []
    for path, labels, again in found:
        folders = folders_of(r for l in labels for r in again.get(l, {l}))
        if not folders:
            continue
        command = command_for(path, ["{programs}"])
        if command == VERIFY.format(programs="{programs}"):
            verify += folders
            continue
        shape = re.search(r"SHAPE=(\S+)", command) if command.startswith("make profile-all") else None
        if shape:
            shapes.append(shape.group(1))
            profiled += folders
            continue
        command = command.replace("{programs}", only_list(folders, root))
        if command not in commands:
            commands.append(command)
    if shapes:
        commands.insert(0, PROFILE_AT.format(programs=only_list(profiled, root),
                                             shape=",".join(dict.fromkeys(shapes))))
    if verify:
        commands.insert(0, VERIFY.format(programs=only_list(verify, root)))
    return commands


# The stale block of a page (tools/docs.py): what its hand-written figures
# may quote. tools/zh_strings.py has its Chinese.
PART_WORDS = {"sum": "every part 1 program", "rows": "every part 2 program"}
# Short: it comes before the page's first line of teaching. Each table's and
# chart's own note names the revisions; `python3 tools/stale.py` lists every file.
PAGE_NOTE = ("**{mark} Some figures on this page measured an earlier version of the code:** "
             "{names}, in {files} (a program's code hash covers its own files and the shared "
             "harness in common/: a change to either marks its figures). The tables and charts "
             "mark each one with its revision; to measure them again: {commands}.")


def page_note(found, tr, keep_file=lambda path: True, keep_label=lambda label: True,
              root=REPO):
    """The stale block's text for the files and labels a page draws on
    (found: scan()'s list), or "" when none of them is stale. A tuning
    variant is named by its step, a whole part by its name."""
    picked = [(path, {l: r for l, r in labels.items() if keep_label(l)}, again)
              for path, labels, again in found if keep_file(path)]
    picked = [entry for entry in picked if entry[1]]
    if not picked:
        return ""
    revs = sorted({rev for _, labels, _ in picked for found_revs in labels.values()
                   for rev in found_revs})
    names = tr(", ").join(tr(PART_WORDS[n]) if n in PART_WORDS else n
                          for n in only_list(folders_of(l for _, labels, _ in picked
                                                        for l in labels), root).split(","))
    files = tr(", ").join(os.path.basename(path) for path, _, _ in picked)
    commands = [f"`{c}`" for c in commands_for(picked, root)]
    return tr(PAGE_NOTE, mark=MARK, names=names, revs=tr(", ").join(revs), files=files,
              commands=tr("; ").join(commands))


def hashes_for(results, root=REPO):
    """Hashes(root) for a results file under root's plots/ (measured from this
    tree: make bench writes there), else None: a file from elsewhere, a test
    fixture say, is not judged against this tree's code."""
    plots = os.path.join(os.path.abspath(root), "plots") + os.sep
    return Hashes(root) if os.path.abspath(results).startswith(plots) else None


def rows_stale(hashes):
    """A Marks stale_rows for rows with step, code_hash and git_rev
    attributes (results, profile rows), judged by hashes (None: never)."""
    def stale_rows(rows):
        return {row.step: row.git_rev for row in rows if row is not None and hashes is not None
                and hashes.is_stale(row.step, row.code_hash)}
    return stale_rows


class Marks:
    """The stale rows one generated block shows: each cell that comes from one
    is marked with MARK, and the block ends with a footnote naming them, their
    revisions and the command that measures them again."""

    # The footnote; tools/zh_strings.py has its Chinese.
    NOTE = ("{mark} Measured on an earlier version of the code (revision in parentheses): "
            "{names}. `{command}` measures it again.")
    # The same where the cells come from several files, each with its command.
    NOTE_MANY = ("{mark} Measured on an earlier version of the code (revision in parentheses): "
                 "{names}. To measure them again: {commands}.")

    def __init__(self, stale_rows, path=None):
        # rows -> {label: revision} of the stale ones: a compare.RunIndex's
        # stale_rows, or rows_stale() below for files read without one.
        # path: the file they come from, which decides the command (None: a
        # bench file, make verify).
        self.stale_rows = stale_rows
        self.path = path
        self.found, self.again = {}, set()
        self.by_file = {}   # a cell's own file (cell(path=)) -> {label: {revisions}}

    def cell(self, text, *rows, owner=None, path=None):
        """text, marked if any of rows is stale. owner: the program whose cell
        this is; a stale row of another program in it (a ratio's other side,
        from the owner's run) is measured again with the owner. path: the file
        this cell comes from, where a block reads several (its command)."""
        stale = self.stale_rows(rows)
        if not stale:
            return text
        for label, rev in stale.items():   # every revision a label's cells measured
            self.found.setdefault(label, set()).add(rev)
            if path is not None:
                self.by_file.setdefault(path, {}).setdefault(label, set()).add(rev)
        self.again.update(label if owner is None or label == owner else owner
                          for label in stale)
        return f"{text} {MARK}"

    def note(self, tr):
        """[] or ["", the footnote], tr translating its template."""
        if not self.found:
            return []
        labels = sorted(self.found, key=schema.step_sort_key)
        names = ", ".join(f"{label} ({', '.join(sorted(self.found[label]))})" for label in labels)
        if self.by_file:
            commands = commands_for([(path, {l: sorted(r) for l, r in by.items()}, {})
                                     for path, by in self.by_file.items()])
            return ["", tr(self.NOTE_MANY, mark=MARK, names=names,
                           commands=tr("; ").join(f"`{c}`" for c in commands))]
        folders = list(dict.fromkeys(folders_of(sorted(self.again, key=schema.step_sort_key))))
        command = (command_for(self.path, folders) if self.path else
                   VERIFY.format(programs=",".join(folders)))
        return ["", tr(self.NOTE, mark=MARK, names=names, command=command)]


def main(argv=None):
    parser = argparse.ArgumentParser(description="Name the committed results that measured "
                                                 "an earlier version of the code.")
    parser.add_argument("--root", default=REPO)
    parser.add_argument("--line", action="store_true",
                        help="one line for make test (nothing when nothing is stale)")
    args = parser.parse_args(argv)
    if not args.root or not os.path.isdir(os.path.join(args.root, "plots")):
        # Nothing to scan is no answer: a wrong root must not read as "nothing stale".
        print(f"stale.py: error: --root {args.root!r} holds no plots/ folder", file=sys.stderr)
        return 2
    hashes = Hashes(args.root)
    found = scan(args.root, hashes)
    if args.line:
        line = summary_line(found, args.root)
        if line:
            print(line)
        return 0
    for path, labels, again in found:
        for label, revs in sorted(labels.items(), key=lambda kv: schema.step_sort_key(kv[0])):
            readers = sorted(again.get(label, set()) - {label}, key=schema.step_sort_key)
            print(f"{os.path.relpath(path, args.root)}: {label} measured at {', '.join(revs)}"
                  + (f", read by {', '.join(readers)}" if readers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
