// bfloat16 cluster LayerNorm: step 17's cluster LayerNorm on bfloat16 rows.
//
// Change: x, y, gamma and beta are bfloat16, as in step 14: 16-byte loads
//         bring 8 of them, widened to float in registers, and each output is
//         rounded once as it is stored. A row wider than one 1024-thread
//         block holds on chip is the group of a cluster, as in step 17, here
//         of 8 blocks: each block sums its share, the sums meet in
//         distributed shared memory (the mean), then the sums of squares
//         around it (the variance). Everything past the loads and stores
//         stays float, shared memory included.
// Why it helps: widened to float, a bfloat16 row takes the registers and
//         shared memory of a float row, so past about 90000 elements step 14 read
//         each row three times; 8 blocks hold 524288 on chip.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <type_traits>

#include "check.h"
#include "rows.h"

namespace cg = cooperative_groups;

#define BLOCK_SIZE 256   // threads per block when G <= 256, and per block of a cluster
#define UNROLL 4         // independent loads in flight per thread
#define WARPS_PER_SM 32  // enough rows' loads in flight (half the 64 warps an SM holds)
#define MAX_GROUP 1024   // the most threads a block can have (the group without clusters)
#define MAX_CLUSTER 8    // blocks per cluster: the portable size. Clusters of 16 blocks of
                         // bfloat16 shares measured slower at 128256 and 151936 wide
#define MIN_BLOCKS 4     // blocks of a cluster kernel that fit an SM (registers: 64 a thread)
#define MAX_PER_THREAD 32 // floats of its row a thread keeps in registers
#define REST_UNROLL 2    // packs in flight per thread while filling shared memory
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

// The blocks of a cluster, a sum each -> the row's sum in every thread of
// every block. Each block's sum goes to its own slot of s_cluster (one slot
// per exchange, never written twice); after the cluster barrier lane r of
// every warp reads block r's (distributed shared memory), so every block
// adds the same values in the same order.
template <unsigned int CLUSTER>
__device__ float cluster_allreduce(float sum, float *s_slot)
{
    static_assert(CLUSTER <= WARP_SIZE, "one lane a block: a cluster of at most 32");
#if __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0)
        *s_slot = sum;
    cluster.sync();   // every block's sum is in place, and visible to all
    unsigned int lane = threadIdx.x % WARP_SIZE;
    return warp_allreduce(lane < CLUSTER ? *cluster.map_shared_rank(s_slot, (int)lane) : 0.0f);
#else
    __trap();   // the host launches clusters on sm_90 and later only
    return sum;
#endif
}

// A row, split where PACK-float loads can start: head floats before the
// first 16-byte boundary, packs whole packs, tail floats after them. With
// PACK = 1 every float is a pack.
struct RowSplit {
    unsigned int head, packs, tail;
};

template <unsigned int PACK>
__device__ RowSplit split_row(const __nv_bfloat16 *x, unsigned int cols)
{
    unsigned int head = (unsigned int)((PACK - (size_t)x / sizeof(__nv_bfloat16) % PACK) % PACK);
    head = min(head, cols);
    return {head, (cols - head) / PACK, (cols - head) % PACK};
}

// PACK consecutive bfloat16s from pack i, in one load instruction (16
// bytes for PACK = 8), widened to float: exact, bfloat16 is a cut float.
template <unsigned int PACK>
__device__ void load_pack(const __nv_bfloat16 *p, unsigned int i, float (&v)[PACK])
{
    if constexpr (PACK == 8) {
        uint4 u = reinterpret_cast<const uint4 *>(p)[i];
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
        for (unsigned int j = 0; j < 4; j++) {
            float2 f = __bfloat1622float2(h[j]);
            v[2 * j] = f.x; v[2 * j + 1] = f.y;
        }
    } else {
        v[0] = __bfloat162float(p[i]);
    }
}

