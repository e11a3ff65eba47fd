// One block per row: part 1's block reduction, once per row.
//
// Change: row r goes to block r; its threads read the row in a block-stride
//         loop (thread t: columns t, t + BLOCK, ...), then add their sums
//         with part 1's tree: shuffles in each warp, then one warp over the
//         warp sums.
// Why it helps: consecutive threads read consecutive floats, so a warp's
//         load is 128 contiguous bytes, 4 sectors instead of 32. Short rows
//         leave most of the block idle: a row of 31 floats keeps 31 of 256
//         threads busy.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per row; a multiple of 32 (whole warps)
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
static_assert(BLOCK_SIZE <= WARP_SIZE * WARP_SIZE, "one warp reduces the warp sums");

// One warp, 32 sums -> 1, in lane 0 (part 1, step 7).
__device__ float warp_reduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// The block's threads, BLOCK sums -> 1, in thread 0 (part 1, step 7).
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
__global__ void row_sum_kernel(const float *g_x, float *g_y, unsigned int cols)
{
    __shared__ float s_data[BLOCK / WARP_SIZE];   // one sum per warp
    unsigned int row = blockIdx.x;
    const float *x = g_x + (size_t)row * cols;

    float sum = 0.0f;
    for (unsigned int c = threadIdx.x; c < cols; c += BLOCK)
        sum += x[c];
    sum = block_reduce<BLOCK>(sum, s_data);
    if (threadIdx.x == 0)
        g_y[row] = sum;
}

void row_forward(const struct row_problem *p)
{
    unsigned int blocks = (unsigned int)p->rows;   // one block per row
    row_sum_kernel<BLOCK_SIZE><<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_SUM;
