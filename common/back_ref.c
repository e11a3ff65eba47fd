/* back_ref.c: part 3's CPU references and tolerances (back_ref.h). */
#include "back_ref.h"
#include "back.h"      /* step_dtype, step_deterministic */
#include "harness.h"   /* splitmix64 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float program does not define step_dtype, and one that does not say
 * otherwise promises the same bits every run: these weak definitions stand in,
 * and a program's own (strong) ones replace them at link time. They live here,
 * not in the driver that reads them: gcc folds a weak const's value into code
 * in its own file (steps 0 and 1 said deterministic=1 on the H200 for it). */
__attribute__((weak)) const enum back_dtype step_dtype = BACK_F32;
__attribute__((weak)) const int step_deterministic = 1;

#define U 0x1p-24          /* float's unit roundoff */
#define MARGIN 0x1p-20     /* the second-order terms, relative */
#define EXACT_FILL_MAX ((size_t)1 << 20)   /* rows and cols of the exact fill */

/* g(k) = k u / (1 - k u): the relative error bound of k roundings. */
static double g(double k)
{
    return k * U / (1.0 - k * U);
}

void ln_backward_row_ref(const float *x, const float *dy, const float *gamma, float mean,
                         float rstd, size_t cols, double *dx, double *dx_tol)
{
    double n = (double)cols, r = rstd, m = mean;
    double s1 = 0.0, s2 = 0.0, mag1 = 0.0, mag2 = 0.0, amag2 = 0.0;
    for (size_t k = 0; k < cols; k++) {
        double gk = (double)dy[k] * gamma[k];
        double xhat = ((double)x[k] - m) * r;
        s1 += gk;
        s2 += gk * xhat;
        mag1 += fabs(gk);
        mag2 += fabs(gk * xhat);
        amag2 += fabs(gk) * (fabs((double)x[k]) + fabs(m)) * r;
    }
    double m1 = s1 / n, m2 = s2 / n;
    double e1 = g(n + 2) * mag1 / n, e2 = (g(n + 3) * mag2 + g(6) * amag2) / n;
    for (size_t j = 0; j < cols; j++) {
        double gj = (double)dy[j] * gamma[j];
        double xhat = ((double)x[j] - m) * r;
        double a = (fabs((double)x[j]) + fabs(m)) * r;
        dx[j] = r * (gj - m1 - xhat * m2);
        double tol = r * (g(5) * (fabs(gj) + fabs(m1) + fabs(xhat * m2)) + e1 +
                          (fabs(xhat) + g(3) * a) * e2 + g(3) * a * fabs(m2));
        dx_tol[j] = tol * (1.0 + MARGIN);
    }
}

void ln_param_grads_add(const float *x, const float *dy, float mean, float rstd, size_t cols,
                        double *dgamma, double *dgamma_mag, double *dgamma_amag, double *dbeta,
                        double *dbeta_mag)
{
    double r = rstd, m = mean;
    for (size_t j = 0; j < cols; j++) {
        double d = dy[j], xhat = ((double)x[j] - m) * r;
        dgamma[j] += d * xhat;
        dgamma_mag[j] += fabs(d * xhat);
        dgamma_amag[j] += fabs(d) * (fabs((double)x[j]) + fabs(m)) * r;
        dbeta[j] += d;
        dbeta_mag[j] += fabs(d);
    }
}

double ln_dgamma_tol(size_t rows, double dgamma_mag, double dgamma_amag)
{
    return (g((double)rows + 1) * dgamma_mag + g(4) * dgamma_amag) * (1.0 + MARGIN);
}

double ln_dbeta_tol(size_t rows, double dbeta_mag)
{
    return g((double)rows) * dbeta_mag * (1.0 + MARGIN);
}

/* An integer in lo..hi from value i of the seed (the harness's counter-based
 * splitmix64: the same value whatever order the fill asks for them in). */
