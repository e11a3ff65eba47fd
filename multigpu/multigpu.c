/* multigpu.c: main() of multigpu/run. The sum of n floats split across
 * GPUs: each GPU sums its shard with step 9's reduce_pass(), then NCCL (or
 * the host) adds the per-GPU sums. With --vector: NCCL's all-reduce of a
 * float vector, the collective a data-parallel training step runs on its
 * gradients. Shards and options are in plan.c; the device, the flush, the
 * input and the reference are the shared harness's (common/). */
#define _POSIX_C_SOURCE 200809L   /* fsync, nanosleep, clock_gettime */
#include "check.h"
#include "device.h"
#include "harness.h"
#include "plan.h"
#include "reduce.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>

/* NCCL's own message, and its last detailed one where it has one, in the
 * harness's one-line form; an NCCL failure is a device error (exit 3). */
static void check_nccl(ncclResult_t r, const char *what, const char *file, int line)
{
    if (r == ncclSuccess)
        return;
    const char *last = ncclGetLastError(NULL);
    fprintf(stderr, "error: %s: NCCL: %s%s%s (%s:%d)\n", what, ncclGetErrorString(r),
            (last != NULL && *last != '\0') ? ": " : "", last != NULL ? last : "", file, line);
    exit(EXIT_DEVICE);
}
#define CHECK_NCCL(call) check_nccl((call), #call, __FILE__, __LINE__)

/* Steps that need no workspace do not define it (step 9 does). */
__attribute__((weak)) struct workspace_size reduce_workspace(size_t n)
{
    (void)n;
    struct workspace_size none = {0, 0};
    return none;
}

/* One GPU this process drives. Step 9 launches on the legacy default
 * stream; NCCL runs on its own stream, which waits for the kernel through
 * an event (`ready`): without that wait NCCL could read the partial sum
 * before the kernel wrote it. */
struct gpu {
    int dev;
    struct gpu_info info;
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t start, ready, stop;
    struct flusher flush;
    float *h_part;          /* pinned: where --combine host copies the partial */
    double *d_agree;        /* per-process mode: times and verdicts shared by all ranks */
    /* per size */
    struct shard shard;
    double part_ref, part_tol;   /* the CPU's sum of the shard, and its tolerance */
    float *in, *out;        /* out[0]: this GPU's partial sum, out[1]: the total */
    struct workspace work;
};

struct run {
    const struct mg_options *o;
    int ngpu;               /* GPUs this process drives */
    int world, rank;        /* ranks in the communicator; rank of this process's first GPU */
    int per_process;
    struct gpu g[MG_MAX_GPUS];
    char nccl[32];
    const char *launch;
};

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "error: out of host memory for %zu bytes\n", bytes);
        exit(EXIT_DEVICE);
    }
    return p;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Rank 0 writes the id to a temporary file and renames it into place: a
 * rename is atomic, so a reader sees no file or a whole one, never half. */
