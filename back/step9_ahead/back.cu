// LayerNorm backward, step 8 with each block loading its next row while it reduces this one.
//
// Change: each thread sends for its share of the next row (x and dy) at
//         the top of a row, before this row's sums, barrier and stores:
//         the loads arrive while the block works, and the next row starts
//         with its data in registers. The two shares need registers: each
//         kernel is held to the blocks an SM its width can fit.
// Why it helps: in step 8 a block had loads in flight only until its row
//         arrived; during the row's block sums, barrier and stores it asked
//         DRAM for nothing, and the SM's other blocks alone kept too few
//         bytes in flight to hide DRAM's latency. Now every block has a row
//         on its way all the time.
// Why the order is still fixed: the same sums in the same order; only the
//         loads move.
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: 8 warps
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define WARPS (BLOCK_SIZE / WARP_SIZE)
#define MAX_PER_THREAD 16   // floats of a row a thread keeps: 16 of x, 16 of dy
#define MAX_COLS (BLOCK_SIZE * MAX_PER_THREAD)   // the widest row kept: 4096 columns
#define SUM_THREADS 1024    // the second kernel: 32 warps a block of 8 columns
#define SUM_WARPS (SUM_THREADS / WARP_SIZE)
#define SUM_COLS 8          // columns a block of the second kernel sums
// Blocks an SM a kernel is held to: two rows' shares need registers, so
// ptxas is told how many blocks must fit. Narrow rows (1 or 2 floats a
// thread) fit 6 (40 registers; sm_75 holds 1024 threads an SM, 4 there),
// 4 floats fit 4, wider rows 2.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define NARROW_BLOCKS 4
#else
#define NARROW_BLOCKS 6
#endif
#define MIN_BLOCKS(floats) ((floats) <= 2 ? NARROW_BLOCKS : (floats) <= 4 ? 4 : 2)

// One warp, 32 sums -> 1, in every lane: each step adds the lane whose
// index differs in one bit, so after 5 steps all 32 hold the same total
// (every thread needs m1 and m2, not only lane 0).
__device__ float warp_allreduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

// A programmatic dependent launch's two halves (sm_90; no-ops before it,
// where the second kernel launches after the first as usual). The second
// kernel launches once every block of the first has said so or exited; it
// is safe early: it waits for this whole grid before it reads.
__device__ __forceinline__ void let_next_kernel_launch()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

__device__ __forceinline__ void wait_for_previous_kernel()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();   // the first kernel finished, its writes visible
#endif
}

