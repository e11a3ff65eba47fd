/* rows_ref.c: part 2's CPU references and tolerances (rows_ref.h). */
#include "rows_ref.h"

#include "harness.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A float program does not define step_dtype: this weak definition stands
 * in, and a program's own (strong) one replaces it at link time, as
 * row_workspace()'s does in rows_driver.c. It lives here, not in the driver
 * that reads it: gcc 12 folds a weak const's value into code in its own file. */
__attribute__((weak)) const enum row_dtype step_dtype = ROW_F32;

/* g(k) = k u / (1 - k u): the relative error bound of k roundings. */
static double gamma_k(double k)
{
    double ku = k * UNIT_ROUNDOFF;
    return ku / (1.0 - ku);
}

uint16_t bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);   /* a NaN: keep it one, quiet */
    /* Add just under half of the low 16 bits' range, plus 1 when the kept
     * part is odd: a tie then carries into the kept bits only from an odd
     * value, to the even neighbour. A carry out of the mantissa bumps the
     * exponent, as rounding up should (up to Inf). */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double bf16_output_tol(double tol, double y)
{
    return tol * (1.0 + BF16_ROUNDOFF) + BF16_ROUNDOFF * fabs(y);
}

void fill_affine(float *gamma, float *beta, size_t cols, unsigned long long seed)
{
    uint64_t base = splitmix64(splitmix64(seed) ^ 0x5eedaff1e5ull);
    for (size_t c = 0; c < cols; c++) {
        uint64_t h = splitmix64(base + c);
        gamma[c] = 1.0f + ((float)(h >> 40) * 0x1p-24f - 0.5f);
        beta[c] = (float)((h >> 16) & 0xffffff) * 0x1p-24f - 0.5f;
    }
}

void fill_levels(float *x, size_t n, unsigned long long seed)
{
    uint64_t base = splitmix64(splitmix64(seed) ^ 0x1e7e15ull);
    #pragma omp parallel for schedule(static) if (n > ((size_t)1 << 20))
    for (size_t i = 0; i < n; i++)
        x[i] = (splitmix64(base + i) >> 63) ? 0.0f : LEVELS_LOW;
}

double centered_value(size_t cols)
{
    double c = 128.0;
    while (c > 1.0 && c * (double)cols >= EXACT_SUM_LIMIT)
        c /= 2.0;
    return c;
}

void fill_centered(float *x, size_t rows, size_t cols, unsigned long long seed)
{
    float center = (float)centered_value(cols);
    uint64_t base = splitmix64(splitmix64(seed) ^ 0xce47e5ull);
    #pragma omp parallel for schedule(static) if (rows * cols > ((size_t)1 << 20))
    for (size_t r = 0; r < rows; r++) {
        float *xr = x + r * cols;
        for (size_t c = 0; c + 1 < cols; c += 2) {
            float d = (float)((int)(splitmix64(base + r * cols + c) % 3) - 1);
            xr[c] = center + d;
            xr[c + 1] = center - d;
        }
        if (cols % 2)
            xr[cols - 1] = center;
    }
}

/* Row r of a mask (mixed picks one of the four by r mod 4), p its parameter. */
static void mask_row(float *x, size_t cols, enum row_mask mask, size_t p, uint64_t h)
{
    switch (mask) {
    case MASK_CAUSAL:
        for (size_t c = p % cols + 1; c < cols; c++)
            x[c] = -INFINITY;
        break;
    case MASK_PADDED:
        if (p % 2 == 0)
            for (size_t c = 0; c < cols; c++)
                x[c] = -INFINITY;
        break;
    case MASK_ENDS: {
        size_t ends = 1 + p % 8;
        for (size_t c = 0; c < cols; c++)
            if (c < ends || c + ends >= cols)
                x[c] = -INFINITY;
        break;
    }
    case MASK_TOPK: {
        /* Each value kept with probability k / cols: about k kept, at places
         * that depend on the seed only. */
        double keep = (double)(1 + p % 64) / (double)cols;
        for (size_t c = 0; c < cols; c++)
            if ((double)(splitmix64(h + c) >> 11) * 0x1p-53 >= keep)
                x[c] = -INFINITY;
        break;
    }
    default:
        break;
    }
}

