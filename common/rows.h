/* rows.h: what every part 2 program's rows.cu defines (rows/README.md).
 *
 * row_forward() launches the program's kernel(s) for one problem: each of
 * `rows` rows of x (row r starts at x + r * cols, at any alignment) is summed
 * to one float, normalized (LayerNorm, softmax) or copied. The harness times
 * one call, start to end, and checks every output. step_op says which of
 * these the program computes, step_dtype in which element type x and y are
 * stored (the arithmetic is float either way). */
#ifndef REDUCE_ROWS_H
#define REDUCE_ROWS_H

#include <stddef.h>

#include "workspace.h"

#ifdef __cplusplus
extern "C" {
#endif

enum row_op { ROW_SUM, ROW_LAYERNORM, ROW_SOFTMAX, ROW_COPY, ROW_RMSNORM, ROW_ADD_RMSNORM };

/* How x, y, gamma and beta are stored: float, or bfloat16 (1 sign, 8
 * exponent and 7 stored mantissa bits: a float with its low 16 bits cut). */
enum row_dtype { ROW_F32, ROW_BF16 };

struct row_problem {
    const float *x;              /* rows x cols */
    float *y;                    /* ROW_SUM: one float per row; otherwise rows x cols */
    float *mean, *rstd;          /* ROW_LAYERNORM: one per row, as PyTorch saves them;
                                  * ROW_RMSNORM: rstd only (mean is NULL) */
    const float *gamma, *beta;   /* ROW_LAYERNORM: cols each; ROW_RMSNORM: gamma only */
    /* ROW_ADD_RMSNORM, a transformer block's residual stream: h = x +
     * residual, added in float and stored once in the element type, is
     * written out (the next block's residual) and normalised as stored:
     * y = h / sqrt(mean(h^2) + eps) * gamma, with rstd. rows x cols each;
     * residual starts where x does in its pack, h where y does. */
    const float *residual;
    float *h;
    /* ROW_BF16 programs: the same arrays as bfloat16, and x, y, gamma and
     * beta above are NULL. void, because C has no bfloat16 type: a kernel
     * reads them as __nv_bfloat16. mean and rstd stay float, as PyTorch
     * saves them for bfloat16 input. */
    const void *x_bf16;
    void *y_bf16;
    const void *gamma_bf16, *beta_bf16;
    const void *residual_bf16;
    void *h_bf16;
    float eps;                   /* ROW_LAYERNORM: y = (x - mean) / sqrt(var + eps) * gamma + beta;
                                  * ROW_RMSNORM: y = x / sqrt(mean(x^2) + eps) * gamma */
    size_t rows, cols;
    struct workspace work;       /* see row_workspace() */
};

/* Elements in one 16-byte pack: every --offset from 0 to this minus 1 puts
 * the array somewhere else in a pack. */
static inline int row_pack_elements(enum row_dtype dtype)
{
    return dtype == ROW_BF16 ? 8 : 4;
}

/* Which operation this program computes: its rows.cu defines it. */
extern const enum row_op step_op;

/* Optional: ROW_BF16 in a program that stores its rows in bfloat16. Without
 * it the harness's weak default says ROW_F32, so the float programs do not
 * name it. */
extern const enum row_dtype step_dtype;

void row_forward(const struct row_problem *p);

/* Optional, as reduce_workspace() in part 1: the workspace a problem needs.
 * Without it the harness (common/rows_driver.c) gives none. */
struct workspace_size row_workspace(const struct row_problem *p);

/* Optional: the widths at which this program's kernel changes on the current
 * device (a group doubles when a row outgrows its registers, the row moves
 * to shared memory, then back to global memory), each the first width of
 * its new path, in increasing order. Writes at most max; returns how many.
 * The grader (make check) checks one column below and at each. Without it
 * the harness reports none, and the grader's own widths are all it checks. */
int row_path_widths(size_t *widths, int max);

#ifdef __cplusplus
}
#endif

#endif
