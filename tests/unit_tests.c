/* unit_tests.c: the harness's CPU half (common/harness.c), no GPU needed.
 * Prints one line per failed check and ends with "unit: N passed, N failed". */
#define _POSIX_C_SOURCE 200809L   /* mkstemp */
#include "back_ref.h"
#include "gpu_work_calls.h"
#include "harness.h"
#include "rows_ref.h"

#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"

static void test_parse_size(void)
{
    size_t v = 0;
    EXPECT(parse_size("1", &v) == 0 && v == 1);
    EXPECT(parse_size("0", &v) == 0 && v == 0);
    EXPECT(parse_size("4096", &v) == 0 && v == 4096);
    EXPECT(parse_size("1K", &v) == 0 && v == 1024);
    EXPECT(parse_size("3k", &v) == 0 && v == 3072);
    EXPECT(parse_size("32M", &v) == 0 && v == ((size_t)1 << 25));
    EXPECT(parse_size("1G", &v) == 0 && v == ((size_t)1 << 30));
    EXPECT(parse_size("2147483647", &v) == 0 && v == 2147483647u);
    const char *bad[] = {"", "-5", "+5", " 5", "5 ", "abc", "12x", "1KB", "1.5M", "K",
                         "99999999999999999999999", "17179869184G", NULL};
    for (int i = 0; bad[i]; i++) {
        v = 12345;
        int rc = parse_size(bad[i], &v);
        EXPECT(rc == -1);
        if (rc != -1)
            printf("  parse_size accepted '%s'\n", bad[i]);
        EXPECT(v == 12345);   /* untouched on error */
    }
    EXPECT(parse_size(NULL, &v) == -1);
}

static enum parse_status parse(const char *line, struct options *o, char *err)
{
    char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "run %s", line);
    for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    const struct program sum = {.kind = PROGRAM_SUM};
    return parse_options(argc, argv, &sum, o, err, 256);
}

static void test_parse_options(void)
{
    struct options o;
    char err[256];
    EXPECT(parse("", &o, err) == PARSE_OK);
    EXPECT(o.n == ((size_t)1 << 25) && o.reps == 20 && o.warmup == 3 && o.flush == 1);
    EXPECT(o.fill == FILL_RANDOM && o.offset == 0 && o.csv_path == NULL && !o.check_only);

    EXPECT(parse("-n 1000 --reps 5 --warmup=0 --seed 7 --fill onehot --offset 3 --no-flush "
                 "--check --csv out.csv --device 1", &o, err) == PARSE_OK);
    EXPECT(o.n == 1000 && o.reps == 5 && o.warmup == 0 && o.seed == 7);
    EXPECT(o.fill == FILL_ONEHOT && o.offset == 3 && !o.flush && o.check_only);
    EXPECT(o.csv_path && strcmp(o.csv_path, "out.csv") == 0 && o.device == 1);
    EXPECT(parse("-n=2K", &o, err) == PARSE_OK && o.n == 2048);
    EXPECT(!o.same_input && parse("--same-input", &o, err) == PARSE_OK && o.same_input);
    EXPECT(parse("-h", &o, err) == PARSE_HELP);
    EXPECT(parse("-n 5 --help", &o, err) == PARSE_HELP);

    const char *bad[] = {"-n 0", "-n -3", "-n abc", "-n", "-n 2G", "-n 2147483648",
                         "--reps 0", "--reps x", "--warmup -1", "--fill nope",
                         "--offset 4", "--offset -1", "--seed -2", "--csv", "--device x",
                         "--bogus", "extra", "--reps=", "-nn 5", NULL};
    for (int i = 0; bad[i]; i++) {
        err[0] = '\0';
        int rc = parse(bad[i], &o, err);
        EXPECT(rc == PARSE_ERROR);
        EXPECT(strlen(err) > 0 && strchr(err, '\n') == NULL);   /* one line */
        if (rc != PARSE_ERROR)
            printf("  parse_options accepted '%s'\n", bad[i]);
    }
    EXPECT(parse("-n 0", &o, err) == PARSE_ERROR && strstr(err, "at least 1"));
    EXPECT(parse("-n 2G", &o, err) == PARSE_ERROR && strstr(err, "too large"));
    /* --n, and part 2's size flags, get a hint that names -n N. */
    const char *hint = "unknown option '--n': the number of floats is -n N (try --help)";
    EXPECT(parse("--n 5", &o, err) == PARSE_ERROR && strcmp(err, hint) == 0);
    EXPECT(parse("--n=5", &o, err) == PARSE_ERROR && strcmp(err, hint) == 0);
    EXPECT(parse("--rows 4", &o, err) == PARSE_ERROR &&
           strstr(err, "'--rows': the number of floats is -n N (try --help)"));
    EXPECT(parse("--cols=4", &o, err) == PARSE_ERROR &&
           strstr(err, "'--cols': the number of floats is -n N (try --help)"));
    EXPECT(parse("--bogus", &o, err) == PARSE_ERROR &&
           strcmp(err, "unknown option '--bogus' (try --help)") == 0);

    /* --check picks the exact fill unless a fill is named; timed runs keep random. */
    EXPECT(parse("--check", &o, err) == PARSE_OK && o.fill == FILL_EXACT);
    EXPECT(parse("--fill random --check", &o, err) == PARSE_OK && o.fill == FILL_RANDOM);
    EXPECT(parse("-n 5", &o, err) == PARSE_OK && o.fill == FILL_RANDOM && !o.cpu_sums);
    EXPECT(parse("--fill positive --cpu-sums", &o, err) == PARSE_OK && o.fill == FILL_POSITIVE &&
           o.cpu_sums);
    EXPECT(parse("--fill wide", &o, err) == PARSE_OK && o.fill == FILL_WIDE);
    EXPECT(parse("--fill exact", &o, err) == PARSE_OK && o.fill == FILL_EXACT);
    EXPECT(parse("--version", &o, err) == PARSE_VERSION);
    /* --at: onehot only, inside n, negative from the end, whatever the order. */
    EXPECT(parse("--at 3 -n 10 --fill onehot", &o, err) == PARSE_OK && o.at_given && o.at == 3);
    EXPECT(parse("-n 10 --fill onehot --at -10", &o, err) == PARSE_OK && o.at == -10);
    EXPECT(parse("-n 10 --fill onehot --at 10", &o, err) == PARSE_ERROR && strstr(err, "outside"));
    EXPECT(parse("-n 10 --fill onehot --at -11", &o, err) == PARSE_ERROR);
    EXPECT(parse("-n 10 --at 1", &o, err) == PARSE_ERROR && strstr(err, "needs --fill onehot"));
    EXPECT(parse("-n 10 --fill onehot --at x", &o, err) == PARSE_ERROR);
    /* --checks: many checks from a file; it implies check mode. */
    EXPECT(parse("--checks list.txt", &o, err) == PARSE_OK && o.check_only &&
           strcmp(o.checks_path, "list.txt") == 0);
    EXPECT(parse("--checks", &o, err) == PARSE_ERROR && strstr(err, "file name"));
}

static void test_fill(void)
{
    enum { N = 100000 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    fill_input(a, N, FILL_RANDOM, 1, 0);
    fill_input(b, N, FILL_RANDOM, 1, 0);
    EXPECT(memcmp(a, b, N * sizeof *a) == 0);   /* reproducible */
    fill_input(b, N, FILL_RANDOM, 2, 0);
    EXPECT(memcmp(a, b, N * sizeof *a) != 0);   /* the seed matters */
    int in_range = 1, zeros = 0;
    double mean = 0;
    for (int i = 0; i < N; i++) {
        in_range &= (a[i] >= -1.0f && a[i] < 1.0f);
        zeros += (a[i] == 0.0f);
        mean += a[i] / N;
    }
    EXPECT(in_range);
    EXPECT(zeros < 10);              /* never test on zeros */
    EXPECT(fabs(mean) < 0.02);       /* roughly uniform */

    fill_input(b, 1000, FILL_RANDOM, 1, 0);
    EXPECT(memcmp(a, b, 1000 * sizeof *a) == 0);   /* a prefix of the same input */

    fill_input(a, N, FILL_POSITIVE, 1, 0);
    int positive = 1;
    mean = 0;
    for (int i = 0; i < N; i++) {
        positive &= (a[i] >= 0.0f && a[i] < 1.0f);
        mean += a[i] / N;
    }
    EXPECT(positive && fabs(mean - 0.5) < 0.02);

    fill_input(a, N, FILL_WIDE, 1, 0);
    int wide = 1, negative = 0;
    float lo = 1e30f, hi = 0.0f;
    for (int i = 0; i < N; i++) {
        float m = fabsf(a[i]);
        wide &= (m >= 0x1p-20f && m < 0x1p21f);
        negative += a[i] < 0.0f;
        lo = fminf(lo, m);
        hi = fmaxf(hi, m);
    }
    EXPECT(wide && negative > N / 3 && negative < 2 * N / 3);
    EXPECT(lo < 0x1p-19f && hi >= 0x1p20f);   /* the whole range is used */

    fill_input(a, N, FILL_ONES, 5, 0);
    int ones = 1;
    for (int i = 0; i < N; i++)
        ones &= (a[i] == 1.0f);
    EXPECT(ones);

    fill_input(a, N, FILL_INTS, 5, 0);
    int ints = 1, distinct_ends = 0;
    for (int i = 0; i < N; i++) {
        ints &= (a[i] == floorf(a[i]) && a[i] >= -8.0f && a[i] <= 8.0f);
        distinct_ends += (a[i] == -8.0f) + (a[i] == 8.0f);
    }
    EXPECT(ints && distinct_ends > 0);

    for (uint64_t seed = 0; seed < 20; seed++) {
        size_t one = onehot_index(7, seed, 0, 0);
        fill_input(a, 7, FILL_ONEHOT, seed, one);
        int count = 0;
        for (int i = 0; i < 7; i++)
            count += (a[i] == 1.0f) ? 1 : (a[i] == 0.0f ? 0 : 100);
        EXPECT(count == 1 && one < 7 && a[one] == 1.0f);
    }
    EXPECT(onehot_index(1, 3, 0, 0) == 0);
    EXPECT(onehot_index(100, 3, 1, 0) == 0 && onehot_index(100, 3, 1, 99) == 99);
    EXPECT(onehot_index(100, 3, 1, -1) == 99 && onehot_index(100, 3, 1, -100) == 0);
    free(a);
    free(b);
}

/* --fill exact: nonzero small integers everywhere up to EXACT_DENSE_MAX,
 * the positions kernels get wrong above it, and sum|x| < 2^24 always. */
static void test_fill_exact(void)
{
    size_t sizes[] = {1, 7, 4097, EXACT_DENSE_MAX, EXACT_DENSE_MAX + 1, (size_t)1 << 28};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float *x = malloc(n * sizeof *x);
        fill_input(x, n, FILL_EXACT, 9, 0);
        size_t set = 0;
        int values_ok = 1;
        for (size_t i = 0; i < n; i++) {
            float m = fabsf(x[i]);
            int edge = i < EXACT_EDGE || i >= n - EXACT_EDGE;
            /* The magnitude cycles with i: a neighbour read by mistake differs. */
            values_ok &= m == 0.0f || m == (float)(1 + i % (edge ? EXACT_EDGE_MOD : EXACT_MOD));
            set += m != 0.0f;
        }
        struct reference r = reference_sum(x, n);
        EXPECT(values_ok && r.exact && r.sum_abs < EXACT_SUM_LIMIT);
        EXPECT(tolerance(n, r) == 0.0);
        if (n <= EXACT_DENSE_MAX) {
            EXPECT(set == n);
        } else {
            /* Ends, both sides of period boundaries, and more: */
            int ends = 1;
            for (size_t i = 0; i < EXACT_EDGE; i++)
                ends &= x[i] != 0.0f && x[n - 1 - i] != 0.0f;
            EXPECT(ends);
            size_t period = 64;
            while (period < n / EXACT_SWEEP)
                period *= 2;
            int bounds = 1;
            for (size_t b = period; b + 1 < n; b += period)
                bounds &= x[b] != 0.0f && x[b + 1] != 0.0f && x[b - 1] != 0.0f && x[b - 2] != 0.0f;
            EXPECT(bounds);
            EXPECT(set > 4 * (n / period) + EXACT_SWEEP / 2);   /* the sweep adds many more */
        }
        /* The rule: integers with sum|x| < 2^24 give the exact sum in float in
         * any order: forwards, backwards, and a 256-way strided tree. */
        float fwd = 0.0f, bwd = 0.0f, lanes[256] = {0};
        for (size_t i = 0; i < n; i++) {
            fwd += x[i];
            bwd += x[n - 1 - i];
            lanes[i % 256] += x[i];
        }
        for (int s = 128; s > 0; s /= 2)
            for (int t = 0; t < s; t++)
                lanes[t] += lanes[t + s];
        EXPECT(fwd == r.sum && bwd == r.sum && lanes[0] == r.sum);
        free(x);
    }
}

static void test_reference(void)
{
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof *x);
    fill_input(x, N, FILL_ONES, 0, 0);
    struct reference r = reference_sum(x, N);
    EXPECT(r.sum == N && r.sum_abs == N && r.exact);

    /* The exactness rule: integers, and sum|x| below 2^24, or no promise. */
    size_t big = 16777215;
    float *y = malloc(big * sizeof *y);
    fill_input(y, big, FILL_ONES, 0, 0);
    r = reference_sum(y, big);
    EXPECT(r.exact);
    y[0] = 2.0f;
    r = reference_sum(y, big);   /* sum|x| = 2^24 exactly: a partial sum may round */
    EXPECT(!r.exact && tolerance(big, r) > 0.0);
    free(y);
    x[0] = 1.5f;
    r = reference_sum(x, 4);
    EXPECT(!r.exact);

    /* 0.1f added 10^6 times in float drifts far off; the reference must not. */
    for (int i = 0; i < N; i++)
        x[i] = 0.1f;
    r = reference_sum(x, N);
    EXPECT(fabs(r.sum - N * (double)0.1f) < 1e-6);
    /* The CPU float loops: the plain one drifts, Kahan's stays within an ulp. */
    EXPECT(fabs(sum_sequential(x, N) - r.sum) > 100.0);
    EXPECT(fabs(sum_kahan(x, N) - r.sum) <= 0.0079);   /* half an ulp of 104857.6f */

    /* Exact known value: 1..N alternating signs. */
    for (int i = 0; i < N; i++)
        x[i] = (i % 2) ? -(float)(i + 1) : (float)(i + 1);
    r = reference_sum(x, N);
    EXPECT(r.sum == -(double)N / 2);
    EXPECT(r.sum_abs == (double)N * (N + 1) / 2);

    /* Large and small: 2^24 + 1 + 1 ... where naive float summation stalls. */
    x[0] = 16777216.0f;
    for (int i = 1; i < 1001; i++)
        x[i] = 1.0f;
    r = reference_sum(x, 1001);
    EXPECT(r.sum == 16777216.0 + 1000.0);

    x[0] = -2.5f;
    r = reference_sum(x, 1);
    EXPECT(r.sum == -2.5 && r.sum_abs == 2.5);
    free(x);
}

/* The tolerance of a fill whose values are not all integers. */
static double tol(size_t n, double sum_abs)
{
    struct reference r = {0.0, sum_abs, 0};
    return tolerance(n, r);
}

static void test_tolerance(void)
{
    const double u = 0x1p-24;
    EXPECT(tol(1, 1.0) == u);                 /* no add: the rounding to float only */
    EXPECT(tol(2, 1.0) == u / (1 - u) + u);   /* one add */
    EXPECT(fabs(tol(1024, 1.0) - (1023 * u / (1 - 1023 * u) + u)) < 1e-18);
    EXPECT(tol(1000, 0.0) == 0.0);
    EXPECT(tol((size_t)1 << 24, 3.0) == 3.0);  /* (n - 1) u >= 1/2: only exact fills check */
    EXPECT(tol((size_t)1 << 22, 1.0) < 0.34 && tol((size_t)1 << 22, 1.0) > 0.33);
    struct reference exact = {5.0, 5.0, 1};
    EXPECT(tolerance(1000, exact) == 0.0);
    /* The bound holds for the worst order: a sequential float sum of
     * positive values, whose rounding errors all add up, stays within it
     * (the tree bound (log2 n + 1) u sum|x| that the harness used before
     * does not: a correct one-thread kernel failed it). */
    size_t n = 100000;
    float *x = malloc(n * sizeof *x);
    fill_input(x, n, FILL_POSITIVE, 3, 0);
    struct reference r = reference_sum(x, n);
    float seq = sum_sequential(x, n);
    EXPECT(within_tolerance(seq, r.sum, tolerance(n, r)));
    EXPECT(fabs(seq - r.sum) > 18 * u * r.sum_abs);   /* beyond the old tree bound */
    free(x);

    EXPECT(within_tolerance(1.0f, 1.0, 0.0));
    EXPECT(within_tolerance(1.5f, 1.0, 0.5));
    EXPECT(!within_tolerance(1.5f, 1.0, 0.49));
    EXPECT(!within_tolerance(NAN, 1.0, 1e30));
    EXPECT(!within_tolerance(INFINITY, 1.0, 1e30));
    EXPECT(!within_tolerance(-INFINITY, 1.0, 1e30));
    /* Why exact fills exist: with a tolerance, a dropped 1 among n ones hides
     * once the bound passes 1, at about n = 2^12 floats of 1. */
    EXPECT(!within_tolerance((float)((1 << 11) - 1), (double)(1 << 11), tol(1 << 11, 1 << 11)));
    EXPECT(within_tolerance((float)((1 << 13) - 1), (double)(1 << 13), tol(1 << 13, 1 << 13)));
}

static void test_distinct(void)
{
    float v[] = {1.0f, 1.0f, 2.0f, 1.0f, -0.0f, 0.0f};
    EXPECT(count_distinct(v, 1) == 1);
    EXPECT(count_distinct(v, 2) == 1);
    EXPECT(count_distinct(v, 4) == 2);
    EXPECT(count_distinct(v, 6) == 4);   /* bits, not values: -0 and +0 differ */
}

