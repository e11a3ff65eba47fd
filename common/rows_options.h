/* rows_options.h: part 2's command line, on top of the one both parts share.
 *
 * harness.c's parse_options() reads every option the two parts share (reps,
 * seed, fill, csv, checks ...). Part 2 reads some options differently and has
 * some of its own, and this file takes those out before the shared parser
 * sees the rest:
 *   --rows, --cols   rows x cols may pass 2^32 elements (the kernels index
 *                    rows with 32 bits, elements with 64): the device's
 *                    memory is the limit, not the parser;
 *   --offset K       K elements: 0..3 floats, or 0..7 bfloat16s, every place
 *                    in a 16-byte pack;
 *   --y-offset, --gamma-offset, --beta-offset
 *                    the same for y, gamma and beta, each on its own: a kernel
 *                    must check every pointer it loads in packs;
 *   --fill levels    0 or -200: a softmax whose every exponential is exact;
 *   --fill centered  a LayerNorm whose mean and variance are exact;
 *   --mask KIND      -inf over the fill, for softmax (common/rows_ref.h);
 *   --at K           onehot's position in such a matrix;
 *   --check-every K  the CPU checks every K-th row and the last K only (a
 *                    matrix past 2^32 elements takes minutes to check whole).
 * (The shared parser's limits, 2^31 - 1 elements and offsets 0..3, are part
 * 1's: every committed result of part 1 and of multigpu/ carries the hash of
 * harness.c, so part 2's wider options live here, beside it.)
 * Plain C, no CUDA: tests/unit_tests.c checks it on the CPU. */
#ifndef REDUCE_ROWS_OPTIONS_H
#define REDUCE_ROWS_OPTIONS_H

#include <stddef.h>

#include "harness.h"
#include "rows.h"
#include "rows_ref.h"

struct row_options {
    enum row_fill fill;         /* --fill levels or centered: part 2's own fills */
    enum row_mask mask;         /* --mask */
    int y_offset, gamma_offset, beta_offset;   /* elements past an aligned address */
    size_t check_every;         /* --check-every K: the CPU checks rows 0, K, 2K ... and the last K */
};

/* Parses argv for a part 2 program of this op and dtype into *o (the shared
 * options, with rows, cols, n, offset and at set here) and *ro. Returns as
 * parse_options() does; on PARSE_ERROR err holds one line. */
enum parse_status rows_parse(int argc, char **argv, enum row_op op, enum row_dtype dtype,
                             struct options *o, struct row_options *ro, char *err,
                             size_t err_len);

void rows_usage(const char *prog, enum row_op op, enum row_dtype dtype);

/* The fill's name, as the output and the CSV give it: "levels", "random"
 * ...; with a mask, "levels/causal". */
void row_fill_name(const struct options *o, const struct row_options *ro, char *out,
                   size_t len);

/* The checks a plain timed run makes first (harness.h's verify_set() for
 * part 2): the exact fill at the shape and offsets asked for, at one column
 * fewer, with x moved one element in its pack, and with y alone moved; LayerNorm and softmax on the
 * shifted and tiny fills; softmax on the levels fill with every mask. Writes
 * at most ROWS_VERIFY_MAX checks; returns how many. */
#define ROWS_VERIFY_MAX 8
int rows_verify_set(const struct options *o, const struct row_options *ro, enum row_op op,
                    enum row_dtype dtype, struct options *out, struct row_options *rout);

/* --checks / --runs FILE for part 2: harness.c's run_lines(), with each line
 * parsed by rows_parse(). */
typedef int (*rows_run_fn)(const struct options *o, const struct row_options *ro, void *ctx);
int rows_run_lines(const char *path, const struct options *base, enum row_op op,
                   enum row_dtype dtype, int check_only, char *prog, rows_run_fn run,
                   void *ctx);

#endif