static long pick(unsigned long long seed, unsigned long long i, long lo, long hi)
{
    return lo + (long)(splitmix64(seed * 0x100000001b3ull + i) % (unsigned long long)(hi - lo + 1));
}

/* n / d rounded to the nearest integer (d > 0). */
static long nearest(long n, long d)
{
    return n >= 0 ? (n + d / 2) / d : -((-n + d / 2) / d);
}

/* A bfloat16 near n (|n| < 2^24), cut toward 0: never larger than n. */
static long bf16_cut(long n)
{
    float f = (float)n;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (long)bf16_to_float((uint16_t)(u >> 16));
}

/* ln_backward_exact_fill, and with bf16 != 0 the same fill kept to
 * bfloat16's values (back_fill_bf16, back_ref.h): means within 255, the
 * two solved dy cut to bfloat16. */
static int exact_fill(size_t rows, size_t cols, unsigned long long seed, int bf16, float *x,
                      float *dy, float *gamma, float *mean, float *rstd)
{
    /* Past this, a column's sum over the rows could pass 2^24 halves. */
    if (!back_exact_fits(rows, cols))
        return -1;
    static const float rstds[3] = {0.5f, 1.0f, 2.0f};
    long n = (long)cols;
    for (size_t j = 0; j < cols; j++)
        gamma[j] = pick(seed, j, 0, 1) ? 1.0f : -1.0f;
    for (size_t r = 0; r < rows; r++) {
        unsigned long long rs = seed + 0x9e37ull * (r + 1);
        float *xr = x + r * cols, *dyr = dy + r * cols;
        /* The mean: an integer, exact in float (bfloat16: x = mean + k too). */
        long c0 = bf16 ? pick(rs, 0, -255, 255) : pick(rs, 0, -1000, 1000);
        mean[r] = (float)c0;
        rstd[r] = rstds[pick(rs, 1, 0, 2)];
        for (size_t j = 0; j < cols; j++) {
            xr[j] = (float)c0;
            dyr[j] = (float)pick(rs, 2 + cols + j, -4, 4);
        }
        if (cols < 3)
            continue;   /* k = 0 and N <= 2: every sum and quotient is exact already */
        /* Columns a and b get k = 0 and 1 and their dy solved for, c gets
         * k = -1; the others come in pairs of k = t and -t, a last one alone
         * k = 0: every |k| <= 1, and the row's k sum to 0. They rotate. */
        size_t a = (2 * r) % cols, b = (2 * r + 1) % cols, c = (2 * r + 2) % cols;
        xr[b] = (float)(c0 + 1);
        xr[c] = (float)(c0 - 1);
        long t = 0;
        int second = 0;
        for (size_t j = 0; j < cols; j++) {
            if (j == a || j == b || j == c)
                continue;
            t = second ? -t : pick(rs, 2 + j, -1, 1);
            second = !second;
            xr[j] = (float)(c0 + t);
        }
        if (second)   /* the last pair's first has no second: back to 0 */
            for (size_t j = cols; j-- > 0;)
                if (j != a && j != b && j != c) {
                    xr[j] = (float)c0;
                    break;
                }
        /* S1 = sum(g), S2 = sum(g k) over the columns but a and b (g = dy gamma). */
        long s1 = 0, s2 = 0;
        for (size_t j = 0; j < cols; j++) {
            if (j == a || j == b)
                continue;
            long g = (long)dyr[j] * (long)gamma[j], k = (long)xr[j] - c0;
            s1 += g;
            s2 += g * k;
        }
        /* g_b = N B - S2 (k_b = 1), then g_a = N A - S1 - g_b (k_a = 0), with A
         * and B nonzero integers next to the nearest: |g_a|, |g_b| <= 2.5 N. */
        long shift = pick(rs, 2 + 2 * cols, 0, 1) ? 1 : -1;
        long big_b = nearest(s2, n) + shift;
        big_b += big_b == 0 ? shift : 0;
        long g_b = n * big_b - s2;
        g_b = bf16 ? bf16_cut(g_b) : g_b;   /* before g_a, which makes up for it in S1 */
        shift = pick(rs, 3 + 2 * cols, 0, 1) ? 1 : -1;
        long big_a = nearest(s1 + g_b, n) + shift;
        big_a += big_a == 0 ? shift : 0;
        long g_a = n * big_a - s1 - g_b;
        g_a = bf16 ? bf16_cut(g_a) : g_a;
        dyr[a] = (float)(g_a * (long)gamma[a]);   /* gamma is +-1: dy = g gamma */
        dyr[b] = (float)(g_b * (long)gamma[b]);
    }
    return 0;
}

