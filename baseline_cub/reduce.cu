// CUB DeviceReduce::Sum: NVIDIA's library reduction, the bar for step 8.
//
// Not a step: the same harness times cub::DeviceReduce::Sum (CUB ships with
// the CUDA toolkit) so every step is compared with it on the same GPU, in
// the same run. CUB does the whole reduction in one call, so reduce_pass()
// returns 1. Its temporary storage is the caller's workspace, as CUB's
// interface asks: the harness allocates it before any timing, between NaN
// guards, and poisons it before every run.
#include <cub/device/device_reduce.cuh>

#include "check.h"
#include "reduce.h"

// CUB's size query: the bytes of temporary storage a sum over n floats
// needs. Asked once per n, before timing, and remembered.
static size_t temp_bytes(size_t n)
{
    static size_t last_n = 0, last_bytes = 0;
    if (n != last_n) {
        last_bytes = 0;
        CHECK_CUDA(cub::DeviceReduce::Sum(NULL, last_bytes, (const float *)NULL, (float *)NULL,
                                          (int)n));
        last_n = n;
    }
    return last_bytes;
}

struct workspace_size reduce_workspace(size_t n)
{
    struct workspace_size size = {0, temp_bytes(n)};
    return size;
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace work)
{
    if (d_out != NULL) {
        size_t bytes = temp_bytes(n);
        CHECK_CUDA(cub::DeviceReduce::Sum(work.scratch, bytes, d_in, d_out, (int)n));
        CHECK_LAUNCH();
    }
    return 1;
}
