/* device.c: the GPU half of the harness that every main() shares: the
 * device, the program's name and build, NaN-guarded buffers, the L2 flush
 * and the event timer (device.h). */
#define _GNU_SOURCE   /* readlink */
#include "device.h"

#include "check.h"
#include "flush.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FLUSH_L2_MULTIPLE 4   /* read 4x the L2 size: nothing of the input survives */
#define POISON_BYTE 0xFF      /* 0xFFFFFFFF is a NaN: an unwritten result can never pass */

extern const int reduce_build_versions[4];   /* common/toolchain.cu */
extern const char reduce_arch_list[];

const char *build_toolchain(void)
{
    static char text[64];
    const int *v = reduce_build_versions;
    /* CUB_VERSION is major * 100000 + minor * 100 + patch: 300001 is 3.0.1. */
    snprintf(text, sizeof text, "nvcc %d.%d.%d CCCL %d.%d.%d", v[0], v[1], v[2],
             v[3] / 100000, v[3] / 100 % 1000, v[3] % 100);
    return text;
}

const char *build_arch(void)
{
    static char text[128];
    size_t pos = 0;
    char list[128];
    snprintf(list, sizeof list, "%s", reduce_arch_list);
    for (char *t = strtok(list, ","); t != NULL && pos + 16 < sizeof text; t = strtok(NULL, ",")) {
        int a = atoi(t);   /* 900 -> sm_90 */
        pos += (size_t)snprintf(text + pos, sizeof text - pos, "%ssm_%d", pos ? " " : "", a / 10);
    }
    return text;
}

void program_name(const char *argv0, char *out, size_t len)
{
    char path[4096];
    ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
    if (k > 0)
        path[k] = '\0';
    else
        snprintf(path, sizeof path, "%s", argv0);
    char file[4096], dirpath[4096], parent[4096];
    snprintf(file, sizeof file, "%s", basename(path));
    snprintf(dirpath, sizeof dirpath, "%s", dirname(path));
    snprintf(parent, sizeof parent, "%s", dirpath);
    const char *dir = basename(dirpath);
    const char *part = basename(dirname(parent));   /* "rows" for part 2's programs */
    if (strncmp(dir, "baseline_", 9) == 0)
        dir += 9;
    char prefix[16] = "";
    if (strcmp(part, "rows") == 0)
        snprintf(prefix, sizeof prefix, "rows/");
    /* A demo build beside a step names itself: run-atomic -> <dir>-atomic. */
    if (strncmp(file, "run-", 4) == 0)
        snprintf(out, len, "%s%.120s-%.120s", prefix, dir, file + 4);
    else
        snprintf(out, len, "%s%.120s", prefix, dir);
}

/* The NVIDIA driver's version ("580.159.04") is only known to NVML, which
 * ships with the driver: load it at run time so the build needs no NVML. */
static void driver_version(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (nvml == NULL)
        return;
    /* ISO C has no cast from dlsym's void * to a function pointer; POSIX
     * sanctions writing the symbol through a void ** instead. */
    int (*init)(void), (*shutdown)(void), (*version)(char *, unsigned);
    *(void **)&init = dlsym(nvml, "nvmlInit_v2");
    *(void **)&version = dlsym(nvml, "nvmlSystemGetDriverVersion");
    *(void **)&shutdown = dlsym(nvml, "nvmlShutdown");
    char buf[96];
    if (init && version && shutdown && init() == 0) {
        if (version(buf, sizeof buf) == 0)
            snprintf(out, len, "%s", buf);
        shutdown();
    }
    dlclose(nvml);
}

void open_device(int device, struct gpu_info *g)
{
    /* Without the driver's library the runtime reports "driver version is
     * insufficient", which sends people looking for an upgrade: say what
     * is really missing. */
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (libcuda == NULL) {
        fprintf(stderr, "error: no CUDA device: the NVIDIA driver is not installed "
                        "(libcuda.so.1 not found)\n");
        exit(EXIT_DEVICE);
    }
    dlclose(libcuda);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "error: no CUDA device: %s\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "the driver reports none");
        exit(EXIT_DEVICE);
    }
    if (device >= count) {
        fprintf(stderr, "error: --device %d: there are only %d CUDA device(s)\n", device, count);
        exit(EXIT_USAGE);
    }
    CHECK_CUDA(cudaSetDevice(device));

    struct cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, device));
    snprintf(g->name, sizeof g->name, "%s", p.name);
    snprintf(g->cc, sizeof g->cc, "%d.%d", p.major, p.minor);

    /* CUDA 13 dropped memoryClockRate from cudaDeviceProp; the attribute
     * works on 12.x and 13.x. kHz, double data rate, bus width in bits. */
    int clock_khz = 0, bus_bits = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&g->sm_threads, cudaDevAttrMaxThreadsPerMultiProcessor,
                                      device));
    CHECK_CUDA(cudaDeviceGetAttribute(&g->l2_bytes, cudaDevAttrL2CacheSize, device));
    g->peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    CHECK_CUDA(cudaMemGetInfo(&g->free_bytes, &g->total_bytes));

    int rt = 0;
    CHECK_CUDA(cudaRuntimeGetVersion(&rt));
    snprintf(g->cuda, sizeof g->cuda, "%d.%d", rt / 1000, (rt % 1000) / 10);
    driver_version(g->driver, sizeof g->driver);
}

