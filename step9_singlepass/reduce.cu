// Single pass: the last block to finish adds the partial sums, in the same launch.
//
// Change: each block writes its partial sum to the caller's workspace and
//         takes a ticket from a counter in global memory; the block that
//         draws the last ticket reads every partial, adds them in block order
//         and writes the one float. A small input runs as one block and
//         needs no ticket.
// Why it helps: step 8 launches a second kernel for its ~1000 partial sums,
//         and the GPU idles between the two launches. Each ticket releases
//         its block's partial; the last block acquires them all, once.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include <cuda/atomic>

#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a multiple of 32 (whole warps)
#define UNROLL 4         // independent loads in flight per thread
#define MIN_PER_THREAD 16 // small inputs get fewer blocks: up to 4096 floats, one block
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
static_assert(BLOCK_SIZE <= WARP_SIZE * WARP_SIZE, "one warp reduces the warp sums");

// The ticket counter, shared by every block of a launch: device scope.
typedef cuda::atomic_ref<unsigned int, cuda::thread_scope_device> ticket_ref;

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
// own, then the first warp reduces the warp sums. The last block calls it
// twice; the barrier before s_last is read keeps the two calls apart.
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
__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n,
                              float *g_partials, unsigned int *g_ticket)
{
    __shared__ float s_data[BLOCK / WARP_SIZE];   // one sum per warp
    __shared__ bool s_last;                       // this block drew the last ticket
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    unsigned int stride = gridDim.x * BLOCK;

    // Threads past the end add 0, the identity of +, so any n works.
    // A float4 load needs a 16-byte aligned address: skip the head first.
    unsigned int head = (unsigned int)((16 - ((size_t)g_in & 15)) & 15) / sizeof(float);
    head = min(head, n);
    unsigned int n4 = (n - head) / 4;          // whole float4s after the head
    unsigned int tail = head + 4 * n4;         // first float after them
    float sum = 0.0f;
    if (i < head)
        sum += g_in[i];
    if (i < n - tail)
        sum += g_in[tail + i];
    const float4 *g_in4 = (const float4 *)(g_in + head);

    // UNROLL loads per trip, all issued before the first add needs one.
    for (; i < n4; i += UNROLL * stride) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * stride < n4) {
                float4 v = g_in4[i + k * stride];
                sum += (v.x + v.y) + (v.z + v.w);
            }
    }
    sum = block_reduce<BLOCK>(sum, s_data);

    if (gridDim.x == 1) {   // the whole input in one block: no one to wait for
        if (tid == 0)
            g_out[0] = sum;
        return;
    }

    // Release: the ticket publishes this block's partial, written just
    // before it. Acquire: only the last block reads partials, so only its
    // thread 0 needs to see every release, and it asks once; the barrier
    // then carries that to the whole block.
    if (tid == 0) {
        g_partials[blockIdx.x] = sum;
        unsigned int ticket = ticket_ref(*g_ticket).fetch_add(1, cuda::memory_order_release);
        s_last = (ticket == gridDim.x - 1);
        if (s_last)
            cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
    }
    __syncthreads();
    if (!s_last)
        return;

    // Add the partials in block order, which is the same every run: the
    // sum is bit-identical run to run.
    sum = 0.0f;
    for (unsigned int b = tid; b < gridDim.x; b += BLOCK)
        sum += g_partials[b];
    sum = block_reduce<BLOCK>(sum, s_data);
    if (tid == 0) {
        g_out[0] = sum;
        ticket_ref(*g_ticket).store(0, cuda::memory_order_relaxed);   // ready for the next launch
    }
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

// The caller's workspace, as CUB's temporary storage is: the ticket counter
// (zeroed: the last block leaves it at 0 for the next launch) and one
// partial sum per block.
struct workspace_size reduce_workspace(size_t n)
{
    struct workspace_size size = {sizeof(unsigned int), grid_blocks(n) * sizeof(float)};
    return size;
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace work)
{
    size_t blocks = grid_blocks(n);
    if (d_out != NULL) {
        reduce_kernel<BLOCK_SIZE><<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n,
                                                          (float *)work.scratch,
                                                          (unsigned int *)work.zeroed);
        CHECK_LAUNCH();
    }
    return 1;   // one pass: the kernel leaves the one float in d_out[0]
}
