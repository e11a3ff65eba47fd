#!/usr/bin/env bash
# step.sh: the teaching helpers behind `make diff STEP=K` and `make new NAME=...`.
#   step.sh diff K | rows/K | back/K   unified diff of the step before K against step
#                              K's source (tools/steps.py's diff_base: the step
#                              a `make new` step started from, a bfloat16
#                              step's float twin, else the nearest lower step
#                              of its op)
#   step.sh new stepN_slug [K]   a new step directory, started from step K of
#   step.sh new rows/stepN_slug [K]  that part (default: the step below it),
#   step.sh new back/stepN_slug [K]  (part 3 the same),
#                              with a header for you to fill in; N must be
#                              the next free number of that part
#   step.sh next [rows|back]   the next free step number of part 1 (or 2, or 3)
#   step.sh usage              make new's usage, with the next free numbers
# Errors are one line on stderr and exit 2; they name make's commands, never
# this script, since `make diff` and `make new` are what a student types.
set -u
cd "$(dirname "$0")/.."

die() { echo "$*" >&2; exit 2; }

# Each part: its folder prefix ("", "rows/" or "back/") and the file that makes a step.
part_file() { case $1 in rows/) echo rows.cu ;; back/) echo back.cu ;; *) echo reduce.cu ;; esac; }

# A part's name in messages: "" for part 1.
part_name() { case $1 in rows/) echo " of part 2" ;; back/) echo " of part 3" ;; esac; }

# The step list (which folders are steps, step K's folder, the step before
# a step) is tools/steps.py's, the one answer bench, the grader and the
# READMEs' diff blocks read too; this script asks it. -S: steps.py and
# generated.py need the standard library only, and site's start-up hooks
# cost more than their answer (make test runs make diff hundreds of times).
steps() { python3 -S tools/steps.py "$@"; }

# The directory of step K of part $1 (stepK_* with its source), or nothing.
step_dir() { steps dir "$1$2" 2>/dev/null; }

# The next free step number of part $1: one past the highest.
next_free() { steps --source next "${1%/}"; }

cmd_usage() {
    local one two three
    one=$(next_free "") two=$(next_free rows/) three=$(next_free back/)
    echo "usage: make new NAME=step${one}_slug (your step $one, from step $((one - 1))) or" \
         "NAME=rows/step${two}_slug (part 2) or NAME=back/step${three}_slug (part 3)," \
         "and FROM=K to start from step K instead;" \
         "slug: lowercase letters, digits, _." \
         "Only the next free number: steps are a sequence, each diffed against and" \
         "charted after the one before it" >&2
    exit 2
}

# "rows/" for a part 2 argument (rows/K, rows/stepN_slug), "back/" for part 3, else "".
part_of() { case $1 in rows/*) echo rows/ ;; back/*) echo back/ ;; esac; }

cmd_diff() {
    local arg=$1 part k
    part=$(part_of "$arg"); k=${arg#"$part"}
    if ! [[ $k =~ ^[0-9]+$ ]]; then
        # A step's folder name (step3_idle, rows/step3_vector): its number.
        local hint=""
        [[ $arg =~ ^(rows/|back/)?step([0-9]+)(_.*)?$ ]] && hint=" (that step is STEP=${BASH_REMATCH[1]}${BASH_REMATCH[2]})"
        die "make diff: STEP must be a step number, rows/K or back/K, got '$arg'$hint"
    fi
    k=$((10#$k))
    local file pair this prev
    file=$(part_file "$part")
    # Step K's folder, then the step before it (the one `make new FROM=K`
    # started it from, a bfloat16 step's float twin, else the nearest lower
    # step of its op): steps.py's diff_base, the step its README's diff block
    # shows. Both from one start of Python: a line each, the second empty
    # for a first step.
    pair=$(steps dir-base "$part$k" 2>/dev/null)
    this=${pair%%$'\n'*}
    if [ -z "$this" ]; then
        [ -n "$(step_dir "$part" "$k")" ] || die "make diff: no step $part$k (no ${part}step${k}_*/$file)"
        steps base "$part$k" >/dev/null; exit 2   # the folder is there: the step before is not (its error)
    fi
    prev=${pair#"$this"}; prev=${prev#$'\n'}
    if [ -z "$prev" ]; then
        echo "$this is the first step$(part_name "$part"): the starting point, with no previous step"
        exit 0
    fi
    # Labels, not file times: the same diff on every machine, and the same
    # function as the README's diff block (tools/generated.py).
    python3 -S tools/generated.py diff "$prev/$file" "$this/$file" "$prev/$file" "$this/$file"
    local rc=$?   # 1: they differ, which is the point; 141: the reader (| head) closed the pipe
    [ $rc -le 1 ] || [ $rc -eq 141 ] || exit 2
    exit 0
}

