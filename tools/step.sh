#!/usr/bin/env bash
# step.sh: the teaching helpers behind `make diff STEP=K` and `make new NAME=...`.
#   step.sh diff K | rows/K    unified diff of the step before K (the nearest
#                              lower number, or the step a `make new` step
#                              started from) against step K's source
#   step.sh new stepN_slug [K]   a new step directory, started from step K of
#   step.sh new rows/stepN_slug [K]  that part (default: the step below it),
#                              with a header for you to fill in; N must be
#                              the next free number of that part
#   step.sh next [rows]        the next free step number of part 1 (or 2)
#   step.sh usage              make new's usage, with the next free numbers
# Errors are one line on stderr and exit 2; they name make's commands, never
# this script, since `make diff` and `make new` are what a student types.
set -u
cd "$(dirname "$0")/.."

die() { echo "$*" >&2; exit 2; }

# Each part: its folder prefix ("" or "rows/") and the file that makes a step.
part_file() { [ "$1" = rows/ ] && echo rows.cu || echo reduce.cu; }

# The directory of step K of part $1 (stepK_*), or nothing.
step_dir() {
    local part=$1 k=$2 d
    for d in "$part"step"$k"_*/; do
        [ -f "$d$(part_file "$part")" ] && { echo "${d%/}"; return; }
    done
}

