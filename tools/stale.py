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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_hash  # noqa: E402
import schema  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("reduce.cu", "rows.cu", "multigpu.c")
VARIANT = re.compile(r"^(step\d+_[a-z0-9_]+)-([A-Z][A-Z0-9_]*)-(\d+)$")
MARK = "†"

# What measures each committed file again, by a part of its name; the bench
# and profile files of both parts (h200.csv, h200-rows-profile.csv ...):
# `make verify`, which times and profiles the programs named.
VERIFY = "make verify ONLY={programs} OUT_DIR=plots/reference"
COMMANDS = (
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


def stale_rows(path, hashes):
    """{label: sorted revisions} of the rows of one CSV file that measured an
    earlier version of their program."""
    header, records = schema.read_records(path)
    if "code_hash" not in header or "step" not in header:
        return {}
    found = {}
    for _, record in records:
        label, measured = record.get("step", ""), record.get("code_hash", "")
        if hashes.is_stale(label, measured):
            found.setdefault(label, set()).add(record.get("git_rev", "") or "?")
    return {label: sorted(revs) for label, revs in found.items()}


def command_for(path, programs):
    name = os.path.splitext(os.path.basename(path))[0]
    for part, command in COMMANDS:
        if part in name:
            return command.format(programs=",".join(programs))
    return VERIFY.format(programs=",".join(programs))


def program_arg(label, hashes):
    """How ONLY= names a program: its folder (rows/baseline_copy), or the
    label itself where there is no folder."""
    return hashes.folder(label) or label


def part_programs(root):
    """{part: its program folders}: ONLY=sum and ONLY=rows name them all."""
    rows_root = os.path.join(root, "rows")
    rows = (["rows/" + d for d in schema.step_dirs(rows_root, has=("rows.cu",))] +
            sorted("rows/" + d for d in os.listdir(rows_root) if d.startswith("baseline_"))
            if os.path.isdir(rows_root) else [])
    return {"sum": schema.step_dirs(root, has=("reduce.cu",)) + [schema.CUB_DIR], "rows": rows}


def only_list(folders, root):
    """ONLY='s value for these folders: a whole part as its name (sum, rows)."""
    left, named = list(dict.fromkeys(folders)), []
    for part, members in part_programs(root).items():
        if members and set(members) <= set(left):
            named.append(part)
            left = [f for f in left if f not in members]
    return ",".join(named + sorted(left, key=schema.step_sort_key))


def scan(root=REPO, hashes=None, folder=None):
    """[(file, {label: revisions})] for every CSV of folder (default: the
    committed plots/reference) with stale rows."""
    hashes = hashes or Hashes(root)
    folder = folder or os.path.join(root, "plots", "reference")
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        try:
            found = stale_rows(path, hashes)
        except schema.SchemaError:
            continue
        if found:
            out.append((path, found))
    return out


def summary_line(found, root=REPO, hashes=None):
    """One line: the stale programs (a whole part by its name) and the
    commands that measure them again; "" when nothing is stale."""
    hashes = hashes or Hashes(root)
    if not found:
        return ""
    verify, commands, folders = [], [], []
    for path, labels in found:
        base = [program_arg(VARIANT.match(label).group(1) if VARIANT.match(label) else label,
                            hashes) for label in labels]
        folders += base
        command = command_for(path, ["{programs}"])
        if command == VERIFY.format(programs="{programs}"):
            verify += base
        elif command not in commands:
            commands.append(command)
    if verify:
        commands.insert(0, VERIFY.format(programs=only_list(verify, root)))
    named = only_list(folders, root).split(",")
    what = ", ".join(PART_WORDS.get(name, name) for name in named)
    return (f"stale: {what}: measured on an earlier version of the code (the docs and charts "
            f"say so); to measure again: {'; '.join(commands)} (python3 tools/stale.py lists "
            "each file)")


# The stale block of a page (tools/docs.py): what its hand-written figures
# may quote. tools/zh_strings.py has its Chinese.
PART_WORDS = {"sum": "every part 1 program", "rows": "every part 2 program"}
PAGE_NOTE = ("**{mark} Some figures on this page measured an earlier version of the code:** "
             "{names}, at {revs}, in {files}. Its tables and charts mark them; to measure them "
             "again: {commands}.")


def page_note(found, tr, keep_file=lambda path: True, keep_label=lambda label: True,
              root=REPO):
    """The stale block's text for the files and labels a page draws on
    (found: scan()'s list), or "" when none of them is stale. A tuning
    variant is named by its step, a whole part by its name."""
    picked = []
    for path, labels in found:
        if keep_file(path):
            mine = {label: revs for label, revs in labels.items() if keep_label(label)}
            if mine:
                picked.append((path, mine))
    if not picked:
        return ""
    revs = sorted({rev for _, labels in picked for found_revs in labels.values()
                   for rev in found_revs})
    folders, verify, commands = [], [], []
    for path, labels in picked:
        base = [schema.program_dir(VARIANT.match(l).group(1) if VARIANT.match(l) else l)
                for l in labels]
        folders += base
        command = command_for(path, ["{programs}"])
        if command == VERIFY.format(programs="{programs}"):
            verify += base
        elif f"`{command}`" not in commands:
            commands.append(f"`{command}`")
    if verify:
        commands.insert(0, f"`{VERIFY.format(programs=only_list(verify, root))}`")
    names = tr(", ").join(tr(PART_WORDS[n]) if n in PART_WORDS else n
                          for n in only_list(folders, root).split(","))
    files = tr(", ").join(os.path.basename(path) for path, _ in picked)
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
    NOTE = ("{mark} Measured on an earlier version of the code (revision in brackets): "
            "{names}. `{command}` measures it again.")

    def __init__(self, stale_rows):
        # rows -> {label: revision} of the stale ones: a compare.RunIndex's
        # stale_rows, or rows_stale() below for files read without one.
        self.stale_rows = stale_rows
        self.found = {}

    def cell(self, text, *rows):
        """text, marked if any of rows is stale."""
        stale = self.stale_rows(rows)
        if not stale:
            return text
        self.found.update(stale)
        return f"{text} {MARK}"

    def note(self, tr):
        """[] or ["", the footnote], tr translating its template."""
        if not self.found:
            return []
        labels = sorted(self.found, key=schema.step_sort_key)
        names = ", ".join(f"{label} ({self.found[label]})" for label in labels)
        folders = ",".join(dict.fromkeys(schema.program_dir(label) for label in labels))
        return ["", tr(self.NOTE, mark=MARK, names=names,
                       command=VERIFY.format(programs=folders))]


def main(argv=None):
    parser = argparse.ArgumentParser(description="Name the committed results that measured "
                                                 "an earlier version of the code.")
    parser.add_argument("--root", default=REPO)
    parser.add_argument("--line", action="store_true",
                        help="one line for make test (nothing when nothing is stale)")
    args = parser.parse_args(argv)
    hashes = Hashes(args.root)
    found = scan(args.root, hashes)
    if args.line:
        line = summary_line(found, args.root, hashes)
        if line:
            print(line)
        return 0
    for path, labels in found:
        for label, revs in sorted(labels.items(), key=lambda kv: schema.step_sort_key(kv[0])):
            print(f"{os.path.relpath(path, args.root)}: {label} measured at {', '.join(revs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