int ln_backward_exact_fill(size_t rows, size_t cols, unsigned long long seed, float *x,
                           float *dy, float *gamma, float *mean, float *rstd)
{
    return exact_fill(rows, cols, seed, 0, x, dy, gamma, mean, rstd);
}

void ln_backward_exact_ref(const float *x, const float *dy, const float *gamma, float mean,
                           float rstd, size_t cols, double *dx, double *dx_tol)
{
    double n = (double)cols, r = rstd, m = mean, s1 = 0.0, s2 = 0.0;
    for (size_t k = 0; k < cols; k++) {
        double gk = (double)dy[k] * gamma[k];
        s1 += gk;
        s2 += gk * (((double)x[k] - m) * r);
    }
    double m1 = s1 / n, m2 = s2 / n;
    for (size_t j = 0; j < cols; j++) {
        double gj = (double)dy[j] * gamma[j], xm = ((double)x[j] - m) * r * m2;
        dx[j] = r * (gj - m1 - xm);
        dx_tol[j] = r * (g(2) * (fabs(m1) + fabs(xm)) + g(3) * (fabs(gj) + fabs(m1) + fabs(xm))) *
                    (1.0 + MARGIN);
    }
}

void softmax_backward_row_ref(const float *y, const float *dy, size_t cols, double *dx,
                              double *dx_tol)
{
    double s = 0.0, mag = 0.0;
    for (size_t k = 0; k < cols; k++) {
        s += (double)y[k] * dy[k];
        mag += fabs((double)y[k] * dy[k]);
    }
    double e = g((double)cols) * mag;
    for (size_t j = 0; j < cols; j++) {
        double yj = y[j];
        dx[j] = yj * ((double)dy[j] - s);
        dx_tol[j] = (fabs(yj) * e + g(3) * fabs(yj) * (fabs((double)dy[j]) + fabs(s) + e)) *
                    (1.0 + MARGIN);
    }
}

int softmax_backward_exact_fill(size_t rows, size_t cols, unsigned long long seed, float *y,
                                float *dy)
{
    if (rows == 0 || cols == 0 || cols > EXACT_FILL_MAX)
        return -1;
    static const float ms[4] = {0.0f, 1.0f, 2.0f, 4.0f};
    for (size_t r = 0; r < rows; r++) {
        unsigned long long rs = seed + 0x7f4aull * (r + 1);
        float *yr = y + r * cols, *dyr = dy + r * cols;
        int masked = r % 16 == 15;
        long s = 0;   /* sum(m dy): s 2^10 */
        for (size_t j = 0; j < cols; j++) {
            yr[j] = masked ? 0.0f : ms[pick(rs, j, 0, 3)] * 0x1p-10f;
            dyr[j] = (float)pick(rs, cols + j, -3, 3);
            s += (long)(yr[j] * 0x1p10f) * (long)dyr[j];
        }
        if (masked || s != 0)
            continue;
        /* s = 0 would hide a kernel that drops it: move one dy of a nonzero
         * y by one, toward 0 where it is at the end of the range. */
        for (size_t j = 0; j < cols; j++)
            if (yr[j] != 0.0f) {
                dyr[j] += dyr[j] == 3.0f ? -1.0f : 1.0f;
                break;
            }
    }
    return 0;
}

