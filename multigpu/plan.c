/* plan.c: shards, options and bus bandwidth for multigpu/run (plan.h). */
#define _POSIX_C_SOURCE 200809L   /* strtok_r */
#include "plan.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shard shard_of(size_t n, int world, int rank)
{
    size_t base = n / (size_t)world, extra = n % (size_t)world, r = (size_t)rank;
    struct shard s;
    s.count = base + (r < extra ? 1 : 0);
    /* The r shards before this one: r * base floats, plus one for each of
     * them that is among the first `extra`. */
    s.first = r * base + (r < extra ? r : extra);
    return s;
}

const char *combine_name(enum combine c)
{
    switch (c) {
    case COMBINE_ALLREDUCE: return "allreduce";
    case COMBINE_REDUCE: return "reduce";
    case COMBINE_HOST: return "host";
    }
    return "?";
}

double bus_bandwidth(double algbw, int world)
{
    return world > 0 ? algbw * 2.0 * (world - 1) / world : 0.0;
}

void mg_usage(const char *prog)
{
    printf("usage: %s [options]\n"
           "The sum of n floats split across every visible GPU: each GPU sums its shard with\n"
           "step 9's kernel, then NCCL (or the host) adds the per-GPU sums.\n"
           "  --n LIST        floats, comma-separated, K/M/G allowed (default 32M); 1 .. 2^31-1\n"
           "  --combine C     allreduce (default): ncclAllReduce of one float, every GPU gets it\n"
           "                  reduce: ncclReduce to GPU 0   host: copy each sum to the host, add\n"
           "                  all: the three in turn; or a comma-separated list\n"
           "  --gpus K        use the first K visible GPUs (default: every one)\n"
           "  --rank R --world W --id-file PATH\n"
           "                  one process per GPU: this is rank R of W, on GPU R mod (visible\n"
           "                  GPUs); rank 0 writes NCCL's unique id to PATH, the others read it\n"
           "  --wait S        ranks > 0 wait at most S seconds for PATH (default 60)\n"
           "  --vector        instead of the sum: ncclAllReduce of 4 B .. --max-bytes of floats,\n"
           "                  in place, doubling; time, algbw and busbw (as nccl-tests defines them);\n"
           "                  no --n or --combine with it\n"
           "  --max-bytes B   the largest vector (default 1G)\n"
           "  --reps R        timed repetitions, median reported (default 20)\n"
           "  --warmup W      untimed repetitions first (default 3)\n"
           "  --seed S        input seed (default 1)\n"
           "  --fill F        exact (default: zero tolerance), or any fill the steps take:\n"
           "                  random, positive, wide, ones, ints, onehot, shifted, tiny\n"
           "  --check         one verified run per size and combine; no timing\n"
           "  --no-baseline   do not time one GPU on all n (the speed-up column stays empty)\n"
           "  --no-flush      do not flush the L2 caches before each repetition\n"
           "  --csv FILE      append one row per size and combine (rank 0 only)\n"
           "  --version       print the program, the hash of its code and build, the revision\n"
           "  -h, --help      this text\n"
           "\n"
           "exit status: 0 verified, 1 wrong result, 2 usage error, 3 device or NCCL error\n",
           prog);
}

/* An int option in [lo, hi], in the harness's words (option_int). */
static int int_option(const char *flag, const char *v, long lo, long hi, const char *what,
                      int *out, char *err, size_t err_len)
{
    long long x;
    if (option_int(flag, v, lo, hi, what, &x, err, err_len) != 0)
        return -1;
    *out = (int)x;
    return 0;
}

/* 1 if the comma-separated list v has an empty item ("1,,2", ",1", "1,"),
 * which strtok_r would skip: a typo, not a shorter list. */
static int empty_item(const char *v)
{
    size_t len = strlen(v);
    return len == 0 || v[0] == ',' || v[len - 1] == ',' || strstr(v, ",,") != NULL;
}