static void share_id(const struct mg_options *o, ncclUniqueId *id)
{
    if (o->rank == 0) {
        CHECK_NCCL(ncclGetUniqueId(id));
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o->id_file, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        int ok = f != NULL && fwrite(id, sizeof *id, 1, f) == 1 && fflush(f) == 0 &&
                 fsync(fileno(f)) == 0;
        if (f != NULL && fclose(f) != 0)
            ok = 0;
        if (!ok || rename(tmp, o->id_file) != 0) {
            fprintf(stderr, "error: --id-file %s: cannot write it: %s\n", o->id_file,
                    strerror(errno));
            remove(tmp);
            exit(EXIT_DEVICE);
        }
        return;
    }
    double deadline = now_s() + o->wait_s;
    for (;;) {
        FILE *f = fopen(o->id_file, "rb");
        if (f != NULL) {
            size_t got = fread(id, 1, sizeof *id, f);
            fclose(f);
            if (got == sizeof *id)
                return;
        }
        if (now_s() > deadline) {
            fprintf(stderr, "error: rank %d: no NCCL id in --id-file %s after %d s: is rank 0 "
                            "running, with the same --id-file and --world?\n",
                    o->rank, o->id_file, o->wait_s);
            exit(EXIT_DEVICE);
        }
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

static void gpu_init(struct gpu *g, int dev, int flush)
{
    g->dev = dev;
    open_device(dev, &g->info);   /* also makes it the current device */
    CHECK_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&g->start));
    CHECK_CUDA(cudaEventCreateWithFlags(&g->ready, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreate(&g->stop));
    flusher_init(&g->flush, &g->info, flush);
    CHECK_CUDA(cudaMallocHost((void **)&g->h_part, sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&g->d_agree, 2 * sizeof(double)));
    CHECK_CUDA(cudaMemset(g->d_agree, 0, 2 * sizeof(double)));
}

/* Opens the GPUs and the communicator for either launch mode. */
static void run_init(struct run *R, const struct mg_options *o)
{
    R->o = o;
    R->per_process = o->world > 0;
    struct gpu_info first;
    open_device(0, &first);   /* no driver or no GPU: one line, exit 3 */
    int visible = 0;
    CHECK_CUDA(cudaGetDeviceCount(&visible));
    int v = 0;
    CHECK_NCCL(ncclGetVersion(&v));
    /* Since NCCL 2.9 the code is major * 10000 + minor * 100 + patch. */
    snprintf(R->nccl, sizeof R->nccl, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);

    if (R->per_process) {
        R->ngpu = 1;
        R->world = o->world;
        R->rank = o->rank;
        R->launch = "per-process";
        gpu_init(&R->g[0], o->rank % visible, o->flush && !o->check_only);
        ncclUniqueId id;
        share_id(o, &id);
        CHECK_CUDA(cudaSetDevice(R->g[0].dev));
        CHECK_NCCL(ncclCommInitRank(&R->g[0].comm, o->world, id, o->rank));
        /* Every rank has joined, so every rank has read the id: tidy up. */
        if (o->rank == 0)
            remove(o->id_file);
    } else {
        if (o->gpus > visible) {
            fprintf(stderr, "error: --gpus %d: only %d GPU(s) visible\n", o->gpus, visible);
            exit(EXIT_USAGE);
        }
        R->ngpu = o->gpus ? o->gpus : visible;
        if (R->ngpu > MG_MAX_GPUS)
            R->ngpu = MG_MAX_GPUS;
        R->world = R->ngpu;
        R->rank = 0;
        R->launch = "single";
        int devs[MG_MAX_GPUS];
        ncclComm_t comms[MG_MAX_GPUS];
        for (int d = 0; d < R->ngpu; d++) {
            devs[d] = d;
            gpu_init(&R->g[d], d, o->flush && !o->check_only);
        }
        CHECK_NCCL(ncclCommInitAll(comms, R->ngpu, devs));
        for (int d = 0; d < R->ngpu; d++)
            R->g[d].comm = comms[d];
    }
}

/* Per-process mode: every rank gets the maximum (times) or minimum
 * (verdicts) over all ranks, element by element, through NCCL itself. */
static void agree(struct run *R, double *v, int count, ncclRedOp_t op)
{
    if (!R->per_process || count <= 0)
        return;
    struct gpu *g = &R->g[0];
    double *d;
    CHECK_CUDA(cudaSetDevice(g->dev));
    CHECK_CUDA(cudaMalloc((void **)&d, count * sizeof(double)));
    CHECK_CUDA(cudaMemcpy(d, v, count * sizeof(double), cudaMemcpyHostToDevice));
    CHECK_NCCL(ncclAllReduce(d, d, count, ncclDouble, op, g->comm, g->stream));
    CHECK_CUDA(cudaStreamSynchronize(g->stream));
    CHECK_CUDA(cudaMemcpy(v, d, count * sizeof(double), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d));
}

/* Every GPU idle, then a common start. One process: the host has waited for
 * all of them, so a start event recorded on each now is the same moment to
 * within the launch latency. One process per GPU: a one-float all-reduce is
 * the barrier, and each start is recorded on its completion. */
static void common_start(struct run *R)
{
    for (int d = 0; d < R->ngpu; d++) {
        CHECK_CUDA(cudaSetDevice(R->g[d].dev));
        CHECK_CUDA(cudaDeviceSynchronize());
    }
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        if (R->per_process)
            CHECK_NCCL(ncclAllReduce(g->d_agree, g->d_agree, 1, ncclDouble, ncclSum, g->comm,
                                     g->stream));
        CHECK_CUDA(cudaEventRecord(g->start, g->stream));
    }
}

