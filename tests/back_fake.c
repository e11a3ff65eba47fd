/* back_fake.c: common/back_driver.c run on the CPU, no GPU needed. It
 * stands in for the device half of the harness (common/device.h: the
 * device, guarded buffers, flush, timer, build) and the few CUDA calls the
 * driver makes, with host memory, and for a part 3 program with a back_run()
 * written in C. So tests/cli_tests.sh can see the driver's whole flow
 * (fills, checks, determinism, verdicts, exit codes, CSV) before any GPU
 * has run it. BACK_FAKE picks the program:
 *   ok      dx by rows, dgamma and dbeta in row order: deterministic
 *   atomic  dgamma and dbeta with the rows in another order every call, as
 *           step 0's atomics: within the bounds, not the same bits
 *   nm1     dx's means over N - 1 (the exact fill catches it)
 *   nan     the last dx left unwritten (NaN from the harness's poison)
 *   guard   one float written past dx's end
 *   stale   dgamma and dbeta not zeroed: they add onto the harness's NaN
 * and, with a workspace (back_workspace(): a ticket in its zeroed part, one
 * partial row of dgamma and one of dbeta per FAKE_SLICE rows in its
 * scratch, as steps 2 and 3 use it):
 *   ws        writes every partial, then sums them in order: deterministic;
 *             first checks that the workspace is as back.h promises (the
 *             ticket 0, every scratch float NaN), else says so on stderr
 *             and leaves dgamma unwritten
 *   ws_stale  zeroes its partials on its first call only and adds onto them
 *             (as if the scratch were its own between calls)
 *   ws_ticket draws a ticket per slice and never puts the counter back to 0
 * Built with -DBACK_FAKE_COPY3 (build/back_fake_copy3), it is part 3's bar
 * instead, back/baseline_copy3's dx = x + dy (step_op BACK_COPY3), named
 * back/copy3, in the modes:
 *   ok      dx = x + dy
 *   ulp     one dx (the middle one) a float too large
 *   nan     the last dx left unwritten
 *   guard   one float written past dx's end
 * Built with -DBACK_FAKE_BF16 (build/back_fake_bf16), it is a bfloat16
 * softmax backward (step_op BACK_SOFTMAX, step_dtype BACK_BF16: y, dy and dx
 * bfloat16, s summed in float in row order, dx rounded once), named
 * back/fake_bf16, in the modes:
 *   ok      as said
 *   s16     s rounded to bfloat16 before dy - s (the random and shifted
 *           fills catch it)
 *   trunc   dx cut to bfloat16 (toward 0) instead of rounded to nearest
 *   mask    a masked y's dx (which must be exactly 0) written as 1e-30
 *   nan     the last dx left unwritten
 *   guard   one bfloat16 written past dx's end (a pad or a guard)
 * With both -DBACK_FAKE_COPY3 and -DBACK_FAKE_BF16 (build/back_fake_copy3_bf16)
 * it is the bfloat16 bar (back/baseline_copy3_bf16: dx = y + dy in bfloat16),
 * named back/copy3_bf16, in the copy's modes (ok, ulp, nan, guard).
 * With -DBACK_FAKE_LN_BF16 (build/back_fake_ln_bf16) it is a bfloat16
 * LayerNorm backward (step_dtype BACK_BF16: x, dy and dx bfloat16, the rest
 * float), named back/fake_ln_bf16: x and dy widened to float (exact), the
 * LayerNorm program above run on them in any of its modes, dx rounded once
 * to bfloat16; and in the modes:
 *   trunc   dx cut to bfloat16 (toward 0) instead of rounded to nearest
 *   dgamma  dgamma[0] a float too large (the exact fill holds it to the bit)
 *   guard   one bfloat16 written past dx's end (a pad or a guard)
 * Not linked into any program: build/back_fake and build/back_fake_copy3
 * are make test's alone, and so is the device half in
 * build/back_emu/<step>/run (each part 3 step on the CPU, tests/back_emu.h). */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include "back.h"
#include "back_ref.h"   /* bfloat16's conversions (BACK_FAKE_BF16) */
#include "check.h"
#include "device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POISON 0xFF   /* every byte: a float NaN, as device.c's */

