// Warp shuffles: the tree runs in registers; shared memory holds one sum per warp.
//
// Change: each warp adds its 32 sums with __shfl_down_sync (lane i reads a
//         register of lane i + offset); lane 0 of each warp stores the warp's
//         sum, and the first warp reduces those BLOCK / 32 sums the same way.
// Why it helps: a shuffle moves a register between lanes in one instruction,
//         with no shared-memory store, load and bank to share; one block-wide
//         barrier remains instead of three (one after the store, one per
//         level above the last warp).
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a multiple of 32 (whole warps)
#define UNROLL 4         // independent loads in flight per thread
#define MIN_PER_THREAD 8 // small inputs get fewer blocks: ~1000 partial sums fit one
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
static_assert(BLOCK_SIZE <= WARP_SIZE * WARP_SIZE, "one warp reduces the warp sums");

// One warp, 32 sums -> 1, in lane 0. The shuffle is also the warp's
// synchronization: no volatile, no __syncwarp() needed.
__device__ float warp_reduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// The block's threads, BLOCK sums -> 1, in thread 0: each warp reduces its
// own, then the first warp reduces the warp sums.
template <unsigned int BLOCK>
__device__ float block_reduce(float sum, float *s_data)
{
    unsigned int tid = threadIdx.x;
    sum = warp_reduce(sum);
    if (tid % WARP_SIZE == 0)
        s_data[tid / WARP_SIZE] = sum;
    __syncthreads();

    if (tid < WARP_SIZE) {
        sum = (tid < BLOCK / WARP_SIZE) ? s_data[tid] : 0.0f;
        sum = warp_reduce(sum);
    }
    return sum;
}

template <unsigned int BLOCK>
__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    __shared__ float s_data[BLOCK / WARP_SIZE];   // one sum per warp
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    unsigned int stride = gridDim.x * BLOCK;

    // Threads past the end add 0, the identity of +, so any n works.
    // UNROLL loads per trip, all issued before the first add needs one.
    float sum = 0.0f;
    for (; i < n; i += UNROLL * stride) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * stride < n)
                sum += g_in[i + k * stride];
    }
    sum = block_reduce<BLOCK>(sum, s_data);

    if (tid == 0)
        g_out[blockIdx.x] = sum;
}

// Enough blocks to fill every SM once, and no more: the loop does the rest.
static size_t grid_blocks(size_t n)
{
    static size_t max_blocks = 0;
    if (max_blocks == 0) {
        int device, sms, per_sm;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, reduce_kernel<BLOCK_SIZE>, BLOCK_SIZE, 0));
        max_blocks = (size_t)sms * per_sm;
    }
    size_t blocks = (n + BLOCK_SIZE * MIN_PER_THREAD - 1) / (BLOCK_SIZE * MIN_PER_THREAD);
    return blocks < max_blocks ? blocks : max_blocks;
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    size_t blocks = grid_blocks(n);
    if (d_out != NULL) {
        reduce_kernel<BLOCK_SIZE><<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n);
        CHECK_LAUNCH();
    }
    return blocks;
}
