// Copy of three streams: dx = x + dy, two floats read and one written per
// element.
//
// Not a step: the bar for part 3. LayerNorm's backward pass reads x and dy
// (rows x cols) and writes dx (rows x cols); its other arrays (gamma, mean,
// rstd, dgamma, dbeta) are a row or a column long, so at part 3's shapes
// the three big streams are nearly all of its bytes. A kernel that reads
// each of x and dy once and writes dx once can at best match the time of
// this program, which does that and nothing else: the add only makes the
// output depend on both inputs, so that neither read can be dropped and the
// check (dx = x + dy bit for bit) sees both. Its bytes are the three
// streams alone, 12 an element (common/back_ref.h: back_copy3_bytes);
// gamma, mean and rstd are not read, dgamma and dbeta not written.
// Written as part 2's copy (rows/baseline_copy) is: each thread moves 16
// bytes of each stream, one float4 where all three buffers are 16-byte
// aligned, else four floats a block apart (still coalesced); one grid
// covers the whole matrix.
#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block
#define PER_THREAD 4     // floats of each stream a thread moves: 16 bytes

template <unsigned int PACK>
__global__ void copy3_kernel(const float *g_x, const float *g_dy, float *g_dx, size_t n)
{
    constexpr unsigned int LOADS = PER_THREAD / PACK;   // 1 float4, or 4 floats
    // 64-bit indices: a matrix may hold more than 2^32 elements.
    size_t packs = n / PACK;
    size_t i = (size_t)blockIdx.x * BLOCK_SIZE * LOADS + threadIdx.x;
    float4 a[LOADS], b[LOADS];
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (i + k * BLOCK_SIZE < packs) {
            if constexpr (PACK == 4) {
                a[k] = reinterpret_cast<const float4 *>(g_x)[i + k * BLOCK_SIZE];
                b[k] = reinterpret_cast<const float4 *>(g_dy)[i + k * BLOCK_SIZE];
            } else {
                a[k].x = g_x[i + k * BLOCK_SIZE];
                b[k].x = g_dy[i + k * BLOCK_SIZE];
            }
        }
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (i + k * BLOCK_SIZE < packs) {
            if constexpr (PACK == 4)
                reinterpret_cast<float4 *>(g_dx)[i + k * BLOCK_SIZE] =
                    make_float4(a[k].x + b[k].x, a[k].y + b[k].y, a[k].z + b[k].z,
                                a[k].w + b[k].w);
            else
                g_dx[i + k * BLOCK_SIZE] = a[k].x + b[k].x;
        }
    // The last n % PACK elements, one thread each.
    size_t t = (size_t)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (t < n - packs * PACK)
        g_dx[packs * PACK + t] = g_x[packs * PACK + t] + g_dy[packs * PACK + t];
}

void back_run(const struct back_problem *p)
{
    size_t n = p->rows * p->cols;
    size_t per_block = (size_t)BLOCK_SIZE * PER_THREAD;
    unsigned int blocks = (unsigned int)((n + per_block - 1) / per_block);
    if ((size_t)p->x % 16 == 0 && (size_t)p->dy % 16 == 0 && (size_t)p->dx % 16 == 0)
        copy3_kernel<4><<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->dx, n);
    else
        copy3_kernel<1><<<blocks, BLOCK_SIZE>>>(p->x, p->dy, p->dx, n);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_COPY3;
