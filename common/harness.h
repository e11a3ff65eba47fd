/* harness.h: the CPU side of the harness (options, input, reference,
 * tolerance, statistics, CSV), for part 1's sums and part 2's rows. No CUDA
 * in here, so tests/unit_tests.c checks all of it on a machine without a GPU. */
#ifndef REDUCE_HARNESS_H
#define REDUCE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* 2^31 - 1 (8 GiB of floats): the kernels index with 32-bit unsigned ints.
 * The largest index a step forms, a grid-stride loop's i + UNROLL * stride,
 * passes n by UNROLL x the grid's threads (about 2^20 on an H200): far
 * from 2^32, so no index wraps. */
#define REDUCE_MAX_N ((size_t)2147483647u)
#define REDUCE_DEFAULT_N ((size_t)1 << 25)   /* 32M floats, the seed articles' size */
#define REDUCE_MAX_OFFSET 3                   /* enough to misalign a float4 every way */
/* Part 2's default shape: the seed article's LayerNorm, batch 64 x sequence
 * 512 rows of hidden size 1024. */
#define ROWS_DEFAULT_ROWS ((size_t)32768)
#define ROWS_DEFAULT_COLS ((size_t)1024)
#define ROWS_MAX_COLS ((size_t)1 << 20)
/* Rows are indexed with 32-bit unsigned ints and launched as grid blocks
 * (at most 2^31 - 1); elements with size_t. */
#define ROWS_MAX_ROWS ((size_t)2147483647u)
/* 2^36 elements: more than any GPU's memory holds (an H200 holds about 2^35
 * floats). A size that does not fit stops with "out of device memory". */
#define ROWS_MAX_N ((size_t)1 << 36)

/* Which main() parses the options: part 1's sum of n floats, or part 2's
 * rows x cols. Each accepts only its own size flags. */
enum program_kind { PROGRAM_SUM, PROGRAM_ROWS };

/* verify_set()'s checks beyond the shape, one column fewer and the offsets,
 * for a rows x cols program: what its op's arithmetic can get wrong. */
enum row_checks {
    ROW_CHECK_SHIFTED_TINY = 1,   /* --fill shifted and --fill tiny */
    ROW_CHECK_CENTERED = 2,       /* --fill centered: an exact mean and variance */
    ROW_CHECK_LEVELS_MASKED = 4,  /* --fill levels under --mask mixed */
};

/* What the parser must know of the program it parses for: its part and, for
 * rows x cols, what its op takes. The ops themselves are the parts' own
 * business (common/rows.h names part 2's): nothing here changes when a part
 * gains one. Part 1 leaves everything but kind 0. */
struct program {
    enum program_kind kind;
    const char *op;       /* the op's name in messages: "layernorm" */
    const char *elems;    /* "floats" or "bfloat16s" */
    int pack;             /* elements in one 16-byte pack: how far --offset goes */
    int masks;            /* takes --mask */
    int gamma, beta;      /* takes --gamma-offset, --beta-offset */
    unsigned checks;      /* enum row_checks */
    unsigned fills;       /* bit k: takes --fill k (enum fill_kind); 0: every fill
                             of its part (part 2's levels and centered too) */
};

enum fill_kind { FILL_RANDOM, FILL_POSITIVE, FILL_WIDE, FILL_ONES, FILL_INTS,
                 FILL_ONEHOT, FILL_EXACT, FILL_SHIFTED, FILL_TINY };
#define FILL_COUNT 9

/* Part 2's own fills, beside enum fill_kind (common/rows_ref.h makes them). */
enum row_fill { ROW_FILL_SHARED, ROW_FILL_LEVELS, ROW_FILL_CENTERED };

/* --mask (part 2's softmax only): -inf laid over the fill, as attention and
 * sampling mask their scores. Row r, with p = r (or r / 4 for mixed):
 *   causal: keeps its first (p mod cols) + 1 values (a causal attention row);
 *   padded: all -inf when p is even (a padding row), untouched when odd;
 *   ends:   -inf in its first and last 1 + (p mod 8) values (the head and
 *           tail floats that no 16-byte pack covers);
 *   topk:   keeps about 1 + (p mod 64) values at seeded places (top-k
 *           sampling over a vocabulary), sometimes none;
 *   mixed:  row r takes causal, padded, ends and topk in turn (r mod 4).
 * mask_rows() in common/rows_ref.c lays them. */
