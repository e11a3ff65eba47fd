// Deliberately wrong (test fixture): ignores the last element of every pass.
// The GPU suite expects exit 1 from it: proof that verification can fail.
// caught by: exact
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256

__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    __shared__ float s_data[BLOCK_SIZE];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s_data[tid] = (i + 1 < n) ? g_in[i] : 0.0f;   // the bug: i + 1 < n drops x[n-1]
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            s_data[tid] += s_data[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        g_out[blockIdx.x] = s_data[0];
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
