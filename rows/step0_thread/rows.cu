// One thread per row: thread r adds row r's floats from left to right.
//
// Change: part 1 summed one long array; here every row of a rows x cols
//         matrix gets its own sum, and the simplest mapping gives each row
//         to one thread, which loops over its columns.
// Why it is slow: the 32 threads of a warp read 32 different rows at once,
//         cols floats apart: each load instruction touches 32 sectors of 32
//         bytes to use 4 bytes of each, where a coalesced one touches 4.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block: rows per block here

__global__ void row_sum_kernel(const float *g_x, float *g_y, unsigned int rows,
                               unsigned int cols)
{
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    const float *x = g_x + (size_t)row * cols;

    float sum = 0.0f;
    for (unsigned int c = 0; c < cols; c++)
        sum += x[c];
    g_y[row] = sum;
}

void row_forward(const struct row_problem *p)
{
    unsigned int blocks = (unsigned int)((p->rows + BLOCK_SIZE - 1) / BLOCK_SIZE);
    row_sum_kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)p->rows,
                                           (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_SUM;
