/* back_ref.h: part 3's CPU references (the backward pass of LayerNorm and
 * softmax) and the tolerances a float kernel's outputs are held to, for any
 * order of its adds. No CUDA; tests/unit_tests.c checks them against float
 * kernels written out in C, in several orders, and against broken ones.
 *
 * The inputs are floats, as a kernel gets them: x, dy, gamma, and the mean
 * and rstd the forward pass saved (PyTorch's layer_norm backward takes them
 * so), or softmax's saved output y. The references are computed in double
 * from those floats: their own error is some 1e-16 of the magnitudes below,
 * far inside every tolerance.
 *
 * u = 2^-24, and g(k) = k u / (1 - k u) bounds k roundings (Higham, Accuracy
 * and Stability of Numerical Algorithms, 2nd ed., Lemma 3.1). A sum of n
 * computed terms t_i, added in any order (any tree, partial sums stored as
 * floats, per block then across blocks), is within g(n - 1) sum |t_i| of the
 * exact sum of the t_i (ibid., eq. 4.4).
 *
 * xhat = (x - mean) rstd. A kernel may form it as (x - mean) * rstd, or as
 * fma(x, rstd, -mean * rstd); either is within g(3) A of xhat, with
 *   A = (|x| + |mean|) rstd,
 * which can be hundreds of times |xhat| where the mean is large: A enters
 * each bound once, where that error of one xhat does, never multiplied by a
 * sum's g(N).
 *
 * LayerNorm backward, over a row of N = cols, with g_k = dy_k gamma_k:
 *   dx_j = rstd (g_j - m1 - xhat_j m2),  m1 = (1/N) sum_k g_k,
 *                                        m2 = (1/N) sum_k g_k xhat_k
 *   e(m1) = g(N + 2) (1/N) sum |g_k|          the products, N - 1 adds, 1/N
 *   e(m2) = (1/N) [g(N + 3) sum |g_k xhat_k|   the same, one product more
 *                  + g(6) sum |g_k| A_k]      each term's xhat
 *   tol(dx_j) = rstd [g(5) (|g_j| + |m1| + |xhat_j m2|)   the last roundings
 *                     + e(m1) + (|xhat_j| + g(3) A_j) e(m2) + g(3) A_j |m2|]
 * Over R rows, for each column j:
 *   dbeta_j  = sum_r dy_rj          tol = g(R) sum_r |dy_rj|
 *   dgamma_j = sum_r dy_rj xhat_rj  tol = g(R + 1) sum_r |dy_rj xhat_rj|
 *                                         + g(4) sum_r |dy_rj| A_rj
 *
 * Softmax backward, over a row: dx_j = y_j (dy_j - s), s = sum_k y_k dy_k
 *   e(s) = g(N) sum |y_k dy_k|
 *   tol(dx_j) = |y_j| e(s) + g(3) |y_j| (|dy_j| + |s| + e(s))
 * (y_j (dy_j - s) or fma(y_j, dy_j, -y_j s): three roundings at most.)
 * That bound grows as N sum |y dy| where the random fill's s is about
 * 1/sqrt(N): past some 10^5 columns it would let a kernel that drops s, or
 * a cluster block's share of it, pass the random, tiny and shifted fills.
 * The exact fill (tolerance 0) is what catches those at wide rows: every
 * timed run's checks and every --check start with it, and the grader's
 * shape checks use it at every width.
 *
 * Each tolerance gets a relative margin of 2^-20 on top, for the second-order
 * terms (an error times an error) the lines above leave out. */
#ifndef REDUCE_BACK_REF_H
#define REDUCE_BACK_REF_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"   /* enum fill_kind */

/* One row of LayerNorm's dx, and each output's tolerance. */
void ln_backward_row_ref(const float *x, const float *dy, const float *gamma, float mean,
                         float rstd, size_t cols, double *dx, double *dx_tol);

/* dgamma and dbeta, a row at a time: adds a row's terms to the column sums
 * (dgamma, dbeta) and to the magnitudes of their bounds (sum |dy xhat|,
 * sum |dy| A, sum |dy|), which ln_dgamma_tol and ln_dbeta_tol turn into
 * tolerances once every row is in. */