/* ---- The CUDA calls back_driver.c makes itself. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)kind;
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *dst, int value, size_t count)
{
    memset(dst, value, count);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    return error == cudaSuccess ? "no error" : "fake error";
}

/* ---- common/device.h, on the host. */
const char reduce_code_hash[] = "000000000000";
const char reduce_git_rev[] = "fake";

const char *build_toolchain(void)
{
    return "fake";
}

const char *build_arch(void)
{
    return "cpu";
}

void program_name(const char *argv0, char *out, size_t len)
{
    (void)argv0;
#if defined(BACK_FAKE_COPY3) && defined(BACK_FAKE_BF16)
    snprintf(out, len, "copy3_bf16");
#elif defined(BACK_FAKE_COPY3)
    snprintf(out, len, "copy3");
#elif defined(BACK_FAKE_BF16)
    snprintf(out, len, "fake_bf16");
#elif defined(BACK_FAKE_LN_BF16)
    snprintf(out, len, "fake_ln_bf16");
#else
    snprintf(out, len, "fake");
#endif
}

void open_device(int device, struct gpu_info *g)
{
    if (device != 0) {
        fprintf(stderr, "error: --device %d: there are only 1 CUDA device(s)\n", device);
        exit(EXIT_USAGE);
    }
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "fake CPU device");
    snprintf(g->cc, sizeof g->cc, "0.0");
    snprintf(g->driver, sizeof g->driver, "fake");
    snprintf(g->cuda, sizeof g->cuda, "fake");
    g->sms = 1;
    g->sm_threads = 1;
    g->l2_bytes = 1 << 20;
    g->peak_gbps = 1e6;   /* no CPU run comes near it */
}

void print_gpu_info(const struct gpu_info *g)
{
    printf("name=%s\n", g->name);
}

void print_version(const char *name)
{
    printf("%s code_hash=%s git_rev=%s arch=%s toolchain=%s\n", name, reduce_code_hash,
           reduce_git_rev, build_arch(), build_toolchain());
}

void print_gpu_line(const char *name, const struct gpu_info *g)
{
    printf("%s on %s\n", name, g->name);
}

void row_set_build(struct result_row *row, const struct gpu_info *g)
{
    row->gpu = g->name;
    row->cc = g->cc;
    row->driver = g->driver;
    row->cuda = g->cuda;
    row->peak_gbps = g->peak_gbps;
    row->l2_mb = g->l2_bytes / 1e6;
    row->sms = g->sms;
    row->git_rev = reduce_git_rev;
    row->code_hash = reduce_code_hash;
    row->arch = build_arch();
    row->toolchain = build_toolchain();
}

void guarded_alloc(struct guarded *b, size_t lead, size_t count)
{
    size_t total = GUARD_FLOATS + lead + count + GUARD_FLOATS;
    b->base = malloc(total * sizeof(float));
    if (b->base == NULL) {
        fprintf(stderr, "error: out of device memory: fake\n");
        exit(EXIT_DEVICE);
    }
    b->lead = lead;
    b->count = count;
    b->data = b->base + GUARD_FLOATS + lead;
}

void guarded_poison(const struct guarded *b)
{
    memset(b->base, POISON, (GUARD_FLOATS + b->lead + b->count + GUARD_FLOATS) * sizeof(float));
}

int guards_intact(const struct guarded *b)
{
    const unsigned char *front = (const unsigned char *)b->base;
    const unsigned char *back = (const unsigned char *)(b->data + b->count);
    for (size_t k = 0; k < (GUARD_FLOATS + b->lead) * sizeof(float); k++)
        if (front[k] != POISON)
            return 0;
    for (size_t k = 0; k < GUARD_FLOATS * sizeof(float); k++)
        if (back[k] != POISON)
            return 0;
    return 1;
}

void guarded_free(struct guarded *b)
{
    free(b->base);
    b->base = b->data = NULL;
}