static int parse_sizes(const char *v, struct mg_options *o, char *err, size_t err_len)
{
    char list[1024];
    if (v == NULL || *v == '\0' || strlen(v) >= sizeof list) {
        snprintf(err, err_len, "--n needs sizes such as 1000 or 1M,32M, got '%s'", v ? v : "");
        return -1;
    }
    if (empty_item(v)) {
        snprintf(err, err_len, "--n needs sizes such as 1000 or 1M,32M, got '%s' (an empty one)",
                 v);
        return -1;
    }
    snprintf(list, sizeof list, "%s", v);
    o->sizes = 0;
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        size_t n;
        if (parse_size(t, &n) != 0) {
            snprintf(err, err_len, "--n needs whole numbers such as 1000 or 32M, got '%s'", t);
            return -1;
        }
        if (n == 0) {
            snprintf(err, err_len, "--n must be at least 1");
            return -1;
        }
        if (n > REDUCE_MAX_N) {
            snprintf(err, err_len, "--n %zu is too large: the most is %zu", n, REDUCE_MAX_N);
            return -1;
        }
        if (o->sizes == MG_MAX_SIZES) {
            snprintf(err, err_len, "--n takes at most %d sizes", MG_MAX_SIZES);
            return -1;
        }
        o->n[o->sizes++] = n;
    }
    if (o->sizes == 0) {
        snprintf(err, err_len, "--n needs at least one size");
        return -1;
    }
    return 0;
}

static int parse_combines(const char *v, struct mg_options *o, char *err, size_t err_len)
{
    char list[256], what[128];
    const char *const names[] = {"allreduce", "reduce", "host", "all",
                                 "a comma-separated list"};
    option_names(names, 5, what, sizeof what);
    if (v == NULL || empty_item(v) || strlen(v) >= sizeof list) {
        snprintf(err, err_len, "--combine must be %s, got '%s'", what, v ? v : "");
        return -1;
    }
    o->combines = 0;
    if (strcmp(v, "all") == 0) {
        for (int c = 0; c < COMBINE_COUNT; c++)
            o->combine[o->combines++] = c;
        return 0;
    }
    snprintf(list, sizeof list, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int c = 0; c < COMBINE_COUNT; c++)
            if (strcmp(t, combine_name((enum combine)c)) == 0)
                found = c;
        for (int k = 0; k < o->combines && found >= 0; k++)
            if (o->combine[k] == found)
                found = -2;   /* named twice */
        if (found < 0) {
            snprintf(err, err_len, "--combine must be %s, got '%s'", what, v);
            return -1;
        }
        o->combine[o->combines++] = found;
    }
    if (o->combines == 0) {
        snprintf(err, err_len, "--combine must be %s, got '%s'", what, v);
        return -1;
    }
    return 0;
}

