/* multigpu_tests.c: multigpu/plan.c (shards, options, bus bandwidth), no GPU
 * and no NCCL needed. Ends with "multigpu unit: N passed, N failed". */
#include "plan.h"

#include <stdio.h>
#include <string.h>

#include "expect.h"

/* The shards of n over world: in order, touching, covering [0, n), sizes
 * within one of each other, the larger ones first. */
static int shards_tile(size_t n, int world)
{
    size_t next = 0, lo = (size_t)-1, hi = 0;
    for (int r = 0; r < world; r++) {
        struct shard s = shard_of(n, world, r);
        if (s.first != next)
            return 0;
        if (r > 0 && s.count > shard_of(n, world, r - 1).count)
            return 0;
        next += s.count;
        lo = s.count < lo ? s.count : lo;
        hi = s.count > hi ? s.count : hi;
    }
    return next == n && hi - lo <= 1;
}

static void test_shards(void)
{
    const size_t ns[] = {1, 2, 3, 7, 1000, 4097, 1048577, 33554435, 2147483647};
    const int worlds[] = {1, 2, 3, 4, 7, 8, 64};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++)
            EXPECT(shards_tile(ns[i], worlds[w]));
    /* Exact values: 7 over 3 is 3, 2, 2; 1 over 2 leaves the second empty. */
    struct shard a = shard_of(7, 3, 0), b = shard_of(7, 3, 1), c = shard_of(7, 3, 2);
    EXPECT(a.first == 0 && a.count == 3 && b.first == 3 && b.count == 2 && c.first == 5 &&
           c.count == 2);
    struct shard e = shard_of(1, 2, 1);
    EXPECT(shard_of(1, 2, 0).count == 1 && e.count == 0 && e.first == 1);
    struct shard last = shard_of(2147483647, 2, 1);
    EXPECT(last.first == 1073741824u && last.count == 1073741823u);
    EXPECT(shard_of(5, 1, 0).first == 0 && shard_of(5, 1, 0).count == 5);
}

