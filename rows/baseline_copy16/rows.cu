// Copy in bfloat16: y = x, every element read once and written once.
//
// rows/baseline_copy with 2-byte elements: the ceiling for the bfloat16
// steps (rows/step11_bf16 on), which move half the bytes of their float
// ones. Not a step: the ceiling for part 2. A row kernel that reads its input once
// and writes an output of the same size (LayerNorm, softmax) moves the same
// bytes as this copy, and can at best match its time; the row sums write
// almost nothing, so their ceiling is part 1's sum of the same floats.
// Each thread moves 16 bytes: one 16-byte load of 8 bfloat16s where both
// buffers are 16-byte aligned, else eight bfloat16s a block apart. One grid covers
// the whole array: measured faster on an H200 than a grid-stride loop with
// UNROLL float4s per thread (the closing note of the part 2 issue).
#include <cuda_bf16.h>

#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block
#define PER_THREAD 8     // bfloat16s each thread moves: 16 bytes

// The bits are copied, never converted: a copy has nothing to round.
template <unsigned int PACK>
__global__ void copy_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, size_t n)
{
    constexpr unsigned int LOADS = PER_THREAD / PACK;   // 1 uint4, or 8 bfloat16s
    // 64-bit indices: a matrix may hold more than 2^32 elements.
    size_t packs = n / PACK;
    size_t i = (size_t)blockIdx.x * BLOCK_SIZE * LOADS + threadIdx.x;
    uint4 v[LOADS];
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (i + k * BLOCK_SIZE < packs) {
            if constexpr (PACK == 8)
                v[k] = reinterpret_cast<const uint4 *>(g_x)[i + k * BLOCK_SIZE];
            else
                v[k].x = reinterpret_cast<const unsigned short *>(g_x)[i + k * BLOCK_SIZE];
        }
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (i + k * BLOCK_SIZE < packs) {
            if constexpr (PACK == 8)
                reinterpret_cast<uint4 *>(g_y)[i + k * BLOCK_SIZE] = v[k];
            else
                reinterpret_cast<unsigned short *>(g_y)[i + k * BLOCK_SIZE] =
                    (unsigned short)v[k].x;
        }
    // The last n % PACK elements, one thread each.
    size_t t = (size_t)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (t < n - packs * PACK)
        g_y[packs * PACK + t] = g_x[packs * PACK + t];
}

void row_forward(const struct row_problem *p)
{
    size_t n = p->rows * p->cols;
    size_t per_block = (size_t)BLOCK_SIZE * PER_THREAD;
    unsigned int blocks = (unsigned int)((n + per_block - 1) / per_block);
    auto x = static_cast<const __nv_bfloat16 *>(p->x_bf16);
    auto y = static_cast<__nv_bfloat16 *>(p->y_bf16);
    if ((size_t)x % 16 == 0 && (size_t)y % 16 == 0)
        copy_kernel<8><<<blocks, BLOCK_SIZE>>>(x, y, n);
    else
        copy_kernel<1><<<blocks, BLOCK_SIZE>>>(x, y, n);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_COPY;
const enum row_dtype step_dtype = ROW_BF16;
