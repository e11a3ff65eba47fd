/* harness.h: the CPU side of the harness (options, input, reference,
 * tolerance, statistics, CSV). No CUDA in here, so tests/unit_tests.c
 * checks all of it on a machine without a GPU. */
#ifndef REDUCE_HARNESS_H
#define REDUCE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* 2^31 - 1: the kernels index with 32-bit unsigned ints, which stays
 * exact for i + 2 * blockDim.x past any n up to this. 8 GiB of floats. */
#define REDUCE_MAX_N ((size_t)2147483647u)
#define REDUCE_DEFAULT_N ((size_t)1 << 25)   /* 32M floats, the seed articles' size */
#define REDUCE_MAX_OFFSET 3                   /* enough to misalign a float4 every way */

enum fill_kind { FILL_RANDOM, FILL_ONES, FILL_INTS, FILL_ONEHOT };

struct options {
    size_t n;
    int reps;
    int warmup;
    uint64_t seed;
    enum fill_kind fill;
    int offset;             /* input starts this many floats past an aligned address */
    const char *csv_path;   /* NULL: no CSV row */
    int check_only;         /* one verified run, no timing */
    int flush;              /* flush L2 before each repetition */
    int device;
};

enum parse_status { PARSE_OK = 0, PARSE_HELP = 1, PARSE_ERROR = -1 };

/* "4096", "32M", "1G": binary suffixes K, M, G (either case). Returns 0, or -1
 * for anything else (empty, sign, junk, overflow). 0 itself parses. */
int parse_size(const char *s, size_t *out);

/* Fills *o from argv. On PARSE_ERROR, err holds a one-line message. */
enum parse_status parse_options(int argc, char **argv, struct options *o,
                                char *err, size_t err_len);
void print_usage(const char *prog);

const char *fill_name(enum fill_kind fill);

/* Reproducible from (fill, seed) alone, element by element. */
void fill_input(float *x, size_t n, enum fill_kind fill, uint64_t seed);

struct reference {
    double sum;       /* the exact-enough answer */
    double sum_abs;   /* scales the tolerance */
};

/* Pairwise summation in double: error ~ log2(n) * 2^-53 * sum|x|, far
 * below anything float32 can resolve. */
struct reference reference_sum(const float *x, size_t n);

/* (ceil(log2 n) + 1) * 2^-24 * sum|x|: the worst-case error of a float32
 * tree of depth ceil(log2 n), plus the final rounding. See README.md. */
double tolerance(size_t n, double sum_abs);

/* 1 if result is finite and within tol of ref; NaN and Inf never pass. */
int within_tolerance(float result, double ref, double tol);

struct stats {
    double median, min, max;
};

/* Sorts v in place. count >= 1. */
struct stats compute_stats(double *v, int count);

/* One line of the results file; the header is CSV_HEADER. */
#define CSV_HEADER                                                              \
    "step,n,reps,warmup,median_us,min_us,max_us,gbps,pct_peak,result,reference," \
    "abs_err,tol,pass,gpu,cc,driver,cuda,peak_gbps,l2_mb,sms,flush,offset,fill,"  \
    "seed,git_rev"

struct result_row {
    const char *step;
    size_t n;
    int reps, warmup;
    struct stats us;
    double gbps, pct_peak;
    float result;
    double reference, abs_err, tol;
    int pass;
    const char *gpu, *cc, *driver, *cuda;
    double peak_gbps;
    double l2_mb;
    int sms;
    int flush, offset;
    const char *fill;
    uint64_t seed;
    const char *git_rev;
};

/* Writes the row (no newline) into buf; returns the length, or -1 if it
 * did not fit. Fields holding a comma or quote are quoted. */
int csv_format_row(const struct result_row *r, char *buf, size_t len);

/* Appends the row, writing CSV_HEADER first when the file is new or empty.
 * Returns 0, or -1 if the file cannot be written. */
int csv_append_row(const char *path, const struct result_row *r);

/* Bytes a pass over n floats must read, over time: decimal GB/s. */
double bandwidth_gbps(size_t n, double us);

#endif