static enum parse_status parse(const char *line, struct mg_options *o, char *err)
{
    char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    argv[argc++] = "run";
    for (char *t = strtok(buf, " "); t != NULL && argc < 31; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    return mg_parse(argc, argv, o, err, 256);
}

static void test_options(void)
{
    struct mg_options o;
    char err[256];
    EXPECT(parse("", &o, err) == PARSE_OK && o.sizes == 1 && o.n[0] == REDUCE_DEFAULT_N &&
           o.combines == 1 && o.combine[0] == COMBINE_ALLREDUCE && o.fill == FILL_EXACT &&
           o.world == 0 && o.reps == 20 && o.warmup == 3 && o.flush && o.baseline);
    EXPECT(parse("--n 1,3,1M --combine all", &o, err) == PARSE_OK && o.sizes == 3 &&
           o.n[2] == ((size_t)1 << 20) && o.combines == 3 && o.combine[2] == COMBINE_HOST);
    EXPECT(parse("--n=2147483647 --combine host,reduce", &o, err) == PARSE_OK &&
           o.n[0] == 2147483647u && o.combine[0] == COMBINE_HOST &&
           o.combine[1] == COMBINE_REDUCE);
    EXPECT(parse("--n 2147483648", &o, err) == PARSE_ERROR && strstr(err, "too large"));
    EXPECT(parse("--n 0", &o, err) == PARSE_ERROR && strstr(err, "at least 1"));
    EXPECT(parse("--n abc", &o, err) == PARSE_ERROR);
    EXPECT(parse("--n 1,,x", &o, err) == PARSE_ERROR);
    /* An empty item is a typo, not a list one size shorter. */
    EXPECT(parse("--n 1,,2", &o, err) == PARSE_ERROR && strstr(err, "an empty one"));
    EXPECT(parse("--n ,1", &o, err) == PARSE_ERROR && strstr(err, "an empty one"));
    EXPECT(parse("--n 1,", &o, err) == PARSE_ERROR && strstr(err, "an empty one"));
    EXPECT(parse("--n ,", &o, err) == PARSE_ERROR);
    EXPECT(parse("--combine host,,reduce", &o, err) == PARSE_ERROR &&
           strstr(err, "--combine"));
    EXPECT(parse("--combine reduce,", &o, err) == PARSE_ERROR);
    EXPECT(parse("--combine sum", &o, err) == PARSE_ERROR && strstr(err, "--combine"));
    EXPECT(parse("--combine reduce,reduce", &o, err) == PARSE_ERROR);
    EXPECT(parse("--rank 1 --world 2 --id-file /tmp/x", &o, err) == PARSE_OK &&
           o.rank == 1 && o.world == 2 && strcmp(o.id_file, "/tmp/x") == 0);
    EXPECT(parse("--rank 2 --world 2 --id-file /tmp/x", &o, err) == PARSE_ERROR &&
           strstr(err, "below"));
    EXPECT(parse("--rank 0 --world 2", &o, err) == PARSE_ERROR && strstr(err, "together"));
    EXPECT(parse("--id-file /tmp/x", &o, err) == PARSE_ERROR);
    EXPECT(parse("--rank 0 --world 2 --id-file f --combine host", &o, err) == PARSE_ERROR);
    EXPECT(parse("--rank 0 --world 2 --id-file f --gpus 1", &o, err) == PARSE_ERROR);
    EXPECT(parse("--gpus 0", &o, err) == PARSE_ERROR);
    EXPECT(parse("--vector --max-bytes 1M --check", &o, err) == PARSE_OK && o.vector &&
           o.max_bytes == ((size_t)1 << 20) && o.check_only);
    EXPECT(parse("--max-bytes 2", &o, err) == PARSE_ERROR);
    /* --vector sweeps sizes of its own with ncclAllReduce: --n and --combine
     * beside it would be ignored. */
    EXPECT(parse("--vector --n 1M", &o, err) == PARSE_ERROR &&
           strcmp(err, "--vector sweeps 4 B .. --max-bytes with ncclAllReduce: it takes no "
                       "--n") == 0);
    EXPECT(parse("--combine reduce --vector", &o, err) == PARSE_ERROR &&
           strstr(err, "takes no --combine"));
    EXPECT(parse("--vector --n 1 --combine host", &o, err) == PARSE_ERROR);
    EXPECT(parse("--fill random --seed 7 --reps 5 --warmup 0 --no-flush --no-baseline", &o,
                 err) == PARSE_OK && o.fill == FILL_RANDOM && o.seed == 7 && o.reps == 5 &&
           o.warmup == 0 && !o.flush && !o.baseline);
    EXPECT(parse("--fill nope", &o, err) == PARSE_ERROR);
    EXPECT(parse("--reps 0", &o, err) == PARSE_ERROR);
    EXPECT(parse("--seed -1", &o, err) == PARSE_ERROR &&
           strcmp(err, "--seed needs a non-negative number up to 2^63 - 1, got '-1'") == 0);
    /* The harness's words (common/harness.c option_*), not words of its own. */
    EXPECT(parse("--wait 0", &o, err) == PARSE_ERROR &&
           strcmp(err, "--wait needs seconds from 1 to 86400, got '0'") == 0);
    EXPECT(parse("--rank x --world 2 --id-file f", &o, err) == PARSE_ERROR &&
           strcmp(err, "--rank needs a number from 0 to 65535, got 'x'") == 0);
    EXPECT(parse("--fill levels", &o, err) == PARSE_ERROR &&
           strcmp(err, "--fill must be random, positive, wide, ones, ints, onehot, exact, "
                       "shifted or tiny, got 'levels'") == 0);
    EXPECT(parse("--combine sum", &o, err) == PARSE_ERROR &&
           strcmp(err, "--combine must be allreduce, reduce, host, all or a comma-separated "
                       "list, got 'sum'") == 0);
    EXPECT(parse("--id-file=", &o, err) == PARSE_ERROR &&
           strcmp(err, "--id-file needs a file name") == 0);
    EXPECT(parse("--seed 18446744073709551615", &o, err) == PARSE_ERROR);
    EXPECT(parse("--bogus=1", &o, err) == PARSE_ERROR &&
           strcmp(err, "unknown option '--bogus=1' (try --help)") == 0);
    EXPECT(parse("--csv", &o, err) == PARSE_ERROR);
    EXPECT(parse("--help", &o, err) == PARSE_HELP);
    EXPECT(parse("--version", &o, err) == PARSE_VERSION);
}

static void test_bus_bandwidth(void)
{
    /* nccl-tests: busbw = algbw x 2 (n - 1) / n. */
    EXPECT(bus_bandwidth(100.0, 2) == 100.0);
    EXPECT(bus_bandwidth(100.0, 4) == 150.0);
    EXPECT(bus_bandwidth(100.0, 1) == 0.0);
    EXPECT(bus_bandwidth(80.0, 8) == 140.0);
}

int main(void)
{
    test_shards();
    test_options();
    test_bus_bandwidth();
    printf("multigpu unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
