// Many elements per thread: a grid-stride loop sums in a register first.
//
// Change: the grid is sized to what the GPU holds at once (SMs x resident
//         blocks per SM); each thread walks the input with a stride of the
//         whole grid, UNROLL loads at a time, then the block reduces as before.
// Why it helps: mostly UNROLL: independent loads in flight per thread keep
//         enough bytes on the way to cover DRAM latency (Little's law). And
//         Brent's theorem: the tree costs O(log p) for p threads, so do O(n/p)
//         serial adds per thread and pay for the tree, the barriers and a
//         block's start once per thread. The partial sums shrink to ~1000.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a power of two, as the tree needs
#define UNROLL 4         // independent loads in flight per thread
#define MIN_PER_THREAD 8 // small inputs get fewer blocks: ~1000 partial sums fit one
static_assert(BLOCK_SIZE >= 64, "warp_reduce reads s_data[tid + 32]");

// -DRACY_WARP removes the warp barriers: the racecheck demo, step4_warp/README.md.
#ifdef RACY_WARP
#define WARP_SYNC()
#else
#define WARP_SYNC() __syncwarp()
#endif

// One warp, 64 sums -> 1. volatile: every read goes to shared memory, not a
// stale register. WARP_SYNC: all lanes have read before any lane overwrites.
// The running sum is a float; an int here would silently truncate it.
__device__ void warp_reduce(volatile float *s_data, unsigned int tid)
{
    float v = s_data[tid];
    v += s_data[tid + 32]; WARP_SYNC(); s_data[tid] = v; WARP_SYNC();
    v += s_data[tid + 16]; WARP_SYNC(); s_data[tid] = v; WARP_SYNC();
    v += s_data[tid + 8];  WARP_SYNC(); s_data[tid] = v; WARP_SYNC();
    v += s_data[tid + 4];  WARP_SYNC(); s_data[tid] = v; WARP_SYNC();
    v += s_data[tid + 2];  WARP_SYNC(); s_data[tid] = v; WARP_SYNC();
    v += s_data[tid + 1];  WARP_SYNC(); s_data[tid] = v;
}

template <unsigned int BLOCK>
__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    __shared__ float s_data[BLOCK];
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
    s_data[tid] = sum;
    __syncthreads();

#pragma unroll
    for (unsigned int s = BLOCK / 2; s > 32; s >>= 1) {
        if (tid < s)
            s_data[tid] += s_data[tid + s];
        __syncthreads();
    }
    if (tid < 32)
        warp_reduce(s_data, tid);

    if (tid == 0)
        g_out[blockIdx.x] = s_data[0];
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
