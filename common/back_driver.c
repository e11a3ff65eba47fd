/* back_driver.c: main() for every part 3 program (back/). It owns what is
 * not the optimization: options, input, the CPU reference, timing, the L2
 * flush, verification of every output, the determinism check and
 * reporting, and the workspace. The program's back.cu supplies back_run()
 * and step_op (common/back.h), and back_workspace() if it needs one.
 *
 * Part 3's driver (back/README.md): it reuses harness.c and
 * device.c as they are (the parser of part 2's rows x cols programs, the
 * guarded buffers, the flush, the timer, the CSV row), so that no part 1
 * or part 2 program's code hash moves. Not yet here (wip-harness/PART3.md):
 * fresh inputs for every timed run, and the grader's fixtures. */
#include "back.h"
#include "back_ref.h"
#include "check.h"
#include "device.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* step_dtype's and step_deterministic's weak defaults are in back_ref.c: gcc
 * folds a weak const's value into the code of the file that defines it, and
 * the program's own (strong) one would then never be read here. */

/* A program that needs no workspace does not define back_workspace(). */
__attribute__((weak)) struct workspace_size back_workspace(const struct back_problem *p)
{
    (void)p;
    struct workspace_size none = {0, 0};
    return none;
}

/* The determinism check's runs: the first, and this many minus one to
 * compare with it bit for bit. */
#define DET_RUNS 3

struct context {
    struct gpu_info gpu;
    char name[256];
};

/* back/baseline_copy3 (BACK_COPY3): part 3's bar, dx = x + dy, checked bit
 * for bit, its bytes the three streams alone (back_ref.h). */
static int is_copy3(void)
{
    return step_op == BACK_COPY3;
}

/* Softmax's backward pass (BACK_SOFTMAX): y and dy in, dx out, no column
 * sums (back.h). */
static int is_softmax(void)
{
    return step_op == BACK_SOFTMAX;
}

/* x (y), dy and dx in bfloat16 (step_dtype BACK_BF16). */
static int is_bf16(void)
{
    return step_dtype == BACK_BF16;
}

/* The op column of its CSV rows, and what its messages call it. */
static const char *op_name(void)
{
    if (is_bf16() && is_softmax())
        return BACK_SOFTMAX_BF16_NAME;
    if (is_bf16() && is_copy3())
        return BACK_COPY3_BF16_NAME;
    if (is_bf16())
        return BACK_LAYERNORM_BF16_NAME;
    return is_copy3() ? BACK_COPY3_NAME : is_softmax() ? BACK_SOFTMAX_NAME : BACK_OP_NAME;
}

/* The element type of x (y), dy and dx, as the usage text names it, and its bytes. */
static const char *elems_name(void)
{
    return is_bf16() ? "bfloat16s" : "floats";
}

static size_t elem_bytes(void)
{
    return is_bf16() ? 2 : sizeof(float);
}

/* LayerNorm in bfloat16: x, dy and dx bfloat16, its fill rounded before the
 * saved statistics (back_fill_bf16), its own check. */
static int is_ln_bf16(void)
{
    return is_bf16() && step_op == BACK_LAYERNORM;
}

/* The two inputs that move with --offset. */
static const char *inputs_name(void)
{
    return is_softmax() ? "y and dy" : "x and dy";
}

/* LayerNorm's gamma, dgamma and dbeta (cols each), mean and rstd (rows):
 * how many of each a problem has; none in softmax's and the copy's. */
static size_t param_count(size_t cols)
{
    return step_op == BACK_LAYERNORM ? cols : 0;
}

