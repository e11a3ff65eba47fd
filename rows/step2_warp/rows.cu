// One warp per row: several rows per block, and no shared memory at all.
//
// Change: a block of 256 threads now holds 8 rows, one warp each; a warp's
//         lanes read its row in a warp-stride loop and add their 32 sums
//         with shuffles alone.
// Why it helps: a row of 1024 floats is 32 per lane: every lane is busy,
//         the tree is 5 shuffles long and needs no barrier and no shared
//         memory, and 8 rows share one block's launch cost.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block; a multiple of 32 (whole warps)
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

    float sum = 0.0f;
    for (unsigned int c = lane; c < cols; c += WARP_SIZE)
        sum += x[c];
    sum = warp_reduce(sum);
    if (lane == 0)
        g_y[row] = sum;
}

void row_forward(const struct row_problem *p)
{
    unsigned int blocks = (unsigned int)((p->rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    row_sum_kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)p->rows,
                                           (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_SUM;
