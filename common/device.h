/* device.h: the GPU half of the harness that every main() shares (part 1's
 * driver.c, part 2's rows_driver.c): the device and its properties, the
 * program's name and build, buffers between NaN guards, the L2 flush and
 * the event timer. */
#ifndef REDUCE_DEVICE_H
#define REDUCE_DEVICE_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "harness.h"

struct gpu_info {
    char name[256];
    char cc[16];
    char driver[96];
    char cuda[16];
    int sms;
    int sm_threads;        /* resident threads per SM: 2048 on sm_80/sm_90, 1536 on sm_86/89 */
    int l2_bytes;
    double peak_gbps;
    size_t free_bytes, total_bytes;
};

/* What built this program: "nvcc 13.0.88 CCCL 3.0.1" and the machine code
 * it carries ("sm_90", or "sm_75 sm_80 sm_90"), from common/toolchain.cu;
 * the hash of its code and build flags (tools/code_hash.py, written by make)
 * and the git revision (build/version.c). */
const char *build_toolchain(void);
const char *build_arch(void);
extern const char reduce_code_hash[];
extern const char reduce_git_rev[];

/* The program's name is its directory: .../step3_idle/run -> "step3_idle",
 * .../baseline_cub/run -> "cub", rows/step2_warp/run -> "rows/step2_warp". */
void program_name(const char *argv0, char *out, size_t len);

/* Opens device `device` (exit 3 with one line if there is none, exit 2 if
 * the index is out of range) and fills *g. */
void open_device(int device, struct gpu_info *g);

/* --gpu-info: the lines the grader reads, "key=value" each. */
void print_gpu_info(const struct gpu_info *g);

/* --version: "<name> code_hash=<hash> git_rev=<rev> arch=<arch> toolchain=<...>". */
void print_version(const char *name);

/* The header line every run prints first. */
void print_gpu_line(const char *name, const struct gpu_info *g);

/* The row fields every run fills the same way (device, build, revision). */
void row_set_build(struct result_row *row, const struct gpu_info *g);

/* A device buffer with NaN guards: data = base + GUARD_FLOATS + lead.
 * A read just past either end brings a NaN into the result, and a write
 * there is seen when the guard is checked after the run. */
#define GUARD_FLOATS 64
struct guarded {
    float *base;
    float *data;
    size_t lead;    /* floats between the front guard and data (--offset) */
    size_t count;   /* floats of data */
};
void guarded_alloc(struct guarded *b, size_t lead, size_t count);
void guarded_poison(const struct guarded *b);   /* every byte, guards too, to NaN */
int guards_intact(const struct guarded *b);      /* 1 if both guards still hold NaN */
void guarded_free(struct guarded *b);

/* The L2 flush: a kernel reads a buffer FLUSH_L2_MULTIPLE times the L2,
 * so each timed run starts with none of its input cached. */
struct flusher {
    void *buf;
    size_t bytes;
    float *sink;
};
void flusher_init(struct flusher *f, const struct gpu_info *g, int enabled);
void flusher_run(const struct flusher *f);
void flusher_free(struct flusher *f);

/* Two CUDA events around the timed region. */
struct timer {
    cudaEvent_t start, stop;
};
void timer_init(struct timer *t);
void timer_start(struct timer *t);
double timer_stop_us(struct timer *t);   /* waits for the stop event */
void timer_free(struct timer *t);

#endif