static void back_usage(const char *prog)
{
    printf("usage: %s [options]\n", prog);
    if (is_copy3() && is_bf16())
        printf("Part 3's bfloat16 bar, not a step: dx = y + dy on a rows x cols matrix of\n"
               "bfloat16s, added in float and rounded once, the three streams of the\n"
               "bfloat16 backward passes (6 bytes an element) and nothing else; x below is y.\n"
               "dx must equal that rounding bit for bit, on every fill; dgamma and dbeta are\n"
               "not written. It takes a step's options, and makes a step's checks before\n"
               "timing; a step's text follows.\n"
               "\n");
    else if (is_copy3())
        printf("Part 3's bar, not a step: dx = x + dy on a rows x cols matrix of floats, the\n"
               "three streams of LayerNorm's backward pass (x and dy read, dx written) and\n"
               "nothing else; its bytes are those three. dx must equal the float x + dy bit\n"
               "for bit, on every fill; dgamma and dbeta are not written. It takes a step's\n"
               "options, and makes a step's checks before timing; a step's text follows.\n"
               "\n");
    if (is_softmax())
        printf("Runs this step's softmax backward pass on a rows x cols matrix of %s: dx =\n"
               "y * (dy - sum(dy * y)) over each row, from the forward pass's output y and dy.\n"
               "Checks every dx against a CPU reference in double (a masked y, 0, must give\n"
               "dx = 0 exactly), checks that dx comes out with the same bits every run, and\n"
               "times it. A timed run first checks the exact fill at the shape, one column\n"
               "fewer, y and dy, then dx, one element further into a 16-byte pack, and the\n"
               "shifted and tiny fills.\n", elems_name());
    if (is_softmax() && is_bf16())
        printf("bfloat16: y and dy are made as for float, then rounded to bfloat16 (the\n"
               "reference sees those values); every sum stays float and dx is rounded once.\n"
               "On the exact fill dx must be the bfloat16 rounding of the exact dx, bit for\n"
               "bit; elsewhere the float bound plus that rounding.\n");
    if (is_softmax())
        printf(
               "\n"
               "  --rows R        rows, 1 .. 2^31-1 (default 32768)\n"
               "  --cols C        elements per row, 1 .. 2^20 (default 1024)\n"
               "  --reps R        timed repetitions, median reported (default 20)\n"
               "  --warmup W      untimed repetitions first (default 3)\n"
               "  --seed S        input seed (default 1)\n"
               "  --fill F        random: y the softmax of 4 x uniform logits, one in 8 masked\n"
               "                  (y = 0) and every 16th row fully; dy uniform in [-1,1)\n"
               "                  (the default for timed runs)\n"
               "                  exact: y in {0, 1, 2, 4} x 2^-10, dy integers: dx is exact,\n"
               "                  and must equal the reference (the default for --check)\n"
               "                  shifted: dy = 2000 + uniform   tiny: dy uniform x 1e-3\n"
               "  --offset K      start y and dy K %s (0..%d) past a 16-byte boundary\n"
               "  --y-offset K    the same for dx\n", elems_name(), is_bf16() ? 7 : 3);
    else
        printf("Runs this step's LayerNorm backward pass on a rows x cols matrix of %s: dx\n"
               "(rows x cols), dgamma and dbeta (cols) from x, dy, gamma and the forward pass's\n"
               "mean and rstd. Checks every output against a CPU reference in double, checks\n"
               "that dx, dgamma and dbeta come out with the same bits every run, and times it.\n"
               "A timed run first checks the exact fill at the shape, one column fewer, x and\n"
               "dy, then dx, one %s further into a 16-byte pack, and the shifted and tiny\n"
               "fills.\n", elems_name(), is_bf16() ? "bfloat16" : "float");
    if (is_ln_bf16())
        printf("bfloat16: x, dy and dx; gamma, mean, rstd, dgamma and dbeta stay float. x, dy\n"
               "and gamma are made as for float, x and dy rounded to bfloat16, and mean and\n"
               "rstd then taken from the rounded x (the exact fill is bfloat16 already).\n"
               "Every sum stays float and dx is rounded once: on the exact fill dx must be\n"
               "the bfloat16 rounding of the exact dx, bit for bit (either neighbour only\n"
               "where a float kernel's few roundings reach a midpoint); elsewhere the float\n"
               "bound plus that rounding. dgamma and dbeta are checked as for float.\n");
    if (!is_softmax())
        printf("\n"
               "  --rows R        rows, 1 .. 2^31-1 (default 32768)\n"
               "  --cols C        elements per row, 1 .. 2^20 (default 1024)\n"
               "  --reps R        timed repetitions, median reported (default 20)\n"
               "  --warmup W      untimed repetitions first (default 3)\n"
               "  --seed S        input seed (default 1)\n"
               "  --fill F        random: x uniform in [-1,1), dy too, gamma too, mean and rstd\n"
               "                  as the forward pass saves them (the default for timed runs)\n"
               "                  exact: integer inputs on which every sum is exact in float:\n"
               "                  dgamma and dbeta must equal the reference, dx is held to a\n"
               "                  few roundings (the default for --check; 26 x rows +\n"
               "                  10 x cols must stay under 2^24)\n"
               "                  shifted: x = 2000 + uniform   tiny: x and dy uniform x 1e-3\n"
               "  --offset K      start x and dy K %s (0..%d) past a 16-byte boundary\n"
               "  --y-offset K    the same for dx\n"
               "  --gamma-offset K  the same for gamma, dgamma and dbeta%s\n",
               elems_name(), is_bf16() ? 7 : 3, is_bf16() ? ", in floats (0..3)" : "");
    printf(           "  --csv FILE      append one result row to FILE (header if the file is new)\n"
           "  --check         verify one run, then the determinism check (three runs of the\n"
           "                  random fill at this shape, compared bit for bit); no timing\n"
           "  --no-verify     a timed run skips its checks (its own runs are still verified)\n"
           "  --same-input    accepted; every timed run gets the same input in this draft\n"
           "  --checks FILE   run many checks in this process, one line of options each\n"
           "  --runs FILE     the same for timed runs\n"
           "  --no-flush      do not flush the L2 cache before each repetition\n"
           "  --device D      CUDA device index (default 0)\n"
           "  --gpu-info      print the device's name, SMs, threads per SM and memory\n"
           "  --version       print the step, the hash of its code and build, the revision\n"
           "  -h, --help      this text\n"
           "\n"
           "exit status: 0 verified, 1 wrong result, 2 usage error, 3 device error\n");
}