// The one rounding of each output: to nearest, ties to even.
template <unsigned int PACK>
__device__ void store_pack(__nv_bfloat16 *p, unsigned int i, const float (&v)[PACK])
{
    if constexpr (PACK == 8) {
        uint4 u;
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
        for (unsigned int j = 0; j < 4; j++)
            h[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
        reinterpret_cast<uint4 *>(p)[i] = u;
    } else {
        p[i] = __float2bfloat16_rn(v[0]);
    }
}

// Shared memory keeps the widened floats: PACK floats
// from pack i, as float4s.
template <unsigned int PACK>
__device__ void load_pack(const float *p, unsigned int i, float (&v)[PACK])
{
    if constexpr (PACK % 4 == 0) {
        for (unsigned int j = 0; j < PACK; j += 4) {
            float4 f = reinterpret_cast<const float4 *>(p + i * PACK)[j / 4];
            v[j] = f.x; v[j + 1] = f.y; v[j + 2] = f.z; v[j + 3] = f.w;
        }
    } else {
        v[0] = p[i];
    }
}

template <unsigned int PACK>
__device__ void store_pack(float *p, unsigned int i, const float (&v)[PACK])
{
    if constexpr (PACK % 4 == 0) {
        for (unsigned int j = 0; j < PACK; j += 4)
            reinterpret_cast<float4 *>(p + i * PACK)[j / 4] =
                make_float4(v[j], v[j + 1], v[j + 2], v[j + 3]);
    } else {
        p[i] = v[0];
    }
}

// gamma or beta as a row's body sees it: the body's first column, and how
// many elements that lies past a 16-byte boundary. At odd widths the shift
// changes from row to row; it is the same for every thread of a row.
struct Params {
    const __nv_bfloat16 *body;
    unsigned int shift;
};

template <unsigned int PACK, bool SPLIT>
__device__ Params params_at(const __nv_bfloat16 *p, unsigned int head)
{
    return {p + head,
            SPLIT ? (unsigned int)((size_t)(p + head) / sizeof(__nv_bfloat16) % PACK) : 0};
}

// N bfloat16s from a, as floats into v[J] on: one load of 2 N bytes.
template <unsigned int N, unsigned int J, unsigned int PACK>
__device__ void load_piece(const __nv_bfloat16 *a, float (&v)[PACK])
{
    if constexpr (N == 1) {
        v[J] = __bfloat162float(a[J]);
    } else {
        using Word = typename std::conditional<N == 8, uint4,
                     typename std::conditional<N == 4, uint2, unsigned int>::type>::type;
        Word u = *reinterpret_cast<const Word *>(a + J);
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
        for (unsigned int k = 0; k < N / 2; k++) {
            float2 f = __bfloat1622float2(h[k]);
            v[J + 2 * k] = f.x; v[J + 2 * k + 1] = f.y;
        }
    }
}

// Elements J .. PACK - 1 of the pack at a, whose first element lies POS
// elements past a 16-byte boundary: each load is the widest its address
// allows (16, 8, 4 or 2 bytes), and none reaches outside the pack.
template <unsigned int PACK, unsigned int POS, unsigned int J = 0>
__device__ void load_pieces(const __nv_bfloat16 *a, float (&v)[PACK])
{
    if constexpr (J < PACK) {
        constexpr unsigned int at = (POS + J) % 8;   // element J's place in its 16 bytes
        constexpr unsigned int n = (at == 0 && J + 8 <= PACK) ? 8
                                 : (at % 4 == 0 && J + 4 <= PACK) ? 4
                                 : (at % 2 == 0 && J + 2 <= PACK) ? 2 : 1;
        load_piece<n, J>(a, v);
        load_pieces<PACK, POS, J + n>(a, v);
    }
}

// gamma or beta for pack i of the body. Where the row's head shifts it off
// gamma's 16-byte boundaries, the pack is read in the widest pieces its
// shift allows: 2 to 4 loads instead of 1. They hit in L1 (every row reads
// the same gamma). Loading the two aligned packs around the pack and cutting
// it out in registers measured slower: more registers, fewer warps per SM
// (8 one-element loads too). The shift is the same in the whole group:
// a branch, not divergence.
template <unsigned int PACK, bool SPLIT>
__device__ void load_params(const Params &q, unsigned int i, float (&v)[PACK])
{
    const __nv_bfloat16 *a = q.body + i * PACK;
    if constexpr (!SPLIT || PACK == 1) {
        load_pack<PACK>(q.body, i, v);
    } else {
        switch (q.shift) {
        case 0: load_pieces<PACK, 0>(a, v); break;
        case 1: load_pieces<PACK, 1>(a, v); break;
        case 2: load_pieces<PACK, 2>(a, v); break;
        case 3: load_pieces<PACK, 3>(a, v); break;
        case 4: load_pieces<PACK, 4>(a, v); break;
        case 5: load_pieces<PACK, 5>(a, v); break;
        case 6: load_pieces<PACK, 6>(a, v); break;
        default: load_pieces<PACK, 7>(a, v); break;
        }
    }
}

template <unsigned int G, unsigned int PACK, bool SPLIT>
__global__ void layernorm_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, float *g_mean,
                                 float *g_rstd, const __nv_bfloat16 *g_gamma,
                                 const __nv_bfloat16 *g_beta, float eps,
                                 unsigned int rows, unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one sum per warp of the block
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / G;
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce need every thread of the block.
    const __nv_bfloat16 *x_row = g_x + (size_t)row * cols;
    __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
    RowSplit split = (SPLIT && row < rows) ? split_row<PACK>(x_row, cols)
                                           : RowSplit{0, (row < rows) ? cols / PACK : 0, 0};
    unsigned int packs = split.packs;
    const __nv_bfloat16 *x = x_row + split.head;   // on a 16-byte boundary when PACK = 8
    __nv_bfloat16 *y = y_row + split.head;
    Params gamma_q = params_at<PACK, SPLIT>(g_gamma, split.head);
    Params beta_q = params_at<PACK, SPLIT>(g_beta, split.head);
    float v[PACK];
    // Head element t and tail element t, if this thread has them (t < PACK - 1).
    float e_head = (t < split.head) ? __bfloat162float(x_row[t]) : 0.0f;
    float e_tail = (t < split.tail) ? __bfloat162float(x_row[cols - split.tail + t]) : 0.0f;

    // Pass 1: the mean.
    float sum = e_head + e_tail;
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
    if (t < split.head)
        sum += (e_head - mean) * (e_head - mean);
    if (t < split.tail)
        sum += (e_tail - mean) * (e_tail - mean);
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
        load_params<PACK, SPLIT>(gamma_q, i, gamma);
        load_params<PACK, SPLIT>(beta_q, i, beta);
        for (unsigned int j = 0; j < PACK; j++)
            v[j] = (v[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<PACK>(y, i, v);
    }
    if (t < split.head)
        y_row[t] = __float2bfloat16_rn((e_head - mean) * rstd * __bfloat162float(g_gamma[t]) +
                                       __bfloat162float(g_beta[t]));
    if (t < split.tail) {
        unsigned int c = cols - split.tail + t;
        y_row[c] = __float2bfloat16_rn((e_tail - mean) * rstd * __bfloat162float(g_gamma[c]) +
                                       __bfloat162float(g_beta[c]));
    }
    if (t == 0 && row < rows) {
        g_mean[row] = mean;
        g_rstd[row] = rstd;
    }
}

// Where a thread's pack i + k G = t + j G of the row past the registers
// waits in its block's shared memory: at j SHARE + b, after the j SHARE
// packs of the block's earlier rounds. In a one-block group (SHARE = G,
// b = t) that is i + k G, written so that step 14's kernels compile as they did.
template <unsigned int G, unsigned int CLUSTER>
__device__ unsigned int rest_slot(unsigned int i, unsigned int k, unsigned int b)
{
    return CLUSTER == 1 ? i + k * G : (i / G + k) * (G / CLUSTER) + b;
}

// Every block has max(G / CLUSTER, BLOCK_SIZE) threads: telling the
// compiler lets it budget registers so that such a block always fits an SM,
// and MIN_BLOCKS of a cluster's blocks share one (0: no minimum asked, as
// before clusters; an explicit 1 changes the compiler's register budget).
template <unsigned int G, unsigned int CLUSTER, unsigned int PACK, bool SPLIT>
__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G / CLUSTER, CLUSTER > 1 ? MIN_BLOCKS : 0)
layernorm_registers_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, float *g_mean,
                                           float *g_rstd, const __nv_bfloat16 *g_gamma,
                                           const __nv_bfloat16 *g_beta, float eps, unsigned int rows,
                                           unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one sum per warp of the block
    __shared__ float s_cluster[2];   // this block's sums, for the other blocks: x, then squares
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    constexpr unsigned int SLOTS = MAX_PER_THREAD / PACK;   // packs per thread
    constexpr unsigned int SHARE = G / CLUSTER;   // threads of the group in each block
    // A cluster is CLUSTER consecutive blocks; this one's rank says which
    // SHARE threads of the row's group it holds.
    unsigned int rank = blockIdx.x % CLUSTER;
    unsigned int b = threadIdx.x % G;   // this thread's place in its block's share
    unsigned int t = rank * SHARE + b;   // its place in its row's group
    unsigned int row = blockIdx.x / CLUSTER * ROWS_PER_BLOCK + threadIdx.x / G;
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce need every thread of the block.
    const __nv_bfloat16 *x_row = g_x + (size_t)row * cols;
    __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
    RowSplit split = (SPLIT && row < rows) ? split_row<PACK>(x_row, cols)
                                           : RowSplit{0, (row < rows) ? cols / PACK : 0, 0};
    unsigned int packs = split.packs;
    // This thread's first pack; slot k is k G packs further, a constant
    // offset once the loops are unrolled (no address arithmetic per slot).
    const __nv_bfloat16 *x = x_row + split.head + t * PACK;
    __nv_bfloat16 *y = y_row + split.head + t * PACK;
    Params gamma_q = params_at<PACK, SPLIT>(g_gamma, split.head);
    Params beta_q = params_at<PACK, SPLIT>(g_beta, split.head);
    // Head element t and tail element t, if this thread has them (t < PACK - 1).
    float e_head = (t < split.head) ? __bfloat162float(x_row[t]) : 0.0f;
    float e_tail = (t < split.tail) ? __bfloat162float(x_row[cols - split.tail + t]) : 0.0f;
    float v[SLOTS][PACK];   // constant indices only, after unrolling: registers
    // Packs past the registers' SLOTS x G: this thread's are i = t, t + G, ...
    // Only the widest group has any (a narrower one would have grown): a
    // block of MAX_GROUP threads, or a cluster, which takes only rows wider
    // than such a block holds. Each block keeps its own threads' packs:
    // pack i = t + j G at rest_slot(), j SHARE + b of its shared memory.
    constexpr bool WIDEST = CLUSTER > 1 || G == MAX_GROUP;
    extern __shared__ float s_rest[];
    unsigned int rest = (WIDEST && packs > SLOTS * G) ? packs - SLOTS * G : 0;
    const __nv_bfloat16 *x_rest = x_row + split.head + SLOTS * G * PACK;

    // The one read: pack t + k G of the row into slot k; slots past the
    // row's end hold 0, which adds nothing to the sum.
    float sum = e_head + e_tail;
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++) {
        if (t + k * G < packs)
            load_pack<PACK>(x, k * G, v[k]);
        else
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = 0.0f;
    }
    for (unsigned int i = t; i < rest; i += REST_UNROLL * G) {
        float r[REST_UNROLL][PACK];
#pragma unroll
        for (unsigned int k = 0; k < REST_UNROLL; k++)
            if (i + k * G < rest)
                load_pack<PACK>(x_rest, i + k * G, r[k]);
#pragma unroll
        for (unsigned int k = 0; k < REST_UNROLL; k++)
            if (i + k * G < rest) {
                store_pack<PACK>(s_rest, rest_slot<G, CLUSTER>(i, k, b), r[k]);
                for (unsigned int j = 0; j < PACK; j++)
                    sum += r[k][j];
            }
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        for (unsigned int j = 0; j < PACK; j++)
            sum += v[k][j];
    sum = group_allreduce<SHARE>(sum, s_warp);   // of this block's share
    if constexpr (CLUSTER > 1)
        sum = cluster_allreduce<CLUSTER>(sum, &s_cluster[0]);   // of the row
    float mean = sum / cols;

    // The variance, two-pass, from the registers (empty slots left out).
    sum = 0.0f;
    if (t < split.head)
        sum += (e_head - mean) * (e_head - mean);
    if (t < split.tail)
        sum += (e_tail - mean) * (e_tail - mean);
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs)
            for (unsigned int j = 0; j < PACK; j++)
                sum += (v[k][j] - mean) * (v[k][j] - mean);
    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK];
        load_pack<PACK>(s_rest, rest_slot<G, CLUSTER>(i, 0, b), r);
        for (unsigned int j = 0; j < PACK; j++)
            sum += (r[j] - mean) * (r[j] - mean);
    }
    sum = group_allreduce<SHARE>(sum, s_warp);   // of this block's share
    if constexpr (CLUSTER > 1)
        sum = cluster_allreduce<CLUSTER>(sum, &s_cluster[1]);   // of the row
    float var = sum / cols;
    float rstd = rsqrtf(var + eps);