void mask_rows(float *x, size_t rows, size_t cols, enum row_mask mask, unsigned long long seed)
{
    static const enum row_mask turn[4] = {MASK_CAUSAL, MASK_PADDED, MASK_ENDS, MASK_TOPK};
    if (mask == MASK_NONE)
        return;
    uint64_t base = splitmix64(splitmix64(seed) ^ 0x3a5cull);
    #pragma omp parallel for schedule(static) if (rows * cols > ((size_t)1 << 20))
    for (size_t r = 0; r < rows; r++) {
        enum row_mask m = mask == MASK_MIXED ? turn[r % 4] : mask;
        size_t p = mask == MASK_MIXED ? r / 4 : r;
        mask_row(x + r * cols, cols, m, p, splitmix64(base + r) * cols);
    }
}

void fill_row_input(float *x, size_t rows, size_t cols, enum fill_kind fill, enum row_fill own,
                    enum row_mask mask, unsigned long long seed, size_t one)
{
    if (own == ROW_FILL_LEVELS)
        fill_levels(x, rows * cols, seed);
    else if (own == ROW_FILL_CENTERED)
        fill_centered(x, rows, cols, seed);
    else
        fill_rows(x, rows, cols, fill, seed, one);
    mask_rows(x, rows, cols, mask, seed);
}

void row_stats(const float *x, size_t cols, struct row_stats *s)
{
    double sum = 0.0, sum_abs = 0.0, sum_sq = 0.0, max = -HUGE_VAL;
    int integers = 1;
    for (size_t c = 0; c < cols; c++) {
        sum += x[c];
        sum_abs += fabs(x[c]);
        sum_sq += (double)x[c] * x[c];
        max = fmax(max, x[c]);
        integers &= x[c] == truncf(x[c]);
    }
    double mean = sum / (double)cols, var = 0.0;
    for (size_t c = 0; c < cols; c++)
        var += (x[c] - mean) * (x[c] - mean);
    s->sum = sum;
    s->sum_abs = sum_abs;
    s->mean = mean;
    s->var = var / (double)cols;
    s->max = max;
    s->ms = sum_sq / (double)cols;
    s->exact = integers && sum_abs < EXACT_SUM_LIMIT;
    s->exact_sq = integers && sum_sq < EXACT_SUM_LIMIT;
    s->exact_var = s->exact && mean == floor(mean) && var < EXACT_SUM_LIMIT;
}

void layernorm_bounds(const struct row_stats *s, size_t cols, double eps, struct ln_bounds *b)
{
    const double u = UNIT_ROUNDOFF;
    double n = (double)cols;
    double dm = s->exact ? gamma_k(2.0) * fabs(s->mean) : gamma_k(n + 1.0) * (s->sum_abs / n);
    double v = s->var + eps;
    double rho_v = (gamma_k(n + 2.0) * s->var + (1.0 + gamma_k(n + 2.0)) * dm * dm) / v + 2.0 * u;
    double rho_r = rho_v / 2.0 + (2.0 * MATH_ULPS + 1.0) * u + rho_v * rho_v;
    b->mean = s->mean;
    b->rstd = 1.0 / sqrt(v);
    b->mean_tol = dm;
    b->rstd_tol = rho_r * b->rstd;
    b->dm = dm;
    b->rho_r = rho_r;
}

int layernorm_exact_variance(const struct row_stats *s, double kernel_mean, struct ln_bounds *b)
{
    if (!s->exact_var || kernel_mean != s->mean)
        return 0;
    const double u = UNIT_ROUNDOFF;
    double rho_v = 3.0 * u;
    b->rho_r = rho_v / 2.0 + (2.0 * MATH_ULPS + 1.0) * u + rho_v * rho_v;
    b->rstd_tol = b->rho_r * b->rstd;
    b->dm = 0.0;
    return 1;
}

