/* gpu_work.c: the grader's watch on where a program does its work.
 *
 * Linked only into the programs the grader builds for itself (make check
 * STEP= or SOURCE=, the broken fixtures: build/graded/, build/monitored/),
 * never into the programs that make bench times. The link wraps the one
 * function of the contract that does the work (ld --wrap): reduce_pass()
 * in part 1, row_forward() in part 2 (GPU_WORK_ROWS), back_run() in part 3
 * (GPU_WORK_BACK). Every call of it from
 * the harness goes through here first.
 *
 * Nothing is watched unless REDUCE_GPU_WORK names a file. Then CUPTI (the
 * profiling interface that ships with the toolkit, loaded with dlopen)
 * records what the CUDA driver did: each kernel it ran, each copy with its
 * direction and bytes, and the bytes that unified memory moved to the host.
 * The driver reports these, whatever the kernels, the copy calls or the
 * program are named. The records are switched on once, at the first call,
 * and left on; each call is marked by two CUPTI timestamps, and a record is
 * charged to the call it ran inside (its middle between the call's two
 * stamps: common/gpu_work_calls.h), so the harness's own copies, fills and
 * reads between the calls are no call's. A call costs two device
 * synchronizations and two timestamps, not a flush of CUPTI's buffers (the
 * first design switched the records on and off and flushed around every
 * call: about 2 s a call on an H200). At exit CUPTI's buffers are flushed
 * once, and the file gets one line; step 3's, on the H200 at 2^20 + 3 floats:
 *   monitor=ok calls=5 kernels=3 d2h_bytes=0 um_d2h_bytes=0 input_bytes=4194316 um=on dropped=0
 * (and more fields below) and tools/grade.py judges it, in every check but
 * the sanitizers' and the speed runs: no kernel, or the input's bytes on
 * their way to the host, fail the check. One process may run many checks
 * (--checks FILE) or many calls (a timed run): worst_d2h_bytes and
 * worst_input_bytes are the one call that sent the largest share of its own
 * input to the host (0 0 when no call sent WORST_FLOOR bytes), host_calls
 * the calls that launched no kernel but sent bytes to the host (a batch's
 * other kernels would hide a tiny input summed on the host).
 *
 * REDUCE_GPU_WORK_TIMES=1 prints at exit, to stderr, one line of what the
 * watch cost in microseconds: each stage of its start, its time inside the
 * calls' wrappers and at exit (and, unwatched, when the first call came).
 *
 * A kernel can also store the input straight into host memory that the GPU
 * can write (zero-copy): no copy and no page moves, so nothing above sees
 * it. Such memory comes only from a few driver calls, and the harness makes
 * none of them, so from the program's first instruction CUPTI's callbacks
 * count each one the process makes (host_maps=, and the first one's name):
 * pinned or mapped allocations, registrations of host memory, allocations
 * and pools placed on the host, and managed memory advised to stay on the
 * host or to be mapped for the GPU. What it still cannot see: pageable
 * memory a kernel reaches where the system lets it (pageable=on: HMM or
 * ATS), and code that sets out to break the watch from inside the process
 * (docs/grading.md says so). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#if defined(GPU_WORK_ROWS)
#include "rows.h"
#elif defined(GPU_WORK_BACK)
#include "back.h"
#else
#include "reduce.h"
#endif
#include "gpu_work_calls.h"

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

/* The fewest bytes one call may send to the host and be judged for it: a
 * scalar or a few read back (a library's reduction returns its result to the
 * host) is no copy of the input, even at n = 1. */
#define WORST_FLOOR 64

#ifndef CUPTI_LIBRARY
#define CUPTI_LIBRARY "libcupti.so"
#endif

