/* rows_options.c: part 2's command line (rows_options.h). */
#include "rows_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shared options that take a value: they and their value pass through
 * to parse_options() together, whatever the value says. */
static const char *const shared_with_value[] = {"--reps", "--warmup", "--seed", "--csv",
                                                "--checks", "--runs", "--device"};

/* "--name=value" or "--name value": 1 and *val set (NULL if missing), else 0. */
static int takes(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t len = strlen(name);
    if (strncmp(a, name, len) != 0)
        return 0;
    if (a[len] == '=') {
        *val = a + len + 1;
        return 1;
    }
    if (a[len] != '\0')
        return 0;
    *val = (*i + 1 < argc) ? argv[++*i] : NULL;
    return 1;
}

/* A whole number (K/M/G allowed) in [lo, hi], or a one-line error. */
static int count_in(const char *flag, const char *v, size_t lo, size_t hi, size_t *out,
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

/* An element offset: 0 .. pack - 1. */
static int offset_in(const char *flag, const char *v, int pack, int *out, char *err,
                     size_t err_len)
{
    size_t k;
    if (v == NULL || !(v[0] >= '0' && v[0] <= '9') || parse_size(v, &k) != 0 ||
        k >= (size_t)pack) {
        snprintf(err, err_len, "%s needs a number from 0 to %d (elements into a 16-byte pack), "
                               "got '%s'", flag, pack - 1, v ? v : "");
        return -1;
    }
    *out = (int)k;
    return 0;
}

enum parse_status rows_parse(int argc, char **argv, enum row_op op, enum row_dtype dtype,
                             struct options *o, struct row_options *ro, char *err,
                             size_t err_len)
{
    int pack = row_pack_elements(dtype);
    size_t rows = ROWS_DEFAULT_ROWS, cols = ROWS_DEFAULT_COLS;
    int offset = 0;
    enum row_fill own = ROW_FILL_SHARED;
    long long at = 0;
    int at_given = 0;
    memset(ro, 0, sizeof *ro);
    ro->mask = MASK_NONE;
    ro->check_every = 1;
    char **shared = malloc((size_t)(argc + 1) * sizeof *shared);
    if (shared == NULL) {
        snprintf(err, err_len, "out of host memory");
        return PARSE_ERROR;
    }
    int m = 0;
    shared[m++] = argv[0];
    enum parse_status st = PARSE_OK;
    for (int i = 1; i < argc && st == PARSE_OK; i++) {
        const char *a = argv[i], *v = NULL;
        int k = i;
        if (takes(argc, argv, &i, "--rows", &v)) {
            if (count_in("--rows", v, 1, ROWS_MAX_ROWS, &rows, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--cols", &v)) {
            if (count_in("--cols", v, 1, ROWS_MAX_COLS, &cols, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--offset", &v)) {
            if (offset_in("--offset", v, pack, &offset, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--y-offset", &v)) {
            if (offset_in("--y-offset", v, pack, &ro->y_offset, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--gamma-offset", &v)) {
            if (offset_in("--gamma-offset", v, pack, &ro->gamma_offset, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--beta-offset", &v)) {
            if (offset_in("--beta-offset", v, pack, &ro->beta_offset, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--check-every", &v)) {
            if (count_in("--check-every", v, 1, ROWS_MAX_ROWS, &ro->check_every, err, err_len) != 0)
                st = PARSE_ERROR;
        } else if (takes(argc, argv, &i, "--mask", &v)) {
            if (parse_mask(v, &ro->mask) != 0) {
                snprintf(err, err_len, "--mask must be none, causal, padded, ends, topk or "
                                       "mixed, got '%s'", v ? v : "");
                st = PARSE_ERROR;
            }
        } else if (takes(argc, argv, &i, "--at", &v)) {
            char *end;
            errno = 0;
            at = v ? strtoll(v, &end, 10) : 0;
            if (v == NULL || *v == '\0' || *end != '\0' || errno == ERANGE) {
                snprintf(err, err_len, "--at needs an index, or -k for n - k, got '%s'",
                         v ? v : "");
                st = PARSE_ERROR;
            }
            at_given = 1;
        } else if (takes(argc, argv, &i, "--fill", &v) && v != NULL &&
                   (strcmp(v, "levels") == 0 || strcmp(v, "centered") == 0)) {
            own = strcmp(v, "levels") == 0 ? ROW_FILL_LEVELS : ROW_FILL_CENTERED;
        } else {
            /* Not part 2's own: to the shared parser, with its value if it has one. */
            i = k;
            shared[m++] = argv[i];
            for (size_t s = 0; s < sizeof shared_with_value / sizeof shared_with_value[0]; s++)
                if (strcmp(a, shared_with_value[s]) == 0 || strcmp(a, "--fill") == 0) {
                    if (i + 1 < argc)
                        shared[m++] = argv[++i];
                    break;
                }
        }
    }
    shared[m] = NULL;
    if (st == PARSE_OK)
        st = parse_options(m, shared, PROGRAM_ROWS, o, err, err_len);
    free(shared);
    if (st != PARSE_OK && st != PARSE_GPU_INFO)
        return st;

    if (rows > ROWS_MAX_N / cols) {
        snprintf(err, err_len, "--rows %zu x --cols %zu is too large: at most 2^36 elements",
                 rows, cols);
        return PARSE_ERROR;
    }
    o->rows = rows;
    o->cols = cols;
    o->n = rows * cols;
    o->offset = offset;
    if (own != ROW_FILL_SHARED) {
        if (o->fill_given) {
            snprintf(err, err_len, "--fill is given twice");
            return PARSE_ERROR;
        }
        ro->fill = own;
        o->fill_given = 1;
    }
    if (at_given && (o->fill != FILL_ONEHOT || ro->fill != ROW_FILL_SHARED)) {
        snprintf(err, err_len, "--at places onehot's 1: it needs --fill onehot");
        return PARSE_ERROR;
    }
    if (at_given && (at >= (long long)o->n || at < -(long long)o->n)) {
        snprintf(err, err_len, "--at %lld is outside the input: use 0 .. %zu, or -%zu .. -1", at,
                 o->n - 1, o->n);
        return PARSE_ERROR;
    }
    o->at = at;
    o->at_given = at_given;
    if (ro->mask != MASK_NONE && op != ROW_SOFTMAX) {
        snprintf(err, err_len, "--mask lays -inf over softmax's input: this program computes %s",
                 row_op_name(op));
        return PARSE_ERROR;
    }
    if ((ro->gamma_offset || ro->beta_offset) && op != ROW_LAYERNORM) {
        snprintf(err, err_len, "--gamma-offset and --beta-offset are LayerNorm's: this program "
                               "computes %s", row_op_name(op));
        return PARSE_ERROR;
    }
    return st;
}

void rows_usage(const char *prog, enum row_op op, enum row_dtype dtype)
{
    int pack = row_pack_elements(dtype);
    const char *elem = dtype == ROW_BF16 ? "bfloat16s" : "floats";
    printf("usage: %s [options]\n"
           "Runs this step's row kernel (%s) on a rows x cols matrix of %s, checks\n"
           "every output against a CPU reference in double, and times it. A timed run\n"
           "first checks the shape, one column fewer and other offsets (LayerNorm and\n"
           "softmax: the shifted and tiny fills too; softmax: the levels fill, masked).\n"
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
           prog, row_op_name(op), elem);
    if (op == ROW_SOFTMAX)
        printf("  --mask M        -inf over the fill: causal, padded (whole rows), ends (the\n"
               "                  first and last few), topk (all but a few), mixed (the four\n"
               "                  in turn, row by row), or none (the default)\n");
    printf("  --at K          onehot's 1 at index K, or at n-k for K = -k (-1 = last)\n"
           "  --offset K      start x K %s (0..%d) past a 16-byte boundary\n"
           "  --y-offset K    the same for y\n", elem, pack - 1);
    if (op == ROW_LAYERNORM)
        printf("  --gamma-offset K, --beta-offset K   the same for gamma and beta\n");
    printf("  --check-every K check rows 0, K, 2K ... and the last K only, not every row\n"
           "                  (the CPU takes minutes over a matrix past 2^32 elements)\n"
           "  --csv FILE      append one result row to FILE (header if the file is new)\n"
           "  --check         verify one run only; no timing (the row's time columns are empty)\n"
           "  --no-verify     a timed run skips its checks (its own runs are still verified)\n"
           "  --checks FILE   run many checks in this process, one line of options each\n"
           "                  (e.g. --fill ones --offset 3); - reads standard input\n"
           "  --runs FILE     the same for timed runs (what make bench uses)\n"
           "  --no-flush      do not flush the L2 cache before each repetition\n"
           "  --device D      CUDA device index (default 0)\n"
           "  --gpu-info      print the device's name, SMs, threads per SM and memory, and\n"
           "                  this program's op, element type and path widths\n"
           "  --version       print the step, the hash of its code and build, the revision\n"
           "  -h, --help      this text\n"
           "\n"
           "exit status: 0 verified, 1 wrong result, 2 usage error, 3 device error\n");
}

void row_fill_name(const struct options *o, const struct row_options *ro, char *out, size_t len)
{
    const char *fill = ro->fill == ROW_FILL_LEVELS     ? "levels"
                       : ro->fill == ROW_FILL_CENTERED ? "centered"
                                                       : fill_name(o->fill);
    if (ro->mask == MASK_NONE)
        snprintf(out, len, "%s", fill);
    else
        snprintf(out, len, "%s/%s", fill, mask_name(ro->mask));
}

int rows_verify_set(const struct options *o, const struct row_options *ro, enum row_op op,
                    enum row_dtype dtype, struct options *out, struct row_options *rout)
{
    int pack = row_pack_elements(dtype);
    int count = 0;
    struct options c = *o;
    struct row_options rc = *ro;
    c.check_only = 1;
    c.fill = FILL_EXACT;
    c.fill_given = 1;
    c.at_given = 0;
    c.csv_path = NULL;
    rc.fill = ROW_FILL_SHARED;
    rc.check_every = 1;
    rc.mask = MASK_NONE;
    out[count] = c;
    rout[count++] = rc;
    if (o->cols > 1) {
        out[count] = c;
        out[count].cols = o->cols - 1;
        out[count].n = o->rows * (o->cols - 1);
        rout[count++] = rc;
    }
    /* x one element further into its pack (a head), then y alone (a kernel
     * that checks only x's alignment stores packs to a misaligned y). */
    out[count] = c;
    out[count].offset = (o->offset + 1) % pack;
    rout[count++] = rc;
    out[count] = c;
    rout[count] = rc;
    rout[count++].y_offset = (ro->y_offset + 1) % pack;
    if (op == ROW_LAYERNORM || op == ROW_SOFTMAX) {
        out[count] = c;
        out[count].fill = FILL_SHIFTED;
        rout[count++] = rc;
        if (op == ROW_LAYERNORM) {
            out[count] = c;
            rout[count] = rc;
            rout[count++].fill = ROW_FILL_CENTERED;
        }
        out[count] = c;
        out[count].fill = FILL_TINY;
        rout[count++] = rc;
    }
    if (op == ROW_SOFTMAX) {
        out[count] = c;
        rout[count] = rc;
        rout[count].fill = ROW_FILL_LEVELS;
        rout[count++].mask = MASK_MIXED;
    }
    return count;
}

int rows_run_lines(const char *path, const struct options *base, enum row_op op,
                   enum row_dtype dtype, int check_only, char *prog, rows_run_fn run,
                   void *ctx)
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
        struct row_options ro;
        enum parse_status st = rows_parse(argc, argv, op, dtype, &o, &ro, err, sizeof err);
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
        o.verify = o.verify && base->verify;
        if (!base->flush)
            o.flush = 0;
        printf("== %s %s\n", check_only ? "check" : "run", line);
        int rc = run(&o, &ro, ctx);
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