/* ---- The driver's host side. */

int back_fill_takes(enum fill_kind fill)
{
    return (BACK_FILLS >> fill) & 1u;
}

/* back_fill, and with bf16 != 0 back_fill_bf16: x and dy rounded to
 * bfloat16 before the saved statistics are taken from x. */
static int ln_fill(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, int bf16,
                   float *x, float *dy, float *gamma, float *mean, float *rstd)
{
    if (!back_fill_takes(fill))
        return -1;
    if (fill == FILL_EXACT)
        return exact_fill(rows, cols, seed, bf16, x, dy, gamma, mean, rstd);
    /* Three seeds, three different streams: x, dy and gamma are unrelated. */
    fill_rows(x, rows, cols, fill, seed, 0);
    fill_rows(dy, rows, cols, fill == FILL_TINY ? FILL_TINY : FILL_RANDOM, seed + 1, 0);
    fill_input(gamma, cols, FILL_RANDOM, seed + 2, 0);
    if (bf16) {
        back_round_bf16(x, rows * cols);
        back_round_bf16(dy, rows * cols);
    }
    /* The forward pass's saved statistics, as its reference computes them:
     * the mean, then the variance about it (two passes), in double. */
    #pragma omp parallel for schedule(static) if (rows * cols > ((size_t)1 << 20))
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double s = 0.0, q = 0.0;
        for (size_t j = 0; j < cols; j++)
            s += xr[j];
        double m = s / (double)cols;
        for (size_t j = 0; j < cols; j++)
            q += ((double)xr[j] - m) * ((double)xr[j] - m);
        mean[r] = (float)m;
        rstd[r] = (float)(1.0 / sqrt(q / (double)cols + BACK_EPS));
    }
    return 0;
}

int back_fill(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, float *x, float *dy,
              float *gamma, float *mean, float *rstd)
{
    return ln_fill(rows, cols, fill, seed, 0, x, dy, gamma, mean, rstd);
}

int back_fill_bf16(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, float *x,
                   float *dy, float *gamma, float *mean, float *rstd)
{
    return ln_fill(rows, cols, fill, seed, 1, x, dy, gamma, mean, rstd);
}

int softmax_back_fill(size_t rows, size_t cols, enum fill_kind fill, uint64_t seed, float *y,
                      float *dy)
{
    if (!back_fill_takes(fill))
        return -1;
    if (fill == FILL_EXACT)
        return softmax_back_exact_fits(rows, cols) ?
               softmax_backward_exact_fill(rows, cols, seed, y, dy) : -1;
    fill_rows(y, rows, cols, FILL_RANDOM, seed, 0);   /* the logits, overwritten by y below */
    fill_rows(dy, rows, cols, fill, seed + 1, 0);
    #pragma omp parallel for schedule(static) if (rows * cols > ((size_t)1 << 20))
    for (size_t r = 0; r < rows; r++) {
        float *yr = y + r * cols;
        int all = r % 16 == 15;
        double max = -HUGE_VAL, sum = 0.0;
        for (size_t j = 0; j < cols; j++) {
            int masked = all || splitmix64((seed + 2) * 0x100000001b3ull + r * cols + j) % 8 == 0;
            yr[j] = masked ? -INFINITY : 4.0f * yr[j];
            max = yr[j] > max ? yr[j] : max;
        }
        for (size_t j = 0; j < cols; j++)
            sum += yr[j] == -INFINITY ? 0.0 : exp((double)yr[j] - max);
        for (size_t j = 0; j < cols; j++)
            yr[j] = yr[j] == -INFINITY ? 0.0f : (float)(exp((double)yr[j] - max) / sum);
    }
    return 0;
}

/* One output against its reference: counted bad, kept as the first bad one,
 * or kept as the worst so far while none is bad. */