enum parse_status mg_parse(int argc, char **argv, struct mg_options *o, char *err,
                           size_t err_len)
{
    memset(o, 0, sizeof *o);
    o->n[0] = REDUCE_DEFAULT_N;
    o->sizes = 1;
    o->combine[0] = COMBINE_ALLREDUCE;
    o->combines = 1;
    o->wait_s = MG_DEFAULT_WAIT_S;
    o->max_bytes = MG_DEFAULT_MAX_BYTES;
    o->reps = 20;
    o->warmup = 3;
    o->seed = 1;
    o->fill = FILL_EXACT;
    o->flush = 1;
    o->baseline = 1;
    int rank_given = 0, sizes_given = 0, combines_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return PARSE_HELP;
        if (strcmp(a, "--version") == 0)
            return PARSE_VERSION;
        if (strcmp(a, "--vector") == 0) {
            o->vector = 1;
        } else if (strcmp(a, "--check") == 0) {
            o->check_only = 1;
        } else if (strcmp(a, "--no-flush") == 0) {
            o->flush = 0;
        } else if (strcmp(a, "--no-baseline") == 0) {
            o->baseline = 0;
        } else if (option_value(argc, argv, &i, "--n", &v)) {
            if (parse_sizes(v, o, err, err_len) != 0)
                return PARSE_ERROR;
            sizes_given = 1;
        } else if (option_value(argc, argv, &i, "--combine", &v)) {
            if (parse_combines(v, o, err, err_len) != 0)
                return PARSE_ERROR;
            combines_given = 1;
        } else if (option_value(argc, argv, &i, "--gpus", &v)) {
            if (int_option("--gpus", v, 1, MG_MAX_GPUS, NULL, &o->gpus, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--rank", &v)) {
            if (int_option("--rank", v, 0, 65535, NULL, &o->rank, err, err_len) != 0)
                return PARSE_ERROR;
            rank_given = 1;
        } else if (option_value(argc, argv, &i, "--world", &v)) {
            if (int_option("--world", v, 1, 65536, NULL, &o->world, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--id-file", &v)) {
            if (option_file("--id-file", v, 0, &o->id_file, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--wait", &v)) {
            if (int_option("--wait", v, 1, 86400, "seconds", &o->wait_s, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--max-bytes", &v)) {
            if (v == NULL || parse_size(v, &o->max_bytes) != 0 || o->max_bytes < 4 ||
                o->max_bytes > ((size_t)1 << 34)) {
                snprintf(err, err_len, "--max-bytes needs 4 .. 16G, such as 1G, got '%s'",
                         v ? v : "");
                return PARSE_ERROR;
            }
        } else if (option_value(argc, argv, &i, "--reps", &v)) {
            if (int_option("--reps", v, 1, 100000, NULL, &o->reps, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--warmup", &v)) {
            if (int_option("--warmup", v, 0, 100000, NULL, &o->warmup, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (option_value(argc, argv, &i, "--seed", &v)) {
            long long s;
            if (option_int("--seed", v, 0, LLONG_MAX, "a non-negative number", &s, err,
                           err_len) != 0)
                return PARSE_ERROR;
            o->seed = (uint64_t)s;
        } else if (option_value(argc, argv, &i, "--fill", &v)) {
            const char *names[FILL_COUNT];
            for (int f = 0; f < FILL_COUNT; f++)
                names[f] = fill_name((enum fill_kind)f);
            int found;
            if (option_choice("--fill", v, names, FILL_COUNT, &found, err, err_len) != 0)
                return PARSE_ERROR;
            o->fill = (enum fill_kind)found;
        } else if (option_value(argc, argv, &i, "--csv", &v)) {
            if (option_file("--csv", v, 0, &o->csv_path, err, err_len) != 0)
                return PARSE_ERROR;
        } else {
            option_unknown(a, NULL, err, err_len);
            return PARSE_ERROR;
        }
    }
    /* The sweep has sizes of its own and one collective: it would ignore these. */
    if (o->vector && (sizes_given || combines_given)) {
        snprintf(err, err_len, "--vector sweeps 4 B .. --max-bytes with ncclAllReduce: it takes "
                               "no %s", sizes_given ? "--n" : "--combine");
        return PARSE_ERROR;
    }
    /* One process per GPU needs all three; any one alone is a mistake. */
    int per_process = rank_given || o->world > 0 || o->id_file != NULL;
    if (per_process) {
        if (!rank_given || o->world == 0 || o->id_file == NULL) {
            snprintf(err, err_len, "one process per GPU needs --rank, --world and --id-file "
                                   "together");
            return PARSE_ERROR;
        }
        if (o->rank >= o->world) {
            snprintf(err, err_len, "--rank %d must be below --world %d", o->rank, o->world);
            return PARSE_ERROR;
        }
        if (o->gpus != 0) {
            snprintf(err, err_len, "--gpus is for one process driving every GPU; with --world "
                                   "each process drives one");
            return PARSE_ERROR;
        }
        for (int k = 0; k < o->combines; k++)
            if (o->combine[k] == COMBINE_HOST) {
                snprintf(err, err_len, "--combine host adds on one host process: it needs one "
                                       "process driving every GPU (no --world)");
                return PARSE_ERROR;
            }
    }
    return PARSE_OK;
}
