// Softmax backward in one kernel: the warp that sums a row writes its dx.
//
// Change: step 10's two kernels become one. Each row's warp sums s =
//         sum(dy * y) by shuffles, as before, and then, with s in every
//         lane, walks its row again and writes dx = y * (dy - s). No
//         workspace, no second launch.
// Why it helps: one launch, and no row sums written and read back. The
//         second walk reads what the warp has just read, and would find it
//         in L1 or L2 if the rows in flight fit there; at 1024 columns they
//         do not (eight blocks of eight warps an SM hold 512 KB of rows,
//         twice L1; all SMs' rows, 66 MiB, more than L2's 60 MiB), so y and dy
//         still come from DRAM twice. Step 12 keeps the row in registers.
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: 8 warps, 8 rows
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define ROWS_PER_BLOCK (BLOCK_SIZE / WARP_SIZE)

// One warp, 32 sums -> 1, in every lane: each step adds the lane whose
// index differs in one bit, so after 5 steps all 32 hold the same total.
__device__ float warp_allreduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

__global__ void softmax_backward_kernel(const float *g_y, const float *g_dy, float *g_dx,
                                        unsigned int rows, unsigned int cols)
{
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP_SIZE;
    // Whole warps leave together (row is the same in all 32 lanes), so
    // every shuffle below still has its 32 lanes.
    if (row >= rows)
        return;
    const float *y = g_y + (size_t)row * cols;
    const float *dy = g_dy + (size_t)row * cols;
    float *dx = g_dx + (size_t)row * cols;

    // Loop 1: s, which every dx needs before any of it can be written.
    float sum = 0.0f;
    for (unsigned int c = lane; c < cols; c += WARP_SIZE)
        sum += dy[c] * y[c];
    sum = warp_allreduce(sum);

    // Loop 2: dx, the row read again (from DRAM at 1024 columns: above).
    for (unsigned int c = lane; c < cols; c += WARP_SIZE)
        dx[c] = y[c] * (dy[c] - sum);
}

void back_run(const struct back_problem *p)
{
    unsigned int blocks = (unsigned int)((p->rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    softmax_backward_kernel<<<blocks, BLOCK_SIZE>>>(p->y, p->dy, p->dx, (unsigned int)p->rows,
                                                    (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_SOFTMAX;