void ln_param_grads_add(const float *x, const float *dy, float mean, float rstd, size_t cols,
                        double *dgamma, double *dgamma_mag, double *dgamma_amag, double *dbeta,
                        double *dbeta_mag);
double ln_dgamma_tol(size_t rows, double dgamma_mag, double dgamma_amag);
double ln_dbeta_tol(size_t rows, double dbeta_mag);

/* LayerNorm backward's exact fill: inputs on which every sum a kernel forms
 * is exact in float, in any order, so that its outputs can be held to a few
 * roundings (dx) or to none (dgamma, dbeta), where the bounds above allow
 * g(N) of the sums' magnitudes: a mean over N - 1 instead of N, which those
 * bounds cannot see at wide rows, moves m1 by m1 / (N - 1) here.
 * Row r: mean a float integer C_r, rstd 2^-1, 1 or 2, x = C_r + k with k
 * integers in -1..1 summing to 0 (so xhat = k rstd is exact, in either form),
 * gamma in {-1, 1}, dy integers in -4..4, except two columns of the row whose
 * dy is solved for so that sum(dy gamma) = N A and sum(dy gamma k) = N B for
 * nonzero integers A and B: m1 = A and m2 = B rstd are then exact quotients.
 * The two columns, and the one whose k makes the row's sum 0, move from row
 * to row, so that no column's sum over the rows grows past 2^24.
 * Then sum |g| <= 9 N and sum |g k| <= 6.5 N in a row, and a column's sums
 * over the rows stay under 13 R + 5 N: every partial sum is a multiple of
 * 1/2 (rstd >= 1/2) under 2^23, exact.
 * x and dy are rows x cols, gamma cols, mean and rstd rows. Returns 0, or -1
 * (nothing written) past what it keeps exact: 26 x rows + 10 x cols >= 2^24, or
 * either past 2^20. */
int ln_backward_exact_fill(size_t rows, size_t cols, unsigned long long seed, float *x,
                           float *dy, float *gamma, float *mean, float *rstd);

/* On that fill: dx's reference and its tolerance, a few roundings: m1 and
 * m2 a quotient each (or a product with a rounded 1 / N), then dx_j =
 * rstd (g_j - m1 - xhat_j m2) in at most three more, rstd a power of two:
 *   tol(dx_j) = rstd [g(2) (|m1| + |xhat_j m2|) + g(3) (|g_j| + |m1| + |xhat_j m2|)]
 * dgamma and dbeta are exact there: their references (ln_param_grads_add)
 * are to be met with no tolerance. */
void ln_backward_exact_ref(const float *x, const float *dy, const float *gamma, float mean,
                           float rstd, size_t cols, double *dx, double *dx_tol);

/* One row of softmax's dx, from the saved output y, and each tolerance. */
void softmax_backward_row_ref(const float *y, const float *dy, size_t cols, double *dx,
                              double *dx_tol);

/* Softmax backward's exact fill: y = m 2^-10 with m in {0, 1, 2, 4} (small
 * and non-negative, as probabilities are), dy integers in -3..3. Then every
 * y dy is exact, s = sum(y dy) is a multiple of 2^-10 under 12 N 2^-10 (so
 * every partial sum is exact, in any order, up to N = 2^20), dy - s is
 * exact, and y (dy - s) is a power of two times it: dx is exact, and a
 * kernel's must equal softmax_backward_row_ref's dx. Each row with a
 * nonzero y has s != 0; every 16th row (r = 15, 31, ...) is fully masked
 * (y = 0: its dx must be exactly 0). Returns 0, or -1 (nothing written)
 * for cols > 2^20. */
int softmax_backward_exact_fill(size_t rows, size_t cols, unsigned long long seed, float *y,
                                float *dy);

/* ---- The driver's host side (common/back_driver.c), here so that
 * tests/unit_tests.c checks it on the CPU. */

/* eps of the forward pass whose mean and rstd the random, shifted and tiny
 * fills save: PyTorch's default for layer_norm. */
#define BACK_EPS 1e-5

/* The fills part 3 takes (random, exact, shifted, tiny), a bit each: its
 * programs' struct program says so to the parser, which names them. */
#define BACK_FILLS (1u << FILL_RANDOM | 1u << FILL_EXACT | 1u << FILL_SHIFTED | 1u << FILL_TINY)
/* 1 for the fills part 3 takes, else 0. */
int back_fill_takes(enum fill_kind fill);

