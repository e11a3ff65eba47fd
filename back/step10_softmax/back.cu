// Softmax backward, the plain way: one kernel for the row sums, one for dx.
// Started from step1_warp by make new: make diff STEP=back/10 shows the change against it.
//
// Change: a new op (common/back.h): from the forward pass's output y and the
//         gradient dy, dx = y * (dy - s) with s = sum(dy * y) over the row
//         (PyTorch's _softmax_backward_data). The first kernel gives each
//         row one warp, as step 1 did, and writes the row's s to the
//         workspace; the second gives each element one thread, which reads
//         y, dy and its row's s and writes dx. No column sums: nothing to
//         add in a fixed order across rows, so no atomics either.
// Why it is slow: y and dy come from DRAM twice, once for s and once for
//         dx: 20 bytes an element where the bar, part 3's copy, moves 12.
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: 8 warps, 8 rows
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define ROWS_PER_BLOCK (BLOCK_SIZE / WARP_SIZE)
#define MAX_GRID_Y 65535  // the most blocks a grid has along y

// One warp, 32 sums -> 1, in every lane: each step adds the lane whose
// index differs in one bit, so after 5 steps all 32 hold the same total.
__device__ float warp_allreduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

// Kernel 1: s = sum(dy * y) of each row, one warp a row, into g_dots.
__global__ void row_dots_kernel(const float *g_y, const float *g_dy, float *g_dots,
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

    float sum = 0.0f;
    for (unsigned int c = lane; c < cols; c += WARP_SIZE)
        sum += dy[c] * y[c];
    sum = warp_allreduce(sum);
    if (lane == 0)
        g_dots[row] = sum;
}

// Kernel 2: dx = y * (dy - s), one thread an element: blockIdx.x picks 256
// columns, blockIdx.y a row (then every gridDim.y-th row after it), so
// each thread finds its row without a division.
__global__ void softmax_dx_kernel(const float *g_y, const float *g_dy, const float *g_dots,
                                  float *g_dx, unsigned int rows, unsigned int cols)
{
    unsigned int c = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (c >= cols)
        return;
    for (unsigned int row = blockIdx.y; row < rows; row += gridDim.y) {
        size_t i = (size_t)row * cols + c;
        g_dx[i] = g_y[i] * (g_dy[i] - g_dots[row]);
    }
}

// One float per row: the row sums kernel 2 reads.
struct workspace_size back_workspace(const struct back_problem *p)
{
    struct workspace_size size = {0, p->rows * sizeof(float)};
    return size;
}

void back_run(const struct back_problem *p)
{
    float *dots = (float *)p->work.scratch;
    unsigned int blocks = (unsigned int)((p->rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    row_dots_kernel<<<blocks, BLOCK_SIZE>>>(p->y, p->dy, dots, (unsigned int)p->rows,
                                            (unsigned int)p->cols);
    CHECK_LAUNCH();
    dim3 grid((unsigned int)((p->cols + BLOCK_SIZE - 1) / BLOCK_SIZE),
              (unsigned int)(p->rows < MAX_GRID_Y ? p->rows : MAX_GRID_Y));
    softmax_dx_kernel<<<grid, BLOCK_SIZE>>>(p->y, p->dy, dots, p->dx, (unsigned int)p->rows,
                                            (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_SOFTMAX;
