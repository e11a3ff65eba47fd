#!/usr/bin/env python3
"""The step list of the three parts: which folders are steps, the folder of step K,
and the step before a step. The one answer that make diff, make check,
make determinism, the grader's --speed, make bench, make profile and the
READMEs' diff blocks ask for, instead of each working it out.

A part is its folder prefix: "" for part 1 (the sum: stepN_slug/reduce.cu)
and "rows/" for part 2 (rows: rows/stepN_slug/rows.cu); "back/" for part 3
(back/stepN_slug/back.cu) is read the same way. A step is a
stepN_slug folder holding its source or a built `run` (so an unbuilt
`step9_mine/` counts, a stray `step4_notes/` does not); with source=True,
only its source counts (make diff and make check read the source).

Names, as the commands take them: K, rows/K and back/K (a step number,
written without leading zeros), cub, rows/cub, rows/copy and rows/copy16.

The step before: in part 1 the nearest lower-numbered step; in part 2 the
nearest lower-numbered step of the same op (step 13, an aligned LayerNorm,
builds on step 7, not on step 12's bfloat16 LayerNorm), else the nearest
lower one (previous_step: what a step's ratios and counters are read
beside). A step's lesson, its diff (diff_base), is against the step it was
started from by `make new FROM=K` if it says so, else a bfloat16 step's
float twin, else the step before.

Command line (errors are one line on stderr, exit 2):
  steps.py dir K|rows/K|back/K|cub|rows/cub|rows/copy|rows/copy16   the folder
  steps.py previous NAME    the step before (nothing for a first step or a baseline)
  steps.py base NAME        the step whose diff against NAME is its lesson (make diff)
  steps.py dir-base NAME    dir's line, then base's (empty for a first step): make
                            diff's two answers from one start of Python
  steps.py list [rows|back] the steps of part 1 (or 2, or 3), one folder a line, in order
  steps.py next [rows|back] the next free step number of part 1 (or 2, or 3)
--root DIR reads another tree (default: this repository); --source counts
a folder as a step only if it holds its source (dir, previous and base
always do: make diff and make check read the source).
"""
import argparse
import os
import re
import sys

import cli  # the exit codes
import schema  # step_number, step_sort_key, step_dirs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ROWS, BACK = schema.ROWS, schema.BACK
# The file that makes a step of each part.
SOURCE = {"": "reduce.cu", ROWS: "rows.cu", BACK: "back.cu"}
# The programs that are no step, by the name make check and the grader take.
BASELINES = {"cub": schema.CUB_DIR, "rows/cub": "rows/baseline_cub",
             "rows/copy": "rows/baseline_copy", "rows/copy16": "rows/baseline_copy16",
             "back/copy3": "back/baseline_copy3", "back/copy3_bf16": "back/baseline_copy3_bf16"}
EXIT_USAGE = cli.EXIT_USAGE


class StepError(Exception):
    """A name that is no step of this tree: one line for the user."""


def part_of(name):
    """"rows/" for a part 2 name (rows/3, rows/step3_vector), "back/" for a
    part 3 one, else ""."""
    return schema.part_prefix(name)


def source_file(name):
    """The source of a step or program folder: reduce.cu, rows.cu or back.cu."""
    return SOURCE[part_of(name)]


def step_dirs(root, part="", source=False):
    """The step folders of a part, in step order (step10 after step9), with
    the part's prefix: ["step0_naive", ...] or ["rows/step0_thread", ...]."""
    top = os.path.join(root, part) if part else root
    if not os.path.isdir(top):
        return []
    has = (SOURCE[part],) if source else (SOURCE[part], "run")
    return [part + d for d in schema.step_dirs(top, has=has)]


def step_dir(root, part, k, source=True):
    """The folder of step k (an int) of a part, or None."""
    found = [d for d in step_dirs(root, part, source) if schema.step_number(d) == k]
    return found[0] if found else None


def folder(root, name):
    """The folder of a name as the commands take it: K, rows/K, back/K (digits,
    no leading zeros), cub, rows/cub, rows/copy, rows/copy16. StepError if the
    name is none of those or the tree holds no such program (a step needs
    its source)."""
    if name in BASELINES:
        found = BASELINES[name]
        if not os.path.isfile(os.path.join(root, found, source_file(found))):
            raise StepError(f"no {name} in this tree (no {found}/{source_file(found)})")
        return found
    part = part_of(name)
    k = name[len(part):]
    if not re.fullmatch(r"0|[1-9][0-9]*", k):
        raise StepError(f"'{name}' is no step: give K, rows/K, back/K (a step number), "
                        "cub, rows/cub, rows/copy or rows/copy16")
    found = step_dir(root, part, int(k))
    if found is None:
        raise StepError(f"no step {name} (no {part}step{k}_*/{SOURCE[part]})")
    return found