/* The ops' names in messages and in the CSV's op column. */
#define BACK_OP_NAME "layernorm_backward"
#define BACK_SOFTMAX_NAME "softmax_backward"

/* What the shared parser (harness.c) must know of part 3's programs: rows
 * x cols of floats in 16-byte packs, no --mask, no --beta-offset, a timed
 * run's checks (verify_set()) with the shifted and tiny fills, and for
 * LayerNorm --gamma-offset (it moves gamma, dgamma and dbeta); softmax
 * (softmax != 0) has no gamma. */
struct program back_program_of(int softmax);

/* 1 if ln_backward_exact_fill() takes rows x cols (26 x rows + 10 x
 * cols < 2^24, each at most 2^20), else 0. */
int back_exact_fits(size_t rows, size_t cols);

/* 1 if softmax_backward_exact_fill() takes rows x cols (cols at most
 * 2^20), else 0. */
int softmax_back_exact_fits(size_t rows, size_t cols);

/* The shared parser (harness.c) takes part 2's options for a program of
 * kind PROGRAM_ROWS, and only part 3's fills (its struct program's
 * BACK_FILLS): these are what part 3 does not take (yet): an exact fill past
 * its shapes, --check-every, a float array's offset past 3. 0, or -1 with a
 * one-line message in err. */
int back_options_check(int softmax, const struct options *o, char *err, size_t len);

/* LayerNorm backward's inputs for --fill F: x by the shared fill (random:
 * uniform in [-1, 1); shifted: 2000 + that; tiny: that x 1e-3), dy by the
 * random fill from another seed (tiny: the tiny fill), gamma in [-1, 1),
 * and each row's mean and rstd = 1 / sqrt(var + BACK_EPS) as the forward
 * pass saves them (computed in double, rounded to float once). exact:
 * ln_backward_exact_fill(). Returns 0, or -1 (nothing written) for a fill
 * back_fill_takes() refuses or an exact fill past its shapes. */
int back_fill(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, float *x, float *dy,
              float *gamma, float *mean, float *rstd);

/* Every output of one run against the reference: dx row by row
 * (ln_backward_exact_ref on the exact fill, else ln_backward_row_ref), then
 * dgamma and dbeta column by column (ln_dgamma_tol, ln_dbeta_tol; on the
 * exact fill with zero tolerance). */
struct back_verdict {
    size_t bad;         /* outputs outside their tolerance (NaN and Inf always are) */
    const char *what;   /* "dx", "dgamma" or "dbeta": the first bad output's, or the worst's */
    size_t row, col;    /* where (row is 0 for dgamma and dbeta) */
    double got, want, tol;
    double ratio;       /* |got - want| / tol there; 0 = equal; HUGE_VAL for NaN or tol = 0 */
    int params_exact;   /* dgamma and dbeta were held to zero tolerance */
};

/* exact: the inputs are back_fill's exact fill. Returns 0, or -1 when the
 * host is out of memory (v is then unset). */
int back_check(size_t rows, size_t cols, int exact, const float *x, const float *dy,
               const float *gamma, const float *mean, const float *rstd, const float *dx,
               const float *dgamma, const float *dbeta, struct back_verdict *v);

/* Softmax backward's inputs for --fill F: the forward pass first, on
 * logits 4 u (u the shared random fill, uniform in [-1, 1)) with masks as
 * attention lays them: every row r = 15 mod 16 fully masked (y = 0), and
 * in the others about one logit in 8 at seeded places (their y = 0); y =
 * exp(l - max) / sum over the rest, in double, rounded to float once. dy:
 * the random fill from another seed (shifted: 2000 + that, where s is
 * about 2000 and dy - s cancels; tiny: the tiny fill). exact:
 * softmax_backward_exact_fill(). Returns 0, or -1 (nothing written) for a
 * fill back_fill_takes() refuses or an exact fill past its shapes. */
int softmax_back_fill(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, float *y,
                      float *dy);

/* Every dx of one softmax backward run against softmax_backward_row_ref:
 * within its tolerance, or on the exact fill (exact != 0) equal to it. A
 * masked y (0) has tolerance 0 on every fill: its dx must be 0. Returns 0,
 * or -1 when the host is out of memory. */