static void *host_alloc(size_t count, size_t size)
{
    void *p = malloc(count * size + 1);
    if (p == NULL) {
        fprintf(stderr, "error: out of host memory for %zu values\n", count);
        exit(EXIT_DEVICE);
    }
    return p;
}

/* The device side of one problem: every array between NaN guards, and the
 * program's workspace (its two parts, each between guards too). */
struct buffers {
    struct guarded x, dy, gamma, mean, rstd, dx, dgamma, dbeta, zeroed, scratch;
    /* bfloat16 (is_bf16()): x (y) and dy, and dx, hold two elements to a
     * guarded float; 1 where the offset is odd: the half-float pad first */
    size_t x_skip, dx_skip;
};

static size_t floats_for(size_t bytes)
{
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

/* count elements of the program's type, lead elements past an aligned
 * address (--offset, --y-offset): floats as they are; bfloat16s two to a
 * guarded float, as part 2's driver lays them out (common/rows_driver.c),
 * where an odd lead or end leaves a half-float pad inside the guards,
 * poisoned with them (0xFFFF, a bfloat16 NaN) and checked by pads_intact(). */
static void elems_alloc(struct guarded *g, size_t lead, size_t count)
{
    if (is_bf16())
        guarded_alloc(g, lead / 2, (lead % 2 + count + 1) / 2);
    else
        guarded_alloc(g, lead, count);
}

static void *elems_at(const struct guarded *g, size_t skip)
{
    return is_bf16() ? (void *)((uint16_t *)g->data + skip) : (void *)g->data;
}

/* bfloat16: the pads before and after count elements still read 0xFFFF. */
static int pads_intact(const struct guarded *g, size_t skip, size_t count)
{
    uint16_t pad;
    if (!is_bf16())
        return 1;
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

/* The workspace is allocated once, outside any timed run: its zeroed part
 * set to 0 here and never again (the program leaves it at 0), its scratch
 * part filled with NaN before every run (buffers_poison_outputs). */
static void buffers_alloc(struct buffers *b, const struct options *o)
{
    b->x_skip = is_bf16() ? (size_t)o->offset % 2 : 0;
    b->dx_skip = is_bf16() ? (size_t)o->y_offset % 2 : 0;
    elems_alloc(&b->x, (size_t)o->offset, o->n);
    elems_alloc(&b->dy, (size_t)o->offset, o->n);
    elems_alloc(&b->dx, (size_t)o->y_offset, o->n);
    size_t params = param_count(o->cols), stats = param_count(o->cols) ? o->rows : 0;
    guarded_alloc(&b->gamma, (size_t)o->gamma_offset, params);
    guarded_alloc(&b->dgamma, (size_t)o->gamma_offset, params);
    guarded_alloc(&b->dbeta, (size_t)o->gamma_offset, params);
    guarded_alloc(&b->mean, 0, stats);
    guarded_alloc(&b->rstd, 0, stats);
    struct back_problem shape = {.rows = o->rows, .cols = o->cols};
    struct workspace_size size = back_workspace(&shape);
    guarded_alloc(&b->zeroed, 0, floats_for(size.zeroed));
    guarded_alloc(&b->scratch, 0, floats_for(size.scratch));
    const struct guarded *all[] = {&b->x, &b->dy, &b->gamma, &b->mean, &b->rstd, &b->dx,
                                   &b->dgamma, &b->dbeta, &b->zeroed, &b->scratch};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        guarded_poison(all[k]);
    CHECK_CUDA(cudaMemset(b->zeroed.data, 0, b->zeroed.count * sizeof(float)));
}

/* The problem's view of the workspace: NULL for a part of no bytes. */
static struct workspace work_of(const struct buffers *b)
{
    struct workspace w = {b->zeroed.count ? b->zeroed.data : NULL,
                          b->scratch.count ? b->scratch.data : NULL};
    return w;
}

static void buffers_free(struct buffers *b)
{
    struct guarded *all[] = {&b->x, &b->dy, &b->gamma, &b->mean, &b->rstd, &b->dx,
                             &b->dgamma, &b->dbeta, &b->zeroed, &b->scratch};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        guarded_free(all[k]);
}

static int buffers_guards_intact(const struct buffers *b, size_t n)
{
    const struct guarded *all[] = {&b->x, &b->dy, &b->gamma, &b->mean, &b->rstd, &b->dx,
                                   &b->dgamma, &b->dbeta, &b->zeroed, &b->scratch};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        if (!guards_intact(all[k]))
            return 0;
    return pads_intact(&b->x, b->x_skip, n) && pads_intact(&b->dy, b->x_skip, n) &&
           pads_intact(&b->dx, b->dx_skip, n);
}

/* After every run: the workspace's zeroed part must read 0 again (a ticket
 * left at its count would give the next run's last block to the wrong one). */
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

/* Before every run: the outputs and the scratch to NaN, so an output no
 * thread wrote fails (a step zeroes dgamma and dbeta itself, if it adds
 * into them), and so does a read of scratch that this run did not write
 * first (a partial sum kept from the run before). */
static void buffers_poison_outputs(const struct buffers *b)
{
    guarded_poison(&b->dx);
    guarded_poison(&b->dgamma);
    guarded_poison(&b->dbeta);
    guarded_poison(&b->scratch);
}

/* The inputs, on the host (softmax: y where x is, and no gamma, mean or
 * rstd to upload). */
struct inputs {
    float *x, *dy, *gamma, *mean, *rstd;
};

/* n elements of the program's type from the host's floats (bfloat16: each
 * already a bfloat16's value, back_round_bf16, so exactly converted). */
static void elems_upload(const struct guarded *g, size_t skip, const float *v, size_t n)
{
    if (!is_bf16()) {
        CHECK_CUDA(cudaMemcpy(g->data, v, n * sizeof(float), cudaMemcpyHostToDevice));
        return;
    }
    uint16_t *h = host_alloc(n, sizeof *h);
    for (size_t k = 0; k < n; k++)
        h[k] = bf16_from_float(v[k]);
    CHECK_CUDA(cudaMemcpy(elems_at(g, skip), h, n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
}

/* n elements back into floats (bfloat16 -> float is exact). */
static void elems_fetch(float *v, const struct guarded *g, size_t skip, size_t n)
{
    if (!is_bf16()) {
        CHECK_CUDA(cudaMemcpy(v, g->data, n * sizeof(float), cudaMemcpyDeviceToHost));
        return;
    }
    uint16_t *h = host_alloc(n, sizeof *h);
    CHECK_CUDA(cudaMemcpy(h, elems_at(g, skip), n * sizeof *h, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < n; k++)
        v[k] = bf16_to_float(h[k]);
    free(h);
}

static void inputs_upload(const struct buffers *b, const struct inputs *in, size_t n,
                          size_t rows, size_t cols)
{
    elems_upload(&b->x, b->x_skip, in->x, n);
    elems_upload(&b->dy, b->x_skip, in->dy, n);
    if (!param_count(cols))
        return;
    CHECK_CUDA(cudaMemcpy(b->gamma.data, in->gamma, cols * sizeof(float),
                          cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b->mean.data, in->mean, rows * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b->rstd.data, in->rstd, rows * sizeof(float), cudaMemcpyHostToDevice));
}

/* The op's fill (back_fill, softmax_back_fill): 0, or -1 as they return.
 * bfloat16: y and dy then rounded, so that the reference sees what the
 * kernel reads. */
static int inputs_fill(const struct inputs *in, size_t rows, size_t cols, enum fill_kind fill,
                       uint64_t seed)
{
    if (is_ln_bf16())   /* rounds x and dy itself, before the saved statistics */
        return back_fill_bf16(rows, cols, fill, seed, in->x, in->dy, in->gamma, in->mean,
                              in->rstd);
    int rc = is_softmax() ? softmax_back_fill(rows, cols, fill, seed, in->x, in->dy)
             : back_fill(rows, cols, fill, seed, in->x, in->dy, in->gamma, in->mean, in->rstd);
    if (rc == 0 && is_bf16()) {
        back_round_bf16(in->x, rows * cols);
        back_round_bf16(in->dy, rows * cols);
    }
    return rc;
}

/* 1 if the op's exact fill takes rows x cols. */
static int exact_fits(size_t rows, size_t cols)
{
    return is_softmax() ? softmax_back_exact_fits(rows, cols) : back_exact_fits(rows, cols);
}

/* The outputs of one run, on the host. */
struct outputs {
    float *dx, *dgamma, *dbeta;
};

static void outputs_alloc(struct outputs *h, size_t n, size_t cols)
{
    h->dx = host_alloc(n, sizeof(float));
    h->dgamma = host_alloc(cols, sizeof(float));
    h->dbeta = host_alloc(cols, sizeof(float));
}

static void outputs_free(struct outputs *h)
{
    free(h->dx);
    free(h->dgamma);
    free(h->dbeta);
}

static void outputs_fetch(struct outputs *h, const struct buffers *b, size_t n, size_t cols)
{
    elems_fetch(h->dx, &b->dx, b->dx_skip, n);
    CHECK_CUDA(cudaMemcpy(h->dgamma, b->dgamma.data, param_count(cols) * sizeof(float),
                          cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h->dbeta, b->dbeta.data, param_count(cols) * sizeof(float),
                          cudaMemcpyDeviceToHost));
}

/* Every output of one run against the op's reference (back_check,
 * softmax_back_check, back_copy3_check), into v; exits on a host out of
 * memory. */
static void outputs_check(const struct inputs *in, const struct outputs *out, size_t rows,
                          size_t cols, int exact, struct back_verdict *v)
{
    int rc = 0;
    if (is_copy3() && is_bf16())
        back_copy3_check_bf16(rows, cols, in->x, in->dy, out->dx, v);
    else if (is_copy3())
        back_copy3_check(rows, cols, in->x, in->dy, out->dx, v);
    else if (is_softmax() && is_bf16())
        rc = softmax_back_check_bf16(rows, cols, exact, in->x, in->dy, out->dx, v);
    else if (is_softmax())
        rc = softmax_back_check(rows, cols, exact, in->x, in->dy, out->dx, v);
    else if (is_bf16())
        rc = back_check_bf16(rows, cols, exact, in->x, in->dy, in->gamma, in->mean, in->rstd,
                             out->dx, out->dgamma, out->dbeta, v);
    else
        rc = back_check(rows, cols, exact, in->x, in->dy, in->gamma, in->mean, in->rstd, out->dx,
                        out->dgamma, out->dbeta, v);
    if (rc != 0) {
        fprintf(stderr, "error: out of host memory for the reference\n");
        exit(EXIT_DEVICE);
    }
}

/* Where two runs' outputs first differ bit for bit: what ("dgamma", "dbeta"
 * or "dx", in that order: the column sums are where an order shows), the
 * index, and both values. 0 when they are the same. */
struct difference {
    const char *what;
    long long at;
    float a, b;
};

static int outputs_differ(const struct outputs *a, const struct outputs *b, size_t n,
                          size_t cols, struct difference *d)
{
    const float *as[3] = {a->dgamma, a->dbeta, a->dx}, *bs[3] = {b->dgamma, b->dbeta, b->dx};
    const char *names[3] = {"dgamma", "dbeta", "dx"};
    size_t counts[3] = {param_count(cols), param_count(cols), n};
    for (int k = 0; k < 3; k++) {
        long long at = back_first_difference(as[k], bs[k], counts[k]);
        if (at >= 0) {
            d->what = names[k];
            d->at = at;
            d->a = as[k][at];
            d->b = bs[k][at];
            return 1;
        }
    }
    return 0;
}

/* One untimed run: outputs poisoned first; guards and the zeroed part of
 * the workspace checked after. */
static void run_untimed(const struct buffers *b, const struct back_problem *p, int *guards_ok,
                        int *zeroed_ok)
{
    buffers_poison_outputs(b);
    back_run(p);
    CHECK_CUDA(cudaDeviceSynchronize());
    *guards_ok &= buffers_guards_intact(b, p->rows * p->cols);
    *zeroed_ok &= buffers_zeroed_clean(b);
}

/* The determinism check of --check: DET_RUNS runs of the random fill at
 * this shape (where the order of the adds shows in the low bits; on the
 * exact fill every order gives the same bits), each compared bit for bit
 * with the first. The first is checked against the reference too (into
 * v): runs that agree bit for bit may all be wrong the same way (NaN read
 * from scratch that no one wrote this run). Returns the run that differed
 * (2 ...), or 0. */
static int determinism_check(const struct buffers *b, const struct back_problem *p,
                             const struct options *o, struct inputs *in, struct outputs *first,
                             struct outputs *again, int *guards_ok, int *zeroed_ok,
                             struct difference *d, struct back_verdict *v)
{
    if (inputs_fill(in, o->rows, o->cols, FILL_RANDOM, o->seed) != 0) {
        fprintf(stderr, "error: the random fill failed\n");
        exit(EXIT_WRONG);
    }
    inputs_upload(b, in, o->n, o->rows, o->cols);
    for (int r = 1; r <= DET_RUNS; r++) {
        run_untimed(b, p, guards_ok, zeroed_ok);
        outputs_fetch(r == 1 ? first : again, b, o->n, o->cols);
        if (r == 1)
            outputs_check(in, first, o->rows, o->cols, 0, v);
        if (r > 1 && outputs_differ(first, again, o->n, o->cols, d))
            return r;
    }
    return 0;
}

/* "dx[row 3, col 7]" or "dgamma[col 7]". */
static void output_name(char *out, size_t len, const char *what, size_t row, size_t col)
{
    if (strcmp(what, "dx") == 0)
        snprintf(out, len, "dx[row %zu, col %zu]", row, col);
    else
        snprintf(out, len, "%s[col %zu]", what, col);
}

/* det: --check's determinism check after the values' (the timed runs'
 * checks before timing leave it to the timed runs, which compare their
 * first and last outputs). */
static int run_one(const struct options *opt, const struct context *c, int quiet, int det,
                   char *why, size_t why_len)
{
    struct options o = *opt;
    const struct gpu_info *g = &c->gpu;
    size_t rows = o.rows, cols = o.cols, n = o.n;
    int reps = o.check_only ? 1 : o.reps;
    int runs = o.check_only ? 1 : o.warmup + o.reps;

    struct inputs in = {host_alloc(n, sizeof(float)), host_alloc(n, sizeof(float)),
                        host_alloc(cols, sizeof(float)), host_alloc(rows, sizeof(float)),
                        host_alloc(rows, sizeof(float))};
    struct outputs first, last;
    outputs_alloc(&first, n, cols);
    outputs_alloc(&last, n, cols);
    double *times = host_alloc((size_t)reps, sizeof(double));
    if (inputs_fill(&in, rows, cols, o.fill, o.seed) != 0) {
        /* The parser and back_options_check() let it through: a harness bug, not the user's. */
        fprintf(stderr, "error: --fill %s cannot fill --rows %zu --cols %zu\n", fill_name(o.fill),
                rows, cols);
        exit(EXIT_WRONG);
    }
    int exact = o.fill == FILL_EXACT;
    char fill[64];
    row_fill_name(&o, fill, sizeof fill);

    struct buffers b;
    buffers_alloc(&b, &o);
    inputs_upload(&b, &in, n, rows, cols);
    struct back_problem p = {
        .x = b.x.data, .dy = b.dy.data, .gamma = b.gamma.data, .mean = b.mean.data,
        .rstd = b.rstd.data, .dx = b.dx.data, .dgamma = b.dgamma.data, .dbeta = b.dbeta.data,
        .rows = rows, .cols = cols, .work = work_of(&b),
    };
    if (is_softmax()) {   /* y where x was; nothing of LayerNorm's */
        p.y = p.x;
        p.x = p.gamma = p.mean = p.rstd = NULL;
        p.dgamma = p.dbeta = NULL;
    }
    if (is_bf16()) {   /* bfloat16 pointers only: a float kernel here fails at once */
        if (is_ln_bf16())
            p.x_bf16 = elems_at(&b.x, b.x_skip);
        else
            p.y_bf16 = elems_at(&b.x, b.x_skip);
        p.dy_bf16 = elems_at(&b.dy, b.x_skip);
        p.dx_bf16 = elems_at(&b.dx, b.dx_skip);
        p.x = p.y = p.dy = NULL;
        p.dx = NULL;
    }

    struct flusher flush;
    flusher_init(&flush, g, o.flush && !o.check_only);
    struct timer timer;
    timer_init(&timer);

    /* The timed loop: warm-up runs first; the first timed run is checked
     * whole, and the last must give the same bits again. */
    int guards_ok = 1, zeroed_ok = 1;
    for (int r = 0; r < runs; r++) {
        int k = r - (runs - reps);   /* index among the timed runs; < 0: warm-up */
        buffers_poison_outputs(&b);
        flusher_run(&flush);
        timer_start(&timer);
        back_run(&p);
        double us = timer_stop_us(&timer);
        guards_ok = guards_ok && buffers_guards_intact(&b, n);
        zeroed_ok = zeroed_ok && buffers_zeroed_clean(&b);
        if (k < 0)
            continue;
        times[k] = us;
        if (k == 0)
            outputs_fetch(&first, &b, n, cols);
        if (k == reps - 1 && reps > 1)
            outputs_fetch(&last, &b, n, cols);
    }
    struct back_verdict v;
    outputs_check(&in, &first, rows, cols, exact, &v);

    /* Same bits every run: the timed runs' first and last, or --check's own
     * runs of the random fill. */
    struct difference d = {NULL, -1, 0.0f, 0.0f};
    struct back_verdict v_det = {0};
    int differ_run = 0, det_runs = 0;
    if (!o.check_only && reps > 1) {
        det_runs = reps;
        differ_run = outputs_differ(&first, &last, n, cols, &d) ? reps : 0;
    } else if (o.check_only && det) {
        det_runs = DET_RUNS;
        differ_run = determinism_check(&b, &p, &o, &in, &first, &last, &guards_ok, &zeroed_ok,
                                       &d, &v_det);
    }
    /* Wrong values in the random fill's run, where the exact fill's were
     * right: those are the ones to report. */
    int det_wrong = v.bad == 0 && v_det.bad > 0;
    if (det_wrong)
        v = v_det;
    int pass = guards_ok && zeroed_ok && v.bad == 0 && differ_run == 0;

    char where[96], verdict[512] = "PASS", det_line[320] = "";
    output_name(where, sizeof where, v.what, v.row, v.col);
    if (det_wrong)
        snprintf(det_line, sizeof det_line, "FAIL: run 1 of the random fill is wrong (below), "
                 "where the %s fill's run was right", fill);
    else if (det_runs > 0 && differ_run == 0)
        snprintf(det_line, sizeof det_line, "PASS: %s the same bits in %d runs (%s)",
                 param_count(cols) ? "dx, dgamma and dbeta" : "dx", det_runs,
                 o.check_only ? "the random fill" : "the timed runs' first and "
                 "last");
    else if (det_runs > 0)
        snprintf(det_line, sizeof det_line, "FAIL: %s[%lld] was %.9g in %s and %.9g in %s",
                 d.what, d.at, d.a, o.check_only ? "run 1" : "timed run 1", d.b,
                 o.check_only ? (differ_run == 2 ? "run 2" : "run 3") : "the last timed run");
    if (!guards_ok)
        snprintf(verdict, sizeof verdict,
                 "FAIL: a kernel wrote outside its buffers (a NaN guard around them was overwritten)");
    else if (!zeroed_ok)
        snprintf(verdict, sizeof verdict,
                 "FAIL: a run left its workspace's counters non-zero (the next run needs them at 0)");
    else if (v.bad > 0)
        snprintf(verdict, sizeof verdict, "FAIL: %s is %.9g, not %.9g (tolerance %.3g%s); %zu of "
                 "the outputs are wrong%s", where, v.got, v.want, v.tol,
                 v.tol == 0.0 ? ": exact" : "", v.bad,
                 isnan(v.got) ? " (NaN: an output nothing wrote, or a read outside the input)" : "");
    else if (differ_run)
        snprintf(verdict, sizeof verdict, "FAIL: every output is within its bound, but not the "
                 "same bits every run (%s[%lld] moved): the sums' order changes from run to run "
                 "(atomics, or a race)", d.what, d.at);
    if (why != NULL)
        snprintf(why, why_len, "%s", verdict);

    struct stats s = {0.0, 0.0, 0.0};
    double bytes = is_ln_bf16() ? back_bf16_bytes(rows, cols)
                   : is_bf16() ? softmax_back_bf16_bytes(rows, cols)   /* softmax and its bar */
                   : is_copy3() ? back_copy3_bytes(rows, cols)
                   : is_softmax() ? softmax_back_bytes(rows, cols) : back_bytes(rows, cols);
    double gbps = 0.0;
    if (!o.check_only) {
        s = compute_stats(times, reps);
        gbps = bytes / (s.median * 1e3);
        if (pass && above_peak(gbps, g->peak_gbps, flush.buf != NULL)) {
            pass = 0;
            snprintf(verdict, sizeof verdict,
                     "FAIL: %.0f GB/s is above the device's theoretical peak of %.0f GB/s, with "
                     "the L2 flushed: no run that reads its input is that fast", gbps,
                     g->peak_gbps);
            if (why != NULL)
                snprintf(why, why_len, "%s", verdict);
        }
    }
    if (!quiet) {
        printf("rows = %zu, cols = %zu (%.1f MiB of %s), %s, fill %s, seed %llu, offset %d", rows,
               cols, n * (double)elem_bytes() / 1048576.0, is_softmax() ? "y" : "x", op_name(), fill, (unsigned long long)o.seed,
               o.offset);
        if (o.y_offset || o.gamma_offset)
            printf(" (dx %d, gamma %d)", o.y_offset, o.gamma_offset);
        printf("\n");
        if (!o.check_only) {
            printf("time     median %.2f us   min %.2f   max %.2f   (%d warm-up, %d timed, L2 %s)\n",
                   s.median, s.min, s.max, o.warmup, o.reps, o.flush ? "flushed" : "not flushed");
            printf("speed    %.1f GB/s = %.1f%% of the %.0f GB/s peak (%.1f MB read and written)\n",
                   gbps, 100.0 * gbps / g->peak_gbps, g->peak_gbps, bytes / 1e6);
        }
        if (is_copy3())
            printf("result   %s\n", v.bad == 0 ? "dx = x + dy bit for bit in every element"
                   : "dx is not x + dy (see below)");
        else if (v.bad == 0)
            printf("result   every output within its bound%s; worst %s: %.9g, reference %.9g, "
                   "|error| %.3g = %.2f x its tolerance %.3g\n",
                   v.params_exact ? " (dgamma and dbeta exactly: the exact fill)" : "", where,
                   v.got, v.want, fabs(v.got - v.want), v.ratio, v.tol);
        else
            printf("result   %zu outputs outside their bounds; the first, %s: %.9g, reference "
                   "%.9g\n", v.bad, where, v.got, v.want);
        if (det_line[0])
            printf("determinism %s\n", det_line);
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
            .seed = o.seed, .distinct = differ_run ? 2 : 1, .rows = rows, .cols = cols,
            .op = op_name(), .bytes = bytes,
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
    free(in.x), free(in.dy), free(in.gamma), free(in.mean), free(in.rstd);
    outputs_free(&first);
    outputs_free(&last);
    free(times);
    return rc;
}

/* A run as the user asked for it; a timed run first makes verify_set()'s
 * checks (an exact fill that does not fit the shape becomes the random
 * fill), so that its PASS means that the values are right at that shape. */
static int run(const struct options *o, void *ctx)
{
    const struct context *c = ctx;
    char err[256];
    if (back_options_check(is_softmax(), o, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
    }
    if (!o->check_only && o->verify) {
        struct options checks[VERIFY_MAX];
        int count = verify_set(o, checks);
        for (int k = 0; k < count; k++) {
            char why[512], fill[64];
            if (checks[k].fill == FILL_EXACT && !exact_fits(checks[k].rows, checks[k].cols))
                checks[k].fill = FILL_RANDOM;
            if (run_one(&checks[k], c, 1, 0, why, sizeof why) != EXIT_VERIFIED) {
                row_fill_name(&checks[k], fill, sizeof fill);
                printf("check    --rows %zu --cols %zu --offset %d --y-offset %d --fill %s: %s\n",
                       checks[k].rows, checks[k].cols, checks[k].offset, checks[k].y_offset,
                       fill, why);
                printf("FAIL: a check before timing failed\n");
                return EXIT_WRONG;
            }
        }
        printf("check    PASS: %d checks: the %s fill at this shape%s, with %s and then "
               "dx moved in their pack; the shifted and tiny fills\n", count,
               exact_fits(o->rows, o->cols) ? "exact" : "random",
               o->cols > 1 ? " and one column fewer" : "", inputs_name());
    }
    return run_one(o, c, 0, 1, NULL, 0);
}

int main(int argc, char **argv)
{
    /* Before any option: a program this driver cannot run does not run. */
    if (step_dtype != BACK_F32 && step_dtype != BACK_BF16) {
        fprintf(stderr, "error: this driver runs float and bfloat16 backward passes only "
                        "(step_op %d, step_dtype %d)\n", (int)step_op, (int)step_dtype);
        return EXIT_WRONG;
    }
    const struct program back = is_ln_bf16() ? back_program_ln_bf16()
                                : is_bf16() ? back_program_bf16(is_softmax())
                                : back_program_of(is_softmax());
    struct options o;
    struct context c;
    char err[256];
    /* device.c names part 2's programs "rows/<dir>" and any other "<dir>":
     * part 3's are "back/<dir>", so that no results row can take one of
     * them for a part 1 step (step0_thread beside step0_naive). */
    char dir[200];
    program_name(argv[0], dir, sizeof dir);
    snprintf(c.name, sizeof c.name, "back/%s", dir);
    switch (parse_options(argc, argv, &back, &o, err, sizeof err)) {
    case PARSE_HELP:
        back_usage(argv[0]);
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
        printf("op=%s\ndtype=%s\npack=%d\nmax_cols=%zu\nmax_n=%zu\ndeterministic=%d\n", op_name(),
               is_bf16() ? "bf16" : "f32", back.pack, ROWS_MAX_COLS, ROWS_MAX_N,
               step_deterministic ? 1 : 0);
        return EXIT_VERIFIED;
    case PARSE_OK:
        break;
    }
    if (back_options_check(is_softmax(), &o, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
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
