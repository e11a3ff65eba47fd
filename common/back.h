/* back.h: what every part 3 program's back.cu defines (back/README.md).
 *
 * Part 3 is the backward pass: the gradients of part 2's LayerNorm and
 * softmax. back_run() launches the program's kernel(s) for one
 * problem; the harness (common/back_driver.c) times one call, start to end,
 * and checks every output against common/back_ref.c's CPU reference.
 *
 * LayerNorm backward takes what PyTorch's native_layer_norm_backward takes:
 * x and dy (rows x cols; row r starts at x + r * cols, at any alignment),
 * gamma (cols), and the mean and rstd the forward pass saved (rows). With
 * xhat = (x - mean) * rstd and g = dy * gamma, a row of N = cols gives
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 * and every column, summed over the rows,
 *   dgamma = sum dy * xhat,   dbeta = sum dy.
 * dx is a row reduction, as part 2's; dgamma and dbeta are column
 * reductions, new here.
 *
 * Softmax backward takes the forward pass's output y (rows x cols, where
 * x was) and dy: with s = sum(dy * y) over a row,
 *   dx = y * (dy - s)
 * one row reduction and one elementwise pass (PyTorch's
 * _softmax_backward_data). A masked input of the forward pass has y = 0,
 * so its dx is exactly 0; a fully masked row is all 0. x, gamma, mean,
 * rstd, dgamma and dbeta are NULL there.
 *
 * The harness fills dx (and dgamma, dbeta) with NaN before every call: a
 * program writes (or zeroes) every output itself.
 *
 * work is device memory the caller owns (common/workspace.h), as in parts 1
 * and 2: a program whose blocks share memory across a launch (partial column
 * sums, a ticket) says how much in back_workspace(). Its scratch part is
 * NaN at every call; its zeroed part reads 0 and must be left at 0. */
#ifndef REDUCE_BACK_H
#define REDUCE_BACK_H

#include <stddef.h>

#include "workspace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which backward pass a program computes (step_op, below). BACK_COPY3
 * is no backward pass but part 3's bar, back/baseline_copy3: dx = x + dy,
 * the three streams of LayerNorm's backward pass (x and dy read, dx
 * written) and nothing else; the driver holds dx to x + dy bit for bit and
 * leaves dgamma and dbeta alone. */
enum back_op { BACK_LAYERNORM, BACK_SOFTMAX, BACK_COPY3 };

/* How x (y), dy and dx are stored (step_dtype, below): float, or bfloat16:
 * x (y), dy and dx in bfloat16, every sum in float, dx rounded once
 * (common/back_ref.h says how it is checked), for softmax backward, its bar
 * (BACK_COPY3: dx = y + dy) and LayerNorm backward. LayerNorm's gamma,
 * mean, rstd, dgamma and dbeta stay float, as training keeps a norm's
 * parameters and statistics (PyTorch's CUDA layer norm takes bfloat16 x
 * with float weights): the three big streams halve, the small arrays keep
 * their precision. */
enum back_dtype { BACK_F32, BACK_BF16 };

struct back_problem {
    const float *x, *dy;        /* rows x cols (BACK_SOFTMAX: x is NULL) */
    const float *y;             /* BACK_SOFTMAX: the forward output, rows x cols; else NULL */
    const float *gamma;         /* cols */
    const float *mean, *rstd;   /* rows, as the forward pass saved them */
    float *dx;                  /* rows x cols */
    float *dgamma, *dbeta;      /* cols */
    /* BACK_BF16 programs: x (LayerNorm) or y (softmax, the bar), dy and dx
     * as bfloat16, rows x cols, and x, y, dy and dx above are NULL (the
     * bfloat16 bar reads y_bf16 and dy_bf16). void, because C has no
     * bfloat16 type: a kernel reads them as __nv_bfloat16 (as part 2's
     * x_bf16, common/rows.h). */
    const void *x_bf16, *y_bf16, *dy_bf16;
    void *dx_bf16;
    size_t rows, cols;
    struct workspace work;      /* see back_workspace() */
};

/* Which operation this program computes: its back.cu defines it. */
extern const enum back_op step_op;

/* Optional: without it the harness's weak default says BACK_F32. */
extern const enum back_dtype step_dtype;

/* Optional: 0 in a step whose dgamma and dbeta may come out with other
 * bits on another run (atomics add in no fixed order: steps 0 and 1). The
 * driver says it in --gpu-info (deterministic=0), and the grader
 * (tools/grade.py) then expects its determinism check to fail rather than
 * failing the step for it; every value is checked all the same. Without it
 * the driver's weak default says 1: the same bits every run, as the grader
 * requires of every other program (docs/grading.md, part 3). */
extern const int step_deterministic;

void back_run(const struct back_problem *p);

/* Optional, as row_workspace() in part 2: the workspace a problem needs
 * (rows and cols are set; the pointers may not be). Without it the harness
 * (common/back_driver.c) gives none: both of work's pointers NULL. */
struct workspace_size back_workspace(const struct back_problem *p);

#ifdef __cplusplus
}
#endif

#endif
