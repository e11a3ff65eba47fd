/* gpu_work.c: the grader's watch on where a program does its work.
 *
 * Linked only into the programs the grader builds for itself (make check
 * STEP= or SOURCE=, the broken fixtures: build/graded/, build/monitored/),
 * never into the programs that make bench times. The link wraps the one
 * function of the contract that does the work (ld --wrap): reduce_pass()
 * in part 1, row_forward() in part 2 (GPU_WORK_ROWS). Every call of it from
 * the harness goes through here first.
 *
 * Nothing is watched unless REDUCE_GPU_WORK names a file. Then, around every
 * call, CUPTI (the profiling interface that ships with the toolkit, loaded
 * with dlopen) records what the CUDA driver did for the submission: each
 * kernel it ran, each copy with its direction and bytes, and the bytes that
 * unified memory moved to the host. The driver reports these, whatever the
 * kernels, the copy calls or the program are named. At exit the file gets
 * one line; step 3's, on the H200 at 2^20 + 3 floats:
 *   monitor=ok calls=5 kernels=3 d2h_bytes=0 um_d2h_bytes=0 input_bytes=4194316 um=on dropped=0
 * and tools/grade.py judges it: no kernel, or the input's bytes on their way
 * to the host, fail the "gpu-work" check.
 *
 * What it cannot see: a kernel that stores the input into host memory the
 * GPU can address (zero-copy), and code that sets out to break the watch
 * from inside the process (docs/grading.md says so). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#ifdef GPU_WORK_ROWS
#include "rows.h"
#else
#include "reduce.h"
#endif

#if defined(__has_include)
#if __has_include(<cupti.h>)
/* A header of the toolkit's, not ours: its enums go past int, which
 * -Wpedantic reports. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cupti.h>
#pragma GCC diagnostic pop
#define HAVE_CUPTI 1
#endif
#endif

#ifndef CUPTI_LIBRARY
#define CUPTI_LIBRARY "libcupti.so"
#endif

static struct {
    const char *path;            /* REDUCE_GPU_WORK: where the line goes; NULL: no watch */
    int started, failed;
    char why[200];               /* why the watch could not run */
    unsigned long long calls, kernels, d2h_bytes, um_d2h_bytes, input_bytes, dropped;
    int um;                      /* unified memory's bytes are counted */
} watch;

static void write_report(void)
{
    FILE *f = fopen(watch.path, "w");
    if (!f)
        return;
    if (watch.failed)
        fprintf(f, "monitor=error why=%s\n", watch.why);
    else
        fprintf(f, "monitor=ok calls=%llu kernels=%llu d2h_bytes=%llu um_d2h_bytes=%llu "
                "input_bytes=%llu um=%s dropped=%llu\n", watch.calls, watch.kernels,
                watch.d2h_bytes, watch.um_d2h_bytes, watch.input_bytes,
                watch.um ? "on" : "off", watch.dropped);
    fclose(f);
}

/* Written first, so that a program built with the watch says so even if it
 * never calls the contract (n == 1) or dies on the way. */
__attribute__((constructor)) static void watch_announce(void)
{
    const char *path = getenv("REDUCE_GPU_WORK");
    if (!path || !*path)
        return;
    watch.path = path;
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "monitor=linked\n");
        fclose(f);
    }
}

static void fail(const char *what)
{
    watch.failed = 1;
    snprintf(watch.why, sizeof watch.why, "%s", what);
    for (char *c = watch.why; *c; c++)
        if (*c == ' ' || *c == '\n')
            *c = '_';
}

#ifdef HAVE_CUPTI
static struct {
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*configure_um)(CUpti_ActivityUnifiedMemoryCounterConfig *, uint32_t);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
} cupti;

/* CUPTI may deliver buffers on a thread of its own. */
#define ADD(counter, value) __atomic_fetch_add(&(counter), (value), __ATOMIC_RELAXED)

