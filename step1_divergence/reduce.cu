// Strided index: the working threads are packed into the first warps.
//
// Change: at level s, thread tid works on index 2*s*tid instead of testing
//         tid % (2s), so the active threads are tid = 0, 1, 2, ...
// Why it helps: the % (an integer division, a dozen instructions) is gone,
//         and the working threads fill whole warps, so an idle warp could
//         skip the level (nvcc 13 predicates it instead: see README.md).
//         New problem: the stride 2*s between neighbours' addresses maps
//         several threads of a warp to the same shared-memory bank.
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
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x)
            s_data[index] += s_data[index + s];
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