void flusher_init(struct flusher *f, const struct gpu_info *g, int enabled)
{
    (void)g;
    f->buf = enabled ? (void *)f : NULL;   /* "flushed", as far as the report goes */
    f->bytes = 0;
    f->sink = NULL;
}

void flusher_run(const struct flusher *f)
{
    (void)f;
}

void flusher_free(struct flusher *f)
{
    f->buf = NULL;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* cudaEvent_t is a pointer: the fake keeps its times in the struct's own
 * two slots, as numbers it never dereferences. */
static double timer_started;

void timer_init(struct timer *t)
{
    t->start = t->stop = NULL;
}

void timer_start(struct timer *t)
{
    (void)t;
    timer_started = now_us();
}

double timer_stop_us(struct timer *t)
{
    (void)t;
    return now_us() - timer_started + 1.0;   /* never 0: GB/s stays finite */
}

void timer_free(struct timer *t)
{
    (void)t;
}

/* ---- The program, left out with -DBACK_FAKE_DEVICE_ONLY (for a program of
 * its own). */
#ifndef BACK_FAKE_DEVICE_ONLY
#if defined(BACK_FAKE_COPY3) && defined(BACK_FAKE_BF16)
/* ---- The program: the bfloat16 bar, dx = y + dy added in float and
 * rounded once, in the mode BACK_FAKE names (ok, ulp: the middle dx a
 * bfloat16 too large, nan, guard), as the float copy's. */
const enum back_op step_op = BACK_COPY3;
const enum back_dtype step_dtype = BACK_BF16;

void back_run(const struct back_problem *p)
{
    const char *env = getenv("BACK_FAKE");
    const char *mode = env != NULL ? env : "ok";
    const uint16_t *y = p->y_bf16, *dy = p->dy_bf16;
    uint16_t *dx = p->dx_bf16;
    size_t n = p->rows * p->cols;
    for (size_t k = 0; k < n; k++)
        dx[k] = bf16_from_float(bf16_to_float(y[k]) + bf16_to_float(dy[k]));
    if (strcmp(mode, "ulp") == 0)
        dx[n / 2]++;   /* the next bfloat16 away from 0 */
    if (strcmp(mode, "nan") == 0)
        dx[n - 1] = 0xFFFFu;
    if (strcmp(mode, "guard") == 0)
        dx[n] = 0;
}
#elif defined(BACK_FAKE_COPY3)
/* ---- The program: part 3's copy, dx = x + dy, in the mode BACK_FAKE names. */
const enum back_op step_op = BACK_COPY3;

void back_run(const struct back_problem *p)
{
    const char *env = getenv("BACK_FAKE");
    const char *mode = env != NULL ? env : "ok";
    size_t n = p->rows * p->cols;
    for (size_t k = 0; k < n; k++)
        p->dx[k] = p->x[k] + p->dy[k];
    if (strcmp(mode, "ulp") == 0)
        p->dx[n / 2] = nextafterf(p->dx[n / 2], INFINITY);
    if (strcmp(mode, "nan") == 0)
        memset(&p->dx[n - 1], POISON, sizeof(float));
    if (strcmp(mode, "guard") == 0)
        p->dx[n] = 0.0f;
}
#elif defined(BACK_FAKE_BF16)
/* ---- The program: a bfloat16 softmax backward in C, in the mode BACK_FAKE
 * names. */
const enum back_op step_op = BACK_SOFTMAX;
const enum back_dtype step_dtype = BACK_BF16;

void back_run(const struct back_problem *p)
{
    const char *env = getenv("BACK_FAKE");
    const char *mode = env != NULL ? env : "ok";
    const uint16_t *y = p->y_bf16, *dy = p->dy_bf16;
    uint16_t *dx = p->dx_bf16;
    size_t rows = p->rows, cols = p->cols, n = rows * cols;
    for (size_t r = 0; r < rows; r++) {
        const uint16_t *yr = y + r * cols, *dyr = dy + r * cols;
        uint16_t *dxr = dx + r * cols;
        float s = 0.0f;
        for (size_t j = 0; j < cols; j++)
            s += bf16_to_float(dyr[j]) * bf16_to_float(yr[j]);
        if (strcmp(mode, "s16") == 0)
            s = bf16_to_float(bf16_from_float(s));
        for (size_t j = 0; j < cols; j++) {
            float yj = bf16_to_float(yr[j]), v = yj * (bf16_to_float(dyr[j]) - s);
            if (strcmp(mode, "mask") == 0 && yj == 0.0f)
                v = 1e-30f;
            if (strcmp(mode, "trunc") == 0) {
                uint32_t u;
                memcpy(&u, &v, sizeof u);
                dxr[j] = (uint16_t)(u >> 16);
            } else {
                dxr[j] = bf16_from_float(v);
            }
        }
    }
    if (strcmp(mode, "nan") == 0)
        dx[n - 1] = 0xFFFFu;   /* the poison: a bfloat16 NaN */
    if (strcmp(mode, "guard") == 0)
        dx[n] = 0;
}
#else
/* ---- The program: LayerNorm backward in C, in the mode BACK_FAKE names. */
const enum back_op step_op = BACK_LAYERNORM;
#ifdef BACK_FAKE_LN_BF16
const enum back_dtype step_dtype = BACK_BF16;
#endif

#define FAKE_SLICE 4   /* rows per partial row of the workspace modes */

static const char *fake_mode(void)
{
    const char *env = getenv("BACK_FAKE");
    return env != NULL ? env : "ok";
}

static int workspace_mode(const char *mode)
{
    return strncmp(mode, "ws", 2) == 0;
}

struct workspace_size back_workspace(const struct back_problem *p)
{
    struct workspace_size size = {0, 0};
    if (workspace_mode(fake_mode())) {
        size_t slices = (p->rows + FAKE_SLICE - 1) / FAKE_SLICE;
        size.zeroed = sizeof(unsigned int);
        size.scratch = 2 * slices * p->cols * sizeof(float);
    }
    return size;
}

/* dgamma and dbeta through the workspace: each slice's partial row, then
 * the partials summed down each column in slice order. */
static void columns_through_workspace(const struct back_problem *p, const char *mode)
{
    static unsigned ws_calls;
    size_t rows = p->rows, cols = p->cols, slices = (rows + FAKE_SLICE - 1) / FAKE_SLICE;
    unsigned int *ticket = p->work.zeroed;
    float *part_g = p->work.scratch, *part_b = part_g + slices * cols;
    if (ticket == NULL || part_g == NULL) {
        fprintf(stderr, "fake: asked for a workspace, got NULL\n");
        return;
    }
    int fresh = *ticket == 0;
    for (size_t k = 0; k < 2 * slices * cols; k++)
        fresh &= isnan(part_g[k]);
    if (strcmp(mode, "ws") == 0 && !fresh) {
        fprintf(stderr, "fake: the workspace was not as promised at the call (ticket 0, scratch "
                        "NaN)\n");
        return;
    }
    if (strcmp(mode, "ws_stale") == 0 && ws_calls++ == 0)
        for (size_t k = 0; k < 2 * slices * cols; k++)
            part_g[k] = 0.0f;
    for (size_t s = 0; s < slices; s++) {
        for (size_t c = 0; c < cols; c++) {
            float g = strcmp(mode, "ws_stale") == 0 ? part_g[s * cols + c] : 0.0f;
            float b = strcmp(mode, "ws_stale") == 0 ? part_b[s * cols + c] : 0.0f;
            for (size_t r = s * FAKE_SLICE; r < rows && r < (s + 1) * FAKE_SLICE; r++) {
                float dy = p->dy[r * cols + c];
                g += dy * ((p->x[r * cols + c] - p->mean[r]) * p->rstd[r]);
                b += dy;
            }
            part_g[s * cols + c] = g;
            part_b[s * cols + c] = b;
        }
        (*ticket)++;
    }
    for (size_t c = 0; c < cols; c++) {
        float g = 0.0f, b = 0.0f;
        for (size_t s = 0; s < slices; s++) {
            g += part_g[s * cols + c];
            b += part_b[s * cols + c];
        }
        p->dgamma[c] = g;
        p->dbeta[c] = b;
    }
    if (strcmp(mode, "ws_ticket") != 0)
        *ticket = 0;   /* the last slice puts the counter back for the next call */
}

/* LayerNorm backward on float x, dy and dx, in the mode BACK_FAKE names. */
static void ln_run(const struct back_problem *p)
{
    static unsigned calls;
    const char *mode = fake_mode();
    size_t rows = p->rows, cols = p->cols;
    float n = (float)(strcmp(mode, "nm1") == 0 && cols > 1 ? cols - 1 : cols);
    for (size_t r = 0; r < rows; r++) {
        const float *x = p->x + r * cols, *dy = p->dy + r * cols;
        float *dx = p->dx + r * cols, mean = p->mean[r], rstd = p->rstd[r];
        float s1 = 0.0f, s2 = 0.0f;
        for (size_t c = 0; c < cols; c++) {
            float g = dy[c] * p->gamma[c];
            s1 += g;
            s2 += g * ((x[c] - mean) * rstd);
        }
        float m1 = s1 / n, m2 = s2 / n;
        for (size_t c = 0; c < cols; c++)
            dx[c] = rstd * (dy[c] * p->gamma[c] - m1 - ((x[c] - mean) * rstd) * m2);
    }
    if (strcmp(mode, "nan") == 0)
        memset(&p->dx[rows * cols - 1], POISON, sizeof(float));
    if (strcmp(mode, "guard") == 0)
        p->dx[rows * cols] = 0.0f;
    if (workspace_mode(mode)) {
        columns_through_workspace(p, mode);
        return;
    }
    if (strcmp(mode, "stale") != 0)
        for (size_t c = 0; c < cols; c++)
            p->dgamma[c] = p->dbeta[c] = 0.0f;
    /* The rows' order down the columns: fixed, or (atomic) starting at
     * another row every call. */
    size_t first = strcmp(mode, "atomic") == 0 ? (size_t)(calls++ * 7919u) % rows : 0;
    for (size_t k = 0; k < rows; k++) {
        size_t r = (first + k) % rows;
        const float *x = p->x + r * cols, *dy = p->dy + r * cols;
        for (size_t c = 0; c < cols; c++) {
            p->dgamma[c] += dy[c] * ((x[c] - p->mean[r]) * p->rstd[r]);
            p->dbeta[c] += dy[c];
        }
    }
}

#ifdef BACK_FAKE_LN_BF16
/* bfloat16: ln_run on x and dy widened to float, dx rounded once (trunc:
 * cut) into dx_bf16; guard writes past dx_bf16, not past ln_run's copy. */
void back_run(const struct back_problem *p)
{
    const char *mode = fake_mode();
    size_t n = p->rows * p->cols;
    const uint16_t *x16 = p->x_bf16, *dy16 = p->dy_bf16;
    uint16_t *dx16 = p->dx_bf16;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy);
    float *dx = malloc((n + 1) * sizeof *dx);   /* ln_run's guard mode writes one past */
    if (x == NULL || dy == NULL || dx == NULL) {
        fprintf(stderr, "fake: out of host memory\n");
        exit(EXIT_DEVICE);
    }
    for (size_t k = 0; k < n; k++)
        x[k] = bf16_to_float(x16[k]), dy[k] = bf16_to_float(dy16[k]);
    struct back_problem f = *p;
    f.x = x, f.dy = dy, f.dx = dx;
    ln_run(&f);
    for (size_t k = 0; k < n; k++) {
        uint32_t u;
        memcpy(&u, &dx[k], sizeof u);
        dx16[k] = strcmp(mode, "trunc") == 0 ? (uint16_t)(u >> 16) : bf16_from_float(dx[k]);
    }
    if (strcmp(mode, "guard") == 0)
        dx16[n] = 0;
    if (strcmp(mode, "dgamma") == 0)
        p->dgamma[0] = nextafterf(p->dgamma[0], INFINITY);
    free(x), free(dy), free(dx);
}
#else
void back_run(const struct back_problem *p)
{
    ln_run(p);
}
#endif
#endif /* BACK_FAKE_COPY3 */
#endif /* BACK_FAKE_DEVICE_ONLY */
