// Unrolled last warp: the final six levels run without __syncthreads().
//
// Change: the loop stops at s = 64; the last 32 threads (one warp) finish the
//         tree in warp_reduce(), with __syncwarp() instead of block barriers.
// Why it helps: from s = 32 down only one warp works, yet every level still cost
//         a block-wide barrier and a loop test. One warp needs only to order
//         its own lanes. Since Volta a warp's lanes run independently, so the
//         old "warp-synchronous" trick without __syncwarp() is a data race.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a power of two, as the tree needs
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

    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s)
            s_data[tid] += s_data[tid + s];
        __syncthreads();
    }
    if (tid < 32)
        warp_reduce(s_data, tid);

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
