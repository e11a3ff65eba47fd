// Wide rows: a thread block cluster shares each row (Hopper and newer).
//
// Change: a row wider than CLUSTER_GROUP x MAX_PER_THREAD = 16384 floats is
//         split over a cluster of C = 2, 4 or 8 blocks of CLUSTER_GROUP
//         threads, each holding its piece in registers as in step 6. Each
//         block adds its piece; the blocks of a cluster can read each other's
//         shared memory (distributed shared memory), so each reads all C
//         totals, in rank order, after cluster.sync(). GPUs before compute
//         capability 9.0 have no clusters and keep step 6's way.
// Why it helps: in step 6 a row of 32768 floats takes 1024 threads of 56
//         registers, the whole register file of an SM: one row at a time,
//         nothing to hide the latency of its two reductions. Blocks of 512
//         threads leave room for two per SM, and 256 rows of 65536 floats
//         become 1024 blocks instead of 256 rows on 132 SMs.
// Effect: faster than step 6 on rows wider than 16384 floats (rows/README.md).
#include <cooperative_groups.h>

#include "check.h"
#include "rows.h"

namespace cg = cooperative_groups;

#define BLOCK_SIZE 256   // threads per block when G <= 256 (then 256 / G rows per block)
#define UNROLL 4         // independent loads in flight per thread
#define WARPS_PER_SM 32  // enough rows' loads in flight (half the 64 warps an SM holds)
#define MAX_GROUP 1024   // the most threads a block can have
#define MAX_PER_THREAD 32 // floats of its row a thread keeps in registers
#define CLUSTER_GROUP 512 // threads of each block of a cluster: two blocks fit an SM
#define MAX_CLUSTER 8    // the most blocks a cluster may have without opting in
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

// A row's total: its group's, and with C > 1 its cluster's. Each block
// leaves its group's total in its own shared memory (slot), and, after the
// cluster's barrier, reads the C totals in rank order, the same in every
// block. Each sum has its own slot: a block may still read the first while
// another writes the second.
template <unsigned int G, unsigned int C>
__device__ float row_allreduce(float sum, float *s_warp, float *slot)
{
    sum = group_allreduce<G>(sum, s_warp);
    if constexpr (C > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        cg::cluster_group cluster = cg::this_cluster();
        if (threadIdx.x == 0)
            *slot = sum;
        cluster.sync();
        sum = 0.0f;
        for (unsigned int r = 0; r < C; r++)
            sum += *cluster.map_shared_rank(slot, r);
#else
        __trap();   // row_forward never launches a cluster before compute capability 9.0
#endif
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

// Every block has max(G, BLOCK_SIZE) threads: telling the compiler lets it
// budget registers so that such a block always fits an SM, and two blocks
// of a cluster. With C > 1, the C consecutive blocks of a cluster hold one
// row: block b of the cluster its packs [b SLOTS G, (b + 1) SLOTS G).
template <unsigned int G, unsigned int PACK, unsigned int C>
__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G, C > 1 ? 2 : 1)
layernorm_registers_kernel(const float *g_x, float *g_y, float *g_mean,
                                           float *g_rstd, const float *g_gamma,
                                           const float *g_beta, float eps, unsigned int rows,
                                           unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one sum per warp of the block
    __shared__ float s_slot[2];                       // the block's totals, for its cluster
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    constexpr unsigned int SLOTS = MAX_PER_THREAD / PACK;   // packs per thread
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x / C * ROWS_PER_BLOCK + threadIdx.x / G;
    unsigned int first = blockIdx.x % C * SLOTS * G;   // this block's first pack of the row
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce need every thread of the block.
    unsigned int all = (row < rows) ? cols / PACK : 0;   // PACK divides cols
    unsigned int packs = all > first ? all - first : 0;  // from this block's first on
    // This thread's first pack; slot k is k G packs further, a constant
    // offset once the loops are unrolled (no address arithmetic per slot).
    const float *x = g_x + (size_t)row * cols + (first + t) * PACK;
    float *y = g_y + (size_t)row * cols + (first + t) * PACK;
    const float *gamma_t = g_gamma + (first + t) * PACK, *beta_t = g_beta + (first + t) * PACK;
    float v[SLOTS][PACK];   // constant indices only, after unrolling: registers

    // The one read: pack t + k G of the row into slot k; slots past the
    // row's end hold 0, which adds nothing to the sum.
    float sum = 0.0f;
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++) {
        if (t + k * G < packs)
            load_pack<PACK>(x, k * G, v[k]);
        else
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = 0.0f;
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        for (unsigned int j = 0; j < PACK; j++)
            sum += v[k][j];
    float mean = row_allreduce<G, C>(sum, s_warp, &s_slot[0]) / cols;

    // The variance, two-pass, from the registers (empty slots left out).
    sum = 0.0f;
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs)
            for (unsigned int j = 0; j < PACK; j++)
                sum += (v[k][j] - mean) * (v[k][j] - mean);
    float var = row_allreduce<G, C>(sum, s_warp, &s_slot[1]) / cols;
    float rstd = rsqrtf(var + eps);

#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs) {
            float gamma[PACK], beta[PACK];
            load_pack<PACK>(gamma_t, k * G, gamma);
            load_pack<PACK>(beta_t, k * G, beta);
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = (v[k][j] - mean) * rstd * gamma[j] + beta[j];
            store_pack<PACK>(y, k * G, v[k]);
        }
    if (t == 0 && first == 0 && row < rows) {
        g_mean[row] = mean;
        g_rstd[row] = rstd;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (C > 1)
        cg::this_cluster().sync();   // no block leaves while others may read its slots
#endif
}