/* The slowest GPU's interval from the common start to its stop event. */
static double slowest_us(struct run *R)
{
    double worst = 0.0;
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        CHECK_CUDA(cudaEventSynchronize(g->stop));
        float ms;
        CHECK_CUDA(cudaEventElapsedTime(&ms, g->start, g->stop));
        if (ms * 1e3 > worst)
            worst = ms * 1e3;
    }
    return worst;
}

/* One launch of step 9 over n floats into out[0]. Step 9 is one pass; a
 * step that needs more is not what this driver was built for. */
static void sum_on_device(const float *in, float *out, size_t n, struct workspace work)
{
    size_t m = reduce_pass(in, out, n, work);
    if (m != 1) {
        fprintf(stderr, "error: reduce_pass(n = %zu) returned %zu: multigpu/run links a "
                        "single-pass step (step 9), which returns 1\n", n, m);
        exit(EXIT_WRONG);
    }
}

static void work_alloc(struct workspace *w, size_t n)
{
    struct workspace_size size = reduce_workspace(n);
    w->zeroed = w->scratch = NULL;
    if (size.zeroed) {
        CHECK_CUDA(cudaMalloc(&w->zeroed, size.zeroed));
        CHECK_CUDA(cudaMemset(w->zeroed, 0, size.zeroed));
    }
    if (size.scratch)
        CHECK_CUDA(cudaMalloc(&w->scratch, size.scratch));
}

static void work_free(struct workspace *w)
{
    CHECK_CUDA(cudaFree(w->zeroed));
    CHECK_CUDA(cudaFree(w->scratch));
}