def row_op(root, name):
    """What a part 2 or part 3 program computes, read from its source (the
    step_op and step_dtype of common/rows.h or common/back.h), as its CSV
    rows' op column names it. Part 2: sum, layernorm, softmax, copy, rmsnorm
    or add_rmsnorm, with _bf16 for bfloat16 data. Part 3: layernorm_backward,
    softmax_backward, or copy3 for its bar. "" if it does not say (and for a
    part 1 name)."""
    part = part_of(name)
    if part not in _STEP_OP:
        return ""
    path = os.path.join(root, name, SOURCE[part])
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return ""
    # Asked tens of thousands of times a run (the step before each row of
    # each table) about a few dozen sources, and the two searches cost far
    # more than the read: a source's answer is given again only while its
    # file still reads the same, byte for byte.
    kept = _ROW_OPS.get(path)
    if kept is not None and kept[0] == text:
        return kept[1]
    op = _op_of_text(part, text)
    _ROW_OPS[path] = (text, op)
    return op


_ROW_OPS = {}   # path -> (its text, row_op's answer for it)


def _op_of_text(part, text):
    """row_op's answer for a part 2 or part 3 source's text."""
    found = _STEP_OP[part].search(text)
    if not found:
        return ""
    op = found.group(1).lower()
    op = _BACK_OPS.get(op, op) if part == BACK else op
    dtype = _STEP_DTYPE[part].search(text)
    return op + ("_bf16" if dtype and dtype.group(1) == "BF16" else "")


def _enum_line(variable, enum, prefix):
    return re.compile(r"^\s*const\s+enum\s+" + enum + r"\s+" + variable + r"\s*=\s*" + prefix +
                      r"(\w+)\s*;", re.M)


# Each part's `const enum ... step_op = ...;` and `... step_dtype = ...;` lines.
_STEP_OP = {ROWS: _enum_line("step_op", "row_op", "ROW_"),
            BACK: _enum_line("step_op", "back_op", "BACK_")}
_STEP_DTYPE = {ROWS: _enum_line("step_dtype", "row_dtype", "ROW_"),
               BACK: _enum_line("step_dtype", "back_dtype", "BACK_")}
# common/back.h's ops, as common/back_driver.c names them in the op column.
_BACK_OPS = {"layernorm": "layernorm_backward", "softmax": "softmax_backward", "copy3": "copy3"}
# The line `make new` writes into a step it started from another (tools/step.sh).
_STARTED_FROM = re.compile(r"^// Started from (step[0-9]*_[a-z0-9_]*) by make new", re.M)


def _earlier(root, name, source):
    """The steps of name's part numbered below it, in order."""
    return [d for d in step_dirs(root, part_of(name), source)
            if schema.step_sort_key(d) < schema.step_sort_key(name)]


def previous_step(root, name, source=False):
    """The step name's ratios and counters are read beside: in part 2 the
    nearest lower-numbered step of the same op, else (an op's first step) the
    nearest of the same element type, float or bfloat16, else the nearest
    lower-numbered step; in part 1 the nearest lower-numbered step. None
    for a baseline and a first step."""
    if schema.step_number(name) is None:
        return None
    earlier = _earlier(root, name, source)
    if part_of(name):
        return nearest_of_op(row_op(root, name), earlier, lambda d: row_op(root, d))
    return earlier[-1] if earlier else None


def nearest_of_op(op, earlier, op_of):
    """Part 2's rule for the step before (earlier in step order; op_of(step)
    gives a step's op, '' if unknown): the last of the same op, else the last
    of the same element type, else the last. The one rule, for the sources
    (previous_step) and for the results (compare.RowMeasurements)."""
    bf16 = op.endswith("_bf16")
    same = ([d for d in earlier if op and op_of(d) == op]
            or [d for d in earlier if op and op_of(d) and op_of(d).endswith("_bf16") == bf16]
            or earlier)
    return same[-1] if same else None