static struct {
    const char *path;            /* REDUCE_GPU_WORK: where the line goes; NULL: no watch */
    int started, failed;
    int enabled;                 /* CUPTI's activity records are on: from the first call to exit */
    char why[200];               /* why the watch could not run */
    /* The line's figures, summed at exit over the calls (gpu_work_sum). */
    unsigned long long calls, kernels, d2h_bytes, um_d2h_bytes, input_bytes, dropped;
    /* One call's share: the bytes it sent to the host against its own input,
     * for the call that sent the largest share of at least WORST_FLOOR bytes
     * (a batch of checks, or a timed run's many calls, in one process must
     * not hide one call's copy behind the others' inputs); and the calls
     * that sent bytes to the host with no kernel at all, however few. */
    unsigned long long worst_d2h, worst_input, host_calls;
    int um;                      /* unified memory's bytes are counted */
    /* Calls that give a kernel host memory to write, seen in the runtime's
     * domain and in the driver's (a runtime call makes a driver call, seen
     * again there: the report gives the larger count), and the first one's
     * name: the function the program called. */
    unsigned long long host_maps_runtime, host_maps_driver, host_map_named;
    char host_map[64];
    int pageable;                /* kernels can reach pageable host memory: 1, 0, -1 unknown */
} watch;

/* REDUCE_GPU_WORK_TIMES=1: what the watch costs, in microseconds. */
static struct {
    int on;
    long long born;              /* when the constructor ran */
    long long load, subscribe, host_map_callbacks;     /* the constructor's stages */
    long long buffers, configure_um, enable_kinds;     /* the first call's */
    long long first_call;        /* since born, when the first call came; -1: none */
    unsigned long long calls;
    long long wrappers;          /* inside the wrappers, all told (syncs and the first call's stages too) */
    long long syncs;             /* of which waiting for the device, before and after each call */
    long long exit, flush;       /* at exit, all told, and of which CUPTI's one flush */
} times;

static long long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Runs statement, adding its time to times.field when the times are asked for. */
#define TIMED(field, statement)                                 \
    do {                                                        \
        long long timed_from_ = times.on ? now_us() : 0;        \
        statement;                                              \
        if (times.on)                                           \
            times.field += now_us() - timed_from_;              \
    } while (0)

/* Registered first, so it runs last: after the line is written. */
static void print_times(void)
{
    fprintf(stderr, "gpu-work times (us): watch=%s load=%lld subscribe=%lld "
            "host_map_callbacks=%lld buffers=%lld configure_um=%lld enable_kinds=%lld "
            "first_call_at=%lld calls=%llu wrappers=%lld syncs=%lld exit=%lld flush=%lld "
            "process=%lld\n",
            watch.path ? (watch.failed ? "error" : "on") : "off", times.load, times.subscribe,
            times.host_map_callbacks, times.buffers, times.configure_um, times.enable_kinds,
            times.first_call, times.calls, times.wrappers, times.syncs, times.exit, times.flush,
            now_us() - times.born);
}

static void watch_collect(void);

static void write_report(void)
{
    long long from = times.on ? now_us() : 0;
    watch_collect();
    FILE *f = fopen(watch.path, "w");
    if (f) {
        if (watch.failed)
            fprintf(f, "monitor=error why=%s\n", watch.why);
        else
            fprintf(f, "monitor=ok calls=%llu kernels=%llu d2h_bytes=%llu um_d2h_bytes=%llu "
                    "input_bytes=%llu um=%s dropped=%llu host_maps=%llu host_map=%s pageable=%s "
                    "worst_d2h_bytes=%llu worst_input_bytes=%llu host_calls=%llu\n",
                    watch.calls, watch.kernels, watch.d2h_bytes, watch.um_d2h_bytes,
                    watch.input_bytes, watch.um ? "on" : "off", watch.dropped,
                    watch.host_maps_runtime > watch.host_maps_driver ? watch.host_maps_runtime
                                                                     : watch.host_maps_driver,
                    watch.host_map[0] ? watch.host_map : "-",
                    watch.pageable < 0 ? "unknown" : watch.pageable ? "on" : "off",
                    watch.worst_d2h, watch.worst_input, watch.host_calls);
        fclose(f);
    }
    if (times.on)
        times.exit += now_us() - from;
}