#if __CUDA_ARCH__ >= 900
    // The other blocks may still be reading this block's s_cluster: it must
    // not exit before they are done. Say so now, wait at the very end.
    if constexpr (CLUSTER > 1)
        cg::this_cluster().barrier_arrive();
#endif

    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK], gamma[PACK], beta[PACK];
        unsigned int c = SLOTS * G + i;   // the pack's place in the row's body
        load_pack<PACK>(s_rest, rest_slot<G, CLUSTER>(i, 0, b), r);
        load_params<PACK, SPLIT>(gamma_q, c, gamma);
        load_params<PACK, SPLIT>(beta_q, c, beta);
        for (unsigned int j = 0; j < PACK; j++)
            r[j] = (r[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<PACK>(y_row + split.head, c, r);
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs) {
            float gamma[PACK], beta[PACK];
            load_params<PACK, SPLIT>(gamma_q, t + k * G, gamma);
            load_params<PACK, SPLIT>(beta_q, t + k * G, beta);
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = (v[k][j] - mean) * rstd * gamma[j] + beta[j];
            store_pack<PACK>(y, k * G, v[k]);
        }
    if (t < split.head)
        y_row[t] = __float2bfloat16_rn((e_head - mean) * rstd * __bfloat162float(g_gamma[t]) +
                                       __bfloat162float(g_beta[t]));
    if (t < split.tail) {
        unsigned int c = cols - split.tail + t;
        y_row[c] = __float2bfloat16_rn((e_tail - mean) * rstd * __bfloat162float(g_gamma[c]) +
                                       __bfloat162float(g_beta[c]));
    }
    if (t == 0 && row < rows) {
        g_mean[row] = mean;
        g_rstd[row] = rstd;
    }
#if __CUDA_ARCH__ >= 900
    if constexpr (CLUSTER > 1)
        cg::this_cluster().barrier_wait();
#endif
}

