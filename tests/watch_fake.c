/* watch_fake.c: the grader's watch (common/gpu_work.c, part 1's build, its
 * reduce_pass() wrapped by the linker) on a machine without a GPU, for
 * tests/test_grade.py. CUPTI is tests/fake_cupti.c (the watch loads it as it
 * would libcupti.so); the CUDA runtime's three functions the watch calls are
 * stubs here. main() plays the harness: three checks, each a sizing call
 * (no kernel), then the copy of the input, the call, and the read of the
 * result, whose start the fake clock puts 5 ns before the call's end. What
 * the second check's call does is MODE (argv[1]):
 *   honest  two kernels (as every call)
 *   host    no kernel: the whole input copied to the host
 *   tiny    no kernel: 8 bytes to the host (under the floor: a sum of 2 floats)
 *   um      two kernels, and 64 bytes of unified memory to the host
 *   exit    a kernel and the whole input to the host, then exit(0) inside the call
 * It prints "enables=N" (how many times a kind of record was switched on)
 * before it exits; the watch's line goes where REDUCE_GPU_WORK says.
 * Built twice, as the harness and, with WATCH_FAKE_PASS, as the program's
 * reduce_pass(): ld --wrap reaches only calls from another object. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "reduce.h"

#define N 1000   /* floats: 4000 bytes of input */

/* The harness's, read by the pass. */
extern const char *mode;
extern int check;
void say_enables(void);
void did(char kind, unsigned long long bytes, long long offset, uint64_t duration);

#ifdef WATCH_FAKE_PASS
size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace work)
{
    (void)d_in;
    (void)work;
    if (!d_out)
        return 1;
    if (check == 1 && strcmp(mode, "host") == 0) {
        did('d', 4 * n, 10, 20);
        return 1;
    }
    if (check == 1 && strcmp(mode, "tiny") == 0) {
        did('d', 8, 10, 20);
        return 1;
    }
    if (check == 1 && strcmp(mode, "exit") == 0) {
        did('k', 0, 10, 10);
        did('d', 4 * n, 30, 20);
        say_enables();
        exit(0);
    }
    did('k', 0, 10, 20);
    did('k', 0, 40, 20);
    if (check == 1 && strcmp(mode, "um") == 0)
        did('u', 64, 70, 10);
    return 1;
}

#else
const char *mode = "honest";
int check;
static void (*record)(char, unsigned long long, long long, uint64_t);
static int (*enables)(void);

/* What "the driver" did, on the fake clock; nothing unwatched. */
void did(char kind, unsigned long long bytes, long long offset, uint64_t duration)
{
    if (record)
        record(kind, bytes, offset, duration);
}

void say_enables(void)
{
    printf("enables=%d\n", enables ? enables() : 0);
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    (void)attr;
    (void)device;
    *value = 0;
    return cudaSuccess;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        mode = argv[1];
    /* Loaded by the watch's constructor when it watches. */
    void *fake = dlopen(FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    if (fake) {
        *(void **)&record = dlsym(fake, "fake_cupti_record");
        *(void **)&enables = dlsym(fake, "fake_cupti_enables");
    }
    float in[1], out[1];
    struct workspace none = {NULL, NULL};
    for (check = 0; check < 3; check++) {
        reduce_pass(in, NULL, N, none);
        did('h', 4 * N, 10, 20);    /* the input to the device */
        did('k', 0, 40, 10);        /* the harness's own fill */
        reduce_pass(in, out, N, none);
        did('d', 4 * N, -5, 60);    /* the result (as large as the input in part 2) */
        did('k', 0, 70, 10);        /* the harness's own check */
    }
    say_enables();
    return 0;
}
#endif
