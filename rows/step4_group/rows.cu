// Threads per row from the shape: few, wide rows get several warps each.
//
// Change: a row is read by a group of G threads, G = 32 to 1024, a template
//         parameter; row_forward picks G so that at least WARPS_PER_SM warps
//         per SM have a row to read, where the rows are wide enough (a
//         thread keeps at least one float4; G stops at 1024). Groups of one warp add with shuffles as
//         before; larger groups add their warps' sums through shared memory.
// Why it helps: 256 rows of 65536 floats are 256 warps with a warp per row,
//         under 2 per SM: too few loads in flight to cover the memory's
//         latency. With G = 1024 the same rows keep 8192 warps busy.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block when G <= 256 (then 256 / G rows per block)
#define UNROLL 4         // independent loads in flight per thread
#define WARPS_PER_SM 32  // enough rows' loads in flight (half the 64 warps an SM holds)
#define MAX_GROUP 1024   // the most threads a block can have
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle

// One warp, 32 sums -> 1, in lane 0 (part 1, step 7).
__device__ float warp_reduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// A group of G threads, G sums -> 1, in the group's first thread. Each warp
// reduces its own; with G > 32, lane 0 of each warp stores its sum and the
// group's first thread adds the group's G / 32 sums, in order.
template <unsigned int G>
__device__ float group_reduce(float sum, float *s_warp)
{
    sum = warp_reduce(sum);
    if constexpr (G > WARP_SIZE) {
        unsigned int warp = threadIdx.x / WARP_SIZE;
        if (threadIdx.x % WARP_SIZE == 0)
            s_warp[warp] = sum;
        __syncthreads();
        if (threadIdx.x % G == 0) {
            sum = 0.0f;
            for (unsigned int w = 0; w < G / WARP_SIZE; w++)
                sum += s_warp[warp + w];
        }
    }
    return sum;
}

// The sum of pack i of a row: PACK consecutive floats, one load instruction.
template <unsigned int PACK>
__device__ float pack_sum(const float *x, unsigned int i)
{
    if constexpr (PACK == 4) {
        float4 v = reinterpret_cast<const float4 *>(x)[i];
        return (v.x + v.y) + (v.z + v.w);
    } else {
        return x[i];
    }
}

template <unsigned int G, unsigned int PACK>
__global__ void row_sum_kernel(const float *g_x, float *g_y, unsigned int rows,
                               unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one sum per warp of the block
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / G;
    // A group past the last row reads nothing but stays: the barrier in
    // group_reduce needs every thread of the block.
    unsigned int packs = (row < rows) ? cols / PACK : 0;   // PACK divides cols
    const float *x = g_x + (size_t)row * cols;

    float sum = 0.0f;
    for (unsigned int i = t; i < packs; i += UNROLL * G) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs)
                sum += pack_sum<PACK>(x, i + k * G);
    }
    sum = group_reduce<G>(sum, s_warp);
    if (t == 0 && row < rows)
        g_y[row] = sum;
}

// 16-byte loads need every row's first float on a 16-byte boundary.
static bool rows_aligned(const struct row_problem *p)
{
    return (size_t)p->x % 16 == 0 && p->cols % 4 == 0;
}

// The smallest G that gives every SM WARPS_PER_SM warps, but no more
// threads than a row has float4s.
static unsigned int group_size(size_t rows, size_t cols)
{
    static int sms = 0;
    if (sms == 0) {
        int device;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    }
    unsigned int g = WARP_SIZE;
    while (g < MAX_GROUP && rows * (g / WARP_SIZE) < (size_t)sms * WARPS_PER_SM &&
           2 * g * 4 <= cols)
        g *= 2;
    return g;
}

template <unsigned int G>
static void launch(const struct row_problem *p)
{
    unsigned int threads = G < BLOCK_SIZE ? BLOCK_SIZE : G;
    unsigned int rows_per_block = threads / G;
    unsigned int blocks = (unsigned int)((p->rows + rows_per_block - 1) / rows_per_block);
    if (rows_aligned(p))
        row_sum_kernel<G, 4><<<blocks, threads>>>(p->x, p->y, (unsigned int)p->rows,
                                                  (unsigned int)p->cols);
    else
        row_sum_kernel<G, 1><<<blocks, threads>>>(p->x, p->y, (unsigned int)p->rows,
                                                  (unsigned int)p->cols);
    CHECK_LAUNCH();
}

void row_forward(const struct row_problem *p)
{
    switch (group_size(p->rows, p->cols)) {
    case 32: launch<32>(p); break;
    case 64: launch<64>(p); break;
    case 128: launch<128>(p); break;
    case 256: launch<256>(p); break;
    case 512: launch<512>(p); break;
    default: launch<1024>(p); break;
    }
}

const enum row_op step_op = ROW_SUM;