// 16-byte loads and stores need each row's body on a 16-byte boundary in x
// and in y: when x and y are a multiple of 16 bytes apart, every row starts
// as far from a boundary in one as in the other, whatever its width.
static bool rows_aligned(const struct row_problem *p)
{
    return ((size_t)p->x_bf16 - (size_t)p->y_bf16) % 16 == 0;
}

// No head, no tail and no shift in any row: x, gamma and beta on 16-byte
// boundaries and a width of whole packs of 8. Such launches take a kernel
// without the split's code, which every warp would otherwise issue.
static bool rows_split(const struct row_problem *p)
{
    return (size_t)p->x_bf16 % 16 != 0 || (size_t)p->gamma_bf16 % 16 != 0 ||
           (size_t)p->beta_bf16 % 16 != 0 || p->cols % 8 != 0;
}

// One attribute of the current device.
static int device_attribute(enum cudaDeviceAttr attr)
{
    int device, value;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&value, attr, device));
    return value;
}

// The smallest G that gives every SM WARPS_PER_SM warps, but no more
// threads than a row has packs of 8; and at least cols / MAX_PER_THREAD, so
// that the row fits the group's registers.
static unsigned int group_size(size_t rows, size_t cols)
{
    static int sms = 0;
    if (sms == 0)
        sms = device_attribute(cudaDevAttrMultiProcessorCount);
    unsigned int g = WARP_SIZE;
    while (g < MAX_GROUP && rows * (g / WARP_SIZE) < (size_t)sms * WARPS_PER_SM &&
           2 * g * 8 <= cols)
        g *= 2;
    while (g < MAX_GROUP && g * MAX_PER_THREAD < cols)
        g *= 2;
    return g;
}

