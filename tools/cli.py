"""How a tool's main() ends: one line on stderr when it fails, never a
traceback (a student reads one line, not thirty), and one set of exit codes.

Exit codes, the one set every tool takes from here: 0 done; 1 failed (a
wrong, stale or missing result: the tool's own verdict); 2 bad input or
usage; 3 no CUDA device (or, for the chart tools, no matplotlib: they say
which); 4 something else the run needs failed or is missing (ncu for
profile.py; a student's build for grade_source.sh, which grade_class.py
reads); 5 the GPU's counters need a permission (profile.py); 130
interrupted (Ctrl-C). tests/test_cli.py checks that no tool numbers its own.

TOOLS_DEBUG=1 lets an internal error's traceback through, for whoever fixes
the tool (the older PLOT_DEBUG, DOCS_DEBUG and DIAGRAMS_DEBUG still work).
"""
import os
import sys

EXIT_FAILED, EXIT_USAGE, EXIT_DEVICE, EXIT_NEEDS, EXIT_PERMISSION = 1, 2, 3, 4, 5
EXIT_INTERRUPTED = 130
DEBUG = "TOOLS_DEBUG"


def output_problem(path, folder=False):
    """Why a tool cannot write its output at path, or "" (also for no path).
    folder: path is a folder the tool writes into, made if missing, so only
    a file in its place is a problem; else path is a file, and a folder in
    its place, or a missing folder above it, is. A tool asks before its work,
    so that a bad path is one line at the start, not a traceback at the end."""
    if path is None:
        return ""
    if folder:
        return "a file, not a folder" if os.path.exists(path) and not os.path.isdir(path) else ""
    if not path:
        return "an empty path"
    if os.path.isdir(path):
        return "a folder, not a file"
    above = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(above):
        return f"its folder {above} does not exist"
    if not os.access(above, os.W_OK):
        return f"its folder {above} is not writable"
    return ""


def os_error_text(err):
    """'No such file or directory: path', as the tools report a file error."""
    where = f": {err.filename}" if err.filename else ""
    return f"{err.strerror or err}{where}"


def guarded(tool, work, known=(), code=None, internal=EXIT_FAILED, debug=None):
    """work()'s exit code, or one line on stderr and a code when it raises:
    - an error of a `known` type, the tool's own report: '<tool>: <error>'
      and the error's .code; or, where `code` is given, '<tool>: error:
      <error>' and `code`, as for a file error (OSError) too;
    - Ctrl-C: '<tool>: interrupted', 130;
    - anything else, an internal error: '<tool>: internal error: ...' and
      `internal`; with TOOLS_DEBUG=1 (or the tool's older `debug` name) it is
      raised again, traceback and all."""
    try:
        return work()
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001  (every failure ends in one line)
        if isinstance(err, known) and code is None:
            print(f"{tool}: {err}", file=sys.stderr)
            return err.code
        if isinstance(err, known) or (code is not None and isinstance(err, OSError)):
            message = str(err) if isinstance(err, known) else os_error_text(err)
            print(f"{tool}: error: {' '.join(message.split())}", file=sys.stderr)
            return code
        if os.environ.get(DEBUG) or (debug and os.environ.get(debug)):
            raise
        print(f"{tool}: internal error: {type(err).__name__}: {' '.join(str(err).split())} "
              f"(rerun with {DEBUG}=1 for the traceback)", file=sys.stderr)
        return internal
