// Deliberately wrong (test fixture): never writes its output.
// The poisoned (NaN) output must make the harness fail it with exit 1.
// caught by: nan
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256

__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && g_in[i] == 12345.0f)   // never true for the suite's inputs
        g_out[blockIdx.x] = 0.0f;
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    size_t blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    if (d_out != NULL) {
        reduce_kernel<<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n);
        CHECK_LAUNCH();
    }
    return blocks;
}