static void fail(const char *what)
{
    if (watch.failed)
        return;   /* the first reason is the one to report */
    watch.failed = 1;
    snprintf(watch.why, sizeof watch.why, "%s", what);
    for (char *c = watch.why; *c; c++)
        if (*c == ' ' || *c == '\n')
            *c = '_';
}

static void watch_callbacks(void);

/* Written first, so that a program built with the watch says so even if it
 * dies before its first call of the contract. Priority 101 runs
 * it before the program's own constructors (C++ globals run at the default,
 * 65535), so that a host allocation made in one of them is counted too. */
__attribute__((constructor(101))) static void watch_announce(void)
{
    const char *timed = getenv("REDUCE_GPU_WORK_TIMES");
    if (timed && strcmp(timed, "1") == 0) {
        times.on = 1;
        times.born = now_us();
        times.first_call = -1;
        atexit(print_times);
    }
    const char *path = getenv("REDUCE_GPU_WORK");
    if (!path || !*path)
        return;
    watch.path = path;
    watch.pageable = -1;
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "monitor=linked\n");
        fclose(f);
    }
    watch_callbacks();
}

#ifdef HAVE_CUPTI
/* Every call so far, in the order made, each with what was charged to it
 * (common/gpu_work_calls.h): 48 bytes a call, kept to exit. CUPTI may hand
 * its buffers over on a thread of its own, which charges their records here
 * while the program appends calls: the lock. */
static struct {
    pthread_mutex_t lock;
    struct gpu_work_call *at;
    size_t count, capacity;
} ledger = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static struct {
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*timestamp)(uint64_t *);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*configure_um)(CUpti_ActivityUnifiedMemoryCounterConfig *, uint32_t);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId);
    void *lib;
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

/* Each record is charged as it arrives to the call that was running while
 * it ran (gpu_work_charge), and the buffer is freed: nothing but the calls
 * is kept, however long the process runs with the records on. A record
 * arrives after its call began (the call was logged before it launched
 * anything), so its call is always in the ledger; a call still running has
 * no end yet (GPU_WORK_OPEN), and what ran after it began is its own.
 * Records of the harness's work between the calls are counted by no call. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)size;
    size_t lost = 0;
    if (cupti.dropped && cupti.dropped(ctx, stream, &lost) == CUPTI_SUCCESS && lost)
        ADD(watch.dropped, (unsigned long long)lost);
    CUpti_Activity *record = NULL;
    pthread_mutex_lock(&ledger.lock);
    while (cupti.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
        /* Every kernel record since CUDA 9 (CUpti_ActivityKernel4 to 10)
         * has its start and end at the same place. */
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            const CUpti_ActivityKernel4 *kernel = (const CUpti_ActivityKernel4 *)record;
            gpu_work_charge(ledger.at, ledger.count, GPU_WORK_KERNEL, kernel->start, kernel->end,
                            0);
            break;
        }
        /* The first versions of both records: every CUPTI since CUDA 8 has
         * them, and the fields read here (the start too) lead every later
         * version. */
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy *copy = (const CUpti_ActivityMemcpy *)record;
            /* To host memory, from device memory or a CUDA array. */
            if (copy->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ||
                copy->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH)
                gpu_work_charge(ledger.at, ledger.count, GPU_WORK_D2H, copy->start, copy->end,
                                (unsigned long long)copy->bytes);
            break;
        }
        case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: {
            const CUpti_ActivityUnifiedMemoryCounter2 *um =
                (const CUpti_ActivityUnifiedMemoryCounter2 *)record;
            if (um->counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH)
                gpu_work_charge(ledger.at, ledger.count, GPU_WORK_UM_D2H, um->start, um->end,
                                (unsigned long long)um->value);
            break;
        }
        default:
            break;
        }
    }
    pthread_mutex_unlock(&ledger.lock);
    free(buffer);
}

