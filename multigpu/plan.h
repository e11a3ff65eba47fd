/* plan.h: the CPU half of multigpu/run, with no CUDA and no NCCL in it, so
 * tests/multigpu_tests.c checks it on any machine: how n floats are split
 * into one contiguous shard per GPU, and the command line. */
#ifndef MULTIGPU_PLAN_H
#define MULTIGPU_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

/* Shard `rank` of `world`: floats [first, first + count) of the n. The first
 * n % world shards get one float more, so sizes differ by at most one and a
 * GPU whose shard is empty (n < world) is one of the last. */
struct shard {
    size_t first, count;
};
struct shard shard_of(size_t n, int world, int rank);

enum combine { COMBINE_ALLREDUCE, COMBINE_REDUCE, COMBINE_HOST };
#define COMBINE_COUNT 3
const char *combine_name(enum combine c);

#define MG_MAX_SIZES 64         /* --n takes a comma-separated list */
#define MG_MAX_GPUS 64
#define MG_DEFAULT_MAX_BYTES ((size_t)1 << 30)   /* --vector: 4 B .. 1 GiB */
#define MG_DEFAULT_WAIT_S 60    /* --id-file: how long ranks > 0 wait for rank 0 */

struct mg_options {
    size_t n[MG_MAX_SIZES];
    int sizes;
    int combine[COMBINE_COUNT];  /* which combines to run, in this order */
    int combines;
    int gpus;                    /* 0: every visible GPU */
    int rank, world;             /* world 0: one process drives every GPU */
    const char *id_file;
    int wait_s;
    int vector;                  /* the all-reduce sweep instead of the sum */
    size_t max_bytes;
    int reps, warmup;
    uint64_t seed;
    enum fill_kind fill;
    int check_only;
    int flush;
    int baseline;                /* also time one GPU on all n */
    const char *csv_path;
};

/* The two CSV files' columns (tools/schema.py reads them by these names).
 * source: nccl for this program's rows, torch for tools/torch_dist.py's;
 * launch: single (one process drives every GPU) or per-process. */
#define MG_SUM_HEADER                                                               \
    "step,source,n,gpus,launch,combine,reps,warmup,median_us,min_us,max_us,"       \
    "one_gpu_us,speedup,gbps,result,reference,abs_err,tol,pass,fill,seed,flush,"   \
    "gpu,cc,driver,cuda,nccl,git_rev,code_hash,arch,toolchain"
#define MG_VECTOR_HEADER                                                            \
    "step,source,bytes,count,gpus,launch,reps,warmup,median_us,min_us,max_us,"     \
    "algbw_gbps,busbw_gbps,pass,gpu,cc,driver,cuda,nccl,git_rev,code_hash,arch,"   \
    "toolchain"

/* Fills *o from argv; on PARSE_ERROR err holds a one-line message.
 * PARSE_HELP and PARSE_VERSION as the harness's parser returns them. */
enum parse_status mg_parse(int argc, char **argv, struct mg_options *o, char *err,
                           size_t err_len);
void mg_usage(const char *prog);

/* nccl-tests' bus bandwidth: what each link carries in a ring all-reduce,
 * 2 (w - 1) / w of the bytes; 0 for one GPU, which moves nothing. */
double bus_bandwidth(double algbw, int world);

#endif
