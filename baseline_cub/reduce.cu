// CUB DeviceReduce::Sum: NVIDIA's library reduction, the bar for step 8.
//
// Not a step: the same harness times cub::DeviceReduce::Sum (CUB ships with
// the CUDA toolkit) so every step is compared with it on the same GPU, in
// the same run. CUB does the whole reduction in one call, so reduce_pass()
// returns 1. Its temporary storage is allocated during the size query, which
// the harness makes before any timing, and freed at exit.
#include <cub/device/device_reduce.cuh>

#include "check.h"
#include "reduce.h"

static void *d_temp = NULL;
static size_t temp_bytes = 0;

static void free_temp(void)
{
    cudaFree(d_temp);   // at exit: nothing left to report an error to
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n)
{
    if (d_out == NULL) {
        size_t bytes = 0;
        CHECK_CUDA(cub::DeviceReduce::Sum(NULL, bytes, d_in, (float *)NULL, (int)n));
        if (d_temp == NULL)
            atexit(free_temp);
        if (bytes > temp_bytes) {
            CHECK_CUDA(cudaFree(d_temp));
            CHECK_CUDA(cudaMalloc(&d_temp, bytes));
            temp_bytes = bytes;
        }
        return 1;
    }
    CHECK_CUDA(cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, (int)n));
    CHECK_LAUNCH();
    return 1;
}