/* A fresh input for each timed repetition: the host's copy and reference
 * move with the changes, an exact fill stays exact, and an answer kept from
 * the input before is told apart from the right one. */
static void test_fresh(void)
{
    size_t n = 100003, pos[FRESH_COUNT];
    float val[FRESH_COUNT];
    float *x = malloc(n * sizeof *x);
    EXPECT(x != NULL);
    if (x == NULL)
        return;
    for (int exact = 0; exact < 2; exact++) {
        fill_input(x, n, exact ? FILL_EXACT : FILL_RANDOM, 3, 0);
        struct reference base = reference_sum(x, n), ref = base;
        EXPECT(ref.exact == exact);
        struct fresh f;
        fresh_init(&f, 42, ref);
        EXPECT(exact ? f.step == 1.0 : (f.step > ref.sum_abs * 0x1p-18 && f.step <= ref.sum_abs * 0x1p-17));
        double before = ref.sum;
        for (int rep = 0; rep < 5; rep++) {
            before = ref.sum;
            fresh_next(&f, x, n, &ref, pos, val);
            int placed = 1;
            for (int k = 0; k < FRESH_COUNT; k++)
                placed &= pos[k] < n;
            EXPECT(placed);
            /* The last value given for each place is what x holds there. */
            EXPECT(x[pos[FRESH_COUNT - 1]] == val[FRESH_COUNT - 1]);
            struct reference again = reference_sum(x, n);
            EXPECT(fabs(again.sum - ref.sum) <= 1e-9 * again.sum_abs);
            EXPECT(fabs(again.sum_abs - ref.sum_abs) <= 1e-9 * again.sum_abs);
            EXPECT(again.exact == ref.exact && ref.exact == exact);
            /* It moved by about FRESH_COUNT steps, up then down. */
            double moved = (ref.sum - before) * (rep % 2 ? -1.0 : 1.0);
            EXPECT(moved > 0.9 * FRESH_COUNT * f.step && moved < 1.1 * FRESH_COUNT * f.step);
        }
        /* The right sum passes; the one from before the change does not. */
        EXPECT(fresh_moved((float)ref.sum, ref.sum, before));
        EXPECT(!fresh_moved((float)before, ref.sum, before));
        EXPECT(!fresh_moved(NAN, ref.sum, before));
    }
    /* Another process draws other places. */
    fill_input(x, n, FILL_RANDOM, 3, 0);
    struct reference r1 = reference_sum(x, n), r2 = r1;
    struct fresh f1, f2;
    size_t pos2[FRESH_COUNT];
    fresh_init(&f1, 1, r1);
    fresh_init(&f2, 2, r2);
    fresh_next(&f1, x, n, &r1, pos, val);
    fresh_next(&f2, x, n, &r2, pos2, val);
    EXPECT(memcmp(pos, pos2, sizeof pos) != 0);
    EXPECT(fresh_seed() != fresh_seed());
    /* One element: every change lands on it. */
    float one = 0.5f;
    struct reference r = reference_sum(&one, 1);
    fresh_init(&f1, 7, r);
    fresh_next(&f1, &one, 1, &r, pos, val);
    EXPECT(pos[0] == 0 && (double)one == r.sum);
    free(x);

    /* Faster than the memory allows, with the L2 flushed: an answer kept. */
    EXPECT(above_peak(5945.0, 4814.3, 1));
    EXPECT(!above_peak(4440.0, 4814.3, 1));
    EXPECT(!above_peak(5945.0, 4814.3, 0));   /* an unflushed L2 can serve it honestly */
    EXPECT(!above_peak(5945.0, 0.0, 1));      /* no peak known */
}

/* A sum of blocks of 256 in float, then of the blocks' sums: a GPU's order. */
static float sum_blocks(const float *x, size_t n)
{
    float total = 0.0f;
    for (size_t b = 0; b < n; b += 256) {
        float s = 0.0f;
        for (size_t i = b; i < n && i < b + 256; i++)
            s += x[i];
        total += s;
    }
    return total;
}

static double sum_double(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

/* Part 2's change to a row before a timed run (fresh_rows in rows_driver.c). */
static void test_fresh_rows(void)
{
    /* Any op: 2^(e+1) where |x| < 2^e, at least 2: integers stay integers. */
    float r3[3] = {0.25f, -3.0f, 100.0f};
    EXPECT(fresh_row_step(r3, 3, 0, ROW_LAYERNORM) == 2.0);
    EXPECT(fresh_row_step(r3, 3, 1, ROW_SOFTMAX) == 8.0);
    EXPECT(fresh_row_step(r3, 3, 2, ROW_RMSNORM) == 256.0);
    float ints[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    EXPECT(fresh_row_step(ints, 4, 3, ROW_SUM) == 16.0);   /* exact: no tolerance to clear */
    /* A row sum: the change clears four times the changed row's tolerance,
     * so an honest sum, in a chain or in blocks, sits nearer the new sum
     * than the old one, at every width and fill. (With 2^(e+1) alone the
     * wide fill's chained sums failed here at 32768 columns and up.) */
    const enum fill_kind fills[] = {FILL_WIDE, FILL_POSITIVE, FILL_SHIFTED, FILL_RANDOM, FILL_EXACT};
    const size_t widths[] = {33, 1000, 32768, 262144};
    float *x = malloc(262144 * sizeof *x);
    EXPECT(x != NULL);
    if (x == NULL)
        return;
    int all = 1;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++)
            for (uint64_t seed = 1; seed <= 4; seed++) {
                size_t cols = widths[w], c = (size_t)(splitmix64(seed) % cols);
                fill_rows(x, 1, cols, fills[f], seed, 0);
                double before = sum_double(x, cols);
                double step = fresh_row_step(x, cols, c, ROW_SUM);
                x[c] = (float)((double)x[c] + (seed % 2 ? step : -step));
                double now = sum_double(x, cols);
                struct row_stats s;
                row_stats(x, cols, &s);
                struct reference ref = {s.sum, s.sum_abs, s.exact};
                all &= step > 4.0 * tolerance(cols, ref);
                all &= fresh_moved(sum_sequential(x, cols), now, before);
                all &= fresh_moved(sum_blocks(x, cols), now, before);
                all &= fills[f] != FILL_EXACT || (s.exact && x[c] == floorf(x[c]));
            }
    EXPECT(all);
    free(x);
}

static void test_stats(void)
{
    double a[] = {5, 1, 4, 2, 3};
    struct stats s = compute_stats(a, 5);
    EXPECT(s.median == 3 && s.min == 1 && s.max == 5);
    double b[] = {10, 40, 20, 30};
    s = compute_stats(b, 4);
    EXPECT(s.median == 25 && s.min == 10 && s.max == 40);
    double c[] = {7};
    s = compute_stats(c, 1);
    EXPECT(s.median == 7 && s.min == 7 && s.max == 7);
    EXPECT(fabs(bandwidth_gbps(1000, 1.0) - 4.0) < 1e-12);          /* 4000 B in 1 us */
    EXPECT(fabs(bandwidth_gbps((size_t)1 << 28, 250.0) - 4294.967296) < 1e-6);
}

static int count_char(const char *s, char c)
{
    int k = 0;
    for (; *s; s++)
        k += (*s == c);
    return k;
}

static void test_csv(void)
{
    struct result_row r = {
        .step = "step3_idle", .n = 33554432, .reps = 20, .warmup = 3,
        .us = {142.5, 140.25, 150.0}, .gbps = 941.88, .pct_peak = 19.57, .result = 12.5f,
        .reference = 12.5, .abs_err = 0.0, .tol = 0.001, .pass = 1, .gpu = "NVIDIA H200",
        .cc = "9.0", .driver = "580.159.04", .cuda = "13.0", .peak_gbps = 4814.4,
        .l2_mb = 62.9, .sms = 132, .flush = 1, .offset = 0, .fill = "random", .seed = 1,
        .git_rev = "abc1234", .timed = 1, .distinct = 1, .code_hash = "0123456789ab",
        .sum_abs = 3.5,
    };
    char line[2048];
    int len = csv_format_row(&r, line, sizeof line);
    EXPECT(len > 0 && (size_t)len == strlen(line));
    EXPECT(count_char(line, ',') == count_char(CSV_HEADER, ','));
    const char *start = "step3_idle,33554432,20,3,142.500,140.250,150.000,941.88,19.57,12.5,12.5,0,";
    EXPECT(strncmp(line, start, strlen(start)) == 0);
    EXPECT(strstr(line, ",NVIDIA H200,9.0,580.159.04,13.0,4814.4,62.9,132,1,0,random,1,abc1234,"
                        "timed,1,0123456789ab,3.5,,") != NULL);

    /* A --check row: the timing columns are empty; CPU sums only when asked. */
    struct result_row c = r;
    c.timed = 0;
    c.has_cpu_sums = 1;
    c.cpu_seq = 12.25f;
    c.cpu_kahan = 12.5f;
    EXPECT(csv_format_row(&c, line, sizeof line) > 0);
    EXPECT(strncmp(line, "step3_idle,33554432,20,3,,,,,,12.5,", 35) == 0);
    EXPECT(strstr(line, ",check,1,0123456789ab,3.5,12.25,12.5") != NULL);

    struct result_row q = r;
    q.gpu = "Odd, \"GPU\"";
    len = csv_format_row(&q, line, sizeof line);
    EXPECT(len > 0 && strstr(line, ",\"Odd, \"\"GPU\"\"\",") != NULL);
    EXPECT(csv_format_row(&r, line, 20) == -1);   /* too small: refused, not cut */

    char path[] = "/tmp/reduce_unit_XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0);
    close(fd);                                     /* an empty file counts as new */
    EXPECT(csv_append_row(path, &r) == 0);
    EXPECT(csv_append_row(path, &r) == 0);
    FILE *f = fopen(path, "r");
    char buf[4096];
    int lines = 0, headers = 0;
    while (f && fgets(buf, sizeof buf, f)) {
        lines++;
        headers += strncmp(buf, "step,n,reps,", 12) == 0;
    }
    if (f)
        fclose(f);
    EXPECT(lines == 3 && headers == 1);            /* one header, two rows */
    EXPECT(csv_check_writable(path) == 0);
    unlink(path);
    EXPECT(csv_append_row("/nonexistent-dir/x.csv", &r) == -1);
    EXPECT(csv_check_writable("/nonexistent-dir/x.csv") == -1);
}


/* A float LayerNorm of one row, the way a kernel computes it: the mean, then
 * the variance around it (two passes) or E[x^2] - E[x]^2 (one pass), in the
 * order given (forward, backward, or 32 interleaved lanes then a tree). */
enum ln_bug { LN_OK, LN_ONE_PASS, LN_EPS_OUTSIDE, LN_N_MINUS_1 };

static float ordered_sum(const float *v, size_t n, int order)
{
    if (order == 0) {
        float s = 0.0f;
        for (size_t i = 0; i < n; i++)
            s += v[i];
        return s;
    }
    if (order == 1) {
        float s = 0.0f;
        for (size_t i = n; i-- > 0;)
            s += v[i];
        return s;
    }
    float lane[32] = {0};
    for (size_t i = 0; i < n; i++)
        lane[i % 32] += v[i];
    for (int w = 16; w > 0; w /= 2)
        for (int l = 0; l < w; l++)
            lane[l] += lane[l + w];
    return lane[0];
}

static void float_layernorm(const float *x, size_t cols, const float *gamma, const float *beta,
                            int order, enum ln_bug bug, float *y, float *mean_out,
                            float *rstd_out)
{
    float *t = malloc(cols * sizeof *t);
    float mean = ordered_sum(x, cols, order) / (float)cols;
    float var;
    if (bug == LN_ONE_PASS) {
        for (size_t c = 0; c < cols; c++)
            t[c] = x[c] * x[c];
        var = ordered_sum(t, cols, order) / (float)cols - mean * mean;
    } else {
        for (size_t c = 0; c < cols; c++)
            t[c] = (x[c] - mean) * (x[c] - mean);
        var = ordered_sum(t, cols, order) / (float)(bug == LN_N_MINUS_1 ? cols - 1 : cols);
    }
    float rstd = bug == LN_EPS_OUTSIDE ? 1.0f / (sqrtf(var) + LN_EPS) : 1.0f / sqrtf(var + LN_EPS);
    for (size_t c = 0; c < cols; c++)
        y[c] = (x[c] - mean) * rstd * gamma[c] + beta[c];
    *mean_out = mean;
    *rstd_out = rstd;
    free(t);
}

static int ln_passes(enum fill_kind fill, size_t rows, size_t cols, int order, enum ln_bug bug)
{
    size_t n = rows * cols;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    float *g = malloc(cols * sizeof *g), *b = malloc(cols * sizeof *b);
    float *mean = malloc(rows * sizeof *mean), *rstd = malloc(rows * sizeof *rstd);
    fill_rows(x, rows, cols, fill, 5, 0);
    fill_affine(g, b, cols, 5);
    for (size_t r = 0; r < rows; r++)
        float_layernorm(x + r * cols, cols, g, b, order, bug, y + r * cols, &mean[r], &rstd[r]);
    struct row_verdict v;
    check_rows(ROW_LAYERNORM, ROW_F32, x, rows, cols, g, b, LN_EPS, y, mean, rstd, &v);
    free(x); free(y); free(g); free(b); free(mean); free(rstd);
    return v.bad == 0;
}

/* Part 2's references and bounds (common/rows_ref.c). */
static void test_rows(void)
{
    /* LayerNorm: a correct float computation passes in every order and on
     * every fill; the classic bugs fail on the inputs built to show them. */
    enum fill_kind fills[] = {FILL_RANDOM, FILL_EXACT, FILL_SHIFTED, FILL_TINY, FILL_WIDE};
    size_t widths[] = {1, 31, 33, 1024, 4097};
    for (int f = 0; f < 5; f++)
        for (int w = 0; w < 5; w++)
            for (int order = 0; order < 3; order++)
                EXPECT(ln_passes(fills[f], 5, widths[w], order, LN_OK));
    EXPECT(!ln_passes(FILL_SHIFTED, 5, 1024, 0, LN_ONE_PASS));   /* PyTorch #51102 */
    EXPECT(!ln_passes(FILL_SHIFTED, 5, 31, 2, LN_ONE_PASS));
    EXPECT(!ln_passes(FILL_TINY, 5, 31, 0, LN_EPS_OUTSIDE));
    EXPECT(!ln_passes(FILL_TINY, 5, 1024, 2, LN_EPS_OUTSIDE));
    EXPECT(!ln_passes(FILL_RANDOM, 5, 31, 0, LN_N_MINUS_1));
    EXPECT(!ln_passes(FILL_RANDOM, 5, 1024, 0, LN_N_MINUS_1));

    /* Row sums: exact fills are exact in every row; one lost element fails. */
    size_t rows = 7, cols = 4097;
    float *x = malloc(rows * cols * sizeof *x), *y = malloc(rows * sizeof *y);
    fill_rows(x, rows, cols, FILL_EXACT, 3, 0);
    int nonzero = 1;
    for (size_t i = 0; i < rows * cols; i++)
        nonzero &= x[i] != 0.0f && fabsf(x[i]) <= EXACT_EDGE_MOD;
    EXPECT(nonzero);
    for (size_t r = 0; r < rows; r++)
        y[r] = ordered_sum(x + r * cols, cols, 2);
    struct row_verdict v;
    check_rows(ROW_SUM, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 0 && v.exact);
    y[6] -= x[6 * cols + cols - 1];   /* the last row's last element dropped */
    check_rows(ROW_SUM, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 1 && v.row == 6 && strcmp(v.what, "sum") == 0);
    y[6] = NAN;
    check_rows(ROW_SUM, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 1 && isinf(v.ratio));
    /* A misread: row 3 reads its neighbour's element in one place. */
    for (size_t r = 0; r < rows; r++)
        y[r] = ordered_sum(x + r * cols, cols, 0);
    y[3] += x[3 * cols + 11] - x[3 * cols + 10];
    check_rows(ROW_SUM, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 1 && v.row == 3);
    free(y);

    /* Copy: bit for bit. */
    float *c = malloc(rows * cols * sizeof *c);
    memcpy(c, x, rows * cols * sizeof *c);
    check_rows(ROW_COPY, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, c, NULL, NULL, &v);
    EXPECT(v.bad == 0 && v.exact);
    c[rows * cols - 1] = nextafterf(c[rows * cols - 1], 100.0f);
    check_rows(ROW_COPY, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, c, NULL, NULL, &v);
    EXPECT(v.bad == 1 && v.row == rows - 1 && v.col == cols - 1);
    free(c);

    /* Softmax: the safe float computation passes; without the max a row of
     * large values overflows expf to inf and fails. */
    fill_rows(x, rows, cols, FILL_SHIFTED, 3, 0);
    float *s = malloc(rows * cols * sizeof *s);
    for (int safe = 1; safe >= 0; safe--) {
        for (size_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols;
            float m = -INFINITY, total = 0.0f;
            for (size_t k = 0; k < cols; k++)
                m = fmaxf(m, xr[k]);
            for (size_t k = 0; k < cols; k++)
                total += expf(xr[k] - (safe ? m : 0.0f));
            for (size_t k = 0; k < cols; k++)
                s[r * cols + k] = expf(xr[k] - (safe ? m : 0.0f)) / total;
        }
        check_rows(ROW_SOFTMAX, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, s, NULL, NULL, &v);
        EXPECT(safe ? v.bad == 0 : v.bad > 0);
    }
    free(s);
    free(x);

    /* Bytes a run moves; names. */
    EXPECT(row_bytes(ROW_COPY, ROW_F32, 2, 4) == 64.0);
    EXPECT(row_bytes(ROW_SUM, ROW_F32, 2, 4) == 40.0);
    EXPECT(strcmp(row_op_name(ROW_LAYERNORM), "layernorm") == 0);

    /* What the shared parser is told of each op: the options it takes and
     * verify_set()'s extra checks (common/harness.c names no op). */
    struct program sm = row_program_of(ROW_SOFTMAX, ROW_BF16);
    EXPECT(sm.kind == PROGRAM_ROWS && strcmp(sm.op, "softmax") == 0 && sm.pack == 8 &&
           strcmp(sm.elems, "bfloat16s") == 0 && sm.masks && !sm.gamma && !sm.beta &&
           sm.checks == (ROW_CHECK_SHIFTED_TINY | ROW_CHECK_LEVELS_MASKED));
    struct program ln = row_program_of(ROW_LAYERNORM, ROW_F32);
    EXPECT(ln.pack == 4 && strcmp(ln.elems, "floats") == 0 && !ln.masks && ln.gamma && ln.beta &&
           ln.checks == (ROW_CHECK_SHIFTED_TINY | ROW_CHECK_CENTERED));
    struct program rms = row_program_of(ROW_RMSNORM, ROW_BF16);
    EXPECT(strcmp(rms.op, "rmsnorm") == 0 && rms.gamma && !rms.beta && !rms.masks &&
           rms.checks == ROW_CHECK_SHIFTED_TINY);
    struct program sum = row_program_of(ROW_SUM, ROW_F32), copy = row_program_of(ROW_COPY, ROW_BF16);
    EXPECT(!sum.masks && !sum.gamma && sum.checks == 0 && copy.checks == 0 && copy.pack == 8);
    EXPECT(strcmp(row_kind_name(ROW_RMSNORM, ROW_BF16), "rmsnorm_bf16") == 0);
    /* RMSNorm: read x, write y, read gamma, write rstd; the residual add
     * reads residual and writes h too. */
    EXPECT(row_bytes(ROW_RMSNORM, ROW_F32, 2, 4) == 32.0 + 32.0 + 16.0 + 8.0);
    EXPECT(row_bytes(ROW_ADD_RMSNORM, ROW_BF16, 2, 4) == 4 * 16.0 + 8.0 + 8.0);
    struct program add = row_program_of(ROW_ADD_RMSNORM, ROW_F32);
    EXPECT(strcmp(add.op, "add_rmsnorm") == 0 && add.gamma && !add.beta &&
           add.checks == ROW_CHECK_SHIFTED_TINY);
    EXPECT(strcmp(row_kind_name(ROW_ADD_RMSNORM, ROW_BF16), "add_rmsnorm_bf16") == 0);
}

/* RMSNorm in float, as a kernel would compute it: the squares summed in a
 * long sequential chain (the worst order for rounding), the mean, + eps and
 * 1 / sqrt, then two products. with_eps = 0 leaves eps out (a classic bug). */
static void rmsnorm_float(const float *x, const float *gamma, size_t cols, int with_eps,
                          float *y, float *rstd)
{
    float sum = 0.0f;
    for (size_t c = 0; c < cols; c++)
        sum += x[c] * x[c];
    float ms = sum / (float)cols;
    *rstd = 1.0f / sqrtf(with_eps ? ms + LN_EPS : ms);
    for (size_t c = 0; c < cols; c++)
        y[c] = x[c] * *rstd * gamma[c];
}

static void test_rmsnorm(void)
{
    size_t widths[] = {1, 7, 1024, 4097, 65536};
    enum fill_kind fills[] = {FILL_RANDOM, FILL_SHIFTED, FILL_TINY, FILL_WIDE, FILL_EXACT};
    size_t most = 65536;
    float *x = malloc(most * sizeof *x), *y = malloc(most * sizeof *y);
    float *gamma = malloc(most * sizeof *gamma), *beta = malloc(most * sizeof *beta);
    EXPECT(x && y && gamma && beta);
    if (!(x && y && gamma && beta))
        return;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
            size_t cols = widths[w];
            fill_row_input(x, 1, cols, fills[f], ROW_FILL_SHARED, MASK_NONE, 5 + f, 0);
            fill_affine(gamma, beta, cols, 5 + f);
            float rstd;
            rmsnorm_float(x, gamma, cols, 1, y, &rstd);
            struct row_verdict v;
            check_rows(ROW_RMSNORM, ROW_F32, x, 1, cols, gamma, NULL, LN_EPS, y, NULL, &rstd, &v);
            if (v.bad != 0)
                printf("rmsnorm: width %zu fill %s: %s is %.9g, not %.9g (tol %.3g)\n", cols,
                       fill_name(fills[f]), v.what, v.got, v.want, v.tol);
            EXPECT(v.bad == 0);
        }
    /* The residual add's y is checked as the RMSNorm of h (given as x). */
    fill_row_input(x, 1, 1000, FILL_RANDOM, ROW_FILL_SHARED, MASK_NONE, 4, 0);
    fill_affine(gamma, beta, 1000, 4);
    float h_rstd;
    rmsnorm_float(x, gamma, 1000, 1, y, &h_rstd);
    struct row_verdict va;
    check_rows(ROW_ADD_RMSNORM, ROW_F32, x, 1, 1000, gamma, NULL, LN_EPS, y, NULL, &h_rstd, &va);
    EXPECT(va.bad == 0);
    y[10] *= 1.001f;
    check_rows(ROW_ADD_RMSNORM, ROW_F32, x, 1, 1000, gamma, NULL, LN_EPS, y, NULL, &h_rstd, &va);
    EXPECT(va.bad == 1 && va.col == 10);
    /* Without eps: caught where eps matters, the tiny fill (mean(x^2) about
     * 3e-7 beside eps = 1e-5). */
    fill_row_input(x, 1, 1024, FILL_TINY, ROW_FILL_SHARED, MASK_NONE, 9, 0);
    fill_affine(gamma, beta, 1024, 9);
    float rstd;
    rmsnorm_float(x, gamma, 1024, 0, y, &rstd);
    struct row_verdict v;
    check_rows(ROW_RMSNORM, ROW_F32, x, 1, 1024, gamma, NULL, LN_EPS, y, NULL, &rstd, &v);
    EXPECT(v.bad > 0 && strcmp(v.what, "rstd") == 0);
    /* Integers with sum x^2 < 2^24: the sum of squares is exact in any
     * order, and the bound is a few ulps at any width. */
    struct row_stats s;
    for (size_t c = 0; c < 4096; c++)
        x[c] = (float)((int)(c % 7) - 3);
    row_stats(x, 4096, &s);
    struct rms_bounds b;
    rmsnorm_bounds(&s, 4096, LN_EPS, &b);
    EXPECT(s.exact_sq && b.rho_r < 8.0 * UNIT_ROUNDOFF);
    /* A bfloat16 program: the bound adds one rounding of each output. */
    for (size_t c = 0; c < 1024; c++) {
        x[c] = bf16_to_float(bf16_from_float(x[c] * 0.37f));
        gamma[c] = bf16_to_float(bf16_from_float(gamma[c]));
    }
    rmsnorm_float(x, gamma, 1024, 1, y, &rstd);
    for (size_t c = 0; c < 1024; c++)
        y[c] = bf16_to_float(bf16_from_float(y[c]));
    check_rows(ROW_RMSNORM, ROW_BF16, x, 1, 1024, gamma, NULL, LN_EPS, y, NULL, &rstd, &v);
    EXPECT(v.bad == 0);
    free(x);
    free(y);
    free(gamma);
    free(beta);
}