/* A CSV field: quoted when it holds a comma or a quote. */
static void csv_str(FILE *f, const char *s, int last)
{
    if (strpbrk(s, ",\"") != NULL) {
        fputc('"', f);
        for (const char *p = s; *p; p++) {
            if (*p == '"')
                fputc('"', f);
            fputc(*p, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static FILE *csv_open(const char *path, const char *header)
{
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        fprintf(stderr, "error: --csv %s: cannot write this file\n", path);
        exit(EXIT_USAGE);
    }
    if (ftell(f) == 0)
        fprintf(f, "%s\n", header);
    return f;
}

static void csv_build(FILE *f, const struct run *R)
{
    const struct gpu_info *g = &R->g[0].info;
    csv_str(f, g->name, 0);
    csv_str(f, g->cc, 0);
    csv_str(f, g->driver, 0);
    csv_str(f, g->cuda, 0);
    csv_str(f, R->nccl, 0);
    csv_str(f, reduce_git_rev, 0);
    csv_str(f, reduce_code_hash, 0);
    csv_str(f, build_arch(), 0);
    csv_str(f, build_toolchain(), 1);
}

/* ------------------------------------------------------------ the sum */

struct timing {
    int timed;
    struct stats us;
};

/* One GPU (this process's first) summing all n: the baseline. */
static struct timing one_gpu(struct run *R, const float *h, size_t n, struct reference ref,
                             double tol, int *ok)
{
    const struct mg_options *o = R->o;
    struct gpu *g = &R->g[0];
    struct timing t = {0, {0, 0, 0}};
    CHECK_CUDA(cudaSetDevice(g->dev));
    float *in, *out;
    struct workspace work;
    CHECK_CUDA(cudaMalloc((void **)&in, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&out, sizeof(float)));
    CHECK_CUDA(cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    work_alloc(&work, n);
    int runs = o->warmup + o->reps;
    double *times = host_alloc(o->reps * sizeof *times);
    for (int r = 0; r < runs; r++) {
        CHECK_CUDA(cudaMemset(out, 0xFF, sizeof(float)));   /* NaN until written */
        flusher_run(&g->flush);
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaEventRecord(g->start, 0));
        sum_on_device(in, out, n, work);
        CHECK_CUDA(cudaEventRecord(g->stop, 0));
        CHECK_CUDA(cudaEventSynchronize(g->stop));
        float ms, v;
        CHECK_CUDA(cudaEventElapsedTime(&ms, g->start, g->stop));
        CHECK_CUDA(cudaMemcpy(&v, out, sizeof v, cudaMemcpyDeviceToHost));
        if (!within_tolerance(v, ref.sum, tol))
            *ok = 0;
        if (r >= o->warmup)
            times[r - o->warmup] = ms * 1e3;
    }
    t.timed = 1;
    t.us = compute_stats(times, o->reps);
    free(times);
    work_free(&work);
    CHECK_CUDA(cudaFree(in));
    CHECK_CUDA(cudaFree(out));
    return t;
}

/* One repetition of one combine: flush, common start, every shard summed,
 * the sums combined. Returns the slowest GPU's time; *total is the result
 * this process holds (NaN where it holds none: a non-root rank of reduce). */
static double one_sum(struct run *R, enum combine c, float *total)
{
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        CHECK_CUDA(cudaMemset(g->out, 0xFF, 2 * sizeof(float)));   /* NaN until written */
        flusher_run(&g->flush);
    }
    common_start(R);
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        /* The kernel waits for the start (it is on another stream). */
        CHECK_CUDA(cudaStreamWaitEvent(0, g->start, 0));
        if (g->shard.count > 0)
            sum_on_device(g->in, g->out, g->shard.count, g->work);
        else   /* an empty shard adds 0; step 9 launches no grid of 0 blocks */
            CHECK_CUDA(cudaMemsetAsync(g->out, 0, sizeof(float), 0));
        CHECK_CUDA(cudaEventRecord(g->ready, 0));
        CHECK_CUDA(cudaStreamWaitEvent(g->stream, g->ready, 0));
    }
    if (c == COMBINE_HOST) {
        for (int d = 0; d < R->ngpu; d++) {
            struct gpu *g = &R->g[d];
            CHECK_CUDA(cudaSetDevice(g->dev));
            CHECK_CUDA(cudaMemcpyAsync(g->h_part, g->out, sizeof(float), cudaMemcpyDeviceToHost,
                                       g->stream));
        }
    } else {
        /* One process, several communicators: the calls must be one group,
         * or the first would wait forever for peers not yet called. */
        CHECK_NCCL(ncclGroupStart());
        for (int d = 0; d < R->ngpu; d++) {
            struct gpu *g = &R->g[d];
            CHECK_CUDA(cudaSetDevice(g->dev));
            if (c == COMBINE_ALLREDUCE)
                CHECK_NCCL(ncclAllReduce(g->out, g->out + 1, 1, ncclFloat, ncclSum, g->comm,
                                         g->stream));
            else
                CHECK_NCCL(ncclReduce(g->out, g->out + 1, 1, ncclFloat, ncclSum, 0, g->comm,
                                      g->stream));
        }
        CHECK_NCCL(ncclGroupEnd());
    }
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        CHECK_CUDA(cudaEventRecord(g->stop, g->stream));
    }
    double us = slowest_us(R);

    *total = NAN;
    if (c == COMBINE_HOST) {
        /* The host adds in GPU order: the same bits every run. Its few
         * nanoseconds are outside the events. */
        float s = 0.0f;
        for (int d = 0; d < R->ngpu; d++)
            s += *R->g[d].h_part;
        *total = s;
    } else {
        int held = 0, same = 1;
        for (int d = 0; d < R->ngpu; d++) {
            if (c == COMBINE_REDUCE && R->rank + d != 0)
                continue;   /* only the root's output is defined */
            float v;
            CHECK_CUDA(cudaSetDevice(R->g[d].dev));
            CHECK_CUDA(cudaMemcpy(&v, R->g[d].out + 1, sizeof v, cudaMemcpyDeviceToHost));
            /* All-reduce: every GPU must hold the same total, bit for bit. */
            if (held++ == 0)
                *total = v;
            else
                same &= memcmp(&v, total, sizeof v) == 0;
        }
        if (!same)
            *total = NAN;
    }
    return us;
}

