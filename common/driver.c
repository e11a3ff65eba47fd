/* driver.c: main() for every part 1 step program. It owns everything that is
 * not the optimization: options, input, the CPU reference, the pass loop down
 * to one float, the workspace, timing, the L2 flush, verification and
 * reporting. The step's reduce.cu supplies reduce_pass() and nothing else. */
#include "check.h"
#include "device.h"
#include "harness.h"
#include "reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A step that needs no workspace does not define reduce_workspace(). */
__attribute__((weak)) struct workspace_size reduce_workspace(size_t n)
{
    (void)n;
    struct workspace_size none = {0, 0};
    return none;
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
static float *run_reduction(const float *d_in, size_t n, float *d_a, float *d_b,
                            struct workspace work)
{
    const float *in = d_in;
    float *out = d_a;
    for (;;) {
        size_t m = reduce_pass(in, out, n, work);
        check_pass_count(n, m);
        if (m == 1)
            return out;
        in = out;
        out = (out == d_a) ? d_b : d_a;
        n = m;
    }
}

/* The step's workspace, each part between NaN guards: the zeroed part is
 * set to 0 once and must read 0 after every run; the scratch part is
 * poisoned before every run, so a read of a slot no block wrote this run
 * (a stale partial) brings a NaN into the sum. */
struct work_buffers {
    struct guarded zeroed, scratch;
};

static size_t floats_for(size_t bytes)
{
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

static void work_alloc(struct work_buffers *w, size_t n)
{
    struct workspace_size size = reduce_workspace(n);
    guarded_alloc(&w->zeroed, 0, floats_for(size.zeroed));
    guarded_alloc(&w->scratch, 0, floats_for(size.scratch));
    guarded_poison(&w->zeroed);
    CHECK_CUDA(cudaMemset(w->zeroed.data, 0, w->zeroed.count * sizeof(float)));
}

static struct workspace work_view(const struct work_buffers *w)
{
    struct workspace view = {w->zeroed.count ? w->zeroed.data : NULL,
                             w->scratch.count ? w->scratch.data : NULL};
    return view;
}

/* 1 if the zeroed part reads 0 again, as the next pass needs it. */
static int work_left_zeroed(const struct work_buffers *w)
{
    size_t count = w->zeroed.count;
    if (count == 0)
        return 1;
    unsigned int *h = malloc(count * sizeof *h);
    if (h == NULL) {
        fprintf(stderr, "error: out of host memory for %zu floats\n", count);
        exit(EXIT_DEVICE);
    }
    CHECK_CUDA(cudaMemcpy(h, w->zeroed.data, count * sizeof *h, cudaMemcpyDeviceToHost));
    int clean = 1;
    for (size_t k = 0; k < count; k++)
        clean &= h[k] == 0;
    free(h);
    return clean;
}

static void work_free(struct work_buffers *w)
{
    guarded_free(&w->zeroed);
    guarded_free(&w->scratch);
}

struct context {
    struct gpu_info gpu;
    char step[256];
};

/* One run of the options (a check, or warm-up and timed repetitions):
 * input, reference, passes, verification, the report and the CSV row.
 * quiet: print nothing, but say in why[] what failed. Returns EXIT_VERIFIED,
 * EXIT_WRONG, or EXIT_USAGE if the row cannot be written; CUDA errors exit
 * with EXIT_DEVICE. */
static int run_one(const struct options *opt, const struct context *c, int quiet, char *why,
                   size_t why_len)
{
    struct options o = *opt;
    const struct gpu_info *g = &c->gpu;
    /* Input and reference, on the host. */
    float *h_in = malloc(o.n * sizeof *h_in);
    int reps = o.check_only ? 1 : o.reps;
    int runs = o.check_only ? 1 : o.warmup + o.reps;
    double *times = malloc(reps * sizeof *times);
    float *results = malloc(reps * sizeof *results);
    if (h_in == NULL || times == NULL || results == NULL) {
        fprintf(stderr, "error: out of host memory for %zu floats\n", o.n);
        exit(EXIT_DEVICE);
    }
    size_t one = onehot_index(o.n, o.seed, o.at_given, o.at);
    fill_input(h_in, o.n, o.fill, o.seed, one);
    struct reference ref = reference_sum(h_in, o.n);
    double tol = tolerance(o.n, ref);
    /* A timed repetition's reference, and the one before its input changed. */
    struct reference *refs = malloc(reps * sizeof *refs);
    double *befores = malloc(reps * sizeof *befores);
    float *repeats = malloc(reps * sizeof *repeats);
    if (refs == NULL || befores == NULL || repeats == NULL) {
        fprintf(stderr, "error: out of host memory for %d repetitions\n", reps);
        exit(EXIT_DEVICE);
    }
    int fresh_runs = !o.check_only && !o.same_input;
    struct fresh fresh;
    fresh_init(&fresh, fresh_seed(), ref);
    float cpu_seq = 0.0f, cpu_kahan = 0.0f;   /* --cpu-sums: of timed run 1's input */

    /* Device buffers, each between NaN guards: the input (offset to test
     * misaligned starts), the two partial-sum buffers and the workspace. */
    struct guarded in, a, b;
    struct work_buffers work;
    size_t m1, m2;
    struct workspace none = {NULL, NULL};
    guarded_alloc(&in, (size_t)o.offset, o.n);
    guarded_poison(&in);
    CHECK_CUDA(cudaMemcpy(in.data, h_in, o.n * sizeof(float), cudaMemcpyHostToDevice));
    m1 = reduce_pass(in.data, NULL, o.n, none);
    check_pass_count(o.n, m1);
    m2 = (m1 > 1) ? reduce_pass(NULL, NULL, m1, none) : 1;
    check_pass_count(m1, m2);
    guarded_alloc(&a, 0, m1);
    guarded_alloc(&b, 0, m2);
    work_alloc(&work, o.n);

    struct flusher flush;
    flusher_init(&flush, g, o.flush && !o.check_only);
    struct timer timer;
    timer_init(&timer);

    int guards_ok = 1, zeroed_ok = 1;
    size_t pos[FRESH_COUNT];
    float val[FRESH_COUNT];
    for (int r = 0; r < runs; r++) {
        int k = r - (runs - reps);   /* index among the timed runs; < 0: warm-up */
        if (k >= 0) {
            befores[k] = ref.sum;
            if (fresh_runs) {        /* this repetition's own input, outside the timed region */
                fresh_next(&fresh, h_in, o.n, &ref, pos, val);
                for (int j = 0; j < FRESH_COUNT; j++)
                    CHECK_CUDA(cudaMemcpy(in.data + pos[j], &val[j], sizeof(float),
                                          cudaMemcpyHostToDevice));
            }
            refs[k] = ref;
            if (k == 0 && o.cpu_sums) {
                cpu_seq = sum_sequential(h_in, o.n);
                cpu_kahan = sum_kahan(h_in, o.n);
            }
        }
        guarded_poison(&a);
        guarded_poison(&b);
        guarded_poison(&work.scratch);
        flusher_run(&flush);
        timer_start(&timer);
        float *d_result = run_reduction(in.data, o.n, a.data, b.data, work_view(&work));
        double us = timer_stop_us(&timer);
        guards_ok = guards_ok && guards_intact(&in) && guards_intact(&a) && guards_intact(&b) &&
                    guards_intact(&work.zeroed) && guards_intact(&work.scratch);
        zeroed_ok = zeroed_ok && work_left_zeroed(&work);
        if (k < 0)
            continue;
        times[k] = us;
        CHECK_CUDA(cudaMemcpy(&results[k], d_result, sizeof(float), cudaMemcpyDeviceToHost));
        if (!fresh_runs)
            continue;
        /* The same input once more, untimed: a data race shows as a sum
         * that moves between the two. */
        guarded_poison(&a);
        guarded_poison(&b);
        guarded_poison(&work.scratch);
        d_result = run_reduction(in.data, o.n, a.data, b.data, work_view(&work));
        guards_ok = guards_ok && guards_intact(&in) && guards_intact(&a) && guards_intact(&b) &&
                    guards_intact(&work.zeroed) && guards_intact(&work.scratch);
        zeroed_ok = zeroed_ok && work_left_zeroed(&work);
        CHECK_CUDA(cudaMemcpy(&repeats[k], d_result, sizeof(float), cudaMemcpyDeviceToHost));
    }

    /* Each timed run's sum must match its own input's reference, must have
     * moved with its input's change, and must come again bit for bit from
     * the same input (from its repeat, or from run 1 with --same-input: a
     * data race shows up as a sum that moves). distinct: the different sums
     * one input gave (1 = bit-identical). */
    int distinct = 1;
    if (!fresh_runs)
        distinct = count_distinct(results, reps);
    else
        for (int k = 0; k < reps; k++)
            distinct += memcmp(&results[k], &repeats[k], sizeof(float)) != 0;
    int bad = -1;
    enum { WRONG, KEPT, MOVED } why_bad = WRONG;
    for (int k = 0; k < reps && bad < 0; k++) {
        const float *again = fresh_runs ? &repeats[k] : &results[0];
        if (!within_tolerance(results[k], refs[k].sum, tolerance(o.n, refs[k])))
            bad = k, why_bad = WRONG;
        else if (fresh_runs && !fresh_moved(results[k], refs[k].sum, befores[k]))
            bad = k, why_bad = KEPT;
        else if (memcmp(&results[k], again, sizeof(float)) != 0)
            bad = k, why_bad = MOVED;
    }
    int k0 = bad < 0 ? 0 : bad;       /* the run the report and the CSV row show */
    int pass = (bad < 0) && guards_ok && zeroed_ok;
    float result = results[k0];
    ref = refs[k0];
    tol = tolerance(o.n, ref);
    double abs_err = fabs((double)result - ref.sum);

    char verdict[512] = "PASS";
    if (!guards_ok)
        snprintf(verdict, sizeof verdict,
                 "FAIL: a kernel wrote outside its buffers (a NaN guard around them was overwritten)");
    else if (!zeroed_ok)
        snprintf(verdict, sizeof verdict,
                 "FAIL: a pass left its workspace's counters non-zero (the next pass needs them at 0)");
    else if (bad >= 0 && why_bad == WRONG) {
        const char *what = isnan(result) ? "NaN: an unwritten output or a read outside the input"
                                         : "not the reference";
        if (o.check_only)
            snprintf(verdict, sizeof verdict, "FAIL: the run gave %.9g, %s", result, what);
        else
            snprintf(verdict, sizeof verdict, "FAIL: timed run %d gave %.9g, %s", bad + 1, result,
                     what);
    } else if (bad >= 0 && why_bad == KEPT) {
        snprintf(verdict, sizeof verdict,
                 "FAIL: timed run %d gave %.9g, the sum of its input before this run changed %d "
                 "of its elements (%.9g), not after (%.9g): an answer kept from an earlier run?",
                 bad + 1, result, FRESH_COUNT, befores[bad], refs[bad].sum);
    } else if (bad >= 0 && fresh_runs) {
        snprintf(verdict, sizeof verdict,
                 "FAIL: timed run %d gave %.9g, and the same input again gave %.9g (%d of %d runs "
                 "differed): a race?", bad + 1, result, repeats[bad], distinct - 1, reps);
    } else if (bad >= 0) {
        snprintf(verdict, sizeof verdict,
                 "FAIL: timed run %d gave %.9g but run 1 gave %.9g (%d different sums in %d runs): "
                 "a race?", bad + 1, result, results[0], distinct, reps);
    }
    if (why != NULL)
        snprintf(why, why_len, "%s", verdict);

    struct stats s = {0.0, 0.0, 0.0};
    double gbps = 0.0;
    if (!o.check_only) {
        s = compute_stats(times, reps);
        gbps = bandwidth_gbps(o.n, s.median);
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
        printf("n = %zu (%.1f MiB), fill %s, seed %llu, offset %d\n", o.n,
               o.n * sizeof(float) / 1048576.0, fill_name(o.fill), (unsigned long long)o.seed,
               o.offset);
        if (!o.check_only) {
            printf("time     median %.2f us   min %.2f   max %.2f   (%d warm-up, %d timed, L2 %s)\n",
                   s.median, s.min, s.max, o.warmup, o.reps, o.flush ? "flushed" : "not flushed");
            printf("speed    %.1f GB/s = %.1f%% of the %.0f GB/s peak\n", gbps,
                   100.0 * gbps / g->peak_gbps, g->peak_gbps);
        }
        if (ref.exact)
            printf("result   %.9g   reference %.9g   |error| %.3g   tolerance 0 (integers, sum|x| "
                   "< 2^24: float adds are exact)\n", result, ref.sum, abs_err);
        else
            printf("result   %.9g   reference %.9g   |error| %.3g   tolerance %.3g\n", result,
                   ref.sum, abs_err, tol);
        if (o.cpu_sums)
            printf("cpu      float loop %.9g   Kahan loop %.9g\n", cpu_seq, cpu_kahan);
        printf("%s\n", verdict);
    }

    int rc = pass ? EXIT_VERIFIED : EXIT_WRONG;
    if (o.csv_path != NULL) {
        struct result_row row = {
            .step = c->step, .timed = !o.check_only, .n = o.n, .reps = reps,
            .warmup = o.check_only ? 0 : o.warmup, .us = s,
            .gbps = gbps, .pct_peak = 100.0 * gbps / g->peak_gbps, .result = result,
            .reference = ref.sum, .abs_err = abs_err, .tol = tol, .pass = pass,
            .flush = flush.buf != NULL, .offset = o.offset, .fill = fill_name(o.fill),
            .seed = o.seed, .distinct = distinct, .sum_abs = ref.sum_abs,
            .has_cpu_sums = o.cpu_sums, .cpu_seq = cpu_seq, .cpu_kahan = cpu_kahan,
            .bytes = (double)o.n * sizeof(float),
        };
        row_set_build(&row, g);
        if (csv_append_row(o.csv_path, &row) != 0) {
            fprintf(stderr, "error: cannot write %s\n", o.csv_path);
            rc = EXIT_USAGE;
        }
    }

    timer_free(&timer);
    flusher_free(&flush);
    guarded_free(&in);
    guarded_free(&a);
    guarded_free(&b);
    work_free(&work);
    free(h_in);
    free(times);
    free(results);
    free(refs);
    free(befores);
    free(repeats);
    return rc;
}

/* A run as the user asked for it. A timed run first makes verify_set()'s
 * exact checks, so that its PASS means what the grader's does at that n. */
static int run(const struct options *o, void *ctx)
{
    const struct context *c = ctx;
    if (!o->check_only && o->verify) {
        struct options checks[VERIFY_MAX];
        int count = verify_set(o, checks);
        for (int k = 0; k < count; k++) {
            char why[512];
            if (run_one(&checks[k], c, 1, why, sizeof why) != EXIT_VERIFIED) {
                printf("check    -n %zu --offset %d --fill exact: %s\n", checks[k].n,
                       checks[k].offset, why);
                printf("FAIL: a check before timing failed (make check STEP=... lists them all)\n");
                return EXIT_WRONG;
            }
        }
        printf("check    PASS: exact fills (zero tolerance) at n%s, offset %d and %d\n",
               o->n > 1 ? " and n - 1" : "", o->offset, checks[count - 1].offset);
    }
    return run_one(o, c, 0, NULL, 0);
}

int main(int argc, char **argv)
{
    const struct program sum = {.kind = PROGRAM_SUM};
    struct options o;
    struct context c;
    char err[256];
    program_name(argv[0], c.step, sizeof c.step);
    switch (parse_options(argc, argv, &sum, &o, err, sizeof err)) {
    case PARSE_HELP:
        print_usage(argv[0], &sum);
        return EXIT_VERIFIED;
    case PARSE_VERSION:
        print_version(c.step);
        return EXIT_VERIFIED;
    case PARSE_ERROR:
        fprintf(stderr, "error: %s\n", err);
        return EXIT_USAGE;
    case PARSE_GPU_INFO:
        open_device(o.device, &c.gpu);
        print_gpu_info(&c.gpu);
        return EXIT_VERIFIED;
    case PARSE_OK:
        break;
    }
    /* A CSV that cannot be written is a usage error: say so before the run,
     * not after it, where its exit code would hide the run's verdict. */
    if (o.csv_path != NULL && csv_check_writable(o.csv_path) != 0) {
        fprintf(stderr, "error: --csv %s: cannot write this file\n", o.csv_path);
        return EXIT_USAGE;
    }
    open_device(o.device, &c.gpu);
    print_gpu_line(c.step, &c.gpu);
    if (o.checks_path != NULL)
        return run_lines(o.checks_path, &o, 1, argv[0], run, &c);
    if (o.runs_path != NULL)
        return run_lines(o.runs_path, &o, 0, argv[0], run, &c);
    return run(&o, &c);
}