enum row_mask { MASK_NONE, MASK_CAUSAL, MASK_PADDED, MASK_ENDS, MASK_TOPK, MASK_MIXED };
#define MASK_COUNT 6
const char *mask_name(enum row_mask mask);

/* --fill exact: every element is a nonzero integer up to this n; above it
 * only the elements where kernels go wrong are (see fill_input). */
#define EXACT_DENSE_MAX ((size_t)1 << 22)
#define EXACT_EDGE ((size_t)1 << 16)       /* first and last elements, always set */
#define EXACT_SWEEP ((size_t)1 << 20)      /* about this many more at random places */
/* Magnitudes: 1 + (i mod EXACT_EDGE_MOD) in the edges, 1 + (i mod
 * EXACT_MOD) elsewhere (and in every row of part 2's exact fill, the edge
 * pattern). A read of element j instead of i changes the sum for sure unless
 * j - i is a multiple of the modulus, which no power of two, warp, block or
 * grid offset is (both are odd primes; 132 SMs = 4 x 3 x 11), and even then
 * the random sign differs half the time. */
#define EXACT_EDGE_MOD 61
#define EXACT_MOD 3

/* Integers whose sum of |x| stays below 2^24 add exactly in float in any
 * order: every partial sum is an integer of at most 24 bits. */
#define EXACT_SUM_LIMIT 16777216.0

struct options {
    struct program program; /* the one parse_options() was given */
    size_t n;               /* part 1: floats; part 2: rows * cols */
    size_t rows, cols;      /* part 2 */
    int reps;
    int warmup;
    uint64_t seed;
    enum fill_kind fill;
    enum row_fill row_fill; /* part 2: --fill levels or centered (then fill is unused) */
    int fill_given;         /* --fill was on the command line */
    enum row_mask mask;     /* part 2: --mask */
    long long at;           /* --at: onehot's position, -k = n - k */
    int at_given;
    int offset;             /* x starts this many elements past an aligned address */
    int y_offset, gamma_offset, beta_offset;   /* part 2: the same for y, gamma and beta */
    size_t check_every;     /* part 2: the CPU checks rows 0, K, 2K ... and the last K */
    const char *csv_path;   /* NULL: no CSV row */
    int check_only;         /* one verified run, no timing */
    int verify;             /* a timed run first runs verify_set()'s checks */
    int flush;              /* flush L2 before each repetition */
    int same_input;         /* part 1: every timed repetition sums the same input (no fresh_next()) */
    int device;
    int cpu_sums;           /* also sum on the CPU: float loop and Kahan loop */
    const char *checks_path;  /* --checks FILE: many checks, one per line, one process */
    const char *runs_path;    /* --runs FILE: many runs (timed or not), one process */
};

enum parse_status { PARSE_OK = 0, PARSE_HELP = 1, PARSE_VERSION = 2, PARSE_GPU_INFO = 3,
                    PARSE_ERROR = -1 };

/* The command line. Every program reads its options with these (parts 1 to
 * 3 in parse_options below, multigpu/run in multigpu/plan.c), so a flag
 * takes its value one way and its errors read alike everywhere. */

/* "4096", "32M", "1G": binary suffixes K, M, G (either case). Returns 0, or -1
 * for anything else (empty, sign, junk, overflow). 0 itself parses. */
int parse_size(const char *s, size_t *out);
/* A whole decimal number in [lo, hi]: 0, or -1 for anything else. */
int parse_int_in(const char *s, long long lo, long long hi, long long *out);
/* 1 if argv[*i] is the flag name: *val is its value ("--reps=5", or
 * "--reps 5", which moves *i on; NULL when nothing follows). 0 otherwise. */
int option_value(int argc, char **argv, int *i, const char *name, const char **val);
/* option_int, option_file and option_choice return 0, or -1 with a
 * one-line message in err. what names the value in it ("a number" if NULL). */
int option_int(const char *flag, const char *v, long long lo, long long hi, const char *what,
               long long *out, char *err, size_t err_len);
int option_file(const char *flag, const char *v, int stdin_ok, const char **out, char *err,
                size_t err_len);
/* v must be one of names[0..count): *out its index; the error lists them. */
int option_choice(const char *flag, const char *v, const char *const *names, int count, int *out,
                  char *err, size_t err_len);
void option_names(const char *const *names, int count, char *out, size_t len);  /* "a, b or c" */
/* "unknown option '--x=1' (try --help)"; with a hint, the flag alone
 * ("--x", no "=1") and the hint after it. */
