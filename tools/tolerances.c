/* tolerances.c: how wide part 2's checks are (make tolerances). For one row
 * of each fill at each width, the tolerance the grader holds each output to
 * (common/rows_ref.c), relative to what it bounds:
 *   sum        tol / sum|x|
 *   layernorm  mean: tol / the row's standard deviation; rstd: tol / rstd;
 *              y: the median and largest tol / |y|
 *   softmax    y: the median and largest tol / y over the unmasked outputs
 *              (a masked output's tolerance is 0; "causal" is row 0's mask:
 *              one value kept)
 * A bound that grows with the width should do so only where the arithmetic
 * accumulates rounding: the sums of the exact, levels and centered fills do
 * not (while sum|x| < 2^24), and LayerNorm's variance on the centered fill
 * does not either (taking the kernel's mean to be the exact one, as a
 * kernel that divides the row's exact sum by cols gets it).
 * Usage: tolerances [COLS ...] (default 1024 1048576). No GPU needed. */
#include "harness.h"
#include "rows_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median and the largest of count values (sorted in place). */
static void spread_of(double *v, size_t count, double *median, double *largest)
{
    if (count == 0) {
        *median = *largest = NAN;
        return;
    }
    qsort(v, count, sizeof *v, by_value);
    *median = v[count / 2];
    *largest = v[count - 1];
}

struct fill {
    const char *name;
    enum fill_kind kind;
    enum row_fill own;
    enum row_mask mask;
};

static void row_of(const struct fill *f, float *x, size_t cols)
{
    fill_row_input(x, 1, cols, f->kind, f->own, f->mask, 1, 0);
}

int main(int argc, char **argv)
{
    size_t widths[16] = {1024, (size_t)1 << 20};
    int count = 2;
    if (argc > 1) {
        count = 0;
        for (int k = 1; k < argc && count < 16; k++)
            if (parse_size(argv[k], &widths[count++]) != 0 || widths[count - 1] == 0 ||
                widths[count - 1] > ROWS_MAX_COLS) {
                fprintf(stderr, "error: '%s' is not a width from 1 to 2^20\n", argv[k]);
                return 2;
            }
    }
    static const struct fill fills[] = {
        {"random", FILL_RANDOM, ROW_FILL_SHARED, MASK_NONE},
        {"positive", FILL_POSITIVE, ROW_FILL_SHARED, MASK_NONE},
        {"wide", FILL_WIDE, ROW_FILL_SHARED, MASK_NONE},
        {"exact", FILL_EXACT, ROW_FILL_SHARED, MASK_NONE},
        {"shifted", FILL_SHIFTED, ROW_FILL_SHARED, MASK_NONE},
        {"tiny", FILL_TINY, ROW_FILL_SHARED, MASK_NONE},
        {"levels", FILL_RANDOM, ROW_FILL_LEVELS, MASK_NONE},
        {"centered", FILL_RANDOM, ROW_FILL_CENTERED, MASK_NONE},
    };
    static const struct fill masked[] = {
        {"random/ends", FILL_RANDOM, ROW_FILL_SHARED, MASK_ENDS},
        {"levels/causal", FILL_RANDOM, ROW_FILL_LEVELS, MASK_CAUSAL},
    };
    size_t nf = sizeof fills / sizeof fills[0];
    printf("%-10s %-14s %8s  %-44s\n", "op", "fill", "cols", "tolerance, relative (see tools/tolerances.c)");
    for (int w = 0; w < count; w++) {
        size_t cols = widths[w];
        float *x = malloc(cols * sizeof *x), *g = malloc(cols * sizeof *g), *b = malloc(cols * sizeof *b);
        double *rel = malloc(cols * sizeof *rel);
        fill_affine(g, b, cols, 1);
        for (size_t k = 0; k < nf; k++) {
            row_of(&fills[k], x, cols);
            struct row_stats s;
            row_stats(x, cols, &s);
            struct reference ref = {s.sum, s.sum_abs, s.exact};
            printf("%-10s %-14s %8zu  %.3g\n", "sum", fills[k].name, cols,
                   s.sum_abs > 0 ? tolerance(cols, ref) / s.sum_abs : 0.0);
        }
        for (size_t k = 0; k < nf; k++) {
            row_of(&fills[k], x, cols);
            struct row_stats s;
            row_stats(x, cols, &s);
            struct ln_bounds lb;
            layernorm_bounds(&s, cols, LN_EPS, &lb);
            layernorm_exact_variance(&s, s.mean, &lb);   /* a kernel whose mean is exact */
            size_t m = 0;
            for (size_t c = 0; c < cols; c++) {
                double y = (x[c] - lb.mean) * lb.rstd * g[c] + b[c];
                if (fabs(y) > 1e-3)
                    rel[m++] = layernorm_y_tol(&lb, x[c], g[c], b[c], y) / fabs(y);
            }
            double median, largest;
            spread_of(rel, m, &median, &largest);
            printf("%-10s %-14s %8zu  mean %.3g  rstd %.3g  y %.3g (largest %.3g)\n", "layernorm",
                   fills[k].name, cols, s.var > 0 ? lb.mean_tol / sqrt(s.var) : 0.0,
                   lb.rstd_tol / lb.rstd, median, largest);
        }
        for (size_t k = 0; k < nf + 2; k++) {
            const struct fill *f = k < nf ? &fills[k] : &masked[k - nf];
            row_of(f, x, cols);
            struct softmax_stats sm;
            softmax_stats(x, cols, &sm);
            size_t m = 0;
            for (size_t c = 0; c < cols; c++) {
                if (x[c] == -INFINITY)
                    continue;
                double y = exp(x[c] - sm.max) / sm.sum;
                if (y > 1e-30)
                    rel[m++] = softmax_tol(&sm, x[c], y, cols) / y;
            }
            double median, largest;
            spread_of(rel, m, &median, &largest);
            printf("%-10s %-14s %8zu  y %.3g (largest %.3g)\n", "softmax", f->name, cols, median,
                   largest);
        }
        free(x);
        free(g);
        free(b);
        free(rel);
    }
    return 0;
}