static const CUpti_ActivityKind WATCHED[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER,
};
#define WATCHED_COUNT (int)(sizeof WATCHED / sizeof WATCHED[0])

/* CUPTI's functions, found once; 0 if it is there. */
static int cupti_load(void)
{
    if (cupti.lib)
        return 0;
    void *lib = dlopen(CUPTI_LIBRARY, RTLD_NOW);
    if (!lib)
        lib = dlopen("libcupti.so", RTLD_NOW);
    if (!lib) {
        fail("CUPTI (libcupti.so) could not be loaded");
        return -1;
    }
#define FIND(field, name) *(void **)&cupti.field = dlsym(lib, name)
    FIND(register_callbacks, "cuptiActivityRegisterCallbacks");
    FIND(enable, "cuptiActivityEnable");
    FIND(flush_all, "cuptiActivityFlushAll");
    FIND(timestamp, "cuptiGetTimestamp");
    FIND(next_record, "cuptiActivityGetNextRecord");
    FIND(configure_um, "cuptiActivityConfigureUnifiedMemoryCounter");
    FIND(dropped, "cuptiActivityGetNumDroppedRecords");
    FIND(subscribe, "cuptiSubscribe");
    FIND(enable_callback, "cuptiEnableCallback");
#undef FIND
    if (!cupti.register_callbacks || !cupti.enable || !cupti.flush_all || !cupti.timestamp ||
        !cupti.next_record || !cupti.subscribe || !cupti.enable_callback) {
        fail("CUPTI lacks the activity or callback functions");
        return -1;
    }
    cupti.lib = lib;
    return 0;
}

/* Host memory placed where a kernel can write it: on the host, or on a
 * host NUMA node. */
static int on_host(CUmemLocationType type)
{
    return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/* Managed memory told to stay on the host (its preferred location), or to be
 * mapped for a device wherever it lies: the GPU then writes host pages in
 * place, and no page moves for the unified-memory counters to see. */
static int advised_to_host(CUmem_advise advice, int host)
{
    return advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
           (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION && host);
}

/* The runtime's own checks of its two functions whose parameters decide,
 * cudaMemAdvise and cudaMemPoolCreate; its enums share the driver's values. */
static int runtime_counts(CUpti_CallbackId id, const void *params)
{
    if (id == CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020) {
        const cudaMemPoolCreate_v11020_params *a = params;
        return a->poolProps && on_host((CUmemLocationType)a->poolProps->location.type);
    }
    if (id == CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020) {
        const cudaMemAdvise_v12020_params *a = params;
        return advised_to_host((CUmem_advise)a->advice,
                               on_host((CUmemLocationType)a->location.type));
    }
    return 1;   /* cudaMallocHost, cudaHostAlloc, cudaHostRegister */
}

/* Called on entry to each function enabled below, from any thread: the call
 * that makes the memory is what counts, whatever it returns. The runtime's
 * functions are watched as well as the driver's they call, in case one
 * reaches the driver by a way of its own. */
static void CUPTIAPI on_call(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void *data)
{
    (void)user;
    const CUpti_CallbackData *call = (const CUpti_CallbackData *)data;
    if (call->callbackSite != CUPTI_API_ENTER)
        return;
    int counts = 1;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        counts = runtime_counts(id, call->functionParams);
    else switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
        const cuMemCreate_params *a = (const cuMemCreate_params *)call->functionParams;
        counts = a->prop && on_host(a->prop->location.type);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate: {
        const cuMemPoolCreate_params *a = (const cuMemPoolCreate_params *)call->functionParams;
        counts = a->poolProps && on_host(a->poolProps->location.type);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAdvise: {
        const cuMemAdvise_params *a = (const cuMemAdvise_params *)call->functionParams;
        counts = advised_to_host(a->advice, a->device == CU_DEVICE_CPU);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAdvise_v2: {
        const cuMemAdvise_v2_params *a = (const cuMemAdvise_v2_params *)call->functionParams;
        counts = advised_to_host(a->advice, on_host(a->location.type));
        break;
    }
    default:
        break;
    }
    if (!counts)
        return;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        ADD(watch.host_maps_runtime, 1ull);
    else
        ADD(watch.host_maps_driver, 1ull);
    if (ADD(watch.host_map_named, 1ull) == 0)
        snprintf(watch.host_map, sizeof watch.host_map, "%s",
                 call->functionName ? call->functionName : "?");
}

/* Every function that gives a kernel host memory to write. */
static const struct {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId id;
} HOST_MAPS[] = {
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAdvise},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAdvise_v2},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020},
};
#define HOST_MAP_COUNT (int)(sizeof HOST_MAPS / sizeof HOST_MAPS[0])