static void verdict_add(struct back_verdict *v, const char *what, size_t row, size_t col,
                        float got, double want, double tol)
{
    double err = fabs((double)got - want);
    int good = isfinite(got) && err <= tol;
    double ratio = err == 0.0 ? 0.0 : (tol > 0.0 && isfinite(got) ? err / tol : HUGE_VAL);
    if (!good) {
        if (v->bad++ > 0)
            return;
    } else if (v->bad > 0 || ratio <= v->ratio) {
        return;
    }
    v->what = what;
    v->row = row;
    v->col = col;
    v->got = got;
    v->want = want;
    v->tol = tol;
    v->ratio = ratio;
}

/* dx's want and tolerance in bfloat16 (back_ref.h): on the exact fill the
 * bfloat16 roundings of the floats within tol of want, one value (tol 0)
 * unless that interval holds a midpoint between two; elsewhere the float
 * bound plus the output's rounding. Rounding is monotone, and a float
 * within tol of want is within the float roundings of want -+ tol. */
static void bf16_dx_bounds(int exact, double *want, double *tol)
{
    if (!exact) {
        *tol = bf16_output_tol(*tol, *want);
        return;
    }
    double lo = bf16_to_float(bf16_from_float((float)(*want - *tol)));
    double hi = bf16_to_float(bf16_from_float((float)(*want + *tol)));
    *want = lo == hi ? lo : 0.5 * (lo + hi);
    *tol = 0.5 * (hi - lo);
}

/* back_check and back_check_bf16: bf16 != 0 holds dx to bf16_dx_bounds. */
static int ln_check(size_t rows, size_t cols, int exact, int bf16, const float *x,
                    const float *dy, const float *gamma, const float *mean, const float *rstd,
                    const float *dx, const float *dgamma, const float *dbeta,
                    struct back_verdict *v)
{
    double *ref = malloc(cols * sizeof *ref), *tol = malloc(cols * sizeof *tol);
    double *dg = calloc(cols, sizeof *dg), *dg_mag = calloc(cols, sizeof *dg_mag);
    double *dg_amag = calloc(cols, sizeof *dg_amag), *db = calloc(cols, sizeof *db);
    double *db_mag = calloc(cols, sizeof *db_mag);
    int rc = -1;
    if (ref == NULL || tol == NULL || dg == NULL || dg_mag == NULL || dg_amag == NULL ||
        db == NULL || db_mag == NULL)
        goto out;
    v->bad = 0;
    v->what = "dx";
    v->row = v->col = 0;
    v->got = v->want = v->tol = 0.0;
    v->ratio = -1.0;   /* below any output's: the first one is kept */
    v->params_exact = exact;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols, *dxr = dx + r * cols;
        if (exact)
            ln_backward_exact_ref(xr, dyr, gamma, mean[r], rstd[r], cols, ref, tol);
        else
            ln_backward_row_ref(xr, dyr, gamma, mean[r], rstd[r], cols, ref, tol);
        for (size_t j = 0; j < cols; j++) {
            double want = ref[j], t = tol[j];
            if (bf16)
                bf16_dx_bounds(exact, &want, &t);
            verdict_add(v, "dx", r, j, dxr[j], want, t);
        }
        ln_param_grads_add(xr, dyr, mean[r], rstd[r], cols, dg, dg_mag, dg_amag, db, db_mag);
    }
    for (size_t j = 0; j < cols; j++) {
        verdict_add(v, "dgamma", 0, j, dgamma[j], dg[j],
                    exact ? 0.0 : ln_dgamma_tol(rows, dg_mag[j], dg_amag[j]));
        verdict_add(v, "dbeta", 0, j, dbeta[j], db[j], exact ? 0.0 : ln_dbeta_tol(rows, db_mag[j]));
    }
    rc = 0;
out:
    free(ref), free(tol), free(dg), free(dg_mag), free(dg_amag), free(db), free(db_mag);
    return rc;
}

