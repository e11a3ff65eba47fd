#!/usr/bin/env bash
# cli_tests.sh: what works without a GPU: flags, exit codes and code hashes
# of every built program of both parts, the no-device errors (programs, the
# grader, and every GPU target of make: one line, nothing left behind),
# `make stepK`, `make diff`, `make new` in both parts, `make check`'s errors
# and its last line, `make help`, the mutants, rebuilds when ARCH changes,
# and the homework flow (make new, an edit, make, make diff, make check,
# make test) in a scratch copy, in both parts. Part 3's programs (back/, a
# draft) get the same flag and exit-code checks, and its driver and kernels
# run on the CPU (tests/back_fake.c, tests/back_emu.h).
# A "cli: <section> (at Ns)" line starts each part. Each skipped check says
# "skipped: CAUSE: detail" (tests/run_tests.sh counts them by cause).
# Ends with "cli: N passed, N failed[, N skipped]".
set -u
cd "$(dirname "$0")/.."
root=$PWD
# Every make below is this suite's own: none inherits `make -j`'s jobserver
# or `-s` from a `make test` that runs this file.
unset MAKEFLAGS MFLAGS MAKELEVEL
# make test SUITES=cli V=1 exports them; the runs below pick their own.
unset SUITES V
passed=0 failed=0 skipped=0

ok()   { passed=$((passed + 1)); }
bad()  { failed=$((failed + 1)); echo "FAIL $*"; }
skip() { skipped=$((skipped + 1)); echo "skipped: $*"; }
# A progress line: this suite runs for minutes.
section() { echo "cli: $* (at ${SECONDS}s)"; }

# expect CODE TEXT CMD...: exit status CODE and TEXT somewhere in the output.
expect() {
    local code=$1 text=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" = "$code" ] && [[ $out == *"$text"* ]]; then ok
    else bad "$* -> exit $rc (want $code, '$text'): $(echo "$out" | head -n 2)"; fi
}

# expect_one_line CODE CMD...: exit CODE with exactly one line on stderr, "error: ...".
# (One line: no newline inside what $(...) kept, which drops the last one;
# tested in bash, not by `wc -l` in a subshell: these two run a thousand times.)
expect_one_line() {
    local code=$1; shift
    local err rc
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = "$code" ] && [[ $err != *$'\n'* ]] && [[ $err == error:* ]]; then ok
    else bad "$* -> exit $rc, stderr: $err"; fi
}

# expect_only_line CODE TEXT CMD...: exit CODE, one line of output in all
# (stdout and stderr), TEXT in it, no traceback.
expect_only_line() {
    local code=$1 text=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" = "$code" ] && [[ $out != *$'\n'* ]] && [[ $out == *"$text"* ]] \
            && [[ $out != *Traceback* ]]; then ok
    else bad "$* -> exit $rc (want $code and one line with '$text'): $(echo "$out" | head -n 4)"; fi
}

