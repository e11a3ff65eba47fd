// LayerNorm, the textbook way: three passes over each row in global memory.
//
// Change: the row reduction becomes LayerNorm's forward pass. Pass 1 sums
//         the row for its mean, pass 2 sums (x - mean)^2 for its variance,
//         pass 3 writes y = (x - mean) / sqrt(var + eps) * gamma + beta, and
//         mean and rstd = 1 / sqrt(var + eps) are saved as PyTorch saves
//         them. Every thread of the group needs the mean and the variance,
//         so the group's sum now reaches every thread (butterfly shuffles).
// Why it is still fast: the row is read three times, but a row is 4 KB at
//         1024 columns, so its second and third reads mostly hit the L2
//         (60 MiB on an H200); DRAM sees about one read and one write.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block when G <= 256 (then 256 / G rows per block)
#define UNROLL 4         // independent loads in flight per thread
#define WARPS_PER_SM 32  // enough rows' loads in flight (half the 64 warps an SM holds)
#define MAX_GROUP 1024   // the most threads a block can have
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle

// One warp, 32 sums -> their total in every lane: at each level lane i adds
// lane i ^ offset's value, so both halves end with the same total.
__device__ float warp_allreduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

// A group of G threads, G sums -> their total in every thread of the group,
// added in the same order in each. With G > 32 the warps' sums go through
// shared memory; the first barrier keeps a previous call's reads apart.
template <unsigned int G>
__device__ float group_allreduce(float sum, float *s_warp)
{
    sum = warp_allreduce(sum);
    if constexpr (G > WARP_SIZE) {
        unsigned int first = threadIdx.x / G * (G / WARP_SIZE);   // the group's first warp
        __syncthreads();
        if (threadIdx.x % WARP_SIZE == 0)
            s_warp[threadIdx.x / WARP_SIZE] = sum;
        __syncthreads();
        sum = 0.0f;
        for (unsigned int w = 0; w < G / WARP_SIZE; w++)
            sum += s_warp[first + w];
    }
    return sum;
}

// PACK consecutive floats from pack i, in one load instruction.
template <unsigned int PACK>
__device__ void load_pack(const float *p, unsigned int i, float (&v)[PACK])
{
    if constexpr (PACK == 4) {
        float4 f = reinterpret_cast<const float4 *>(p)[i];
        v[0] = f.x; v[1] = f.y; v[2] = f.z; v[3] = f.w;
    } else {
        v[0] = p[i];
    }
}

template <unsigned int PACK>
__device__ void store_pack(float *p, unsigned int i, const float (&v)[PACK])
{
    if constexpr (PACK == 4)
        reinterpret_cast<float4 *>(p)[i] = make_float4(v[0], v[1], v[2], v[3]);
    else
        p[i] = v[0];
}

template <unsigned int G, unsigned int PACK>
__global__ void layernorm_kernel(const float *g_x, float *g_y, float *g_mean, float *g_rstd,
                                 const float *g_gamma, const float *g_beta, float eps,
                                 unsigned int rows, unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one sum per warp of the block
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / G;
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce need every thread of the block.
    unsigned int packs = (row < rows) ? cols / PACK : 0;   // PACK divides cols
    const float *x = g_x + (size_t)row * cols;
    float *y = g_y + (size_t)row * cols;
    float v[PACK];

    // Pass 1: the mean.
    float sum = 0.0f;
    for (unsigned int i = t; i < packs; i += UNROLL * G) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs) {
                load_pack<PACK>(x, i + k * G, v);
                for (unsigned int j = 0; j < PACK; j++)
                    sum += v[j];
            }
    }
    float mean = group_allreduce<G>(sum, s_warp) / cols;

    // Pass 2: the variance, around the mean: no cancellation, unlike
    // E[x^2] - E[x]^2 (ACCURACY.md).
    sum = 0.0f;
    for (unsigned int i = t; i < packs; i += UNROLL * G) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs) {
                load_pack<PACK>(x, i + k * G, v);
                for (unsigned int j = 0; j < PACK; j++)
                    sum += (v[j] - mean) * (v[j] - mean);
            }
    }
    float var = group_allreduce<G>(sum, s_warp) / cols;
    float rstd = rsqrtf(var + eps);

    // Pass 3: normalize, scale, shift, write.
    for (unsigned int i = t; i < packs; i += G) {
        float gamma[PACK], beta[PACK];
        load_pack<PACK>(x, i, v);
        load_pack<PACK>(g_gamma, i, gamma);
        load_pack<PACK>(g_beta, i, beta);
        for (unsigned int j = 0; j < PACK; j++)
            v[j] = (v[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<PACK>(y, i, v);
    }
    if (t == 0 && row < rows) {
        g_mean[row] = mean;
        g_rstd[row] = rstd;
    }
}

// 16-byte loads and stores need every row, gamma and beta on a 16-byte boundary.
static bool rows_aligned(const struct row_problem *p)
{
    return (size_t)p->x % 16 == 0 && (size_t)p->y % 16 == 0 && (size_t)p->gamma % 16 == 0 &&
           (size_t)p->beta % 16 == 0 && p->cols % 4 == 0;
}

// The smallest G that gives every SM WARPS_PER_SM warps, but no more
// threads than a row has float4s.
static unsigned int group_size(size_t rows, size_t cols)
{
    static int sms = 0;
    if (sms == 0) {
        int device;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    }
    unsigned int g = WARP_SIZE;
    while (g < MAX_GROUP && rows * (g / WARP_SIZE) < (size_t)sms * WARPS_PER_SM &&
           2 * g * 4 <= cols)
        g *= 2;
    return g;
}

template <unsigned int G>
static void launch(const struct row_problem *p)
{
    unsigned int threads = G < BLOCK_SIZE ? BLOCK_SIZE : G;
    unsigned int rows_per_block = threads / G;
    unsigned int blocks = (unsigned int)((p->rows + rows_per_block - 1) / rows_per_block);
    if (rows_aligned(p))
        layernorm_kernel<G, 4><<<blocks, threads>>>(p->x, p->y, p->mean, p->rstd, p->gamma,
                                                    p->beta, p->eps, (unsigned int)p->rows,
                                                    (unsigned int)p->cols);
    else
        layernorm_kernel<G, 1><<<blocks, threads>>>(p->x, p->y, p->mean, p->rstd, p->gamma,
                                                    p->beta, p->eps, (unsigned int)p->rows,
                                                    (unsigned int)p->cols);
    CHECK_LAUNCH();
}

void row_forward(const struct row_problem *p)
{
    switch (group_size(p->rows, p->cols)) {
    case 32: launch<32>(p); break;
    case 64: launch<64>(p); break;
    case 128: launch<128>(p); break;
    case 256: launch<256>(p); break;
    case 512: launch<512>(p); break;
    default: launch<1024>(p); break;
    }
}

const enum row_op step_op = ROW_LAYERNORM;