// The most dynamic shared memory a block may ask for: the opt-in limit (past
// the 48 KB any block gets), less what the kernel's own arrays take (s_warp, s_cluster).
static size_t shared_limit(void)
{
    static size_t bytes = 0;
    if (bytes == 0) {
        cudaFuncAttributes own;
        CHECK_CUDA(cudaFuncGetAttributes(&own, layernorm_registers_kernel<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER, 8, true>));
        bytes = (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) - own.sharedSizeBytes;
    }
    return bytes;
}

// Whether the device runs clusters of CLUSTER blocks of the cluster kernel
// with all their shared memory: cudaOccupancyMaxActiveClusters says how
// many fit the GPU at once, or refuses the size outright.
template <unsigned int CLUSTER>
static bool cluster_runs(void)
{
    auto kernel = layernorm_registers_kernel<BLOCK_SIZE * CLUSTER, CLUSTER, 8, true>;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = CLUSTER;
    cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
    config.gridDim = dim3(CLUSTER);
    config.blockDim = dim3(BLOCK_SIZE);
    config.dynamicSmemBytes = shared_limit();
    config.attrs = &cluster;
    config.numAttrs = 1;
    int clusters = 0;
    if ((CLUSTER > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                             1) != cudaSuccess) ||
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)shared_limit()) != cudaSuccess ||
        cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
        (void)cudaGetLastError();   // taken: it must not fail a later check
        clusters = 0;
    }
    return clusters > 0;
}

