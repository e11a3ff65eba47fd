// Vector loads: each lane reads 16 bytes (a float4) per load, UNROLL at once.
//
// Change: where every row starts on a 16-byte boundary (x aligned, cols a
//         multiple of 4) the lanes load float4s, UNROLL of them before the
//         first add; any other shape runs the same kernel with PACK = 1,
//         plain floats, so every width and alignment still works.
// Why it helps: a quarter of the load instructions for the same bytes, and
//         UNROLL x 16 bytes in flight per lane instead of 4: more of the
//         memory latency is hidden (part 1, steps 6 and 8).
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block; a multiple of 32 (whole warps)
#define UNROLL 4         // independent loads in flight per lane
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define ROWS_PER_BLOCK (BLOCK_SIZE / WARP_SIZE)

// One warp, 32 sums -> 1, in lane 0 (part 1, step 7).
__device__ float warp_reduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
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

template <unsigned int PACK>
__global__ void row_sum_kernel(const float *g_x, float *g_y, unsigned int rows,
                               unsigned int cols)
{
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP_SIZE;
    // Whole warps leave together (row is the same in all 32 lanes), so
    // every shuffle below still has its 32 lanes.
    if (row >= rows)
        return;
    const float *x = g_x + (size_t)row * cols;
    unsigned int packs = cols / PACK;   // row_forward picks a PACK that divides cols

    float sum = 0.0f;
    for (unsigned int i = lane; i < packs; i += UNROLL * WARP_SIZE) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * WARP_SIZE < packs)
                sum += pack_sum<PACK>(x, i + k * WARP_SIZE);
    }
    sum = warp_reduce(sum);
    if (lane == 0)
        g_y[row] = sum;
}

// 16-byte loads need every row's first float on a 16-byte boundary.
static bool rows_aligned(const struct row_problem *p)
{
    return (size_t)p->x % 16 == 0 && p->cols % 4 == 0;
}

void row_forward(const struct row_problem *p)
{
    unsigned int blocks = (unsigned int)((p->rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    if (rows_aligned(p))
        row_sum_kernel<4><<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)p->rows,
                                                  (unsigned int)p->cols);
    else
        row_sum_kernel<1><<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)p->rows,
                                                  (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_SUM;