/* Every shard's partial must match the CPU's sum of that shard. */
static int partials_ok(struct run *R)
{
    int ok = 1;
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        float v;
        CHECK_CUDA(cudaSetDevice(g->dev));
        CHECK_CUDA(cudaMemcpy(&v, g->out, sizeof v, cudaMemcpyDeviceToHost));
        ok &= within_tolerance(v, g->part_ref, g->part_tol);
    }
    return ok;
}

static int run_size(struct run *R, size_t n, FILE *csv)
{
    const struct mg_options *o = R->o;
    float *h = host_alloc(n * sizeof *h);
    size_t one = onehot_index(n, o->seed, 0, 0);
    fill_input(h, n, o->fill, o->seed, one);
    struct reference ref = reference_sum(h, n);
    double tol = tolerance(n, ref);
    int lead = R->rank == 0;   /* prints the table line and writes the row */

    int base_ok = 1;
    struct timing base = {0, {0, 0, 0}};
    if (!o->check_only && o->baseline && !R->per_process)
        base = one_gpu(R, h, n, ref, tol, &base_ok);

    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        g->shard = shard_of(n, R->world, R->rank + d);
        g->in = NULL;
        g->part_ref = g->part_tol = 0.0;
        if (g->shard.count > 0) {
            struct reference part = reference_sum(h + g->shard.first, g->shard.count);
            g->part_ref = part.sum;
            g->part_tol = tolerance(g->shard.count, part);
            CHECK_CUDA(cudaMalloc((void **)&g->in, g->shard.count * sizeof(float)));
            CHECK_CUDA(cudaMemcpy(g->in, h + g->shard.first, g->shard.count * sizeof(float),
                                  cudaMemcpyHostToDevice));
        }
        CHECK_CUDA(cudaMalloc((void **)&g->out, 2 * sizeof(float)));
        work_alloc(&g->work, g->shard.count > 0 ? g->shard.count : 1);
    }

    int worst = EXIT_VERIFIED;
    int reps = o->check_only ? 1 : o->reps;
    int runs = o->check_only ? 1 : o->warmup + o->reps;
    double *times = host_alloc((reps + 1) * sizeof *times);
    for (int k = 0; k < o->combines; k++) {
        enum combine c = (enum combine)o->combine[k];
        float first = NAN, total = NAN;
        int ok = 1;
        for (int r = 0; r < runs; r++) {
            double us = one_sum(R, c, &total);
            ok &= partials_ok(R);
            int holds = !(c == COMBINE_REDUCE && R->rank != 0);
            if (holds) {
                /* The total must match, and every repetition give the same bits. */
                ok &= within_tolerance(total, ref.sum, tol);
                if (r == 0)
                    first = total;
                else
                    ok &= memcmp(&first, &total, sizeof total) == 0;
            }
            if (r >= runs - reps)
                times[r - (runs - reps)] = us;
        }
        /* Per-process: each repetition's slowest rank, and every rank's verdict. */
        agree(R, times, reps, ncclMax);
        double verdict = ok && base_ok;
        agree(R, &verdict, 1, ncclMin);
        int pass = verdict == 1.0;
        struct stats s = compute_stats(times, reps);
        double speedup = base.timed ? base.us.median / s.median : 0.0;
        if (!pass)
            worst = EXIT_WRONG;
        if (lead) {
            printf("n=%zu gpus=%d launch=%s combine=%s", n, R->world, R->launch, combine_name(c));
            if (!o->check_only)
                printf(": median %.1f us [%.1f-%.1f]", s.median, s.min, s.max);
            if (base.timed)
                printf(", one GPU %.1f us, speed-up %.2fx", base.us.median, speedup);
            printf(", sum %.9g reference %.9g tol %g: %s\n", (double)first, ref.sum, tol,
                   pass ? "PASS" : "FAIL");
        } else {
            printf("rank %d: n=%zu combine=%s: %s\n", R->rank, n, combine_name(c),
                   pass ? "PASS" : "FAIL");
        }
        if (csv != NULL && lead) {
            fprintf(csv, "multigpu,nccl,%zu,%d,%s,%s,%d,%d,", n, R->world, R->launch,
                    combine_name(c), reps, o->check_only ? 0 : o->warmup);
            if (o->check_only)
                fprintf(csv, ",,,");
            else
                fprintf(csv, "%.3f,%.3f,%.3f,", s.median, s.min, s.max);
            if (base.timed)
                fprintf(csv, "%.3f,%.4f,", base.us.median, speedup);
            else
                fprintf(csv, ",,");
            if (o->check_only)
                fprintf(csv, ",");
            else
                fprintf(csv, "%.1f,", bandwidth_gbps(n, s.median));
            fprintf(csv, "%.9g,%.17g,%.9g,%g,%d,%s,%llu,%d,", (double)first, ref.sum,
                    fabs((double)first - ref.sum), tol, pass, fill_name(o->fill),
                    (unsigned long long)o->seed, o->flush && !o->check_only);
            csv_build(csv, R);
            fflush(csv);
        }
    }
    free(times);
    for (int d = 0; d < R->ngpu; d++) {
        struct gpu *g = &R->g[d];
        CHECK_CUDA(cudaSetDevice(g->dev));
        CHECK_CUDA(cudaFree(g->in));
        CHECK_CUDA(cudaFree(g->out));
        work_free(&g->work);
    }
    free(h);
    return worst;
}

