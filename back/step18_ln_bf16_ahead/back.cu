// LayerNorm backward in bfloat16, two rows ahead: each block has its next two rows on their way.
//
// Change: a block keeps the shares of its next AHEAD rows in registers as
//         they came (bfloat16 packs, not yet widened) and sends for the row
//         AHEAD on as it starts each row; rows are taken AHEAD at a time so
//         that each share keeps its own registers. AHEAD is 2 where a
//         thread holds at most MAX_AHEAD2 elements of a row, else 1 (step
//         17's one row ahead). Rows up to 2048 columns load one element at
//         a time, which two rows ahead made the faster choice (back/README).
// Why it helps: an SM covers DRAM's latency with the bytes it has in
//         flight. Step 17 keeps step 9's threads and blocks, each with one
//         row on its way, so with half the bytes an element an SM has half
//         step 9's bytes in flight, and at 1024 columns the pass takes about
//         step 9's time.
//         Raw bfloat16s cost half the registers of widened floats: two rows
//         ahead fit where one widened row did.
// Why the order is still fixed: each block takes its rows in the same
//         order, with the same float sums; only when they are loaded moves.
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
// Started from step17_ln_bf16 by make new: its diff against step 17 is this step's lesson.
#include <cuda_bf16.h>

#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block: 8 warps
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define WARPS (BLOCK_SIZE / WARP_SIZE)
#define MAX_PER_THREAD 16   // floats of a row a thread keeps: 16 of x, 16 of dy (widened)
#define MAX_COLS (BLOCK_SIZE * MAX_PER_THREAD)   // the widest row kept: 4096 columns
#define SUM_THREADS 1024    // the second kernel: 32 warps a block of 8 columns
#define SUM_WARPS (SUM_THREADS / WARP_SIZE)
#define SUM_COLS 8          // columns a block of the second kernel sums
// Blocks an SM a kernel is held to: the shares on their way need registers, so
// ptxas is told how many blocks must fit. Narrow rows (1 or 2 floats a
// thread) fit 6 (40 registers; sm_75 holds 1024 threads an SM, 4 there),
// 4 floats fit 4, wider rows 2.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define NARROW_BLOCKS 4
#else
#define NARROW_BLOCKS 6
#endif
#define MIN_BLOCKS(floats) ((floats) <= 2 ? NARROW_BLOCKS : (floats) <= 4 ? 4 : 2)
#define MAX_AHEAD2 8   // the most elements of a row a thread holds and still keeps two rows ahead
#define AHEAD_OF(floats) ((floats) <= MAX_AHEAD2 ? 2 : 1)

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

// PACK floats (gamma, the partial rows): two 16-byte loads where the row
// and its start allow (PACK 8, a bfloat16 pack's columns), one (PACK 4),
// else one float (PACK 1: any width, any offset).
template <int PACK>
__device__ __forceinline__ void load_pack(const float *p, float (&v)[PACK])
{
    if constexpr (PACK == 8) {
        float4 t = *(const float4 *)p, u = *(const float4 *)(p + 4);
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
        v[4] = u.x, v[5] = u.y, v[6] = u.z, v[7] = u.w;
    } else if constexpr (PACK == 4) {
        float4 t = *(const float4 *)p;
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else {
        v[0] = *p;
    }
}

template <int PACK>
__device__ __forceinline__ void store_pack(float *p, const float (&v)[PACK])
{
    if constexpr (PACK == 8) {
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
    } else if constexpr (PACK == 4) {
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        *p = v[0];
    }
}

// PACK bfloat16s (x, dy), widened to float (exact): one 16-byte load of 8
// (PACK 8), one 8-byte load of 4 (PACK 4), else one (PACK 1).
template <int PACK>
__device__ __forceinline__ void load_pack(const __nv_bfloat16 *p, float (&v)[PACK])
{
    if constexpr (PACK == 8) {
        uint4 t = *(const uint4 *)p;
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&t);
#pragma unroll
        for (int e = 0; e < PACK / 2; e++) {
            float2 f = __bfloat1622float2(h[e]);
            v[2 * e] = f.x, v[2 * e + 1] = f.y;
        }
    } else if constexpr (PACK == 4) {
        uint2 t = *(const uint2 *)p;
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&t);
#pragma unroll
        for (int e = 0; e < PACK / 2; e++) {
            float2 f = __bfloat1622float2(h[e]);
            v[2 * e] = f.x, v[2 * e + 1] = f.y;
        }
    } else {
        v[0] = __bfloat162float(*p);
    }
}