int softmax_back_check(size_t rows, size_t cols, int exact, const float *y, const float *dy,
                       const float *dx, struct back_verdict *v);

/* ---- bfloat16 softmax backward (back.h: a program whose step_dtype is
 * BACK_BF16; LayerNorm's is below).
 * y and dy are made as for float (softmax_back_fill) and then rounded to
 * bfloat16 (back_round_bf16), so that the reference is computed from the
 * very values the kernel reads; every sum stays float in the kernel, and
 * each dx is rounded once to bfloat16 as it is stored. The conversions and
 * bf16_output_tol are part 2's (common/rows_ref.c, linked into part 3's
 * programs), declared here as rows_ref.h declares them: rows_ref.h itself
 * cannot come in beside back.h (both declare step_op and step_dtype).
 *
 * softmax_back_check_bf16 holds dx (each value the float of a bfloat16):
 *   exact fill: dx exactly the bfloat16 rounding (to nearest, ties to even)
 *     of the exact dx. bfloat16 keeps y = m 2^-10 and the integer dy of
 *     softmax_backward_exact_fill as they are, so the fill is unchanged; its
 *     dx is exact in float (above), and one rounding of an exact float is
 *     one value: tolerance 0. It catches dx cut rather than rounded to
 *     nearest, and a lost share of s at any width, as for float. It does
 *     not catch a rounding on the way: y dy is exact in bfloat16 there, y
 *     is a power of two (so y (dy - s) rounds as dy - s does), and s is
 *     small beside the integer dy. The random fill catches s rounded to
 *     bfloat16 before dy - s (--check's determinism runs, and the timed
 *     runs themselves), and so does the shifted fill (dy near 2000, which
 *     bfloat16 keeps as 1992, 2000 or 2008), where dy - s cancels.
 *   other fills: the float bound (softmax_backward_row_ref's tol) plus the
 *     output's rounding: bf16_output_tol(tol, dx) = tol (1 + 2^-8) + 2^-8 |dx|.
 *   a masked y (0): tolerance 0 on every fill, as for float: dx exactly 0. */
uint16_t bf16_from_float(float f);
float bf16_to_float(uint16_t h);
double bf16_output_tol(double tol, double y);

/* Each of v's n floats replaced by the float of its bfloat16 rounding. */
void back_round_bf16(float *v, size_t n);

#define BACK_SOFTMAX_BF16_NAME "softmax_backward_bf16"

/* What the shared parser must know of a bfloat16 softmax backward program
 * (softmax != 0), or of the bfloat16 bar (softmax = 0: copy3_bf16, below):
 * back_program_of(softmax)'s, in bfloat16s, 8 to a 16-byte pack (--offset,
 * --y-offset and --gamma-offset count bfloat16s, 0..7). */
struct program back_program_bf16(int softmax);

/* The bfloat16 bar, back/baseline_copy3_bf16 (BACK_COPY3 with BACK_BF16):
 * y and dy read, dx written, in bfloat16: the three streams of the bfloat16
 * softmax backward, 6 bytes an element (softmax_back_bf16_bytes). Its fill
 * is the float bar's, rounded to bfloat16 (back_round_bf16); every dx must
 * be the float sum y + dy rounded once to bfloat16, bit for bit. */
#define BACK_COPY3_BF16_NAME "copy3_bf16"
void back_copy3_check_bf16(size_t rows, size_t cols, const float *y, const float *dy,
                           const float *dx, struct back_verdict *v);

/* y, dy and dx hold bfloat16 values (as floats): the checks above. 0, or -1
 * when the host is out of memory. */
int softmax_back_check_bf16(size_t rows, size_t cols, int exact, const float *y,
                            const float *dy, const float *dx, struct back_verdict *v);

/* Bytes a bfloat16 softmax backward must move: y and dy read, dx written,
 * 2 bytes an element each: 6 an element. */
double softmax_back_bf16_bytes(size_t rows, size_t cols);

