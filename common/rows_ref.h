/* rows_ref.h: part 2's CPU references and the tolerances they are compared
 * with, one row at a time (no CUDA: tests/unit_tests.c checks them). */
#ifndef REDUCE_ROWS_REF_H
#define REDUCE_ROWS_REF_H

#include <stddef.h>
#include <stdint.h>

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

/* The statistics of one row, in double (two passes). */
struct row_stats {
    double sum, sum_abs;   /* sum of x, sum of |x| */
    double mean, var;      /* var = sum (x - mean)^2 / cols: the population variance */
    double max;            /* for softmax */
    int exact;             /* every x an integer and sum_abs < 2^24 */
};
void row_stats(const float *x, size_t cols, struct row_stats *s);

/* LayerNorm's error bounds for one row, for float arithmetic in any order of
 * adds (tests/unit_tests.c derives them step by step and tries them):
 *   mean:  |mean' - mean| <= dm = g(cols + 1) * mean|x|
 *   var:   relative error of var' + eps <= rho_v
 *          = (g(cols + 2) * var + (1 + g(cols + 2)) * dm^2) / (var + eps) + 2u
 *   rstd:  relative error <= rho_r = rho_v / 2 + (MATH_ULPS + 1) u (+ rho_v^2)
 *   y_i:   |y_i' - y_i| <= |gamma_i| rstd (|x_i - mean| (rho_r + 3u) + dm (1 + rho_r + 3u))
 *                          + u (|beta_i| + |y_i|)
 * where g(k) = k u / (1 - k u). */
struct ln_bounds {
    double mean, rstd;          /* the reference */
    double mean_tol, rstd_tol;  /* absolute */
    double dm, rho_r;           /* for y's tolerance */
};
void layernorm_bounds(const struct row_stats *s, size_t cols, double eps, struct ln_bounds *b);
double layernorm_y_tol(const struct ln_bounds *b, double x, double gamma, double beta, double y);

/* Softmax's bound for element i of one row (max M, max |x - M| = D, sum of
 * exp(x - M) = S): relative error <= u (|x_i - M| + D + 8) + g(4 cols), which
 * covers the rounding of x - M, expf, the sum in any order, the online
 * rescales and the division. */
double softmax_rel_tol(double x, double max, double spread, size_t cols);

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
 * are the program's outputs (mean and rstd only for LayerNorm; gamma and
 * beta too). For ROW_BF16, x, gamma and beta are the bfloat16 inputs and y
 * the bfloat16 outputs, widened to float (exactly): the reference starts
 * from the rounded input, and y's tolerance adds its one rounding to
 * bfloat16 (bf16_output_tol); mean and rstd stay float. Rows are checked
 * in parallel; the verdict does not depend on the number of threads. */
void check_rows(enum row_op op, enum row_dtype dtype, const float *x, size_t rows, size_t cols,
                const float *gamma, const float *beta, double eps, const float *y,
                const float *mean, const float *rstd, struct row_verdict *v);

/* Bytes one run must move through DRAM: every input read once, every output
 * written once (GB/s = bytes / time); x, y, gamma and beta at 2 bytes an
 * element for ROW_BF16, mean and rstd at 4. */
double row_bytes(enum row_op op, enum row_dtype dtype, size_t rows, size_t cols);

const char *row_op_name(enum row_op op);

/* The op as the results' op column names it: "softmax", or "softmax_bf16"
 * for a bfloat16 program (and "torch/softmax_bf16" is PyTorch's). */
const char *row_kind_name(enum row_op op, enum row_dtype dtype);

#endif
