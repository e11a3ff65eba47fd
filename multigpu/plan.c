/* plan.c: shards, options and bus bandwidth for multigpu/run (plan.h). */
#define _POSIX_C_SOURCE 200809L   /* strtok_r */
#include "plan.h"

#include <errno.h>
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
           "                  in place, doubling; time, algbw and busbw (as nccl-tests defines them)\n"
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

/* "--reps=5" or "--reps 5": 1 and *val set when arg is the flag. */
static int flag_value(int argc, char **argv, int *i, const char *name, const char **val)
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

static int int_in(const char *v, long lo, long hi, int *out)
{
    if (v == NULL || *v == '\0')
        return -1;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < lo || x > hi)
        return -1;
    *out = (int)x;
    return 0;
}

static int parse_sizes(const char *v, struct mg_options *o, char *err, size_t err_len)
{
    char list[1024];
    if (v == NULL || *v == '\0' || strlen(v) >= sizeof list) {
        snprintf(err, err_len, "--n needs sizes such as 1000 or 1M,32M, got '%s'", v ? v : "");
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
    char list[256];
    const char *what = "--combine must be allreduce, reduce, host, all or a comma-separated list";
    if (v == NULL || *v == '\0' || strlen(v) >= sizeof list) {
        snprintf(err, err_len, "%s, got '%s'", what, v ? v : "");
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
            snprintf(err, err_len, "%s, got '%s'", what, v);
            return -1;
        }
        o->combine[o->combines++] = found;
    }
    if (o->combines == 0) {
        snprintf(err, err_len, "%s, got '%s'", what, v);
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
    int rank_given = 0;
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
        } else if (flag_value(argc, argv, &i, "--n", &v)) {
            if (parse_sizes(v, o, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (flag_value(argc, argv, &i, "--combine", &v)) {
            if (parse_combines(v, o, err, err_len) != 0)
                return PARSE_ERROR;
        } else if (flag_value(argc, argv, &i, "--gpus", &v)) {
            if (int_in(v, 1, MG_MAX_GPUS, &o->gpus) != 0) {
                snprintf(err, err_len, "--gpus needs a number from 1 to %d, got '%s'",
                         MG_MAX_GPUS, v ? v : "");
                return PARSE_ERROR;
            }
        } else if (flag_value(argc, argv, &i, "--rank", &v)) {
            if (int_in(v, 0, 65535, &o->rank) != 0) {
                snprintf(err, err_len, "--rank needs a number from 0, got '%s'", v ? v : "");
                return PARSE_ERROR;
            }
            rank_given = 1;
        } else if (flag_value(argc, argv, &i, "--world", &v)) {
            if (int_in(v, 1, 65536, &o->world) != 0) {
                snprintf(err, err_len, "--world needs a number from 1, got '%s'", v ? v : "");
                return PARSE_ERROR;
            }
        } else if (flag_value(argc, argv, &i, "--id-file", &v)) {
            if (v == NULL || *v == '\0') {
                snprintf(err, err_len, "--id-file needs a file name");
                return PARSE_ERROR;
            }
            o->id_file = v;
        } else if (flag_value(argc, argv, &i, "--wait", &v)) {
            if (int_in(v, 1, 86400, &o->wait_s) != 0) {
                snprintf(err, err_len, "--wait needs seconds from 1 to 86400, got '%s'",
                         v ? v : "");
                return PARSE_ERROR;
            }
        } else if (flag_value(argc, argv, &i, "--max-bytes", &v)) {
            if (v == NULL || parse_size(v, &o->max_bytes) != 0 || o->max_bytes < 4 ||
                o->max_bytes > ((size_t)1 << 34)) {
                snprintf(err, err_len, "--max-bytes needs 4 .. 16G, such as 1G, got '%s'",
                         v ? v : "");
                return PARSE_ERROR;
            }
        } else if (flag_value(argc, argv, &i, "--reps", &v)) {
            if (int_in(v, 1, 100000, &o->reps) != 0) {
                snprintf(err, err_len, "--reps needs a number from 1 to 100000, got '%s'",
                         v ? v : "");
                return PARSE_ERROR;
            }
        } else if (flag_value(argc, argv, &i, "--warmup", &v)) {
            if (int_in(v, 0, 100000, &o->warmup) != 0) {
                snprintf(err, err_len, "--warmup needs a number from 0 to 100000, got '%s'",
                         v ? v : "");
                return PARSE_ERROR;
            }
        } else if (flag_value(argc, argv, &i, "--seed", &v)) {
            char *end;
            errno = 0;
            unsigned long long s = (v && *v && *v != '-') ? strtoull(v, &end, 10) : 0;
            if (v == NULL || *v == '\0' || *v == '-' || errno != 0 || *end != '\0') {
                snprintf(err, err_len, "--seed needs a whole number, got '%s'", v ? v : "");
                return PARSE_ERROR;
            }
            o->seed = s;
        } else if (flag_value(argc, argv, &i, "--fill", &v)) {
            int found = -1;
            for (int f = 0; f < FILL_COUNT && v != NULL; f++)
                if (strcmp(v, fill_name((enum fill_kind)f)) == 0)
                    found = f;
            if (found < 0) {
                snprintf(err, err_len, "--fill must be random, positive, wide, ones, ints, "
                                       "onehot, exact, shifted or tiny, got '%s'", v ? v : "");
                return PARSE_ERROR;
            }
            o->fill = (enum fill_kind)found;
        } else if (flag_value(argc, argv, &i, "--csv", &v)) {
            if (v == NULL || *v == '\0') {
                snprintf(err, err_len, "--csv needs a file name");
                return PARSE_ERROR;
            }
            o->csv_path = v;
        } else {
            snprintf(err, err_len, "unknown option '%s' (try --help)", a);
            return PARSE_ERROR;
        }
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