/* ---- bfloat16 LayerNorm backward (BACK_LAYERNORM with BACK_BF16): x, dy
 * and dx bfloat16; gamma, mean, rstd, dgamma and dbeta float (back.h).
 * back_fill_bf16 makes back_fill's x, dy and gamma, rounds x and dy to
 * bfloat16, and only then takes each row's mean and rstd from the rounded
 * x, as back_fill does: the statistics a forward pass over the kernel's x
 * saves. Its exact fill is ln_backward_exact_fill kept to bfloat16's
 * values, so that rounding changes nothing: means in -255..255 (x = mean +
 * k, within 256, where bfloat16 holds every integer) and the two solved dy
 * of a row cut toward 0 to a bfloat16 (|g| <= 2.5 N, as before; each cut
 * by under 2^-7 of itself). Every sum stays an exact integer, or half of
 * one, so dgamma and dbeta are still exact (tolerance 0); m1 and m2 are no
 * longer exact quotients, but m1 and m2 / rstd are within 0.02 of the
 * nonzero integers A and B, and ln_backward_exact_ref's tolerance (a rounding for each
 * quotient) already takes.
 *
 * back_check_bf16 holds dgamma and dbeta as back_check does (they are
 * float sums of the rounded inputs), and dx (each the float of a bfloat16):
 *   exact fill: the bfloat16 rounding, to nearest even, of a float within
 *     ln_backward_exact_ref's few roundings of the exact dx: bit for bit
 *     the rounding of the exact dx (tolerance 0), except where those few
 *     roundings reach a midpoint between two bfloat16s; there either. A
 *     kernel that divides by N, or multiplies by a rounded 1 / N, meets it;
 *     dx cut toward 0 instead of rounded, or a bfloat16 off, does not.
 *   other fills: the float bound plus the output's rounding,
 *     bf16_output_tol(tol, dx), as softmax_back_check_bf16. The shifted
 *     fill is thin in bfloat16: x = 2000 + uniform(-1, 1) rounds to 2000
 *     (bfloat16 keeps steps of 8 there), so xhat = 0 and rstd = 1 /
 *     sqrt(eps); a kernel given the unrounded x's statistics fails it.
 * Returns 0, or -1 when the host is out of memory. */
int back_fill_bf16(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, float *x,
                   float *dy, float *gamma, float *mean, float *rstd);
int back_check_bf16(size_t rows, size_t cols, int exact, const float *x, const float *dy,
                    const float *gamma, const float *mean, const float *rstd, const float *dx,
                    const float *dgamma, const float *dbeta, struct back_verdict *v);

#define BACK_LAYERNORM_BF16_NAME "layernorm_backward_bf16"

/* What the shared parser must know of a bfloat16 LayerNorm backward
 * program: back_program_bf16(0)'s (offsets 0..7; --gamma-offset counts
 * floats, as gamma is float) with its op's name. */
struct program back_program_ln_bf16(void);

/* Bytes a bfloat16 LayerNorm backward must move: back_bytes with 2 bytes
 * an element of x, dy and dx (gamma, dgamma, dbeta, mean and rstd float). */
double back_bf16_bytes(size_t rows, size_t cols);

/* The first index where a and b differ bit for bit, or -1. */
long long back_first_difference(const float *a, const float *b, size_t n);

/* Bytes a LayerNorm backward must move: x and dy read, dx written (rows x
 * cols floats each), gamma read and dgamma, dbeta written (cols each), mean
 * and rstd read (rows each). GB/s = bytes / time. */
double back_bytes(size_t rows, size_t cols);

/* Bytes a softmax backward must move: y and dy read, dx written, 12 an
 * element (the bar's three streams, back_copy3_bytes()). */
double softmax_back_bytes(size_t rows, size_t cols);

/* Part 3's bar, back/baseline_copy3 (common/back.h: BACK_COPY3): its op's
 * name, the bytes it moves (x and dy read, dx written: 12 an element, and
 * none of the small arrays, which it does not touch) and its check: every
 * dx must be the float x + dy (one add, one rounding, the same on the CPU
 * and the GPU) bit for bit, whatever the fill. The verdict names the first
 * wrong dx (ratio HUGE_VAL there), else dx[0] (ratio 0); tol is 0. */
#define BACK_COPY3_NAME "copy3"
double back_copy3_bytes(size_t rows, size_t cols);
void back_copy3_check(size_t rows, size_t cols, const float *x, const float *dy,
                      const float *dx, struct back_verdict *v);

#endif