# Step numbers present in part $1, in numeric order.
step_numbers() {
    local part=$1 d n
    for d in "$part"step[0-9]*_*/; do
        [ -f "$d$(part_file "$part")" ] || continue
        n=${d#"$part"step}; echo "${n%%_*}"
    done | sort -n
}

# The nearest step number below $2 in part $1, or nothing.
step_below() {
    local k
    for k in $(step_numbers "$1"); do
        [ "$((10#$k))" -lt "$2" ] && echo "$k"
    done | tail -n 1
}

# What a part 2 step's rows.cu computes (common/rows.h's step_op, with _bf16
# for bfloat16 data), as tools/bench.py's row_program_op reads it.
step_op_of() {
    local op
    op=$(sed -n 's/^[[:space:]]*const[[:space:]]*enum[[:space:]]*row_op[[:space:]]*step_op[[:space:]]*=[[:space:]]*ROW_\([A-Z0-9_]*\)[[:space:]]*;.*/\1/p' "$1" | head -n 1)
    [ -n "$op" ] || return 0
    op=$(echo "$op" | tr 'A-Z' 'a-z')
    grep -Eq '^[[:space:]]*const[[:space:]]+enum[[:space:]]+row_dtype[[:space:]]+step_dtype[[:space:]]*=[[:space:]]*ROW_BF16[[:space:]]*;' "$1" && op=${op}_bf16
    echo "$op"
}

# The step whose diff against part 2's step $1 (a number) is its lesson, as
# tools/bench.py's diff_base decides: a bfloat16 step's float twin (the
# nearest lower step of the same op in float), else the nearest lower step
# of the same op, else nothing (then the nearest lower step is taken).
rows_base() {
    local k=$1 op want
    op=$(step_op_of "$(step_dir rows/ "$k")/rows.cu")
    [ -n "$op" ] || return 0
    for want in ${op%_bf16} "$op"; do   # the float op first, then the step's own
        local n found=""
        for n in $(step_numbers rows/); do
            [ "$((10#$n))" -lt "$k" ] && [ "$(step_op_of "$(step_dir rows/ "$n")/rows.cu")" = "$want" ] &&
                found=$n
        done
        [ -n "$found" ] && { echo "$found"; return 0; }
    done
}

# The next free step number of part $1: one past the highest.
next_free() {
    local last
    last=$(step_numbers "$1" | tail -n 1)
    if [ -n "$last" ]; then echo $((10#$last + 1)); else echo 0; fi
}

cmd_usage() {
    local one two
    one=$(next_free "") two=$(next_free rows/)
    echo "usage: make new NAME=step${one}_slug (your step $one, from step $((one - 1))) or" \
         "NAME=rows/step${two}_slug (part 2), and FROM=K to start from step K instead;" \
         "slug: lowercase letters, digits, _." \
         "Only the next free number: steps are a sequence, each diffed against and" \
         "charted after the one before it" >&2
    exit 2
}

# "rows/" for a part 2 argument (rows/K, rows/stepN_slug), else "".
part_of() { [[ $1 == rows/* ]] && echo rows/ || true; }

cmd_diff() {
    local arg=$1 part k
    part=$(part_of "$arg"); k=${arg#"$part"}
    if ! [[ $k =~ ^[0-9]+$ ]]; then
        # A step's folder name (step3_idle, rows/step3_vector): its number.
        local hint=""
        [[ $arg =~ ^(rows/)?step([0-9]+)(_.*)?$ ]] && hint=" (that step is STEP=${BASH_REMATCH[1]}${BASH_REMATCH[2]})"
        die "make diff: STEP must be a step number or rows/K, got '$arg'$hint"
    fi
    k=$((10#$k))
    local file this prev below
    file=$(part_file "$part")
    this=$(step_dir "$part" "$k")
    [ -n "$this" ] || die "make diff: no step $part$k (no ${part}step${k}_*/$file)"
    below=$(step_below "$part" "$k")
    if [ -z "$below" ]; then
        echo "$this is the first step${part:+ of part 2}: the starting point, with no previous step"
        exit 0
    fi
    [ "$part" = rows/ ] && [ -n "$(rows_base "$k")" ] && below=$(rows_base "$k")
    prev=$(step_dir "$part" "$below")
    # A step made by `make new FROM=K` names the step it started from.
    local origin
    origin=$(sed -n 's|^// Started from \(step[0-9]*_[a-z0-9_]*\) by make new.*|\1|p' \
             "$this/$file" | head -n 1)
    [ -n "$origin" ] && [ -f "$part$origin/$file" ] && prev=$part$origin
    # Labels, not file times: the same diff on every machine.
    diff -u --label "$prev/$file" --label "$this/$file" "$prev/$file" "$this/$file"
    [ $? -le 1 ] || exit 2   # diff: 1 means "they differ", which is the point
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
    local below from
    if [ -n "$from_arg" ]; then
        # FROM=K, or FROM=rows/K for a part 2 step: any step of the same part.
        local want=${from_arg#"$part"}
        [[ $want =~ ^[0-9]+$ ]] || die "make new: FROM must be a step number of the same part as" \
            "NAME (FROM=3${part:+ or FROM=rows/3}), got '$from_arg'"
        from=$(step_dir "$part" "$((10#$want))")
        [ -n "$from" ] || die "make new: FROM=$from_arg: no step $part$((10#$want))" \
            "(no ${part}step$((10#$want))_*/$file)"
    else
        below=$(step_below "$part" "$k")
        [ -n "$below" ] || die "make new: no step below $part$k to start from"
        from=$(step_dir "$part" "$below")
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
    {
        echo "# $name"
        echo
        echo "Started from \`$from\` by \`make new\`. Change one thing in \`$file\`, then:"
        echo
        printf '    %-44s # %s\n' \
            "make $alias && ./$alias/run --check" "builds, links $alias -> $name, one exact check" \
            "make check STEP=$part$k" "the grader: sizes, fills, offsets, races (needs a GPU)" \
            "make diff STEP=$part$k" "your change, as a diff against $from" \
            "make bench" "measured beside every step: plots/results/ (needs a GPU)"
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
diff)  [ $# -eq 2 ] && [ -n "$2" ] || die "usage: make diff STEP=K (a step number, or rows/K for part 2)"
       cmd_diff "$2" ;;
new)   [ $# -ge 2 ] && [ $# -le 3 ] && [ -n "$2" ] || cmd_usage
       cmd_new "$2" "${3:-}" ;;
next)  next_free "$([ "${2:-}" = rows ] && echo rows/)" ;;
usage) cmd_usage ;;
*)     die "usage: make diff STEP=K | make new NAME=stepN_slug" ;;
esac