// Blocks per cluster: MAX_CLUSTER where the device runs that many, else the
// portable 8 where it runs those; 1 before sm_90, and 1 where the kernels
// hold no sm_90 code (make ARCH=sm_80 on a Hopper GPU runs compute_80 code).
static unsigned int cluster_size(void)
{
    static unsigned int size = 0;
    if (size == 0) {
        size = 1;
        cudaFuncAttributes built;
        CHECK_CUDA(cudaFuncGetAttributes(&built, layernorm_registers_kernel<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER, 8, true>));
        if (device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9 && built.ptxVersion >= 90)
            size = cluster_runs<MAX_CLUSTER>() ? MAX_CLUSTER : cluster_runs<8>() ? 8 : 1;
        if (size == 1)
            fprintf(stderr, "rows/step18: no thread-block clusters here: step 14's one-block "
                            "groups\n");
    }
    return size;
}

// The widest row a group of g threads in clusters of `cluster` blocks holds
// on chip: g x MAX_PER_THREAD elements in registers, then whole packs of
// 8 a thread in each block's shared memory (as floats).
static size_t on_chip(size_t g, size_t cluster)
{
    size_t packs = shared_limit() / (g / cluster * 8 * sizeof(float));   // per thread
    return g * MAX_PER_THREAD + packs * 8 * g;
}

// The shared memory each block of a group of g threads in clusters of
// `cluster` blocks needs for the elements past the registers: whole packs of
// 8 per thread, each block holding its own threads' packs.
static size_t rest_bytes(size_t cols, unsigned int g, unsigned int cluster)
{
    size_t in_registers = (size_t)g * MAX_PER_THREAD;
    if (cols <= in_registers)
        return 0;
    size_t per_thread = (cols - in_registers + (size_t)g * 8 - 1) / ((size_t)g * 8);   // packs
    return per_thread * (g / cluster) * 8 * sizeof(float);
}