void option_unknown(const char *arg, const char *hint, char *err, size_t err_len);

/* Fills *o from argv for program p and checks the options against each
 * other (--at needs onehot and a position inside n). Each part takes only
 * its own options, within its own limits: part 1 n <= 2^31 - 1 floats and
 * offsets 0..3; part 2 rows x cols <= 2^36 elements and offsets anywhere in
 * a 16-byte pack. --check without --fill means --fill exact. On
 * PARSE_ERROR, err holds a one-line message. */
enum parse_status parse_options(int argc, char **argv, const struct program *p,
                                struct options *o, char *err, size_t err_len);
void print_usage(const char *prog, const struct program *p);

const char *fill_name(enum fill_kind fill);

/* The fill's name, as the output and the CSV give it: "random", "levels"
 * ...; with a mask, "levels/causal". */
void row_fill_name(const struct options *o, char *out, size_t len);

/* The checks a plain timed run makes before it times anything, so that its
 * PASS means what `make check` means at that size: the exact fill at the
 * size and offsets asked for, one element shorter (part 2: one column; a
 * tail that is not a multiple of a block, a warp or a pack), and x one
 * element further into its pack (a head). Part 2 also moves y alone (a
 * kernel that checks only x's alignment stores packs to a misaligned y),
 * checks LayerNorm and softmax on the shifted and tiny fills, LayerNorm on
 * the centered one and softmax on the levels fill with every mask. Writes at
 * most VERIFY_MAX options into out[]; returns how many. */
#define VERIFY_MAX 8
int verify_set(const struct options *o, struct options *out);

/* splitmix64: a counter-based generator; element i of an input is a
 * function of (seed, i) only. */
uint64_t splitmix64(uint64_t z);

/* Where onehot's 1 goes: --at (negative counts from the end) or, without
 * it, a position chosen by the seed. */
size_t onehot_index(size_t n, uint64_t seed, int at_given, long long at);

/* Element i depends only on (fill, seed, i), except where n itself decides
 * (onehot's position, exact's sparse positions). one = onehot_index(). */
void fill_input(float *x, size_t n, enum fill_kind fill, uint64_t seed, size_t one);

/* Part 2's input: fill_input, except that the exact fill is dense in every
 * row (a row's sum of |x| stays far below 2^24 up to ROWS_MAX_COLS / 4). */
void fill_rows(float *x, size_t rows, size_t cols, enum fill_kind fill, uint64_t seed,
               size_t one);

struct reference {
    double sum;       /* the exact-enough answer */
    double sum_abs;   /* scales the tolerance */
    int exact;        /* every value an integer and sum_abs < 2^24: float adds are exact */
};

/* Pairwise summation in double: error ~ log2(n) * 2^-53 * sum|x|, far
 * below anything float32 can resolve. Large inputs use every CPU core;
 * the tree, and so the result, is the same for any number of threads. */
struct reference reference_sum(const float *x, size_t n);

/* 0 when ref.exact: any order of float adds gives the exact sum, so any
 * difference is a lost, repeated or foreign element. Otherwise the worst
 * case of n - 1 float adds in ANY order (Higham, "Accuracy and Stability of
 * Numerical Algorithms", 2nd ed., eq. 4.4): g(n - 1) * sum|x|, with
 * g(k) = k u / (1 - k u) and u = 2^-24, plus the final rounding to float.
 * Any correct kernel, however long its serial chains, stays within it.
 * Once (n - 1) u reaches TOLERANCE_K_MAX the bound says nothing useful, and
 * the tolerance is sum|x|: past about 2^23 floats only the exact fills check
 * a sum (a timed run makes those checks first). */
#define TOLERANCE_K_MAX 0.5
double tolerance(size_t n, struct reference ref);

/* What the CPU gets with float32 arithmetic: a plain loop, and the same
 * loop with Kahan's compensation (the lost low bits are carried along). */