double layernorm_y_tol(const struct ln_bounds *b, double x, double gamma, double beta, double y)
{
    const double u = UNIT_ROUNDOFF;
    double d = fabs(x - b->mean);
    return fabs(gamma) * b->rstd * (d * (b->rho_r + 3.0 * u) + b->dm * (1.0 + b->rho_r + 3.0 * u)) +
           u * (fabs(beta) + fabs(y));
}

void rmsnorm_bounds(const struct row_stats *s, size_t cols, double eps, struct rms_bounds *b)
{
    const double u = UNIT_ROUNDOFF;
    double v = s->ms + eps;
    double rho_s = s->exact_sq ? 3.0 * u : gamma_k((double)cols + 1.0) * s->ms / v + 2.0 * u;
    b->rho_r = rho_s / 2.0 + (2.0 * MATH_ULPS + 1.0) * u + rho_s * rho_s;
    b->rstd = 1.0 / sqrt(v);
    b->rstd_tol = b->rho_r * b->rstd;
}

double rmsnorm_y_tol(const struct rms_bounds *b, double y)
{
    return fabs(y) * (b->rho_r + 3.0 * UNIT_ROUNDOFF);
}

void softmax_stats(const float *x, size_t cols, struct softmax_stats *s)
{
    double max = -HUGE_VAL, sum = 0.0, spread = 0.0;
    for (size_t c = 0; c < cols; c++)
        max = fmax(max, x[c]);
    int exact = 1;
    if (max != -HUGE_VAL) {
        for (size_t c = 0; c < cols; c++) {
            double d = max - x[c];   /* inf for a masked value: exp(-inf) = 0 */
            sum += exp(-d);
            spread += exp(-d) * (isinf(d) ? 0.0 : d);
            exact &= d == 0.0 || d >= SOFTMAX_UNDERFLOW;
        }
        spread /= sum;
    }
    s->max = max;
    s->sum = sum;
    s->spread = spread;
    s->exact = exact;
}

/* Outputs this small are zero as far as float is concerned. */
#define SOFTMAX_FLOOR 1e-38

double softmax_tol(const struct softmax_stats *s, double x, double want, size_t cols)
{
    if (x == -HUGE_VAL || s->max == -HUGE_VAL)
        return 0.0;   /* masked: exactly 0 */
    if (s->exact)
        return SOFTMAX_EXACT_ULPS * UNIT_ROUNDOFF * want + SOFTMAX_FLOOR;
    double rel = UNIT_ROUNDOFF * (fabs(x - s->max) + 2.0 * s->spread + 8.0) +
                 gamma_k(4.0 * (double)cols);
    return rel * want + SOFTMAX_FLOOR;
}

static void consider(struct row_verdict *v, const char *what, size_t row, size_t col,
                     double got, double want, double tol)
{
    double err = fabs(got - want);
    double ratio;
    if (!isfinite(got))
        ratio = HUGE_VAL;
    else if (tol == 0.0)
        ratio = err == 0.0 ? 0.0 : HUGE_VAL;
    else
        ratio = err / tol;
    if (tol != 0.0)
        v->exact = 0;
    if (ratio > 1.0)
        v->bad++;
    /* The worst one; on a tie the first seen (rows and columns come in
     * order within a thread, and merge() breaks ties between threads by row). */
    if (v->what == NULL || ratio > v->ratio) {
        v->row = row;
        v->col = col;
        v->what = what;
        v->got = got;
        v->want = want;
        v->tol = tol;
        v->ratio = ratio;
    }
}

static void merge(struct row_verdict *into, const struct row_verdict *part)
{
    into->bad += part->bad;
    into->exact = into->exact && part->exact;
    if (part->what == NULL)
        return;
    int worse = into->what == NULL || part->ratio > into->ratio ||
                (part->ratio == into->ratio &&
                 (part->row < into->row || (part->row == into->row && part->col < into->col)));
    if (worse) {
        size_t bad = into->bad;
        int exact = into->exact;
        *into = *part;
        into->bad = bad;
        into->exact = exact;
    }
}

