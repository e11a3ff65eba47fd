"""Generated output in committed files: marker blocks in markdown pages, and
writes that leave a file alone when its bytes would not change.

Every script that writes into the repository (charts, pictures, README
blocks) goes through here, so a rerun on unchanged inputs leaves git clean.

A block is the text between a `<!-- BEGIN name -->` line and its
`<!-- END name -->` line; everything outside blocks is the author's.
"""
import difflib
import os


def markers(name):
    """The BEGIN and END lines of a block."""
    return f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"


def has_block(text, name):
    """True when the text holds the block's BEGIN line with an END line after it."""
    return _span(text.split("\n"), name) is not None


def _span(lines, name):
    begin, end = markers(name)
    stripped = [line.strip() for line in lines]
    if begin not in stripped:
        return None
    first = stripped.index(begin)
    if end not in stripped[first + 1:]:
        return None
    return first, stripped.index(end, first + 1)


def replace_block(text, name, body):
    """The text with the block's body replaced; None when its markers are absent."""
    lines = text.split("\n")
    span = _span(lines, name)
    if span is None:
        return None
    first, last = span
    if not body:   # an empty block (nothing stale) stays two lines
        return "\n".join(lines[:first + 1] + lines[last:])
    # Blank lines around the body keep a table or an image from gluing onto
    # the comment lines (markdown would read them as one paragraph).
    return "\n".join(lines[:first + 1] + [""] + body.split("\n") + [""] + lines[last:])


def fill_blocks(text, blocks):
    """The text with every block in `blocks` ([(name, () -> body)]) refilled.

    A body is made only for the blocks the text holds, so a page without a
    block never pays for (or fails on) that block's inputs."""
    for name, body in blocks:
        if has_block(text, name):
            text = replace_block(text, name, body())
    return text


def read_text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write_if_changed(path, data):
    """Write `data` (bytes, or text as UTF-8) only when the file differs.

    Returns True when it wrote. Unchanged files keep their bytes and their
    modification time, so neither git nor make sees a change."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    with open(path, "wb") as handle:
        handle.write(data)
    return True


def unified_diff(old_path, new_path, old_label, new_label, errors="strict"):
    """The unified diff of two source files ("" when identical), labelled,
    3 lines of context: what `make diff` prints and every README's diff
    block shows, from this one function, so that the two never place a
    hunk differently (GNU diff and difflib can). errors: how bytes that are
    not UTF-8 are read (make diff keeps them as they are)."""
    with open(old_path, encoding="utf-8", errors=errors) as a, \
            open(new_path, encoding="utf-8", errors=errors) as b:
        old, new = a.read().splitlines(), b.read().splitlines()
    return "\n".join(difflib.unified_diff(old, new, old_label, new_label, n=3, lineterm=""))


def fenced_diff(old_path, new_path, old_label, new_label):
    """unified_diff() as a fenced markdown block (a longer fence if a source
    itself holds ```), or None when they are identical: the diff block of
    every step's README, in all three parts."""
    diff = unified_diff(old_path, new_path, old_label, new_label)
    if not diff:
        return None
    fence = "```"
    while fence in diff:
        fence += "`"
    return f"{fence}diff\n{diff}\n{fence}"


if __name__ == "__main__":
    # python3 tools/generated.py diff OLD NEW OLD_LABEL NEW_LABEL: make diff's
    # output (tools/step.sh), exit 1 when the files differ, as diff(1) does.
    import signal
    import sys
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # make diff | head: end quietly, as diff(1) does
    if len(sys.argv) != 6 or sys.argv[1] != "diff":
        print("usage: python3 tools/generated.py diff OLD NEW OLD_LABEL NEW_LABEL", file=sys.stderr)
        sys.exit(2)
    try:   # a student's file in Latin-1 comes out byte for byte, as diff(1) shows it
        text = unified_diff(*sys.argv[2:6], errors="surrogateescape")
    except OSError as err:
        print(f"generated.py: {err.filename}: {err.strerror}", file=sys.stderr)
        sys.exit(2)
    if text:
        sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape") + b"\n")
    sys.exit(1 if text else 0)
