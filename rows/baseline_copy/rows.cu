// Copy: y = x, every float read once and written once.
//
// Not a step: the ceiling for part 2. A row kernel that reads its input once
// and writes an output of the same size (LayerNorm, softmax) moves the same
// bytes as this copy, and can at best match its time; the row sums write
// almost nothing, so their ceiling is part 1's sum of the same floats. The
// kernel is part 1's step 8 turned into a copy: a grid sized to the GPU,
// UNROLL float4s in flight per thread, plain floats where a buffer is not
// 16-byte aligned.
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block
#define UNROLL 4         // independent loads in flight per thread

template <unsigned int PACK>
__global__ void copy_kernel(const float *g_x, float *g_y, unsigned int n)
{
    unsigned int packs = n / PACK;
    unsigned int stride = gridDim.x * BLOCK_SIZE;
    unsigned int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    for (; i < packs; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * stride < packs) {
                if constexpr (PACK == 4)
                    v[k] = reinterpret_cast<const float4 *>(g_x)[i + k * stride];
                else
                    v[k].x = g_x[i + k * stride];
            }
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * stride < packs) {
                if constexpr (PACK == 4)
                    reinterpret_cast<float4 *>(g_y)[i + k * stride] = v[k];
                else
                    g_y[i + k * stride] = v[k].x;
            }
    }
    // The last n % PACK floats, one thread each.
    unsigned int t = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (t < n - packs * PACK)
        g_y[packs * PACK + t] = g_x[packs * PACK + t];
}

void row_forward(const struct row_problem *p)
{
    static int max_blocks = 0;   // enough blocks to fill every SM once
    if (max_blocks == 0) {
        int device, sms, per_sm;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_kernel<4>,
                                                                 BLOCK_SIZE, 0));
        max_blocks = sms * per_sm;
    }
    size_t n = p->rows * p->cols;
    size_t wanted = (n + 4 * BLOCK_SIZE - 1) / (4 * BLOCK_SIZE);
    unsigned int blocks = (unsigned int)(wanted < (size_t)max_blocks ? wanted : max_blocks);
    if ((size_t)p->x % 16 == 0 && (size_t)p->y % 16 == 0)
        copy_kernel<4><<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)n);
    else
        copy_kernel<1><<<blocks, BLOCK_SIZE>>>(p->x, p->y, (unsigned int)n);
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_COPY;
