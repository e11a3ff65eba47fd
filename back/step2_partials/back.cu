// LayerNorm backward, dgamma and dbeta in a fixed order: partial rows, then a second kernel.
//
// Change: no atomics. Each block takes a fixed slice of rows and works
//         through it 8 rows (a chunk) at a time: loop 1, a warp per row as
//         in step 1, leaves each row's m1 and m2 in shared memory; loop 2
//         then goes by column, a thread per column, down the chunk's rows
//         in order: it writes dx and adds dy * xhat and dy into that
//         column's running sums, which wait in the block's own partial row
//         of the workspace between chunks. A second kernel then sums the
//         blocks' partial rows down each column into dgamma and dbeta.
// Why the order is fixed: which rows a block takes depends only on rows
//         and the grid (the grid on the GPU's SM count, the same every run
//         on one GPU); within a block each column adds its rows in row
//         order; the second kernel adds the partial rows in a fixed pattern
//         (warp w takes rows w, w + 8, ..., then the 8 warps' sums in warp
//         order). No sum depends on which block finishes first, so dgamma
//         and dbeta come out with the same bits every run (a GPU with
//         another SM count may round differently, within the bounds).
// Why it helps: besides the same bits every run, rows * cols atomics on
//         cols addresses become plain stores: one partial row of each per
//         block (a few hundred blocks on an H200), read once more by a
//         kernel whose warps read 32 neighbouring columns at a time.
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: 8 warps, 8 rows of a chunk
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define ROWS_PER_CHUNK (BLOCK_SIZE / WARP_SIZE)
#define WARPS (BLOCK_SIZE / WARP_SIZE)

// One warp, 32 sums -> 1, in every lane: each step adds the lane whose
// index differs in one bit, so after 5 steps all 32 hold the same total
// (the two loops need m1 and m2 in every lane, not only in lane 0).
__device__ float warp_allreduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

__global__ void ln_backward_kernel(const float *g_x, const float *g_dy, const float *g_gamma,
                                   const float *g_mean, const float *g_rstd, float *g_dx,
                                   float *g_partials, unsigned int rows, unsigned int cols)
{
    // What loop 1 leaves for loop 2: each row of the chunk's mean, rstd, m1, m2.
    __shared__ float s_mean[ROWS_PER_CHUNK], s_rstd[ROWS_PER_CHUNK];
    __shared__ float s_m1[ROWS_PER_CHUNK], s_m2[ROWS_PER_CHUNK];
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int warp = threadIdx.x / WARP_SIZE;
    // This block's slice, rows [first, last): the same rows every run. The
    // grid has at most one block per row, so no slice is empty.
    unsigned int first = (unsigned int)((size_t)blockIdx.x * rows / gridDim.x);
    unsigned int last = (unsigned int)((size_t)(blockIdx.x + 1) * rows / gridDim.x);
    // This block's partial rows: dgamma's, then (gridDim.x rows on) dbeta's.
    float *part_dgamma = g_partials + (size_t)blockIdx.x * cols;
    float *part_dbeta = g_partials + ((size_t)gridDim.x + blockIdx.x) * cols;

    for (unsigned int chunk = first; chunk < last; chunk += ROWS_PER_CHUNK) {
        unsigned int chunk_rows = min(ROWS_PER_CHUNK, last - chunk);
        unsigned int row = chunk + warp;
        // Loop 1: the two row sums dx needs before any of it can be written.
        // A warp past the slice's end skips it whole (no barrier inside).
        if (warp < chunk_rows) {
            const float *x = g_x + (size_t)row * cols;
            const float *dy = g_dy + (size_t)row * cols;
            float mean = g_mean[row], rstd = g_rstd[row];
            float sum_g = 0.0f, sum_gx = 0.0f;
            for (unsigned int c = lane; c < cols; c += WARP_SIZE) {
                float xhat = (x[c] - mean) * rstd;
                float g = dy[c] * g_gamma[c];
                sum_g += g;
                sum_gx += g * xhat;
            }
            sum_g = warp_allreduce(sum_g);
            sum_gx = warp_allreduce(sum_gx);
            if (lane == 0) {
                s_mean[warp] = mean;
                s_rstd[warp] = rstd;
                s_m1[warp] = sum_g / (float)cols;
                s_m2[warp] = sum_gx / (float)cols;
            }
        }
        __syncthreads();   // every row's m1 and m2 written before loop 2 reads them

        // Loop 2: dx, and each column's dgamma and dbeta over the chunk's
        // rows, in row order. A thread per column: a warp's 32 loads and
        // stores are neighbours, one 128-byte line, as in loop 1. The
        // running sums start at 0 on the slice's first chunk and wait in
        // the partial row between chunks (only this thread touches them).
        for (unsigned int c = threadIdx.x; c < cols; c += BLOCK_SIZE) {
            float gamma = g_gamma[c];
            float dgamma = chunk == first ? 0.0f : part_dgamma[c];
            float dbeta = chunk == first ? 0.0f : part_dbeta[c];
#pragma unroll   // up to 8 rows' loads in flight at once
            for (unsigned int k = 0; k < ROWS_PER_CHUNK; k++) {
                if (k < chunk_rows) {
                    size_t i = (size_t)(chunk + k) * cols + c;
                    float xhat = (g_x[i] - s_mean[k]) * s_rstd[k];
                    float d = g_dy[i];
                    g_dx[i] = s_rstd[k] * (d * gamma - s_m1[k] - xhat * s_m2[k]);
                    dgamma += d * xhat;   // rows in order: the same sum every run
                    dbeta += d;
                }
            }
            part_dgamma[c] = dgamma;
            part_dbeta[c] = dbeta;
        }
        __syncthreads();   // loop 2 done with s_m1 and s_m2 before the next chunk's loop 1
    }
}