int back_check(size_t rows, size_t cols, int exact, const float *x, const float *dy,
               const float *gamma, const float *mean, const float *rstd, const float *dx,
               const float *dgamma, const float *dbeta, struct back_verdict *v)
{
    return ln_check(rows, cols, exact, 0, x, dy, gamma, mean, rstd, dx, dgamma, dbeta, v);
}

int back_check_bf16(size_t rows, size_t cols, int exact, const float *x, const float *dy,
                    const float *gamma, const float *mean, const float *rstd, const float *dx,
                    const float *dgamma, const float *dbeta, struct back_verdict *v)
{
    return ln_check(rows, cols, exact, 1, x, dy, gamma, mean, rstd, dx, dgamma, dbeta, v);
}

/* softmax_back_check and softmax_back_check_bf16: bf16 != 0 holds dx to
 * the bfloat16 rounding of the reference (back_ref.h). */
static int softmax_check(size_t rows, size_t cols, int exact, int bf16, const float *y,
                         const float *dy, const float *dx, struct back_verdict *v)
{
    double *ref = malloc(cols * sizeof *ref), *tol = malloc(cols * sizeof *tol);
    if (ref == NULL || tol == NULL) {
        free(ref), free(tol);
        return -1;
    }
    v->bad = 0;
    v->what = "dx";
    v->row = v->col = 0;
    v->got = v->want = v->tol = 0.0;
    v->ratio = -1.0;   /* below any output's: the first one is kept */
    v->params_exact = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols, *dxr = dx + r * cols;
        softmax_backward_row_ref(yr, dyr, cols, ref, tol);
        for (size_t j = 0; j < cols; j++) {
            double want = ref[j], t = exact ? 0.0 : tol[j];
            if (bf16 && exact)
                want = bf16_to_float(bf16_from_float((float)want));   /* exact in float */
            else if (bf16 && t > 0.0)
                t = bf16_output_tol(t, want);
            verdict_add(v, "dx", r, j, dxr[j], want, t);
        }
    }
    free(ref), free(tol);
    return 0;
}

int softmax_back_check(size_t rows, size_t cols, int exact, const float *y, const float *dy,
                       const float *dx, struct back_verdict *v)
{
    return softmax_check(rows, cols, exact, 0, y, dy, dx, v);
}

int softmax_back_check_bf16(size_t rows, size_t cols, int exact, const float *y,
                            const float *dy, const float *dx, struct back_verdict *v)
{
    return softmax_check(rows, cols, exact, 1, y, dy, dx, v);
}

void back_round_bf16(float *v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        v[k] = bf16_to_float(bf16_from_float(v[k]));
}

double back_bf16_bytes(size_t rows, size_t cols)
{
    double elems = (double)rows * (double)cols;
    return 2.0 * 3.0 * elems + 4.0 * (3.0 * (double)cols + 2.0 * (double)rows);
}

double softmax_back_bf16_bytes(size_t rows, size_t cols)
{
    return 6.0 * (double)rows * (double)cols;
}

long long back_first_difference(const float *a, const float *b, size_t n)
{
    if (memcmp(a, b, n * sizeof *a) == 0)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (memcmp(&a[k], &b[k], sizeof *a) != 0)
            return (long long)k;
    return -1;
}

double back_bytes(size_t rows, size_t cols)
{
    double elems = (double)rows * (double)cols;
    return 4.0 * (3.0 * elems + 3.0 * (double)cols + 2.0 * (double)rows);
}

double softmax_back_bytes(size_t rows, size_t cols)
{
    return 12.0 * (double)rows * (double)cols;
}

double back_copy3_bytes(size_t rows, size_t cols)
{
    return 12.0 * (double)rows * (double)cols;
}

/* x + dy as the bar stores it: rounded to float, and then (bf16) once more
 * to bfloat16, as the bfloat16 bar adds in float and rounds once. */
static float copy3_want(float x, float dy, int bf16)
{
    float sum = x + dy;
    return bf16 ? bf16_to_float(bf16_from_float(sum)) : sum;
}