/* From the constructor, before any CUDA call of the program's. */
static void watch_callbacks(void)
{
    int loaded;
    TIMED(load, loaded = cupti_load());
    if (loaded != 0)
        return;
    CUpti_SubscriberHandle subscriber;
    CUptiResult subscribed;
    TIMED(subscribe, subscribed = cupti.subscribe(&subscriber, (CUpti_CallbackFunc)on_call, NULL));
    if (subscribed != CUPTI_SUCCESS) {
        fail("CUPTI refused a callback subscriber (is another profiler attached?)");
        return;
    }
    int refused = 0;
    TIMED(host_map_callbacks,
          for (int k = 0; k < HOST_MAP_COUNT && !refused; k++)
              refused = cupti.enable_callback(1, subscriber, HOST_MAPS[k].domain,
                                              HOST_MAPS[k].id) != CUPTI_SUCCESS);
    if (refused)
        fail("CUPTI could not watch host allocations");
}

/* At the first call: CUPTI's buffers and unified memory's counter. */
static void watch_start(void)
{
    watch.started = 1;
    /* After the CUDA runtime's own exit handlers were registered (the
     * harness has made its context), so this one runs before them. */
    atexit(write_report);
    if (cupti_load() != 0)
        return;
    CUptiResult registered;
    TIMED(buffers, registered = cupti.register_callbacks(buffer_requested, buffer_completed));
    if (registered != CUPTI_SUCCESS) {
        fail("CUPTI refused its buffers (is another profiler attached?)");
        return;
    }
    int device = 0, pageable = 0;
    cudaGetDevice(&device);
    if (cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device) == cudaSuccess)
        watch.pageable = pageable != 0;
    CUpti_ActivityUnifiedMemoryCounterConfig config[1] = {{
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, (uint32_t)device, 1}};
    TIMED(configure_um,
          watch.um = cupti.configure_um && cupti.configure_um(config, 1) == CUPTI_SUCCESS);
}

/* The records, switched on once and left on to exit: the first design
 * switched them on and off around every call and flushed CUPTI's buffers
 * after each, about 2 s a call on an H200. */
static int watch_enable(void)
{
    for (int k = 0; k < WATCHED_COUNT; k++) {
        if (WATCHED[k] == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER && !watch.um)
            continue;
        if (cupti.enable(WATCHED[k]) != CUPTI_SUCCESS) {
            if (WATCHED[k] == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
                watch.um = 0;
                continue;
            }
            fail("CUPTI could not record kernels and copies");
            return -1;
        }
    }
    watch.enabled = 1;
    return 0;
}

/* Around one call: the device idle first, so that nothing the harness
 * queued before runs inside the call's stamps, and idle again before the
 * end is stamped, so that everything the call queued ran inside them
 * (gpu_work_moment in gpu_work_calls.h: why a record's middle places it). */
