/* rows_driver.c: main() for every part 2 program (rows/). It owns what is
 * not the optimization: options, input, the CPU reference, the workspace,
 * timing, the L2 flush, verification of every output, and reporting. The
 * program's rows.cu supplies row_forward() and step_op (common/rows.h). */
#include "check.h"
#include "device.h"
#include "harness.h"
#include "rows.h"
#include "rows_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A program that needs no workspace does not define row_workspace(). */
__attribute__((weak)) struct workspace_size row_workspace(const struct row_problem *p)
{
    (void)p;
    struct workspace_size none = {0, 0};
    return none;
}

/* A program with one path for every width does not define row_path_widths(). */
__attribute__((weak)) int row_path_widths(size_t *widths, int max)
{
    (void)widths;
    (void)max;
    return 0;
}

struct context {
    struct gpu_info gpu;
    char name[256];
};

static void *host_alloc(size_t count, size_t size)
{
    void *p = malloc(count * size + 1);
    if (p == NULL) {
        fprintf(stderr, "error: out of host memory for %zu values\n", count);
        exit(EXIT_DEVICE);
    }
    return p;
}

/* The device side of one problem: every buffer between NaN guards. */
struct buffers {
    struct guarded x, y, mean, rstd, gamma, beta, residual, h, zeroed, scratch;
    int norm;     /* LayerNorm and RMSNorm: rstd and gamma exist */
    int affine;   /* LayerNorm: mean and beta too */
    int add;      /* the residual add: residual and h exist (at x's and y's skips) */
    int bf16;     /* x, y, gamma and beta hold bfloat16, two to a guarded float */
    /* bfloat16: 1 where the array's offset is odd, the half-float before it */
    size_t x_skip, y_skip, gamma_skip, beta_skip;
};

