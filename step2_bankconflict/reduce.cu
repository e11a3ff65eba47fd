// Sequential addressing: a warp reads 32 consecutive words, one per bank.
//
// Change: the tree runs from the top: at level s, threads tid < s add
//         s_data[tid + s], with s going blockDim.x/2, ..., 2, 1.
// Why it helps: shared memory has 32 banks of 4-byte words; consecutive
//         threads now touch consecutive words, so a warp's 32 loads land in
//         32 different banks and are served at once (step 1's stride put up
//         to 8 of them in one bank at 256 threads, replayed one after another).
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
    size_t blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;   // one element per thread
    if (d_out != NULL) {
        reduce_kernel<<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n);
        CHECK_LAUNCH();
    }
    return blocks;
}