double fresh_row_step(const float *row, size_t cols, size_t c, enum row_op op)
{
    int e = 0;
    frexp(fmax(fabs((double)row[c]), 0.5), &e);   /* |x_c| < 2^e */
    double step = ldexp(1.0, e + 1);
    if (op != ROW_SUM)
        return step;
    struct row_stats s;
    row_stats(row, cols, &s);
    for (int k = 0; k < 64; k++) {   /* a vacuous tolerance (TOLERANCE_K_MAX) stops here */
        double sum_abs = s.sum_abs + step;   /* at most, once x_c moved by step */
        struct reference ref = {s.sum, sum_abs, s.exact && sum_abs < EXACT_SUM_LIMIT};
        if (step > 4.0 * tolerance(cols, ref))
            break;
        step *= 2.0;
    }
    return step;
}

static void check_row(enum row_op op, enum row_dtype dtype, const float *xr, size_t r, size_t cols, const float *gamma,
                      const float *beta, double eps, const float *y, const float *mean,
                      const float *rstd, struct row_verdict *v)
{
    struct row_stats s;
    if (op == ROW_ADD_RMSNORM)   /* checked as the RMSNorm of h, the sum as stored */
        op = ROW_RMSNORM;
    if (op == ROW_SUM || op == ROW_LAYERNORM || op == ROW_RMSNORM)
        row_stats(xr, cols, &s);
    const float *yr = y + r * cols;
    int bf16 = dtype == ROW_BF16;
    switch (op) {
    case ROW_SUM: {
        struct reference ref = {s.sum, s.sum_abs, s.exact};
        consider(v, "sum", r, 0, y[r], s.sum, tolerance(cols, ref));
        break;
    }
    case ROW_LAYERNORM: {
        struct ln_bounds b;
        layernorm_bounds(&s, cols, eps, &b);
        layernorm_exact_variance(&s, mean[r], &b);
        consider(v, "mean", r, 0, mean[r], b.mean, b.mean_tol);
        consider(v, "rstd", r, 0, rstd[r], b.rstd, b.rstd_tol);
        for (size_t c = 0; c < cols; c++) {
            double want = (xr[c] - b.mean) * b.rstd * gamma[c] + beta[c];
            double tol = layernorm_y_tol(&b, xr[c], gamma[c], beta[c], want);
            consider(v, "y", r, c, yr[c], want, bf16 ? bf16_output_tol(tol, want) : tol);
        }
        break;
    }
    case ROW_ADD_RMSNORM:
    case ROW_RMSNORM: {
        struct rms_bounds b;
        rmsnorm_bounds(&s, cols, eps, &b);
        consider(v, "rstd", r, 0, rstd[r], b.rstd, b.rstd_tol);
        for (size_t c = 0; c < cols; c++) {
            double want = xr[c] * b.rstd * gamma[c];
            double tol = rmsnorm_y_tol(&b, want);
            consider(v, "y", r, c, yr[c], want, bf16 ? bf16_output_tol(tol, want) : tol);
        }
        break;
    }
    case ROW_SOFTMAX: {
        struct softmax_stats sm;
        softmax_stats(xr, cols, &sm);
        for (size_t c = 0; c < cols; c++) {
            /* A masked value, or a fully masked row: 0, the safe softmax's answer. */
            double want = sm.max == -HUGE_VAL ? 0.0 : exp(xr[c] - sm.max) / sm.sum;
            double tol = softmax_tol(&sm, xr[c], want, cols);
            consider(v, "y", r, c, yr[c], want, bf16 && tol > 0.0 ? bf16_output_tol(tol, want) : tol);
        }
        break;
    }
    case ROW_COPY:
        for (size_t c = 0; c < cols; c++)
            consider(v, "y", r, c, yr[c], xr[c], 0.0);
        break;
    }
}

void check_rows(enum row_op op, enum row_dtype dtype, const float *x, size_t rows, size_t cols,
                const float *gamma, const float *beta, double eps, const float *y,
                const float *mean, const float *rstd, struct row_verdict *v)
{
    check_rows_every(op, dtype, x, rows, cols, gamma, beta, eps, y, mean, rstd, 1, v);
}

