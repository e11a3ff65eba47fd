/* rows_ref.h: part 2's CPU references and the tolerances they are compared
 * with, one row at a time (no CUDA: tests/unit_tests.c checks them). */
#ifndef REDUCE_ROWS_REF_H
#define REDUCE_ROWS_REF_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "rows.h"

#define LN_EPS 1e-5f   /* PyTorch's default for layer_norm */
#define UNIT_ROUNDOFF 0x1p-24   /* u: float's relative rounding error */
/* CUDA's rsqrtf and expf are within 2 ulp (CUDA C++ Programming Guide,
 * "Mathematical Functions"); sqrtf and / round correctly without fast-math. */
#define MATH_ULPS 2.0
/* u for bfloat16: 8 significant bits (7 stored and the implicit 1), so
 * round to nearest is off by at most half an ulp, 2^-8 of the value (not
 * 2^-9: that would be 8 stored bits). Its exponent is float's, so it has
 * float's normal range; its subnormals stop near 2^-133, far above float's
 * 2^-149, so the relative bound holds only above 2^-126; SOFTMAX_FLOOR,
 * the 1e-38 added to every softmax tolerance, covers what lies below. */
#define BF16_ROUNDOFF 0x1p-8

/* "sum", "layernorm", "softmax", "copy" or "rmsnorm". */
const char *row_op_name(enum row_op op);

/* What the shared option parser and verify_set() (common/harness.c) must
 * know of a part 2 program: its op's name, its element type, the options
 * its op takes and the checks its arithmetic needs. */
struct program row_program_of(enum row_op op, enum row_dtype dtype);

/* float <-> bfloat16 bits on the host: round to nearest, ties to even, as
 * __float2bfloat16_rn does on the GPU; a NaN stays a NaN. bfloat16 -> float
 * is exact. */
uint16_t bf16_from_float(float f);
float bf16_to_float(uint16_t h);

/* A float output y' within tol of y, then rounded once to bfloat16:
 * |bf16(y') - y| <= |bf16(y') - y'| + |y' - y| <= u16 |y'| + tol
 *                <= u16 (|y| + tol) + tol = tol (1 + u16) + u16 |y|. */
double bf16_output_tol(double tol, double y);

/* gamma and beta for LayerNorm: 1 + [-0.5, 0.5) and [-0.5, 0.5), from the seed. */
void fill_affine(float *gamma, float *beta, size_t cols, unsigned long long seed);

/* --fill levels (part 2 only): every value 0 or -200, from the seed. In
 * float, exp(-200) underflows to 0 and exp(0) is 1, so every exponential a
 * softmax takes is exactly 0 or 1, its sum is an exact count S in any order,
 * and every output is 1/S or 0: a check a few ulps wide at any width. Sums
 * and LayerNorm's mean are exact too (integers, sum|x| < 2^24 below 83886
 * columns). Exact in bfloat16 as well. */
#define LEVELS_LOW (-200.0f)
void fill_levels(float *x, size_t n, unsigned long long seed);

/* --fill centered (part 2 only): in each row, C + d with d in {-1, 0, 1} and
 * the d summing to 0 (in pairs, d and -d; a last odd value is C), where C is
 * the largest power of two up to 128 with C x cols < 2^24: 128 up to 131071
 * columns, 8 at 2^20. So the mean is exactly C, the deviations are exact
 * integers, and a LayerNorm that forms the mean from the sum and the
 * variance around it computes both exactly at any width: its check is a few
 * ulps wide, and E[x^2] - E[x]^2 (C^2 against a variance of about 2/3) or
 * eps outside the square root fail it. Exact in bfloat16 too (C + 1 has at
 * most 8 significant bits). */
void fill_centered(float *x, size_t rows, size_t cols, unsigned long long seed);
double centered_value(size_t cols);   /* C */

/* --mask's kinds (enum row_mask in harness.h), laid over x. */
void mask_rows(float *x, size_t rows, size_t cols, enum row_mask mask, unsigned long long seed);

/* A part 2 input: harness.h's fill_rows() (own = ROW_FILL_SHARED) or one of
 * part 2's own fills, then the mask. one = onehot_index(). */
void fill_row_input(float *x, size_t rows, size_t cols, enum fill_kind fill, enum row_fill own,
                    enum row_mask mask, unsigned long long seed, size_t one);

