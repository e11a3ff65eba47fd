/* fake_cupti.c: a stand-in for libcupti.so, for the grader's watch
 * (common/gpu_work.c) on a machine without a GPU (tests/watch_fake.c,
 * tests/test_grade.py). It has the functions the watch looks up, a clock that
 * moves 100 ns at each cuptiGetTimestamp, and one more function of its own,
 * fake_cupti_record(), through which the program says what "the driver" did:
 * a kernel, a copy or unified memory's bytes, placed on that clock. As CUPTI
 * does, it records only the kinds switched on, and hands its records over
 * in buffers: three at a time as they come (in the middle of a call too),
 * the rest when flushed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cupti.h>
#pragma GCC diagnostic pop

typedef union {
    CUpti_Activity any;
    CUpti_ActivityKernel4 kernel;
    CUpti_ActivityMemcpy copy;
    CUpti_ActivityUnifiedMemoryCounter2 um;
} slot;

#define PENDING_MAX 64
#define DELIVER_AT 3

static struct {
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    int on[CUPTI_ACTIVITY_KIND_COUNT];
    uint64_t clock;
    slot pending[PENDING_MAX];
    int count;
    int enables;
} fake;

static void deliver(void)
{
    if (!fake.count || !fake.request || !fake.complete)
        return;
    uint8_t *buffer = NULL;
    size_t size = 0, max_records = 0;
    fake.request(&buffer, &size, &max_records);
    size_t valid = (size_t)fake.count * sizeof(slot);
    if (!buffer || size < valid)
        abort();
    memcpy(buffer, fake.pending, valid);
    fake.count = 0;
    fake.complete(NULL, 0, buffer, size, valid);
}

/* kind: 'k' a kernel, 'd' a copy to the host, 'h' a copy to the device, 'u'
 * unified memory's bytes to the host; it ran from the clock's last reading +
 * offset for duration ns (offset may be negative: a clock a little off). */
void fake_cupti_record(char kind, unsigned long long bytes, long long offset, uint64_t duration)
{
    slot s;
    memset(&s, 0, sizeof s);
    uint64_t start = (uint64_t)((long long)fake.clock + offset);
    if (kind == 'k') {
        if (!fake.on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
            return;
        s.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        s.kernel.start = start;
        s.kernel.end = start + duration;
    } else if (kind == 'd' || kind == 'h') {
        if (!fake.on[CUPTI_ACTIVITY_KIND_MEMCPY])
            return;
        s.copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        s.copy.copyKind = kind == 'd' ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH : CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        s.copy.bytes = bytes;
        s.copy.start = start;
        s.copy.end = start + duration;
    } else {
        if (!fake.on[CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER])
            return;
        s.um.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
        s.um.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH;
        s.um.value = bytes;
        s.um.start = start;
        s.um.end = start + duration;
    }
    fake.pending[fake.count++] = s;
    if (fake.count >= DELIVER_AT)
        deliver();
}

/* How many times a kind was switched on. */
int fake_cupti_enables(void)
{
    return fake.enables;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete)
{
    fake.request = request;
    fake.complete = complete;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    fake.on[kind] = 1;
    fake.enables++;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    fake.on[kind] = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    deliver();
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    fake.clock += 100;
    *timestamp = fake.clock;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    uint8_t *next = *record ? (uint8_t *)*record + sizeof(slot) : buffer;
    if (next + sizeof(slot) > buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityConfigureUnifiedMemoryCounter(CUpti_ActivityUnifiedMemoryCounterConfig *config,
                                                       uint32_t count)
{
    (void)config;
    (void)count;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped)
{
    (void)context;
    (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                           void *data)
{
    (void)callback;
    (void)data;
    *subscriber = NULL;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                CUpti_CallbackDomain domain, CUpti_CallbackId id)
{
    (void)enable;
    (void)subscriber;
    (void)domain;
    (void)id;
    return CUPTI_SUCCESS;
}