// dx: PACK floats, each rounded once to bfloat16 (to nearest even) as it
// is stored, 8 in one 16-byte store (PACK 8), 4 in one 8-byte store (PACK 4).
template <int PACK>
__device__ __forceinline__ void store_pack(__nv_bfloat16 *p, const float (&v)[PACK])
{
    if constexpr (PACK == 8) {
        uint4 t;
        __nv_bfloat16 *h = reinterpret_cast<__nv_bfloat16 *>(&t);
#pragma unroll
        for (int e = 0; e < PACK; e++)
            h[e] = __float2bfloat16_rn(v[e]);
        *(uint4 *)p = t;
    } else if constexpr (PACK == 4) {
        uint2 t;
        __nv_bfloat16 *h = reinterpret_cast<__nv_bfloat16 *>(&t);
#pragma unroll
        for (int e = 0; e < PACK; e++)
            h[e] = __float2bfloat16_rn(v[e]);
        *(uint2 *)p = t;
    } else {
        *p = __float2bfloat16_rn(v[0]);
    }
}

// A thread's share of a row as it came: PACK bfloat16s a pack, in half the
// registers of the widened floats.
template <int PACK>
struct __align__(2 * PACK) raw_pack {
    __nv_bfloat16 h[PACK];
};

template <int PACK, int PACKS>
struct raw_share {
    raw_pack<PACK> x[PACKS], dy[PACKS];
};

// Sends for the thread's share of a row; the registers fill while the
// block works on earlier rows. Past the row's end, zeros: a register left
// unwritten would keep an older row's value live (ptxas spilled for it).
template <int PACK, int PACKS>
__device__ __forceinline__ void send_for(const __nv_bfloat16 *x, const __nv_bfloat16 *dy,
                                         unsigned int cols, raw_share<PACK, PACKS> &r)
{
#pragma unroll
    for (int j = 0; j < PACKS; j++) {
        unsigned int c = (threadIdx.x + j * BLOCK_SIZE) * PACK;
        if (c < cols) {
            r.x[j] = *(const raw_pack<PACK> *)(x + c);
            r.dy[j] = *(const raw_pack<PACK> *)(dy + c);
        } else {
            r.x[j] = r.dy[j] = raw_pack<PACK>{};
        }
    }
}

// A share widened to float (exact); past the row's end x is the row's mean
// (so xhat is 0) and dy is 0: they add nothing.
template <int PACK, int PACKS>
__device__ __forceinline__ void widen(const raw_share<PACK, PACKS> &r, unsigned int cols,
                                      float mean, float (&xs)[PACKS][PACK],
                                      float (&ds)[PACKS][PACK])
{
#pragma unroll
    for (int j = 0; j < PACKS; j++) {
        unsigned int c = (threadIdx.x + j * BLOCK_SIZE) * PACK;
        if (c < cols) {
#pragma unroll
            for (int e = 0; e < PACK; e++) {
                xs[j][e] = __bfloat162float(r.x[j].h[e]);
                ds[j][e] = __bfloat162float(r.dy[j].h[e]);
            }
        } else {
#pragma unroll
            for (int e = 0; e < PACK; e++)
                xs[j][e] = mean, ds[j][e] = 0.0f;
        }
    }
}

// PACKS packs of PACK elements a thread a row: pack t, t + 256, ... The
// fewest that hold the row are built in (below), so no register holds a
// column past the row's end for long. Left free, ptxas gave the widest
// rows' two shares more than 128 registers and 1 block an SM (126 us
// against 108 at 8192 x 4096 on the H200); the narrow ones took 40 to 60
// registers, 4 to 6 blocks an SM.
template <int PACK, int PACKS>
__global__ void __launch_bounds__(BLOCK_SIZE, MIN_BLOCKS(PACK * PACKS))
ln_backward_kernel(const __nv_bfloat16 *g_x, const __nv_bfloat16 *g_dy, const float *g_gamma,
                   const float *g_mean, const float *g_rstd, __nv_bfloat16 *g_dx,
                   float *g_partials, unsigned int rows, unsigned int cols)
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
    // The next AHEAD rows' shares, as they came, sent for AHEAD rows early.
    constexpr int AHEAD = AHEAD_OF(PACK * PACKS);
    raw_share<PACK, PACKS> ahead[AHEAD];