/* bfloat16: the host's rounding, and the bound of a bfloat16 output. */
static float bf16_round(float f)
{
    return bf16_to_float(bf16_from_float(f));
}

static void test_bf16(void)
{
    /* Round to nearest, ties to even: 1 + 2^-8 is halfway between 1 and
     * 1 + 2^-7 and goes to 1 (even); 1 + 3 x 2^-8 goes up to 1 + 2^-6. */
    EXPECT(bf16_round(1.0f) == 1.0f && bf16_round(-2.5f) == -2.5f);
    EXPECT(bf16_round(1.0f + 0x1p-8f) == 1.0f);
    EXPECT(bf16_round(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
    EXPECT(bf16_round(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
    EXPECT(bf16_from_float(1.0f) == 0x3f80 && bf16_from_float(-0.0f) == 0x8000);
    EXPECT(isinf(bf16_round(FLT_MAX)) && isnan(bf16_round(NAN)));
    EXPECT(bf16_round(0x1p-133f) == 0x1p-133f);   /* the smallest subnormal stays */
    /* Integers are exact up to 256; 257 is a tie and goes to 256 (even). */
    EXPECT(bf16_round(256.0f) == 256.0f && bf16_round(257.0f) == 256.0f &&
           bf16_round(259.0f) == 260.0f);

    /* The rounding is within u16 = 2^-8 of the value, and 2^-9 is not
     * enough: 1 + 2^-8 rounds to 1, off by 2^-8 / (1 + 2^-8) > 2^-9. */
    uint64_t h = 7;
    double worst = 0.0;
    for (int k = 0; k < 100000; k++) {
        h = splitmix64(h);
        float f = ldexpf(1.0f + (float)(h >> 40) * 0x1p-24f, (int)(h % 64) - 32);
        worst = fmax(worst, fabs(bf16_round(f) - (double)f) / f);
    }
    EXPECT(worst <= BF16_ROUNDOFF && worst > 0.9 * BF16_ROUNDOFF);
    double tie = 1.0 + 0x1p-8;
    EXPECT(fabs(bf16_round((float)tie) - tie) / tie > 0x1p-9);
    EXPECT(bf16_output_tol(0.0, 1.0) == BF16_ROUNDOFF);

    /* Softmax in bfloat16: the rounded input, float arithmetic, one
     * rounding of each output passes; the same with the sum of the
     * exponentials kept in bfloat16 fails (a row of 1024 equal values:
     * the sum stalls at 256, every output is 4x too large). */
    size_t rows = 9, cols = 1024;
    float *x = malloc(rows * cols * sizeof *x), *y = malloc(rows * cols * sizeof *y);
    for (int fill = 0; fill < 2; fill++) {
        fill_rows(x, rows, cols, fill ? FILL_ONES : FILL_RANDOM, 5, 0);
        for (size_t k = 0; k < rows * cols; k++)
            x[k] = bf16_round(x[k]);
        for (int acc16 = 0; acc16 < 2; acc16++) {
            for (size_t r = 0; r < rows; r++) {
                const float *xr = x + r * cols;
                float m = -INFINITY, total = 0.0f;
                for (size_t c = 0; c < cols; c++)
                    m = fmaxf(m, xr[c]);
                for (size_t c = 0; c < cols; c++) {
                    total += expf(xr[c] - m);
                    if (acc16)
                        total = bf16_round(total);
                }
                for (size_t c = 0; c < cols; c++)
                    y[r * cols + c] = bf16_round(expf(xr[c] - m) / total);
            }
            struct row_verdict v;
            check_rows(ROW_SOFTMAX, ROW_BF16, x, rows, cols, NULL, NULL, LN_EPS, y, NULL, NULL,
                       &v);
            EXPECT(acc16 ? v.bad > 0 : v.bad == 0);
            /* The float bound alone rejects the correctly rounded outputs. */
            if (!acc16 && fill == 0) {   /* 1/1024 rounds to itself */
                check_rows(ROW_SOFTMAX, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, y, NULL,
                           NULL, &v);
                EXPECT(v.bad > 0);
            }
        }
    }

    /* LayerNorm in bfloat16: float statistics, y rounded once, pass; a
     * mean summed in bfloat16 fails on the shifted fill (mean 2000). */
    float g[64], b[64], mean[9], rstd[9];
    cols = 64;
    fill_affine(g, b, cols, 3);
    for (size_t c = 0; c < cols; c++) {
        g[c] = bf16_round(g[c]);
        b[c] = bf16_round(b[c]);
    }
    fill_rows(x, rows, cols, FILL_RANDOM, 3, 0);
    for (size_t k = 0; k < rows * cols; k++)
        x[k] = bf16_round(x[k] * 3.0f + 2000.0f);
    for (int acc16 = 0; acc16 < 2; acc16++) {
        for (size_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols;
            float sum = 0.0f, var = 0.0f;
            for (size_t c = 0; c < cols; c++) {
                sum += xr[c];
                if (acc16)
                    sum = bf16_round(sum);
            }
            float mu = sum / cols;
            for (size_t c = 0; c < cols; c++)
                var += (xr[c] - mu) * (xr[c] - mu);
            float rs = 1.0f / sqrtf(var / cols + LN_EPS);
            mean[r] = mu;
            rstd[r] = rs;
            for (size_t c = 0; c < cols; c++)
                y[r * cols + c] = bf16_round((xr[c] - mu) * rs * g[c] + b[c]);
        }
        struct row_verdict v;
        check_rows(ROW_LAYERNORM, ROW_BF16, x, rows, cols, g, b, LN_EPS, y, mean, rstd, &v);
        EXPECT(acc16 ? v.bad > 0 : v.bad == 0);
    }
    free(x);
    free(y);

    /* Bytes: 2 per element of x, y, gamma and beta; mean and rstd stay 4. */
    EXPECT(row_bytes(ROW_COPY, ROW_BF16, 2, 4) == 32.0);
    EXPECT(row_bytes(ROW_LAYERNORM, ROW_BF16, 2, 4) == 32.0 + 16.0 + 16.0);
    EXPECT(strcmp(row_kind_name(ROW_SOFTMAX, ROW_BF16), "softmax_bf16") == 0 &&
           strcmp(row_kind_name(ROW_SOFTMAX, ROW_F32), "softmax") == 0);
}

/* A float softmax as the steps compute it, each row split over `threads`
 * threads that take every threads-th value (the online pass of steps 9-11:
 * a running max m and a sum s of exp(x - m), rescaled when m grows), then
 * combined in order. guarded: with steps 8-11's guards for a max of -inf
 * (exp_minus_max, inverse); drop: leave the row's last `drop` values out of
 * the sum (an online loop that stops a pack early). */
static float exp_from(float x, float max, int guarded)
{
    return expf(x - (guarded && max == -INFINITY ? 0.0f : max));
}

static float rescaled(float s, float m, float M)
{
    return m == M ? s : s * expf(m - M);
}

static void float_softmax(const float *x, size_t cols, size_t threads, int guarded, size_t drop,
                          float *y)
{
    float M = -INFINITY, S = 0.0f;
    for (size_t t = 0; t < threads; t++) {
        float m = -INFINITY, s = 0.0f;
        for (size_t c = t; c + drop < cols; c += threads) {
            float grown = fmaxf(m, x[c]);
            s = rescaled(s, m, grown);
            m = grown;
            s += exp_from(x[c], m, guarded);
        }
        float grown = fmaxf(M, m);
        S = rescaled(S, M, grown) + rescaled(s, m, grown);
        M = grown;
    }
    float inv = guarded ? (S > 0.0f ? 1.0f / S : 0.0f) : 1.0f / S;
    for (size_t c = 0; c < cols; c++)
        y[c] = exp_from(x[c], M, guarded) * inv;
}

/* check_rows() on float_softmax() of every row of x. */
static struct row_verdict softmax_verdict(const float *x, size_t rows, size_t cols,
                                          size_t threads, int guarded, size_t drop)
{
    float *y = malloc(rows * cols * sizeof *y);
    for (size_t r = 0; r < rows; r++)
        float_softmax(x + r * cols, cols, threads, guarded, drop, y + r * cols);
    struct row_verdict v;
    check_rows(ROW_SOFTMAX, ROW_F32, x, rows, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    free(y);
    return v;
}

/* --fill levels and --mask: the values, the patterns, and what they catch. */
static void test_masks(void)
{
    size_t rows = 12, cols = 1000;
    float *x = malloc(rows * cols * sizeof *x);
    fill_levels(x, rows * cols, 3);
    size_t zeros = 0, lows = 0;
    for (size_t i = 0; i < rows * cols; i++) {
        zeros += x[i] == 0.0f;
        lows += x[i] == LEVELS_LOW;
    }
    EXPECT(zeros + lows == rows * cols && zeros > rows * cols / 3 && lows > rows * cols / 3);

    /* causal: row r keeps (r mod cols) + 1 values. */
    mask_rows(x, rows, cols, MASK_CAUSAL, 3);
    int causal = 1;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            causal &= (c <= r) ? isfinite(x[r * cols + c]) : x[r * cols + c] == -INFINITY;
    EXPECT(causal);
    /* padded: even rows all -inf, odd rows untouched. */
    fill_levels(x, rows * cols, 3);
    mask_rows(x, rows, cols, MASK_PADDED, 3);
    EXPECT(x[0] == -INFINITY && x[cols - 1] == -INFINITY && isfinite(x[cols]) &&
           x[2 * cols + 5] == -INFINITY);
    /* ends: row r masks 1 + (r mod 8) at each end, nothing between. */
    fill_levels(x, rows * cols, 3);
    mask_rows(x, rows, cols, MASK_ENDS, 3);
    const float *r3 = x + 3 * cols;
    EXPECT(r3[3] == -INFINITY && isfinite(r3[4]) && isfinite(r3[cols - 5]) &&
           r3[cols - 4] == -INFINITY && isfinite(x[1]) && x[0] == -INFINITY);
    /* topk: about 1 + (r mod 64) kept; mixed: the four patterns in turn. */
    fill_levels(x, rows * cols, 3);
    mask_rows(x, rows, cols, MASK_TOPK, 3);
    size_t kept = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            kept += isfinite(x[r * cols + c]);
    EXPECT(kept > 20 && kept < 200);   /* about 1 + 2 + ... + 12 = 78 */
    fill_levels(x, rows * cols, 3);
    mask_rows(x, rows, cols, MASK_MIXED, 3);
    EXPECT(isfinite(x[0]) && x[1] == -INFINITY &&                    /* row 0: causal, keeps 1 */
           x[cols] == -INFINITY && x[2 * cols - 1] == -INFINITY &&  /* row 1: padded */
           x[2 * cols] == -INFINITY && isfinite(x[2 * cols + 1]));  /* row 2: ends of 1 */
    EXPECT(strcmp(mask_name(MASK_PADDED), "padded") == 0 &&
           strcmp(mask_name(MASK_TOPK), "topk") == 0);

    /* Masked rows: the guarded softmax passes every mask, on the levels fill
     * and on random data, split over 1 or 64 threads; without the guards a
     * thread (or a row) with only -inf so far computes exp(-inf - -inf) =
     * NaN, and fails. */
    enum row_mask masks[] = {MASK_CAUSAL, MASK_PADDED, MASK_ENDS, MASK_TOPK, MASK_MIXED};
    for (int k = 0; k < 5; k++)
        for (int levels = 0; levels < 2; levels++) {
            if (levels)
                fill_levels(x, rows * cols, 5);
            else
                fill_rows(x, rows, cols, FILL_RANDOM, 5, 0);
            mask_rows(x, rows, cols, masks[k], 5);
            EXPECT(softmax_verdict(x, rows, cols, 64, 1, 0).bad == 0);
            EXPECT(softmax_verdict(x, rows, cols, 1, 1, 0).bad == 0);
            struct row_verdict v = softmax_verdict(x, rows, cols, 64, 0, 0);
            EXPECT(v.bad > 0 && isinf(v.ratio));
        }
    /* A fully masked row's outputs are 0, with tolerance 0: 1/cols fails. */
    float *y = malloc(cols * sizeof *y);
    for (size_t c = 0; c < cols; c++) {
        x[c] = -INFINITY;
        y[c] = 0.0f;
    }
    struct row_verdict v;
    check_rows(ROW_SOFTMAX, ROW_F32, x, 1, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 0 && v.exact);
    y[7] = 1.0f / (float)cols;
    check_rows(ROW_SOFTMAX, ROW_F32, x, 1, cols, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 1 && v.col == 7 && v.tol == 0.0);
    free(y);
    free(x);
}

/* Tolerances that do not grow with the width where the arithmetic does not. */
static void test_exact_bounds(void)
{
    /* Softmax on the levels fill: every output exact to a few ulps, at any
     * width, in any order; an online pass that leaves the row's last pack
     * (4 values) out of its sum fails at 100003 columns. */
    size_t rows = 3, cols = 100003;
    float *x = malloc(rows * cols * sizeof *x);
    fill_levels(x, rows * cols, 9);
    struct row_verdict v = softmax_verdict(x, rows, cols, 1024, 1, 0);
    EXPECT(v.bad == 0 && !v.exact && v.tol < 1e-9);
    EXPECT(softmax_verdict(x, rows, cols, 1, 1, 0).bad == 0);
    EXPECT(softmax_verdict(x, rows, cols, 1024, 1, 4).bad > 0);
    struct softmax_stats sm;
    softmax_stats(x, cols, &sm);
    EXPECT(sm.exact && sm.max == 0.0 && sm.sum == floor(sm.sum));
    /* The same dropped pack on random data is within the bound of a sum of
     * 100003 terms in any order: the levels fill is what sees it. */
    fill_rows(x, rows, cols, FILL_RANDOM, 9, 0);
    EXPECT(softmax_verdict(x, rows, cols, 1024, 1, 0).bad == 0);
    softmax_stats(x, cols, &sm);
    EXPECT(!sm.exact);
    /* The wide fill (values up to 2^21): the spread that counts is weighted
     * by each output, far below the largest |x - max|. */
    fill_rows(x, rows, cols, FILL_WIDE, 9, 0);
    softmax_stats(x, cols, &sm);
    double far = 0.0;
    for (size_t c = 0; c < cols; c++)
        far = fmax(far, sm.max - x[c]);
    EXPECT(far > 1e6 && sm.spread < 10.0);
    EXPECT(softmax_verdict(x, rows, cols, 1024, 1, 0).bad == 0);
    free(x);

    /* LayerNorm on the exact fill: the row's sum is exact, so the mean's
     * bound is two roundings at any width; a mean that leaves a value out
     * fails at 65537 columns (the general bound g(cols + 1) mean|x| would
     * allow it). */
    cols = 65537;
    x = malloc(cols * sizeof *x);
    float *g = malloc(cols * sizeof *g), *b = malloc(cols * sizeof *b), *y = malloc(cols * sizeof *y);
    fill_rows(x, 1, cols, FILL_EXACT, 4, 0);
    fill_affine(g, b, cols, 4);
    float mean, rstd;
    float_layernorm(x, cols, g, b, 2, LN_OK, y, &mean, &rstd);
    check_rows(ROW_LAYERNORM, ROW_F32, x, 1, cols, g, b, LN_EPS, y, &mean, &rstd, &v);
    EXPECT(v.bad == 0);
    struct row_stats st;
    row_stats(x, cols, &st);
    struct ln_bounds lb;
    layernorm_bounds(&st, cols, LN_EPS, &lb);
    EXPECT(st.exact && lb.mean_tol <= 2.1 * UNIT_ROUNDOFF * fabs(st.mean));
    float short_mean = (float)((st.sum - x[cols - 1]) / cols);   /* x is never 0 here */
    check_rows(ROW_LAYERNORM, ROW_F32, x, 1, cols, g, b, LN_EPS, y, &short_mean, &rstd, &v);
    EXPECT(v.bad >= 1 && strcmp(v.what, "mean") == 0);
    free(x); free(g); free(b); free(y);

    /* The centered fill: mean and variance exact at any width, so LayerNorm's
     * checks are a few ulps wide, and the variance bugs fail where the
     * shifted fill's bound (mean 2000) would allow anything: at 90849
     * columns (the H200's three-pass LayerNorm) and at 2^20. */
    size_t wide[] = {31, 90849, (size_t)1 << 20};
    for (int w = 0; w < 3; w++) {
        cols = wide[w];
        x = malloc(cols * sizeof *x);
        g = malloc(cols * sizeof *g);
        b = malloc(cols * sizeof *b);
        y = malloc(cols * sizeof *y);
        fill_centered(x, 1, cols, 6);
        fill_affine(g, b, cols, 6);
        row_stats(x, cols, &st);
        EXPECT(st.exact_var && st.mean == centered_value(cols) && st.var > 0.5 && st.var < 0.8);
        for (int order = 0; order < 3; order++) {
            float_layernorm(x, cols, g, b, order, LN_OK, y, &mean, &rstd);
            check_rows(ROW_LAYERNORM, ROW_F32, x, 1, cols, g, b, LN_EPS, y, &mean, &rstd, &v);
            EXPECT(v.bad == 0 && v.tol < 1e-5);
        }
        layernorm_bounds(&st, cols, LN_EPS, &lb);
        EXPECT(layernorm_exact_variance(&st, st.mean, &lb) && lb.rstd_tol < 8 * UNIT_ROUNDOFF * lb.rstd);
        layernorm_bounds(&st, cols, LN_EPS, &lb);
        EXPECT(!layernorm_exact_variance(&st, nextafter(st.mean, 0.0), &lb));
        enum ln_bug bugs[] = {LN_ONE_PASS, LN_EPS_OUTSIDE, LN_N_MINUS_1};
        for (int k = 0; k < 3; k++) {
            float_layernorm(x, cols, g, b, 2, bugs[k], y, &mean, &rstd);
            check_rows(ROW_LAYERNORM, ROW_F32, x, 1, cols, g, b, LN_EPS, y, &mean, &rstd, &v);
            EXPECT(v.bad > 0);
        }
        free(x); free(g); free(b); free(y);
    }
    EXPECT(centered_value(1024) == 128.0 && centered_value(131071) == 128.0 &&
           centered_value(131072) == 64.0 && centered_value((size_t)1 << 20) == 8.0);
}

/* Part 2's command line: parse_options() for a program of this op and dtype. */
static enum parse_status rows_parse_line(const char *line, enum row_op op, enum row_dtype dtype,
                                         struct options *o, char *err)
{
    char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "run %s", line);
    for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    const struct program rows = row_program_of(op, dtype);
    return parse_options(argc, argv, &rows, o, err, 256);
}

static void test_row_options(void)
{
    struct options o;
    char err[256];
    EXPECT(rows_parse_line("", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_OK);
    EXPECT(o.rows == ROWS_DEFAULT_ROWS && o.cols == ROWS_DEFAULT_COLS && o.n == (size_t)1 << 25 &&
           o.mask == MASK_NONE && o.row_fill == ROW_FILL_SHARED && o.fill == FILL_RANDOM);
    /* The options both parts share, beside part 2's own. */
    EXPECT(rows_parse_line("--rows 7 --cols=33 --seed 5 --fill wide --reps 3 --csv out.csv "
                           "--offset 3 --y-offset 1", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_OK);
    EXPECT(o.rows == 7 && o.cols == 33 && o.n == 231 && o.seed == 5 && o.fill == FILL_WIDE &&
           o.reps == 3 && strcmp(o.csv_path, "out.csv") == 0 && o.offset == 3 && o.y_offset == 1);
    /* Past 2^32 elements, and onehot's place there. */
    EXPECT(rows_parse_line("--rows 4194307 --cols 1024 --check --fill onehot --at 4294970000",
                           ROW_SUM, ROW_F32, &o, err) == PARSE_OK);
    EXPECT(o.n == (size_t)4194307 * 1024 && o.at == 4294970000LL && o.at_given && o.check_only);
    EXPECT(rows_parse_line("--rows 70000000 --cols 1048576", ROW_SUM, ROW_F32, &o, err) ==
           PARSE_ERROR && strstr(err, "too large"));
    EXPECT(rows_parse_line("--rows 0", ROW_SUM, ROW_F32, &o, err) == PARSE_ERROR);
    EXPECT(rows_parse_line("--cols 1048577", ROW_SUM, ROW_F32, &o, err) == PARSE_ERROR);
    /* Offsets: every place in a 16-byte pack, 0..3 floats or 0..7 bfloat16s. */
    EXPECT(rows_parse_line("--offset 7 --y-offset 5", ROW_SOFTMAX, ROW_BF16, &o, err) ==
           PARSE_OK && o.offset == 7 && o.y_offset == 5);
    EXPECT(rows_parse_line("--offset 4", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_ERROR &&
           strstr(err, "0 to 3"));
    EXPECT(rows_parse_line("--gamma-offset 2 --beta-offset=3", ROW_LAYERNORM, ROW_F32, &o, err) ==
           PARSE_OK && o.gamma_offset == 2 && o.beta_offset == 3);
    EXPECT(rows_parse_line("--gamma-offset 2", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_ERROR &&
           strstr(err, "this program computes softmax"));
    /* RMSNorm has gamma but no beta. */
    EXPECT(rows_parse_line("--gamma-offset 7", ROW_RMSNORM, ROW_BF16, &o, err) == PARSE_OK &&
           o.gamma_offset == 7);
    EXPECT(rows_parse_line("--beta-offset 1", ROW_RMSNORM, ROW_F32, &o, err) == PARSE_ERROR &&
           strstr(err, "--beta-offset places beta, which LayerNorm takes"));
    /* levels is part 2's fill; a mask is softmax's. */
    EXPECT(rows_parse_line("--check --fill levels --mask causal", ROW_SOFTMAX, ROW_BF16, &o, err) ==
           PARSE_OK && o.row_fill == ROW_FILL_LEVELS && o.mask == MASK_CAUSAL);
    char name[64];
    row_fill_name(&o, name, sizeof name);
    EXPECT(strcmp(name, "levels/causal") == 0);
    EXPECT(rows_parse_line("--fill levels --fill random", ROW_SUM, ROW_F32, &o, err) ==
           PARSE_ERROR);
    EXPECT(rows_parse_line("--mask causal", ROW_LAYERNORM, ROW_F32, &o, err) == PARSE_ERROR &&
           strstr(err, "layernorm"));
    EXPECT(rows_parse_line("--mask all", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_ERROR);
    EXPECT(rows_parse_line("--fill nope", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_ERROR);
    EXPECT(rows_parse_line("-n 5", ROW_SUM, ROW_F32, &o, err) == PARSE_ERROR &&
           strcmp(err, "unknown option '-n': the shape is --rows R and --cols C (try --help)") == 0);
    const char *sizes[] = {"-n=5", "--n 5", "--n=5"};
    for (int i = 0; i < 3; i++)
        EXPECT(rows_parse_line(sizes[i], ROW_SOFTMAX, ROW_BF16, &o, err) == PARSE_ERROR &&
               strstr(err, "n': the shape is --rows R and --cols C (try --help)"));
    EXPECT(rows_parse_line("--at 3", ROW_SUM, ROW_F32, &o, err) == PARSE_ERROR);
    EXPECT(rows_parse_line("--help", ROW_SUM, ROW_F32, &o, err) == PARSE_HELP);
    EXPECT(rows_parse_line("--gpu-info --rows 5", ROW_SUM, ROW_F32, &o, err) == PARSE_GPU_INFO);

    /* The checks of a plain run: the exact fill, a column fewer, x moved,
     * y alone moved, the statistics' fills, softmax's masked levels. */
    struct options out[VERIFY_MAX];
    EXPECT(rows_parse_line("--rows 10 --cols 7 --offset 2", ROW_SOFTMAX, ROW_F32, &o, err) ==
           PARSE_OK);
    int k = verify_set(&o, out);
    EXPECT(k == 7 && out[0].fill == FILL_EXACT && out[0].check_only && out[1].cols == 6 &&
           out[1].n == 60 && out[2].offset == 3 && out[2].y_offset == 0 &&
           out[3].offset == 2 && out[3].y_offset == 1 && out[4].fill == FILL_SHIFTED &&
           out[6].row_fill == ROW_FILL_LEVELS && out[6].mask == MASK_MIXED);
    EXPECT(rows_parse_line("--rows 10 --cols 7 --offset 2", ROW_SUM, ROW_BF16, &o, err) ==
           PARSE_OK && verify_set(&o, out) == 4);
    EXPECT(rows_parse_line("--offset 7", ROW_LAYERNORM, ROW_BF16, &o, err) == PARSE_OK &&
           verify_set(&o, out) == 8 && out[2].offset == 0 &&
           out[5].row_fill == ROW_FILL_CENTERED && out[6].row_fill == ROW_FILL_CENTERED &&
           out[5].cols == 1024 && out[6].cols == 1023 && out[6].n == o.rows * 1023 &&
           out[6].offset == 7 && out[7].fill == FILL_TINY);
    EXPECT(rows_parse_line("--fill centered", ROW_LAYERNORM, ROW_F32, &o, err) == PARSE_OK &&
           o.row_fill == ROW_FILL_CENTERED);
    EXPECT(rows_parse_line("--check-every 64", ROW_SUM, ROW_F32, &o, err) == PARSE_OK &&
           o.check_every == 64);
    EXPECT(rows_parse_line("--check-every 0", ROW_SUM, ROW_F32, &o, err) == PARSE_ERROR);

    /* --check-every 4 over 10 rows: rows 0, 4, 8 and the last 4 (6 to 9). */
    float x[10], y[10];
    for (int r = 0; r < 10; r++)
        x[r] = y[r] = (float)(r + 1);
    struct row_verdict v;
    y[5] = 0.0f;   /* a row the sample leaves out */
    check_rows_every(ROW_SUM, ROW_F32, x, 10, 1, NULL, NULL, LN_EPS, y, NULL, NULL, 4, &v);
    EXPECT(v.bad == 0);
    check_rows(ROW_SUM, ROW_F32, x, 10, 1, NULL, NULL, LN_EPS, y, NULL, NULL, &v);
    EXPECT(v.bad == 1 && v.row == 5);
    y[5] = 6.0f;
    y[9] = 0.0f;
    check_rows_every(ROW_SUM, ROW_F32, x, 10, 1, NULL, NULL, LN_EPS, y, NULL, NULL, 4, &v);
    EXPECT(v.bad == 1 && v.row == 9);
}

/* The checks a plain timed run makes before timing (verify_set). */
static void test_verify_set(void)
{
    struct options o, out[VERIFY_MAX];
    char err[256];
    EXPECT(parse("-n 1000 --offset 3", &o, err) == PARSE_OK);
    int k = verify_set(&o, out);
    EXPECT(k == 3 && out[0].n == 1000 && out[1].n == 999 && out[2].offset == 0);
    EXPECT(out[0].check_only && out[0].fill == FILL_EXACT && out[0].csv_path == NULL);
    EXPECT(parse("-n 1", &o, err) == PARSE_OK && verify_set(&o, out) == 2);
    const struct program layernorm = row_program_of(ROW_LAYERNORM, ROW_F32);
    char *argv[] = {"run", "--rows", "10", "--cols", "7", NULL};
    EXPECT(parse_options(5, argv, &layernorm, &o, err, sizeof err) == PARSE_OK);
    k = verify_set(&o, out);
    EXPECT(k == 8 && out[1].cols == 6 && out[1].n == 60 && out[4].fill == FILL_SHIFTED &&
           out[5].row_fill == ROW_FILL_CENTERED && out[5].cols == 7 &&
           out[6].row_fill == ROW_FILL_CENTERED && out[6].cols == 6 && out[6].n == 60 &&
           out[7].fill == FILL_TINY);
    /* One column: no narrower centered row to check. */
    char *one[] = {"run", "--rows", "10", "--cols", "1", NULL};
    EXPECT(parse_options(5, one, &layernorm, &o, err, sizeof err) == PARSE_OK &&
           verify_set(&o, out) == 6);
    /* Row options belong to row programs; -n to sums. */
    char *bad[] = {"run", "-n", "5", NULL};
    EXPECT(parse_options(3, bad, &layernorm, &o, err, sizeof err) == PARSE_ERROR);
    char *big[] = {"run", "--rows", "2147483647", "--cols", "1048576", NULL};
    EXPECT(parse_options(5, big, &layernorm, &o, err, sizeof err) == PARSE_ERROR &&
           strstr(err, "too large"));
    EXPECT(parse("--rows 5", &o, err) == PARSE_ERROR);
    EXPECT(parse("--runs x --checks y", &o, err) == PARSE_ERROR);
    EXPECT(parse("--gpu-info", &o, err) == PARSE_GPU_INFO);
    EXPECT(parse("--no-verify", &o, err) == PARSE_OK && !o.verify);
}

/* ------------------------------------------------ part 3: back_ref.c */

static unsigned long long back_state = 88172645463325252ull;

static float back_uniform(float lo, float hi)   /* xorshift64: the tests' own inputs */
{
    back_state ^= back_state << 13;
    back_state ^= back_state >> 7;
    back_state ^= back_state << 17;
    return lo + (hi - lo) * (float)((back_state >> 40) * 0x1p-24);
}

/* A float sum in one of three orders: left to right, right to left, pairwise. */
static float back_sum(const float *t, size_t n, int order)
{
    if (order == 2) {
        if (n <= 2)
            return n == 0 ? 0.0f : n == 1 ? t[0] : t[0] + t[1];
        return back_sum(t, n / 2, 2) + back_sum(t + n / 2, n - n / 2, 2);
    }
    float s = 0.0f;
    for (size_t k = 0; k < n; k++)
        s += t[order == 1 ? n - 1 - k : k];
    return s;
}

/* LayerNorm's dx for one row as a float kernel would compute it. broken:
 * 0 none, 1 no m2 term, 2 means over N - 1, 3 xhat without the mean,
 * 4 no rstd. fma: xhat as fma(x, rstd, -mean * rstd). */
static void back_ln_dx_float(const float *x, const float *dy, const float *gamma, float mean,
                             float rstd, size_t n, int order, int fma_form, int broken,
                             float *t1, float *t2, float *xh, float *dx)
{
    for (size_t k = 0; k < n; k++) {
        xh[k] = fma_form ? fmaf(x[k], rstd, -(mean * rstd)) : (x[k] - mean) * rstd;
        if (broken == 3)
            xh[k] = x[k] * rstd;
        t1[k] = dy[k] * gamma[k];
        t2[k] = t1[k] * xh[k];
    }
    float inv = 1.0f / (float)(broken == 2 ? n - 1 : n);
    float m1 = back_sum(t1, n, order) * inv, m2 = back_sum(t2, n, order) * inv;
    for (size_t j = 0; j < n; j++) {
        float v = t1[j] - m1 - (broken == 1 ? 0.0f : xh[j] * m2);
        dx[j] = broken == 4 ? v : rstd * v;
    }
}

/* Every output within its tolerance (want 1), or at least one outside (want 0). */
static int back_within(const float *got, const double *ref, const double *tol, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (!(fabs((double)got[j] - ref[j]) <= tol[j]))
            return 0;
    return 1;
}

static void test_backward(void)
{
    /* By hand: x = 0, 1, 2 with mean 1 and rstd 1 (given), gamma 1, dy = 1, 0, 0:
     * g = 1, 0, 0; m1 = 1/3; m2 = -1/3; dx = 1/3, -1/3, 0. */
    {
        float x[3] = {0, 1, 2}, dy[3] = {1, 0, 0}, gamma[3] = {1, 1, 1};
        double dx[3], tol[3];
        ln_backward_row_ref(x, dy, gamma, 1.0f, 1.0f, 3, dx, tol);
        EXPECT(fabs(dx[0] - 1.0 / 3) < 1e-15 && fabs(dx[1] + 1.0 / 3) < 1e-15 && fabs(dx[2]) < 1e-15);
        EXPECT(tol[0] > 0 && tol[0] < 1e-6);
        /* y = 0.25, 0.75, dy = 1, 0: s = 0.25, dx = 0.1875, -0.1875. */
        float y[2] = {0.25f, 0.75f}, sdy[2] = {1, 0};
        softmax_backward_row_ref(y, sdy, 2, dx, tol);
        EXPECT(dx[0] == 0.1875 && dx[1] == -0.1875);
    }
    /* Float kernels in three orders and two forms of xhat stay within every
     * tolerance; four broken ones leave it, on rows of mean 0 and of mean
     * 100 (where xhat's error follows |x| + |mean|, not |xhat|). */
    size_t widths[] = {3, 7, 1024, 4097};
    size_t rows = 48;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        size_t n = widths[w];
        for (int shifted = 0; shifted < 2; shifted++) {
            float *x = malloc(rows * n * sizeof *x), *dy = malloc(rows * n * sizeof *dy);
            float *gamma = malloc(n * sizeof *gamma), *mean = malloc(rows * sizeof *mean);
            float *rstd = malloc(rows * sizeof *rstd);
            float *t1 = malloc(n * sizeof *t1), *t2 = malloc(n * sizeof *t2);
            float *xh = malloc(n * sizeof *xh), *got = malloc(n * sizeof *got);
            double *ref = malloc(n * sizeof *ref), *tol = malloc(n * sizeof *tol);
            double *dg = calloc(n, sizeof *dg), *dg_mag = calloc(n, sizeof *dg_mag);
            double *db = calloc(n, sizeof *db), *db_mag = calloc(n, sizeof *db_mag);
            double *dg_amag = calloc(n, sizeof *dg_amag);
            for (size_t j = 0; j < n; j++)
                gamma[j] = back_uniform(0.5f, 1.5f);
            for (size_t r = 0; r < rows; r++) {
                double s = 0, ss = 0;
                for (size_t j = 0; j < n; j++) {
                    x[r * n + j] = (shifted ? 100.0f : 0.0f) + back_uniform(-1.0f, 1.0f);
                    dy[r * n + j] = back_uniform(-1.0f, 1.0f);
                    s += x[r * n + j];
                }
                mean[r] = (float)(s / n);
                for (size_t j = 0; j < n; j++)
                    ss += (x[r * n + j] - s / n) * (x[r * n + j] - s / n);
                rstd[r] = (float)(1.0 / sqrt(ss / n + 1e-5));
            }
            int good = 1, caught[5] = {0, 0, 0, 0, 0};
            for (size_t r = 0; r < rows; r++) {
                const float *xr = x + r * n, *dyr = dy + r * n;
                ln_backward_row_ref(xr, dyr, gamma, mean[r], rstd[r], n, ref, tol);
                ln_param_grads_add(xr, dyr, mean[r], rstd[r], n, dg, dg_mag, dg_amag, db, db_mag);
                for (int order = 0; order < 3; order++)
                    for (int fma_form = 0; fma_form < 2; fma_form++) {
                        back_ln_dx_float(xr, dyr, gamma, mean[r], rstd[r], n, order, fma_form, 0,
                                         t1, t2, xh, got);
                        good &= back_within(got, ref, tol, n);
                    }
                for (int broken = 1; broken <= 4; broken++) {
                    back_ln_dx_float(xr, dyr, gamma, mean[r], rstd[r], n, 0, 0, broken, t1, t2,
                                     xh, got);
                    caught[broken] |= !back_within(got, ref, tol, n);
                }
            }
            EXPECT(good);
            /* Means over N - 1 move m1 by m1 / N: at 4097 columns of random dy
             * that is under the worst case of the sum itself, g(N) sum|g| / N,
             * which no order of adds can be held to less than; an exact fill
             * (sums exact in any order, as part 2's levels) is what catches it there. */
            EXPECT(caught[1] && caught[3] && caught[4]);
            EXPECT(n > 1024 || caught[2]);
            /* dgamma and dbeta: column sums over the rows, in three orders;
             * broken: dgamma without the mean, dbeta times gamma. */
            float *col = malloc(rows * sizeof *col), *col2 = malloc(rows * sizeof *col2);
            float *col3 = malloc(rows * sizeof *col3);
            int params_good = 1, no_mean = 0, with_gamma = 0;
            for (size_t j = 0; j < n; j++) {
                for (size_t r = 0; r < rows; r++) {
                    float d = dy[r * n + j];
                    col[r] = d * ((x[r * n + j] - mean[r]) * rstd[r]);
                    col2[r] = d;
                    col3[r] = d * (x[r * n + j] * rstd[r]);
                }
                double gt = ln_dgamma_tol(rows, dg_mag[j], dg_amag[j]), bt = ln_dbeta_tol(rows, db_mag[j]);
                for (int order = 0; order < 3; order++) {
                    params_good &= fabs(back_sum(col, rows, order) - dg[j]) <= gt;
                    params_good &= fabs(back_sum(col2, rows, order) - db[j]) <= bt;
                }
                no_mean |= !(fabs(back_sum(col3, rows, 0) - dg[j]) <= gt);
                with_gamma |= !(fabs(back_sum(col2, rows, 0) * gamma[j] - db[j]) <= bt);
            }
            EXPECT(params_good);
            EXPECT(no_mean && with_gamma);
            free(col), free(col2), free(col3);
            free(x), free(dy), free(gamma), free(mean), free(rstd), free(t1), free(t2);
            free(xh), free(got), free(ref), free(tol), free(dg), free(dg_mag), free(db), free(db_mag);
            free(dg_amag);
        }
        /* Softmax: y a softmax of uniform(-4, 4); float kernels in three
         * orders within tolerance; s without y, and y dy - s, outside. */
        float *y = malloc(n * sizeof *y), *dy = malloc(n * sizeof *dy), *t = malloc(n * sizeof *t);
        float *got = malloc(n * sizeof *got);
        double *ref = malloc(n * sizeof *ref), *tol = malloc(n * sizeof *tol);
        int good = 1, no_y = 0, misplaced = 0;
        for (size_t r = 0; r < rows; r++) {
            double z = 0;
            for (size_t j = 0; j < n; j++) {
                y[j] = back_uniform(-4.0f, 4.0f);
                z += exp(y[j]);
                dy[j] = back_uniform(-1.0f, 1.0f);
            }
            for (size_t j = 0; j < n; j++)
                y[j] = (float)(exp(y[j]) / z);
            softmax_backward_row_ref(y, dy, n, ref, tol);
            for (int order = 0; order < 3; order++) {
                for (size_t j = 0; j < n; j++)
                    t[j] = y[j] * dy[j];
                float s = back_sum(t, n, order);
                for (size_t j = 0; j < n; j++)
                    got[j] = y[j] * (dy[j] - s);
                good &= back_within(got, ref, tol, n);
                for (size_t j = 0; j < n; j++)
                    got[j] = fmaf(y[j], dy[j], -(y[j] * s));
                good &= back_within(got, ref, tol, n);
            }
            float s_no_y = back_sum(dy, n, 0);
            for (size_t j = 0; j < n; j++)
                got[j] = y[j] * (dy[j] - s_no_y);
            no_y |= !back_within(got, ref, tol, n);
            for (size_t j = 0; j < n; j++)
                t[j] = y[j] * dy[j];
            float s = back_sum(t, n, 0);
            for (size_t j = 0; j < n; j++)
                got[j] = y[j] * dy[j] - s;
            misplaced |= !back_within(got, ref, tol, n);
        }
        EXPECT(good);
        EXPECT(no_y && misplaced);
        free(y), free(dy), free(t), free(got), free(ref), free(tol);
    }
}

/* The exact fill: every sum exact in any order, so dx is held to a few
 * roundings and dgamma, dbeta to none; the means over N - 1 that the bounds
 * cannot see at 4097 columns (test_backward) are caught here at every width. */
static void test_backward_exact(void)
{
    size_t widths[] = {1, 2, 3, 4, 7, 1024, 4097};
    size_t rows = 48;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        size_t n = widths[w];
        float *x = malloc(rows * n * sizeof *x), *dy = malloc(rows * n * sizeof *dy);
        float *gamma = malloc(n * sizeof *gamma), *mean = malloc(rows * sizeof *mean);
        float *rstd = malloc(rows * sizeof *rstd);
        float *t1 = malloc(n * sizeof *t1), *t2 = malloc(n * sizeof *t2);
        float *xh = malloc(n * sizeof *xh), *got = malloc(n * sizeof *got);
        double *ref = malloc(n * sizeof *ref), *tol = malloc(n * sizeof *tol);
        double *gref = malloc(n * sizeof *gref), *gtol = malloc(n * sizeof *gtol);
        double *dg = calloc(n, sizeof *dg), *dg_mag = calloc(n, sizeof *dg_mag);
        double *db = calloc(n, sizeof *db), *db_mag = calloc(n, sizeof *db_mag);
        double *dg_amag = calloc(n, sizeof *dg_amag);
        EXPECT(ln_backward_exact_fill(rows, n, 7, x, dy, gamma, mean, rstd) == 0);
        int means_exact = 1, quotients = 1, sums_exact = 1, good = 1, same = 1;
        int caught[5] = {0, 0, 0, 0, 0};
        for (size_t r = 0; r < rows; r++) {
            const float *xr = x + r * n, *dyr = dy + r * n;
            double s = 0.0;
            for (size_t j = 0; j < n; j++)
                s += xr[j];
            means_exact &= s / (double)n == (double)mean[r];
            if (n >= 3) {   /* m1 = A and m2 = B rstd, nonzero integers A and B */
                double s1 = 0.0, s2 = 0.0;
                for (size_t j = 0; j < n; j++) {
                    s1 += (double)dyr[j] * gamma[j];
                    s2 += (double)dyr[j] * gamma[j] * ((double)xr[j] - mean[r]);
                }
                quotients &= s1 != 0.0 && fmod(s1, (double)n) == 0.0 && s2 != 0.0 &&
                             fmod(s2, (double)n) == 0.0;
            }
            ln_backward_exact_ref(xr, dyr, gamma, mean[r], rstd[r], n, ref, tol);
            ln_backward_row_ref(xr, dyr, gamma, mean[r], rstd[r], n, gref, gtol);
            ln_param_grads_add(xr, dyr, mean[r], rstd[r], n, dg, dg_mag, dg_amag, db, db_mag);
            for (size_t j = 0; j < n; j++)
                same &= ref[j] == gref[j] && tol[j] <= gtol[j];
            for (int order = 0; order < 3; order++)
                for (int fma_form = 0; fma_form < 2; fma_form++) {
                    back_ln_dx_float(xr, dyr, gamma, mean[r], rstd[r], n, order, fma_form, 0,
                                     t1, t2, xh, got);
                    good &= back_within(got, ref, tol, n);
                    double e1 = 0.0, e2 = 0.0;   /* the float sums against exact ones */
                    for (size_t j = 0; j < n; j++) {
                        e1 += t1[j];
                        e2 += (double)t1[j] * xh[j];
                    }
                    sums_exact &= back_sum(t1, n, order) == e1 && back_sum(t2, n, order) == e2;
                }
            for (int broken = 1; broken <= 4; broken++) {
                if (broken == 2 && n == 1)
                    continue;   /* a mean over N - 1 = 0 values */
                back_ln_dx_float(xr, dyr, gamma, mean[r], rstd[r], n, 0, 0, broken, t1, t2, xh, got);
                caught[broken] |= !back_within(got, ref, tol, n);
            }
        }
        EXPECT(means_exact);
        EXPECT(quotients);
        EXPECT(sums_exact);
        EXPECT(good);
        EXPECT(same);
        /* From 3 columns each row's m1 and m2 are nonzero integers (times
         * rstd): every broken kernel leaves the few roundings allowed. */
        EXPECT(n < 3 || (caught[1] && caught[2] && caught[3] && caught[4]));
        /* dgamma and dbeta exact, in any order of the rows. */
        float *col = malloc(rows * sizeof *col), *col2 = malloc(rows * sizeof *col2);
        int params_exact = 1;
        for (size_t j = 0; j < n; j++) {
            for (size_t r = 0; r < rows; r++) {
                col[r] = dy[r * n + j] * ((x[r * n + j] - mean[r]) * rstd[r]);
                col2[r] = dy[r * n + j];
            }
            for (int order = 0; order < 3; order++)
                params_exact &= back_sum(col, rows, order) == dg[j] &&
                                back_sum(col2, rows, order) == db[j];
        }
        EXPECT(params_exact);
        free(col), free(col2);
        free(x), free(dy), free(gamma), free(mean), free(rstd), free(t1), free(t2), free(xh);
        free(got), free(ref), free(tol), free(gref), free(gtol), free(dg), free(dg_mag), free(db);
        free(db_mag), free(dg_amag);
    }
    /* Past what it keeps exact: nothing written, -1. */
    EXPECT(ln_backward_exact_fill(((size_t)1 << 20) + 1, 1, 7, NULL, NULL, NULL, NULL, NULL) == -1);
    EXPECT(ln_backward_exact_fill(700000, 1, 7, NULL, NULL, NULL, NULL, NULL) == -1);
    EXPECT(ln_backward_exact_fill(1, ((size_t)1 << 20) + 1, 7, NULL, NULL, NULL, NULL, NULL) == -1);
}

/* Softmax backward's exact fill: dx exact, so a float kernel in any order
 * must give the reference's bits; three broken ones do not; masked rows
 * (y = 0) give 0. */
static void test_softmax_backward_exact(void)
{
    size_t widths[] = {1, 2, 3, 7, 1024, 4097};
    size_t rows = 48;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        size_t n = widths[w];
        float *y = malloc(rows * n * sizeof *y), *dy = malloc(rows * n * sizeof *dy);
        float *t = malloc(n * sizeof *t), *got = malloc(n * sizeof *got);
        double *ref = malloc(n * sizeof *ref), *tol = malloc(n * sizeof *tol);
        EXPECT(softmax_backward_exact_fill(rows, n, 11, y, dy) == 0);
        int exact = 1, s_nonzero = 1, masked_zero = 1, no_y = 0, misplaced = 0, short_sum = 0;
        for (size_t r = 0; r < rows; r++) {
            const float *yr = y + r * n, *dyr = dy + r * n;
            softmax_backward_row_ref(yr, dyr, n, ref, tol);
            double s = 0.0;
            int any = 0;
            for (size_t j = 0; j < n; j++) {
                s += (double)yr[j] * dyr[j];
                any |= yr[j] != 0.0f;
            }
            s_nonzero &= !any || s != 0.0;
            if (r % 16 == 15)
                for (size_t j = 0; j < n; j++)
                    masked_zero &= yr[j] == 0.0f && ref[j] == 0.0;
            for (size_t j = 0; j < n; j++)
                t[j] = yr[j] * dyr[j];
            for (int order = 0; order < 3; order++) {
                float sf = back_sum(t, n, order);
                for (size_t j = 0; j < n; j++) {
                    exact &= (double)(yr[j] * (dyr[j] - sf)) == ref[j];
                    exact &= (double)fmaf(yr[j], dyr[j], -(yr[j] * sf)) == ref[j];
                }
            }
            if (!any)
                continue;
            float s_no_y = back_sum(dyr, n, 0), sf = back_sum(t, n, 0);
            float s_short = back_sum(t, n - 1, 0);   /* the last column's term dropped */
            int differ_no_y = 0, differ_misplaced = 0, differ_short = 0;
            for (size_t j = 0; j < n; j++) {
                differ_no_y |= (double)(yr[j] * (dyr[j] - s_no_y)) != ref[j];
                differ_misplaced |= (double)(yr[j] * dyr[j] - sf) != ref[j];
                differ_short |= (double)(yr[j] * (dyr[j] - s_short)) != ref[j];
            }
            no_y |= differ_no_y;
            misplaced |= differ_misplaced;
            short_sum |= differ_short;
        }
        EXPECT(exact);
        EXPECT(s_nonzero);
        EXPECT(masked_zero);
        EXPECT(no_y && misplaced);
        EXPECT(n < 3 || short_sum);   /* some row's last y dy is nonzero */
        free(y), free(dy), free(t), free(got), free(ref), free(tol);
    }
    EXPECT(softmax_backward_exact_fill(1, ((size_t)1 << 20) + 1, 11, NULL, NULL) == -1);
}

/* ------------------------------------ part 3: back_driver.c's host side */

/* Part 3's command line: parse_options() for its program (LayerNorm's, or
 * softmax's where softmax != 0), then its own check of what it does not
 * take. PARSE_ERROR where either refuses. */
static enum parse_status back_parse_op(int softmax, const char *line, struct options *o, char *err)
{
    char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "run %s", line);
    for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    const struct program back = back_program_of(softmax);
    enum parse_status st = parse_options(argc, argv, &back, o, err, 256);
    if (st == PARSE_OK && back_options_check(softmax, o, err, 256) != 0)
        return PARSE_ERROR;
    return st;
}

static enum parse_status back_parse_line(const char *line, struct options *o, char *err)
{
    return back_parse_op(0, line, o, err);
}

/* --runs FILE: each line's options, and the command line's own that apply to
 * every line (--same-input among them, as make bench passes it). */
static int record_run(const struct options *o, void *ctx)
{
    struct options *seen = ctx;
    seen[seen[0].reps++ + 1] = *o;
    return 0;
}

static void test_run_lines(void)
{
    char path[] = "/tmp/run_lines_XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0);
    const char *text = "-n 1000 --reps 3\n# a comment\n\n-n 5 --same-input\n";
    EXPECT(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    struct options base, seen[4];
    char err[256];
    char prog[] = "run";
    for (int same = 0; same < 2; same++) {
        EXPECT(parse(same ? "--same-input --no-flush" : "--no-flush", &base, err) == PARSE_OK);
        seen[0].reps = 0;
        fflush(stdout);   /* its "== run" lines go nowhere */
        int saved = dup(1), null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        int rc = run_lines(path, &base, 0, prog, record_run, seen);
        fflush(stdout);
        dup2(saved, 1);
        close(null), close(saved);
        EXPECT(rc == 0);
        EXPECT(seen[0].reps == 2 && seen[1].n == 1000 && seen[1].reps == 3 && seen[2].n == 5);
        EXPECT(seen[1].same_input == same && seen[2].same_input == 1);
        EXPECT(!seen[1].flush && !seen[2].flush && !seen[1].check_only);
    }
    unlink(path);
}

/* The command line's words, one set for every program (multigpu/run's too:
 * tests/multigpu_tests.c): an error names the flag and what it takes, and a
 * --fill error lists the fills of that program's part, no more. */
static void test_option_words(void)
{
    char err[256], list[64];
    long long x;
    int k;
    const char *f = NULL;
    const char *abc[] = {"a", "b", "c"};
    option_names(abc, 3, list, sizeof list);
    EXPECT(strcmp(list, "a, b or c") == 0);
    option_names(abc, 2, list, sizeof list);
    EXPECT(strcmp(list, "a or b") == 0);
    option_names(abc, 1, list, sizeof list);
    EXPECT(strcmp(list, "a") == 0);
    EXPECT(option_choice("--x", "b", abc, 3, &k, err, sizeof err) == 0 && k == 1);
    EXPECT(option_choice("--x", "d", abc, 3, &k, err, sizeof err) == -1 &&
           strcmp(err, "--x must be a, b or c, got 'd'") == 0);
    EXPECT(option_choice("--x", NULL, abc, 3, &k, err, sizeof err) == -1 &&
           strcmp(err, "--x must be a, b or c, got ''") == 0);
    EXPECT(option_int("--reps", "7", 1, 100000, NULL, &x, err, sizeof err) == 0 && x == 7);
    EXPECT(option_int("--reps", "0", 1, 100000, NULL, &x, err, sizeof err) == -1 &&
           strcmp(err, "--reps needs a number from 1 to 100000, got '0'") == 0);
    EXPECT(option_int("--wait", "x", 1, 86400, "seconds", &x, err, sizeof err) == -1 &&
           strcmp(err, "--wait needs seconds from 1 to 86400, got 'x'") == 0);
    EXPECT(option_int("--seed", "-1", 0, LLONG_MAX, "a non-negative number", &x, err,
                      sizeof err) == -1 &&
           strcmp(err, "--seed needs a non-negative number up to 2^63 - 1, got '-1'") == 0);
    EXPECT(option_file("--csv", "", 0, &f, err, sizeof err) == -1 &&
           strcmp(err, "--csv needs a file name") == 0);
    EXPECT(option_file("--checks", NULL, 1, &f, err, sizeof err) == -1 &&
           strcmp(err, "--checks needs a file name (- for standard input)") == 0);
    EXPECT(option_file("--runs", "-", 1, &f, err, sizeof err) == 0 && strcmp(f, "-") == 0);
    option_unknown("--n=5", "the hint", err, sizeof err);
    EXPECT(strcmp(err, "unknown option '--n': the hint (try --help)") == 0);

    struct options o;
    const char *nine = "random, positive, wide, ones, ints, onehot, exact, shifted";
    char want[256];
    snprintf(want, sizeof want, "--fill must be %s or tiny, got 'levels'", nine);
    EXPECT(parse("--fill levels", &o, err) == PARSE_ERROR && strcmp(err, want) == 0);
    snprintf(want, sizeof want, "--fill must be %s, tiny, levels or centered, got 'nope'", nine);
    EXPECT(rows_parse_line("--fill nope", ROW_LAYERNORM, ROW_F32, &o, err) == PARSE_ERROR &&
           strcmp(err, want) == 0);
    EXPECT(rows_parse_line("--fill centered", ROW_LAYERNORM, ROW_F32, &o, err) == PARSE_OK &&
           o.row_fill == ROW_FILL_CENTERED && o.fill_given);
    EXPECT(rows_parse_line("--fill levels --fill ones", ROW_SOFTMAX, ROW_F32, &o, err) ==
           PARSE_ERROR && strstr(err, "given twice"));
    EXPECT(rows_parse_line("--fill ones --fill levels", ROW_SOFTMAX, ROW_F32, &o, err) ==
           PARSE_ERROR && strstr(err, "given twice"));
    const char *back_fills = "--fill must be random, exact, shifted or tiny, got '%s'";
    const char *refused[] = {"ones", "levels", "centered", "nope"};
    for (int i = 0; i < 4; i++) {
        snprintf(want, sizeof want, back_fills, refused[i]);
        char line[64];
        snprintf(line, sizeof line, "--fill %s", refused[i]);
        EXPECT(back_parse_op(i % 2, line, &o, err) == PARSE_ERROR && strcmp(err, want) == 0);
    }
    EXPECT(back_parse_line("--fill shifted", &o, err) == PARSE_OK && o.fill == FILL_SHIFTED);
    snprintf(want, sizeof want, "--mask must be none, causal, padded, ends, topk or mixed, "
                                "got 'causals'");
    EXPECT(rows_parse_line("--mask causals", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_ERROR &&
           strcmp(err, want) == 0);
    EXPECT(rows_parse_line("--mask topk", ROW_SOFTMAX, ROW_F32, &o, err) == PARSE_OK &&
           o.mask == MASK_TOPK);
}

/* A float kernel's outputs on one fill: dx row by row (back_ln_dx_float, in
 * the row's order), dgamma and dbeta as column sums over the rows in
 * col_order. broken: 0 none, 1 dgamma without rstd, 2 dbeta without the
 * last row (a last block's partial dropped), 3 dx's means over N - 1, 4 a
 * NaN in the last dx, 5 dgamma[0] one ulp off. */
static void back_float_outputs(const float *x, const float *dy, const float *gamma,
                               const float *mean, const float *rstd, size_t rows, size_t cols,
                               int order, int col_order, int broken, float *dx, float *dgamma,
                               float *dbeta)
{
    float *t1 = malloc(cols * sizeof *t1), *t2 = malloc(cols * sizeof *t2);
    float *xh = malloc(cols * sizeof *xh);
    float *a = malloc(rows * sizeof *a), *b = malloc(rows * sizeof *b);
    for (size_t r = 0; r < rows; r++)
        back_ln_dx_float(x + r * cols, dy + r * cols, gamma, mean[r], rstd[r], cols, order, 0,
                         broken == 3 && cols > 1 ? 2 : 0, t1, t2, xh, dx + r * cols);
    for (size_t j = 0; j < cols; j++) {
        for (size_t r = 0; r < rows; r++) {
            float d = dy[r * cols + j], xm = x[r * cols + j] - mean[r];
            a[r] = d * (broken == 1 ? xm : xm * rstd[r]);
            b[r] = d;
        }
        dgamma[j] = back_sum(a, rows, col_order);
        dbeta[j] = back_sum(b, broken == 2 ? rows - 1 : rows, col_order);
    }
    if (broken == 4)
        dx[rows * cols - 1] = NAN;
    if (broken == 5)
        dgamma[0] = nextafterf(dgamma[0], INFINITY);
    free(t1), free(t2), free(xh), free(a), free(b);
}

/* 1 if every row's saved mean and rstd are what a forward pass over x
 * saves: in double over the row, rounded once to float. */
static int saved_stats_match(const float *x, const float *mean, const float *rstd, size_t rows,
                             size_t cols)
{
    int ok = 1;
    for (size_t r = 0; r < rows; r++) {
        double sum = 0.0, q = 0.0;
        for (size_t j = 0; j < cols; j++)
            sum += x[r * cols + j];
        double m = sum / (double)cols;
        for (size_t j = 0; j < cols; j++)
            q += (x[r * cols + j] - m) * (x[r * cols + j] - m);
        ok &= mean[r] == (float)m && rstd[r] == (float)(1.0 / sqrt(q / (double)cols + BACK_EPS));
    }
    return ok;
}

static void test_back_host(void)
{
    struct options o;
    char err[256];
    /* The fills it takes, and the exact fill's shapes. */
    EXPECT(back_fill_takes(FILL_RANDOM) && back_fill_takes(FILL_EXACT) &&
           back_fill_takes(FILL_SHIFTED) && back_fill_takes(FILL_TINY));
    EXPECT(!back_fill_takes(FILL_ONES) && !back_fill_takes(FILL_INTS) &&
           !back_fill_takes(FILL_ONEHOT) && !back_fill_takes(FILL_POSITIVE));
    EXPECT(back_exact_fits(1, 1) && back_exact_fits(645000, 1) && !back_exact_fits(645300, 1));
    EXPECT(back_exact_fits(1, (size_t)1 << 20) && !back_exact_fits(1, ((size_t)1 << 20) + 1));
    EXPECT(!back_exact_fits(0, 5) && !back_exact_fits(5, 0));
    EXPECT(back_bytes(32768, 1024) == 4.0 * (3.0 * 32768 * 1024 + 3 * 1024 + 2 * 32768));

    /* Options: part 2's parser, part 3's fills. */
    EXPECT(back_parse_line("", &o, err) == PARSE_OK && o.rows == 32768 && o.cols == 1024 &&
           o.fill == FILL_RANDOM);
    EXPECT(back_parse_line("--check", &o, err) == PARSE_OK && o.fill == FILL_EXACT);
    EXPECT(back_parse_line("--rows 3 --cols 5 --fill tiny --offset 3 --y-offset 1 "
                           "--gamma-offset 2", &o, err) == PARSE_OK && o.n == 15 &&
           o.fill == FILL_TINY && o.offset == 3 && o.y_offset == 1 && o.gamma_offset == 2);
    EXPECT(back_parse_line("--fill shifted", &o, err) == PARSE_OK);
    EXPECT(back_parse_line("--fill ones", &o, err) == PARSE_ERROR &&
           strstr(err, "random, exact, shifted or tiny") && strstr(err, "'ones'"));
    EXPECT(back_parse_line("--fill levels", &o, err) == PARSE_ERROR && strstr(err, "'levels'"));
    EXPECT(back_parse_line("--fill centered", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_line("--check-every 2", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_line("--check --rows 700000 --cols 8", &o, err) == PARSE_ERROR &&
           strstr(err, "26 x rows + 10 x cols"));
    EXPECT(back_parse_line("--rows 700000 --cols 8", &o, err) == PARSE_OK);   /* random */
    EXPECT(back_parse_line("--beta-offset 1", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_line("--mask causal", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_line("-n 5", &o, err) == PARSE_ERROR);
    /* A timed run's checks: the exact fill, a column fewer, both offsets,
     * shifted and tiny. */
    struct options checks[VERIFY_MAX];
    EXPECT(back_parse_line("--rows 8 --cols 9", &o, err) == PARSE_OK);
    int count = verify_set(&o, checks);
    EXPECT(count == 6 && checks[0].fill == FILL_EXACT && checks[1].cols == 8 &&
           checks[2].offset == 1 && checks[3].y_offset == 1 && checks[4].fill == FILL_SHIFTED &&
           checks[5].fill == FILL_TINY);

    /* Bit-for-bit comparison: -0 is not 0, the same NaN is the same. */
    float u[4] = {1.0f, 0.0f, NAN, 3.0f}, w[4] = {1.0f, -0.0f, NAN, 3.0f};
    EXPECT(back_first_difference(u, u, 4) == -1 && back_first_difference(u, w, 4) == 1);
    EXPECT(back_first_difference(u + 2, w + 2, 2) == -1);

    /* The fills, and the check of a float kernel's outputs on each: in
     * every order within bounds; every broken one caught. */
    const enum fill_kind fills[4] = {FILL_RANDOM, FILL_SHIFTED, FILL_TINY, FILL_EXACT};
    size_t shapes[3][2] = {{48, 7}, {33, 1024}, {5, 1}};
    for (int s = 0; s < 3; s++) {
        size_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *dx = malloc(n * sizeof *dx);
        float *gamma = malloc(cols * sizeof *gamma), *dg = malloc(cols * sizeof *dg);
        float *db = malloc(cols * sizeof *db), *mean = malloc(rows * sizeof *mean);
        float *rstd = malloc(rows * sizeof *rstd);
        float *x2 = malloc(n * sizeof *x2), *dy2 = malloc(n * sizeof *dy2);
        float *g2 = malloc(cols * sizeof *g2), *m2 = malloc(rows * sizeof *m2);
        float *r2 = malloc(rows * sizeof *r2);
        for (int f = 0; f < 4; f++) {
            int exact = fills[f] == FILL_EXACT;
            EXPECT(back_fill(rows, cols, fills[f], 5, x, dy, gamma, mean, rstd) == 0);
            /* The same seed, the same inputs; another seed, others. */
            EXPECT(back_fill(rows, cols, fills[f], 5, x2, dy2, g2, m2, r2) == 0 &&
                   memcmp(x, x2, n * sizeof *x) == 0 && memcmp(dy, dy2, n * sizeof *dy) == 0 &&
                   memcmp(gamma, g2, cols * sizeof *g2) == 0);
            EXPECT(back_fill(rows, cols, fills[f], 6, x2, dy2, g2, m2, r2) == 0 &&
                   memcmp(dy, dy2, n * sizeof *dy) != 0);
            if (exact) {   /* back_fill's exact fill is back_ref's */
                EXPECT(ln_backward_exact_fill(rows, cols, 5, x2, dy2, g2, m2, r2) == 0 &&
                       memcmp(x, x2, n * sizeof *x) == 0 && memcmp(dy, dy2, n * sizeof *dy) == 0 &&
                       memcmp(rstd, r2, rows * sizeof *r2) == 0);
            } else {       /* the saved mean and rstd are the rows' */
                int stats = saved_stats_match(x, mean, rstd, rows, cols), ranges = 1;
                double lo = fills[f] == FILL_SHIFTED ? 1998.0 : -1.0;   /* 2000 +- sqrt(3) */
                double hi = fills[f] == FILL_SHIFTED ? 2002.0 : 1.0;
                double dmax = fills[f] == FILL_TINY ? 1e-3 : 1.0;
                for (size_t i = 0; i < n; i++)
                    ranges &= x[i] >= lo && x[i] <= hi && fabsf(dy[i]) <= dmax;
                for (size_t j = 0; j < cols; j++)
                    ranges &= gamma[j] >= -1.0f && gamma[j] < 1.0f;
                EXPECT(stats);
                EXPECT(ranges);
            }
            struct back_verdict v;
            int good = 1;
            for (int order = 0; order < 3; order++)
                for (int col_order = 0; col_order < 3; col_order++) {
                    back_float_outputs(x, dy, gamma, mean, rstd, rows, cols, order, col_order, 0,
                                       dx, dg, db);
                    good &= back_check(rows, cols, exact, x, dy, gamma, mean, rstd, dx, dg, db,
                                       &v) == 0 && v.bad == 0 && v.ratio <= 1.0 &&
                            v.params_exact == exact;
                }
            EXPECT(good);
            /* Each broken kernel caught where its bug shows: dgamma
             * without rstd wherever rstd is not 1 (the random fills' is
             * far from it, the exact fill's is 1/2, 1 or 2 by row); means
             * over N - 1 on the exact fill from 3 columns (the bounds of the
             * others hold it at 7 columns, not at 1024); a one-ulp dgamma
             * on the exact fill only. */
            for (int broken = 1; broken <= 5; broken++) {
                if ((broken == 3 && !(exact && cols >= 3)) || (broken == 5 && !exact))
                    continue;
                if ((broken == 2 && rows == 1) || (broken == 1 && cols == 1))
                    continue;   /* no last row to drop; xhat = 0, so dgamma = 0 either way */
                back_float_outputs(x, dy, gamma, mean, rstd, rows, cols, 0, 0, broken, dx, dg,
                                   db);
                EXPECT(back_check(rows, cols, exact, x, dy, gamma, mean, rstd, dx, dg, db, &v) ==
                       0);
                static const char *const where[6] = {"", "dgamma", "dbeta", "dx", "dx", "dgamma"};
                int seen = v.bad > 0 && strcmp(v.what, where[broken]) == 0;
                if (broken == 4)   /* the NaN, the last output of dx */
                    seen &= isnan(v.got) && v.row == rows - 1 && v.col == cols - 1 &&
                             v.ratio == HUGE_VAL;
                if (broken == 5)
                    seen &= v.col == 0 && v.tol == 0.0;
                if (!seen)
                    printf("back_check missed broken kernel %d (fill %s, %zu x %zu)\n", broken,
                           fill_name(fills[f]), rows, cols);
                EXPECT(seen);
            }
        }
        free(x), free(dy), free(dx), free(gamma), free(dg), free(db), free(mean), free(rstd);
        free(x2), free(dy2), free(g2), free(m2), free(r2);
    }
    /* Fills it does not take, and exact shapes past it: -1, nothing written. */
    EXPECT(back_fill(2, 2, FILL_ONES, 1, NULL, NULL, NULL, NULL, NULL) == -1);
    EXPECT(back_fill(700000, 8, FILL_EXACT, 1, NULL, NULL, NULL, NULL, NULL) == -1);
}

/* Softmax's dx as a float kernel computes it, row by row: s = sum(y dy) in
 * one of back_sum's orders, then y (dy - s), or fma(y, dy, -(y s)). broken:
 * 0 none, 1 s dropped (dx = y dy). t: cols floats of scratch. */
static void back_softmax_dx_float(const float *y, const float *dy, size_t rows, size_t cols,
                                  int order, int fma_form, int broken, float *t, float *dx)
{
    for (size_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        for (size_t j = 0; j < cols; j++)
            t[j] = yr[j] * dyr[j];
        float s = broken == 1 ? 0.0f : back_sum(t, cols, order);
        for (size_t j = 0; j < cols; j++)
            dx[r * cols + j] = fma_form ? fmaf(yr[j], dyr[j], -(yr[j] * s)) : yr[j] * (dyr[j] - s);
    }
}

/* Softmax backward on the driver's host side: its fills (the forward
 * pass's y with attention's masks, dy by fill), its check of a float
 * kernel's dx and of broken ones, its bytes, its exact fill's shapes, its
 * program and its options. */
static void test_softmax_back_host(void)
{
    const enum fill_kind fills[4] = {FILL_RANDOM, FILL_SHIFTED, FILL_TINY, FILL_EXACT};
    size_t shapes[4][2] = {{48, 7}, {33, 1024}, {17, 1}, {16, 2}};
    for (int s = 0; s < 4; s++) {
        size_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        float *y = malloc(n * sizeof *y), *dy = malloc(n * sizeof *dy), *dx = malloc(n * sizeof *dx);
        float *y2 = malloc(n * sizeof *y2), *dy2 = malloc(n * sizeof *dy2);
        float *yr0 = malloc(n * sizeof *yr0), *u = malloc(n * sizeof *u);
        float *t = malloc(cols * sizeof *t);
        for (int f = 0; f < 4; f++) {
            int exact = fills[f] == FILL_EXACT;
            EXPECT(softmax_back_fill(rows, cols, fills[f], 5, y, dy) == 0);
            /* The same seed, the same inputs; another seed, others. */
            EXPECT(softmax_back_fill(rows, cols, fills[f], 5, y2, dy2) == 0 &&
                   memcmp(y, y2, n * sizeof *y) == 0 && memcmp(dy, dy2, n * sizeof *dy) == 0);
            EXPECT(softmax_back_fill(rows, cols, fills[f], 6, y2, dy2) == 0 &&
                   memcmp(dy, dy2, n * sizeof *dy) != 0 &&
                   (cols == 1 || memcmp(y, y2, n * sizeof *y) != 0));
            if (exact) {   /* softmax_back_fill's exact fill is back_ref's */
                EXPECT(softmax_backward_exact_fill(rows, cols, 5, y2, dy2) == 0 &&
                       memcmp(y, y2, n * sizeof *y) == 0 && memcmp(dy, dy2, n * sizeof *dy) == 0);
            } else {
                /* y: the softmax, in double, of 4 x the random fill's logits
                 * over a row's unmasked places, the same for every fill; every
                 * 16th row (r = 15 mod 16) all 0; about one in 8 of the
                 * others' places exactly 0; each row's y sums to 1. */
                if (fills[f] == FILL_RANDOM)
                    memcpy(yr0, y, n * sizeof *y);
                else
                    EXPECT(memcmp(y, yr0, n * sizeof *y) == 0);
                fill_rows(u, rows, cols, FILL_RANDOM, 5, 0);
                /* dy is not the logits' stream; seed 6 masks other places. */
                EXPECT(memcmp(dy, u, n * sizeof *dy) != 0);
                int moved = 0;
                for (size_t i = 0; i < n; i++)
                    moved |= (y[i] == 0.0f) != (y2[i] == 0.0f);
                EXPECT(moved || cols == 1);
                int fully = 1, softmax = 1, sums = 1;
                size_t zeros = 0, others = 0;
                for (size_t r = 0; r < rows; r++) {
                    const float *yr = y + r * cols, *ur = u + r * cols;
                    if (r % 16 == 15) {
                        for (size_t j = 0; j < cols; j++)
                            fully &= yr[j] == 0.0f;
                        continue;
                    }
                    double max = -HUGE_VAL, z = 0.0, sum = 0.0;
                    for (size_t j = 0; j < cols; j++) {
                        others++;
                        zeros += yr[j] == 0.0f;
                        if (yr[j] != 0.0f && 4.0 * ur[j] > max)
                            max = 4.0 * ur[j];
                    }
                    for (size_t j = 0; j < cols; j++)
                        if (yr[j] != 0.0f) {
                            z += exp(4.0 * ur[j] - max);
                            sum += yr[j];
                        }
                    for (size_t j = 0; j < cols; j++) {
                        double want = yr[j] != 0.0f ? exp(4.0 * ur[j] - max) / z : 0.0;
                        softmax &= yr[j] >= 0.0f && fabs(yr[j] - want) <= 2.0 * FLT_EPSILON * want;
                    }
                    sums &= sum == 0.0 || fabs(sum - 1.0) <= cols * FLT_EPSILON;
                }
                EXPECT(fully);
                EXPECT(softmax);
                EXPECT(sums);
                if (others >= 1000)   /* 31744 places: 1/8 is 3968, its sd 59 */
                    EXPECT(zeros * 10 >= others && zeros * 20 <= others * 3);
                else if (cols > 1)
                    EXPECT(zeros > 0 && zeros < others);
                /* dy: random in [-1, 1), shifted near 2000 (2000 +- sqrt(3)),
                 * tiny under 1e-3. */
                int ranges = 1;
                for (size_t i = 0; i < n; i++)
                    ranges &= fills[f] == FILL_SHIFTED ? dy[i] >= 1998.0f && dy[i] <= 2002.0f
                              : fills[f] == FILL_TINY  ? fabsf(dy[i]) < 1e-3f
                                                       : dy[i] >= -1.0f && dy[i] < 1.0f;
                EXPECT(ranges);
            }

            /* A float kernel's dx, in every order and either form, passes:
             * the verdict names dx and its worst ratio, at most 1. */
            struct back_verdict v;
            int good = 1;
            for (int order = 0; order < 3; order++)
                for (int fma_form = 0; fma_form < 2; fma_form++) {
                    back_softmax_dx_float(y, dy, rows, cols, order, fma_form, 0, t, dx);
                    good &= softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 &&
                            v.bad == 0 && strcmp(v.what, "dx") == 0 && v.ratio >= 0.0 &&
                            v.ratio <= 1.0 && v.params_exact == 0 && v.row < rows && v.col < cols;
                }
            EXPECT(good);

            /* Broken ones: each caught, the first bad output named. */
            back_softmax_dx_float(y, dy, rows, cols, 0, 0, 0, t, dx);
            size_t last = n - 1;
            float keep = dx[last];
            dx[last] = NAN;   /* an output nothing wrote */
            EXPECT(softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad == 1 &&
                   strcmp(v.what, "dx") == 0 && v.row == rows - 1 && v.col == cols - 1 &&
                   isnan(v.got) && v.ratio == HUGE_VAL);
            dx[last] = keep;
            /* A nonzero dx where y is 0 (masked): tolerance 0 on any fill;
             * then the row fully masked (row 15). */
            size_t masked = n;
            for (size_t i = 0; i < n && masked == n; i++)
                if (y[i] == 0.0f && (i / cols) % 16 != 15)
                    masked = i;
            if (masked < n) {
                dx[masked] = 1e-30f;
                EXPECT(softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad == 1 &&
                       v.row == masked / cols && v.col == masked % cols && v.want == 0.0 &&
                       v.tol == 0.0 && v.got == (double)1e-30f && v.ratio == HUGE_VAL);
                /* With the NaN after it too: two bad, the first one kept. */
                dx[last] = NAN;
                EXPECT(softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad == 2 &&
                       v.row == masked / cols && v.col == masked % cols);
                dx[last] = keep;
                dx[masked] = 0.0f;
            }
            if (rows >= 16) {
                dx[15 * cols] = -1e-30f;
                EXPECT(softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad == 1 &&
                       v.row == 15 && v.col == 0 && v.tol == 0.0);
                dx[15 * cols] = 0.0f;
            }
            EXPECT(softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad == 0);
            /* One ulp off on the exact fill: held to the bit (tolerance 0),
             * where the random fills' tolerance takes it. */
            if (exact) {
                size_t at = n;
                for (size_t i = 0; i < n && at == n; i++)
                    if (y[i] != 0.0f && dx[i] != 0.0f)
                        at = i;
                EXPECT(at < n);
                if (at < n) {
                    float right = dx[at];
                    dx[at] = nextafterf(right, INFINITY);
                    EXPECT(softmax_back_check(rows, cols, 1, y, dy, dx, &v) == 0 && v.bad == 1 &&
                           v.row == at / cols && v.col == at % cols && v.tol == 0.0 &&
                           v.want == (double)right && v.got != v.want);
                    EXPECT(softmax_back_check(rows, cols, 0, y, dy, dx, &v) == 0 && v.bad == 0);
                    dx[at] = right;
                }
            }
            /* s dropped (dx = y dy): caught wherever a row has two values. */
            if (cols > 1) {
                back_softmax_dx_float(y, dy, rows, cols, 0, 0, 1, t, dx);
                EXPECT(softmax_back_check(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad > 0);
            }
        }
        free(y), free(dy), free(dx), free(y2), free(dy2), free(yr0), free(u), free(t);
    }
    /* Fills it does not take, and exact widths past 2^20: -1, nothing written. */
    const enum fill_kind refused[5] = {FILL_ONES, FILL_INTS, FILL_ONEHOT, FILL_POSITIVE, FILL_WIDE};
    for (int f = 0; f < 5; f++) {
        float ry[4] = {7.0f, 7.0f, 7.0f, 7.0f}, rdy[4] = {7.0f, 7.0f, 7.0f, 7.0f};
        EXPECT(softmax_back_fill(2, 2, refused[f], 1, ry, rdy) == -1 && ry[0] == 7.0f &&
               ry[3] == 7.0f && rdy[0] == 7.0f && rdy[3] == 7.0f);
    }
    EXPECT(softmax_back_fill(1, ((size_t)1 << 20) + 1, FILL_EXACT, 1, NULL, NULL) == -1);
    EXPECT(softmax_back_fill(0, 5, FILL_EXACT, 1, NULL, NULL) == -1);

    /* Its bytes: y and dy read, dx written, as the bar's three streams. */
    EXPECT(softmax_back_bytes(32768, 1024) == 12.0 * 32768 * 1024);
    EXPECT(softmax_back_bytes(1024, 50257) == back_copy3_bytes(1024, 50257));
    EXPECT(softmax_back_bytes(3, 5) == 180.0);
    /* The exact fill: any number of rows, up to 2^20 columns. */
    EXPECT(softmax_back_exact_fits(1, 1) && softmax_back_exact_fits(700000, 8) &&
           softmax_back_exact_fits(2000000, 1) && softmax_back_exact_fits(2147483647, 1));
    EXPECT(softmax_back_exact_fits(1, (size_t)1 << 20) &&
           !softmax_back_exact_fits(1, ((size_t)1 << 20) + 1));
    EXPECT(!softmax_back_exact_fits(0, 5) && !softmax_back_exact_fits(5, 0));

    /* Its program: softmax_backward, no gamma (LayerNorm's has one), the
     * rest LayerNorm's. */
    struct program sm = back_program_of(1), ln = back_program_of(0);
    EXPECT(strcmp(sm.op, "softmax_backward") == 0 && strcmp(sm.op, BACK_SOFTMAX_NAME) == 0 &&
           sm.gamma == 0 && sm.beta == 0);
    EXPECT(strcmp(ln.op, "layernorm_backward") == 0 && ln.gamma == 1 && ln.beta == 0);
    EXPECT(sm.kind == ln.kind && sm.kind == PROGRAM_ROWS && strcmp(sm.elems, "floats") == 0 &&
           sm.pack == 4 && sm.masks == 0 && sm.checks == ln.checks &&
           sm.checks == ROW_CHECK_SHIFTED_TINY);

    /* Its options: part 3's fills, no --gamma-offset, and the exact fill
     * at any number of rows (LayerNorm's stops at 26 x rows + 10 x cols < 2^24). */
    struct options o;
    char err[256];
    EXPECT(back_parse_op(1, "", &o, err) == PARSE_OK && o.rows == 32768 && o.cols == 1024 &&
           o.fill == FILL_RANDOM);
    EXPECT(back_parse_op(1, "--check", &o, err) == PARSE_OK && o.fill == FILL_EXACT);
    EXPECT(back_parse_op(1, "--check --rows 700000 --cols 8", &o, err) == PARSE_OK &&
           o.fill == FILL_EXACT && o.rows == 700000);
    EXPECT(back_parse_op(1, "--fill exact --rows 2000000 --cols 1", &o, err) == PARSE_OK);
    EXPECT(back_parse_op(1, "--check --rows 1 --cols 1048576", &o, err) == PARSE_OK);
    EXPECT(back_parse_op(0, "--check --rows 700000 --cols 8", &o, err) == PARSE_ERROR &&
           strstr(err, "26 x rows + 10 x cols"));
    EXPECT(back_parse_op(1, "--rows 3 --cols 5 --fill tiny --offset 3 --y-offset 1", &o, err) ==
           PARSE_OK && o.fill == FILL_TINY && o.offset == 3 && o.y_offset == 1);
    EXPECT(back_parse_op(1, "--fill shifted", &o, err) == PARSE_OK && o.fill == FILL_SHIFTED);
    EXPECT(back_parse_op(1, "--gamma-offset 1", &o, err) == PARSE_ERROR &&
           strstr(err, "--gamma-offset") && strstr(err, "softmax_backward"));
    EXPECT(back_parse_op(0, "--gamma-offset 1", &o, err) == PARSE_OK);
    EXPECT(back_parse_op(1, "--fill ones", &o, err) == PARSE_ERROR &&
           strstr(err, "random, exact, shifted or tiny") && strstr(err, "'ones'"));
    EXPECT(back_parse_op(1, "--fill levels", &o, err) == PARSE_ERROR && strstr(err, "'levels'"));
    EXPECT(back_parse_op(1, "--fill centered", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_op(1, "--check-every 2", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_op(1, "--beta-offset 1", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_op(1, "--mask causal", &o, err) == PARSE_ERROR);
    /* Past 2^20 columns the parser refuses first; back_options_check
     * refuses the exact fill there too, given such options. */
    EXPECT(back_parse_op(1, "--check --rows 1 --cols 1048577", &o, err) == PARSE_ERROR);
    EXPECT(back_parse_op(1, "--check --rows 1 --cols 8", &o, err) == PARSE_OK);
    o.cols = ((size_t)1 << 20) + 1;
    o.n = o.cols;
    EXPECT(back_options_check(1, &o, err, sizeof err) == -1 && strstr(err, "2^20 columns") &&
           strstr(err, "--cols 1048577"));
    EXPECT(back_options_check(0, &o, err, sizeof err) == -1 && strstr(err, "26 x rows + 10 x cols"));
    o.fill = FILL_RANDOM;
    EXPECT(back_options_check(1, &o, err, sizeof err) == 0);
    /* A timed run's checks: the exact fill (at any rows), a column fewer,
     * both offsets, shifted and tiny; no gamma to move. */
    struct options checks[VERIFY_MAX];
    EXPECT(back_parse_op(1, "--rows 700000 --cols 9", &o, err) == PARSE_OK);
    int count = verify_set(&o, checks);
    int no_gamma = 1;
    for (int k = 0; k < count; k++)
        no_gamma &= checks[k].gamma_offset == 0;
    EXPECT(count == 6 && checks[0].fill == FILL_EXACT && checks[1].cols == 8 &&
           checks[2].offset == 1 && checks[3].y_offset == 1 && checks[4].fill == FILL_SHIFTED &&
           checks[5].fill == FILL_TINY && no_gamma);
    EXPECT(softmax_back_exact_fits(checks[0].rows, checks[0].cols) &&
           !back_exact_fits(checks[0].rows, checks[0].cols));
}

/* The bfloat16 softmax backward's checks (back_ref.h): on each fill,
 * rounded to bfloat16, a kernel that sums in float in any order and rounds
 * dx once passes; on the exact fill dx is held to the bit (one bfloat16
 * off fails, the fill is unchanged by the rounding); s rounded to bfloat16
 * fails the shifted fill; a masked y's dx must be exactly 0. Then the
 * bfloat16 bar's check (dx = the bfloat16 of y + dy), its program and bytes. */
static void test_softmax_back_bf16(void)
{
    const enum fill_kind fills[4] = {FILL_RANDOM, FILL_SHIFTED, FILL_TINY, FILL_EXACT};
    size_t rows = 33, cols = 300, n = rows * cols;
    float *y = malloc(n * sizeof *y), *dy = malloc(n * sizeof *dy), *dx = malloc(n * sizeof *dx);
    float *y0 = malloc(n * sizeof *y0), *dy0 = malloc(n * sizeof *dy0);
    float *t = malloc(cols * sizeof *t);
    struct back_verdict v;
    for (int f = 0; f < 4; f++) {
        int exact = fills[f] == FILL_EXACT;
        EXPECT(softmax_back_fill(rows, cols, fills[f], 9, y0, dy0) == 0);
        memcpy(y, y0, n * sizeof *y);
        memcpy(dy, dy0, n * sizeof *dy);
        back_round_bf16(y, n);
        back_round_bf16(dy, n);
        int same = 1, held = 1;
        for (size_t i = 0; i < n; i++) {
            same &= y[i] == y0[i] && dy[i] == dy0[i];
            held &= bf16_to_float(bf16_from_float(y[i])) == y[i] && (y[i] == 0.0f) == (y0[i] == 0.0f);
        }
        EXPECT(held);
        if (exact)
            EXPECT(same);   /* the exact fill is bfloat16 already */
        int good = 1;
        for (int order = 0; order < 3; order++)
            for (int fma_form = 0; fma_form < 2; fma_form++) {
                back_softmax_dx_float(y, dy, rows, cols, order, fma_form, 0, t, dx);
                back_round_bf16(dx, n);
                good &= softmax_back_check_bf16(rows, cols, exact, y, dy, dx, &v) == 0 &&
                        v.bad == 0 && v.ratio <= 1.0;
            }
        EXPECT(good);
        /* A masked y's dx: 0 exactly. */
        size_t masked = n;
        for (size_t i = 0; i < n && masked == n; i++)
            if (y[i] == 0.0f)
                masked = i;
        EXPECT(masked < n);
        dx[masked] = 0x1p-133f;   /* bfloat16's smallest subnormal */
        EXPECT(softmax_back_check_bf16(rows, cols, exact, y, dy, dx, &v) == 0 && v.bad == 1 &&
               v.tol == 0.0 && v.want == 0.0);
        dx[masked] = 0.0f;
        if (exact) {   /* one bfloat16 off, where dx is not 0: held to the bit */
            size_t at = n;
            for (size_t i = 0; i < n && at == n; i++)
                if (dx[i] != 0.0f)
                    at = i;
            uint16_t h = bf16_from_float(dx[at]);
            dx[at] = bf16_to_float((uint16_t)(h + 1));
            EXPECT(softmax_back_check_bf16(rows, cols, 1, y, dy, dx, &v) == 0 && v.bad == 1 &&
                   v.tol == 0.0 && v.row == at / cols && v.col == at % cols);
            /* Cut instead of rounded: caught. */
            back_softmax_dx_float(y, dy, rows, cols, 0, 0, 0, t, dx);
            for (size_t i = 0; i < n; i++) {
                uint32_t u;
                memcpy(&u, &dx[i], sizeof u);
                u &= 0xffff0000u;
                memcpy(&dx[i], &u, sizeof u);
            }
            EXPECT(softmax_back_check_bf16(rows, cols, 1, y, dy, dx, &v) == 0 && v.bad > 0);
        }
        if (fills[f] == FILL_SHIFTED) {   /* s rounded to bfloat16: caught */
            for (size_t r = 0; r < rows; r++) {
                float s = 0.0f;
                for (size_t j = 0; j < cols; j++)
                    s += y[r * cols + j] * dy[r * cols + j];
                s = bf16_to_float(bf16_from_float(s));
                for (size_t j = 0; j < cols; j++)
                    dx[r * cols + j] = y[r * cols + j] * (dy[r * cols + j] - s);
            }
            back_round_bf16(dx, n);
            EXPECT(softmax_back_check_bf16(rows, cols, 0, y, dy, dx, &v) == 0 && v.bad > 0);
        }
        /* The bar: dx = the bfloat16 of y + dy, bit for bit. */
        for (size_t i = 0; i < n; i++)
            dx[i] = bf16_to_float(bf16_from_float(y[i] + dy[i]));
        back_copy3_check_bf16(rows, cols, y, dy, dx, &v);
        EXPECT(v.bad == 0 && v.tol == 0.0);
        dx[n / 2] = bf16_to_float((uint16_t)(bf16_from_float(dx[n / 2]) + 1));
        back_copy3_check_bf16(rows, cols, y, dy, dx, &v);
        EXPECT(v.bad == 1 && v.row == n / 2 / cols && v.ratio == HUGE_VAL);
    }
    EXPECT(softmax_back_bf16_bytes(3, 5) == 90.0);
    struct program p = back_program_bf16(1), c = back_program_bf16(0);
    EXPECT(p.pack == 8 && strcmp(p.op, "softmax_backward_bf16") == 0 && p.gamma == 0);
    EXPECT(c.pack == 8 && strcmp(c.op, "copy3_bf16") == 0);
    free(y), free(dy), free(dx), free(y0), free(dy0), free(t);
}

/* The bfloat16 LayerNorm backward's fill and checks (back_ref.h): the fill's
 * x and dy are bfloat16 values and its mean and rstd the rounded x's (on
 * the shifted fill far from the unrounded x's); the exact fill is unchanged
 * by rounding and its sums exact. On every fill a float kernel rounded
 * once passes; on the exact fill a dx one bfloat16 off fails with
 * tolerance 0, and so does dx cut instead of rounded; a kernel using the
 * unrounded x's statistics fails the shifted fill; a dgamma a float off
 * fails the exact fill. Then its program and bytes. */
static void test_back_bf16(void)
{
    const enum fill_kind fills[4] = {FILL_RANDOM, FILL_SHIFTED, FILL_TINY, FILL_EXACT};
    size_t rows = 33, cols = 600, n = rows * cols;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *dx = malloc(n * sizeof *dx);
    float *x0 = malloc(n * sizeof *x0), *dy0 = malloc(n * sizeof *dy0);
    float *gamma = malloc(cols * sizeof *gamma), *g0 = malloc(cols * sizeof *g0);
    float *dg = malloc(cols * sizeof *dg), *db = malloc(cols * sizeof *db);
    float *mean = malloc(rows * sizeof *mean), *rstd = malloc(rows * sizeof *rstd);
    float *m0 = malloc(rows * sizeof *m0), *r0 = malloc(rows * sizeof *r0);
    struct back_verdict v;
    for (int f = 0; f < 4; f++) {
        int exact = fills[f] == FILL_EXACT;
        EXPECT(back_fill_bf16(rows, cols, fills[f], 3, x, dy, gamma, mean, rstd) == 0);
        EXPECT(back_fill(rows, cols, fills[f], 3, x0, dy0, g0, m0, r0) == 0);
        int held = 1, stats = 1;
        for (size_t i = 0; i < n; i++)
            held &= bf16_to_float(bf16_from_float(x[i])) == x[i] &&
                    bf16_to_float(bf16_from_float(dy[i])) == dy[i];
        EXPECT(held && memcmp(gamma, g0, cols * sizeof *g0) == 0);
        if (!exact) {   /* the float fill's, rounded; mean and rstd the rounded x's */
            int same = 1;
            for (size_t i = 0; i < n; i++)
                same &= x[i] == bf16_to_float(bf16_from_float(x0[i])) &&
                        dy[i] == bf16_to_float(bf16_from_float(dy0[i]));
            EXPECT(same);
            stats &= saved_stats_match(x, mean, rstd, rows, cols);
            EXPECT(stats);
        } else {        /* bfloat16 already: rounding changes nothing; sums exact */
            memcpy(x0, x, n * sizeof *x);
            memcpy(dy0, dy, n * sizeof *dy);
            back_round_bf16(x0, n);
            back_round_bf16(dy0, n);
            EXPECT(memcmp(x0, x, n * sizeof *x) == 0 && memcmp(dy0, dy, n * sizeof *dy) == 0);
            int cut = 0;   /* at 600 columns some solved dy were past 256: cut */
            for (size_t i = 0; i < n; i++)
                cut |= fabsf(dy[i]) > 256.0f;
            EXPECT(cut);
        }
        int good = 1;
        for (int order = 0; order < 3; order++) {
            back_float_outputs(x, dy, gamma, mean, rstd, rows, cols, order, order, 0, dx, dg, db);
            back_round_bf16(dx, n);
            good &= back_check_bf16(rows, cols, exact, x, dy, gamma, mean, rstd, dx, dg, db,
                                    &v) == 0 && v.bad == 0 && v.ratio <= 1.0 &&
                    v.params_exact == exact;
        }
        EXPECT(good);
        if (exact) {
            /* One bfloat16 off, where the bound holds one value: caught. */
            size_t at = n;
            for (size_t i = 0; i < n && at == n; i++) {
                float d = dx[i];
                dx[i] = bf16_to_float((uint16_t)(bf16_from_float(d) + 1));
                EXPECT(back_check_bf16(rows, cols, 1, x, dy, gamma, mean, rstd, dx, dg, db,
                                       &v) == 0);
                if (v.bad == 1 && v.tol == 0.0 && v.row == i / cols && v.col == i % cols)
                    at = i;
                dx[i] = d;
            }
            EXPECT(at < n);
            /* Cut instead of rounded: caught, to the bit. */
            back_float_outputs(x, dy, gamma, mean, rstd, rows, cols, 0, 0, 0, dx, dg, db);
            for (size_t i = 0; i < n; i++) {
                uint32_t u;
                memcpy(&u, &dx[i], sizeof u);
                u &= 0xffff0000u;
                memcpy(&dx[i], &u, sizeof u);
            }
            EXPECT(back_check_bf16(rows, cols, 1, x, dy, gamma, mean, rstd, dx, dg, db, &v) ==
                   0 && v.bad > 0 && v.tol == 0.0 && strcmp(v.what, "dx") == 0);
            /* dgamma a float off: exact, caught. */
            back_float_outputs(x, dy, gamma, mean, rstd, rows, cols, 0, 0, 5, dx, dg, db);
            back_round_bf16(dx, n);
            EXPECT(back_check_bf16(rows, cols, 1, x, dy, gamma, mean, rstd, dx, dg, db, &v) ==
                   0 && v.bad == 1 && strcmp(v.what, "dgamma") == 0 && v.tol == 0.0);
        }
        if (fills[f] == FILL_SHIFTED) {
            /* Statistics of the unrounded x (x near 2000, where bfloat16
             * keeps steps of 8): far from the rounded x's, and caught. */
            int moved = 0;
            for (size_t r = 0; r < rows; r++)
                moved |= fabsf(rstd[r] - r0[r]) > 0.5f * r0[r];
            EXPECT(moved);
            back_float_outputs(x, dy, gamma, m0, r0, rows, cols, 0, 0, 0, dx, dg, db);
            back_round_bf16(dx, n);
            EXPECT(back_check_bf16(rows, cols, 0, x, dy, gamma, mean, rstd, dx, dg, db, &v) ==
                   0 && v.bad > 0);
        }
    }
    EXPECT(back_bf16_bytes(3, 5) == 2.0 * 3.0 * 15 + 4.0 * (3 * 5 + 2 * 3));
    struct program p = back_program_ln_bf16();
    EXPECT(p.pack == 8 && strcmp(p.op, "layernorm_backward_bf16") == 0 && p.gamma == 1 &&
           strcmp(p.elems, "bfloat16s") == 0);
    free(x), free(dy), free(dx), free(x0), free(dy0), free(gamma), free(g0), free(dg), free(db);
    free(mean), free(rstd), free(m0), free(r0);
}

/* The watch's bookkeeping (common/gpu_work_calls.h): a record is charged to
 * the call whose [start, end] holds its middle, the harness's own work
 * between calls to none, and the line's worst call is held to its own input. */
static void test_gpu_work_calls(void)
{
    EXPECT(gpu_work_call_at(NULL, 0, 5) == -1);
    struct gpu_work_call calls[3] = {
        {100, 200, 4000, 0, 0, 0}, {300, 400, 4000, 0, 0, 0}, {500, GPU_WORK_OPEN, 4000, 0, 0, 0}};
    EXPECT(gpu_work_call_at(calls, 3, 50) == -1);    /* the harness's copy of the input */
    EXPECT(gpu_work_call_at(calls, 3, 100) == 0);    /* both ends belong to the call */
    EXPECT(gpu_work_call_at(calls, 3, 150) == 0);
    EXPECT(gpu_work_call_at(calls, 3, 200) == 0);
    EXPECT(gpu_work_call_at(calls, 3, 201) == -1);   /* the harness reads the result back */
    EXPECT(gpu_work_call_at(calls, 3, 299) == -1);
    EXPECT(gpu_work_call_at(calls, 3, 300) == 1);
    EXPECT(gpu_work_call_at(calls, 3, 400) == 1);
    EXPECT(gpu_work_call_at(calls, 3, 450) == -1);
    EXPECT(gpu_work_call_at(calls, 3, 500) == 2);    /* the call still running */
    EXPECT(gpu_work_call_at(calls, 3, UINT64_MAX - 1) == 2);
    EXPECT(gpu_work_call_at(calls, 2, 600) == -1);   /* after the last call ended */

    /* A process: call 0 a kernel, the harness's copy of the whole output
     * after it (not charged, though the host's clock puts its start 5 ns
     * before the call's end), call 1 a kernel and 64 bytes by unified
     * memory, call 2 (still open, its records late) the whole input back. */
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_KERNEL, 120, 130, 0) == 1);
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_D2H, 195, 260, 4000) == 0);
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_D2H, 40, 98, 4000) == 0);
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_D2H, 40, 104, 4000) == 0);   /* an input copy's end */
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_KERNEL, 298, 398, 0) == 1);  /* a kernel's start */
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_UM_D2H, 390, 390, 64) == 1);
    EXPECT(gpu_work_charge(calls, 3, GPU_WORK_D2H, 900, 0, 4000) == 1);   /* no end: its start */
    EXPECT(calls[0].kernels == 1 && calls[0].d2h_bytes == 0 && calls[0].um_d2h_bytes == 0);
    EXPECT(calls[1].kernels == 1 && calls[1].d2h_bytes == 0 && calls[1].um_d2h_bytes == 64);
    EXPECT(calls[2].kernels == 0 && calls[2].d2h_bytes == 4000);
    struct gpu_work_totals t = gpu_work_sum(calls, 3, 64);
    EXPECT(t.calls == 3 && t.kernels == 2 && t.d2h_bytes == 4000 && t.um_d2h_bytes == 64);
    EXPECT(t.input_bytes == 4000);
    EXPECT(t.worst_d2h == 4000 && t.worst_input == 4000);
    EXPECT(t.host_calls == 1);   /* call 2: no kernel, its input to the host */

    /* The worst call is the largest share of its own input, at least the
     * floor: 63 bytes of 64 is no copy; 64 of 100 beats 100 of 1000 (a batch's
     * large check cannot hide a small one's copy); the first of a tie stays. */
    struct gpu_work_call batch[4] = {{1, 2, 1000, 1, 100, 0},
                                     {3, 4, 64, 1, 63, 0},
                                     {5, 6, 100, 1, 0, 64},
                                     {7, 8, 200, 1, 128, 0}};
    t = gpu_work_sum(batch, 4, 64);
    EXPECT(t.calls == 4 && t.kernels == 4 && t.d2h_bytes == 291 && t.um_d2h_bytes == 64);
    EXPECT(t.input_bytes == 1000);
    EXPECT(t.worst_d2h == 64 && t.worst_input == 100);
    t = gpu_work_sum(batch, 2, 64);
    EXPECT(t.worst_d2h == 100 && t.worst_input == 1000);
    t = gpu_work_sum(batch + 1, 1, 64);
    EXPECT(t.worst_d2h == 0 && t.worst_input == 0);
    t = gpu_work_sum(NULL, 0, 64);
    EXPECT(t.calls == 0 && t.worst_d2h == 0 && t.input_bytes == 0 && t.host_calls == 0);

    /* A call with no kernel that sent bytes to the host is counted however
     * few the bytes (8: two floats, under the floor); one with no kernel
     * that sent none (part 1's sizing call) is not, nor a kernel's own read. */
    struct gpu_work_call tiny[4] = {{1, 2, 4000, 2, 0, 0},
                                    {3, 4, 8, 0, 8, 0},
                                    {5, 6, 8, 0, 0, 0},
                                    {7, 8, 12, 1, 4, 0}};
    t = gpu_work_sum(tiny, 4, 64);
    EXPECT(t.kernels == 3 && t.worst_d2h == 0 && t.host_calls == 1);
    tiny[2].um_d2h_bytes = 4;   /* unified memory's bytes count the same */
    t = gpu_work_sum(tiny, 4, 64);
    EXPECT(t.host_calls == 2);
}

int main(void)
{
    test_parse_size();
    test_parse_options();
    test_fill();
    test_fill_exact();
    test_reference();
    test_tolerance();
    test_distinct();
    test_fresh();
    test_fresh_rows();
    test_stats();
    test_csv();
    test_rows();
    test_bf16();
    test_verify_set();
    test_masks();
    test_exact_bounds();
    test_row_options();
    test_rmsnorm();
    test_backward();
    test_backward_exact();
    test_option_words();
    test_run_lines();
    test_softmax_backward_exact();
    test_back_host();
    test_softmax_back_host();
    test_softmax_back_bf16();
    test_back_bf16();
    test_gpu_work_calls();
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
