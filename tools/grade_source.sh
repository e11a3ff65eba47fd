#!/usr/bin/env bash
# grade_source.sh [GRADER OPTIONS] SOURCE: grade a student's source file, the
# command behind `make check SOURCE=...` that keeps its own exit codes.
#
# SOURCE is a reduce.cu (part 1), a rows.cu (part 2) or a back.cu (part 3). It is copied to
# build/graded/<folder>/ (part 2: build/graded/rows/<folder>/, part 3:
# build/graded/back/<folder>/), <folder> being
# the name of the folder it came from, built there with this repository's
# harness and Makefile on any machine, then graded by tools/grade.py with the
# options given (--quick, --junit FILE, ...).
#   --build-only SOURCE   build it and print the program's path (exit 0), or
#                         print the compiler's errors only (exit 4)
# Exit status: the grader's (0 every check passed, 1 a check failed, 2 usage,
# 3 no CUDA device: the file built, and the grader needs a GPU), or 4: the file
# does not build (the compiler's errors are printed above that line).
set -u
cd "$(dirname "$0")/.."
EXIT_USAGE=2 EXIT_NO_BUILD=4

die() { echo "grade_source: $*" >&2; exit $EXIT_USAGE; }

build_only="" options=()
while [ $# -gt 1 ]; do
    case "$1" in
        --build-only) build_only=1 ;;
        *) options+=("$1") ;;
    esac
    shift
done
src=${1:-}
[ -n "$src" ] || die "usage: bash tools/grade_source.sh [--build-only] [grader options] path/reduce.cu (or rows.cu, back.cu)"
[ ! -d "$src" ] || die "$src is a folder: give its reduce.cu (part 1), rows.cu (part 2) or back.cu (part 3)"
[ -f "$src" ] || die "$src: no such file"
case "$src" in
    *rows.cu) part=rows/ file=rows.cu ;;
    *back.cu) part=back/ file=back.cu ;;
    *.cu) part="" file=reduce.cu ;;
    *) die "$src: give a reduce.cu (part 1), rows.cu (part 2) or back.cu (part 3)" ;;
esac
# The folder's name, kept to letters, digits, _ and -; a name that loses
# characters (张三 and 李四 both give ______) gets its checksum, so that two
# students never share a build folder.
orig=$(basename "$(dirname "$(realpath "$src")")")
name=$(printf '%s' "$orig" | tr -c 'a-zA-Z0-9_-' _)
[ "$name" = "$orig" ] || name="$name-$(printf '%s' "$orig" | cksum | cut -d' ' -f1)"
dir=build/graded/$part$name
mkdir -p "$dir"
# Copied only when it differs, so that grading the same file again does not
# build it again (and never onto itself: SOURCE=build/graded/...).
cmp -s "$src" "$dir/$file" || cp "$src" "$dir/$file" || exit $EXIT_USAGE
# The compiler's errors, if any, on stderr; make's command lines only with V=1.
# No jobserver of a make that runs this one (make check) is inherited.
# The errors name the student's file, not its copy: "copy(29): error",
# "copy:29:5: warning" and 'compilation of "copy"' are rewritten (command
# lines, where a space follows the copy's name, are left as make ran them).
unset MAKEFLAGS MFLAGS MAKELEVEL
copy=$(printf '%s' "$dir/$file" | sed 's/[.]/\\./g')
shown=$(printf '%s' "$src" | sed 's/[\\&|]/\\&/g')
make --no-print-directory ${V:+V=$V} $([ -n "${V:-}" ] || echo -s) "$dir/run" 2>&1 \
    | sed "s|$copy\([(:\"]\)|$shown\1|g" >&2
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    # make check says this in its own last line.
    [ -n "$build_only" ] || echo "grade_source: $src does not build with this harness" \
                                 "(the compiler's errors are above)" >&2
    exit $EXIT_NO_BUILD
fi
if [ -n "$build_only" ]; then
    echo "$dir/run"
    exit 0
fi
echo "grade_source: $src builds with this harness: $dir/run"
exec python3 tools/grade.py "${options[@]}" "$dir/run"
