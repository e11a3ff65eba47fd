/* driver.c: main() for every step program. It owns everything that is not
 * the optimization: options, input, the CPU reference, the pass loop down to
 * one float, timing, the L2 flush, verification and reporting. The step's
 * reduce.cu supplies reduce_pass() and nothing else. */
#define _GNU_SOURCE   /* readlink, dladdr-free dlopen */
#include "check.h"
#include "flush.h"
#include "harness.h"
#include "reduce.h"

#include <dlfcn.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char reduce_git_rev[];   /* build/version.c, written by make */

#define FLUSH_L2_MULTIPLE 4   /* read 4x the L2 size: nothing of the input survives */
#define POISON_BYTE 0xFF      /* 0xFFFFFFFF is a NaN: an unwritten result can never pass */

struct gpu_info {
    char name[256];
    char cc[16];
    char driver[96];
    char cuda[16];
    int sms;
    int l2_bytes;
    double peak_gbps;
};

/* The step's name is its directory: .../step3_idle/run -> "step3_idle",
 * .../baseline_cub/run -> "cub". /proc/self/exe sees through the
 * step3 -> step3_idle link that make creates. */
static void step_name(const char *argv0, char *out, size_t len)
{
    char path[4096];
    ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
    if (k > 0)
        path[k] = '\0';
    else
        snprintf(path, sizeof path, "%s", argv0);
    const char *dir = basename(dirname(path));
    if (strncmp(dir, "baseline_", 9) == 0)
        dir += 9;
    snprintf(out, len, "%s", dir);
}

/* The NVIDIA driver's version ("580.159.04") is only known to NVML, which
 * ships with the driver: load it at run time so the build needs no NVML. */
static void driver_version(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (nvml == NULL)
        return;
    /* ISO C has no cast from dlsym's void * to a function pointer; POSIX
     * sanctions writing the symbol through a void ** instead. */
    int (*init)(void), (*shutdown)(void), (*version)(char *, unsigned);
    *(void **)&init = dlsym(nvml, "nvmlInit_v2");
    *(void **)&version = dlsym(nvml, "nvmlSystemGetDriverVersion");
    *(void **)&shutdown = dlsym(nvml, "nvmlShutdown");
    char buf[96];
    if (init && version && shutdown && init() == 0) {
        if (version(buf, sizeof buf) == 0)
            snprintf(out, len, "%s", buf);
        shutdown();
    }
    dlclose(nvml);
}

static void open_device(int device, struct gpu_info *g)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "error: no CUDA device: %s\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "the driver reports none");
        exit(EXIT_DEVICE);
    }
    if (device >= count) {
        fprintf(stderr, "error: --device %d: there are only %d CUDA device(s)\n", device, count);
        exit(EXIT_USAGE);
    }
    CHECK_CUDA(cudaSetDevice(device));

    struct cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, device));
    snprintf(g->name, sizeof g->name, "%s", p.name);
    snprintf(g->cc, sizeof g->cc, "%d.%d", p.major, p.minor);

    /* CUDA 13 dropped memoryClockRate from cudaDeviceProp; the attribute
     * works on 12.x and 13.x. kHz, double data rate, bus width in bits. */
    int clock_khz = 0, bus_bits = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&g->l2_bytes, cudaDevAttrL2CacheSize, device));
    g->peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;

    int rt = 0;
    CHECK_CUDA(cudaRuntimeGetVersion(&rt));
    snprintf(g->cuda, sizeof g->cuda, "%d.%d", rt / 1000, (rt % 1000) / 10);
    driver_version(g->driver, sizeof g->driver);
}

/* A step that breaks the contract in reduce.h would loop forever or
 * overrun a buffer: stop it with a clear message instead. */
static void check_pass_count(size_t n, size_t m)
{
    if (m >= 1 && (m < n || n == 1) && !(n == 1 && m != 1))
        return;
    fprintf(stderr, "error: reduce_pass(n = %zu) returned %zu: a pass must return 1 <= m < n "
                    "(m = 1 when n = 1), see common/reduce.h\n", n, m);
    exit(EXIT_WRONG);
}

/* Passes until one float is left; returns the buffer that holds it.
 * Ping-pong: a holds pass 1's m1 sums, b pass 2's, a pass 3's (fewer), ... */
static float *run_reduction(const float *d_in, size_t n, float *d_a, float *d_b)
{
    const float *in = d_in;
    float *out = d_a;
    for (;;) {
        size_t m = reduce_pass(in, out, n);
        check_pass_count(n, m);
        if (m == 1)
            return out;
        in = out;
        out = (out == d_a) ? d_b : d_a;
        n = m;
    }
}