def started_from(root, name):
    """The step `make new FROM=K` started name from, as its source says, if
    that step is there; else None."""
    try:
        with open(os.path.join(root, name, source_file(name)), encoding="utf-8") as handle:
            found = _STARTED_FROM.search(handle.read())
    except OSError:
        return None
    if not found:
        return None
    origin = part_of(name) + found.group(1)
    return origin if os.path.isfile(os.path.join(root, origin, source_file(name))) else None


def branches_off(root, name):
    """Whether name was started (make new FROM=K) from a step other than the
    step before it: a side lesson off an earlier step (step 22's Welford
    LayerNorm off step 13), not the end of its op's line. Its op's last step
    (compare.RowMeasurements.last_step, the tables of each op's last step)
    is then the one before it."""
    origin = started_from(root, name)
    return origin is not None and origin != previous_step(root, name, source=True)


def diff_base(root, name, source=False):
    """The step whose diff against name is name's lesson (make diff, and the
    diff block of its README): None for a baseline and a first step; else
    the step it was started from (make new FROM=K), a bfloat16 step's float
    twin (the step it converts), or previous_step()."""
    if schema.step_number(name) is None or not _earlier(root, name, source):
        return None
    return (started_from(root, name) or float_twin(root, name, source)
            or previous_step(root, name, source))


def float_twin(root, name, source=False):
    """For a part 2 bfloat16 step, the step it converts: the nearest
    lower-numbered step computing the same op in float (layernorm_bf16 ->
    layernorm), less side lessons (step 22 off step 13), if no bfloat16 step
    of the op lies between them; else None (step 25 builds on step 18, a
    bfloat16 step, and converts nothing)."""
    op = row_op(root, name) if part_of(name) else ""
    if schema.step_number(name) is None or not op.endswith("_bf16"):
        return None
    float_op = op[:-len("_bf16")]
    for d in reversed(_earlier(root, name, source)):
        if row_op(root, d) == op:
            return None   # a bfloat16 step of the op comes first: this one builds on it
        if row_op(root, d) == float_op and not branches_off(root, d):
            return d
    return None


def next_free(root, part="", source=False):
    """The next free step number of a part: one past the highest."""
    numbers = [schema.step_number(d) for d in step_dirs(root, part, source)]
    return max(numbers) + 1 if numbers else 0


# ------------------------------------------------------------ command line

def _step_name(root, name):
    """A step folder from a command-line name: K, rows/K, back/K, or the folder itself."""
    if schema.step_number(name) is not None and \
            os.path.isfile(os.path.join(root, name, source_file(name))):
        return name
    return folder(root, name)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """argparse's usage errors in one line, exit 2, as this module's own."""
        print(f"steps: {message} (python3 tools/steps.py --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def main(argv=None):
    parser = _Parser(
        prog="steps.py", description="The steps of the three parts and the step before each.")
    parser.add_argument("--root", default=REPO, help="the tree to read (default: this repository)")
    parser.add_argument("--source", action="store_true",
                        help="list and next: count a folder only if it holds its source")
    parser.add_argument("command", choices=("dir", "previous", "base", "dir-base", "list", "next"))
    parser.add_argument("name", nargs="?", default="",
                        help="dir, previous, base, dir-base: K, rows/K, back/K, a step folder or "
                             "a baseline; "
                             "list, next: rows for part 2, back for part 3")
    args = parser.parse_args(argv)
    root = args.root
    if not os.path.isdir(root):   # a wrong root is not a tree without steps
        parser.error(f"--root {root!r} is not a folder")
    try:
        if args.command in ("list", "next"):
            if args.name not in ("", "rows", "back"):
                raise StepError(f"{args.command}: give nothing (part 1), rows (part 2) or "
                                f"back (part 3), got '{args.name}'")
            part = {"rows": ROWS, "back": BACK}.get(args.name, "")
            if args.command == "list":
                for d in step_dirs(root, part, args.source):
                    print(d)
            else:
                print(next_free(root, part, args.source))
            return 0
        if not args.name:
            raise StepError(f"{args.command}: give a step: K, rows/K, back/K, cub, rows/cub, "
                            "rows/copy or rows/copy16")
        if args.command == "dir":
            print(folder(root, args.name))
            return 0
        if args.command == "dir-base":
            found = folder(root, args.name)
            base = diff_base(root, found, source=True)   # both answers, or neither printed
            print(found)
            print(base or "")
            return 0
        name = _step_name(root, args.name)
        found = (previous_step if args.command == "previous" else diff_base)(root, name, source=True)
        if found:
            print(found)
        return 0
    except StepError as err:
        print(f"steps: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
