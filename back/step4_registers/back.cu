// LayerNorm backward, x and dy read once: each thread keeps its share of the chunk in registers.
//
// Change: loop 1 takes step 3's loop 2 layout, a thread per column down the
//         chunk's 8 rows, and keeps what loop 2 needs of each element in
//         registers: xhat and dy, MAX_PER_THREAD columns a thread (so rows
//         of up to BLOCK_SIZE * MAX_PER_THREAD = 1024 columns). The row
//         sums m1 and m2, which a warp made alone in step 3, now take the
//         whole block: each warp adds its lanes (shuffles), and thread k
//         adds the 8 warps' sums of row k in warp order. Loop 2 writes dx
//         and carries the column sums as step 3 does, from registers.
//         Wider rows would need more registers than a thread has: they
//         take the same kernel built without them (IN_REGISTERS false),
//         which reads x and dy again in loop 2, step 3's two reads. That is
//         the simplest honest choice: part 2's group of threads per row
//         would change loop 2's thread-per-column layout, and with it the
//         column sums' order, which step 3 fixes.
// Why the order is still fixed: loop 2 adds each column's rows in row
//         order and the last block sums the partial rows as in step 3, so
//         dgamma and dbeta have step 3's bits; m1 and m2 add in a fixed
//         pattern too (lanes by shuffles, then warps in order).
// Why it helps: steps 2 and 3 read x and dy in loop 1 and again in loop 2,
//         8 rows later; with a few hundred blocks each between its two
//         reads, much of the second read comes from DRAM again: 5 streams
//         (x and dy twice, dx) of 4 bytes an element, 20 bytes. Here x and
//         dy come from DRAM once and wait in registers: 3 streams, 12
//         bytes an element, as back/baseline_copy3 moves, so up to 5/3 as
//         fast where the second read missed. The price: 64 registers of
//         kept floats a thread, so half step 3's blocks an SM (below).
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: 8 warps, 8 rows of a chunk
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define ROWS_PER_CHUNK (BLOCK_SIZE / WARP_SIZE)
#define WARPS (BLOCK_SIZE / WARP_SIZE)
#define MAX_PER_THREAD 4   // columns of each of the chunk's rows a thread keeps in registers
#define MAX_COLS (BLOCK_SIZE * MAX_PER_THREAD)   // the widest row kept: 1024 columns

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

