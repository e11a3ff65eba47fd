/* gpu_work_calls.h: the watch's bookkeeping (common/gpu_work.c), pure
 * functions over arrays, so that tests/unit_tests.c tests them without a GPU.
 *
 * The watch marks each call of the contract's function with two CUPTI
 * timestamps, its start and its end, and keeps one gpu_work_call per call.
 * Each activity record CUPTI delivers (a kernel, a copy to the host, unified
 * memory's bytes to the host) is charged to the call whose [start, end]
 * holds the record's middle (gpu_work_moment says why), or to none: the
 * harness's own work between the calls (its copies, fills, flushes, reads of
 * the result) falls outside every call. At exit the calls are summed into
 * the watch's line. */
#ifndef REDUCE_GPU_WORK_CALLS_H
#define REDUCE_GPU_WORK_CALLS_H

#include <stddef.h>
#include <stdint.h>

/* The end of a call still running: records that arrive while it runs are its
 * own if they started after it did. */
#define GPU_WORK_OPEN UINT64_MAX

struct gpu_work_call {
    uint64_t start, end;             /* CUPTI timestamps (ns); end GPU_WORK_OPEN while it runs */
    unsigned long long input_bytes;  /* what the call was handed */
    unsigned long long kernels, d2h_bytes, um_d2h_bytes;
};

enum gpu_work_record { GPU_WORK_KERNEL, GPU_WORK_D2H, GPU_WORK_UM_D2H };

/* The call whose [start, end] holds timestamp t, or -1. The calls are in the
 * order they were made, one after another (the harness calls the contract
 * from one thread), so their starts increase: the last call that started at
 * or before t is the only one that can hold it. */
static inline long gpu_work_call_at(const struct gpu_work_call *calls, size_t count, uint64_t t)
{
    size_t lo = 0, hi = count;   /* the calls before lo start at or before t; from hi, after */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (calls[mid].start <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || t > calls[lo - 1].end)
        return -1;
    return (long)(lo - 1);
}

/* The moment that places a record ran from start to end: its middle.
 *
 * The watch waits for the device to be idle before it stamps a call's start
 * and again before it stamps its end (gpu_work.c), so every kernel and copy
 * the call queued, on any stream, ran wholly inside [start, end], and the
 * harness's work before and after it wholly outside: in exact time any
 * point of a record would place it. (A rule that gave a call everything up to
 * the next call's start would give it the harness's read of the result,
 * which in part 2 is as large as the input.) But the stamps are the host's
 * clock and the records' times the GPU's, which CUPTI converts to the
 * host's: a conversion a few microseconds off could move the start of the
 * harness's copy of the result, issued just after a call ends, back inside
 * the call. The middle is the point farthest from both edges: a record
 * crosses an edge only if it is shorter than twice that error and sits right
 * at the edge, and the large copies that matter are long. A record with no
 * end (an incomplete one, flushed at exit) is placed by its start. */
static inline uint64_t gpu_work_moment(uint64_t start, uint64_t end)
{
    return end > start ? start + (end - start) / 2 : start;
}

/* Charges one record (a kernel, or bytes to the host) that ran from start to
 * end to its call; 1 if one held it, 0 if it fell outside every call. */
static inline int gpu_work_charge(struct gpu_work_call *calls, size_t count,
                                  enum gpu_work_record kind, uint64_t start, uint64_t end,
                                  unsigned long long bytes)
{
    long k = gpu_work_call_at(calls, count, gpu_work_moment(start, end));
    if (k < 0)
        return 0;
    switch (kind) {
    case GPU_WORK_KERNEL:
        calls[k].kernels++;
        break;
    case GPU_WORK_D2H:
        calls[k].d2h_bytes += bytes;
        break;
    case GPU_WORK_UM_D2H:
        calls[k].um_d2h_bytes += bytes;
        break;
    }
    return 1;
}

/* The line's figures: sums over the calls, the largest input, and the one
 * call that sent the largest share of its own input to the host, at least
 * floor bytes (a scalar read back is no copy of the input): 0 0 if none did.
 * On a tie the first such call is kept. host_calls: the calls that launched
 * no kernel yet sent bytes to the host, however few. Such a call did its work
 * on the host, and in a batch the other calls' kernels would hide it from
 * the process's count of kernels, its bytes from the floor (a sum of under
 * 16 floats). */
struct gpu_work_totals {
    unsigned long long calls, kernels, d2h_bytes, um_d2h_bytes, input_bytes;
    unsigned long long worst_d2h, worst_input, host_calls;
};

static inline struct gpu_work_totals gpu_work_sum(const struct gpu_work_call *calls, size_t count,
                                                  unsigned long long floor)
{
    struct gpu_work_totals t = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t k = 0; k < count; k++) {
        const struct gpu_work_call *c = &calls[k];
        t.calls++;
        t.kernels += c->kernels;
        t.d2h_bytes += c->d2h_bytes;
        t.um_d2h_bytes += c->um_d2h_bytes;
        if (c->input_bytes > t.input_bytes)
            t.input_bytes = c->input_bytes;
        /* a/b > c/d as a x d > c x b: no division, and a call with no input
         * (n = 0 never reaches the watch) cannot divide by zero. */
        unsigned long long moved = c->d2h_bytes + c->um_d2h_bytes;
        if (c->kernels == 0 && moved > 0)
            t.host_calls++;
        if (moved >= floor &&
            (t.worst_d2h == 0 || (double)moved * (double)t.worst_input >
                                 (double)t.worst_d2h * (double)c->input_bytes)) {
            t.worst_d2h = moved;
            t.worst_input = c->input_bytes;
        }
    }
    return t;
}

#endif
