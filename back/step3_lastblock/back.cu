// LayerNorm backward in one launch: the last block to finish sums the partial rows.
//
// Change: step 2's second kernel goes, as part 1's step 9 did with its
//         partial sums. A block that has written its partial rows makes
//         them visible to the whole GPU (a fence) and draws a ticket from a
//         counter in the workspace's zeroed part; the block that draws the
//         last ticket knows every other block's rows are written, sums them
//         down every column itself (step 2's sum_partials, a tile of 32
//         columns at a time), and puts the counter back to 0 for the next
//         call.
// Why the order is still fixed: which block is last changes from run to
//         run, but it adds the partial rows in step 2's pattern, by block
//         index, never by finishing order: dgamma and dbeta keep their bits.
// Why it helps: step 2's second launch starts only when the first has
//         drained, on an idle GPU, and costs a launch of its own; here the
//         sums start the moment the last block is done. The price: one SM
//         now reads all 2 * blocks * cols partials (4 MB at 528 blocks and
//         1024 columns), where step 2 spread them over cols / 32 blocks, so
//         wide rows may well lose more than the launch saves: to measure.
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

// 32 columns of partial rows summed into dgamma and dbeta (below).
__device__ void sum_partials(const float *g_partials, unsigned int blocks, unsigned int cols,
                             unsigned int tile, float *g_dgamma, float *g_dbeta);

__global__ void ln_backward_kernel(const float *g_x, const float *g_dy, const float *g_gamma,
                                   const float *g_mean, const float *g_rstd, float *g_dx,
                                   float *g_partials, float *g_dgamma, float *g_dbeta,
                                   unsigned int *g_ticket, unsigned int rows, unsigned int cols)
{
    // What loop 1 leaves for loop 2: each row of the chunk's mean, rstd, m1, m2.
    __shared__ float s_mean[ROWS_PER_CHUNK], s_rstd[ROWS_PER_CHUNK];
    __shared__ float s_m1[ROWS_PER_CHUNK], s_m2[ROWS_PER_CHUNK];
    __shared__ bool s_last;   // this block drew the last ticket
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

    // Release: every thread fences after writing its partial columns, and
    // the barrier puts all of those fences before thread 0 draws the
    // ticket, so a block that counts this ticket can see those columns.
    // Acquire: the last block's thread 0 fences after its draw (as step 9
    // does), and the barrier hands what it can see to the whole block.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int ticket = atomicAdd(g_ticket, 1);
        s_last = (ticket == gridDim.x - 1);
        if (s_last)
            __threadfence();
    }
    __syncthreads();
    if (!s_last)
        return;

    // The last block: every partial row summed down every column, by block
    // index (the same order as step 2's second kernel, whoever is last).
    for (unsigned int tile = 0; tile * WARP_SIZE < cols; tile++)
        sum_partials(g_partials, gridDim.x, cols, tile, g_dgamma, g_dbeta);
    if (threadIdx.x == 0)
        *g_ticket = 0;   // ready for the next call: no other block touches it now
}

// 32 columns from tile * 32 on: the blocks' partial rows summed down each
// column, in a fixed pattern. Lane l takes column l of the tile, so a
// warp's loads are one 128-byte line of a partial row; warp w adds partial
// rows w, w + 8, w + 16, ... in that order, then warp 0 adds the 8 warps'
// sums in warp order. The barrier at the end lets the last block call it
// again for the next tile.
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

// The workspace: the ticket counter in its zeroed part (the last block
// leaves it at 0), and one partial row of dgamma and one of dbeta per block
// in its scratch part (written before it is read in every call).
struct workspace_size back_workspace(const struct back_problem *p)
{
    struct workspace_size size = {sizeof(unsigned int),
                                  2 * (size_t)grid_blocks(p->rows) * p->cols * sizeof(float)};
    return size;
}

void back_run(const struct back_problem *p)
{
    // Every block writes its whole partial rows and the last block every
    // column of dgamma and dbeta: nothing to zero first.
    unsigned int blocks = grid_blocks(p->rows);
    float *partials = (float *)p->work.scratch;
    ln_backward_kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->gamma, p->mean, p->rstd, p->dx,
                                               partials, p->dgamma, p->dbeta,
                                               (unsigned int *)p->work.zeroed,
                                               (unsigned int)p->rows, (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_LAYERNORM;