# check_links WHAT: every step of both parts has the link make stepK makes
# (step5 -> step5_multi, rows/step6 -> step6_<slug>), as WHAT should leave it.
check_links() {
    local d link missing=""
    for d in $(ls -d step[0-9]*_*/ rows/step[0-9]*_*/ 2>/dev/null); do
        d=${d%/}; link=$(dirname "$d")/$(basename "$d" | cut -d_ -f1); link=${link#./}
        [ "$(readlink "$link")" = "$(basename "$d")" ] || missing="$missing $link"
    done
    [ -z "$missing" ] && ok || bad "$1 did not link every step: no$missing"
}

# check_code_hash PROGRAM: the hash its --version prints, and the tree's for
# its folder: `make code-hash` for the first program of each part (the
# Makefile's own path), tools/code_hash.py with make's flags, all programs in
# one process, for the rest (a make a program cost ~0.4 s: 25 s of this suite);
# a folder made since (the homework flow's new steps) asks make too.
hash_flags=$(make -s --no-print-directory hash-flags)
tree_hashes=$(cd "$root" && python3 -S -c '
import sys; sys.path.insert(0, "tools"); import code_hash
for d in sys.argv[2:]:
    print(d, code_hash.program_hash(d, sys.argv[1]))' "$hash_flags" \
    $(ls -d step[0-9]*_*/ baseline_cub/ rows/step[0-9]*_*/ rows/baseline_*/ back/step[0-9]*_*/ \
          back/baseline_*/ 2>/dev/null | sed 's#/$##'))
made_once=""
check_code_hash() {
    local p=$1 dir built made part
    dir=$(dirname "$p"); part=${dir%%/*}; [ "$part" = "$dir" ] && part=sum
    built=$("$p" --version | sed -n 's/.*code_hash=\([0-9a-f]*\) .*/\1/p')
    made=$(echo "$tree_hashes" | awk -v d="$dir" '$1 == d { print $2 }')
    # A part's first program, and a folder made since (the homework flow's).
    if [[ " $made_once " != *" $part "* ]] || [ -z "$made" ]; then
        made_once="$made_once $part"
        made=$(make -s --no-print-directory code-hash DIR="$dir")
    fi
    [ -n "$built" ] && [ "$built" = "$made" ] && ok \
        || bad "$p --version: code_hash '$built' is not the tree's for $dir, '$made'"
}

section "part 1 programs: flags, exit codes, --version"
programs=$(ls -d step[0-9]*_*/run baseline_cub/run 2>/dev/null)
for p in $programs; do
    expect 0 "usage:" "$p" --help
    expect 0 "exit status" "$p" -h
    for args in "-n 0" "-n -5" "-n abc" "-n 2G" "-n 3000000000" "-n" "--reps 0" \
                "--warmup x" "--fill nope" "--offset 4" "--seed -1" "--bogus" "--csv" \
                "--at 3" "-n 5 --fill onehot --at 5" "--checks" "--csv /nonexistent-dir/x.csv"; do
        # shellcheck disable=SC2086
        expect_one_line 2 "$p" $args
    done
    # --n, and part 2's size flags, get a hint that names -n N.
    for args in "--n 5" "--n=5" "--rows 4" "--cols=4"; do
        # shellcheck disable=SC2086
        expect 2 "'${args%%[ =]*}': the number of floats is -n N (try --help)" "$p" $args
    done
    # --version needs no GPU: the step, the hash of its GPU code, the revision.
    name=$(basename "$(dirname "$p")"); name=${name#baseline_}
    expect 0 "$name code_hash=" "$p" --version
    check_code_hash "$p"
done

# Part 2's row programs: their own options (no -n), the same exit codes.
section "part 2 programs: flags, exit codes, --version"
row_programs=$(ls -d rows/step[0-9]*_*/run rows/baseline_*/run 2>/dev/null)
[ -n "$row_programs" ] && ok || bad "no part 2 program is built (rows/*/run)"
for p in $row_programs; do
    expect 0 "usage:" "$p" --help
    expect 0 "exit status" "$p" -h
    for args in "--rows 0" "--cols 0" "--rows -5" "--rows abc" "--cols 2G" "--rows" "--cols" \
                "-n 5" "--rows 3000000000 --cols 1000" "--rows 70000000 --cols 1048576" \
                "--cols 2000000" "--reps 0" "--warmup x" "--fill nope" "--offset 8" "--seed -1" \
                "--y-offset 8" "--mask nope" "--check-every 0" \
                "--bogus" "--csv" "--at 3" "--checks" "--csv /nonexistent-dir/x.csv"; do
        # shellcheck disable=SC2086
        expect_one_line 2 "$p" $args
    done
    # -n and --n get a hint that names part 2's size flags.
    for args in "-n 5" "-n=5" "--n 5" "--n=5"; do
        # shellcheck disable=SC2086
        expect 2 "'${args%%[ =]*}': the shape is --rows R and --cols C (try --help)" "$p" $args
    done
    name=$(dirname "$p"); name=${name/baseline_/}
    expect 0 "$name code_hash=" "$p" --version
    check_code_hash "$p"
done

# Part 3's programs (back/): part 2's parser
# with part 3's own fills (BACK_FILLS) and checks (common/back_ref.c), the same exit
# codes, and names of their own: back/step0_thread ..., and back/copy3 for
# its bar, back/baseline_copy3. Every step, each checked alike: the loop
# below takes every back/stepN_slug/ that make built, and each step's folder
# must have its program, its link back/stepN and its CPU build
# (build/back_emu/, below).
section "part 3 programs: flags, exit codes, --version"
back_programs=$(ls -d back/step[0-9]*_*/run back/baseline_*/run 2>/dev/null)
[ -n "$back_programs" ] && ok || bad "no part 3 program is built (back/*/run)"
for d in $(ls -d back/step[0-9]*_*/back.cu 2>/dev/null | xargs -n 1 dirname); do
    link=back/$(basename "$d" | cut -d_ -f1)
    [ -x "$d/run" ] && [ "$(readlink "$link")" = "$(basename "$d")" ] \
        && [ -x "build/back_emu/$(basename "$d")/run" ] && ok \
        || bad "$d: make test did not build $d/run, link $link, or build/back_emu/$(basename "$d")/run"
done
[[ $back_programs == *back/baseline_copy3/run* ]] && ok \
    || bad "back/baseline_copy3/run is not built (make builds it)"
for p in $back_programs; do
    # Softmax's backward pass (step 10 on) has no gamma, and its exact fill
    # takes any number of rows; LayerNorm's (and the copy) the rest.
    softmax=""
    grep -q '^const enum back_op step_op = BACK_SOFTMAX;' "$(dirname "$p")/back.cu" && softmax=1
    # A bfloat16 program's offsets count bfloat16s, 8 a 16-byte pack.
    past_pack=4
    grep -q '^const enum back_dtype step_dtype = BACK_BF16;' "$(dirname "$p")/back.cu" && past_pack=8
    # gamma, dgamma and dbeta stay floats in bfloat16 too: 4 is past their pack.
    op_args=("--gamma-offset 4" "--gamma-offset $past_pack" "--check --rows 700000 --cols 8" "--fill exact --rows 2000000 --cols 1")
    [ -n "$softmax" ] && op_args=("--gamma-offset 1")
    expect 0 "usage:" "$p" --help
    expect 0 "exit status" "$p" -h
    for args in "--rows 0" "--cols 0" "--rows -5" "--rows abc" "--cols 2000000" "--rows" "--cols" \
                "--rows 3000000000 --cols 1000" "--reps 0" "--warmup x" "--seed -1" \
                "--fill nope" "--fill ones" "--fill levels" "--fill centered" "--offset $past_pack" \
                "--y-offset $past_pack" "--beta-offset 1" "--mask causal" "--check-every 2" "${op_args[@]}" \
                "--bogus" "--csv" "--checks" "--csv /nonexistent-dir/x.csv"; do
        # shellcheck disable=SC2086
        expect_one_line 2 "$p" $args
    done
    expect 2 "--fill must be random, exact, shifted or tiny, got 'ones'" \
        "$p" --fill ones
    expect 2 "'-n': the shape is --rows R and --cols C (try --help)" "$p" -n 5
    if [ -n "$softmax" ]; then
        expect 0 "softmax backward pass" "$p" --help
        expect 2 "--gamma-offset places gamma" "$p" --gamma-offset 1
    else
        expect 2 "--fill exact keeps every sum exact only while 26 x rows + 10 x cols < 2^24" \
            "$p" --check --rows 700000 --cols 8
    fi
    name=$(dirname "$p"); name=${name/baseline_/}
    expect 0 "$name code_hash=" "$p" --version
    check_code_hash "$p"
done
expect 0 "Part 3's bar, not a step: dx = x + dy" back/baseline_copy3/run --help
# The bfloat16 bar says so, and counts its offsets in bfloat16s (it said floats, 0..3).
expect 0 "Part 3's bfloat16 bar, not a step" back/baseline_copy3_bf16/run --help
expect 0 "start x and dy K bfloat16s (0..7)" back/baseline_copy3_bf16/run --help
# The driver's whole flow, on the CPU (tests/back_fake.c): a good program
# passes, timed and --check, with its CSV row; step 0's atomics are within
# their bounds but fail the determinism check, in both modes; each broken
# output is caught, with its message.
fake=build/back_fake
if [ -x $fake ]; then
    scratch_csv=$(mktemp)
    rm -f "$scratch_csv"
    expect 0 "determinism PASS" env BACK_FAKE=ok $fake --check --rows 33 --cols 7
    expect 0 "check    PASS: 6 checks" env BACK_FAKE=ok $fake --rows 64 --cols 33 --reps 3 --csv "$scratch_csv"
    expect 0 "PASS" env BACK_FAKE=ok $fake --check --fill shifted --rows 5 --cols 1 --offset 3 --y-offset 2 --gamma-offset 1
    row=$(tail -n 1 "$scratch_csv" 2>/dev/null)
    [[ $row == back/fake,2112,3,* ]] && [[ $row == *",64,33,layernorm_backward,26252,"* ]] && ok \
        || bad "$fake's CSV row is not a timed 64 x 33 layernorm_backward of 26252 bytes: $row"
    rm -f "$scratch_csv"
    expect 1 "result   every output within its bound (dgamma and dbeta exactly" env BACK_FAKE=atomic $fake --check --rows 33 --cols 7
    expect 1 "determinism FAIL: dgamma[0] was" env BACK_FAKE=atomic $fake --check --rows 33 --cols 7
    expect 1 "not the same bits every run" env BACK_FAKE=atomic $fake --rows 64 --cols 33 --reps 3
    expect 1 "FAIL: a check before timing failed" env BACK_FAKE=nm1 $fake --rows 64 --cols 33
    expect 1 "FAIL: dx[row 0, col 0] is" env BACK_FAKE=nm1 $fake --check --rows 8 --cols 5
    expect 1 "(NaN: an output nothing wrote" env BACK_FAKE=nan $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5
    expect 1 "FAIL: dgamma[col 0] is" env BACK_FAKE=stale $fake --check --rows 8 --cols 5
    # The workspace (back_workspace(), steps 2 and 3): a program that asks
    # for one gets it, of the size it asked for (it writes all of it: the
    # guards), its ticket at 0 and its scratch NaN at every call (the fake
    # checks both on entry), in --check, the timed runs and the checks
    # before them; one that keeps partial sums in the scratch from call to
    # call reads NaN, in either mode (--check's random-fill runs are checked
    # against the reference too, not only against each other); one that
    # leaves its ticket non-zero is caught.
    expect 0 "determinism PASS" env BACK_FAKE=ws $fake --check --rows 33 --cols 7
    expect 0 "check    PASS: 6 checks" env BACK_FAKE=ws $fake --rows 64 --cols 33 --reps 3 --warmup 2
    expect 0 "PASS" env BACK_FAKE=ws $fake --check --fill tiny --rows 1 --cols 1 --offset 1 --gamma-offset 3
    expect 1 "determinism FAIL: run 1 of the random fill is wrong" env BACK_FAKE=ws_stale $fake --check --rows 33 --cols 7
    expect 1 "(NaN: an output nothing wrote" env BACK_FAKE=ws_stale $fake --rows 8 --cols 5 --reps 2 --warmup 1
    expect 1 "FAIL: a run left its workspace's counters non-zero" env BACK_FAKE=ws_ticket $fake --check --rows 8 --cols 5
    expect 1 "FAIL: a check before timing failed" env BACK_FAKE=ws_ticket $fake --rows 8 --cols 5
else
    bad "$fake is not built (make test builds it)"
fi
# The same flow for part 3's bar (build/back_fake_copy3: back/baseline_copy3's
# dx = x + dy on the CPU): dx bit for bit on every fill, op copy3, its bytes
# the three streams alone (12 an element); a dx one ulp off, a dx nothing
# wrote and a write past dx's end are caught.
fake=build/back_fake_copy3
if [ -x $fake ]; then
    scratch_csv=$(mktemp)
    rm -f "$scratch_csv"
    expect 0 "determinism PASS: dx the same bits in 3 runs" env BACK_FAKE=ok $fake --check --rows 33 --cols 7
    expect 0 "check    PASS: 6 checks" env BACK_FAKE=ok $fake --rows 64 --cols 33 --reps 3 --csv "$scratch_csv"
    expect 0 "result   dx = x + dy bit for bit" env BACK_FAKE=ok $fake --check --fill tiny --rows 5 --cols 3 --offset 3 --y-offset 1
    row=$(tail -n 1 "$scratch_csv" 2>/dev/null)
    [[ $row == back/copy3,2112,3,* ]] && [[ $row == *",64,33,copy3,25344,"* ]] && ok \
        || bad "$fake's CSV row is not a timed 64 x 33 copy3 of 25344 bytes: $row"
    rm -f "$scratch_csv"
    expect 0 "op=copy3" env BACK_FAKE=ok $fake --gpu-info
    expect 1 "FAIL: a check before timing failed" env BACK_FAKE=ulp $fake --rows 64 --cols 33
    expect 1 "(tolerance 0: exact); 1 of the outputs are wrong" env BACK_FAKE=ulp $fake --check --rows 8 --cols 5
    expect 1 "(NaN: an output nothing wrote" env BACK_FAKE=nan $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5
else
    bad "$fake is not built (make test builds it)"
fi

# The bfloat16 softmax backward (build/back_fake_bf16: y, dy and dx in
# bfloat16, offsets in bfloat16s, 8 a pack): it passes, timed and --check,
# with op softmax_backward_bf16 and 6 bytes an element; s rounded to
# bfloat16 (the random and shifted fills), dx cut instead of rounded, a masked
# y's dx not 0, a dx nothing wrote and a write past dx's end are caught.
fake=build/back_fake_bf16
if [ -x $fake ]; then
    scratch_csv=$(mktemp)
    rm -f "$scratch_csv"
    expect 0 "determinism PASS: dx the same bits in 3 runs" env BACK_FAKE=ok $fake --check --rows 33 --cols 7
    expect 0 "check    PASS: 6 checks" env BACK_FAKE=ok $fake --rows 64 --cols 33 --reps 3 --csv "$scratch_csv"
    expect 0 "PASS" env BACK_FAKE=ok $fake --check --fill shifted --rows 5 --cols 9 --offset 7 --y-offset 6
    expect 0 "PASS" env BACK_FAKE=ok $fake --check --fill tiny --rows 17 --cols 3 --offset 1 --y-offset 3
    row=$(tail -n 1 "$scratch_csv" 2>/dev/null)
    [[ $row == back/fake_bf16,2112,3,* ]] && [[ $row == *",64,33,softmax_backward_bf16,12672,"* ]] && ok \
        || bad "$fake's CSV row is not a timed 64 x 33 softmax_backward_bf16 of 12672 bytes: $row"
    rm -f "$scratch_csv"
    expect 0 "dtype=bf16" env BACK_FAKE=ok $fake --gpu-info
    expect 0 "pack=8" env BACK_FAKE=ok $fake --gpu-info
    expect 2 "from 0 to 7" env BACK_FAKE=ok $fake --check --offset 8
    expect 1 "determinism FAIL: run 1 of the random fill is wrong" env BACK_FAKE=s16 $fake --check --rows 33 --cols 7
    expect 1 "FAIL: dx[row" env BACK_FAKE=s16 $fake --check --fill shifted --rows 8 --cols 33
    expect 1 "FAIL: a check before timing failed" env BACK_FAKE=s16 $fake --rows 64 --cols 33
    expect 1 "(tolerance 0: exact)" env BACK_FAKE=trunc $fake --check --rows 33 --cols 7
    expect 1 "is 9.98402083e-31, not 0 (tolerance 0: exact)" env BACK_FAKE=mask $fake --check --rows 33 --cols 7
    expect 1 "is 9.98402083e-31, not " env BACK_FAKE=mask $fake --check --fill random --rows 33 --cols 7
    expect 1 "(NaN: an output nothing wrote" env BACK_FAKE=nan $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5 --y-offset 1
else
    bad "$fake is not built (make test builds it)"
fi
# The bfloat16 bar (build/back_fake_copy3_bf16: back/baseline_copy3_bf16's
# dx = y + dy in bfloat16): dx bit for bit, op copy3_bf16, 6 bytes an
# element; a dx one bfloat16 off, one nothing wrote, a write past dx's end
# are caught.
fake=build/back_fake_copy3_bf16
if [ -x $fake ]; then
    scratch_csv=$(mktemp)
    rm -f "$scratch_csv"
    expect 0 "determinism PASS: dx the same bits in 3 runs" env BACK_FAKE=ok $fake --check --rows 33 --cols 7
    expect 0 "check    PASS: 6 checks" env BACK_FAKE=ok $fake --rows 64 --cols 33 --reps 3 --csv "$scratch_csv"
    expect 0 "result   dx = x + dy bit for bit" env BACK_FAKE=ok $fake --check --fill tiny --rows 5 --cols 3 --offset 7 --y-offset 1
    row=$(tail -n 1 "$scratch_csv" 2>/dev/null)
    [[ $row == back/copy3_bf16,2112,3,* ]] && [[ $row == *",64,33,copy3_bf16,12672,"* ]] && ok \
        || bad "$fake's CSV row is not a timed 64 x 33 copy3_bf16 of 12672 bytes: $row"
    rm -f "$scratch_csv"
    expect 0 "op=copy3_bf16" env BACK_FAKE=ok $fake --gpu-info
    expect 1 "(tolerance 0: exact); 1 of the outputs are wrong" env BACK_FAKE=ulp $fake --check --rows 8 --cols 5
    expect 1 "(NaN: an output nothing wrote" env BACK_FAKE=nan $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5 --y-offset 1
else
    bad "$fake is not built (make test builds it)"
fi
# The bfloat16 LayerNorm backward (build/back_fake_ln_bf16: x, dy and dx in
# bfloat16, gamma, mean, rstd, dgamma and dbeta float; offsets in
# bfloat16s): it passes, timed and --check, at odd offsets and on every
# fill, with op layernorm_backward_bf16 and back_bytes at 2 bytes an element
# of the three streams; dx cut instead of rounded (the exact fill where its
# solved dy make m1 fractional, and the random fill), a dgamma one float
# off (the exact fill), means over N - 1, a dx nothing wrote and a write
# past dx's end are caught.
fake=build/back_fake_ln_bf16
if [ -x $fake ]; then
    scratch_csv=$(mktemp)
    rm -f "$scratch_csv"
    expect 0 "determinism PASS: dx, dgamma and dbeta the same bits in 3 runs" env BACK_FAKE=ok $fake --check --rows 33 --cols 7
    expect 0 "check    PASS: 6 checks" env BACK_FAKE=ok $fake --rows 64 --cols 33 --reps 3 --csv "$scratch_csv"
    expect 0 "PASS" env BACK_FAKE=ok $fake --check --fill shifted --rows 5 --cols 300 --offset 7 --y-offset 6 --gamma-offset 3
    expect 0 "PASS" env BACK_FAKE=ok $fake --check --fill tiny --rows 17 --cols 3 --offset 1 --y-offset 3
    expect 0 "PASS" env BACK_FAKE=ws $fake --check --rows 64 --cols 1000 --offset 5
    row=$(tail -n 1 "$scratch_csv" 2>/dev/null)
    [[ $row == back/fake_ln_bf16,2112,3,* ]] && [[ $row == *",64,33,layernorm_backward_bf16,13580,"* ]] && ok \
        || bad "$fake's CSV row is not a timed 64 x 33 layernorm_backward_bf16 of 13580 bytes: $row"
    rm -f "$scratch_csv"
    expect 0 "op=layernorm_backward_bf16" env BACK_FAKE=ok $fake --gpu-info
    expect 0 "dtype=bf16" env BACK_FAKE=ok $fake --gpu-info
    expect 0 "pack=8" env BACK_FAKE=ok $fake --gpu-info
    expect 0 "K bfloat16s (0..7)" $fake --help
    expect 2 "from 0 to 7" env BACK_FAKE=ok $fake --check --offset 8
    expect 1 "(tolerance 0: exact)" env BACK_FAKE=trunc $fake --check --fill exact --rows 64 --cols 1000
    expect 1 "determinism FAIL: run 1 of the random fill is wrong" env BACK_FAKE=trunc $fake --check --rows 33 --cols 7
    expect 1 "FAIL: dgamma[col 0] is" env BACK_FAKE=dgamma $fake --check --rows 33 --cols 7
    expect 1 "FAIL: dx[row" env BACK_FAKE=nm1 $fake --check --rows 33 --cols 7
    expect 1 "(NaN: an output nothing wrote" env BACK_FAKE=nan $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5
    expect 1 "outside its buffers" env BACK_FAKE=guard $fake --check --rows 8 --cols 5 --y-offset 1
else
    bad "$fake is not built (make test builds it)"
fi

# Part 3's kernels on the CPU (tests/back_emu.h: build/back_emu/<step>/run,
# the step's own back.cu with the driver): every output within its bound at
# shapes around the steps' warp, chunk and tile sizes and step 4's register
# limit (1024 columns kept, 1025 read twice), with the arrays moved
# in their packs, on grids of one block to many (EMU_SMS), and the workspace
# as the driver checks it (guards, the ticket back at 0). A step that adds
# dgamma with atomics may pass or fail the determinism check (its order is
# the CPU's thread schedule here); every other step must pass it.
emu_steps=$(ls -d build/back_emu/step[0-9]*_*/run 2>/dev/null)
[ -n "$emu_steps" ] && ok || bad "no part 3 step is built for the CPU (build/back_emu/*/run)"
for p in $emu_steps; do
    src=back/$(basename "$(dirname "$p")")/back.cu
    atomic=""
    grep -q 'atomicAdd(&g_dgamma' "$src" && atomic=1
    shapes=("--rows 1 --cols 1" "--rows 9 --cols 31 --offset 1")
    if grep -q '^const enum back_op step_op = BACK_SOFTMAX;' "$src"; then
        # Softmax (no gamma): 16 rows, the exact fill's fully masked row
        # among them; a warp's and a 32-thread block's 512 floats, one
        # more; past the 1024 threads' 16384 floats a block holds (step 13
        # takes step 12's path here: the emulator has no clusters).
        shapes+=("--rows 40 --cols 33 --y-offset 3" "--rows 16 --cols 513 --offset 2 --y-offset 1"
                 "--rows 2 --cols 16385 --offset 1")
    else
        shapes+=("--rows 40 --cols 33 --y-offset 3 --gamma-offset 2")
    fi
    # A bfloat16 LayerNorm step (16 on): its 16-byte packs of 8 from 2048
    # columns, aligned, 1 and 2 packs a thread; x one bfloat16 in (one
    # element a thread), gamma 3 floats in; past 4096 columns read twice, dx
    # at an odd offset. Seconds each on the CPU.
    grep -q '^const enum back_dtype step_dtype = BACK_BF16;' "$src" \
        && grep -q '^const enum back_op step_op = BACK_LAYERNORM;' "$src" \
        && shapes+=("--rows 3 --cols 2048" "--rows 3 --cols 2048 --offset 1 --gamma-offset 3"
                    "--rows 2 --cols 4096" "--rows 2 --cols 1024" "--rows 2 --cols 4104 --y-offset 5")
    # 257 columns: 33 blocks of a 1024-thread kernel (steps 6 on: the column sums)
    # are 33,792 CPU threads, seconds on two cores: the grader has it there.
    # Those steps choose their kernel by the pointers' alignment, which their
    # workspace cannot see: whole packs with a misaligned dx run the one-float
    # kernel, at other blocks an SM (the emulator answers by kernel).
    if grep -q '^#define SUM_THREADS 1024' "$src"; then
        shapes+=("--rows 40 --cols 32 --y-offset 3")
    else
        shapes+=("--rows 65 --cols 257 --fill shifted")
    fi
    # The registers' limit of step 4 (a template on IN_REGISTERS): 1024
    # columns kept, 1025 read twice. Seconds each on the CPU, so only there
    # (step 5's limit, 4096 columns, would take minutes; the grader has it).
    grep -q 'IN_REGISTERS' "$src" \
        && shapes+=("--rows 17 --cols 1024 --offset 3" "--rows 9 --cols 1025 --y-offset 1")
    for args in "${shapes[@]}"; do
        # One block (the last block is the only one) at the two smallest
        # shapes; three SMs' worth of blocks everywhere.
        sms_list="3"; [[ $args == "--rows 1 "* || $args == "--rows 9 --cols 31 "* ]] && sms_list="1 3"
        for sms in $sms_list; do
            # A kernel that writes past its buffers may hang the emulation: bounded.
            # shellcheck disable=SC2086
            out=$(EMU_SMS=$sms timeout 120 $p --check $args 2>&1); rc=$?
            if [[ $out == *"result   every output within its bound"* ]] && [[ $out != *"FAIL: a "* ]] \
                    && { [ -n "$atomic" ] || { [ $rc -eq 0 ] && [[ $out == *"determinism PASS"* ]]; }; }; then ok
            else bad "EMU_SMS=$sms $p --check $args -> exit $rc: $(echo "$out" | tail -n 1)"; fi
        done
    done
    # --gpu-info says what back.cu declares (the grader reads it): a weak
    # default folded into the driver's code once said 1 for every step.
    want=1; grep -q '^const int step_deterministic = 0;' "$src" && want=0
    [[ $($p --gpu-info 2>&1) == *"deterministic=$want"* ]] && ok \
        || bad "$p --gpu-info does not say deterministic=$want, as $src declares"
done
# A timed run's six checks before timing: the driver's flow, the same for
# every step, so on the last step only (seconds each on the CPU).
p=$(echo "$emu_steps" | sort -V | tail -n 1)
out=$(EMU_SMS=2 $p --rows 70 --cols 45 --reps 2 --warmup 1 2>&1); rc=$?
[[ $out == *"check    PASS: 6 checks"* ]] && [ $rc -eq 0 ] && ok \
    || bad "EMU_SMS=2 $p --rows 70 --cols 45 --reps 2 --warmup 1 -> exit $rc: $(echo "$out" | tail -n 1)"

# Without a GPU the programs must say so and exit 3; with one, this is skipped.
section "no CUDA device: programs, the grader, every GPU target of make"
probe=$(baseline_cub/run --check -n 1 2>&1 >/dev/null); rc=$?
no_device=""
if [ $rc -eq 3 ] && [[ $probe == *"no CUDA device"* ]]; then
    no_device=1
    for p in $programs; do
        expect_one_line 3 "$p" -n 1000
        expect 3 "no CUDA device" "$p" --check
    done
    for p in $row_programs; do
        expect_one_line 3 "$p" --rows 1000 --cols 1000
        expect_one_line 3 "$p" --check
    done
    for p in $back_programs; do
        expect_one_line 3 "$p" --rows 1000 --cols 1000
        expect_one_line 3 "$p" --check
        expect 3 "no CUDA device" "$p" --check --fill random --rows 3 --cols 5
        expect 3 "no CUDA device" "$p" --gpu-info
    done
    # The grader says so too, with its own exit code for it.
    expect 3 "no CUDA device" python3 tools/grade.py step3_idle/run
    expect 3 "no CUDA device" python3 tools/grade.py rows/step3_vector/run
    expect 3 "no CUDA device" python3 tools/grade.py back/step2_partials/run
    # make's GPU targets: one short line (make's own error line: make exits
    # 2 for any failure), the reason, nothing built or measured, no
    # traceback, and no file left behind (plots/results/.determinism.csv.tmp
    # was one). make check's says that the step compiled.
    stamp=$(mktemp)
    for target in bench tune "profile STEP=3" "profile STEP=rows/3" profile-all sanitize \
                  determinism accuracy "check STEP=3" "check STEP=rows/3" "check STEP=cub" \
                  "verify ONLY=rows/step12_bf16_layernorm"; do
        case $target in
            check*) want="compiled; grading it needs a CUDA GPU and this machine has none" ;;
            *) want="make ${target%% *}: needs a CUDA GPU and this machine has none" ;;
        esac
        # shellcheck disable=SC2086
        out=$(make $target 2>&1); rc=$?
        [ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [[ $out == *"$want"* ]] \
            && [[ $out != *Traceback* ]] && [ ${#out} -le 240 ] && ok \
            || bad "make $target -> exit $rc (want 2 and one line of at most 240 characters with '$want'): $out"
    done
    # make verify without ONLY is a usage error, on any machine.
    expect_only_line 2 "usage: make verify ONLY=rows/step13_x" make verify
    # make check's one line also names the step (and what it would run on a
    # GPU, a program that is there: the homework flow's checks below).
    expect_only_line 2 "make check: step3_idle compiled; grading it needs a CUDA GPU" make check STEP=3
    # Part 3's too (its folder names are longer: one line, past the 240 above).
    expect_only_line 2 "make check: back/step2_partials compiled; grading it needs a CUDA GPU" make check STEP=back/2
    expect_only_line 2 "make check: grading it needs a CUDA GPU and this machine has none" make check PROGRAM=step3_idle/run
    expect 3 "no CUDA device" python3 tools/grade.py step3_idle/run
    # Its list of what works without a GPU is the README's (one list:
    # need_gpu.sh's), and make help, which the line points to, names each.
    listed=$(bash tools/need_gpu.sh --without-gpu)
    readme=$(tr '\n' ' ' < README.md | sed -n 's/.*Without a GPU these work: \(.*\)\. These need one.*/\1/p' | tr -d '`' | tr -s ' ')
    [ -n "$listed" ] && [ "$readme" = "$listed" ] \
        && ok || bad "README.md's no-GPU list '$readme' is not need_gpu.sh's '$listed'"
    expect_only_line 2 "make help lists what works without one." make bench
    help=$(make -s help 2>&1) unlisted=""
    for t in $(echo "$listed" | sed 's/ ([^)]*)//g; s/, /\n/g' | sed 's/^make *//'); do
        [[ $help == *"make $t"* ]] || unlisted="$unlisted make $t"
    done
    [ -z "$unlisted" ] && ok || bad "make help does not name$unlisted"
    # Other suites run at the same time: their makes' own temporaries and
    # Python's caches are not this check's business. make check builds what
    # it grades on any machine: the step's twin under build/monitored/.
    left=$(find . -newer "$stamp" -type f ! -path './.git/*' ! -path './build/*.tmp' \
           ! -path './build/pycache/*' ! -path '*/__pycache__/*' ! -path './build/monitored/*' 2>/dev/null)
    [ -z "$left" ] && ok || bad "make's GPU targets left files behind: $left"
    rm -f "$stamp"
    [ ! -e plots/results/.determinism.csv.tmp ] && ok || bad "plots/results/.determinism.csv.tmp is left"
    # Called directly, the scripts behind them say so in one line too.
    expect_only_line 3 "no CUDA device" bash tools/determinism.sh build/determinism-scratch
    [ -z "$(ls -A build/determinism-scratch 2>/dev/null)" ] && ok \
        || bad "tools/determinism.sh left $(ls -A build/determinism-scratch)"
    rm -rf build/determinism-scratch
else
    skip "a CUDA device is here: the no-device checks are left to machines without one (the GPU suite runs instead)"
fi

# tools/determinism.sh on programs that write no row (an empty CSV): one
# line, no traceback, no scratch file; fake programs in a scratch folder.
fake=$(mktemp -d)
mkdir -p "$fake/tools" "$fake/step0_a" "$fake/baseline_cub" "$fake/extras/atomic_step9"
cp tools/determinism.sh tools/schema.py tools/steps.py tools/cli.py "$fake/tools/"
for p in step0_a baseline_cub extras/atomic_step9; do
    printf '#!/bin/sh\nfor a; do csv=$a; done\n: > "$csv"\nexit 1\n' > "$fake/$p/run"
    chmod +x "$fake/$p/run"
done
out=$(bash "$fake/tools/determinism.sh" out 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"no run wrote a row"* ]] && [[ $out != *Traceback* ]] \
    && [ -z "$(ls -A "$fake/out")" ] && ok \
    || bad "determinism.sh with an empty CSV -> exit $rc, left '$(ls -A "$fake/out")': $(echo "$out" | tail -n 3)"
rm -rf "$fake"

# make stepK builds the program and the stepK link a newcomer types.
section "make stepK, usage errors, make help"
check_links "make test's build"
rm -f step3
expect 0 "" make -s step3
expect 0 "usage:" ./step3/run --help
[ "$(readlink step3)" = "step3_idle" ] && ok || bad "step3 is not a link to step3_idle"
# A step's folder by name builds its program too, in every part (it said
# "up to date" and built nothing in parts 1 and 2).
for d in step3_idle rows/step7_wide back/step0_thread; do
    touch -d '2000-01-01' "$d/run"
    expect 0 "" make -s "$d"
    [ "$d/run" -nt "$d/$(ls "$d" | grep -E '^(reduce|rows|back)\.cu$')" ] && ok \
        || bad "make $d did not build $d/run"
done

# Tools that need Nsight Compute or compute-sanitizer fail with one clear line
# without them (make stops earlier without a GPU: these are the scripts).
# Without a GPU either, the missing GPU is the answer (ncu would not help).
if ! command -v ncu >/dev/null && [ ! -x /usr/local/cuda/bin/ncu ] && ! ls /opt/nvidia/nsight-compute/*/ncu >/dev/null 2>&1; then
    if [ -n "$no_device" ]; then want=3 said="no CUDA device"; else want=4 said="ncu (Nsight Compute) not found"; fi
    expect_only_line $want "$said" python3 tools/profile.py --root . --step 3
    expect_only_line $want "$said" python3 tools/profile.py --root . --all
else
    skip "ncu is here: the no-ncu checks are left to machines without it"
fi
if ! command -v compute-sanitizer >/dev/null && [ ! -x /usr/local/cuda/bin/compute-sanitizer ]; then
    expect_only_line 3 "compute-sanitizer not found" bash tools/sanitize.sh 1000 step3_idle/run
else
    skip "compute-sanitizer is here: its no-tool check is left to machines without it"
fi
# Usage errors: what is wrong, in make check's one last line; no K = 0..9 anywhere.
expect 2 "usage: make profile STEP=K (K = a step number, rows/K" make -s profile
# The GPU suite's ONLY= reads names as make bench does; a name that matches
# no program or fixture fails, on any machine, rather than grade nothing.
expect 1 "GPU_ONLY=nothing_here names no program or fixture" env GPU_ONLY=nothing_here python3 tests/gpu_suite.py
# A part 3 fixture by its name alone, without GPU_PART=back (here: found, then no GPU).
expect 0 "gpu: skipped" env GPU_ONLY=back_no_fence python3 tests/gpu_suite.py
expect_only_line 2 "usage: make check STEP=K (a step number, rows/K" make -s check
expect_only_line 2 "no step 99 (no step99_*/ folder)" make -s check STEP=99
expect_only_line 2 "no step rows/99 (no rows/step99_*/ folder)" make -s check STEP=rows/99
expect_only_line 2 "no step back/99 (no back/step99_*/ folder)" make -s check STEP=back/99
expect_only_line 2 "PROGRAM=/nonexistent: no such file" make -s check PROGRAM=/nonexistent
expect_only_line 2 "PROGRAM=step3_idle is a folder: give the program in it, e.g. PROGRAM=step3_idle/run" \
    make -s check PROGRAM=step3_idle
expect_only_line 2 "PROGRAM=step3_idle/reduce.cu is not an executable" make -s check PROGRAM=step3_idle/reduce.cu
expect_only_line 2 "SOURCE=no/such.cu: no such file" make -s check SOURCE=no/such.cu
expect_only_line 2 "SOURCE=step3_idle is a folder" make -s check SOURCE=step3_idle
# A STEP that is no step number says what STEP takes, as make diff does,
# and a step's folder name gets its number.
expect_only_line 2 "make check: STEP must be a step number, rows/K, back/K, cub, rows/cub, rows/copy, rows/copy16, back/copy3 or back/copy3_bf16, got '3 4'" \
    make -s check STEP="3 4"
expect_only_line 2 "got 'step3_idle' (that step is STEP=3)" make -s check STEP=step3_idle
expect_only_line 2 "got 'rows/step3_vector' (that step is STEP=rows/3)" make -s check STEP=rows/step3_vector
expect_only_line 2 "got 'back/step2_partials' (that step is STEP=back/2)" make -s check STEP=back/step2_partials
expect 2 "make diff: STEP must be a step number, rows/K or back/K, got 'step3_idle' (that step is STEP=3)" \
    make -s diff STEP=step3_idle
expect 2 "no such file" python3 tools/grade.py no/such/run
expect 2 "give a target such as '1.5x step2'" python3 tools/grade.py --speed "1.5y step2" step3_idle/run
expect 2 "--speed-rounds must be 2 to 100" python3 tools/grade.py --speed "1.5x step2" --speed-rounds 1 step3_idle/run
expect 2 "usage: make class SUBMISSIONS=folder" make -s class
# A target that does not exist points to make help, in one line.
expect_only_line 2 "make setp3: no such target; make help lists them" make setp3
expect 2 "no such folder" python3 tools/grade_class.py no/such/folder
expect 2 "not an executable" python3 tools/grade.py step3_idle/reduce.cu
expect 2 "is a directory" python3 tools/grade.py step3_idle
last=$(ls -d step[0-9]*_*/ | sed 's/^step\([0-9]*\)_.*/\1/' | sort -n | tail -n 1)
rlast=$(ls -d rows/step[0-9]*_*/ | sed 's|^rows/step\([0-9]*\)_.*|\1|' | sort -n | tail -n 1)
help=$(make -s help 2>&1)
for text in "make diff STEP=K" "STEP=rows/K" "make -j" "make new NAME=step$((last + 1))_slug" \
            "make new NAME=rows/step$((rlast + 1))_slug" "make check PROGRAM=path/run" \
            "python3 tools/grade.py" "make code-hash DIR="; do
    [[ $help == *"$text"* ]] && ok || bad "make help does not say '$text'"
done
usages="$help
$(make -s profile 2>&1) $(make -s check 2>&1) $(make -s diff 2>&1) $(make -s new 2>&1)"
# The next step's name (stepN_slug, worked out from the folders) is no
# shipped step's: with a student's back/step8 it is back/step9_slug.
usages=$(echo "$usages" | sed -E 's/step[0-9]+_slug//g')
[[ $usages != *"0..9"* && $usages != *"1..8"* && $usages != *"K = 0"* && $usages != *"step9_"* ]] && ok \
    || bad "a usage text names the shipped steps' numbers: $(echo "$usages" | grep -E '0\.\.9|1\.\.8|K = 0|step9_')"
expect 2 "make new NAME=step$((last + 1))_slug" make -s new
# make test's time, one set of figures: the Makefile's (a full build in
# minutes, the suites in seconds), in make help, run_tests.sh's default and
# both READMEs ("Start here" and "Testing": fresh clone, once built).
build_min=$(sed -n 's/^TEST_BUILD_MINUTES := //p' Makefile)
suite_s=$(sed -n 's/^TEST_SECONDS := //p' Makefile)
fresh=$(awk -v b="$build_min" -v s="$suite_s" 'BEGIN { printf "%g", b + s / 60 }')
built=$(awk -v s="$suite_s" 'BEGIN { printf "%g", s / 60 }')
wrong=""
[[ $help == *"about $build_min min"*"$suite_s s"* ]] || wrong="$wrong make-help"
grep -q "^TEST_SECONDS=\${TEST_SECONDS:-$suite_s}$" tests/run_tests.sh || wrong="$wrong run_tests.sh"
for want in "about $fresh min from a fresh clone, $built min once built" \
            "From a fresh clone it takes about $fresh minutes" "(about $built minutes once everything is built)"; do
    tr '\n' ' ' < README.md | tr -s ' ' | grep -qF "$want" || wrong="$wrong README.md:'$want'"
done
for want in "新克隆的仓库约 $fresh 分钟，构建好之后约 $built 分钟" "在两个核上大约要 $fresh 分钟" "全部构建好之后约 $built 分钟"; do
    grep -qF "$want" README.zh-CN.md || wrong="$wrong README.zh-CN.md:'$want'"
done
[ -n "$build_min" ] && [ -n "$suite_s" ] && [ -z "$wrong" ] && ok \
    || bad "make test's time (${build_min} min + ${suite_s} s) is not what these say:$wrong"
# The README's "Start here" (its first section) says where the course
# begins, step 0, beside its example, step 3; part 2's page teaches its
# homework flow, make new and make check SOURCE=. Both languages.
for page in README.md README.zh-CN.md; do
    start=$(awk '/^## /{n++} n==1' "$page")
    [[ $start == *"(step0_naive/README"* && $start == *"make diff STEP=3"* ]] && ok \
        || bad "$page: \"Start here\" does not link step 0 as where the course begins"
done
for page in rows/README.md rows/README.zh-CN.md; do
    grep -qF "make new NAME=rows/step" "$page" && grep -qF "make check SOURCE=path/to/rows.cu" "$page" && ok \
        || bad "$page does not teach part 2's homework flow (make new NAME=rows/..., make check SOURCE=)"
done
# tests/run_tests.sh (make test's runner) with stand-in suites: a green
# suite shows its result line and time only, a failed one its output too;
# the counts first on the last line, then the skips by cause, and where the
# GPU suite skipped itself, that cause says no kernel ran.
runner=$(mktemp -d)
mkdir -p "$runner/tests" "$runner/build"
cp tests/run_tests.sh "$runner/tests/"
printf '#!/bin/sh\necho "unit: 2 passed, 0 failed"\n' > "$runner/build/unit_tests"
printf '#!/bin/sh\necho "multigpu unit: 1 passed, 0 failed"\n' > "$runner/build/multigpu_tests"
chmod +x "$runner/build/unit_tests" "$runner/build/multigpu_tests"
printf 'echo "noise of a green suite"\necho "cli: 3 passed, 0 failed"\n' > "$runner/tests/cli_tests.sh"
for t in schema steps publish plot docs bench make_targets profile fakes verify patterns editions claims grade_report grade; do
    printf 'print("%s: 1 passed, 0 failed")\n' "$t" > "$runner/tests/test_$t.py"
done
# The chart suite's own label is plots:, as tests/test_plot.py prints it.
printf 'print("plots: 1 passed, 0 failed")\n' > "$runner/tests/test_plot.py"
# tools/cli.py's suite is tool_main (cli is the shell suite's name).
printf 'print("tool_main: 1 passed, 0 failed")\n' > "$runner/tests/test_cli.py"
printf 'for k in 1, 2, 3:\n    print(f"skipped: no cuobjdump: needs nvcc and cuobjdump (T.test_{k})")\nprint("accuracy: 1 passed, 0 failed, 3 skipped")\n' \
    > "$runner/tests/test_accuracy.py"
printf 'print("skipped: no nccl.h: make multigpu says how to get NCCL (P.test_help)")\nprint("multigpu: 1 passed, 0 failed, 1 skipped")\n' \
    > "$runner/tests/test_multigpu.py"
printf 'print("gpu: skipped: no CUDA device: the NVIDIA driver is not installed")\nprint("gpu: 0 passed, 0 failed, 1 skipped")\n' \
    > "$runner/tests/gpu_suite.py"
out=$(bash "$runner/tests/run_tests.sh" 2>&1); rc=$?
lastline=$(echo "$out" | tail -n 1)
[ $rc -eq 0 ] && [[ $lastline == "24 passed, 0 failed, 5 skipped; 3 skipped: no cuobjdump; 1 skipped: no nccl.h; 1 skipped: no CUDA device, so no kernel ran"* ]] \
    && [[ $lastline == *"make test on a machine with one, or make check STEP=K there" ]] && ok \
    || bad "run_tests.sh without a device -> exit $rc, last line: $lastline"
[ "$(echo "$out" | grep -cE '^[a-z_ ]+: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)? \([0-9]+ s\)$')" -eq 22 ] \
    && [[ $(echo "$out" | head -n 1) == *"about "*" s on two cores"* ]] && [[ $out != *noise* ]] \
    && [ "$(echo "$out" | wc -l)" -le 25 ] && ok \
    || bad "run_tests.sh: no start line, not one result line with its time per suite, or a green suite's output: $out"
# Each result line names its suite as SUITES= takes it (multigpu_unit, not
# the program's own "multigpu unit:"): all of them run every suite again.
named=$(echo "$out" | grep -E '^[a-z_ ]+: [0-9]+ passed' | cut -d: -f1 | xargs)
out=$(SUITES="$named" bash "$runner/tests/run_tests.sh" 2>&1); rc=$?
[ $rc -eq 0 ] && [[ $(echo "$out" | tail -n 1) == "24 passed, 0 failed, 5 skipped"* ]] \
    && [[ " $named " == *" multigpu_unit "*" plot "* || " $named " == *" plot "*" multigpu_unit "* ]] && ok \
    || bad "run_tests.sh names suites that SUITES= does not take: '$named' -> exit $rc: $(echo "$out" | tail -n 2)"
# Stale committed results (tools/stale.py): one line before the total, and
# the run stays green: a stale figure is marked, not a failure.
mkdir -p "$runner/tools"
printf 'print("stale: rows/step7_wide: measured on an earlier version of the code")\n' \
    > "$runner/tools/stale.py"
out=$(bash "$runner/tests/run_tests.sh" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(echo "$out" | tail -n 2 | head -n 1)" = \
    "stale: rows/step7_wide: measured on an earlier version of the code" ] && ok \
    || bad "run_tests.sh with stale results -> exit $rc, the line before the last: $(echo "$out" | tail -n 2 | head -n 1)"
printf 'print("gpu: 5 passed, 0 failed")\n' > "$runner/tests/gpu_suite.py"
printf 'print("what went wrong")\nprint("claims: 1 passed, 2 failed")\n' > "$runner/tests/test_claims.py"
printf 'print("crashed")\n' > "$runner/tests/test_schema.py"
out=$(bash "$runner/tests/run_tests.sh" 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$(echo "$out" | tail -n 1)" = "28 passed, 3 failed, 4 skipped; 3 skipped: no cuobjdump; 1 skipped: no nccl.h" ] \
    && [[ $out == *"what went wrong"* ]] && [[ $out == *"schema: ended without a result line"* ]] && ok \
    || bad "run_tests.sh with a device, a failure and a crash -> exit $rc: $out"
out=$(SUITES="editions unit" bash "$runner/tests/run_tests.sh" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(echo "$out" | tail -n 1)" = "3 passed, 0 failed, 0 skipped" ] && ok \
    || bad "run_tests.sh SUITES='editions unit' -> exit $rc: $out"
out=$(SUITES="nope" bash "$runner/tests/run_tests.sh" 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"SUITES='nope' names no suite"*"editions"* ]] && ok \
    || bad "run_tests.sh SUITES=nope -> exit $rc: $out"
rm -rf "$runner"

section "make ptxas and make sass"
# make ptxas needs only nvcc; every kernel of the steps named reports its
# registers (one step of part 2, whose rows.cu the loop must find, for one
# architecture here: every kernel of every step is minutes of compiling).
ptx=$(make -s ptxas ARCH=sm_90 PTXAS_DIRS="rows/step0_thread" 2>&1)
[ "$(echo "$ptx" | grep -c 'Used [0-9]* registers')" -eq 1 ] && [ "$(echo "$ptx" | grep -c '^== ')" -eq 1 ] \
    && [[ $ptx == *"== rows/step0_thread"* ]] && ok \
    || bad "make ptxas: $(echo "$ptx" | tail -n 3)"

# make sass: loop lengths with cuobjdump, one clear line without it.
if command -v cuobjdump >/dev/null || [ -x "$(dirname "$(command -v nvcc)")/cuobjdump" ]; then
    expect 0 "sass: wrote" make -s sass SASS_OUT=build/sass.txt
    grep -q "^loop: .*, 28 instructions" build/sass.txt && ok || bad "make sass: no step 0 loop"
else
    expect 2 "cuobjdump not found" make -s sass SASS_OUT=build/sass.txt
    # Both notes say how to get it (pip's wheels put it and nvdisasm in
    # nvidia/cu13/bin); make test's last line shows the skip's cause.
    expect 2 "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm" make -s sass SASS_OUT=build/sass.txt
    why=$(cd tests && python3 -c 'import test_accuracy as t; print(getattr(t.SassTest, "__unittest_skip_why__", ""))')
    cause=${why%%:*}
    [[ $cause == "no cuobjdump ("*"pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"*")" ]] && ok \
        || bad "the accuracy suite's skip without cuobjdump does not say how to get it: $why"
fi

# The mutants: each sed script still changes its step (else the fixture would
# be the step itself, and "the grader fails it" would prove nothing). Part 2's
# are built under build/mutants/rows/, from rows.cu; part 3's under
# build/mutants/back/, from back.cu.
# Where there is a GPU, make test has built them for the GPU suite; without
# one only their sources are made here (tools/mutate.sh refuses a script
# that no longer changes its step): compiling 20-odd programs that nothing
# can run would be minutes for nothing.
section "mutants, make diff"
if [ -n "$no_device" ]; then
    expect 0 "" make -s mutant-sources
else
    expect 0 "" make -s mutants
fi
while IFS='|' read -r m step _; do
    m=$(echo "$m" | tr -d ' '); step=$(echo "$step" | tr -d ' ')
    case "$step" in rows/*) path=build/mutants/rows/$m/rows.cu ;; back/*) path=build/mutants/back/$m/back.cu ;;
                    *) path=build/mutants/$m/reduce.cu ;; esac
    { [ -n "$no_device" ] || [ -x "$(dirname "$path")/run" ]; } && head -n 1 "$path" | grep -q "^// MUTANT $m" \
        && ok || bad "mutant $m was not made ($path, and its run where there is a GPU)"
done < <(grep -E '^[a-z0-9_]+ *\|' tests/broken/mutants.txt)

# make diff: the lesson of a step, and clear errors.
expect 0 "+    float sum = (i < n) ? g_in[i] : 0.0f;" make -s diff STEP=3
expect 0 "+        s_last = (ticket == gridDim.x - 1);" make -s diff STEP=9
expect 0 "-    for (unsigned int s = 1; s < blockDim.x; s *= 2) {" make -s diff STEP=2
expect 0 "starting point" make -s diff STEP=0
# Its header names the two files and nothing else: no file times, the same
# diff on every machine.
[ "$(make -s diff STEP=3 | head -n 2)" = "--- step2_bankconflict/reduce.cu
+++ step3_idle/reduce.cu" ] && ok || bad "make diff STEP=3's header: $(make -s diff STEP=3 | head -n 2)"
expect 0 "--- rows/step2_warp/rows.cu" make -s diff STEP=rows/3
expect 0 "+++ rows/step3_vector/rows.cu" make -s diff STEP=rows/3
expect 0 "starting point" make -s diff STEP=rows/0
expect 2 "no step 99" make -s diff STEP=99
expect 2 "no step rows/99" make -s diff STEP=rows/99
expect 2 "usage: make diff STEP=K" make -s diff
out=$(make -s diff STEP="3 4" 2>&1)
[[ $out == *"STEP must be a step number, rows/K or back/K, got '3 4'"* && $out != *step.sh* ]] && ok \
    || bad "make diff STEP='3 4': $out"

# The homework flow as the README teaches it, in a scratch copy of this tree
# (with what make test built, and the same revision, so that make there
# builds only what the flow adds), in both parts: make step0 (the first
# command of "Start here"), make new with FROM=, an edit, make, make diff,
# the new program, make check (no GPU: its one line, naming a program that
# is there), make check SOURCE=, and make test (the suites that read the
# tree's steps; this one would run itself again). Then make new's errors,
# make diagrams, make check's last line with stand-in graders, a stale
# mutant, ARCH changes and make clean.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -C "$root" --exclude=./.git --exclude=./.venv --exclude=./build/pycache -cf - . | tar -C "$scratch" -xf -
[ -d "$root/.venv" ] && ln -s "$root/.venv" "$scratch/.venv"
built_rev=$(sed -n 's/.*"\(.*\)".*/\1/p' build/version.c 2>/dev/null)
next=$((last + 1)) rnext=$((rlast + 1))
(
    cd "$scratch" || exit 1
    export GIT_REV=${built_rev:-unknown}
    section "the homework flow in a scratch copy: make new FROM=, an edit, make, make diff, make check, make test"
    expect 0 "" make -s step0
    [ "$(readlink step0)" = "step0_naive" ] && ok || bad "make step0 made no step0 link"
    expect 0 "created step${next}_mine from step3_idle" make -s new NAME=step${next}_mine FROM=3
    expect 0 "created rows/step${rnext}_mine from rows/step3_vector" make -s new NAME=rows/step${rnext}_mine FROM=rows/3
    src=step${next}_mine/reduce.cu rsrc=rows/step${rnext}_mine/rows.cu
    # The edit: the one-line summary and one knob in each.
    sed -i "1s|.*|// step${next}_mine: 512 threads a block, each adding two elements as it loads them.|; \
            s|^#define BLOCK_SIZE 256 |#define BLOCK_SIZE 512 |" "$src"
    sed -i "1s|.*|// rows/step${rnext}_mine: two float4 loads in flight per lane.|; \
            s|^#define UNROLL 4 |#define UNROLL 2 |" "$rsrc"
    grep -q "^#define BLOCK_SIZE 512 " "$src" && grep -q "^#define UNROLL 2 " "$rsrc" && ok \
        || bad "the flow's edit did not apply: $(grep -h '^#define' "$src" "$rsrc")"
    # make builds the two new programs, and nothing else; it links every step.
    find . rows -maxdepth 1 -type l -name 'step[0-9]*' -delete
    out=$(make 2>&1); rc=$?
    check_links make
    compiled=$(echo "$out" | grep -E '^(nvcc|cc|gcc) ')
    [ $rc -eq 0 ] && [ "$(echo "$compiled" | grep -c ' -o [^ ]*/run ')" -eq 2 ] \
        && [ -z "$(echo "$compiled" | grep -v -e "step${next}_mine" -e "step${rnext}_mine")" ] && ok \
        || bad "make after make new -> exit $rc, built: $(echo "$compiled" | sed 's/ .* -o / -o /' | head -n 5)"
    [ "$(make -s diff STEP=${next} | head -n 2)" = "--- step3_idle/reduce.cu
+++ step${next}_mine/reduce.cu" ] && ok || bad "make diff STEP=${next} is not against FROM: $(make -s diff STEP=${next} | head -n 2)"
    expect 0 "+#define BLOCK_SIZE 512 " make -s diff STEP=${next}
    expect 0 "--- rows/step3_vector/rows.cu" make -s diff STEP=rows/${rnext}
    expect 0 "+#define UNROLL 2 " make -s diff STEP=rows/${rnext}
    expect 0 "" make -s step${next} rows/step${rnext}
    [ "$(readlink step${next})" = "step${next}_mine" ] && [ "$(readlink rows/step${rnext})" = "step${rnext}_mine" ] \
        && ok || bad "make step${next} rows/step${rnext}: no links"
    expect 0 "usage:" ./step${next}/run --help
    expect 0 "usage:" ./rows/step${rnext}/run --help
    expect 0 "step${next}_mine code_hash=" ./step${next}/run --version
    expect 0 "rows/step${rnext}_mine code_hash=" ./rows/step${rnext}/run --version
    check_code_hash step${next}_mine/run
    check_code_hash rows/step${rnext}_mine/run
    if [ -n "$no_device" ]; then
        expect_one_line 3 ./step${next}/run --check
        expect_one_line 3 ./rows/step${rnext}/run --check
        # make check: one line naming what would run on a GPU, which is there.
        # STEP= grades the step's twin with the watch on GPU work linked in.
        expect_only_line 2 "on one it runs python3 tools/grade.py build/monitored/step${next}_mine/run.  Stop." \
            make check STEP=${next}
        expect_only_line 2 "on one it runs python3 tools/grade.py build/monitored/rows/step${rnext}_mine/run." \
            make check STEP=rows/${rnext}
        expect_only_line 2 "python3 tools/grade.py --speed '1.5x step2' --speed-at '1048576' build/monitored/step${next}_mine/run" \
            make check STEP=${next} SPEED="1.5x step2" SPEED_AT=1048576
        # SOURCE=: built here, whatever the machine; said so; then that line.
        mkdir -p alice && cp "$src" alice/reduce.cu
        out=$(make check SOURCE=alice/reduce.cu 2>&1); rc=$?
        [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 2 ] \
            && [ "$(echo "$out" | head -n 1)" = "make check: alice/reduce.cu builds with this harness: build/graded/alice/run" ] \
            && [[ $(echo "$out" | tail -n 1) == *"make check: grading it needs a CUDA GPU"*"; on one it runs python3 tools/grade.py build/graded/alice/run."* ]] \
            && [ -x build/graded/alice/run ] && ok || bad "make check SOURCE=alice/reduce.cu without a GPU -> exit $rc: $out"
        expect 3 "no CUDA device" python3 tools/grade.py build/graded/alice/run
        expect 3 "builds with this harness: build/graded/alice/run" bash tools/grade_source.sh alice/reduce.cu
        # The grader's builds carry the watch (the linker's wrap of
        # reduce_pass and row_forward); the programs make bench times do not.
        nm build/graded/alice/run | grep -q ' T __wrap_reduce_pass$' \
            && nm build/monitored/rows/step${rnext}_mine/run | grep -q ' T __wrap_row_forward$' \
            && ! nm step${next}_mine/run | grep -q '__wrap_' && ok \
            || bad "the watch on GPU work is not where it belongs (graded and monitored builds only)"
        # A whole class without a GPU: one line naming what would run.
        mkdir -p class/alice && cp "$src" class/alice/reduce.cu
        expect_only_line 2 "on one it runs the grader on every submission: tools/grade_class.py class" \
            make class SUBMISSIONS=class
    else
        expect 0 "PASS" ./step${next}/run --check
        expect 0 "grade: PASS step${next}_mine" make check STEP=${next} GRADE_FLAGS="--quick --no-sanitizer"
    fi
    # A source that does not compile: the compiler's errors, then one line;
    # its own command exits 4 for it (on any machine: it stops before a GPU).
    mkdir -p broken_src && printf 'this is not C++\n' > broken_src/reduce.cu
    out=$(make check SOURCE=broken_src/reduce.cu 2>&1); rc=$?
    [ $rc -eq 2 ] && [[ $(echo "$out" | tail -n 1) == *"make check: broken_src/reduce.cu does not build with this harness (the compiler's errors are above); bash tools/grade_source.sh broken_src/reduce.cu exits 4 for this"* ]] \
        && [[ $out == *"error"* ]] && [ "$(echo "$out" | grep -c 'does not build')" -eq 1 ] && ok \
        || bad "make check SOURCE=broken_src/reduce.cu -> exit $rc: $(echo "$out" | tail -n 2)"
    expect 4 "does not build with this harness" bash tools/grade_source.sh broken_src/reduce.cu
    # Names that lose characters keep apart (张三 and 李四 would both be ______).
    rm -rf build/graded/______*; mkdir -p 张三 李四
    cp broken_src/reduce.cu 张三/ && cp broken_src/reduce.cu 李四/
    bash tools/grade_source.sh --build-only 张三/reduce.cu > /dev/null 2>&1
    bash tools/grade_source.sh --build-only 李四/reduce.cu > /dev/null 2>&1
    [ "$(ls -d build/graded/______-* 2> /dev/null | wc -l)" -eq 2 ] && ok \
        || bad "two non-ASCII names share a build folder: $(ls -d build/graded/______* 2> /dev/null)"
    # The compiler's errors name the student's file and line, not the copy
    # built under build/graded/.
    [[ $out == *"broken_src/reduce.cu(1): error"* ]] && [[ $out != *"build/graded/broken_src/reduce.cu"[\(:\"]* ]] \
        && ok || bad "make check SOURCE=broken_src/reduce.cu: the errors are not at its line: $(echo "$out" | grep -m 2 error)"
    # make test: its build, then the suites that read the tree's list of
    # steps (make step0's link and both new steps in place; docs: the
    # learning path, which must not ask for a student's step).
    suites="editions steps docs"
    [ -n "$no_device" ] && suites="$suites gpu"
    out=$(make test SUITES="$suites" 2>&1); rc=$?
    [ $rc -eq 0 ] && [[ $(echo "$out" | tail -n 1) =~ ^[0-9]+\ passed,\ 0\ failed ]] && ok \
        || bad "make test after the flow -> exit $rc: $(echo "$out" | tail -n 12)"
    # With every program built (make did it above) make test names no build
    # time: its first line is the suites'.
    [[ $(echo "$out" | head -n 1) == "tests: "* ]] && ok \
        || bad "make test with every program built starts: $(echo "$out" | head -n 1)"
    # A program to build, and no matplotlib (a stand-in Python that cannot
    # import it, and a stand-in venv that installs nothing): make test says
    # both on screen, a line each, before it builds; SUITES=nope stops it
    # after the build. Not the PLOT_PYTHON that a make test running this
    # suite passes down: this make must look for matplotlib itself.
    mkdir -p fakepy
    printf '%s\n' '#!/bin/sh' 'case "$*" in' \
        '"-c import matplotlib, pylopdf_fonts_zh_cn") exit 1 ;;' \
        '"-m venv .venv") mkdir -p .venv/bin && printf "#!/bin/sh\n" > .venv/bin/python && chmod +x .venv/bin/python; exit 0 ;;' \
        'esac' 'exec python3 "$@"' > fakepy/python3
    chmod +x fakepy/python3
    rm -f .venv step0_naive/run
    out=$(env -u PLOT_PYTHON make test PYTHON="$PWD/fakepy/python3" SUITES=nope 2>&1)
    total=$(ls -d step[0-9]*_*/ rows/step[0-9]*_*/ baseline_cub rows/baseline_*/ extras/*/ | wc -l)
    [[ $(echo "$out" | sed -n 1p) == "make test: building 1 of the $total programs first, "*" (all $total: about "*" min on two cores)"* ]] \
        && [[ $(echo "$out" | sed -n 2p) == "make test: "*"installing tools/requirements.txt into .venv"* ]] \
        && [ -x .venv/bin/python ] && [ -x step0_naive/run ] && ok \
        || bad "make test with a program to build and no matplotlib: $(echo "$out" | head -n 3)"
    rm -rf .venv fakepy
    [ -d "$root/.venv" ] && ln -s "$root/.venv" .venv
    # The GPU suite's program list picks both new steps up.
    python3 -c "import sys; sys.path.insert(0, 'tests'); import gpu_suite as g; p = g.step_programs(); \
                sys.exit(0 if {'step${next}_mine/run', 'rows/step${rnext}_mine/run'} <= set(p) else 1)" \
        && ok || bad "the GPU suite does not grade step${next}_mine and rows/step${rnext}_mine"

    section "make new in the scratch copy: errors, the new step's header and README, make diagrams"
    n2=$((next + 1))
    expect 2 "already exists" make -s new NAME=step${next}_mine
    expect 2 "must look like" make -s new NAME=Step9
    expect 2 "step 3 exists already" make -s new NAME=step3_again
    # Only the next free number: no leading zeros, no gap, and the error names it.
    expect 2 "without leading zeros (step${n2}_" make -s new NAME=step0${n2}_x
    expect 2 "the next free step number is $n2 (NAME=step${n2}_far)" make -s new NAME=step$((next + 3))_far
    expect 2 "FROM=99: no step 99" make -s new NAME=step${n2}_x FROM=99
    expect 2 "FROM must be a step number of the same part" make -s new NAME=step${n2}_x FROM=rows/3
    expect 2 "FROM=rows/99: no step rows/99" make -s new NAME=rows/step$((rnext + 1))_x FROM=rows/99
    [ ! -e step0${n2}_x ] && [ ! -e step$((next + 3))_far ] && [ ! -e step${n2}_x ] && ok \
        || bad "a refused NAME left a folder"
    out=$(make -s new NAME="step$n2 x" 2>&1); rc=$?
    [ $rc -eq 2 ] && [[ $out == *"must look like step${n2}_myidea"*"no spaces"* ]] && [[ $out != *step.sh* ]] \
        && ok || bad "make new NAME='step$n2 x' -> exit $rc: $out"
    expect 2 "usage: make new NAME=step${n2}_slug" make -s new
    expect 2 "step rows/3 exists already" make -s new NAME=rows/step3_again
    expect 2 "the next free step number is $((rnext + 1))" make -s new NAME=rows/step$((rnext + 4))_x
    grep -q "^// Effect: not measured yet (make bench; compare with step3_idle)" "$src" \
        && [ "$(grep -c '^// Effect:' "$src")" -eq 1 ] && ok || bad "new step keeps the old step's Effect line"
    grep -q "^// Started from step3_idle by make new: make diff STEP=${next} shows" "$src" && ok \
        || bad "new step does not say where it started: $(sed -n 6p "$src")"
    [ ! -e rows/step${rnext}_mine/reduce.cu ] && grep -q "^// Started from step3_vector by make new" "$rsrc" \
        && ok || bad "new part 2 step's source: $(head -n 6 "$rsrc")"
    # Its README teaches the main README's commands: make stepK, then ./stepK/run.
    readme=step${next}_mine/README.md
    grep -qF "make step${next} && ./step${next}/run --check" "$readme" && grep -qF "make check STEP=${next}" "$readme" \
        && grep -qF "a diff against step3_idle" "$readme" && ! grep -qF "step${next}_mine/run" "$readme" \
        && grep -q "BEGIN measured" "$readme" && ok || bad "new step README: $(grep make "$readme")"
    readme=rows/step${rnext}_mine/README.md
    grep -qF "make rows/step${rnext} && ./rows/step${rnext}/run --check" "$readme" \
        && grep -qF "make diff STEP=rows/${rnext}" "$readme" && ok || bad "new part 2 README: $(grep make "$readme")"
    # Without FROM, a step starts from the one below it.
    expect 0 "created step${n2}_plain from step${next}_mine" make -s new NAME=step${n2}_plain
    expect 0 "--- step${next}_mine/reduce.cu" make -s diff STEP=${n2}
    rm -rf step${n2}_plain
    # make diagrams says which steps it cannot draw (before it needs matplotlib).
    out=$(python3 tools/diagrams.py --root . --out-dir build/diagrams 2>&1)
    [[ $out == *"diagrams.py: not drawn: "*"step${next}_mine"*"(no access-pattern model"* ]] && ok \
        || bad "make diagrams does not say it skips step${next}_mine: $(echo "$out" | head -n 2)"

    # make check's last line: the grader's own exit code and the command that
    # keeps it (make exits 2 whatever the grader said). need_gpu.sh is told a
    # GPU is here; first the real grader (exit 3 where there is none), then a
    # stand-in that fails a check (exit 1) and one that passes.
    section "make check's last line: the grader's code and command"
    printf '#!/usr/bin/env bash\nexit 0\n' > tools/need_gpu.sh
    prog=$root/step3_idle/run
    if [ -n "$no_device" ]; then
        out=$(make check PROGRAM="$prog" 2>&1); rc=$?
        [ $rc -eq 2 ] && [[ $(echo "$out" | tail -n 1) == *"make check: the grader exited 3 (no CUDA device)"*"python3 tools/grade.py $prog"* ]] \
            && [[ $(echo "$out" | tail -n 2 | head -n 1) == *"grade: no CUDA device"* ]] && ok \
            || bad "make check with the grader's exit 3 -> exit $rc: $(echo "$out" | tail -n 2)"
    fi
    printf 'import sys\nprint("grade: FAIL fake: 1 of 2 checks failed")\nsys.exit(1)\n' > tools/grade.py
    out=$(make check PROGRAM="$prog" GRADE_FLAGS=--quick 2>&1); rc=$?
    [ $rc -eq 2 ] && [[ $(echo "$out" | tail -n 1) == *"make check: the grader exited 1 (a check failed)"*"python3 tools/grade.py --quick $prog"* ]] \
        && [ "$(echo "$out" | head -n 1)" = "grade: FAIL fake: 1 of 2 checks failed" ] && ok \
        || bad "make check with the grader's exit 1 -> exit $rc: $(echo "$out" | tail -n 2)"
    printf 'import sys\nprint("grade: PASS fake")\n' > tools/grade.py
    out=$(make check PROGRAM="$prog" 2>&1); rc=$?
    [ $rc -eq 0 ] && [ "$out" = "grade: PASS fake" ] && ok || bad "make check with the grader's exit 0 -> exit $rc: $out"
    [ -z "$(ls -A build/.check-verdict-* 2>/dev/null)" ] && ok || bad "make check left $(ls build/.check-verdict-*)"
    # Without tools/need_gpu.sh there is no telling: that is an error, not a GPU.
    rm -f tools/need_gpu.sh
    expect_only_line 2 "tools/need_gpu.sh: No such file" make determinism
    cp "$root/tools/grade.py" "$root/tools/need_gpu.sh" tools/

    section "mutants, ARCH, make clean in the scratch copy"
    # A mutant whose sed script no longer applies is an error, not a silent copy.
    echo "stale_one | step3_idle | exact | s|no such line|x|" >> tests/broken/mutants.txt
    expect 2 "no longer changes" bash tools/mutate.sh stale_one build/stale.cu
    # ARCH: a new value rebuilds (the harness's GPU object, here), the same
    # value does not.
    expect 0 "-arch=sm_80" make ARCH=sm_80 build/flush.o
    out=$(make ARCH=sm_80 build/flush.o 2>&1)
    [[ $out != *nvcc* ]] && ok || bad "make ARCH=sm_80 rebuilt twice: $out"
    expect 0 "" make -s clean
    [ ! -e build ] && [ ! -e step${next}_mine/run ] && [ ! -e step${next} ] && [ ! -e rows/step${rnext} ] \
        && [ ! -e rows/step${rnext}_mine/run ] && ok || bad "make clean left build outputs"
    echo "cli-sub: $passed passed, $failed failed"
) 2>&1 | tee "$scratch/log" | grep --line-buffered -v '^cli-sub:'
sub=$(grep '^cli-sub:' "$scratch/log")
[[ $sub =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]] || { bad "scaffold test did not finish"; }
passed=$(( ${BASH_REMATCH[1]:-$passed} ))
failed=$(( ${BASH_REMATCH[2]:-$failed} ))

line="cli: $passed passed, $failed failed"
[ $skipped -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ $failed -eq 0 ]