/* The statistics of one row, in double (two passes). */
struct row_stats {
    double sum, sum_abs;   /* sum of x, sum of |x| */
    double mean, var;      /* var = sum (x - mean)^2 / cols: the population variance */
    double max;            /* for softmax */
    double ms;             /* mean of x^2, for RMSNorm */
    int exact;             /* every x an integer and sum_abs < 2^24 */
    int exact_var;         /* exact, an integer mean, and sum (x - mean)^2 < 2^24 */
    int exact_sq;          /* every x an integer and sum x^2 < 2^24: any order of adds is exact */
};
void row_stats(const float *x, size_t cols, struct row_stats *s);

/* The change a timed run's fresh input makes to element c of a row (which
 * must be finite): 2^(e+1) where |x_c| < 2^e (at least 2), so integers stay
 * integers and every op's outputs move past their tolerance. A row sum's
 * tolerance grows with the row (g(cols - 1) sum |x|): there the change is
 * doubled until it is over four times the tolerance the changed row has, so
 * an honest sum sits nearer the new sum than the old one (fresh_moved), in
 * any order of adds. */
double fresh_row_step(const float *row, size_t cols, size_t c, enum row_op op);

/* LayerNorm's error bounds for one row, for float arithmetic in any order of
 * adds (tests/unit_tests.c derives them step by step and tries them):
 *   mean:  |mean' - mean| <= dm = g(cols + 1) * mean|x|; when the row's sum is
 *          exact (s->exact: integers, sum|x| < 2^24, so any order of adds is
 *          exact) only the division, or a product with a rounded 1 / cols,
 *          rounds: dm = g(2) |mean|, at any width. (This assumes the mean is
 *          formed from the row's sum, as every step but 22 does. Step 22's
 *          mean is the count-weighted average, in double, of chunk means,
 *          each from its chunk's sum and exact on integer rows: within the
 *          same dm once rounded to float.)
 *   var:   relative error of var' + eps <= rho_v
 *          = (g(cols + 2) * var + (1 + g(cols + 2)) * dm^2) / (var + eps) + 2u
 *   rstd:  relative error <= rho_r = rho_v / 2 + (2 MATH_ULPS + 1) u (+ rho_v^2)
 *   y_i:   |y_i' - y_i| <= |gamma_i| rstd (|x_i - mean| (rho_r + 3u) + dm (1 + rho_r + 3u))
 *                          + u (|beta_i| + |y_i|)
 * where g(k) = k u / (1 - k u). */
struct ln_bounds {
    double mean, rstd;          /* the reference */
    double mean_tol, rstd_tol;  /* absolute */
    double dm, rho_r;           /* for y's tolerance */
};
void layernorm_bounds(const struct row_stats *s, size_t cols, double eps, struct ln_bounds *b);

/* When s->exact_var and the kernel's own mean is the exact mean, its
 * deviations x - mean and their squares are exact integers, so the
 * variance's sum is exact in any order: only the division, + eps and rsqrtf
 * round. Then rho_v = 3u, dm = 0 for y, and every bound above is a few ulps
 * at any width (the centered fill is built for this). A kernel whose mean is
 * one rounding off keeps the general bound. Returns 1 if it tightened b. */
int layernorm_exact_variance(const struct row_stats *s, double kernel_mean, struct ln_bounds *b);
double layernorm_y_tol(const struct ln_bounds *b, double x, double gamma, double beta, double y);

/* RMSNorm's error bounds for one row (tests/unit_tests.c tries them), for
 * float arithmetic in any order of adds. Every x^2 is positive, so the sum
 * of squares is off by at most g(cols) of itself (each square rounds once,
 * each add once), whatever the order; when s->exact_sq it is exact:
 *   ms + eps: relative error <= rho_s = g(cols + 1) ms / (ms + eps) + 2u
 *             (the division by cols, or a product with a rounded 1 / cols,
 *             and + eps), or 3u when exact_sq (this assumes the squares are
 *             summed first and the sum scaled once, as every step here does)
 *   rstd:     relative error <= rho_r = rho_s / 2 + (2 MATH_ULPS + 1) u (+ rho_s^2)
 *             (rsqrtf's MATH_ULPS ulps are up to 2 MATH_ULPS u of its value,
 *             at the bottom of a binade)
 *   y_i:      |y_i' - y_i| <= |y_i| (rho_r + 3u): x_i rstd gamma_i, two
 *             products in either order. */
struct rms_bounds {
    double rstd, rstd_tol;   /* the reference, and its absolute tolerance */
    double rho_r;            /* for y's tolerance */
};
void rmsnorm_bounds(const struct row_stats *s, size_t cols, double eps, struct rms_bounds *b);
double rmsnorm_y_tol(const struct rms_bounds *b, double y);

