// Kahan-compensated accumulator: step 8 whose serial adds keep their lost low bits.
//
// Change: each thread's running sum gets a second register, c, that holds
//         the low-order bits its last add rounded away (Kahan's compensated
//         summation); every element of the grid-stride loop is added through
//         kahan_add(), and c is folded in once, before the tree.
// Why it helps: accuracy, not speed. A thread's n / threads serial adds form
//         a chain whose rounding error can grow with its length; compensation
//         bounds it by a small multiple of 2^-24, whatever the length. The
//         tree after it is step 8's. The kernel is memory-bound, so the three
//         extra adds per float4 hide under the loads (ACCURACY.md).
// Not a step: a variant of step 8 for ACCURACY.md, built by make, not timed by make bench.
#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256   // threads per block; a power of two, as the tree needs
#define UNROLL 4         // independent loads in flight per thread
#define MIN_PER_THREAD 8 // small inputs get fewer blocks: ~1000 partial sums fit one
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
static_assert(BLOCK_SIZE <= WARP_SIZE * WARP_SIZE, "one warp reduces the warp sums");

// sum += x, keeping in c what the add got wrong. (t - sum) is what the add
// really added; minus y, what it should have added, that is its rounding
// error (exactly, while |sum| >= |y|), which the next call takes back out of
// its x. In exact arithmetic c is always 0: a compiler that reassociated
// float adds could delete it (gcc -ffast-math does). nvcc does not, with or
// without --use_fast_math; ACCURACY.md shows the machine code.
__device__ void kahan_add(float &sum, float &c, float x)
{
    float y = x - c;
    float t = sum + y;
    c = (t - sum) - y;
    sum = t;
}

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
    // A float4 load needs a 16-byte aligned address: skip the head first.
    unsigned int head = (unsigned int)((16 - ((size_t)g_in & 15)) & 15) / sizeof(float);
    head = min(head, n);
    unsigned int n4 = (n - head) / 4;          // whole float4s after the head
    unsigned int tail = head + 4 * n4;         // first float after them
    float sum = 0.0f, c = 0.0f;   // c: the error of the last add into sum
    if (i < head)
        kahan_add(sum, c, g_in[i]);
    if (i < n - tail)
        kahan_add(sum, c, g_in[tail + i]);
    const float4 *g_in4 = (const float4 *)(g_in + head);

    // UNROLL loads per trip, all issued before the first add needs one.
    for (; i < n4; i += UNROLL * stride) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * stride < n4) {
                float4 v = g_in4[i + k * stride];
                kahan_add(sum, c, (v.x + v.y) + (v.z + v.w));
            }
    }
    sum -= c;   // take out the last add's error; from here on, step 8's tree
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