/* A fresh input for every timed repetition, so that no answer can be kept
 * from one run and given again in the next (a program that remembers its
 * inputs would time as fast as it likes). Before each repetition, outside
 * the timed region, the harness changes FRESH_COUNT elements, at places
 * drawn from a stream seeded anew in every process (no program can know
 * them in advance), each by +step or -step (the sign alternates from one
 * repetition to the next, so the values stay near the fill's). The host
 * keeps the input and its reference in step, so each repetition is checked
 * against its own reference; and since the changes move the sum by
 * FRESH_COUNT x step, an answer kept from the run before is told apart from
 * the right one even where the tolerance is too wide to (fresh_moved()).
 * step is 1 on an exact fill (integers stay integers: the check stays
 * exact) and otherwise the least power of two above 2^-18 of sum |x|: far above
 * any honest rounding error, far below the sum's scale. */
#define FRESH_COUNT 64
struct fresh {
    uint64_t state;   /* the places' stream */
    double step;
    int sign;
};
uint64_t fresh_seed(void);   /* from the system's entropy: a different stream in every process */
void fresh_init(struct fresh *f, uint64_t seed, struct reference base);
/* This repetition's changes: pos[k] and val[k], k < FRESH_COUNT (a place
 * may come twice; its last value stands), with x and *ref updated to them. */
void fresh_next(struct fresh *f, float *x, size_t n, struct reference *ref, size_t *pos,
                float *val);
/* 1 if result is nearer the reference after the changes (now) than the one
 * before them (before): the answer moved with the input. */
int fresh_moved(float result, double now, double before);

/* 1 if a median time gives a bandwidth above the device's theoretical peak
 * with the L2 flushed before each repetition: no run that reads its input
 * from memory is that fast, so the answer was kept from an earlier run. */
int above_peak(double gbps, double peak_gbps, int flushed);

float sum_sequential(const float *x, size_t n);
float sum_kahan(const float *x, size_t n);

/* 1 if result is finite and within tol of ref; NaN and Inf never pass. */
int within_tolerance(float result, double ref, double tol);

/* How many different bit patterns v[0..count) holds (1: all the same). */
int count_distinct(const float *v, int count);

struct stats {
    double median, min, max;
};

/* Sorts v in place. count >= 1. */
struct stats compute_stats(double *v, int count);

/* --checks / --runs FILE: calls run(options of the line, ctx) for every
 * line that is not blank or a comment, each line parsed like a command line
 * for `base`'s program; base's --device, --csv, --cpu-sums, --no-verify,
 * --no-flush and --same-input hold for every line; check mode forced when
 * check_only.
 * Prints "== check <line>" or "== run <line>" before each. Stops at a usage
 * error. Returns the worst exit code (0 verified, 1 wrong, 2 usage). */
typedef int (*run_fn)(const struct options *o, void *ctx);
int run_lines(const char *path, const struct options *base, int check_only, char *prog,
              run_fn run, void *ctx);

/* One line of the results file; the header is CSV_HEADER. */
#define CSV_HEADER                                                              \
    "step,n,reps,warmup,median_us,min_us,max_us,gbps,pct_peak,result,reference," \
    "abs_err,tol,pass,gpu,cc,driver,cuda,peak_gbps,l2_mb,sms,flush,offset,fill,"  \
    "seed,git_rev,mode,distinct,code_hash,sum_abs,cpu_seq,cpu_kahan,rows,cols,"   \
    "op,bytes,arch,toolchain"

/* A timed row has every field; a --check row (timed == 0) leaves the
 * timing columns empty, and the CPU sums are empty unless has_cpu_sums.
 * Part 1 rows leave rows, cols and op empty. */
struct result_row {
    const char *step;
    int timed;
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
    int distinct;
    const char *code_hash;
    double sum_abs;
    int has_cpu_sums;
    float cpu_seq, cpu_kahan;
    size_t rows, cols;      /* 0: a part 1 row */
    const char *op;         /* part 2: sum, layernorm, softmax, copy */
    double bytes;           /* bytes a run must move: gbps = bytes / median */
    const char *arch, *toolchain;
};

/* Writes the row (no newline) into buf; returns the length, or -1 if it
 * did not fit. Fields holding a comma or quote are quoted. */
int csv_format_row(const struct result_row *r, char *buf, size_t len);

/* Appends the row, writing CSV_HEADER first when the file is new or empty.
 * Returns 0, or -1 if the file cannot be written. */
int csv_append_row(const char *path, const struct result_row *r);

/* 0 if path can be opened for appending (creating it, empty, if new), so a
 * bad --csv is reported before the run instead of after it; else -1. */
int csv_check_writable(const char *path);

/* Bytes a pass over n floats must read, over time: decimal GB/s. */
double bandwidth_gbps(size_t n, double us);

#endif