static void watch_call_begin(unsigned long long input_bytes)
{
    if (!watch.started)
        watch_start();
    if (watch.failed)
        return;
    TIMED(syncs, cudaDeviceSynchronize());
    if (!watch.enabled) {
        int enabled;
        TIMED(enable_kinds, enabled = watch_enable());
        if (enabled != 0)
            return;
    }
    uint64_t start = 0;
    if (cupti.timestamp(&start) != CUPTI_SUCCESS) {
        fail("CUPTI gave no timestamp");
        return;
    }
    pthread_mutex_lock(&ledger.lock);
    if (ledger.count == ledger.capacity) {
        size_t more = ledger.capacity ? 2 * ledger.capacity : 64;
        struct gpu_work_call *at = realloc(ledger.at, more * sizeof *at);
        if (!at) {
            pthread_mutex_unlock(&ledger.lock);
            fail("out of host memory for the calls");
            return;
        }
        ledger.at = at;
        ledger.capacity = more;
    }
    ledger.at[ledger.count++] = (struct gpu_work_call){start, GPU_WORK_OPEN, input_bytes, 0, 0, 0};
    pthread_mutex_unlock(&ledger.lock);
}

static void watch_call_end(void)
{
    if (watch.failed)
        return;
    TIMED(syncs, cudaDeviceSynchronize());
    uint64_t end = 0;
    if (cupti.timestamp(&end) != CUPTI_SUCCESS) {
        fail("CUPTI gave no timestamp");
        return;
    }
    pthread_mutex_lock(&ledger.lock);
    if (ledger.count)
        ledger.at[ledger.count - 1].end = end;
    pthread_mutex_unlock(&ledger.lock);
}

/* At exit, before the line: CUPTI's buffers flushed once (every record of
 * the calls is complete, the last call having waited for the device), then
 * the calls summed. A call still open (the program exits inside one) keeps
 * what ran after it began. */
static void watch_collect(void)
{
    if (watch.failed || !watch.enabled)
        return;
    TIMED(flush, cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    pthread_mutex_lock(&ledger.lock);
    struct gpu_work_totals t = gpu_work_sum(ledger.at, ledger.count, WORST_FLOOR);
    pthread_mutex_unlock(&ledger.lock);
    watch.calls = t.calls;
    watch.kernels = t.kernels;
    watch.d2h_bytes = t.d2h_bytes;
    watch.um_d2h_bytes = t.um_d2h_bytes;
    watch.input_bytes = t.input_bytes;
    watch.worst_d2h = t.worst_d2h;
    watch.worst_input = t.worst_input;
    watch.host_calls = t.host_calls;
}
#else
static void watch_callbacks(void)
{
}

static void watch_call_begin(unsigned long long input_bytes)
{
    (void)input_bytes;
    if (!watch.started) {
        watch.started = 1;
        atexit(write_report);
        fail("built without cupti.h");
    }
}

static void watch_call_end(void)
{
}

static void watch_collect(void)
{
}
#endif

/* The wrappers' watch: nothing but a count unless REDUCE_GPU_WORK names a file. */
static void watch_begin(unsigned long long input_bytes)
{
    if (times.on) {
        times.calls++;
        if (times.first_call < 0)
            times.first_call = now_us() - times.born;
    }
    if (!watch.path)
        return;
    TIMED(wrappers, watch_call_begin(input_bytes));
}

static void watch_end(void)
{
    if (!watch.path)
        return;
    TIMED(wrappers, watch_call_end());
}

#if defined(GPU_WORK_BACK)
void __real_back_run(const struct back_problem *p);

/* The input: x (softmax: y) and dy, rows x cols each, floats or bfloat16s. */
void __wrap_back_run(const struct back_problem *p)
{
    size_t elem = (p->x_bf16 || p->y_bf16 || p->dy_bf16) ? 2 : sizeof(float);
    watch_begin(2ull * p->rows * p->cols * elem);
    __real_back_run(p);
    watch_end();
}
#elif defined(GPU_WORK_ROWS)
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