// The widths where the kernel changes, for the grader to check both sides
// of each: past G x MAX_PER_THREAD elements the group doubles, past MAX_GROUP x
// MAX_PER_THREAD the rest of the row waits in shared memory, past what one
// block holds a cluster takes the row (its registers, then its blocks'
// shared memory), and past what that holds the row is read again.
int row_path_widths(size_t *widths, int max)
{
    int count = 0;
    for (size_t g = WARP_SIZE; g <= MAX_GROUP && count < max; g *= 2)
        widths[count++] = g * MAX_PER_THREAD + 1;
    if (count < max)
        widths[count++] = on_chip(MAX_GROUP, 1) + 1;
    size_t c = cluster_size();
    if (c > 1 && BLOCK_SIZE * c * MAX_PER_THREAD > on_chip(MAX_GROUP, 1) && count < max)
        widths[count++] = BLOCK_SIZE * c * MAX_PER_THREAD + 1;
    if (c > 1 && count < max)
        widths[count++] = on_chip(BLOCK_SIZE * c, c) + 1;
    return count;
}

// A launch in clusters of `cluster` blocks (a plain launch when it is 1).
template <typename Kernel>
static void launch_kernel(Kernel kernel, unsigned int cluster, unsigned int blocks,
                          unsigned int threads, size_t shared, const struct row_problem *p)
{
    if (shared > 0)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)shared));
    if (cluster > 8)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = shared;
    config.attrs = &attribute;
    config.numAttrs = cluster > 1 ? 1 : 0;
    CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, static_cast<const __nv_bfloat16 *>(p->x_bf16),
                                  static_cast<__nv_bfloat16 *>(p->y_bf16), p->mean, p->rstd,
                                  static_cast<const __nv_bfloat16 *>(p->gamma_bf16),
                                  static_cast<const __nv_bfloat16 *>(p->beta_bf16), p->eps,
                                  (unsigned int)p->rows, (unsigned int)p->cols));
}

template <unsigned int G, unsigned int CLUSTER>
static void launch(const struct row_problem *p)
{
    unsigned int threads = G < BLOCK_SIZE ? BLOCK_SIZE : G / CLUSTER;
    unsigned int rows_per_block = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    unsigned int blocks = (unsigned int)((p->rows + rows_per_block - 1) / rows_per_block) * CLUSTER;
    size_t shared = rest_bytes(p->cols, G, CLUSTER);
    bool fits = shared <= shared_limit();   // else three passes, as in step 5
    if (fits) {
        auto kernel = !rows_aligned(p) ? layernorm_registers_kernel<G, CLUSTER, 1, false>
                    : rows_split(p) ? layernorm_registers_kernel<G, CLUSTER, 8, true>
                                    : layernorm_registers_kernel<G, CLUSTER, 8, false>;
        launch_kernel(kernel, CLUSTER, blocks, threads, shared, p);
    } else {   // each row one block of MAX_GROUP threads
        auto kernel = !rows_aligned(p) ? layernorm_kernel<MAX_GROUP, 1, false>
                    : rows_split(p) ? layernorm_kernel<MAX_GROUP, 8, true>
                                    : layernorm_kernel<MAX_GROUP, 8, false>;
        launch_kernel(kernel, 1, (unsigned int)p->rows, MAX_GROUP, 0, p);
    }
}

void row_forward(const struct row_problem *p)
{
    // A row wider than one block holds on chip: a cluster of cluster_size()
    // blocks of BLOCK_SIZE threads takes it, as one group (its registers,
    // then its blocks' shared memory). Narrower rows keep step 14's
    // one-block groups: there a cluster's two exchanges measured no faster.
    if (cluster_size() > 1 && p->cols > on_chip(MAX_GROUP, 1)) {
        if (MAX_CLUSTER > 8 && cluster_size() == MAX_CLUSTER)
            launch<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER>(p);
        else
            launch<BLOCK_SIZE * 8, 8>(p);
        return;
    }
    switch (group_size(p->rows, p->cols)) {
    case 32: launch<32, 1>(p); break;
    case 64: launch<64, 1>(p); break;
    case 128: launch<128, 1>(p); break;
    case 256: launch<256, 1>(p); break;
    case 512: launch<512, 1>(p); break;
    default: launch<1024, 1>(p); break;
    }
}

const enum row_op step_op = ROW_LAYERNORM;
const enum row_dtype step_dtype = ROW_BF16;