// PACK floats: one 16-byte load where the row and its start allow (PACK 4),
// else one float (PACK 1: any width, any offset).
template <int PACK>
__device__ __forceinline__ void load_pack(const float *p, float (&v)[PACK])
{
    if constexpr (PACK == 4) {
        float4 t = *(const float4 *)p;
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else {
        v[0] = *p;
    }
}

template <int PACK>
__device__ __forceinline__ void store_pack(float *p, const float (&v)[PACK])
{
    if constexpr (PACK == 4)
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    else
        *p = v[0];
}

// The thread's share of a row, all loads in flight at once; past the row's
// end x is the row's mean (so xhat is 0) and dy is 0: they add nothing.
template <int PACK, int PACKS>
__device__ __forceinline__ void load_share(const float *x, const float *dy, unsigned int cols,
                                           float mean, float (&xs)[PACKS][PACK],
                                           float (&ds)[PACKS][PACK])
{
#pragma unroll
    for (int j = 0; j < PACKS; j++) {
        unsigned int c = (threadIdx.x + j * BLOCK_SIZE) * PACK;
        if (c < cols) {
            load_pack<PACK>(x + c, xs[j]);
            load_pack<PACK>(dy + c, ds[j]);
        } else {
#pragma unroll
            for (int e = 0; e < PACK; e++)
                xs[j][e] = mean, ds[j][e] = 0.0f;
        }
    }
}

// PACKS packs of PACK floats a thread a row: pack t, t + 256, ... The
// fewest that hold the row are built in (below), so no register holds a
// column past the row's end for long. Left free, ptxas gave the widest
// rows' two shares more than 128 registers and 1 block an SM (126 us
// against 108 at 8192 x 4096 on the H200); the narrow ones took 40 to 60
// registers, 4 to 6 blocks an SM.
template <int PACK, int PACKS>
__global__ void __launch_bounds__(BLOCK_SIZE, MIN_BLOCKS(PACK * PACKS))
ln_backward_kernel(const float *g_x, const float *g_dy, const float *g_gamma, const float *g_mean,
                   const float *g_rstd, float *g_dx, float *g_partials, unsigned int rows,
                   unsigned int cols)
{
    // Each warp's part of the row's two sums, in two buffers by the row's
    // parity: a thread that runs ahead to the next row writes the other one,
    // so one barrier a row is enough (it cannot reach row + 2's writes
    // before every thread has passed row + 1's barrier, after reading row).
    __shared__ float s_sums[2][2][WARPS];   // [row parity][sum g, sum g xhat][warp]
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int warp = threadIdx.x / WARP_SIZE;
    // This block's slice, rows [first, last): the same rows every run. The
    // grid has at most one block per row, so no slice is empty.
    unsigned int first = (unsigned int)((size_t)blockIdx.x * rows / gridDim.x);
    unsigned int last = (unsigned int)((size_t)(blockIdx.x + 1) * rows / gridDim.x);
    // The thread's columns: gamma for every row, and the sums over the
    // block's rows (0 past the row's end, so those add nothing).
    float gamma[PACKS][PACK], dgamma[PACKS][PACK], dbeta[PACKS][PACK];
#pragma unroll
    for (int j = 0; j < PACKS; j++) {
        unsigned int c = (threadIdx.x + j * BLOCK_SIZE) * PACK;
        if (c < cols)
            load_pack<PACK>(g_gamma + c, gamma[j]);
#pragma unroll
        for (int e = 0; e < PACK; e++) {
            if (c >= cols)
                gamma[j][e] = 0.0f;
            dgamma[j][e] = 0.0f, dbeta[j][e] = 0.0f;
        }
    }
    // The next row's share, sent for a row early.
    float next_x[PACKS][PACK], next_dy[PACKS][PACK];
    if (first < last)
        load_share<PACK, PACKS>(g_x + (size_t)first * cols, g_dy + (size_t)first * cols, cols,
                                g_mean[first], next_x, next_dy);
    for (unsigned int row = first; row < last; row++) {
        const float *x = g_x + (size_t)row * cols;
        const float *dy = g_dy + (size_t)row * cols;
        float mean = g_mean[row], rstd = g_rstd[row];
        // This row's share arrived during the last row; send for the next.
        float xhat[PACKS][PACK], d[PACKS][PACK];
#pragma unroll
        for (int j = 0; j < PACKS; j++)
#pragma unroll
            for (int e = 0; e < PACK; e++)
                xhat[j][e] = next_x[j][e], d[j][e] = next_dy[j][e];
        if (row + 1 < last)
            load_share<PACK, PACKS>(x + cols, dy + cols, cols, g_mean[row + 1], next_x, next_dy);
        float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
        for (int j = 0; j < PACKS; j++)
#pragma unroll
            for (int e = 0; e < PACK; e++) {
                xhat[j][e] = (xhat[j][e] - mean) * rstd;
                float g = d[j][e] * gamma[j][e];
                sum_g += g;
                sum_gx += g * xhat[j][e];
            }
        sum_g = warp_allreduce(sum_g);
        sum_gx = warp_allreduce(sum_gx);
        unsigned int parity = row & 1;
        if (lane == 0) {
            s_sums[parity][0][warp] = sum_g;
            s_sums[parity][1][warp] = sum_gx;
        }
        __syncthreads();   // every warp's part written before any thread adds them
        float m1 = 0.0f, m2 = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {   // warps in order: the same sum every run
            m1 += s_sums[parity][0][w];
            m2 += s_sums[parity][1][w];
        }
        m1 /= (float)cols;
        m2 /= (float)cols;
#pragma unroll
        for (int j = 0; j < PACKS; j++) {
            unsigned int c = (threadIdx.x + j * BLOCK_SIZE) * PACK;
            if (c < cols) {
                float out[PACK];
#pragma unroll
                for (int e = 0; e < PACK; e++) {
                    out[e] = rstd * (d[j][e] * gamma[j][e] - m1 - xhat[j][e] * m2);
                    dgamma[j][e] += d[j][e] * xhat[j][e];   // rows in order: the same sum every run
                    dbeta[j][e] += d[j][e];
                }
                store_pack<PACK>(g_dx + (size_t)row * cols + c, out);
            }
        }
    }
    let_next_kernel_launch();   // the second kernel's blocks may take SMs as this grid leaves
    // The block's partial rows, written once: dgamma's, then (gridDim.x rows
    // on) dbeta's.
    float *part_dgamma = g_partials + (size_t)blockIdx.x * cols;
    float *part_dbeta = g_partials + ((size_t)gridDim.x + blockIdx.x) * cols;
#pragma unroll
    for (int j = 0; j < PACKS; j++) {
        unsigned int c = (threadIdx.x + j * BLOCK_SIZE) * PACK;
        if (c < cols) {
            store_pack<PACK>(part_dgamma + c, dgamma[j]);
            store_pack<PACK>(part_dbeta + c, dbeta[j]);
        }
    }
}

// Rows wider than MAX_COLS do not fit a thread's registers: this kernel
// reads x and dy twice (the row's sums first) and keeps each thread's
// column sums in its own slots of the block's partial row, in global memory
// (only this thread touches them). Slow (0.2 of the copy at 4096 x 8192 on
// the H200), but right at every width: step 5's exercise 2 is making it fast.
__global__ void ln_backward_wide_kernel(const float *g_x, const float *g_dy, const float *g_gamma,
                                        const float *g_mean, const float *g_rstd, float *g_dx,
                                        float *g_partials, unsigned int rows, unsigned int cols)
{
    __shared__ float s_sums[2][2][WARPS];
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int warp = threadIdx.x / WARP_SIZE;
    unsigned int first = (unsigned int)((size_t)blockIdx.x * rows / gridDim.x);
    unsigned int last = (unsigned int)((size_t)(blockIdx.x + 1) * rows / gridDim.x);
    float *part_dgamma = g_partials + (size_t)blockIdx.x * cols;
    float *part_dbeta = g_partials + ((size_t)gridDim.x + blockIdx.x) * cols;
    for (unsigned int c = threadIdx.x; c < cols; c += BLOCK_SIZE)
        part_dgamma[c] = 0.0f, part_dbeta[c] = 0.0f;   // the scratch holds NaN until here
    for (unsigned int row = first; row < last; row++) {
        const float *x = g_x + (size_t)row * cols;
        const float *dy = g_dy + (size_t)row * cols;
        float mean = g_mean[row], rstd = g_rstd[row];
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (unsigned int c = threadIdx.x; c < cols; c += BLOCK_SIZE) {
            float xhat = (x[c] - mean) * rstd;
            float g = dy[c] * g_gamma[c];
            sum_g += g;
            sum_gx += g * xhat;
        }
        sum_g = warp_allreduce(sum_g);
        sum_gx = warp_allreduce(sum_gx);
        unsigned int parity = row & 1;
        if (lane == 0) {
            s_sums[parity][0][warp] = sum_g;
            s_sums[parity][1][warp] = sum_gx;
        }
        __syncthreads();
        float m1 = 0.0f, m2 = 0.0f;
        for (int w = 0; w < WARPS; w++) {
            m1 += s_sums[parity][0][w];
            m2 += s_sums[parity][1][w];
        }
        m1 /= (float)cols;
        m2 /= (float)cols;
        for (unsigned int c = threadIdx.x; c < cols; c += BLOCK_SIZE) {
            float xhat = (x[c] - mean) * rstd;
            float d = dy[c];
            g_dx[(size_t)row * cols + c] = rstd * (d * g_gamma[c] - m1 - xhat * m2);
            part_dgamma[c] += d * xhat;
            part_dbeta[c] += d;
        }
    }
}

// SUM_COLS columns from blockIdx.x * 8 on: lane l of warp w takes column
// l % 8 of partial rows w * 4 + l / 8, then 128 rows on, so each load is
// four 32-byte sectors (where cols is a multiple of 8; else up to eight).
// The 4 lanes of a column add by shuffles, then warp 0 adds the 32 warps'
// sums in warp order: a fixed pattern.
__global__ void __launch_bounds__(SUM_THREADS)
column_sums_kernel(const float *g_partials, unsigned int blocks, unsigned int cols,
                    float *g_dgamma, float *g_dbeta)
{
    __shared__ float s_dgamma[SUM_WARPS][SUM_COLS], s_dbeta[SUM_WARPS][SUM_COLS];
    unsigned int lane = threadIdx.x % WARP_SIZE;
    unsigned int warp = threadIdx.x / WARP_SIZE;
    unsigned int c = blockIdx.x * SUM_COLS + lane % SUM_COLS;
    float dgamma = 0.0f, dbeta = 0.0f;
    wait_for_previous_kernel();   // launched early: the partial rows may not be written yet
    if (c < cols) {
#pragma unroll 4   // several partial rows' loads in flight
        for (unsigned int b = warp * 4 + lane / SUM_COLS; b < blocks; b += SUM_WARPS * 4) {
            dgamma += g_partials[(size_t)b * cols + c];
            dbeta += g_partials[((size_t)blocks + b) * cols + c];
        }
    }
    dgamma += __shfl_xor_sync(FULL_MASK, dgamma, 8);
    dbeta += __shfl_xor_sync(FULL_MASK, dbeta, 8);
    dgamma += __shfl_xor_sync(FULL_MASK, dgamma, 16);
    dbeta += __shfl_xor_sync(FULL_MASK, dbeta, 16);
    if (lane < SUM_COLS) {
        s_dgamma[warp][lane] = dgamma;
        s_dbeta[warp][lane] = dbeta;
    }
    __syncthreads();
    if (warp == 0 && lane < SUM_COLS && c < cols) {
        dgamma = 0.0f, dbeta = 0.0f;
        for (unsigned int w = 0; w < SUM_WARPS; w++) {
            dgamma += s_dgamma[w][lane];
            dbeta += s_dbeta[w][lane];
        }
        g_dgamma[c] = dgamma;
        g_dbeta[c] = dbeta;
    }
}

typedef void (*kernel_t)(const float *, const float *, const float *, const float *,
                         const float *, float *, float *, unsigned int, unsigned int);

// 16-byte packs need whole packs in every row and 16-byte aligned starts
// (the partial rows too: the driver's scratch starts on 16 bytes);
// they pay only where every thread has a pack: below 1024 columns a block
// of 256 would leave threads idle (at 512 columns half of them: 140 us
// against 119 at 65536 x 512 on the H200), so narrower rows keep one float.
static bool packed(const struct back_problem *p)
{
    return p->cols % 4 == 0 && p->cols >= 4 * BLOCK_SIZE &&
           ((size_t)p->x | (size_t)p->dy | (size_t)p->dx | (size_t)p->gamma) % 16 == 0;
}

// The kernel for a row: the fewest packs a thread that hold it.
static kernel_t kernel_for(const struct back_problem *p)
{
    if (p->cols > MAX_COLS)
        return ln_backward_wide_kernel;
    if (packed(p)) {
        size_t packs = (p->cols / 4 + BLOCK_SIZE - 1) / BLOCK_SIZE;
        if (packs <= 1)
            return ln_backward_kernel<4, 1>;
        return packs <= 2 ? ln_backward_kernel<4, 2> : ln_backward_kernel<4, 4>;
    }
    size_t floats = (p->cols + BLOCK_SIZE - 1) / BLOCK_SIZE;
    if (floats <= 1)
        return ln_backward_kernel<1, 1>;
    if (floats <= 2)
        return ln_backward_kernel<1, 2>;
    if (floats <= 4)
        return ln_backward_kernel<1, 4>;
    return floats <= 8 ? ln_backward_kernel<1, 8> : ln_backward_kernel<1, 16>;
}

// One wave, as in step 2: as many blocks as the GPU holds at once (the
// occupancy calculator asks the kernel that runs), each with a fixed slice
// of rows, never more blocks than rows.
static unsigned int grid_blocks(const struct back_problem *p)
{
    int device, sms, per_sm;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_for(p), BLOCK_SIZE,
                                                             0));
    size_t max = (size_t)sms * (per_sm > 0 ? per_sm : 1);
    return (unsigned int)(p->rows < max ? p->rows : max);
}