static size_t floats_for(size_t bytes)
{
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

/* A buffer of count elements, lead elements past an aligned address: floats,
 * or bfloat16s packed two to a float of the guarded buffer. An odd lead or
 * an odd end leaves one half-float pad beside the data, inside the guards:
 * poisoned like them (0xFFFF is a bfloat16 NaN), and checked by pads_intact(). */
static void elems_alloc(struct guarded *g, int bf16, size_t lead, size_t count)
{
    if (bf16)
        guarded_alloc(g, lead / 2, (lead % 2 + count + 1) / 2);
    else
        guarded_alloc(g, lead, count);
}

static void *elems_of(const struct guarded *g, int bf16, size_t skip)
{
    return bf16 ? (void *)((uint16_t *)g->data + skip) : (void *)g->data;
}

/* The bfloat16 pads before and after count elements still read 0xFFFF. */
static int pads_intact(const struct guarded *g, size_t skip, size_t count)
{
    uint16_t pad;
    if (skip == 1) {
        CHECK_CUDA(cudaMemcpy(&pad, g->data, sizeof pad, cudaMemcpyDeviceToHost));
        if (pad != 0xFFFFu)
            return 0;
    }
    if (skip + count < 2 * g->count) {
        CHECK_CUDA(cudaMemcpy(&pad, (uint16_t *)g->data + skip + count, sizeof pad,
                              cudaMemcpyDeviceToHost));
        if (pad != 0xFFFFu)
            return 0;
    }
    return 1;
}

static struct row_problem problem_of(const struct buffers *b, size_t rows, size_t cols)
{
    struct row_problem p = {
        .mean = b->affine ? b->mean.data : NULL, .rstd = b->norm ? b->rstd.data : NULL,
        .eps = LN_EPS, .rows = rows, .cols = cols,
    };
    /* Each program gets its own element type's pointers; the others stay
     * NULL, so a float kernel in a bfloat16 program fails at once. */
    if (b->bf16) {
        p.x_bf16 = elems_of(&b->x, 1, b->x_skip);
        p.y_bf16 = elems_of(&b->y, 1, b->y_skip);
        p.residual_bf16 = b->add ? elems_of(&b->residual, 1, b->x_skip) : NULL;
        p.h_bf16 = b->add ? elems_of(&b->h, 1, b->y_skip) : NULL;
        p.gamma_bf16 = b->norm ? elems_of(&b->gamma, 1, b->gamma_skip) : NULL;
        p.beta_bf16 = b->affine ? elems_of(&b->beta, 1, b->beta_skip) : NULL;
    } else {
        p.x = b->x.data;
        p.y = b->y.data;
        p.residual = b->add ? b->residual.data : NULL;
        p.h = b->add ? b->h.data : NULL;
        p.gamma = b->norm ? b->gamma.data : NULL;
        p.beta = b->affine ? b->beta.data : NULL;
    }
    p.work.zeroed = b->zeroed.count ? b->zeroed.data : NULL;
    p.work.scratch = b->scratch.count ? b->scratch.data : NULL;
    return p;
}

static void buffers_alloc(struct buffers *b, const struct options *o, size_t out_count)
{
    b->add = step_op == ROW_ADD_RMSNORM;
    b->norm = step_op == ROW_LAYERNORM || step_op == ROW_RMSNORM || b->add;
    b->affine = step_op == ROW_LAYERNORM;
    b->bf16 = step_dtype == ROW_BF16;
    b->x_skip = b->bf16 ? (size_t)o->offset % 2 : 0;
    b->y_skip = b->bf16 ? (size_t)o->y_offset % 2 : 0;
    b->gamma_skip = b->bf16 ? (size_t)o->gamma_offset % 2 : 0;
    b->beta_skip = b->bf16 ? (size_t)o->beta_offset % 2 : 0;
    size_t with_affine = b->affine ? 1 : 0, with_norm = b->norm ? 1 : 0;
    elems_alloc(&b->x, b->bf16, (size_t)o->offset, o->n);
    elems_alloc(&b->y, b->bf16, (size_t)o->y_offset, out_count);
    guarded_alloc(&b->mean, 0, o->rows * with_affine);
    guarded_alloc(&b->rstd, 0, o->rows * with_norm);
    elems_alloc(&b->gamma, b->bf16, (size_t)o->gamma_offset, o->cols * with_norm);
    elems_alloc(&b->beta, b->bf16, (size_t)o->beta_offset, o->cols * with_affine);
    elems_alloc(&b->residual, b->bf16, (size_t)o->offset, b->add ? o->n : 0);
    elems_alloc(&b->h, b->bf16, (size_t)o->y_offset, b->add ? o->n : 0);
    struct row_problem p = problem_of(b, o->rows, o->cols);
    struct workspace_size size = row_workspace(&p);
    guarded_alloc(&b->zeroed, 0, floats_for(size.zeroed));
    guarded_alloc(&b->scratch, 0, floats_for(size.scratch));
    struct guarded *all[] = {&b->x, &b->y, &b->mean, &b->rstd, &b->gamma, &b->beta,
                             &b->residual, &b->h, &b->zeroed, &b->scratch};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        guarded_poison(all[k]);
    CHECK_CUDA(cudaMemset(b->zeroed.data, 0, b->zeroed.count * sizeof(float)));
}

/* Before every run: the outputs and the scratch to NaN, so an output no
 * thread wrote, or a read of scratch nothing wrote this run, fails. */
static void buffers_poison_outputs(const struct buffers *b)
{
    guarded_poison(&b->y);
    guarded_poison(&b->mean);
    guarded_poison(&b->rstd);
    guarded_poison(&b->h);
    guarded_poison(&b->scratch);
}

static int buffers_guards_intact(const struct buffers *b, size_t n, size_t out_count,
                                 size_t cols)
{
    const struct guarded *all[] = {&b->x, &b->y, &b->mean, &b->rstd, &b->gamma, &b->beta,
                                   &b->residual, &b->h, &b->zeroed, &b->scratch};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        if (!guards_intact(all[k]))
            return 0;
    if (b->bf16)
        return pads_intact(&b->x, b->x_skip, n) && pads_intact(&b->y, b->y_skip, out_count) &&
               pads_intact(&b->gamma, b->gamma_skip, b->norm ? cols : 0) &&
               pads_intact(&b->beta, b->beta_skip, b->affine ? cols : 0) &&
               pads_intact(&b->residual, b->x_skip, b->add ? n : 0) &&
               pads_intact(&b->h, b->y_skip, b->add ? n : 0);
    return 1;
}

static int buffers_zeroed_clean(const struct buffers *b)
{
    size_t count = b->zeroed.count;
    if (count == 0)
        return 1;
    unsigned int *h = host_alloc(count, sizeof *h);
    CHECK_CUDA(cudaMemcpy(h, b->zeroed.data, count * sizeof *h, cudaMemcpyDeviceToHost));
    int clean = 1;
    for (size_t k = 0; k < count; k++)
        clean &= h[k] == 0;
    free(h);
    return clean;
}

static void buffers_free(struct buffers *b)
{
    struct guarded *all[] = {&b->x, &b->y, &b->mean, &b->rstd, &b->gamma, &b->beta,
                             &b->residual, &b->h, &b->zeroed, &b->scratch};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        guarded_free(all[k]);
}

/* The outputs of one run, on the host. */
struct outputs {
    float *y, *mean, *rstd, *h;
};

/* bfloat16 outputs come back widened to float: exact, so the checks and the
 * bit-for-bit comparison of two runs see what the kernel wrote. */
/* count elements from element at of a buffer, widened to float. */
static void elems_fetch_at(float *h, const struct guarded *g, int bf16, size_t skip, size_t at,
                           size_t count)
{
    if (bf16) {
        uint16_t *h16 = host_alloc(count, sizeof *h16);
        CHECK_CUDA(cudaMemcpy(h16, (const uint16_t *)elems_of(g, 1, skip) + at,
                              count * sizeof *h16, cudaMemcpyDeviceToHost));
        #pragma omp parallel for schedule(static) if (count > ((size_t)1 << 20))
        for (size_t k = 0; k < count; k++)
            h[k] = bf16_to_float(h16[k]);
        free(h16);
    } else {
        CHECK_CUDA(cudaMemcpy(h, g->data + at, count * sizeof(float), cudaMemcpyDeviceToHost));
    }
}

static void elems_fetch(float *h, const struct guarded *g, int bf16, size_t skip, size_t count)
{
    elems_fetch_at(h, g, bf16, skip, 0, count);
}

static void outputs_fetch(struct outputs *h, const struct buffers *b, size_t y_count)
{
    elems_fetch(h->y, &b->y, b->bf16, b->y_skip, y_count);
    if (b->add)
        elems_fetch(h->h, &b->h, b->bf16, b->y_skip, y_count);
    CHECK_CUDA(cudaMemcpy(h->mean, b->mean.data, b->mean.count * sizeof(float),
                          cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h->rstd, b->rstd.data, b->rstd.count * sizeof(float),
                          cudaMemcpyDeviceToHost));
}

/* count floats rounded to bfloat16 and copied to d; the floats are
 * replaced by what they became, for the reference. */
static void upload_bf16(void *d, float *h, size_t count)
{
    if (count == 0)
        return;
    uint16_t *h16 = host_alloc(count, sizeof *h16);
    #pragma omp parallel for schedule(static) if (count > ((size_t)1 << 20))
    for (size_t k = 0; k < count; k++) {
        h16[k] = bf16_from_float(h[k]);
        h[k] = bf16_to_float(h16[k]);
    }
    CHECK_CUDA(cudaMemcpy(d, h16, count * sizeof *h16, cudaMemcpyHostToDevice));
    free(h16);
}

/* Where two runs' outputs differ first, or -1. mean_rows, rstd_rows: how
 * many of each the op writes (0 for none). */
static long long outputs_differ(const struct outputs *a, const struct outputs *b, size_t y_count,
                                size_t mean_rows, size_t rstd_rows, size_t h_count)
{
    if (memcmp(a->h, b->h, h_count * sizeof(float)) != 0)
        return 0;
    if (memcmp(a->y, b->y, y_count * sizeof(float)) != 0) {
        for (size_t k = 0; k < y_count; k++)
            if (memcmp(&a->y[k], &b->y[k], sizeof(float)) != 0)
                return (long long)k;
    }
    if (memcmp(a->mean, b->mean, mean_rows * sizeof(float)) != 0 ||
        memcmp(a->rstd, b->rstd, rstd_rows * sizeof(float)) != 0)
        return 0;
    return -1;
}

/* h = x + residual as the element type stores it: the add in float, then
 * bfloat16's one rounding. */
static float stored_sum(float x, float residual, int bf16)
{
    float h = x + residual;
    return bf16 ? bf16_to_float(bf16_from_float(h)) : h;
}

/* The written h against x + residual as stored, exactly, on the rows
 * check_rows_every() checks; the worst (the first) into v. */
static void check_h_every(const float *h, const float *want, size_t rows, size_t cols,
                          size_t every, struct row_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->exact = 1;
    for (size_t r = 0; r < rows; r++) {
        if (!(r % every == 0 || r + every >= rows))
            continue;
        for (size_t c = 0; c < cols; c++) {
            size_t i = r * cols + c;
            if (memcmp(&h[i], &want[i], sizeof(float)) == 0)
                continue;
            if (v->bad++ == 0) {
                v->row = r;
                v->col = c;
                v->what = "h";
                v->got = h[i];
                v->want = want[i];
                v->ratio = HUGE_VAL;
            }
        }
    }
}

/* A fresh input for every timed run (common/harness.h, struct fresh): before
 * each one, the previous run's changes are undone and FRESH_ROWS rows of x
 * get one element changed each, at places from the process's own stream,
 * by twice the element's size rounded up to a power of two (at least 2), up
 * or down in turn. The input is the fill with this run's changes only, so
 * nothing drifts however many runs there are. The changed element's output
 * moves far past its tolerance in LayerNorm, RMSNorm, softmax and the copy;
 * a row sum's tolerance grows with the width, so there the sum must also sit
 * nearer the row's new sum than its sum before the change (fresh_moved). A
 * -inf stays -inf, and its row what it was. The host's x (and the residual
 * add's h) follows. */
#define FRESH_ROWS 4
struct fresh_rows {
    struct fresh f;
    int count;                  /* changes in place */
    size_t at[FRESH_ROWS];      /* their elements */
    float was[FRESH_ROWS];      /* the values they replaced */
    size_t row[FRESH_ROWS];     /* their rows */
    double before[FRESH_ROWS];  /* each row's sum in the run before (a row sum's check) */
};

/* x[i] = value, on the device (in its element type) and on the host. */
static void set_element(const struct buffers *b, float *h_x, size_t i, float value)
{
    if (b->bf16) {
        uint16_t bits = bf16_from_float(value);
        value = bf16_to_float(bits);
        CHECK_CUDA(cudaMemcpy((uint16_t *)elems_of(&b->x, 1, b->x_skip) + i, &bits, sizeof bits,
                              cudaMemcpyHostToDevice));
    } else {
        CHECK_CUDA(cudaMemcpy(b->x.data + i, &value, sizeof value, cudaMemcpyHostToDevice));
    }
    h_x[i] = value;
}

static double row_sum(const float *x, size_t cols)
{
    double sum = 0.0;
    for (size_t c = 0; c < cols; c++)
        sum += x[c];
    return sum;
}

static void fresh_rows_next(struct fresh_rows *fr, float *h_x, size_t rows, size_t cols,
                            const struct buffers *b, const float *h_res, float *h_sum)
{
    int count = rows < FRESH_ROWS ? (int)rows : FRESH_ROWS;
    size_t at[FRESH_ROWS];
    for (int k = 0; k < count; k++) {
        fr->f.state = splitmix64(fr->f.state);
        fr->row[k] = (size_t)(fr->f.state % rows);
        at[k] = fr->row[k] * cols + (size_t)((fr->f.state >> 32) % cols);
        fr->before[k] = step_op == ROW_SUM ? row_sum(h_x + fr->row[k] * cols, cols) : 0.0;
    }
    for (int k = fr->count - 1; k >= 0; k--) {   /* back to the fill, last change first */
        set_element(b, h_x, fr->at[k], fr->was[k]);
        if (b->add)
            h_sum[fr->at[k]] = stored_sum(h_x[fr->at[k]], h_res[fr->at[k]], b->bf16);
    }
    for (int k = 0; k < count; k++) {
        size_t i = at[k], row0 = fr->row[k] * cols;
        /* A masked value (-inf) would stay -inf: take the row's next finite one. */
        for (size_t c = 1; c < cols && !isfinite(h_x[i]); c++)
            i = row0 + (at[k] - row0 + c) % cols;
        fr->at[k] = i;
        fr->was[k] = h_x[i];
        if (!isfinite(h_x[i]))   /* a row masked whole: nothing to change */
            continue;
        double step = fresh_row_step(h_x + row0, cols, i - row0, step_op);
        set_element(b, h_x, i, (float)((double)h_x[i] + fr->f.sign * step));
        if (b->add)
            h_sum[i] = stored_sum(h_x[i], h_res[i], b->bf16);
    }
    fr->count = count;
    fr->f.sign = -fr->f.sign;
}

/* Row r's outputs against its reference: y's row (a sum's one value),
 * LayerNorm's mean and rstd, RMSNorm's rstd, and the residual add's h (h_x
 * is then x + residual as stored, what y normalises). */
static void check_one_row(const struct buffers *b, size_t r, size_t cols, const float *h_x,
                          const float *h_gamma, const float *h_beta, float *y_row,
                          struct row_verdict *v)
{
    enum row_op op = step_op;
    if (b->add) {
        elems_fetch_at(y_row, &b->h, b->bf16, b->y_skip, r * cols, cols);
        check_h_every(y_row, h_x + r * cols, 1, cols, 1, v);
        if (v->bad > 0) {
            v->row = r;
            return;
        }
    }
    size_t count = op == ROW_SUM ? 1 : cols, at = op == ROW_SUM ? r : r * cols;
    elems_fetch_at(y_row, &b->y, b->bf16, b->y_skip, at, count);
    float mean = 0.0f, rstd = 0.0f;
    if (b->affine)
        CHECK_CUDA(cudaMemcpy(&mean, b->mean.data + r, sizeof mean, cudaMemcpyDeviceToHost));
    if (b->norm)
        CHECK_CUDA(cudaMemcpy(&rstd, b->rstd.data + r, sizeof rstd, cudaMemcpyDeviceToHost));
    check_rows(op, step_dtype, h_x + r * cols, 1, cols, h_gamma, h_beta, LN_EPS, y_row, &mean,
               &rstd, v);
    v->row = r;
}

static int run_one(const struct options *opt, const struct context *c, int quiet, char *why,
                   size_t why_len)
{
    struct options o = *opt;
    const struct gpu_info *g = &c->gpu;
    enum row_op op = step_op;
    enum row_dtype dtype = step_dtype;
    size_t elem = dtype == ROW_BF16 ? 2 : sizeof(float);
    size_t rows = o.rows, cols = o.cols, n = o.n;
    size_t out_count = (op == ROW_SUM) ? rows : n;
    size_t mean_rows = op == ROW_LAYERNORM ? rows : 0;
    size_t rstd_rows = op == ROW_LAYERNORM || op == ROW_RMSNORM || op == ROW_ADD_RMSNORM ? rows : 0;
    size_t h_count = op == ROW_ADD_RMSNORM ? n : 0;
    int reps = o.check_only ? 1 : o.reps;
    int runs = o.check_only ? 1 : o.warmup + o.reps;

    /* Input, on the host. */
    float *h_x = host_alloc(n, sizeof(float));
    float *h_gamma = host_alloc(cols, sizeof(float)), *h_beta = host_alloc(cols, sizeof(float));
    struct outputs first = {host_alloc(out_count, sizeof(float)), host_alloc(rows, sizeof(float)),
                            host_alloc(rows, sizeof(float)), host_alloc(h_count, sizeof(float))};
    struct outputs last = {host_alloc(out_count, sizeof(float)), host_alloc(rows, sizeof(float)),
                           host_alloc(rows, sizeof(float)), host_alloc(h_count, sizeof(float))};
    int fresh_runs = !o.check_only && !o.same_input;
    struct outputs again = {NULL, NULL, NULL, NULL};   /* the last timed input's untimed repeat */
    if (fresh_runs) {
        again.y = host_alloc(out_count, sizeof(float));
        again.mean = host_alloc(rows, sizeof(float));
        again.rstd = host_alloc(rows, sizeof(float));
        again.h = host_alloc(h_count, sizeof(float));
    }
    /* The residual add: the residual, and x + residual as stored (h's
     * reference, and the input y's reference normalises). */
    float *h_res = host_alloc(h_count, sizeof(float)), *h_sum = host_alloc(h_count, sizeof(float));
    float *y_row = host_alloc(cols, sizeof(float));
    struct fresh_rows fresh = {{fresh_seed(), 0.0, 1}, 0, {0}, {0}, {0}, {0}};
    struct row_verdict kept = {0};   /* the first changed row that failed, and its run */
    int kept_run = -1;
    double *times = host_alloc((size_t)reps, sizeof(double));
    size_t one = onehot_index(n, o.seed, o.at_given, o.at);
    fill_row_input(h_x, rows, cols, o.fill, o.row_fill, o.mask, o.seed, one);
    fill_affine(h_gamma, h_beta, cols, o.seed);
    if (h_count)   /* the same fill, from another seed */
        fill_row_input(h_res, rows, cols, o.fill, o.row_fill, o.mask, o.seed + 1, one);
    char fill[64];
    row_fill_name(&o, fill, sizeof fill);

    struct buffers b;
    buffers_alloc(&b, &o, out_count);
    size_t gamma_cols = b.norm ? cols : 0, beta_cols = b.affine ? cols : 0;
    if (b.bf16) {
        /* The same fills, rounded to bfloat16 once here; the reference then
         * starts from the rounded values (h_x, h_gamma and h_beta widened
         * back), so the input's rounding is no error of the program's. */
        upload_bf16(elems_of(&b.x, 1, b.x_skip), h_x, n);
        upload_bf16(elems_of(&b.gamma, 1, b.gamma_skip), h_gamma, gamma_cols);
        upload_bf16(elems_of(&b.beta, 1, b.beta_skip), h_beta, beta_cols);
        upload_bf16(elems_of(&b.residual, 1, b.x_skip), h_res, h_count);
    } else {
        CHECK_CUDA(cudaMemcpy(b.x.data, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(b.gamma.data, h_gamma, b.gamma.count * sizeof(float),
                              cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(b.beta.data, h_beta, b.beta.count * sizeof(float),
                              cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(b.residual.data, h_res, h_count * sizeof(float),
                              cudaMemcpyHostToDevice));
    }
    for (size_t i = 0; i < h_count; i++)
        h_sum[i] = stored_sum(h_x[i], h_res[i], b.bf16);
    /* What y is checked against: x, or for the residual add h as stored. */
    const float *y_input = h_count ? h_sum : h_x;
    struct row_problem p = problem_of(&b, rows, cols);

    struct flusher flush;
    flusher_init(&flush, g, o.flush && !o.check_only);
    struct timer timer;
    timer_init(&timer);

    int guards_ok = 1, zeroed_ok = 1;
    struct row_verdict v;
    for (int r = 0; r < runs; r++) {
        int k = r - (runs - reps);   /* index among the timed runs; < 0: warm-up */
        if (k >= 0 && fresh_runs)
            fresh_rows_next(&fresh, h_x, rows, cols, &b, h_res, h_sum);
        buffers_poison_outputs(&b);
        flusher_run(&flush);
        timer_start(&timer);
        row_forward(&p);
        double us = timer_stop_us(&timer);
        guards_ok = guards_ok && buffers_guards_intact(&b, n, out_count, cols);
        zeroed_ok = zeroed_ok && buffers_zeroed_clean(&b);
        if (k < 0)
            continue;
        times[k] = us;
        /* The rows this run's input changed in, against their new reference:
         * an output kept from an earlier run is the old row's. */
        for (int j = 0; fresh_runs && j < fresh.count && kept_run < 0; j++) {
            size_t r = fresh.row[j];
            check_one_row(&b, r, cols, y_input, h_gamma, h_beta, y_row, &kept);
            if (kept.bad == 0 && op == ROW_SUM) {   /* the sum moved with its row */
                double now = row_sum(h_x + r * cols, cols);
                if (now != fresh.before[j] && !fresh_moved(y_row[0], now, fresh.before[j])) {
                    kept.bad = 1;
                    kept.what = "sum";
                    kept.got = y_row[0];
                    kept.want = now;
                }
            }
            if (kept.bad > 0)
                kept_run = k;
        }
        /* The first timed run is checked whole, against its own input; the
         * last must give the same bits again (from the first, with
         * --same-input), as a race would not. */
        if (k == 0) {
            outputs_fetch(&first, &b, out_count);
            if (h_count)
                check_h_every(first.h, h_sum, rows, cols, o.check_every, &v);
            if (!h_count || v.bad == 0)
                check_rows_every(op, dtype, y_input, rows, cols, h_gamma, h_beta, LN_EPS,
                                 first.y, first.mean, first.rstd, o.check_every, &v);
        }
        if (k == reps - 1 && (fresh_runs || reps > 1))
            outputs_fetch(&last, &b, out_count);
    }
    long long moved = -1;
    if (fresh_runs) {   /* the last timed input once more, untimed */
        buffers_poison_outputs(&b);
        row_forward(&p);
        guards_ok = guards_ok && buffers_guards_intact(&b, n, out_count, cols);
        zeroed_ok = zeroed_ok && buffers_zeroed_clean(&b);
        outputs_fetch(&again, &b, out_count);
        moved = outputs_differ(&last, &again, out_count, mean_rows, rstd_rows, h_count);
    } else if (reps > 1) {
        moved = outputs_differ(&first, &last, out_count, mean_rows, rstd_rows, h_count);
    }
    int pass = v.bad == 0 && kept_run < 0 && moved < 0 && guards_ok && zeroed_ok;

    char where[96];
    if (op == ROW_SUM || (strcmp(v.what, "y") != 0 && strcmp(v.what, "h") != 0))
        snprintf(where, sizeof where, "%s[row %zu]", v.what, v.row);
    else
        snprintf(where, sizeof where, "%s[row %zu, col %zu]", v.what, v.row, v.col);
    char verdict[512] = "PASS";
    if (!guards_ok)
        snprintf(verdict, sizeof verdict,
                 "FAIL: a kernel wrote outside its buffers (a NaN guard around them was overwritten)");
    else if (!zeroed_ok)
        snprintf(verdict, sizeof verdict,
                 "FAIL: a launch left its workspace's counters non-zero (the next one needs them at 0)");
    else if (v.bad > 0)
        snprintf(verdict, sizeof verdict, "FAIL: %s is %.9g, not %.9g (tolerance %.3g%s); %zu of "
                 "the outputs are wrong%s", where, v.got, v.want, v.tol,
                 v.tol == 0.0 ? ": exact" : "", v.bad,
                 isnan(v.got) ? " (NaN: an output nothing wrote, or a read outside the input)" : "");
    else if (kept_run >= 0) {
        if (op == ROW_SUM || (strcmp(kept.what, "y") != 0 && strcmp(kept.what, "h") != 0))
            snprintf(where, sizeof where, "%s[row %zu]", kept.what, kept.row);
        else
            snprintf(where, sizeof where, "%s[row %zu, col %zu]", kept.what, kept.row, kept.col);
        snprintf(verdict, sizeof verdict, "FAIL: timed run %d gave %s = %.9g, not %.9g (tolerance "
                 "%.3g), in a row whose input changed before that run: an output kept from an "
                 "earlier run?", kept_run + 1, where, kept.got, kept.want, kept.tol);
    }
    else if (moved >= 0 && fresh_runs)
        snprintf(verdict, sizeof verdict, "FAIL: the last timed run's input, run again untimed, "
                 "gave other outputs (first at output %lld): a race?", moved);
    else if (moved >= 0)
        snprintf(verdict, sizeof verdict, "FAIL: timed run %d differs from timed run 1 (first at "
                 "output %lld): a race?", reps, moved);
    if (why != NULL)
        snprintf(why, why_len, "%s", verdict);

    struct stats s = {0.0, 0.0, 0.0};
    double bytes = row_bytes(op, dtype, rows, cols), gbps = 0.0;
    if (!o.check_only) {
        s = compute_stats(times, reps);
        gbps = bytes / (s.median * 1e3);
        if (pass && above_peak(gbps, g->peak_gbps, flush.buf != NULL)) {
            pass = 0;
            snprintf(verdict, sizeof verdict,
                     "FAIL: %.0f GB/s is above the device's theoretical peak of %.0f GB/s, with "
                     "the L2 flushed: no run that reads its input is that fast (an answer kept "
                     "from an earlier run?)", gbps, g->peak_gbps);
            if (why != NULL)
                snprintf(why, why_len, "%s", verdict);
        }
    }
    if (!quiet) {
        printf("rows = %zu, cols = %zu (%.1f MiB), %s, fill %s, seed %llu, offset %d", rows,
               cols, n * elem / 1048576.0, row_kind_name(op, dtype), fill,
               (unsigned long long)o.seed, o.offset);
        if (o.y_offset || o.gamma_offset || o.beta_offset)
            printf(" (y %d, gamma %d, beta %d)", o.y_offset, o.gamma_offset, o.beta_offset);
        printf("\n");
        if (o.check_every > 1)
            printf("checked  rows 0, %zu, %zu ... and the last %zu only (--check-every)\n",
                   o.check_every, 2 * o.check_every, o.check_every);
        if (!o.check_only) {
            printf("time     median %.2f us   min %.2f   max %.2f   (%d warm-up, %d timed, L2 %s)\n",
                   s.median, s.min, s.max, o.warmup, o.reps, o.flush ? "flushed" : "not flushed");
            printf("speed    %.1f GB/s = %.1f%% of the %.0f GB/s peak (%.1f MB read and written)\n",
                   gbps, 100.0 * gbps / g->peak_gbps, g->peak_gbps, bytes / 1e6);
        }
        if (v.exact)
            printf("result   every output equals the reference exactly (zero tolerance: integer "
                   "sums under 2^24, masked values, or a copy)\n");
        else
            printf("result   worst %s: %.9g, reference %.9g, |error| %.3g = %.2f x its tolerance %.3g\n",
                   where, v.got, v.want, fabs(v.got - v.want), v.ratio, v.tol);
        printf("%s\n", verdict);
    }

    int rc = pass ? EXIT_VERIFIED : EXIT_WRONG;
    if (o.csv_path != NULL) {
        struct result_row row = {
            .step = c->name, .timed = !o.check_only, .n = n, .reps = reps,
            .warmup = o.check_only ? 0 : o.warmup, .us = s, .gbps = gbps,
            .pct_peak = 100.0 * gbps / g->peak_gbps, .result = (float)v.got,
            .reference = v.want, .abs_err = fabs(v.got - v.want), .tol = v.tol, .pass = pass,
            .flush = flush.buf != NULL, .offset = o.offset, .fill = fill,
            .seed = o.seed, .distinct = moved < 0 ? 1 : 2, .rows = rows, .cols = cols,
            .op = row_kind_name(op, dtype), .bytes = bytes,
        };
        row_set_build(&row, g);
        if (csv_append_row(o.csv_path, &row) != 0) {
            fprintf(stderr, "error: cannot write %s\n", o.csv_path);
            rc = EXIT_USAGE;
        }
    }

    timer_free(&timer);
    flusher_free(&flush);
    buffers_free(&b);
    free(h_x);
    free(h_gamma);
    free(h_beta);
    free(first.y);
    free(first.mean);
    free(first.rstd);
    free(last.y);
    free(last.mean);
    free(last.rstd);
    free(again.y);
    free(again.mean);
    free(again.rstd);
    free(again.h);
    free(first.h);
    free(last.h);
    free(h_res);
    free(h_sum);
    free(y_row);
    free(times);
    return rc;
}

/* A run as the user asked for it; a timed run first makes verify_set()'s
 * checks, so that its PASS means what the grader's does at that shape. */
static int run(const struct options *o, void *ctx)
{
    const struct context *c = ctx;
    if (!o->check_only && o->verify) {
        struct options checks[VERIFY_MAX];
        int count = verify_set(o, checks);
        for (int k = 0; k < count; k++) {
            char why[512], fill[64];
            if (run_one(&checks[k], c, 1, why, sizeof why) != EXIT_VERIFIED) {
                row_fill_name(&checks[k], fill, sizeof fill);
                printf("check    --rows %zu --cols %zu --offset %d --y-offset %d --fill %s: %s\n",
                       checks[k].rows, checks[k].cols, checks[k].offset, checks[k].y_offset,
                       fill, why);
                printf("FAIL: a check before timing failed (make check STEP=rows/... lists them all)\n");
                return EXIT_WRONG;
            }
        }
        printf("check    PASS: %d checks: the exact fill at this shape%s, with x and then y moved "
               "in its pack%s%s%s\n", count, o->cols > 1 ? " and one column fewer" : "",
               o->program.checks & ROW_CHECK_SHIFTED_TINY ? "; shifted and tiny fills" : "",
               o->program.checks & ROW_CHECK_CENTERED ? "; the centered fill" : "",
               o->program.checks & ROW_CHECK_LEVELS_MASKED ? "; the levels fill, masked" : "");
    }
    return run_one(o, c, 0, NULL, 0);
}

/* --gpu-info's part 2 lines: what the grader needs to know of this program. */
static void print_row_info(void)
{
    size_t widths[32];
    int count = row_path_widths(widths, 32);
    printf("op=%s\ndtype=%s\npack=%d\nmax_cols=%zu\nmax_n=%zu\npath_widths=", row_op_name(step_op),
           step_dtype == ROW_BF16 ? "bf16" : "f32", row_pack_elements(step_dtype), ROWS_MAX_COLS,
           ROWS_MAX_N);
    for (int k = 0; k < count; k++)
        printf("%s%zu", k ? "," : "", widths[k]);
    printf("\n");
}

int main(int argc, char **argv)
{
    const struct program rows = row_program_of(step_op, step_dtype);
    struct options o;
    struct context c;
    char err[256];
    program_name(argv[0], c.name, sizeof c.name);
    switch (parse_options(argc, argv, &rows, &o, err, sizeof err)) {
    case PARSE_HELP:
        print_usage(argv[0], &rows);
        return EXIT_VERIFIED;
    case PARSE_VERSION:
        print_version(c.name);
        return EXIT_VERIFIED;
    case PARSE_ERROR:
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
    case PARSE_GPU_INFO:
        open_device(o.device, &c.gpu);
        print_gpu_info(&c.gpu);
        print_row_info();
        return EXIT_VERIFIED;
    case PARSE_OK:
        break;
    }
    if (o.csv_path != NULL && csv_check_writable(o.csv_path) != 0) {
        fprintf(stderr, "error: --csv %s: cannot write this file\n", o.csv_path);
        return EXIT_USAGE;
    }
    open_device(o.device, &c.gpu);
    print_gpu_line(c.name, &c.gpu);
    if (o.checks_path != NULL)
        return run_lines(o.checks_path, &o, 1, argv[0], run, &c);
    if (o.runs_path != NULL)
        return run_lines(o.runs_path, &o, 0, argv[0], run, &c);
    return run(&o, &c);
}