void print_gpu_info(const struct gpu_info *g)
{
    printf("gpu=%s\ncc=%s\nsms=%d\nsm_threads=%d\nl2_bytes=%d\nfree_bytes=%zu\ntotal_bytes=%zu\n"
           "peak_gbps=%.1f\ndriver=%s\ncuda=%s\n", g->name, g->cc, g->sms, g->sm_threads,
           g->l2_bytes, g->free_bytes, g->total_bytes, g->peak_gbps, g->driver, g->cuda);
}

void print_version(const char *name)
{
    printf("%s code_hash=%s git_rev=%s arch=%s toolchain=%s\n", name, reduce_code_hash,
           reduce_git_rev, build_arch(), build_toolchain());
}

void print_gpu_line(const char *name, const struct gpu_info *g)
{
    printf("%s on %s (cc %s, %d SMs, %.0f MB L2, peak %.0f GB/s)\n", name, g->name, g->cc,
           g->sms, g->l2_bytes / 1e6, g->peak_gbps);
}

void row_set_build(struct result_row *row, const struct gpu_info *g)
{
    row->gpu = g->name;
    row->cc = g->cc;
    row->driver = g->driver;
    row->cuda = g->cuda;
    row->peak_gbps = g->peak_gbps;
    row->l2_mb = g->l2_bytes / 1e6;
    row->sms = g->sms;
    row->git_rev = reduce_git_rev;
    row->code_hash = reduce_code_hash;
    row->arch = build_arch();
    row->toolchain = build_toolchain();
}

void guarded_alloc(struct guarded *b, size_t lead, size_t count)
{
    size_t total = GUARD_FLOATS + lead + count + GUARD_FLOATS;
    CHECK_CUDA(cudaMalloc((void **)&b->base, total * sizeof(float)));
    b->lead = lead;
    b->count = count;
    b->data = b->base + GUARD_FLOATS + lead;
}

void guarded_poison(const struct guarded *b)
{
    size_t total = GUARD_FLOATS + b->lead + b->count + GUARD_FLOATS;
    CHECK_CUDA(cudaMemset(b->base, POISON_BYTE, total * sizeof(float)));
}

int guards_intact(const struct guarded *b)
{
    unsigned char front[(GUARD_FLOATS + REDUCE_MAX_OFFSET) * sizeof(float)];
    unsigned char back[GUARD_FLOATS * sizeof(float)];
    size_t front_bytes = (GUARD_FLOATS + b->lead) * sizeof(float);
    CHECK_CUDA(cudaMemcpy(front, b->base, front_bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(back, b->data + b->count, sizeof back, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < front_bytes; k++)
        if (front[k] != POISON_BYTE)
            return 0;
    for (size_t k = 0; k < sizeof back; k++)
        if (back[k] != POISON_BYTE)
            return 0;
    return 1;
}

void guarded_free(struct guarded *b)
{
    CHECK_CUDA(cudaFree(b->base));
    b->base = b->data = NULL;
}

void flusher_init(struct flusher *f, const struct gpu_info *g, int enabled)
{
    f->buf = NULL;
    f->sink = NULL;
    f->bytes = enabled ? (size_t)FLUSH_L2_MULTIPLE * g->l2_bytes : 0;
    if (!enabled)
        return;
    CHECK_CUDA(cudaMalloc(&f->buf, f->bytes));
    CHECK_CUDA(cudaMalloc((void **)&f->sink, sizeof(float)));
    CHECK_CUDA(cudaMemset(f->buf, 0, f->bytes));
}

void flusher_run(const struct flusher *f)
{
    if (f->buf != NULL)
        l2_flush(f->buf, f->bytes, f->sink);
}

void flusher_free(struct flusher *f)
{
    CHECK_CUDA(cudaFree(f->buf));
    CHECK_CUDA(cudaFree(f->sink));
    f->buf = NULL;
    f->sink = NULL;
}

void timer_init(struct timer *t)
{
    CHECK_CUDA(cudaEventCreate(&t->start));
    CHECK_CUDA(cudaEventCreate(&t->stop));
}

void timer_start(struct timer *t)
{
    CHECK_CUDA(cudaEventRecord(t->start, 0));
}

double timer_stop_us(struct timer *t)
{
    CHECK_CUDA(cudaEventRecord(t->stop, 0));
    CHECK_CUDA(cudaEventSynchronize(t->stop));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, t->start, t->stop));
    return ms * 1e3;
}

void timer_free(struct timer *t)
{
    CHECK_CUDA(cudaEventDestroy(t->start));
    CHECK_CUDA(cudaEventDestroy(t->stop));
}
