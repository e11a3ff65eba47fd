// LayerNorm backward, one thread per row; dgamma and dbeta by atomicAdd.
//
// Change: part 2 ran LayerNorm forward; this is its backward pass. Each row
//         r gets one thread, which loops over the row twice: first for the
//         two row sums, sum(g) and sum(g * xhat) with g = dy * gamma and
//         xhat = (x - mean) * rstd, then for dx = rstd * (g - mean(g) -
//         xhat * mean(g * xhat)). On the second loop it also adds its row's
//         dy * xhat and dy into dgamma and dbeta, one atomicAdd per element:
//         every column's sum over the rows comes from every thread.
// Why it is slow: as part 2's step 0, the 32 threads of a warp read 32
//         different rows at once, cols floats apart: every load touches 32
//         sectors to use 4 bytes of each, and x and dy are read twice. The
//         atomics are worse: at each column all 32 lanes of a warp add to
//         the same two addresses, one after the other, and so does every
//         other warp.
// Why it is not deterministic: float adds do not associate, and the atomics
//         add the rows' terms in whatever order the warps arrive, which
//         changes from run to run: dgamma and dbeta change in their low
//         bits. Within their bounds, but the determinism check fails it
//         (the lesson of this step; step 2 sums the columns in a fixed
//         order instead).
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: rows per block here

__global__ void ln_backward_kernel(const float *g_x, const float *g_dy, const float *g_gamma,
                                   const float *g_mean, const float *g_rstd, float *g_dx,
                                   float *g_dgamma, float *g_dbeta, unsigned int rows,
                                   unsigned int cols)
{
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    const float *x = g_x + (size_t)row * cols;
    const float *dy = g_dy + (size_t)row * cols;
    float *dx = g_dx + (size_t)row * cols;
    float mean = g_mean[row], rstd = g_rstd[row];

    // Loop 1: the two row sums dx needs before any of it can be written.
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (unsigned int c = 0; c < cols; c++) {
        float xhat = (x[c] - mean) * rstd;
        float g = dy[c] * g_gamma[c];
        sum_g += g;
        sum_gx += g * xhat;
    }
    float m1 = sum_g / (float)cols, m2 = sum_gx / (float)cols;

    // Loop 2: dx, and this row's share of every column's dgamma and dbeta.
    for (unsigned int c = 0; c < cols; c++) {
        float xhat = (x[c] - mean) * rstd;
        float d = dy[c];
        dx[c] = rstd * (d * g_gamma[c] - m1 - xhat * m2);
        atomicAdd(&g_dgamma[c], d * xhat);   // every row adds here: in no fixed order
        atomicAdd(&g_dbeta[c], d);
    }
}

void back_run(const struct back_problem *p)
{
    // The atomics add into dgamma and dbeta: they start at 0 in every call
    // (the harness leaves NaN there, so a call that forgets fails).
    CHECK_CUDA(cudaMemsetAsync(p->dgamma, 0, p->cols * sizeof(float)));
    CHECK_CUDA(cudaMemsetAsync(p->dbeta, 0, p->cols * sizeof(float)));
    unsigned int blocks = (unsigned int)((p->rows + BLOCK_SIZE - 1) / BLOCK_SIZE);
    ln_backward_kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->gamma, p->mean, p->rstd, p->dx,
                                               p->dgamma, p->dbeta, (unsigned int)p->rows,
                                               (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_LAYERNORM;
// The atomics' order changes from run to run, and so may dgamma's and dbeta's
// low bits: the grader expects this step's determinism check to fail.
const int step_deterministic = 0;
