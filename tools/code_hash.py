#!/usr/bin/env python3
"""code_hash.py FILE...: a short hash of the code in FILEs, comments and
layout ignored, printed on one line.

Every program embeds the hash of its GPU code (its reduce.cu and the harness's
flush.cu); every results row carries it. A committed result whose hash differs
from the code as it is now describes code that no longer exists, and
`make test` says so. Editing a comment or re-indenting does not change the
hash: neither can move a timing.
"""
import hashlib
import re
import sys

HASH_CHARS = 12

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


def code_hash(paths):
    digest = hashlib.sha256()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            digest.update(normalize(handle.read()).encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:HASH_CHARS]


def main(argv):
    if not argv:
        print("usage: code_hash.py FILE...", file=sys.stderr)
        return 2
    try:
        print(code_hash(argv))
    except OSError as err:
        print(f"code_hash.py: error: {err.strerror}: {err.filename}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