// 32 columns from tile * 32 on: the blocks' partial rows summed down each
// column, in a fixed pattern. Lane l takes column l of the tile, so a
// warp's loads are one 128-byte line of a partial row; warp w adds partial
// rows w, w + 8, w + 16, ... in that order, then warp 0 adds the 8 warps'
// sums in warp order. The barrier at the end lets a caller call it again.
__device__ void sum_partials(const float *g_partials, unsigned int blocks, unsigned int cols,
                             unsigned int tile, float *g_dgamma, float *g_dbeta)
{
    __shared__ float s_dgamma[WARPS][WARP_SIZE], s_dbeta[WARPS][WARP_SIZE];
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int warp = threadIdx.x / WARP_SIZE;
    unsigned int c = tile * WARP_SIZE + lane;
    float dgamma = 0.0f, dbeta = 0.0f;
    if (c < cols) {
#pragma unroll 4   // several partial rows' loads in flight
        for (unsigned int b = warp; b < blocks; b += WARPS) {
            dgamma += g_partials[(size_t)b * cols + c];
            dbeta += g_partials[((size_t)blocks + b) * cols + c];
        }
    }
    s_dgamma[warp][lane] = dgamma;
    s_dbeta[warp][lane] = dbeta;
    __syncthreads();
    if (warp == 0 && c < cols) {
        dgamma = 0.0f, dbeta = 0.0f;
        for (unsigned int w = 0; w < WARPS; w++) {
            dgamma += s_dgamma[w][lane];
            dbeta += s_dbeta[w][lane];
        }
        g_dgamma[c] = dgamma;
        g_dbeta[c] = dbeta;
    }
    __syncthreads();
}

// The second kernel: a block per 32 columns.
__global__ void column_sums_kernel(const float *g_partials, unsigned int blocks,
                                   unsigned int cols, float *g_dgamma, float *g_dbeta)
{
    sum_partials(g_partials, blocks, cols, blockIdx.x, g_dgamma, g_dbeta);
}

// One wave: as many blocks as the GPU holds at once, each taking a fixed
// slice of rows, and never more than a block per 8 rows. On an H200 that is
// 132 SMs x 4 (ptxas -v: 56 registers a thread, so 4 blocks of 256 fit in
// an SM's 64K registers): 528 blocks, 32 warps an SM, each thread with 8
// rows' loads in flight in loop 2. More blocks would only add partial rows
// to write and sum; fewer would leave SMs idle.
static unsigned int grid_blocks(size_t rows)
{
    static size_t max_blocks = 0;
    if (max_blocks == 0) {
        int device, sms, per_sm;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ln_backward_kernel,
                                                                 BLOCK_SIZE, 0));
        max_blocks = (size_t)sms * (per_sm > 0 ? per_sm : 1);
    }
    size_t blocks = (rows + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK;
    return (unsigned int)(blocks < max_blocks ? blocks : max_blocks);
}

// The workspace: one partial row of dgamma and one of dbeta per block, in
// its scratch part (written before it is read in every call).
struct workspace_size back_workspace(const struct back_problem *p)
{
    struct workspace_size size = {0, 2 * (size_t)grid_blocks(p->rows) * p->cols * sizeof(float)};
    return size;
}

void back_run(const struct back_problem *p)
{
    // Every block writes its whole partial rows and the second kernel every
    // column of dgamma and dbeta: nothing to zero first.
    unsigned int blocks = grid_blocks(p->rows);
    float *partials = (float *)p->work.scratch;
    ln_backward_kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->gamma, p->mean, p->rstd, p->dx,
                                               partials, (unsigned int)p->rows,
                                               (unsigned int)p->cols);
    CHECK_LAUNCH();
    unsigned int tiles = (unsigned int)((p->cols + WARP_SIZE - 1) / WARP_SIZE);
    column_sums_kernel<<<tiles, BLOCK_SIZE>>>(partials, blocks, (unsigned int)p->cols, p->dgamma,
                                              p->dbeta);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_LAYERNORM;