#define BUFFER_BYTES (1u << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)size;
    size_t lost = 0;
    if (cupti.dropped && cupti.dropped(ctx, stream, &lost) == CUPTI_SUCCESS && lost)
        ADD(watch.dropped, (unsigned long long)lost);
    CUpti_Activity *record = NULL;
    while (cupti.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL:
            ADD(watch.kernels, 1ull);
            break;
        /* The first versions of both records: every CUPTI since CUDA 8 has
         * them, and the fields read here lead every later version too. */
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy *copy = (const CUpti_ActivityMemcpy *)record;
            /* To host memory, from device memory or a CUDA array. */
            if (copy->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ||
                copy->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH)
                ADD(watch.d2h_bytes, (unsigned long long)copy->bytes);
            break;
        }
        case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: {
            const CUpti_ActivityUnifiedMemoryCounter2 *um =
                (const CUpti_ActivityUnifiedMemoryCounter2 *)record;
            if (um->counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH)
                ADD(watch.um_d2h_bytes, (unsigned long long)um->value);
            break;
        }
        default:
            break;
        }
    }
    free(buffer);
}

static const CUpti_ActivityKind WATCHED[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER,
};
#define WATCHED_COUNT (int)(sizeof WATCHED / sizeof WATCHED[0])

static void watch_start(void)
{
    watch.started = 1;
    /* After the CUDA runtime's own exit handlers were registered (the
     * harness has made its context), so this one runs before them. */
    atexit(write_report);
    void *lib = dlopen(CUPTI_LIBRARY, RTLD_NOW);
    if (!lib)
        lib = dlopen("libcupti.so", RTLD_NOW);
    if (!lib) {
        fail("CUPTI (libcupti.so) could not be loaded");
        return;
    }
#define FIND(field, name) *(void **)&cupti.field = dlsym(lib, name)
    FIND(register_callbacks, "cuptiActivityRegisterCallbacks");
    FIND(enable, "cuptiActivityEnable");
    FIND(disable, "cuptiActivityDisable");
    FIND(flush_all, "cuptiActivityFlushAll");
    FIND(next_record, "cuptiActivityGetNextRecord");
    FIND(configure_um, "cuptiActivityConfigureUnifiedMemoryCounter");
    FIND(dropped, "cuptiActivityGetNumDroppedRecords");
#undef FIND
    if (!cupti.register_callbacks || !cupti.enable || !cupti.disable || !cupti.flush_all ||
        !cupti.next_record) {
        fail("CUPTI lacks the activity functions");
        return;
    }
    if (cupti.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
        fail("CUPTI refused its buffers (is another profiler attached?)");
        return;
    }
    int device = 0;
    cudaGetDevice(&device);
    CUpti_ActivityUnifiedMemoryCounterConfig config[1] = {{
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, (uint32_t)device, 1}};
    watch.um = cupti.configure_um && cupti.configure_um(config, 1) == CUPTI_SUCCESS;
}

/* Around one call: the device idle first, so that nothing the harness
 * queued before is charged to the submission, and idle again after, so that
 * everything the submission queued is. */
static void watch_begin(unsigned long long input_bytes)
{
    if (!watch.path)
        return;
    if (!watch.started)
        watch_start();
    if (watch.failed)
        return;
    cudaDeviceSynchronize();
    watch.calls++;
    if (input_bytes > watch.input_bytes)
        watch.input_bytes = input_bytes;
    for (int k = 0; k < WATCHED_COUNT; k++) {
        if (WATCHED[k] == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER && !watch.um)
            continue;
        if (cupti.enable(WATCHED[k]) != CUPTI_SUCCESS) {
            if (WATCHED[k] == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
                watch.um = 0;
                continue;
            }
            fail("CUPTI could not record kernels and copies");
            return;
        }
    }
}

static void watch_end(void)
{
    if (!watch.path || watch.failed)
        return;
    cudaDeviceSynchronize();
    cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (int k = 0; k < WATCHED_COUNT; k++)
        if (WATCHED[k] != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER || watch.um)
            cupti.disable(WATCHED[k]);
}
#else
static void watch_begin(unsigned long long input_bytes)
{
    (void)input_bytes;
    if (watch.path && !watch.started) {
        watch.started = 1;
        atexit(write_report);
        fail("built without cupti.h");
    }
}

static void watch_end(void)
{
}
#endif

#ifdef GPU_WORK_ROWS
void __real_row_forward(const struct row_problem *p);

void __wrap_row_forward(const struct row_problem *p)
{
    size_t elem = p->x_bf16 ? 2 : sizeof(float);
    watch_begin((unsigned long long)p->rows * p->cols * elem);
    __real_row_forward(p);
    watch_end();
}
#else
size_t __real_reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace work);

size_t __wrap_reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace work)
{
    watch_begin((unsigned long long)n * sizeof(float));
    size_t m = __real_reduce_pass(d_in, d_out, n, work);
    watch_end();
    return m;
}
#endif