#pragma unroll
    for (int k = 0; k < AHEAD; k++)
        if (first + k < last)
            send_for<PACK, PACKS>(g_x + (size_t)(first + k) * cols,
                                  g_dy + (size_t)(first + k) * cols, cols, ahead[k]);
    // One row, from the share in r; r then takes the row AHEAD on.
    auto one_row = [&](unsigned int row, raw_share<PACK, PACKS> &r) {
        const __nv_bfloat16 *x = g_x + (size_t)row * cols;
        const __nv_bfloat16 *dy = g_dy + (size_t)row * cols;
        float mean = g_mean[row], rstd = g_rstd[row];
        // This row's share arrived during the last AHEAD rows; send for
        // the one AHEAD on.
        float xhat[PACKS][PACK], d[PACKS][PACK];
        widen<PACK, PACKS>(r, cols, mean, xhat, d);
        if (row + AHEAD < last)
            send_for<PACK, PACKS>(x + AHEAD * (size_t)cols, dy + AHEAD * (size_t)cols, cols, r);
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
    };
    // AHEAD rows at a time, so that each share keeps its own registers.
    for (unsigned int row = first; row < last; row += AHEAD)
#pragma unroll
        for (int k = 0; k < AHEAD; k++)
            if (row + k < last)
                one_row(row + k, ahead[k]);
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
// (only this thread touches them). Slow (back/README), but right at every
// width: step 5's exercise 2 is making it fast.
__global__ void ln_backward_wide_kernel(const __nv_bfloat16 *g_x, const __nv_bfloat16 *g_dy,
                                        const float *g_gamma, const float *g_mean,
                                        const float *g_rstd, __nv_bfloat16 *g_dx,
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
        const __nv_bfloat16 *x = g_x + (size_t)row * cols;
        const __nv_bfloat16 *dy = g_dy + (size_t)row * cols;
        float mean = g_mean[row], rstd = g_rstd[row];
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (unsigned int c = threadIdx.x; c < cols; c += BLOCK_SIZE) {
            float xhat = (__bfloat162float(x[c]) - mean) * rstd;
            float g = __bfloat162float(dy[c]) * g_gamma[c];
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
            float xhat = (__bfloat162float(x[c]) - mean) * rstd;
            float d = __bfloat162float(dy[c]);
            g_dx[(size_t)row * cols + c] =
                __float2bfloat16_rn(rstd * (d * g_gamma[c] - m1 - xhat * m2));
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

typedef void (*kernel_t)(const __nv_bfloat16 *, const __nv_bfloat16 *, const float *,
                         const float *, const float *, __nv_bfloat16 *, float *, unsigned int,
                         unsigned int);

// Packs need whole packs in every row and aligned starts (gamma's floats
// and the partial rows in 16-byte loads: the driver's scratch starts on 16
// bytes); they pay only where every thread has a pack (step 9 measured it
// in float): 16-byte packs of 8, else 8-byte packs of 4, past 2048 columns
// here (below); narrower rows keep one element.
static int pack_of(const struct back_problem *p)
{
    size_t starts = (size_t)p->x_bf16 | (size_t)p->dy_bf16 | (size_t)p->dx_bf16;
    if ((size_t)p->gamma % 16 != 0)
        return 1;
    // Two rows ahead, one element a load beats packs (at 1024 columns packs
    // of 4 spill at ptxas's 64 registers, one element a load does not):
    // packs only past 2048 columns, where a thread keeps one row ahead.
    if (p->cols % 8 == 0 && p->cols > 8 * BLOCK_SIZE && starts % 16 == 0)
        return 8;
    return p->cols % 4 == 0 && p->cols > 8 * BLOCK_SIZE && starts % 8 == 0 ? 4 : 1;
}

// The kernel for a row: the fewest packs a thread that hold it.
// (Packs start past 2048 columns here, so <8, 1>, <4, 1> and <4, 2> are
// never chosen; they stay so that this reads as step 17's dispatch.)
static kernel_t kernel_for(const struct back_problem *p)
{
    if (p->cols > MAX_COLS)
        return ln_backward_wide_kernel;
    if (pack_of(p) == 8) {
        size_t packs = (p->cols / 8 + BLOCK_SIZE - 1) / BLOCK_SIZE;
        if (packs <= 1)
            return ln_backward_kernel<8, 1>;
        return ln_backward_kernel<8, 2>;   // 16 floats a thread: up to MAX_COLS
    }
    if (pack_of(p) == 4) {
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
    kernel<<<blocks, BLOCK_SIZE>>>((const __nv_bfloat16 *)p->x_bf16,
                                   (const __nv_bfloat16 *)p->dy_bf16, p->gamma, p->mean, p->rstd,
                                   (__nv_bfloat16 *)p->dx_bf16, partials, (unsigned int)p->rows,
                                   (unsigned int)p->cols);
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
const enum back_dtype step_dtype = BACK_BF16;