/* Softmax over one row, in double, -inf values (masked) left out. */
struct softmax_stats {
    double max;      /* M, over the finite values; -inf when every value is -inf */
    double sum;      /* S = sum of exp(x - M) */
    double spread;   /* W = sum of y_j |x_j - M|: the rounding of x - M, weighted by output */
    int exact;       /* every finite x is M or at least SOFTMAX_UNDERFLOW below it */
};
/* exp(x) rounds to 0 in float below ln(2^-150), about -103.97. */
#define SOFTMAX_UNDERFLOW 104.0
void softmax_stats(const float *x, size_t cols, struct softmax_stats *s);

/* The tolerance of y_i = exp(x_i - M) / S (want is that value in double):
 *   a masked x_i (-inf), or any x_i of a fully masked row: 0. Its output is
 *     exactly 0, as in attention kernels (plain torch.softmax gives NaN for
 *     a fully masked row: 0 / 0);
 *   an exact row: SOFTMAX_EXACT_ULPS u y_i, since every exponential is 0
 *     or 1 and S an exact count: only 1 / S rounds;
 *   otherwise y_i (u (|x_i - M| + 2 W + 8) + g(4 cols)): the rounding of
 *     x_i - M, of every other x_j - M and of the online rescales' arguments
 *     (W each, weighted by y_j: a term far below the max barely counts),
 *     expf and the division (8 u), and the sum with its rescales in any
 *     order (g(4 cols)). The sum's term is the one that grows with the width:
 *     adds in any order can round that much.
 * Plus SOFTMAX_FLOOR (1e-38): outputs that small are zero to float. */
#define SOFTMAX_EXACT_ULPS 4.0
double softmax_tol(const struct softmax_stats *s, double x, double want, size_t cols);

/* The worst element of a check: where |got - want| / tol is largest. */
struct row_verdict {
    size_t bad;             /* outputs outside their tolerance (NaN and Inf always are) */
    size_t row, col;        /* the worst one; col = 0 for per-row outputs */
    const char *what;       /* "sum", "y", "mean" or "rstd" */
    double got, want, tol;
    double ratio;           /* |got - want| / tol there; 0 = exact; HUGE_VAL for NaN or tol = 0 */
    int exact;              /* every output had zero tolerance */
};

/* Checks every output of op on x against the reference. y, mean and rstd
 * are the program's outputs (mean and rstd only for LayerNorm, rstd only
 * for RMSNorm; gamma and beta as the op takes them). For ROW_ADD_RMSNORM, x
 * is h as stored (x + residual): y is checked as its RMSNorm, and the
 * harness checks h itself, exactly. For ROW_BF16, x, gamma and beta are the bfloat16 inputs and y
 * the bfloat16 outputs, widened to float (exactly): the reference starts
 * from the rounded input, and y's tolerance adds its one rounding to
 * bfloat16 (bf16_output_tol); mean and rstd stay float. Rows are checked
 * in parallel; the verdict does not depend on the number of threads. */
void check_rows(enum row_op op, enum row_dtype dtype, const float *x, size_t rows, size_t cols,
                const float *gamma, const float *beta, double eps, const float *y,
                const float *mean, const float *rstd, struct row_verdict *v);

/* check_rows() on rows 0, every, 2 every, ... and on the last `every` rows
 * only (every = 1: all of them), for a matrix so large that checking each
 * row on the CPU would take minutes: the grader's check past 2^32 elements,
 * whose bugs (an index of 32 bits) spoil every row past a point. */
void check_rows_every(enum row_op op, enum row_dtype dtype, const float *x, size_t rows,
                      size_t cols, const float *gamma, const float *beta, double eps,
                      const float *y, const float *mean, const float *rstd, size_t every,
                      struct row_verdict *v);

/* Bytes one run must move through DRAM: every input read once, every output
 * written once (GB/s = bytes / time); x, y, gamma and beta at 2 bytes an
 * element for ROW_BF16, mean and rstd at 4. */
double row_bytes(enum row_op op, enum row_dtype dtype, size_t rows, size_t cols);

/* The op as the results' op column names it: "softmax", or "softmax_bf16"
 * for a bfloat16 program (and "torch/softmax_bf16" is PyTorch's). */
const char *row_kind_name(enum row_op op, enum row_dtype dtype);

#endif