static void copy3_check(size_t rows, size_t cols, int bf16, const float *x, const float *dy,
                        const float *dx, struct back_verdict *v)
{
    size_t n = rows * cols, at = 0;
    memset(v, 0, sizeof *v);
    v->what = "dx";
    for (size_t k = 0; k < n; k++) {
        float want = copy3_want(x[k], dy[k], bf16);
        if (memcmp(&want, &dx[k], sizeof want) != 0 && v->bad++ == 0)
            at = k;
    }
    float want = copy3_want(x[at], dy[at], bf16);
    v->row = at / cols;
    v->col = at % cols;
    v->got = dx[at];
    v->want = want;
    v->tol = 0.0;
    v->ratio = v->bad > 0 ? HUGE_VAL : 0.0;
}

void back_copy3_check(size_t rows, size_t cols, const float *x, const float *dy,
                      const float *dx, struct back_verdict *v)
{
    copy3_check(rows, cols, 0, x, dy, dx, v);
}

void back_copy3_check_bf16(size_t rows, size_t cols, const float *y, const float *dy,
                           const float *dx, struct back_verdict *v)
{
    copy3_check(rows, cols, 1, y, dy, dx, v);
}

struct program back_program_of(int softmax)
{
    struct program p = {
        .kind = PROGRAM_ROWS, .op = softmax ? BACK_SOFTMAX_NAME : BACK_OP_NAME,
        .elems = "floats", .pack = 4, .masks = 0, .gamma = !softmax, .beta = 0,
        .checks = ROW_CHECK_SHIFTED_TINY,
        .fills = BACK_FILLS,
    };
    return p;
}

struct program back_program_bf16(int softmax)
{
    struct program p = back_program_of(softmax);
    p.op = softmax ? BACK_SOFTMAX_BF16_NAME : BACK_COPY3_BF16_NAME;
    p.elems = "bfloat16s";
    p.pack = 8;
    return p;
}

struct program back_program_ln_bf16(void)
{
    struct program p = back_program_bf16(0);
    p.op = BACK_LAYERNORM_BF16_NAME;
    return p;
}

int softmax_back_exact_fits(size_t rows, size_t cols)
{
    return rows >= 1 && cols >= 1 && cols <= EXACT_FILL_MAX;
}

int back_exact_fits(size_t rows, size_t cols)
{
    return rows >= 1 && cols >= 1 && rows <= EXACT_FILL_MAX && cols <= EXACT_FILL_MAX &&
           26.0 * (double)rows + 10.0 * (double)cols < 0x1p24;
}

int back_options_check(int softmax, const struct options *o, char *err, size_t len)
{
    if (o->check_every != 1) {
        snprintf(err, len, "--check-every is part 2's: part 3 checks every row");
        return -1;
    }
    /* The parser allows a bfloat16 program's pack (0..7) for every array,
     * but gamma, dgamma and dbeta stay floats: their guards hold 0..3. */
    if (o->gamma_offset > REDUCE_MAX_OFFSET) {
        snprintf(err, len, "--gamma-offset %d: gamma, dgamma and dbeta are floats: 0..%d past a "
                           "16-byte boundary", o->gamma_offset, REDUCE_MAX_OFFSET);
        return -1;
    }
    if (softmax && o->fill == FILL_EXACT && !softmax_back_exact_fits(o->rows, o->cols)) {
        snprintf(err, len, "--fill exact keeps softmax's sums exact only up to 2^20 columns: "
                           "--cols %zu is past it; use another fill", o->cols);
        return -1;
    }
    if (!softmax && o->fill == FILL_EXACT && !back_exact_fits(o->rows, o->cols)) {
        snprintf(err, len, "--fill exact keeps every sum exact only while 26 x rows + 10 x cols < "
                           "2^24 (each at most 2^20): --rows %zu --cols %zu is past it; use "
                           "another fill", o->rows, o->cols);
        return -1;
    }
    return 0;
}
