/* harness.c: options, input, reference, tolerance, statistics, CSV.
 * Plain C99 with no CUDA, tested on the CPU by tests/unit_tests.c. */
#include "harness.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int parse_size(const char *s, size_t *out)
{
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return -1;   /* rejects "", "-5", "+5", " 5" */
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return -1;
    if (shift && v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

int parse_int_in(const char *s, long long lo, long long hi, long long *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int option_value(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *arg = argv[*i];
    size_t len = strlen(name);
    if (strncmp(arg, name, len) != 0)
        return 0;
    if (arg[len] == '=') {
        *val = arg + len + 1;
        return 1;
    }
    if (arg[len] != '\0')
        return 0;
    *val = (*i + 1 < argc) ? argv[++*i] : NULL;
    return 1;
}

int option_int(const char *flag, const char *v, long long lo, long long hi, const char *what,
               long long *out, char *err, size_t err_len)
{
    if (parse_int_in(v, lo, hi, out) == 0)
        return 0;
    if (what == NULL)
        what = "a number";
    if (lo == 0 && hi == LLONG_MAX)   /* --seed */
        snprintf(err, err_len, "%s needs %s up to 2^63 - 1, got '%s'", flag, what, v ? v : "");
    else
        snprintf(err, err_len, "%s needs %s from %lld to %lld, got '%s'", flag, what, lo, hi,
                 v ? v : "");
    return -1;
}

int option_file(const char *flag, const char *v, int stdin_ok, const char **out, char *err,
                size_t err_len)
{
    if (v == NULL || *v == '\0') {
        snprintf(err, err_len, "%s needs a file name%s", flag,
                 stdin_ok ? " (- for standard input)" : "");
        return -1;
    }
    *out = v;
    return 0;
}

void option_names(const char *const *names, int count, char *out, size_t len)
{
    size_t pos = 0;
    out[0] = '\0';
    for (int k = 0; k < count && pos < len; k++) {
        const char *sep = k == 0 ? "" : k == count - 1 ? " or " : ", ";
        int w = snprintf(out + pos, len - pos, "%s%s", sep, names[k]);
        if (w < 0)
            break;
        pos += (size_t)w;
    }
}

int option_choice(const char *flag, const char *v, const char *const *names, int count, int *out,
                  char *err, size_t err_len)
{
    for (int k = 0; k < count; k++)
        if (v != NULL && strcmp(v, names[k]) == 0) {
            *out = k;
            return 0;
        }
    char list[256];
    option_names(names, count, list, sizeof list);
    snprintf(err, err_len, "%s must be %s, got '%s'", flag, list, v ? v : "");
    return -1;
}

void option_unknown(const char *arg, const char *hint, char *err, size_t err_len)
{
    size_t len = strcspn(arg, "=");   /* --n=5 asks for --n */
    if (hint != NULL)
        snprintf(err, err_len, "unknown option '%.*s': %s (try --help)", (int)len, arg, hint);
    else
        snprintf(err, err_len, "unknown option '%s' (try --help)", arg);
}

static const enum fill_kind all_fills[FILL_COUNT] = {
    FILL_RANDOM, FILL_POSITIVE, FILL_WIDE, FILL_ONES, FILL_INTS, FILL_ONEHOT, FILL_EXACT,
    FILL_SHIFTED, FILL_TINY,
};

const char *fill_name(enum fill_kind fill)
{
    switch (fill) {
    case FILL_RANDOM: return "random";
    case FILL_POSITIVE: return "positive";
    case FILL_WIDE: return "wide";
    case FILL_ONES: return "ones";
    case FILL_INTS: return "ints";
    case FILL_ONEHOT: return "onehot";
    case FILL_EXACT: return "exact";
    case FILL_SHIFTED: return "shifted";
    case FILL_TINY: return "tiny";
    }
    return "?";
}

/* --fill: one of the fills program p takes (struct program's fills), named
 * in its error. Returns 0 for a fill of enum fill_kind (o->fill), 1 for part
 * 2's levels or centered (o->row_fill), -1 for a name p does not take. */
static int parse_fill(const struct program *p, const char *v, struct options *o, char *err,
                      size_t err_len)
{
    const char *names[FILL_COUNT + 2];
    int count = 0;
    for (int i = 0; i < FILL_COUNT; i++)
        if (p->fills == 0 || (p->fills & (1u << all_fills[i])))
            names[count++] = fill_name(all_fills[i]);
    if (p->kind == PROGRAM_ROWS && p->fills == 0) {
        names[count++] = "levels";
        names[count++] = "centered";
    }
    int k;
    if (option_choice("--fill", v, names, count, &k, err, err_len) != 0)
        return -1;
    if (strcmp(names[k], "levels") == 0 || strcmp(names[k], "centered") == 0) {
        o->row_fill = names[k][0] == 'l' ? ROW_FILL_LEVELS : ROW_FILL_CENTERED;
        return 1;
    }
    for (int i = 0; i < FILL_COUNT; i++)
        if (strcmp(names[k], fill_name(all_fills[i])) == 0)
            o->fill = all_fills[i];
    return 0;
}

static const char *const mask_names[MASK_COUNT] = {"none", "causal", "padded", "ends", "topk",
                                                   "mixed"};

const char *mask_name(enum row_mask mask)
{
    return (unsigned)mask < MASK_COUNT ? mask_names[mask] : "?";
}


void print_usage(const char *prog, const struct program *p)
{
    if (p->kind == PROGRAM_SUM) {
        printf("usage: %s [options]\n"
               "Sums n floats on the GPU with this step's kernel, checks the sum against a\n"
               "CPU reference in double, and times the whole reduction down to one float.\n"
               "A timed run first checks exact fills at n, n - 1 and one float off alignment.\n"
               "\n"
               "  -n N            number of floats, 1 .. 2^31-1; K/M/G = 2^10/2^20/2^30 (default 32M)\n"
               "  --reps R        timed repetitions, median reported (default 20)\n"
               "  --warmup W      untimed repetitions first (default 3)\n"
               "  --seed S        input seed (default 1)\n"
               "  --fill F        random: uniform in [-1,1) (the default for timed runs)\n"
               "                  positive: uniform in [0,1)   wide: +-[1,2) x 2^(-20..20)\n"
               "                  ones   ints: integers in -8..8   onehot: one 1 among zeros\n"
               "                  exact: nonzero integers wherever kernels go wrong, sum|x| < 2^24,\n"
               "                  so the check has zero tolerance (the default for --check)\n"
               "                  shifted: 2000 + uniform, variance 1   tiny: uniform x 1e-3\n"
               "  --at K          onehot's 1 at index K, or at n-k for K = -k (-1 = last)\n"
               "  --offset K      start the input K floats (0..3) past an aligned address\n",
               prog);
    } else {
        int pack = p->pack;
        const char *elem = p->elems;
        printf("usage: %s [options]\n"
               "Runs this step's row kernel (%s) on a rows x cols matrix of %s, checks\n"
               "every output against a CPU reference in double, and times it. A timed run\n"
               "first checks the shape, one column fewer and other offsets (the norms and\n"
               "softmax: the shifted and tiny fills too; LayerNorm: the centered fill, there\n"
               "and one column fewer; softmax: the levels fill, masked).\n"
               "\n"
               "  --rows R        rows, 1 .. 2^31-1 (default 32768)\n"
               "  --cols C        elements per row, 1 .. 2^20 (default 1024); rows x cols may\n"
               "                  pass 2^32 wherever the device's memory holds it\n"
               "  --reps R        timed repetitions, median reported (default 20)\n"
               "  --warmup W      untimed repetitions first (default 3)\n"
               "  --seed S        input seed (default 1)\n"
               "  --fill F        random: uniform in [-1,1) (the default for timed runs)\n"
               "                  positive: uniform in [0,1)   wide: +-[1,2) x 2^(-20..20)\n"
               "                  ones   ints: integers in -8..8   onehot: one 1 among zeros\n"
               "                  exact: nonzero integers, every row's sum exact in float\n"
               "                  (the default for --check)\n"
               "                  shifted: 2000 + uniform, variance 1   tiny: uniform x 1e-3\n"
               "                  levels: 0 or -200, so softmax's every exponential is 0 or 1\n"
               "                  centered: 128 +- 1 (less for wide rows), mean exact: a\n"
               "                  LayerNorm's mean and variance are exact\n",
               prog, p->op, elem);
        if (p->masks)
            printf("  --mask M        -inf over the fill: causal, padded (whole rows), ends (the\n"
                   "                  first and last few), topk (all but a few), mixed (the four\n"
                   "                  in turn, row by row), or none (the default)\n");
        printf("  --at K          onehot's 1 at index K, or at n-k for K = -k (-1 = last)\n"
               "  --offset K      start x K %s (0..%d) past a 16-byte boundary\n"
               "  --y-offset K    the same for y\n", elem, pack - 1);
        if (p->gamma && p->beta)
            printf("  --gamma-offset K, --beta-offset K   the same for gamma and beta\n");
        else if (p->gamma)
            printf("  --gamma-offset K  the same for gamma\n");
        printf("  --check-every K check rows 0, K, 2K ... and the last K only, not every row\n"
               "                  (the CPU takes minutes over a matrix past 2^32 elements)\n");
    }
    printf("  --csv FILE      append one result row to FILE (header if the file is new)\n"
           "  --check         verify one run only; no timing (the row's time columns are empty)\n"
           "  --no-verify     a timed run skips its checks (its own runs are still verified)\n");
    if (p->kind == PROGRAM_SUM)
        printf("  --cpu-sums      also sum on the CPU in float: a plain loop and a Kahan loop\n");
    printf("  --same-input    every timed repetition gets the same input (by default each one\n"
           "                  gets a few elements changed, so none can reuse an earlier answer)\n");
    printf("  --checks FILE   run many checks in this process, one line of options each\n"
           "                  (e.g. --fill ones --offset 3); - reads standard input\n"
           "  --runs FILE     the same for timed runs (what make bench uses)\n"
           "  --no-flush      do not flush the L2 cache before each repetition\n"
           "  --device D      CUDA device index (default 0)\n");
    if (p->kind == PROGRAM_SUM)
        printf("  --gpu-info      print the device's name, SMs, threads per SM and memory\n");
    else
        printf("  --gpu-info      print the device's name, SMs, threads per SM and memory, and\n"
               "                  this program's op, element type and path widths\n");
    printf("  --version       print the step, the hash of its code and build, the revision\n"
           "  -h, --help      this text\n"
           "\n"
           "exit status: 0 verified, 1 wrong result, 2 usage error, 3 device error\n");
}

/* Part 2's sizes: a whole number (K/M/G allowed) in [lo, hi]. */
static int parse_count(const char *flag, const char *v, size_t lo, size_t hi, size_t *out,
                       char *err, size_t err_len)
{
    if (v == NULL || parse_size(v, out) != 0) {
        snprintf(err, err_len, "%s needs a whole number such as 1000 or 32K, got '%s'", flag,
                 v ? v : "");
        return -1;
    }
    if (*out < lo || *out > hi) {
        snprintf(err, err_len, "%s must be from %zu to %zu, got %zu", flag, lo, hi, *out);
        return -1;
    }
    return 0;
}

/* Part 2's offsets, in elements: 0 .. pack - 1, every place in a 16-byte pack. */
static int parse_pack_offset(const char *flag, const char *v, int pack, int *out, char *err,
                             size_t err_len)
{
    size_t k;
    if (v == NULL || !isdigit((unsigned char)v[0]) || parse_size(v, &k) != 0 ||
        k >= (size_t)pack) {
        snprintf(err, err_len, "%s needs a number from 0 to %d (elements into a 16-byte pack), "
                               "got '%s'", flag, pack - 1, v ? v : "");
        return -1;
    }
    *out = (int)k;
    return 0;
}

/* 1 if the first len characters of arg are flag, all of it. */
static int names(const char *arg, size_t len, const char *flag)
{
    return strlen(flag) == len && strncmp(arg, flag, len) == 0;
}

/* An option the program does not take. The other part's size flags, and
 * --n, name this part's: a reader who moves between the parts types them. */
static void unknown_option(const char *arg, const struct program *p, char *err, size_t err_len)
{
    size_t len = strcspn(arg, "=");
    const char *hint = NULL;
    if (p->kind == PROGRAM_SUM &&
        (names(arg, len, "--n") || names(arg, len, "--rows") || names(arg, len, "--cols")))
        hint = "the number of floats is -n N";
    if (p->kind == PROGRAM_ROWS && (names(arg, len, "-n") || names(arg, len, "--n")))
        hint = "the shape is --rows R and --cols C";
    option_unknown(arg, hint, err, err_len);
}

enum parse_status parse_options(int argc, char **argv, const struct program *p,
                                struct options *o, char *err, size_t err_len)
{
    int rows = p->kind == PROGRAM_ROWS;
    int pack = p->pack;
    o->program = *p;
    o->n = REDUCE_DEFAULT_N;
    o->rows = ROWS_DEFAULT_ROWS;
    o->cols = ROWS_DEFAULT_COLS;
    o->reps = 20;
    o->warmup = 3;
    o->seed = 1;
    o->fill = FILL_RANDOM;
    o->row_fill = ROW_FILL_SHARED;
    o->fill_given = 0;
    o->mask = MASK_NONE;
    o->at = 0;
    o->at_given = 0;
    o->offset = 0;
    o->y_offset = 0;
    o->gamma_offset = 0;
    o->beta_offset = 0;
    o->check_every = 1;
    o->csv_path = NULL;
    o->check_only = 0;
    o->verify = 1;
    o->flush = 1;
    o->same_input = 0;
    o->device = 0;
    o->cpu_sums = 0;
    o->checks_path = NULL;
    o->runs_path = NULL;
    int gpu_info = 0;
    int row_fill_given = 0;   /* levels or centered, counted apart: beside a shared fill, an error */

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        long long x;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return PARSE_HELP;
        if (strcmp(a, "--version") == 0)
            return PARSE_VERSION;
        if (strcmp(a, "--gpu-info") == 0) {
            gpu_info = 1;
        } else if (strcmp(a, "--check") == 0) {
            o->check_only = 1;
        } else if (strcmp(a, "--no-verify") == 0) {
            o->verify = 0;
        } else if (strcmp(a, "--cpu-sums") == 0 && !rows) {
            o->cpu_sums = 1;
        } else if (strcmp(a, "--no-flush") == 0) {
            o->flush = 0;
        } else if (strcmp(a, "--same-input") == 0) {
            o->same_input = 1;
        } else if (!rows && option_value(argc, argv, &i, "-n", &v)) {
            if (v == NULL || parse_size(v, &o->n) != 0) {
                snprintf(err, err_len, "-n needs a whole number of floats such as 1000 or 32M, got '%s'",
                         v ? v : "");
                return PARSE_ERROR;
            }
            if (o->n == 0) {
                snprintf(err, err_len, "-n must be at least 1");
                return PARSE_ERROR;
            }
            if (o->n > REDUCE_MAX_N) {
                snprintf(err, err_len, "-n %zu is too large: the most is 2147483647 (2^31 - 1)", o->n);
                return PARSE_ERROR;
            }
        } else if (rows && option_value(argc, argv, &i, "--rows", &v)) {
            if (parse_count("--rows", v, 1, ROWS_MAX_ROWS, &o->rows, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (rows && option_value(argc, argv, &i, "--cols", &v)) {
            if (parse_count("--cols", v, 1, ROWS_MAX_COLS, &o->cols, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (rows && option_value(argc, argv, &i, "--y-offset", &v)) {
            if (parse_pack_offset("--y-offset", v, pack, &o->y_offset, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (rows && option_value(argc, argv, &i, "--gamma-offset", &v)) {
            if (parse_pack_offset("--gamma-offset", v, pack, &o->gamma_offset, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (rows && option_value(argc, argv, &i, "--beta-offset", &v)) {
            if (parse_pack_offset("--beta-offset", v, pack, &o->beta_offset, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (rows && option_value(argc, argv, &i, "--check-every", &v)) {
            if (parse_count("--check-every", v, 1, ROWS_MAX_ROWS, &o->check_every, err,
                            err_len) != 0)
                return PARSE_ERROR;
        } else if (rows && option_value(argc, argv, &i, "--mask", &v)) {
            int k;
            if (option_choice("--mask", v, mask_names, MASK_COUNT, &k, err, err_len) != 0)
                return PARSE_ERROR;
            o->mask = (enum row_mask)k;
        } else if (option_value(argc, argv, &i, "--reps", &v)) {
            if (option_int("--reps", v, 1, 100000, NULL, &x, err, err_len) != 0)
                return PARSE_ERROR;
            o->reps = (int)x;
        } else if (option_value(argc, argv, &i, "--warmup", &v)) {
            if (option_int("--warmup", v, 0, 100000, NULL, &x, err, err_len) != 0)
                return PARSE_ERROR;
            o->warmup = (int)x;
        } else if (option_value(argc, argv, &i, "--seed", &v)) {
            if (option_int("--seed", v, 0, LLONG_MAX, "a non-negative number", &x, err,
                           err_len) != 0)
                return PARSE_ERROR;
            o->seed = (uint64_t)x;
        } else if (option_value(argc, argv, &i, "--fill", &v)) {
            int row_fill = parse_fill(p, v, o, err, err_len);
            if (row_fill < 0)
                return PARSE_ERROR;
            if (row_fill)
                row_fill_given = 1;
            else
                o->fill_given = 1;
        } else if (option_value(argc, argv, &i, "--at", &v)) {
            /* Part 2's matrices pass 2^32 elements: only "outside the input" bounds it. */
            long long lo = rows ? LLONG_MIN : -(long long)REDUCE_MAX_N;
            long long hi = rows ? LLONG_MAX : (long long)REDUCE_MAX_N - 1;
            if (parse_int_in(v, lo, hi, &x) != 0) {
                snprintf(err, err_len, "--at needs an index, or -k for n - k, got '%s'", v ? v : "");
                return PARSE_ERROR;
            }
            o->at = x;
            o->at_given = 1;
        } else if (rows && option_value(argc, argv, &i, "--offset", &v)) {
            if (parse_pack_offset("--offset", v, pack, &o->offset, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--offset", &v)) {
            if (option_int("--offset", v, 0, REDUCE_MAX_OFFSET, NULL, &x, err, err_len) != 0)
                return PARSE_ERROR;
            o->offset = (int)x;
        } else if (option_value(argc, argv, &i, "--csv", &v)) {
            if (option_file("--csv", v, 0, &o->csv_path, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--checks", &v)) {
            if (option_file("--checks", v, 1, &o->checks_path, err, err_len) != 0)
                return PARSE_ERROR;
            o->check_only = 1;
        } else if (option_value(argc, argv, &i, "--runs", &v)) {
            if (option_file("--runs", v, 1, &o->runs_path, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--device", &v)) {
            if (option_int("--device", v, 0, 1023, "a device index", &x, err, err_len) != 0)
                return PARSE_ERROR;
            o->device = (int)x;
        } else {
            unknown_option(a, p, err, err_len);
            return PARSE_ERROR;
        }
    }
    if (o->checks_path != NULL && o->runs_path != NULL) {
        snprintf(err, err_len, "--checks and --runs cannot be combined");
        return PARSE_ERROR;
    }
    /* One run is a check of correctness: give it the fill that sees any
     * lost element at any n. Timed runs keep realistic random data. */
    if (o->check_only && !o->fill_given)
        o->fill = FILL_EXACT;
    if (rows) {
        if (o->rows > ROWS_MAX_N / o->cols) {
            snprintf(err, err_len, "--rows %zu x --cols %zu is too large: at most 2^36 elements",
                     o->rows, o->cols);
            return PARSE_ERROR;
        }
        o->n = o->rows * o->cols;
        if (row_fill_given) {
            if (o->fill_given) {
                snprintf(err, err_len, "--fill is given twice");
                return PARSE_ERROR;
            }
            o->fill_given = 1;
        }
    }
    if (o->at_given && (o->fill != FILL_ONEHOT || o->row_fill != ROW_FILL_SHARED)) {
        snprintf(err, err_len, "--at places onehot's 1: it needs --fill onehot");
        return PARSE_ERROR;
    }
    if (o->at_given && (o->at >= (long long)o->n || o->at < -(long long)o->n)) {
        snprintf(err, err_len, "--at %lld is outside the input: use 0 .. %zu, or -%zu .. -1",
                 o->at, o->n - 1, o->n);
        return PARSE_ERROR;
    }
    if (o->mask != MASK_NONE && !p->masks) {
        snprintf(err, err_len, "--mask lays -inf over softmax's input: this program computes %s",
                 p->op);
        return PARSE_ERROR;
    }
    if (o->gamma_offset && !p->gamma) {
        snprintf(err, err_len, "--gamma-offset places gamma, which LayerNorm and RMSNorm take: "
                               "this program computes %s", p->op);
        return PARSE_ERROR;
    }
    if (o->beta_offset && !p->beta) {
        snprintf(err, err_len, "--beta-offset places beta, which LayerNorm takes: this program "
                               "computes %s", p->op);
        return PARSE_ERROR;
    }
    return gpu_info ? PARSE_GPU_INFO : PARSE_OK;
}

void row_fill_name(const struct options *o, char *out, size_t len)
{
    const char *fill = o->row_fill == ROW_FILL_LEVELS     ? "levels"
                       : o->row_fill == ROW_FILL_CENTERED ? "centered"
                                                          : fill_name(o->fill);
    if (o->mask == MASK_NONE)
        snprintf(out, len, "%s", fill);
    else
        snprintf(out, len, "%s/%s", fill, mask_name(o->mask));
}

int verify_set(const struct options *o, struct options *out)
{
    unsigned checks = o->program.checks;
    int count = 0;
    struct options c = *o;
    c.check_only = 1;
    c.fill = FILL_EXACT;
    c.row_fill = ROW_FILL_SHARED;
    c.fill_given = 1;
    c.mask = MASK_NONE;
    c.at_given = 0;
    c.csv_path = NULL;
    c.cpu_sums = 0;
    c.check_every = 1;
    out[count++] = c;
    if (o->program.kind == PROGRAM_SUM) {
        if (o->n > 1) {
            out[count] = c;
            out[count].n = o->n - 1;
            count++;
        }
        out[count] = c;
        out[count].offset = (o->offset + 1) % (REDUCE_MAX_OFFSET + 1);
        return count + 1;
    }
    int pack = o->program.pack;
    if (o->cols > 1) {
        out[count] = c;
        out[count].cols = o->cols - 1;
        out[count].n = o->rows * (o->cols - 1);
        count++;
    }
    out[count] = c;
    out[count++].offset = (o->offset + 1) % pack;
    out[count] = c;
    out[count++].y_offset = (o->y_offset + 1) % pack;
    if (checks & ROW_CHECK_SHIFTED_TINY) {
        out[count] = c;
        out[count++].fill = FILL_SHIFTED;
    }
    if (checks & ROW_CHECK_CENTERED) {
        out[count] = c;
        out[count++].row_fill = ROW_FILL_CENTERED;
        /* One column fewer too: at a power-of-two width the centered rows'
         * sum of squares is exact in float, so a one-pass variance (E[x^2]
         * - mean^2) passes there and fails one column off. */
        if (o->cols > 1) {
            out[count] = out[count - 1];
            out[count].cols = o->cols - 1;
            out[count].n = o->rows * (o->cols - 1);
            count++;
        }
    }
    if (checks & ROW_CHECK_SHIFTED_TINY) {
        out[count] = c;
        out[count++].fill = FILL_TINY;
    }
    if (checks & ROW_CHECK_LEVELS_MASKED) {
        out[count] = c;
        out[count].row_fill = ROW_FILL_LEVELS;
        out[count++].mask = MASK_MIXED;
    }
    return count;
}

/* Element i depends only on (seed, i): the input is the same whatever n is. */
#define mix64 splitmix64
uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

size_t onehot_index(size_t n, uint64_t seed, int at_given, long long at)
{
    if (!at_given)
        return mix64(mix64(seed)) % n;
    return at >= 0 ? (size_t)at : n - (size_t)(-at);
}

/* The sparse period of --fill exact: the smallest power of two (>= 64)
 * that puts at most about 2^20 periods into n, so that the marks on both
 * sides of every period boundary stay within the 2^24 budget. */
static size_t exact_period(size_t n)
{
    size_t period = 64;
    while (period < n / EXACT_SWEEP)
        period *= 2;
    return period;
}

/* Which elements --fill exact sets. Up to EXACT_DENSE_MAX, all of them.
 * Above: the first and last EXACT_EDGE (heads, tails, the first and last
 * blocks and warps of any grid), two on each side of every multiple of the
 * period (block and grid boundaries), and a random sweep of the rest. */
static int exact_marked(size_t i, size_t n, size_t period, uint64_t h)
{
    if (n <= EXACT_DENSE_MAX || i < EXACT_EDGE || i >= n - EXACT_EDGE)
        return 1;
    size_t r = i & (period - 1);
    if (r < 2 || r >= period - 2)
        return 1;
    /* The top 32 bits of h, uniform: true with probability EXACT_SWEEP / n. */
    return (h >> 32) < (uint64_t)((double)EXACT_SWEEP / (double)n * 4294967296.0);
}

/* A marked element's value: a magnitude that cycles with i (so a neighbour
 * read by mistake has another one) and a random sign. */
static float exact_value(size_t i, uint64_t h, size_t mod)
{
    float m = (float)(1 + i % mod);
    return (h & 2) ? -m : m;
}

/* Budget: edges 2^17 x 31 (mean of 1..61) = 4.1M, plus 2^22 x 2 (mean of
 * 1..3) dense or about 5.2M x 2 sparse marks: at most about 14.6M < 2^24.
 * tests/unit_tests.c checks sum|x| < 2^24 at the worst sizes. */
void fill_input(float *x, size_t n, enum fill_kind fill, uint64_t seed, size_t one)
{
    uint64_t base = mix64(seed);
    size_t period = exact_period(n);
    /* Element i depends only on i: any number of threads fills the same data. */
    #pragma omp parallel for schedule(static) if (n > ((size_t)1 << 20))
    for (size_t i = 0; i < n; i++) {
        uint64_t h = mix64(base + i);
        float v = 0.0f;
        switch (fill) {
        case FILL_RANDOM:   /* 24 random bits: every value is exact in float, in [-1, 1). */
            v = (float)(h >> 40) * 0x1p-23f - 1.0f;
            break;
        case FILL_POSITIVE:
            v = (float)(h >> 40) * 0x1p-24f;
            break;
        case FILL_WIDE: {   /* Random sign, mantissa in [1, 2), exponent in -20..20: large
                             * and small terms mixed, and cancellation between them. */
            float m = 1.0f + (float)(h & 0x7fffff) * 0x1p-23f;
            int e = (int)((h >> 23) % 41) - 20;
            v = ldexpf((h >> 63) ? -m : m, e);
            break;
        }
        case FILL_ONES:
            v = 1.0f;
            break;
        case FILL_INTS:
            v = (float)((int)(h % 17) - 8);
            break;
        case FILL_ONEHOT:
            v = (i == one) ? 1.0f : 0.0f;
            break;
        case FILL_EXACT:
            if (i < EXACT_EDGE || i >= n - EXACT_EDGE)
                v = exact_value(i, h, EXACT_EDGE_MOD);
            else if (exact_marked(i, n, period, h))
                v = exact_value(i, h, EXACT_MOD);
            break;
        case FILL_SHIFTED:  /* mean 2000, variance 1 (PyTorch #51102's input): sqrt(3) x [-1, 1) */
            v = 2000.0f + ((float)(h >> 40) * 0x1p-23f - 1.0f) * 1.7320508f;
            break;
        case FILL_TINY:     /* variance about 3e-7, below LayerNorm's eps of 1e-5 */
            v = ((float)(h >> 40) * 0x1p-23f - 1.0f) * 1e-3f;
            break;
        }
        x[i] = v;
    }
}

void fill_rows(float *x, size_t rows, size_t cols, enum fill_kind fill, uint64_t seed,
               size_t one)
{
    size_t n = rows * cols;
    if (fill != FILL_EXACT) {
        fill_input(x, n, fill, seed, one);
        return;
    }
    uint64_t base = mix64(seed);
    /* Every element, every row: a row's sum of |x| is at most 31 x cols on
     * average (61 x cols at worst), under 2^24 for any row up to 2^18 wide. */
    #pragma omp parallel for schedule(static) if (n > ((size_t)1 << 20))
    for (size_t i = 0; i < n; i++)
        x[i] = exact_value(i, mix64(base + i), EXACT_EDGE_MOD);
}

#define PAIRWISE_LEAF 256   /* plain loop below this: fast; error (255 + log2(n / 256)) x 2^-53 x sum|x| */

#define PAIRWISE_TASK_MIN ((size_t)1 << 18)   /* halves at least this long run as tasks */

/* r.exact here means "every value is an integer"; reference_sum adds the
 * 2^24 condition once the whole sum of |x| is known. The two halves of a
 * large range may run on two threads; the tree is the same either way. */
static struct reference pairwise(const float *x, size_t n)
{
    struct reference r = {0.0, 0.0, 1};
    if (n <= PAIRWISE_LEAF) {
        for (size_t i = 0; i < n; i++) {
            r.sum += x[i];
            r.sum_abs += fabs(x[i]);
            r.exact &= (x[i] == truncf(x[i]));
        }
        return r;
    }
    size_t half = n / 2;
    struct reference a, b;
    #pragma omp task shared(a) if (half >= PAIRWISE_TASK_MIN)
    a = pairwise(x, half);
    b = pairwise(x + half, n - half);
    #pragma omp taskwait
    r.sum = a.sum + b.sum;
    r.sum_abs = a.sum_abs + b.sum_abs;
    r.exact = a.exact && b.exact;
    return r;
}

struct reference reference_sum(const float *x, size_t n)
{
    struct reference r;
    #pragma omp parallel if (n >= 2 * PAIRWISE_TASK_MIN)
    #pragma omp single
    r = pairwise(x, n);
    r.exact = r.exact && r.sum_abs < EXACT_SUM_LIMIT;
    return r;
}

double tolerance(size_t n, struct reference ref)
{
    if (ref.exact)
        return 0.0;
    double k = (double)(n > 0 ? n - 1 : 0) * 0x1p-24;   /* (n - 1) u */
    if (k >= TOLERANCE_K_MAX)
        return ref.sum_abs;   /* the bound says nothing this far: only exact fills check */
    return k / (1.0 - k) * ref.sum_abs + 0x1p-24 * ref.sum_abs;
}

uint64_t fresh_seed(void)
{
    uint64_t seed = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f != NULL) {
        if (fread(&seed, sizeof seed, 1, f) != 1)
            seed = 0;
        fclose(f);
    }
    /* No /dev/urandom: the clock and the process still differ run to run. */
    return seed ? seed : splitmix64((uint64_t)time(NULL) ^ ((uint64_t)clock() << 32));
}

void fresh_init(struct fresh *f, uint64_t seed, struct reference base)
{
    f->state = seed;
    f->sign = 1;
    if (base.exact) {
        f->step = 1.0;
        return;
    }
    int e = 0;
    frexp(base.sum_abs > 0.0 ? base.sum_abs : 1.0, &e);   /* sum_abs < 2^e */
    f->step = ldexp(1.0, e - 18);
}

void fresh_next(struct fresh *f, float *x, size_t n, struct reference *ref, size_t *pos,
                float *val)
{
    for (int k = 0; k < FRESH_COUNT; k++) {
        f->state = splitmix64(f->state);
        size_t i = (size_t)(f->state % n);
        float old = x[i], now = (float)((double)old + f->sign * f->step);
        x[i] = now;
        ref->sum += (double)now - (double)old;
        ref->sum_abs += fabs((double)now) - fabs((double)old);
        pos[k] = i;
        val[k] = now;
    }
    /* Integers stay integers (step 1): exact while sum |x| stays below 2^24. */
    ref->exact = ref->exact && ref->sum_abs < EXACT_SUM_LIMIT;
    f->sign = -f->sign;
}

int fresh_moved(float result, double now, double before)
{
    return isfinite(result) && fabs((double)result - now) < fabs((double)result - before);
}

int above_peak(double gbps, double peak_gbps, int flushed)
{
    return flushed && peak_gbps > 0.0 && gbps > peak_gbps;
}

float sum_sequential(const float *x, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

/* Kahan: c holds what the last add rounded away, and is fed back into the
 * next one. Without -ffast-math the compiler may not simplify (t - s) - y
 * to 0, so the compensation survives. */
float sum_kahan(const float *x, size_t n)
{
    float s = 0.0f, c = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float y = x[i] - c;
        float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    return s;
}

int within_tolerance(float result, double ref, double tol)
{
    if (!isfinite(result))
        return 0;
    return fabs((double)result - ref) <= tol;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int count_distinct(const float *v, int count)
{
    uint32_t *bits = malloc((size_t)count * sizeof *bits);
    if (bits == NULL)
        return -1;
    memcpy(bits, v, (size_t)count * sizeof *bits);   /* compare bit patterns, not values */
    qsort(bits, (size_t)count, sizeof *bits, compare_u32);
    int distinct = count > 0;
    for (int i = 1; i < count; i++)
        distinct += bits[i] != bits[i - 1];
    free(bits);
    return distinct;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stats compute_stats(double *v, int count)
{
    qsort(v, (size_t)count, sizeof *v, compare_doubles);
    struct stats s;
    s.min = v[0];
    s.max = v[count - 1];
    s.median = (count % 2) ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
    return s;
}

double bandwidth_gbps(size_t n, double us)
{
    return (double)n * sizeof(float) / (us * 1e3);   /* bytes / ns = GB/s */
}

int run_lines(const char *path, const struct options *base, int check_only, char *prog,
              run_fn run, void *ctx)
{
    const char *flag = check_only ? "--checks" : "--runs";
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "error: %s %s: cannot read this file\n", flag, path);
        return 2;
    }
    char line[1024], copy[1024], err[256];
    int worst = 0, number = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        number++;
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(copy, sizeof copy, "%s", line);
        char *argv[64] = {prog, "--check"};
        int argc = check_only ? 2 : 1;
        int first = argc;
        for (char *t = strtok(copy, " \t"); t != NULL && argc < 63; t = strtok(NULL, " \t"))
            argv[argc++] = t;
        if (argc == first || argv[first][0] == '#')
            continue;   /* blank or comment */
        argv[argc] = NULL;
        struct options o;
        enum parse_status st = parse_options(argc, argv, &base->program, &o, err, sizeof err);
        int nested = st == PARSE_OK && (o.checks_path != NULL || o.runs_path != NULL);
        if (st != PARSE_OK || nested) {
            fprintf(stderr, "error: %s %s line %d: %s\n", flag, path, number,
                    nested ? "--checks and --runs cannot nest"
                    : st == PARSE_ERROR ? err : "not an option of a run");
            worst = 2;
            break;
        }
        o.device = base->device;
        o.csv_path = base->csv_path;
        o.cpu_sums = o.cpu_sums || base->cpu_sums;
        o.verify = o.verify && base->verify;
        o.same_input = o.same_input || base->same_input;
        if (!base->flush)
            o.flush = 0;
        printf("== %s %s\n", check_only ? "check" : "run", line);
        int rc = run(&o, ctx);
        fflush(stdout);
        if (rc > worst)
            worst = rc;
        if (rc == 2)
            break;
    }
    if (f != stdin)
        fclose(f);
    return worst;
}

/* Appends one field, quoted if it holds a comma, quote or newline. */
static void put_field(char *buf, size_t len, size_t *pos, const char *s, int first)
{
    int quote = strpbrk(s, ",\"\n") != NULL;
    size_t need = strlen(s) * 2 + 3;   /* every char doubled, two quotes, a comma */
    if (*pos + need >= len) {
        *pos = len;   /* marks overflow */
        return;
    }
    if (!first)
        buf[(*pos)++] = ',';
    if (quote)
        buf[(*pos)++] = '"';
    for (; *s; s++) {
        if (*s == '"')
            buf[(*pos)++] = '"';
        buf[(*pos)++] = *s;
    }
    if (quote)
        buf[(*pos)++] = '"';
}

int csv_format_row(const struct result_row *r, char *buf, size_t len)
{
    char num[27][32];
    snprintf(num[0], 32, "%zu", r->n);
    snprintf(num[1], 32, "%d", r->reps);
    snprintf(num[2], 32, "%d", r->warmup);
    snprintf(num[3], 32, "%.3f", r->us.median);
    snprintf(num[4], 32, "%.3f", r->us.min);
    snprintf(num[5], 32, "%.3f", r->us.max);
    snprintf(num[6], 32, "%.2f", r->gbps);
    snprintf(num[7], 32, "%.2f", r->pct_peak);
    snprintf(num[8], 32, "%.9g", r->result);
    snprintf(num[9], 32, "%.17g", r->reference);
    snprintf(num[10], 32, "%.3g", r->abs_err);
    snprintf(num[11], 32, "%.3g", r->tol);
    snprintf(num[12], 32, "%d", r->pass);
    snprintf(num[13], 32, "%.1f", r->peak_gbps);
    snprintf(num[14], 32, "%.1f", r->l2_mb);
    snprintf(num[15], 32, "%d", r->sms);
    snprintf(num[16], 32, "%d", r->flush);
    snprintf(num[17], 32, "%d", r->offset);
    snprintf(num[18], 32, "%" PRIu64, r->seed);
    snprintf(num[19], 32, "%d", r->distinct);
    snprintf(num[20], 32, "%.17g", r->sum_abs);
    snprintf(num[21], 32, "%.9g", r->cpu_seq);
    snprintf(num[22], 32, "%.9g", r->cpu_kahan);
    snprintf(num[23], 32, "%zu", r->rows);
    snprintf(num[24], 32, "%zu", r->cols);
    snprintf(num[25], 32, "%.0f", r->bytes);
    if (!r->timed)   /* a --check row: no timing to report */
        for (int k = 3; k <= 7; k++)
            num[k][0] = '\0';
    if (!r->has_cpu_sums)
        num[21][0] = num[22][0] = '\0';
    if (r->rows == 0)   /* a part 1 row */
        num[23][0] = num[24][0] = '\0';

    /* Column order = CSV_HEADER. */
    const char *fields[] = {
        r->step, num[0], num[1], num[2], num[3], num[4], num[5], num[6], num[7],
        num[8], num[9], num[10], num[11], num[12], r->gpu, r->cc, r->driver, r->cuda,
        num[13], num[14], num[15], num[16], num[17], r->fill, num[18], r->git_rev,
        r->timed ? "timed" : "check", num[19], r->code_hash, num[20], num[21], num[22],
        num[23], num[24], r->op ? r->op : "", num[25], r->arch ? r->arch : "",
        r->toolchain ? r->toolchain : "",
    };
    size_t pos = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        put_field(buf, len, &pos, fields[i], i == 0);
    if (pos >= len)
        return -1;
    buf[pos] = '\0';
    return (int)pos;
}

int csv_append_row(const char *path, const struct result_row *r)
{
    char line[4096];
    if (csv_format_row(r, line, sizeof line) < 0)
        return -1;
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return -1;
    /* Where "a" starts is up to the C library: seek to the end to ask the size. */
    int new_file = fseek(f, 0, SEEK_END) == 0 && ftell(f) == 0;
    int ok = (!new_file || fprintf(f, "%s\n", CSV_HEADER) >= 0) &&
             fprintf(f, "%s\n", line) >= 0;
    ok = (fclose(f) == 0) && ok;
    return ok ? 0 : -1;
}

int csv_check_writable(const char *path)
{
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return -1;
    return fclose(f) == 0 ? 0 : -1;
}
