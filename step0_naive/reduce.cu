// Interleaved addressing with %: the textbook first tree, correct and slow.
//
// Change: none; this is the starting point. One thread loads one element into
//         shared memory; at level s, thread tid adds s_data[tid + s] when
//         tid % (2s) == 0, until s_data[0] holds the block's sum.
// Why it is slow: the working threads are spread over every warp, so at each
//         level all warps issue the add for only a few active lanes (warp
//         divergence), and % is a multi-instruction integer division.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a power of two, as the tree needs

__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    __shared__ float s_data[BLOCK_SIZE];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

    // Threads past the end add 0, the identity of +, so any n works.
    s_data[tid] = (i < n) ? g_in[i] : 0.0f;
    __syncthreads();

    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            s_data[tid] += s_data[tid + s];
        __syncthreads();
    }

    if (tid == 0)
        g_out[blockIdx.x] = s_data[0];
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    size_t blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;   // one element per thread
    if (d_out != NULL) {
        reduce_kernel<<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n);
        CHECK_LAUNCH();
    }
    return blocks;
}
