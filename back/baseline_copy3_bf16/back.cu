// Copy of three streams in bfloat16: dx = y + dy, two bfloat16s read and one
// written per element.
//
// Not a step: the bar for the bfloat16 softmax backward pass (back/step15
// on), as back/baseline_copy3 is the float steps' bar. That pass reads y and
// dy (rows x cols) and writes dx, 2 bytes each: a kernel that reads each of
// y and dy once and writes dx once can at best match the time of this
// program, which does that and nothing else. The add (in float, rounded
// once to bfloat16, as the steps round dx) makes the output depend on both
// inputs, so that neither read can be dropped and the check (dx = the
// bfloat16 of y + dy, bit for bit) sees both. Its bytes are the three
// streams alone, 6 an element (common/back_ref.h: softmax_back_bf16_bytes).
// Written as back/baseline_copy3 with part 2's bfloat16 copy's packs
// (rows/baseline_copy16): each thread moves 16 bytes of each stream, one
// 16-byte pack of 8 bfloat16s where all three buffers are 16-byte aligned,
// else eight bfloat16s a block apart (still coalesced); one grid covers the
// whole matrix.
#include <cuda_bf16.h>

#include "back.h"
#include "check.h"

#define BLOCK_SIZE 256   // threads per block
#define PER_THREAD 8     // bfloat16s of each stream a thread moves: 16 bytes

// 8 bfloat16s (one 16-byte pack) of a and of b: a + b in float, each sum
// rounded once to bfloat16.
__device__ uint4 add_packs(uint4 a, uint4 b)
{
    const __nv_bfloat162 *ha = reinterpret_cast<const __nv_bfloat162 *>(&a);
    const __nv_bfloat162 *hb = reinterpret_cast<const __nv_bfloat162 *>(&b);
    uint4 out;
    __nv_bfloat162 *ho = reinterpret_cast<__nv_bfloat162 *>(&out);
#pragma unroll
    for (unsigned int j = 0; j < 4; j++) {
        float2 fa = __bfloat1622float2(ha[j]), fb = __bfloat1622float2(hb[j]);
        ho[j] = __floats2bfloat162_rn(fa.x + fb.x, fa.y + fb.y);
    }
    return out;
}

__device__ __nv_bfloat16 add_one(__nv_bfloat16 a, __nv_bfloat16 b)
{
    return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}

template <unsigned int PACK>
__global__ void copy3_kernel(const __nv_bfloat16 *g_y, const __nv_bfloat16 *g_dy,
                             __nv_bfloat16 *g_dx, size_t n)
{
    constexpr unsigned int LOADS = PER_THREAD / PACK;   // 1 pack, or 8 bfloat16s
    // 64-bit indices: a matrix may hold more than 2^32 elements.
    size_t packs = n / PACK;
    size_t i = (size_t)blockIdx.x * BLOCK_SIZE * LOADS + threadIdx.x;
    if constexpr (PACK == 8) {
        if (i < packs)
            reinterpret_cast<uint4 *>(g_dx)[i] =
                add_packs(reinterpret_cast<const uint4 *>(g_y)[i],
                          reinterpret_cast<const uint4 *>(g_dy)[i]);
    } else {
        __nv_bfloat16 a[LOADS], b[LOADS];
#pragma unroll
        for (unsigned int k = 0; k < LOADS; k++)
            if (i + k * BLOCK_SIZE < packs) {
                a[k] = g_y[i + k * BLOCK_SIZE];
                b[k] = g_dy[i + k * BLOCK_SIZE];
            }
#pragma unroll
        for (unsigned int k = 0; k < LOADS; k++)
            if (i + k * BLOCK_SIZE < packs)
                g_dx[i + k * BLOCK_SIZE] = add_one(a[k], b[k]);
    }
    // The last n % PACK elements, one thread each.
    size_t t = (size_t)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (t < n - packs * PACK)
        g_dx[packs * PACK + t] = add_one(g_y[packs * PACK + t], g_dy[packs * PACK + t]);
}

void back_run(const struct back_problem *p)
{
    size_t n = p->rows * p->cols;
    size_t per_block = (size_t)BLOCK_SIZE * PER_THREAD;
    unsigned int blocks = (unsigned int)((n + per_block - 1) / per_block);
    auto y = static_cast<const __nv_bfloat16 *>(p->y_bf16);
    auto dy = static_cast<const __nv_bfloat16 *>(p->dy_bf16);
    auto dx = static_cast<__nv_bfloat16 *>(p->dx_bf16);
    if ((size_t)y % 16 == 0 && (size_t)dy % 16 == 0 && (size_t)dx % 16 == 0)
        copy3_kernel<8><<<blocks, BLOCK_SIZE>>>(y, dy, dx, n);
    else
        copy3_kernel<1><<<blocks, BLOCK_SIZE>>>(y, dy, dx, n);
    CHECK_LAUNCH();
}

const enum back_op step_op = BACK_COPY3;
const enum back_dtype step_dtype = BACK_BF16;