void check_rows_every(enum row_op op, enum row_dtype dtype, const float *x, size_t rows,
                      size_t cols, const float *gamma, const float *beta, double eps,
                      const float *y, const float *mean, const float *rstd, size_t every,
                      struct row_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->exact = 1;
    #pragma omp parallel
    {
        struct row_verdict part;
        memset(&part, 0, sizeof part);
        part.exact = 1;
        #pragma omp for schedule(static)
        for (size_t r = 0; r < rows; r++)
            if (r % every == 0 || r + every >= rows)
                check_row(op, dtype, x + r * cols, r, cols, gamma, beta, eps, y, mean, rstd,
                          &part);
        #pragma omp critical
        merge(v, &part);
    }
}

double row_bytes(enum row_op op, enum row_dtype dtype, size_t rows, size_t cols)
{
    double elem = dtype == ROW_BF16 ? 2.0 : 4.0;   /* x, y, gamma, beta */
    double matrix = elem * (double)rows * (double)cols;
    switch (op) {
    case ROW_SUM: return matrix + elem * (double)rows;
    case ROW_LAYERNORM: return 2.0 * matrix + 8.0 * (double)rows + 2.0 * elem * (double)cols;
    case ROW_SOFTMAX: return 2.0 * matrix;
    case ROW_COPY: return 2.0 * matrix;
    case ROW_RMSNORM: return 2.0 * matrix + 4.0 * (double)rows + elem * (double)cols;
    case ROW_ADD_RMSNORM:   /* x and residual read, h and y written */
        return 4.0 * matrix + 4.0 * (double)rows + elem * (double)cols;
    }
    return matrix;
}

const char *row_op_name(enum row_op op)
{
    switch (op) {
    case ROW_SUM: return "sum";
    case ROW_LAYERNORM: return "layernorm";
    case ROW_SOFTMAX: return "softmax";
    case ROW_COPY: return "copy";
    case ROW_RMSNORM: return "rmsnorm";
    case ROW_ADD_RMSNORM: return "add_rmsnorm";
    }
    return "?";
}

struct program row_program_of(enum row_op op, enum row_dtype dtype)
{
    struct program p = {
        .kind = PROGRAM_ROWS, .op = row_op_name(op),
        .elems = dtype == ROW_BF16 ? "bfloat16s" : "floats", .pack = row_pack_elements(dtype),
        .masks = op == ROW_SOFTMAX,
        .gamma = op == ROW_LAYERNORM || op == ROW_RMSNORM || op == ROW_ADD_RMSNORM,
        .beta = op == ROW_LAYERNORM,
    };
    /* A mean and a variance (LayerNorm), or a max and exponentials
     * (softmax), go wrong on a large offset or on tiny values; LayerNorm's
     * variance on a mean it must get exactly; softmax on masked rows. */
    if (op == ROW_LAYERNORM)
        p.checks = ROW_CHECK_SHIFTED_TINY | ROW_CHECK_CENTERED;
    else if (op == ROW_RMSNORM || op == ROW_ADD_RMSNORM)   /* tiny: eps outweighs mean(x^2) there */
        p.checks = ROW_CHECK_SHIFTED_TINY;
    else if (op == ROW_SOFTMAX)
        p.checks = ROW_CHECK_SHIFTED_TINY | ROW_CHECK_LEVELS_MASKED;
    return p;
}

const char *row_kind_name(enum row_op op, enum row_dtype dtype)
{
    if (dtype != ROW_BF16)
        return row_op_name(op);
    switch (op) {
    case ROW_SUM: return "sum_bf16";
    case ROW_LAYERNORM: return "layernorm_bf16";
    case ROW_SOFTMAX: return "softmax_bf16";
    case ROW_COPY: return "copy_bf16";
    case ROW_RMSNORM: return "rmsnorm_bf16";
    case ROW_ADD_RMSNORM: return "add_rmsnorm_bf16";
    }
    return "?";
}
