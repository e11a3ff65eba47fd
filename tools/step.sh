#!/usr/bin/env bash
# step.sh: the teaching helpers behind `make diff STEP=K` and `make new NAME=...`.
#   step.sh diff K           unified diff of the step before K (the nearest lower
#                            number) against step K's reduce.cu
#   step.sh new stepN_slug   a new step directory, started from the nearest
#                            step below N, with a header for you to fill in
set -u

die() { echo "error: $*" >&2; exit 2; }

# The directory of step K (stepK_*), or nothing.
step_dir() {
    local d
    for d in step"$1"_*/; do
        [ -f "$d/reduce.cu" ] && { echo "${d%/}"; return; }
    done
}

# The nearest step number below $1, or nothing.
step_below() {
    local k
    for k in $(step_numbers); do
        [ "$k" -lt "$1" ] && echo "$k"
    done | tail -n 1
}

# Step numbers present, in numeric order.
step_numbers() {
    local d
    for d in step[0-9]*_*/; do
        [ -f "$d/reduce.cu" ] || continue
        d=${d#step}; echo "${d%%_*}"
    done | sort -n
}

cmd_diff() {
    local k=$1
    [[ $k =~ ^[0-9]+$ ]] || die "STEP must be a step number, got '$k'"
    local this prev
    this=$(step_dir "$k")
    [ -n "$this" ] || die "no step $k (no step${k}_*/reduce.cu)"
    [ "$k" -gt 0 ] || { echo "step 0 ($this) is the starting point: there is no previous step"; exit 0; }
    local below
    below=$(step_below "$k")
    [ -n "$below" ] || { echo "$this is the first step: there is no previous step"; exit 0; }
    prev=$(step_dir "$below")
    diff -u "$prev/reduce.cu" "$this/reduce.cu"
    [ $? -le 1 ] || exit 2   # diff: 1 means "they differ", which is the point
    exit 0
}

cmd_new() {
    local name=$1
    [[ $name =~ ^step([0-9]+)_[a-z0-9_]+$ ]] || die "NAME must look like step9_myidea (lowercase), got '$name'"
    local k=${BASH_REMATCH[1]}
    [ ! -e "$name" ] || die "$name already exists"
    [ -z "$(step_dir "$k")" ] || die "step $k exists already: $(step_dir "$k")"
    local below from
    below=$(step_below "$k")
    [ -n "$below" ] || die "no step below $k to start from"
    from=$(step_dir "$below")
    mkdir "$name"
    # A header of your own in place of the step's: its claims (the Effect
    # line above all) were measured on that step, not on yours.
    {
        echo "// $name: say your one change here, in one line (the results table shows it)."
        echo "//"
        echo "// Change: what you changed, in a line or two."
        echo "// Why it helps: the hardware reason you expect it to be faster."
        echo "// Effect: not measured yet (make bench; compare with $from)."
        awk 'started || !/^\/\// { started = 1; print }' "$from/reduce.cu"
    } > "$name/reduce.cu"
    cat > "$name/README.md" <<MD
# $name

Started from \`$from\` by \`make new\`. Change one thing in \`reduce.cu\`, then:

    make $name/run && ./$name/run --check    # still correct? (one exact check)
    make check STEP=$k                       # the grader: sizes, fills, offsets, races
    make diff STEP=$k                        # your change, as a diff
    make bench                               # measured beside every step: plots/results/

## Measured
<!-- BEGIN measured -->
<!-- END measured -->

## Diff against the previous step
<!-- BEGIN diff -->
<!-- END diff -->
MD
    echo "created $name from $from: edit $name/reduce.cu, then make check STEP=$k && make bench"
}

case "${1:-}" in
diff) [ $# -eq 2 ] || die "usage: step.sh diff K"; cmd_diff "$2" ;;
new)  [ $# -eq 2 ] || die "usage: step.sh new stepN_slug"; cmd_new "$2" ;;
*)    die "usage: step.sh diff K | new stepN_slug" ;;
esac