/* ------------------------------------------------------ the vector sweep */

/* value everywhere in d[0..count): one float copied, then doubled. */
static void fill_value(float *d, size_t count, float value)
{
    CHECK_CUDA(cudaMemcpy(d, &value, sizeof value, cudaMemcpyHostToDevice));
    for (size_t k = 1; k < count; k *= 2) {
        size_t copy = (count - k < k) ? count - k : k;
        CHECK_CUDA(cudaMemcpy(d + k, d, copy * sizeof(float), cudaMemcpyDeviceToDevice));
    }
}

static int run_vector(struct run *R, FILE *csv)
{
    const struct mg_options *o = R->o;
    size_t max_count = o->max_bytes / sizeof(float);
    float *buf[MG_MAX_GPUS], *pristine[MG_MAX_GPUS];
    for (int d = 0; d < R->ngpu; d++) {
        CHECK_CUDA(cudaSetDevice(R->g[d].dev));
        CHECK_CUDA(cudaMalloc((void **)&buf[d], max_count * sizeof(float)));
        CHECK_CUDA(cudaMalloc((void **)&pristine[d], max_count * sizeof(float)));
        /* Rank r holds r + 1 everywhere, so the sum is w (w + 1) / 2: exact. */
        fill_value(pristine[d], max_count, (float)(R->rank + d + 1));
    }
    float want = (float)R->world * (R->world + 1) / 2.0f;
    float *h = host_alloc(max_count * sizeof *h);
    int reps = o->check_only ? 1 : o->reps;
    int runs = o->check_only ? 1 : o->warmup + o->reps;
    double *times = host_alloc(reps * sizeof *times);
    int worst = EXIT_VERIFIED;
    if (R->rank == 0)
        printf("%12s %12s %10s %10s %10s %12s %12s  %s\n", "bytes", "floats", "median_us",
               "min_us", "max_us", "algbw_GB/s", "busbw_GB/s", "check");
    for (size_t bytes = sizeof(float); bytes <= o->max_bytes; bytes *= 2) {
        size_t count = bytes / sizeof(float);
        for (int r = 0; r < runs; r++) {
            for (int d = 0; d < R->ngpu; d++) {
                struct gpu *g = &R->g[d];
                CHECK_CUDA(cudaSetDevice(g->dev));
                /* In place: the last repetition's output is this one's input. */
                CHECK_CUDA(cudaMemcpy(buf[d], pristine[d], bytes, cudaMemcpyDeviceToDevice));
                flusher_run(&g->flush);
            }
            common_start(R);
            CHECK_NCCL(ncclGroupStart());
            for (int d = 0; d < R->ngpu; d++) {
                struct gpu *g = &R->g[d];
                CHECK_CUDA(cudaSetDevice(g->dev));
                CHECK_NCCL(ncclAllReduce(buf[d], buf[d], count, ncclFloat, ncclSum, g->comm,
                                         g->stream));
            }
            CHECK_NCCL(ncclGroupEnd());
            for (int d = 0; d < R->ngpu; d++) {
                CHECK_CUDA(cudaSetDevice(R->g[d].dev));
                CHECK_CUDA(cudaEventRecord(R->g[d].stop, R->g[d].stream));
            }
            double us = slowest_us(R);
            if (r >= runs - reps)
                times[r - (runs - reps)] = us;
        }
        int ok = 1;
        for (int d = 0; d < R->ngpu; d++) {
            CHECK_CUDA(cudaSetDevice(R->g[d].dev));
            CHECK_CUDA(cudaMemcpy(h, buf[d], bytes, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < count; i++)
                ok &= h[i] == want;
        }
        agree(R, times, reps, ncclMax);
        double verdict = ok;
        agree(R, &verdict, 1, ncclMin);
        int pass = verdict == 1.0;
        if (!pass)
            worst = EXIT_WRONG;
        struct stats s = compute_stats(times, reps);
        double algbw = bytes / s.median / 1e3;   /* bytes per us / 1e3 = GB/s */
        double busbw = bus_bandwidth(algbw, R->world);
        if (R->rank == 0) {
            printf("%12zu %12zu %10.1f %10.1f %10.1f %12.2f %12.2f  %s\n", bytes, count,
                   s.median, s.min, s.max, algbw, busbw, pass ? "PASS" : "FAIL");
            if (csv != NULL) {
                fprintf(csv, "multigpu,nccl,%zu,%zu,%d,%s,%d,%d,", bytes, count, R->world,
                        R->launch, reps, o->check_only ? 0 : o->warmup);
                if (o->check_only)
                    fprintf(csv, ",,,,,");
                else
                    fprintf(csv, "%.3f,%.3f,%.3f,%.4f,%.4f,", s.median, s.min, s.max, algbw,
                            busbw);
                fprintf(csv, "%d,", pass);
                csv_build(csv, R);
                fflush(csv);
            }
        } else if (!pass) {
            printf("rank %d: %zu bytes: FAIL\n", R->rank, bytes);
        }
    }
    free(times);
    free(h);
    for (int d = 0; d < R->ngpu; d++) {
        CHECK_CUDA(cudaSetDevice(R->g[d].dev));
        CHECK_CUDA(cudaFree(buf[d]));
        CHECK_CUDA(cudaFree(pristine[d]));
    }
    return worst;
}

int main(int argc, char **argv)
{
    static struct mg_options o;
    static struct run R;
    char err[256];
    switch (mg_parse(argc, argv, &o, err, sizeof err)) {
    case PARSE_HELP:
        mg_usage(argv[0]);
        return EXIT_VERIFIED;
    case PARSE_VERSION:
        print_version("multigpu");
        return EXIT_VERIFIED;
    case PARSE_ERROR:
    case PARSE_GPU_INFO:
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
    case PARSE_OK:
        break;
    }
    int writes_csv = o.csv_path != NULL && (o.world == 0 || o.rank == 0);
    if (writes_csv && csv_check_writable(o.csv_path) != 0) {
        fprintf(stderr, "error: --csv %s: cannot write this file\n", o.csv_path);
        return EXIT_USAGE;
    }
    run_init(&R, &o);
    if (R.rank == 0)
        printf("multigpu on %d x %s (NCCL %s, %s launch, driver %s, CUDA %s)\n", R.world,
               R.g[0].info.name, R.nccl, R.launch, R.g[0].info.driver, R.g[0].info.cuda);
    FILE *csv = writes_csv ? csv_open(o.csv_path, o.vector ? MG_VECTOR_HEADER : MG_SUM_HEADER)
                           : NULL;
    int worst = EXIT_VERIFIED;
    if (o.vector) {
        worst = run_vector(&R, csv);
    } else {
        for (int k = 0; k < o.sizes; k++) {
            int rc = run_size(&R, o.n[k], csv);
            if (rc > worst)
                worst = rc;
        }
    }
    if (csv != NULL)
        fclose(csv);
    for (int d = 0; d < R.ngpu; d++) {
        CHECK_CUDA(cudaSetDevice(R.g[d].dev));
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_NCCL(ncclCommDestroy(R.g[d].comm));
    }
    return worst;
}