// The early launch is safe only with the wait built into the second
// kernel, in its sm_90 code: ask the kernel that runs, not the device (a
// build for sm_80 on an sm_90 GPU runs code compiled there from sm_80 PTX,
// without the wait). Otherwise an ordinary launch.
static int dependent_launch(void)
{
    cudaFuncAttributes attr;
    CHECK_CUDA(cudaFuncGetAttributes(&attr, column_sums_kernel));
    return attr.ptxVersion >= 90;
}

// The workspace: one partial row of dgamma and one of dbeta per block, in
// its scratch part (written before it is read in every call). It is sized
// before the pointers are known, and they choose the kernel (packed or not)
// and so its blocks an SM: room for as many as an SM's threads allow.
struct workspace_size back_workspace(const struct back_problem *p)
{
    int device, sms, threads;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    size_t max = (size_t)sms * (threads / BLOCK_SIZE);
    size_t blocks = p->rows < max ? p->rows : max;
    struct workspace_size size = {0, 2 * blocks * p->cols * sizeof(float)};
    return size;
}

void back_run(const struct back_problem *p)
{
    // Every block writes its whole partial rows and the second kernel every
    // column of dgamma and dbeta: nothing to zero first.
    unsigned int blocks = grid_blocks(p);
    float *partials = (float *)p->work.scratch;
    kernel_t kernel = kernel_for(p);
    kernel<<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->gamma, p->mean, p->rstd, p->dx, partials,
                                   (unsigned int)p->rows, (unsigned int)p->cols);
    CHECK_LAUNCH();
    unsigned int tiles = (unsigned int)((p->cols + SUM_COLS - 1) / SUM_COLS);
    cudaLaunchAttribute early = {};
    early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early.val.programmaticStreamSerializationAllowed = dependent_launch();
    // grid, block, dynamic shared memory, stream (the harness's, 0), attributes
    cudaLaunchConfig_t config = {dim3(tiles), dim3(SUM_THREADS), 0, 0, &early, 1};
    CHECK_CUDA(cudaLaunchKernelEx(&config, column_sums_kernel, (const float *)partials, blocks,
                                  (unsigned int)p->cols, p->dgamma, p->dbeta));
}

const enum back_op step_op = BACK_LAYERNORM;
