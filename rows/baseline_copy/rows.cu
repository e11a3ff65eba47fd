// Copy: y = x, every float read once and written once.
//
// Not a step: the ceiling for part 2. A row kernel that reads its input once
// and writes an output of the same size (LayerNorm, softmax) moves the same
// bytes as this copy, and can at best match its time; the row sums write
// almost nothing, so their ceiling is part 1's sum of the same floats.
// Each thread moves 16 bytes: one float4 where both buffers are 16-byte
// aligned, else four floats a block apart (still coalesced). One grid covers
// the whole array: measured faster on an H200 than a grid-stride loop with
// UNROLL float4s per thread (the closing note of the part 2 issue).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block
#define PER_THREAD 4     // floats each thread moves: 16 bytes

template <unsigned int PACK>
__global__ void copy_kernel(const float *g_x, float *g_y, size_t n)
{
    constexpr unsigned int LOADS = PER_THREAD / PACK;   // 1 float4, or 4 floats
    // 64-bit indices: a matrix may hold more than 2^32 elements.
    size_t packs = n / PACK;
    size_t i = (size_t)blockIdx.x * BLOCK_SIZE * LOADS + threadIdx.x;
    float4 v[LOADS];
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (i + k * BLOCK_SIZE < packs) {
            if constexpr (PACK == 4)
                v[k] = reinterpret_cast<const float4 *>(g_x)[i + k * BLOCK_SIZE];
            else
                v[k].x = g_x[i + k * BLOCK_SIZE];
        }
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (i + k * BLOCK_SIZE < packs) {
            if constexpr (PACK == 4)
                reinterpret_cast<float4 *>(g_y)[i + k * BLOCK_SIZE] = v[k];
            else
                g_y[i + k * BLOCK_SIZE] = v[k].x;
        }
    // The last n % PACK floats, one thread each.
    size_t t = (size_t)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (t < n - packs * PACK)
        g_y[packs * PACK + t] = g_x[packs * PACK + t];
}

void row_forward(const struct row_problem *p)
{
    size_t n = p->rows * p->cols;
    size_t per_block = (size_t)BLOCK_SIZE * PER_THREAD;
    unsigned int blocks = (unsigned int)((n + per_block - 1) / per_block);
    if ((size_t)p->x % 16 == 0 && (size_t)p->y % 16 == 0)
        copy_kernel<4><<<blocks, BLOCK_SIZE>>>(p->x, p->y, n);
    else
        copy_kernel<1><<<blocks, BLOCK_SIZE>>>(p->x, p->y, n);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_COPY;