int main(int argc, char **argv)
{
    struct options o;
    char err[256];
    switch (parse_options(argc, argv, &o, err, sizeof err)) {
    case PARSE_HELP:
        print_usage(argv[0]);
        return EXIT_VERIFIED;
    case PARSE_ERROR:
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
    case PARSE_OK:
        break;
    }

    char step[256];
    step_name(argv[0], step, sizeof step);
    struct gpu_info g;
    open_device(o.device, &g);

    /* Input and reference, on the host. */
    float *h_in = malloc(o.n * sizeof *h_in);
    int reps = o.check_only ? 1 : o.reps;
    int runs = o.check_only ? 1 : o.warmup + o.reps;
    double *times = malloc(reps * sizeof *times);
    float *results = malloc(reps * sizeof *results);
    if (h_in == NULL || times == NULL || results == NULL) {
        fprintf(stderr, "error: out of host memory for %zu floats\n", o.n);
        return EXIT_DEVICE;
    }
    fill_input(h_in, o.n, o.fill, o.seed);
    struct reference ref = reference_sum(h_in, o.n);
    double tol = tolerance(o.n, ref.sum_abs);

    /* Device buffers: the input (offset to test misaligned starts), the two
     * partial-sum buffers, and the flush buffer. */
    float *d_base, *d_a, *d_b, *d_sink;
    void *d_flush;
    size_t m1, m2, flush_bytes = (size_t)FLUSH_L2_MULTIPLE * g.l2_bytes;
    CHECK_CUDA(cudaMalloc((void **)&d_base, (o.n + o.offset) * sizeof(float)));
    const float *d_in = d_base + o.offset;
    CHECK_CUDA(cudaMemcpy(d_base + o.offset, h_in, o.n * sizeof(float), cudaMemcpyHostToDevice));
    m1 = reduce_pass(d_in, NULL, o.n);
    check_pass_count(o.n, m1);
    m2 = (m1 > 1) ? reduce_pass(NULL, NULL, m1) : 1;
    check_pass_count(m1, m2);
    CHECK_CUDA(cudaMalloc((void **)&d_a, m1 * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_b, m2 * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_flush, flush_bytes));
    CHECK_CUDA(cudaMalloc((void **)&d_sink, sizeof(float)));
    CHECK_CUDA(cudaMemset(d_flush, 0, flush_bytes));

    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));

    for (int r = 0; r < runs; r++) {
        CHECK_CUDA(cudaMemset(d_a, POISON_BYTE, m1 * sizeof(float)));
        CHECK_CUDA(cudaMemset(d_b, POISON_BYTE, m2 * sizeof(float)));
        if (o.flush)
            l2_flush(d_flush, flush_bytes, d_sink);
        CHECK_CUDA(cudaEventRecord(start, 0));
        float *d_result = run_reduction(d_in, o.n, d_a, d_b);
        CHECK_CUDA(cudaEventRecord(stop, 0));
        CHECK_CUDA(cudaEventSynchronize(stop));
        int k = r - (runs - reps);   /* index among the timed runs */
        if (k < 0)
            continue;                /* warm-up */
        float ms;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        times[k] = ms * 1e3;
        CHECK_CUDA(cudaMemcpy(&results[k], d_result, sizeof(float), cudaMemcpyDeviceToHost));
    }

    /* Every timed run must give the same bits (a data race shows up as a
     * sum that moves) and that sum must match the reference. */
    int pass = 1, bad = -1;
    for (int k = 0; k < reps && bad < 0; k++)
        if (!within_tolerance(results[k], ref.sum, tol) ||
            memcmp(&results[k], &results[0], sizeof(float)) != 0)
            bad = k;
    pass = (bad < 0);
    float result = pass ? results[0] : results[bad];
    double abs_err = fabs((double)result - ref.sum);

    printf("%s on %s (cc %s, %d SMs, %.0f MB L2, peak %.0f GB/s)\n", step, g.name, g.cc,
           g.sms, g.l2_bytes / 1e6, g.peak_gbps);
    printf("n = %zu (%.1f MiB), fill %s, seed %llu, offset %d\n", o.n,
           o.n * sizeof(float) / 1048576.0, fill_name(o.fill), (unsigned long long)o.seed, o.offset);
    struct stats s = {0.0, 0.0, 0.0};
    double gbps = 0.0;
    if (!o.check_only) {
        s = compute_stats(times, reps);
        gbps = bandwidth_gbps(o.n, s.median);
        printf("time     median %.2f us   min %.2f   max %.2f   (%d warm-up, %d timed, L2 %s)\n",
               s.median, s.min, s.max, o.warmup, o.reps, o.flush ? "flushed" : "not flushed");
        printf("speed    %.1f GB/s = %.1f%% of the %.0f GB/s peak\n", gbps,
               100.0 * gbps / g.peak_gbps, g.peak_gbps);
    }
    printf("result   %.9g   reference %.9g   |error| %.3g   tolerance %.3g\n", result,
           ref.sum, abs_err, tol);
    if (pass)
        printf("PASS\n");
    else if (!within_tolerance(results[bad], ref.sum, tol))
        printf("FAIL: timed run %d gave %.9g, outside the tolerance\n", bad + 1, result);
    else
        printf("FAIL: timed run %d gave %.9g but run 1 gave %.9g: a race?\n", bad + 1, result,
               results[0]);

    if (o.csv_path != NULL && !o.check_only) {
        struct result_row row = {
            .step = step, .n = o.n, .reps = o.reps, .warmup = o.warmup, .us = s,
            .gbps = gbps, .pct_peak = 100.0 * gbps / g.peak_gbps, .result = result,
            .reference = ref.sum, .abs_err = abs_err, .tol = tol, .pass = pass,
            .gpu = g.name, .cc = g.cc, .driver = g.driver, .cuda = g.cuda,
            .peak_gbps = g.peak_gbps, .l2_mb = g.l2_bytes / 1e6, .sms = g.sms,
            .flush = o.flush, .offset = o.offset, .fill = fill_name(o.fill), .seed = o.seed,
            .git_rev = reduce_git_rev,
        };
        if (csv_append_row(o.csv_path, &row) != 0) {
            fprintf(stderr, "error: cannot write %s\n", o.csv_path);
            return EXIT_USAGE;
        }
    }

    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    CHECK_CUDA(cudaFree(d_base));
    CHECK_CUDA(cudaFree(d_a));
    CHECK_CUDA(cudaFree(d_b));
    CHECK_CUDA(cudaFree(d_flush));
    CHECK_CUDA(cudaFree(d_sink));
    free(h_in);
    free(times);
    free(results);
    return pass ? EXIT_VERIFIED : EXIT_WRONG;
}