// 16-byte loads and stores need every row, gamma and beta on a 16-byte boundary.
static bool rows_aligned(const struct row_problem *p)
{
    return (size_t)p->x % 16 == 0 && (size_t)p->y % 16 == 0 && (size_t)p->gamma % 16 == 0 &&
           (size_t)p->beta % 16 == 0 && p->cols % 4 == 0;
}

// The smallest G that gives every SM WARPS_PER_SM warps, but no more
// threads than a row has float4s; and at least cols / MAX_PER_THREAD, so
// that the row fits the group's registers.
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
    while (g < MAX_GROUP && g * MAX_PER_THREAD < cols)
        g *= 2;
    return g;
}

template <unsigned int G>
static void launch(const struct row_problem *p)
{
    unsigned int threads = G < BLOCK_SIZE ? BLOCK_SIZE : G;
    unsigned int rows_per_block = threads / G;
    unsigned int blocks = (unsigned int)((p->rows + rows_per_block - 1) / rows_per_block);
    bool fits = p->cols <= (size_t)G * MAX_PER_THREAD;   // else three passes, as in step 5
    auto kernel = rows_aligned(p) ? (fits ? layernorm_registers_kernel<G, 4, 1> : layernorm_kernel<G, 4>)
                                  : (fits ? layernorm_registers_kernel<G, 1, 1> : layernorm_kernel<G, 1>);
    kernel<<<blocks, threads>>>(p->x, p->y, p->mean, p->rstd, p->gamma, p->beta, p->eps,
                                (unsigned int)p->rows, (unsigned int)p->cols);
    CHECK_LAUNCH();
}

// A cluster of C blocks per row, each C-th of the row in CLUSTER_GROUP
// threads' registers; the launch attribute makes every C consecutive blocks
// one cluster, resident at once on neighbouring SMs.
template <unsigned int C>
static void launch_cluster(const struct row_problem *p)
{
    auto kernel = rows_aligned(p) ? layernorm_registers_kernel<CLUSTER_GROUP, 4, C>
                                  : layernorm_registers_kernel<CLUSTER_GROUP, 1, C>;
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = C;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((unsigned int)p->rows * C);
    config.blockDim = dim3(CLUSTER_GROUP);
    config.attrs = &cluster;
    config.numAttrs = 1;
    CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, p->x, p->y, p->mean, p->rstd, p->gamma,
                                  p->beta, p->eps, (unsigned int)p->rows, (unsigned int)p->cols));
    CHECK_LAUNCH();
}

// The blocks per row: 1 for rows that fit one block as in step 6, else the
// fewest (2, 4 or 8) whose registers hold the row; 0 where there are no
// clusters (before compute capability 9.0) or the row is wider than 8 blocks hold.
static unsigned int cluster_size(size_t cols)
{
    static int clusters = -1;
    if (clusters < 0) {
        int device;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, device));
    }
    size_t per_block = (size_t)CLUSTER_GROUP * MAX_PER_THREAD;
    if (cols <= per_block)
        return 1;
    if (!clusters)
        return 0;
    for (unsigned int c = 2; c <= MAX_CLUSTER; c *= 2)
        if (cols <= c * per_block)
            return c;
    return 0;
}

void row_forward(const struct row_problem *p)
{
    switch (cluster_size(p->cols)) {
    case 2: launch_cluster<2>(p); return;
    case 4: launch_cluster<4>(p); return;
    case 8: launch_cluster<8>(p); return;
    default: break;   // one block per row, as in step 6
    }
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
