// First add during load: each thread adds two elements as it loads them.
//
// Change: a block covers 2 * blockDim.x elements; each thread loads two, adds
//         them in a register and stores one sum into shared memory.
// Why it helps: in step 2 half the threads idled from the tree's first level
//         on; now every thread does an add, and half as many blocks run,
//         each paying the tree's barriers once for twice the data.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a power of two, as the tree needs

__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    __shared__ float s_data[BLOCK_SIZE];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;

    // Threads past the end add 0, the identity of +, so any n works.
    float sum = (i < n) ? g_in[i] : 0.0f;
    if (i + blockDim.x < n)
        sum += g_in[i + blockDim.x];
    s_data[tid] = sum;
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
    size_t blocks = (n + 2 * BLOCK_SIZE - 1) / (2 * BLOCK_SIZE);   // two elements per thread
    if (d_out != NULL) {
        reduce_kernel<<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n);
        CHECK_LAUNCH();
    }
    return blocks;
}