cmd_new() {
    local name=$1 from_arg=$2 part base
    part=$(part_of "$name"); base=${name#"$part"}
    local next
    next=$(next_free "$part")
    [[ $base =~ ^step([0-9]+)_[a-z0-9_]+$ ]] || die "make new: NAME must look like" \
        "${part}step${next}_myidea (stepN_, then lowercase letters, digits and _; no spaces), got '$name'"
    local digits=${BASH_REMATCH[1]}
    [[ $digits == 0 || $digits != 0* ]] || die "make new: NAME=$name: write the number" \
        "without leading zeros (${part}step$((10#$digits))_...)"
    local k=$digits file
    file=$(part_file "$part")
    [ ! -e "$name" ] || die "make new: $name already exists"
    [ -z "$(step_dir "$part" "$k")" ] || die "make new: step $part$k exists already:" \
        "$(step_dir "$part" "$k") (the next free number is $next: NAME=${part}step${next}_slug)"
    [ "$k" = "$next" ] || die "make new: NAME=$name: the next free step number is $next" \
        "(NAME=${part}step${next}_${base#step*_}): steps are a sequence, each diffed against the one before it"
    local from
    if [ -n "$from_arg" ]; then
        # FROM=K, or FROM=rows/K (back/K) for a part 2 (3) step: any step of the same part.
        local want=${from_arg#"$part"}
        [[ $want =~ ^[0-9]+$ ]] || die "make new: FROM must be a step number of the same part as" \
            "NAME (FROM=3${part:+ or FROM=${part}3}), got '$from_arg'"
        from=$(step_dir "$part" "$((10#$want))")
        [ -n "$from" ] || die "make new: FROM=$from_arg: no step $part$((10#$want))" \
            "(no ${part}step$((10#$want))_*/$file)"
    else
        from=$(steps --source list "${part%/}" | tail -n 1)   # k is the next free number
        [ -n "$from" ] || die "make new: no step below $part$k to start from"
    fi
    mkdir "$name" || exit 2
    # A header of your own in place of the step's: its claims (the Effect
    # line above all) were measured on that step, not on yours.
    {
        echo "// $name: say your one change here, in one line (the results table shows it)."
        echo "//"
        echo "// Change: what you changed, in a line or two."
        echo "// Why it helps: the hardware reason you expect it to be faster."
        echo "// Effect: not measured yet (make bench; compare with $from)."
        echo "// Started from ${from#"$part"} by make new: make diff STEP=$part$k shows your change against it."
        awk 'started || !/^\/\// { started = 1; print }' "$from/$file"
    } > "$name/$file"
    # The commands of the main README: `make stepK` builds and links stepK.
    local alias=${part}step$k
    local bench="make bench" bench_why="measured beside every step: plots/results/ (needs a GPU)"
    if [ "$part" = back/ ]; then   # a plain make bench leaves part 3 out
        bench="make bench ONLY=$name" bench_why="measured beside its bar and PyTorch: plots/results/ (needs a GPU)"
    fi
    {
        echo "# $name"
        echo
        echo "Started from \`$from\` by \`make new\`. Change one thing in \`$file\`, then:"
        echo
        printf '    %-44s # %s\n' \
            "make $alias && ./$alias/run --check" "builds, links $alias -> $name, one exact check" \
            "make check STEP=$part$k" "the grader: sizes, fills, offsets, races (needs a GPU)" \
            "make diff STEP=$part$k" "your change, as a diff against $from" \
            "$bench" "$bench_why"
        echo
        cat <<MD
## Measured
<!-- BEGIN measured -->
<!-- END measured -->

## Diff against the previous step
<!-- BEGIN diff -->
<!-- END diff -->
MD
    } > "$name/README.md"
    echo "created $name from $from: edit $name/$file, then make $alias && ./$alias/run --check"
}

case "${1:-}" in
diff)  [ $# -eq 2 ] && [ -n "$2" ] || die "usage: make diff STEP=K (a step number, or rows/K for part 2, back/K for part 3)"
       cmd_diff "$2" ;;
new)   [ $# -ge 2 ] && [ $# -le 3 ] && [ -n "$2" ] || cmd_usage
       cmd_new "$2" "${3:-}" ;;
next)  next_free "$(case ${2:-} in rows) echo rows/ ;; back) echo back/ ;; esac)" ;;
usage) cmd_usage ;;
*)     die "usage: make diff STEP=K | make new NAME=stepN_slug" ;;
esac