// IN_REGISTERS: xhat and dy kept between the loops (cols <= MAX_COLS), or
// read again in loop 2 (wider rows: step 3's two reads).
template <bool IN_REGISTERS>
__global__ void __launch_bounds__(BLOCK_SIZE, 2)   // 2 blocks an SM: 128 registers a thread at most
ln_backward_kernel(const float *g_x, const float *g_dy, const float *g_gamma,
                   const float *g_mean, const float *g_rstd, float *g_dx,
                   float *g_partials, float *g_dgamma, float *g_dbeta,
                   unsigned int *g_ticket, unsigned int rows, unsigned int cols)
{
    // What loop 1 leaves for loop 2: each row of the chunk's mean, rstd, m1, m2,
    // and on the way each warp's share of every row's two sums.
    __shared__ float s_mean[ROWS_PER_CHUNK], s_rstd[ROWS_PER_CHUNK];
    __shared__ float s_m1[ROWS_PER_CHUNK], s_m2[ROWS_PER_CHUNK];
    __shared__ float s_g[WARPS][ROWS_PER_CHUNK], s_gx[WARPS][ROWS_PER_CHUNK];
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
    // Column threadIdx.x + j * BLOCK_SIZE of the chunk's row k: its xhat and
    // dy, from loop 1 to loop 2 (registers: every index is known at compile
    // time once the loops over j and k are unrolled).
    float kept_xhat[MAX_PER_THREAD][ROWS_PER_CHUNK], kept_dy[MAX_PER_THREAD][ROWS_PER_CHUNK];
    // The columns this thread takes: MAX_PER_THREAD steps of BLOCK_SIZE when
    // kept, as many as the row needs when not.
    unsigned int steps = IN_REGISTERS ? MAX_PER_THREAD : (cols + BLOCK_SIZE - 1) / BLOCK_SIZE;

    for (unsigned int chunk = first; chunk < last; chunk += ROWS_PER_CHUNK) {
        unsigned int chunk_rows = min(ROWS_PER_CHUNK, last - chunk);
        if (threadIdx.x < chunk_rows) {
            s_mean[threadIdx.x] = g_mean[chunk + threadIdx.x];
            s_rstd[threadIdx.x] = g_rstd[chunk + threadIdx.x];
        }
        __syncthreads();   // the chunk's mean and rstd written before loop 1 reads them

        // Loop 1: the two row sums dx needs before any of it can be written,
        // a thread per column down the chunk's rows (as loop 2 goes): row by
        // row, each thread's share of the row, then each warp's (shuffles),
        // which lane 0 leaves for the block's sum below.
#pragma unroll
        for (unsigned int k = 0; k < ROWS_PER_CHUNK; k++) {
            if (k < chunk_rows) {
                const float *x = g_x + (size_t)(chunk + k) * cols;
                const float *dy = g_dy + (size_t)(chunk + k) * cols;
                float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll   // the row's loads in flight at once
                for (unsigned int j = 0; j < steps; j++) {
                    unsigned int c = threadIdx.x + j * BLOCK_SIZE;
                    if (c < cols) {
                        float xhat = (x[c] - s_mean[k]) * s_rstd[k];
                        float d = dy[c];
                        float g = d * g_gamma[c];
                        sum_g += g;
                        sum_gx += g * xhat;
                        if constexpr (IN_REGISTERS) {
                            kept_xhat[j][k] = xhat;
                            kept_dy[j][k] = d;
                        }
                    }
                }
                sum_g = warp_allreduce(sum_g);
                sum_gx = warp_allreduce(sum_gx);
                if (lane == 0) {
                    s_g[warp][k] = sum_g;
                    s_gx[warp][k] = sum_gx;
                }
            }
        }
        __syncthreads();   // every warp's shares written before they are added
        if (threadIdx.x < chunk_rows) {
            float g = 0.0f, gx = 0.0f;
            for (unsigned int w = 0; w < WARPS; w++) {
                g += s_g[w][threadIdx.x];
                gx += s_gx[w][threadIdx.x];
            }
            s_m1[threadIdx.x] = g / (float)cols;
            s_m2[threadIdx.x] = gx / (float)cols;
        }
        __syncthreads();   // every row's m1 and m2 written before loop 2 reads them

        // Loop 2: dx, and each column's dgamma and dbeta over the chunk's
        // rows, in row order. A thread per column: a warp's 32 loads and
        // stores are neighbours, one 128-byte line, as in loop 1. The
        // running sums start at 0 on the slice's first chunk and wait in
        // the partial row between chunks (only this thread touches them).
        // The same columns as loop 1: what it kept is this thread's.
#pragma unroll
        for (unsigned int j = 0; j < steps; j++) {
            unsigned int c = threadIdx.x + j * BLOCK_SIZE;
            if (c < cols) {
                float gamma = g_gamma[c];
                float dgamma = chunk == first ? 0.0f : part_dgamma[c];
                float dbeta = chunk == first ? 0.0f : part_dbeta[c];
#pragma unroll
                for (unsigned int k = 0; k < ROWS_PER_CHUNK; k++) {
                    if (k < chunk_rows) {
                        size_t i = (size_t)(chunk + k) * cols + c;
                        float xhat, d;
                        if constexpr (IN_REGISTERS) {
                            xhat = kept_xhat[j][k];
                            d = kept_dy[j][k];
                        } else {   // step 3's second read
                            xhat = (g_x[i] - s_mean[k]) * s_rstd[k];
                            d = g_dy[i];
                        }
                        g_dx[i] = s_rstd[k] * (d * gamma - s_m1[k] - xhat * s_m2[k]);
                        dgamma += d * xhat;   // rows in order: the same sum every run
                        dbeta += d;
                    }
                }
                part_dgamma[c] = dgamma;
                part_dbeta[c] = dbeta;
            }
        }
        __syncthreads();   // loop 2 done with the chunk's shared values before the next chunk's
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

// The kernel for a width: xhat and dy kept in registers where the row fits.
static void (*kernel_for(size_t cols))(const float *, const float *, const float *, const float *,
                                       const float *, float *, float *, float *, float *,
                                       unsigned int *, unsigned int, unsigned int)
{
    return cols <= MAX_COLS ? ln_backward_kernel<true> : ln_backward_kernel<false>;
}

// One wave: as many blocks as the GPU holds at once, each taking a fixed
// slice of rows, and never more than a block per 8 rows. The kept floats
// cost registers: __launch_bounds__ holds both kernels to 128 a thread, so
// that 2 blocks of 256 fit in an SM's 64K registers (ptxas -v, kept / not:
// sm_75 116 / 87, sm_80 119 / 90, sm_90 125 / 94, no spills). On an H200
// that is 132 SMs x 2: 264 blocks, 16 warps an SM (step 3 had 32), each
// thread with up to 4 columns' loads of a row in flight in loop 1. The
// occupancy calculator asks the kernel that runs.
static unsigned int grid_blocks(size_t rows, size_t cols)
{
    static size_t max_blocks[2] = {0, 0};   // [1]: the kept kernel
    size_t &max = max_blocks[cols <= MAX_COLS];
    if (max == 0) {
        int device, sms, per_sm;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_for(cols),
                                                                 BLOCK_SIZE, 0));
        max = (size_t)sms * (per_sm > 0 ? per_sm : 1);
    }
    size_t blocks = (rows + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK;
    return (unsigned int)(blocks < max ? blocks : max);
}

// The workspace: the ticket counter in its zeroed part (the last block
// leaves it at 0), and one partial row of dgamma and one of dbeta per block
// in its scratch part (written before it is read in every call).
struct workspace_size back_workspace(const struct back_problem *p)
{
    struct workspace_size size = {sizeof(unsigned int),
                                  2 * (size_t)grid_blocks(p->rows, p->cols) * p->cols *
                                      sizeof(float)};
    return size;
}

void back_run(const struct back_problem *p)
{
    // Every block writes its whole partial rows and the last block every
    // column of dgamma and dbeta: nothing to zero first.
    unsigned int blocks = grid_blocks(p->rows, p->cols);
    float *partials = (float *)p->work.scratch;
    auto kernel = kernel_for(p->cols);
    kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->gamma, p->mean, p->rstd, p->dx, partials,
                                   p->dgamma, p->dbeta, (unsigned int *)p->work.zeroed,
                                   (unsigned int)p->rows, (unsigned int)p->cols);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_LAYERNORM;
