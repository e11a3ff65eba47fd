#!/usr/bin/env python3
"""code_hash.py [--flags TEXT] (--program DIR | FILE...): a short hash of a
program's code, comments and layout ignored, printed on one line.

Every program embeds the hash of everything that decides what it runs and
how it is timed: its own source (DIR/reduce.cu, DIR/rows.cu for part 2,
DIR/back.cu for part 3, or DIR/multigpu.c for multigpu/run),
every harness file it is built from (the timing loop, the flush, the
verification, the headers: HARNESS below) and the compiler flags (--flags,
from the Makefile, without the target architecture). Every results row
carries the hash, beside the architecture and the nvcc and CCCL versions the
program reports itself. A committed result whose hash differs from the code
as it is now describes code that no longer exists, and `make test` says so.
Editing a comment or re-indenting does not change the hash: neither can move
a timing.
"""
import hashlib
import os
import re
import sys

import cli  # the exit codes

HASH_CHARS = 12
USAGE = "usage: code_hash.py [--flags TEXT] (--program DIR | FILE...)"

# The harness files a program is built from, by part (the Makefile links
# the same ones: HARNESS, ROWS_HARNESS and BACK_HARNESS there;
# tests/test_steps.py holds the two lists together).
COMMON = ["common/device.c", "common/harness.c", "common/flush.cu", "common/toolchain.cu",
          "common/check.h", "common/device.h", "common/flush.h", "common/harness.h",
          "common/workspace.h"]
HARNESS = {
    "sum": ["common/driver.c", "common/reduce.h"] + COMMON,
    # Part 2's contract and ops (common/rows.h) are its own: common/harness.h
    # names no op, so an op added here moves no other part's hash.
    "rows": ["common/rows_driver.c", "common/rows_ref.c", "common/rows_ref.h",
             "common/rows.h"] + COMMON,
    # Part 3's (back/): its own driver, references and contract,
    # and part 2's references for bfloat16's conversions (linked, not copied).
    "back": ["common/back_driver.c", "common/back_ref.c", "common/back_ref.h",
             "common/back.h", "common/rows_ref.c", "common/rows_ref.h",
             "common/rows.h"] + COMMON,
    # multigpu/run: its driver and shard plan, step 9's kernel (linked, not
    # copied) and the part 1 contract it calls that kernel through.
    "multigpu": ["multigpu/plan.c", "multigpu/plan.h", "step9_singlepass/reduce.cu",
                 "common/reduce.h"] + COMMON,
}

# A string or character literal (kept as is), or a comment (dropped).
_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(text):
    """C/C++ source without comments; a /* */ comment becomes one space."""
    def keep_literals(m):
        token = m.group(0)
        if token.startswith("//"):
            return ""
        if token.startswith("/*"):
            return " "
        return token
    return _TOKEN.sub(keep_literals, text)


def normalize(text):
    """Comments dropped, runs of blanks folded to one space, blank lines gone."""
    lines = (" ".join(line.split()) for line in strip_comments(text).splitlines())
    return "\n".join(line for line in lines if line) + "\n"


def code_hash(paths, flags=""):
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            texts.append(handle.read())
    return texts_hash(texts, flags)


def texts_hash(texts, flags=""):
    """code_hash() of files given by their text (a tuning variant's source
    exists only as the text tools/tune.sh would write)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(normalize(text).encode("utf-8"))
        digest.update(b"\0")
    digest.update(" ".join(flags.split()).encode("utf-8"))
    return digest.hexdigest()[:HASH_CHARS]


def program_files(directory, root="."):
    """The files a program's hash covers: its source, then its part's harness."""
    source = os.path.join(root, directory, "rows.cu")
    part = "rows"
    if os.path.isfile(os.path.join(root, directory, "multigpu.c")):
        source, part = os.path.join(root, directory, "multigpu.c"), "multigpu"
    elif os.path.isfile(os.path.join(root, directory, "back.cu")):
        source, part = os.path.join(root, directory, "back.cu"), "back"
    elif not os.path.isfile(source):
        source = os.path.join(root, directory, "reduce.cu")
        part = "sum"
    return [source] + [os.path.join(root, f) for f in HARNESS[part]]


def program_hash(directory, flags, root="."):
    return code_hash(program_files(directory, root), flags)


_MAKE_VAR = re.compile(r"^(NVFLAGS_BASE|CFLAGS_BASE)\s*:=\s*(.*?)\s*$", re.M)


def makefile_flags(root="."):
    """The Makefile's HASH_FLAGS ("nvcc $(NVFLAGS_BASE) cc $(CFLAGS_BASE)"),
    read from its two plain assignments, so that the scripts that mark stale
    results need no make; tests/test_claims.py checks it against `make
    hash-flags`."""
    with open(os.path.join(root, "Makefile"), encoding="utf-8") as handle:
        found = dict(_MAKE_VAR.findall(handle.read()))
    if set(found) != {"NVFLAGS_BASE", "CFLAGS_BASE"}:
        raise OSError(f"{root}/Makefile: no NVFLAGS_BASE := or CFLAGS_BASE := line")
    return f"nvcc {found['NVFLAGS_BASE']} cc {found['CFLAGS_BASE']}"


def main(argv):
    flags = ""
    if len(argv) >= 2 and argv[0] == "--flags":
        flags, argv = argv[1], argv[2:]
    if argv[:1] in (["-h"], ["--help"]):
        print("usage: " + __doc__.strip())
        return 0
    # An option where a file goes is a typo, not a file to hash.
    stray = [a for a in (argv[1:] if argv[:1] == ["--program"] else argv) if a.startswith("-")]
    if stray and stray[0] not in ("--flags", "--program", "-h", "--help"):
        print(f"code_hash.py: error: unknown option '{stray[0]}' (try --help)", file=sys.stderr)
        return cli.EXIT_USAGE
    if not argv or stray or (argv[0] == "--program" and len(argv) != 2):
        print(USAGE, file=sys.stderr)
        return cli.EXIT_USAGE
    try:
        if argv[0] == "--program":
            print(program_hash(argv[1], flags))
        else:
            print(code_hash(argv, flags))
    except OSError as err:
        print(f"code_hash.py: error: {err.strerror}: {err.filename}", file=sys.stderr)
        return cli.EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
