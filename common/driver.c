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

extern const char reduce_git_rev[];    /* build/version.c, written by make */
extern const char reduce_code_hash[];  /* build/hash/<program>.c: tools/code_hash.py */

#define FLUSH_L2_MULTIPLE 4   /* read 4x the L2 size: nothing of the input survives */
#define POISON_BYTE 0xFF      /* 0xFFFFFFFF is a NaN: an unwritten result can never pass */
/* NaN floats before and after every buffer a kernel reads or writes. A
 * read just past either end brings a NaN into the sum, and a write there
 * is seen when the guard is checked after the run. 64 floats = 256 bytes,
 * so the input's alignment (and --offset's meaning) is unchanged. */
#define GUARD_FLOATS 64

/* A device buffer with NaN guards: data = base + GUARD_FLOATS + lead. */
struct guarded {
    float *base;
    float *data;
    size_t lead;    /* floats between the front guard and data (--offset) */
    size_t count;   /* floats of data */
};

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
 * .../baseline_cub/run -> "cub"; a demo build beside it names itself:
 * .../step9_singlepass/run-atomic -> "step9_singlepass-atomic".
 * /proc/self/exe sees through the step3 -> step3_idle link that make creates. */
static void step_name(const char *argv0, char *out, size_t len)
{
    char path[4096];
    ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
    if (k > 0)
        path[k] = '\0';
    else
        snprintf(path, sizeof path, "%s", argv0);
    char file[4096];
    snprintf(file, sizeof file, "%s", basename(path));
    const char *dir = basename(dirname(path));
    if (strncmp(dir, "baseline_", 9) == 0)
        dir += 9;
    if (strncmp(file, "run-", 4) == 0)
        snprintf(out, len, "%.120s-%.120s", dir, file + 4);   /* names are short; bound them */
    else
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
    /* Without the driver's library the runtime reports "driver version is
     * insufficient", which sends people looking for an upgrade: say what
     * is really missing. */
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (libcuda == NULL) {
        fprintf(stderr, "error: no CUDA device: the NVIDIA driver is not installed "
                        "(libcuda.so.1 not found)\n");
        exit(EXIT_DEVICE);
    }
    dlclose(libcuda);
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

static void guarded_alloc(struct guarded *b, size_t lead, size_t count)
{
    size_t total = GUARD_FLOATS + lead + count + GUARD_FLOATS;
    CHECK_CUDA(cudaMalloc((void **)&b->base, total * sizeof(float)));
    b->lead = lead;
    b->count = count;
    b->data = b->base + GUARD_FLOATS + lead;
}

/* Every byte of the buffer, guards included, to the NaN pattern. */
static void guarded_poison(const struct guarded *b)
{
    size_t total = GUARD_FLOATS + b->lead + b->count + GUARD_FLOATS;
    CHECK_CUDA(cudaMemset(b->base, POISON_BYTE, total * sizeof(float)));
}

/* 1 if both guards (and the --offset floats) still hold the poison. */
static int guards_intact(const struct guarded *b)
{
    unsigned char front[(GUARD_FLOATS + REDUCE_MAX_OFFSET) * sizeof(float)];
    unsigned char back[GUARD_FLOATS * sizeof(float)];
    size_t front_bytes = (GUARD_FLOATS + b->lead) * sizeof(float);
    CHECK_CUDA(cudaMemcpy(front, b->base, front_bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(back, b->data + b->count, sizeof back, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < front_bytes; k++)
        if (front[k] != POISON_BYTE)
            return 0;
    for (size_t k = 0; k < sizeof back; k++)
        if (back[k] != POISON_BYTE)
            return 0;
    return 1;
}

/* One run of the options (a check, or warm-up and timed repetitions):
 * input, reference, passes, verification, the report and the CSV row.
 * Returns EXIT_VERIFIED, EXIT_WRONG, or EXIT_USAGE if the row cannot be
 * written; CUDA errors exit with EXIT_DEVICE. */
static int run(const struct options *opt, const struct gpu_info *gpu, const char *step)
{
    struct options o = *opt;
    struct gpu_info g = *gpu;
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
    size_t one = onehot_index(o.n, o.seed, o.at_given, o.at);
    fill_input(h_in, o.n, o.fill, o.seed, one);
    struct reference ref = reference_sum(h_in, o.n);
    double tol = tolerance(o.n, ref);
    float cpu_seq = 0.0f, cpu_kahan = 0.0f;
    if (o.cpu_sums) {
        cpu_seq = sum_sequential(h_in, o.n);
        cpu_kahan = sum_kahan(h_in, o.n);
    }

    /* Device buffers, each between NaN guards: the input (offset to test
     * misaligned starts) and the two partial-sum buffers. */
    struct guarded in, a, b;
    size_t m1, m2;
    guarded_alloc(&in, (size_t)o.offset, o.n);
    guarded_poison(&in);
    CHECK_CUDA(cudaMemcpy(in.data, h_in, o.n * sizeof(float), cudaMemcpyHostToDevice));
    m1 = reduce_pass(in.data, NULL, o.n);
    check_pass_count(o.n, m1);
    m2 = (m1 > 1) ? reduce_pass(NULL, NULL, m1) : 1;
    check_pass_count(m1, m2);
    guarded_alloc(&a, 0, m1);
    guarded_alloc(&b, 0, m2);

    /* The flush buffer, only when something is timed. */
    float *d_sink = NULL;
    void *d_flush = NULL;
    size_t flush_bytes = (size_t)FLUSH_L2_MULTIPLE * g.l2_bytes;
    int flush = o.flush && !o.check_only;
    if (flush) {
        CHECK_CUDA(cudaMalloc(&d_flush, flush_bytes));
        CHECK_CUDA(cudaMalloc((void **)&d_sink, sizeof(float)));
        CHECK_CUDA(cudaMemset(d_flush, 0, flush_bytes));
    }

    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));

    int guards_ok = 1;
    for (int r = 0; r < runs; r++) {
        guarded_poison(&a);
        guarded_poison(&b);
        if (flush)
            l2_flush(d_flush, flush_bytes, d_sink);
        CHECK_CUDA(cudaEventRecord(start, 0));
        float *d_result = run_reduction(in.data, o.n, a.data, b.data);
        CHECK_CUDA(cudaEventRecord(stop, 0));
        CHECK_CUDA(cudaEventSynchronize(stop));
        guards_ok = guards_ok && guards_intact(&in) && guards_intact(&a) && guards_intact(&b);
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
    int distinct = count_distinct(results, reps);
    int bad = -1;
    for (int k = 0; k < reps && bad < 0; k++)
        if (!within_tolerance(results[k], ref.sum, tol) ||
            memcmp(&results[k], &results[0], sizeof(float)) != 0)
            bad = k;
    int pass = (bad < 0) && guards_ok;
    float result = (bad < 0) ? results[0] : results[bad];
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
    if (ref.exact)
        printf("result   %.9g   reference %.9g   |error| %.3g   tolerance 0 (integers, sum|x| < 2^24: "
               "float adds are exact)\n", result, ref.sum, abs_err);
    else
        printf("result   %.9g   reference %.9g   |error| %.3g   tolerance %.3g\n", result,
               ref.sum, abs_err, tol);
    if (o.cpu_sums)
        printf("cpu      float loop %.9g   Kahan loop %.9g\n", cpu_seq, cpu_kahan);
    if (pass)
        printf("PASS\n");
    else if (!guards_ok)
        printf("FAIL: a kernel wrote outside its buffers (a NaN guard around them was overwritten)\n");
    else if (!within_tolerance(results[bad], ref.sum, tol)) {
        const char *why = isnan(result) ? "NaN: an unwritten output or a read outside the input"
                                        : "not the reference";
        if (o.check_only)
            printf("FAIL: the run gave %.9g, %s\n", result, why);
        else
            printf("FAIL: timed run %d gave %.9g, %s\n", bad + 1, result, why);
    } else {
        printf("FAIL: timed run %d gave %.9g but run 1 gave %.9g (%d different sums in %d runs): "
               "a race?\n", bad + 1, result, results[0], distinct, reps);
    }

    if (o.csv_path != NULL) {
        struct result_row row = {
            .step = step, .timed = !o.check_only, .n = o.n, .reps = reps,
            .warmup = o.check_only ? 0 : o.warmup, .us = s,
            .gbps = gbps, .pct_peak = 100.0 * gbps / g.peak_gbps, .result = result,
            .reference = ref.sum, .abs_err = abs_err, .tol = tol, .pass = pass,
            .gpu = g.name, .cc = g.cc, .driver = g.driver, .cuda = g.cuda,
            .peak_gbps = g.peak_gbps, .l2_mb = g.l2_bytes / 1e6, .sms = g.sms,
            .flush = flush, .offset = o.offset, .fill = fill_name(o.fill), .seed = o.seed,
            .git_rev = reduce_git_rev, .distinct = distinct, .code_hash = reduce_code_hash,
            .sum_abs = ref.sum_abs, .has_cpu_sums = o.cpu_sums, .cpu_seq = cpu_seq,
            .cpu_kahan = cpu_kahan,
        };
        if (csv_append_row(o.csv_path, &row) != 0) {
            fprintf(stderr, "error: cannot write %s\n", o.csv_path);
            return EXIT_USAGE;
        }
    }

    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    CHECK_CUDA(cudaFree(in.base));
    CHECK_CUDA(cudaFree(a.base));
    CHECK_CUDA(cudaFree(b.base));
    CHECK_CUDA(cudaFree(d_flush));
    CHECK_CUDA(cudaFree(d_sink));
    free(h_in);
    free(times);
    free(results);
    return pass ? EXIT_VERIFIED : EXIT_WRONG;
}

/* --checks FILE: each line holds the options of one check ("-n 1000 --fill
 * exact --offset 3"); all run in this one process, each reported after a
 * line "== check <its options>". One CUDA context for many checks: the
 * grader's hundreds of small checks would otherwise spend their time
 * starting processes. Returns the worst exit code of the checks. */
static int run_checks(const struct options *base, const struct gpu_info *g,
                      const char *step, char *prog)
{
    FILE *f = strcmp(base->checks_path, "-") == 0 ? stdin : fopen(base->checks_path, "r");
    if (f == NULL) {
        fprintf(stderr, "error: --checks %s: cannot read this file\n", base->checks_path);
        return EXIT_USAGE;
    }
    char line[1024], copy[1024], err[256];
    int worst = EXIT_VERIFIED, number = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        number++;
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(copy, sizeof copy, "%s", line);
        char *argv[64] = {prog, "--check"};
        int argc = 2;
        for (char *t = strtok(copy, " \t"); t != NULL && argc < 63; t = strtok(NULL, " \t"))
            argv[argc++] = t;
        if (argc == 2 || argv[2][0] == '#')
            continue;   /* blank or comment */
        argv[argc] = NULL;
        struct options o;
        if (parse_options(argc, argv, &o, err, sizeof err) != PARSE_OK || o.checks_path != NULL) {
            fprintf(stderr, "error: --checks %s line %d: %s\n", base->checks_path, number,
                    o.checks_path != NULL ? "--checks cannot nest" : err);
            worst = EXIT_USAGE;
            break;
        }
        o.device = base->device;
        o.csv_path = base->csv_path;
        o.cpu_sums = o.cpu_sums || base->cpu_sums;
        printf("== check %s\n", line);
        int rc = run(&o, g, step);
        fflush(stdout);
        if (rc > worst)
            worst = rc;
        if (rc == EXIT_USAGE)
            break;
    }
    if (f != stdin)
        fclose(f);
    return worst;
}

int main(int argc, char **argv)
{
    struct options o;
    char err[256], step[256];
    step_name(argv[0], step, sizeof step);
    switch (parse_options(argc, argv, &o, err, sizeof err)) {
    case PARSE_HELP:
        print_usage(argv[0]);
        return EXIT_VERIFIED;
    case PARSE_VERSION:
        printf("%s code_hash=%s git_rev=%s\n", step, reduce_code_hash, reduce_git_rev);
        return EXIT_VERIFIED;
    case PARSE_ERROR:
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
    case PARSE_OK:
        break;
    }
    /* A CSV that cannot be written is a usage error: say so before the run,
     * not after it, where its exit code would hide the run's verdict. */
    if (o.csv_path != NULL && csv_check_writable(o.csv_path) != 0) {
        fprintf(stderr, "error: --csv %s: cannot write this file\n", o.csv_path);
        return EXIT_USAGE;
    }
    struct gpu_info g;
    open_device(o.device, &g);
    return o.checks_path != NULL ? run_checks(&o, &g, step, argv[0]) : run(&o, &g, step);
}
