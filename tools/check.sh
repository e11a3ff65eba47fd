#!/usr/bin/env bash
# check.sh: the work of `make check` (mk/grade.mk), which runs it. It finds
# the program to grade (STEP=, SOURCE= or PROGRAM=, from the environment, as
# make exports its command line), builds it, and runs the grader on it.
# Every failure is one line written to $CHECK_VERDICT, which make turns into
# its own last error line (and exit status 2); this script then exits 0.
# Environment from make: CHECK_VERDICT, PYTHON, MAKE, MAKE_QUIET (-s or
# nothing), GRADER_FLAGS (the grader's options, quoted as make quotes them:
# they are also shown in the messages) and REPORT_FLAGS (--junit and the like).
set -u
verdict=${CHECK_VERDICT:?check.sh: run it through make check}
rm -f "$verdict"
stop() { echo "$*" > "$verdict"; exit 0; }
PYTHON=${PYTHON:-python3}
prog=${PROGRAM:-}; src=${SOURCE:-}; dir=

if [ -n "$src" ]; then
    test ! -d "$src" || stop "make check: SOURCE=$src is a folder: give its reduce.cu (part 1), rows.cu (part 2) or back.cu (part 3)"
    test -f "$src" || stop "make check: SOURCE=$src: no such file"
    case "$src" in *.cu) ;; *) stop "make check: SOURCE=$src: give a reduce.cu (part 1), rows.cu (part 2) or back.cu (part 3)" ;; esac
elif [ -n "$prog" ]; then
    test ! -d "$prog" || stop "make check: PROGRAM=$prog is a folder: give the program in it, e.g. PROGRAM=${prog%/}/run"
    test -e "$prog" || stop "make check: PROGRAM=$prog: no such file"
    test -x "$prog" || stop "make check: PROGRAM=$prog is not an executable (SOURCE=file.cu grades a source file)"
else
    step=${STEP:-}
    test -n "$step" || stop "usage: make check STEP=K (a step number, rows/K, back/K, cub, rows/cub, rows/copy, rows/copy16, back/copy3 or back/copy3_bf16), SOURCE=path/reduce.cu or PROGRAM=path/run"
    k=${step#rows/}; k=${k#back/}; case "$step" in cub|rows/cub|rows/copy|rows/copy16|back/copy3|back/copy3_bf16) k=0 ;; esac
    hint=$(echo "$step" | sed -n 's#^\(\(rows\|back\)/\)\{0,1\}step\([0-9][0-9]*\)\(_.*\)\{0,1\}$#\1\3#p')
    case "$k" in ''|*[!0-9]*) stop "make check: STEP must be a step number, rows/K, back/K, cub, rows/cub, rows/copy, rows/copy16, back/copy3 or back/copy3_bf16, got '$step'${hint:+ (that step is STEP=$hint)}" ;; esac
    dir=$("$PYTHON" tools/steps.py dir "$step" 2>/dev/null) ||
        stop "make check: no step $step (no $(case "$step" in rows/*|back/*) echo "${step%%/*}/step${step#*/}";; *) echo "step$step";; esac)_*/ folder)"
fi

if [ -n "$src" ]; then
    prog=$(bash tools/grade_source.sh --build-only "$src") ||
        stop "make check: $src does not build with this harness (the compiler's errors are above); bash tools/grade_source.sh $src exits 4 for this"
    echo "make check: $src builds with this harness: $prog"
elif [ -n "$dir" ]; then
    prog=build/monitored/$dir/run
    ${MAKE:-make} --no-print-directory ${MAKE_QUIET:-} "$prog" || stop "make check: $prog does not build (the compiler's errors are above)"
fi

flags=${GRADER_FLAGS:-}
direct="python3 tools/grade.py ${flags:+$flags }$prog"
nogpu=$(bash tools/need_gpu.sh check "$direct" "${dir:+$dir compiled; }grading it" 2>&1) ||
    stop "${nogpu:-make check: tools/need_gpu.sh failed}"
eval "set -- $flags ${REPORT_FLAGS:-}"   # the options as make quoted them
"$PYTHON" tools/grade.py "$@" "$prog"; rc=$?
case $rc in 0) ;; 1) why="a check failed" ;; 2) why="a usage error" ;; 3) why="no CUDA device" ;; *) why="it stopped" ;; esac
[ $rc -eq 0 ] || stop "make check: the grader exited $rc ($why); make exits 2 for any failure, this keeps the grader's code: $direct"
