// Pushed pairs: each warp's pair is stored into every block on an mbarrier, not met at a barrier.
//
// Change: in the bulk kernel, lane r of each warp stores the warp's pair
//         into block r's shared memory with st.async, which counts its 8
//         bytes on that block's second mbarrier. A block waits until its
//         own pairs have landed and combines them in slot order, as every
//         other block does; the cluster barrier that step 24's pairs met at,
//         and the one before exit, are gone, but for one split barrier that
//         makes every block's mbarrier ready before the first push.
// Why it helps: a block still needs every warp's pair, but they come to
//         it as stores that travel while their senders go on: no cluster
//         barrier to arrive at together, no reads from other blocks' shared
//         memory, and no wait at exit for the others to finish reading.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
// Started from step24_bf16_narrow by make new: make diff STEP=rows/26 shows the change against it.
#include <cuda_bf16.h>
#include <cooperative_groups.h>

#include "check.h"
#include "rows.h"

namespace cg = cooperative_groups;

#define BLOCK_SIZE 256   // threads per block: G / 256 blocks per row when G > 256
#define UNROLL 4         // independent loads in flight per thread
#define WARPS_PER_SM 32  // enough rows' loads in flight (half the 64 warps an SM holds)
#define MAX_GROUP 1024   // the most threads a block can have (the group without clusters)
#define MIN_GROUP 8      // the fewest threads a row: its head and tail (up to 7 elements
                         // each) take a thread an element
#define MAX_CLUSTER 8    // blocks per cluster at most: the portable size. A bfloat16
                         // share is half the bytes, and 16 blocks of it waited at the
                         // barrier more than they loaded (step 16's README)
#define MIN_BLOCKS 4     // blocks of a cluster kernel that fit an SM (registers: 64 a thread)
#define MAX_PER_THREAD 32 // floats of its row a thread keeps in registers
#define REST_UNROLL 2    // packs in flight per thread while filling shared memory
#define SHARE_BYTES (64 * 1024) // a bulk block's share at most: three such blocks fit an SM
#define CHUNK (16 * 1024)  // bytes per bulk copy instruction
#define WARPS_PER_BLOCK (BLOCK_SIZE / WARP_SIZE)
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle

// The two ways softmax combines a row's values: the max and the sum.
struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };

// exp(x - max) where max can be -inf: a row of masked scores (all -inf, as
// attention masks them) has no finite max, and exp(-inf - -inf) = exp(NaN).
// Taking 0 as the base there makes each exponential exp(-inf) = 0, as
// FlashAttention does; any finite max is used as it is.
__device__ float exp_minus_max(float x, float max)
{
    return expf(x - (max == -INFINITY ? 0.0f : max));
}

// 1 / sum, or 0 for a fully masked row, whose sum is 0: its outputs are then
// 0, as attention's softmax gives, not 0 * inf = NaN.
__device__ float inverse(float sum)
{
    return sum > 0.0f ? 1.0f / sum : 0.0f;
}

// W lanes of a warp (W <= 32, each run of W lanes a group), W values -> their
// max (or sum) in every lane of the run: at each level lane i combines lane
// i ^ offset's value, which stays inside the run, so both halves end with the
// same result.
template <unsigned int W, typename Op>
__device__ float warp_allreduce(float v, Op op)
{
    static_assert(W <= WARP_SIZE && (W & (W - 1)) == 0, "a run is a power of two within a warp");
#pragma unroll
    for (unsigned int offset = W / 2; offset > 0; offset >>= 1)
        v = op(v, __shfl_xor_sync(FULL_MASK, v, offset));
    return v;
}

// A group of G threads, G values -> their max (or sum) in every thread of the
// group, combined in the same order in each. With G > 32 the warps' results
// go through shared memory; the first barrier keeps a previous call's reads apart.
template <unsigned int G, typename Op>
__device__ float group_allreduce(float v, float *s_warp, Op op)
{
    v = warp_allreduce<G < WARP_SIZE ? G : WARP_SIZE>(v, op);
    if constexpr (G > WARP_SIZE) {
        unsigned int first = threadIdx.x / G * (G / WARP_SIZE);   // the group's first warp
        __syncthreads();
        if (threadIdx.x % WARP_SIZE == 0)
            s_warp[threadIdx.x / WARP_SIZE] = v;
        __syncthreads();
        v = s_warp[first];
        for (unsigned int w = 1; w < G / WARP_SIZE; w++)
            v = op(v, s_warp[first + w]);
    }
    return v;
}

// A sum s of exp(x - m), rescaled to a max M >= m: exp(x - M) = exp(x - m)
// exp(m - M). When m == M nothing changes, which also keeps a part with no
// values yet (m = M = -inf, s = 0) from becoming exp(-inf + inf) = NaN.
__device__ float rescale(float s, float m, float M)
{
    return m == M ? s : s * expf(m - M);
}

// A row's max and its sum of exp(x - max).
struct MaxSum {
    float m, s;
};

// A group of G threads, G pairs (m, s) -> the row's pair in every thread:
// the max first, then each sum rescaled to it and added.
template <unsigned int G>
__device__ MaxSum group_allreduce_pair(MaxSum v, float *s_warp)
{
    float m = group_allreduce<G>(v.m, s_warp, Max());
    float s = group_allreduce<G>(rescale(v.s, v.m, m), s_warp, Sum());
    return {m, s};
}

// The blocks of a cluster, a pair (m, s) each -> the row's pair in every
// thread of every block, combined as the group's threads combine theirs.
// Each block's pair goes to its own s_cluster; after the cluster barrier
// lane r of every warp reads block r's (distributed shared memory), so
// every block adds the same values in the same order.
template <unsigned int CLUSTER>
__device__ MaxSum cluster_allreduce_pair(MaxSum v, float2 *s_cluster)
{
    static_assert(CLUSTER <= WARP_SIZE, "one lane a block: a cluster of at most 32");
#if __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0)
        *s_cluster = make_float2(v.m, v.s);
    cluster.sync();   // every block's pair is in place, and visible to all
    unsigned int lane = threadIdx.x % WARP_SIZE;
    float2 p = lane < CLUSTER ? *cluster.map_shared_rank(s_cluster, (int)lane)
                              : make_float2(-INFINITY, 0.0f);
    float m = warp_allreduce<WARP_SIZE>(p.x, Max());
    return {m, warp_allreduce<WARP_SIZE>(rescale(p.y, p.x, m), Sum())};
#else
    __trap();   // the host launches clusters on sm_90 and later only
    return v;
#endif
}

// A row, split where PACK-element loads can start: head elements before the
// first 16-byte boundary, packs whole packs, tail elements after them. With
// PACK = 1 every element is a pack.
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

// Shared memory keeps floats (the exponentials, unrounded): PACK floats
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

template <unsigned int G, unsigned int PACK>
__global__ void softmax_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, unsigned int rows,
                               unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one value per warp of the block
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / G;
    static_assert(G >= PACK - 1, "the head and tail take a thread an element");
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce, and under a warp the shuffles' FULL_MASK, need every
    // thread of the block.
    const __nv_bfloat16 *x_row = g_x + (size_t)row * cols;
    __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
    RowSplit split = (row < rows) ? split_row<PACK>(x_row, cols) : RowSplit{0, 0, 0};
    unsigned int packs = split.packs;
    const __nv_bfloat16 *x = x_row + split.head;   // on a 16-byte boundary when PACK = 8
    __nv_bfloat16 *y = y_row + split.head;
    float v[PACK];
    // Head element t and tail element t, if this thread has them (t < PACK - 1).
    float e_head = (t < split.head) ? __bfloat162float(x_row[t]) : -INFINITY;
    float e_tail = (t < split.tail) ? __bfloat162float(x_row[cols - split.tail + t]) : -INFINITY;

    // Pass 1, online: the max and the sum of exponentials together. A pack
    // with a larger max first rescales the sum so far to it. The head and
    // tail floats start the pair.
    float max = fmaxf(e_head, e_tail), sum = 0.0f;
    if (t < split.head)
        sum += exp_minus_max(e_head, max);
    if (t < split.tail)
        sum += exp_minus_max(e_tail, max);
    for (unsigned int i = t; i < packs; i += UNROLL * G) {
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs) {
                load_pack<PACK>(x, i + k * G, v);
                float m = max;
                for (unsigned int j = 0; j < PACK; j++)
                    m = fmaxf(m, v[j]);
                sum = rescale(sum, max, m);
                max = m;
                for (unsigned int j = 0; j < PACK; j++)
                    sum += exp_minus_max(v[j], max);
            }
    }
    MaxSum row_ms = group_allreduce_pair<G>({max, sum}, s_warp);
    max = row_ms.m;
    float inv = inverse(row_ms.s);

    // Pass 2: the exponentials again, scaled, written.
    for (unsigned int i = t; i < packs; i += G) {
        load_pack<PACK>(x, i, v);
        for (unsigned int j = 0; j < PACK; j++)
            v[j] = exp_minus_max(v[j], max) * inv;
        store_pack<PACK>(y, i, v);
    }
    if (t < split.head)
        y_row[t] = __float2bfloat16_rn(exp_minus_max(e_head, max) * inv);
    if (t < split.tail)
        y_row[cols - split.tail + t] = __float2bfloat16_rn(exp_minus_max(e_tail, max) * inv);
}

// Every block has max(G / CLUSTER, BLOCK_SIZE) threads: telling the
// compiler lets it budget registers so that such a block always fits an SM,
// and MIN_BLOCKS of a cluster's blocks share one (0: no minimum asked, as
// before clusters; an explicit 1 changes the compiler's register budget).
template <unsigned int G, unsigned int CLUSTER, unsigned int PACK>
__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G / CLUSTER, CLUSTER > 1 ? MIN_BLOCKS : 0)
softmax_registers_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, unsigned int rows,
                         unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one value per warp of the block
    __shared__ float2 s_cluster;   // this block's (max, sum), for the other blocks
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
    RowSplit split = (row < rows) ? split_row<PACK>(x_row, cols) : RowSplit{0, 0, 0};
    unsigned int packs = split.packs;
    // This thread's first pack; slot k is k G packs further, a constant
    // offset once the loops are unrolled (no address arithmetic per slot).
    const __nv_bfloat16 *x = x_row + split.head + t * PACK;
    __nv_bfloat16 *y = y_row + split.head + t * PACK;
    // Head element t and tail element t, if this thread has them (t < PACK - 1).
    float e_head = (t < split.head) ? __bfloat162float(x_row[t]) : -INFINITY;
    float e_tail = (t < split.tail) ? __bfloat162float(x_row[cols - split.tail + t]) : -INFINITY;
    float v[SLOTS][PACK];   // constant indices only, after unrolling: registers
    // Packs past the registers' SLOTS x G: this thread's are i = t, t + G, ...
    // Only the widest group has any (a narrower one would have grown): a
    // block of MAX_GROUP threads, or a cluster of MAX_CLUSTER blocks (8 where
    // the GPU cannot run that many). Each block keeps its own threads'
    // packs: pack i = t + j G at j SHARE + b of its shared memory.
    constexpr bool WIDEST = CLUSTER == 1 ? G == MAX_GROUP : CLUSTER == MAX_CLUSTER || CLUSTER == 8;
    extern __shared__ float s_rest[];
    unsigned int rest = (WIDEST && packs > SLOTS * G) ? packs - SLOTS * G : 0;
    const __nv_bfloat16 *x_rest = x_row + split.head + SLOTS * G * PACK;

    // The one read: pack t + k G of the row into slot k; slots past the
    // row's end hold -inf, which no max picks.
    float max = fmaxf(e_head, e_tail);
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++) {
        if (t + k * G < packs)
            load_pack<PACK>(x, k * G, v[k]);
        else
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = -INFINITY;
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
                store_pack<PACK>(s_rest, (i / G + k) * SHARE + b, r[k]);
                for (unsigned int j = 0; j < PACK; j++)
                    max = fmaxf(max, r[k][j]);
            }
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        for (unsigned int j = 0; j < PACK; j++)
            max = fmaxf(max, v[k][j]);
    max = group_allreduce<SHARE>(max, s_warp, Max());   // of this block's share

    // The exponentials, each at most expf(0) = 1: no overflow. They replace
    // x where it was kept (empty slots left out), ready to be scaled.
    float sum = 0.0f;
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs)
            for (unsigned int j = 0; j < PACK; j++) {
                v[k][j] = exp_minus_max(v[k][j], max);
                sum += v[k][j];
            }
    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK];
        unsigned int s = i / G * SHARE + b;
        load_pack<PACK>(s_rest, s, r);
        for (unsigned int j = 0; j < PACK; j++) {
            r[j] = exp_minus_max(r[j], max);
            sum += r[j];
        }
        store_pack<PACK>(s_rest, s, r);
    }
    if (t < split.head) {
        e_head = exp_minus_max(e_head, max);
        sum += e_head;
    }
    if (t < split.tail) {
        e_tail = exp_minus_max(e_tail, max);
        sum += e_tail;
    }
    sum = group_allreduce<SHARE>(sum, s_warp, Sum());   // of this block's share
    float inv = inverse(sum);
    if constexpr (CLUSTER > 1) {
        // One exchange for the cluster: the blocks' pairs give the row's max
        // M and sum S, and this block's exponentials, taken from its own max,
        // are scaled by exp(max - M) / S.
        MaxSum row_ms = cluster_allreduce_pair<CLUSTER>({max, sum}, &s_cluster);
        inv = rescale(1.0f, max, row_ms.m) * inverse(row_ms.s);
    }
#if __CUDA_ARCH__ >= 900
    // The other blocks may still be reading this block's s_cluster: it must
    // not exit before they are done. Say so now, wait at the very end.
    if constexpr (CLUSTER > 1)
        cg::this_cluster().barrier_arrive();
#endif

    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK];
        load_pack<PACK>(s_rest, i / G * SHARE + b, r);
        for (unsigned int j = 0; j < PACK; j++)
            r[j] *= inv;
        store_pack<PACK>(y_row + split.head, SLOTS * G + i, r);
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs) {
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] *= inv;
            store_pack<PACK>(y, k * G, v[k]);
        }
    if (t < split.head)
        y_row[t] = __float2bfloat16_rn(e_head * inv);
    if (t < split.tail)
        y_row[cols - split.tail + t] = __float2bfloat16_rn(e_tail * inv);
#if __CUDA_ARCH__ >= 900
    if constexpr (CLUSTER > 1)
        cg::this_cluster().barrier_wait();
#endif
}

// Hopper's asynchronous transactions, each counted in bytes on an mbarrier
// in shared memory: a bulk copy (the TMA unit moves a whole share, no
// thread holds its bytes in flight) and a store into another block's shared
// memory. A wait on the mbarrier returns once every byte it expects landed.
__device__ unsigned int shared_address(const void *p)
{
    return (unsigned int)__cvta_generic_to_shared(p);
}

// An mbarrier for one phase, one arrival (thread 0's, by mbarrier_expect_bytes).
__device__ void mbarrier_init(unsigned long long *bar)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)));
    // Visible to the copy engine and to the cluster's other blocks.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// The phase completes when `bytes` have arrived (bulk copies may land first).
__device__ void mbarrier_expect_bytes(unsigned long long *bar, unsigned int bytes)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
                 "r"(bytes) : "memory");
#endif
}

__device__ void mbarrier_wait(unsigned long long *bar)
{
#if __CUDA_ARCH__ >= 900
    unsigned int done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                     " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(shared_address(bar)) : "memory");
#endif
}

// bytes (a multiple of 16, 16-byte aligned at both ends) from global memory
// into this block's shared memory, counted on bar.
__device__ void bulk_load(void *dst, const void *src, unsigned int bytes, unsigned long long *bar)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(shared_address(dst)), "l"(src), "r"(bytes), "r"(shared_address(bar)) : "memory");
#endif
}

// The same the other way; bulk_store_wait() returns once shared memory has
// been read, so that the block may exit (the writes finish on their own).
__device__ void bulk_store(void *dst, const void *src, unsigned int bytes)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
                 "r"(shared_address(src)), "r"(bytes) : "memory");
#endif
}

__device__ void bulk_store_wait(void)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
}

// A pair into block `rank`'s slot, counted on that block's mbarrier.
__device__ void push_pair(float2 *slot, unsigned long long *bar, unsigned int rank, MaxSum v)
{
#if __CUDA_ARCH__ >= 900
    unsigned int remote_slot, remote_bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_slot) : "r"(shared_address(slot)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(shared_address(bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
                 ::"r"(remote_slot), "f"(v.m), "f"(v.s), "r"(remote_bar) : "memory");
#endif
}

// Two pairs -> one: combine(a, b) and combine(b, a) are the same bits.
__device__ MaxSum combine(MaxSum a, MaxSum b)
{
    float m = fmaxf(a.m, b.m);
    return {m, rescale(a.s, a.m, m) + rescale(b.s, b.m, m)};
}

// 32 lanes' pairs -> their pair in every lane (both lanes of each level
// combine the same two pairs, so all 32 end with the same bits).
__device__ MaxSum warp_allreduce_pair(MaxSum v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v = combine(v, {__shfl_xor_sync(FULL_MASK, v.m, offset), __shfl_xor_sync(FULL_MASK, v.s, offset)});
    return v;
}

// A row wider than one block's SHARE_BYTES, over a cluster of `cluster`
// blocks of BLOCK_SIZE threads: block `rank` takes packs [rank share,
// (rank + 1) share) of the row's body, block 0 also the head elements and
// the last block the tail ones. The share comes in by bulk copies and goes
// out the same way; every warp's pair goes to every block by an
// asynchronous store, so no block waits at a barrier for the others.
__global__ void __launch_bounds__(BLOCK_SIZE, 1)
softmax_bulk_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, unsigned int cols, unsigned int share)
{
#if __CUDA_ARCH__ >= 900
    constexpr unsigned int PACK = 8;   // bfloat16s in 16 bytes
    extern __shared__ __align__(128) __nv_bfloat16 s_share[];
    __shared__ unsigned long long s_loaded, s_pushed;
    __shared__ float2 s_pairs[MAX_CLUSTER * WARPS_PER_BLOCK];   // slot r x WARPS_PER_BLOCK + w
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int blocks = cluster.num_blocks(), rank = cluster.block_rank();
    unsigned int row = blockIdx.x / blocks;
    unsigned int t = threadIdx.x, lane = t % WARP_SIZE, warp = t / WARP_SIZE;
    const __nv_bfloat16 *x_row = g_x + (size_t)row * cols;
    __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
    RowSplit split = split_row<PACK>(x_row, cols);
    unsigned int first = min(rank * share, split.packs);
    unsigned int bytes = (min(first + share, split.packs) - first) * 16;   // this block's
    const __nv_bfloat16 *x = x_row + split.head + (size_t)first * PACK;
    __nv_bfloat16 *y = y_row + split.head + (size_t)first * PACK;
    unsigned int packs = bytes / 16, pairs = blocks * WARPS_PER_BLOCK;

    if (t == 0) {
        mbarrier_init(&s_loaded);
        mbarrier_init(&s_pushed);
    }
    __syncthreads();
    if (t == 0) {   // after the barrier: racecheck warned when thread 0 did both before it
        mbarrier_expect_bytes(&s_loaded, bytes);
        mbarrier_expect_bytes(&s_pushed, pairs * sizeof(float2));
    }
    cluster.barrier_arrive();   // this block's mbarrier is ready for the others' pairs
    if (warp == 0)   // the copies, CHUNK bytes each, spread over the warp's lanes
        for (unsigned int b = lane * CHUNK; b < bytes; b += WARP_SIZE * CHUNK)
            bulk_load((char *)s_share + b, (const char *)x + b, min(CHUNK, bytes - b), &s_loaded);
    bool head = rank == 0 && t < split.head, tail = rank == blocks - 1 && t < split.tail;
    float e_head = head ? __bfloat162float(x_row[t]) : -INFINITY;
    float e_tail = tail ? __bfloat162float(x_row[cols - split.tail + t]) : -INFINITY;
    mbarrier_wait(&s_loaded);

    // This thread's pair: packs t, t + BLOCK_SIZE, ... and its head and tail
    // elements, the max first, then the sum from it.
    float v[PACK], max = fmaxf(e_head, e_tail), sum = 0.0f;
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        load_pack<PACK>(s_share, i, v);
        for (unsigned int j = 0; j < PACK; j++)
            max = fmaxf(max, v[j]);
    }
    if (head)
        sum += exp_minus_max(e_head, max);
    if (tail)
        sum += exp_minus_max(e_tail, max);
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        load_pack<PACK>(s_share, i, v);
        for (unsigned int j = 0; j < PACK; j++)
            sum += exp_minus_max(v[j], max);
    }
    MaxSum mine = warp_allreduce_pair({max, sum});

    // Lane r pushes the warp's pair into block r. Each block then waits
    // for its own pairs only, and combines them in slot order, as every
    // other block does: the row's max and sum, the same bits in each.
    cluster.barrier_wait();   // every block's mbarrier is ready
    if (lane < blocks)
        push_pair(&s_pairs[rank * WARPS_PER_BLOCK + warp], &s_pushed, lane, mine);
    mbarrier_wait(&s_pushed);
    MaxSum row_ms = {-INFINITY, 0.0f};
    for (unsigned int i = lane; i < pairs; i += WARP_SIZE)
        row_ms = combine(row_ms, {s_pairs[i].x, s_pairs[i].y});
    row_ms = warp_allreduce_pair(row_ms);
    max = row_ms.m;
    float inv = inverse(row_ms.s);

    // y over x in shared memory, rounded once, then out by bulk copies.
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        load_pack<PACK>(s_share, i, v);
        for (unsigned int j = 0; j < PACK; j++)
            v[j] = exp_minus_max(v[j], max) * inv;
        store_pack<PACK>(s_share, i, v);
    }
    if (head)
        y_row[t] = __float2bfloat16_rn(exp_minus_max(e_head, max) * inv);
    if (tail)
        y_row[cols - split.tail + t] = __float2bfloat16_rn(exp_minus_max(e_tail, max) * inv);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the stores above, seen by the copies
    __syncthreads();
    if (warp == 0) {
        for (unsigned int b = lane * CHUNK; b < bytes; b += WARP_SIZE * CHUNK)
            bulk_store((char *)y + b, (const char *)s_share + b, min(CHUNK, bytes - b));
        bulk_store_wait();
    }
#else
    __trap();   // the host launches it on sm_90 and later only
#endif
}

// 16-byte loads and stores need each row's body on a 16-byte boundary in x
// and in y: when x and y are a multiple of 16 bytes apart, every row starts
// as far from a boundary in one as in the other, whatever its width.
static bool rows_aligned(const struct row_problem *p)
{
    return ((size_t)p->x_bf16 - (size_t)p->y_bf16) % 16 == 0;
}

// One attribute of the current device.
static int device_attribute(enum cudaDeviceAttr attr)
{
    int device, value;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&value, attr, device));
    return value;
}

// The most dynamic shared memory a block may ask for: the opt-in limit (past
// the 48 KB any block gets), less what the kernel's own arrays take (s_warp, s_cluster).
static size_t shared_limit(void)
{
    static size_t bytes = 0;
    if (bytes == 0) {
        cudaFuncAttributes own;
        CHECK_CUDA(cudaFuncGetAttributes(&own, softmax_registers_kernel<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER, 8>));
        bytes = (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) - own.sharedSizeBytes;
    }
    return bytes;
}

// Blocks per cluster at most: MAX_CLUSTER where the device can run a cluster
// of that many of the widest kernel's blocks with all their shared memory
// (cudaOccupancyMaxActiveClusters says how many fit the GPU at once), else
// the portable 8; 1 before sm_90, and 1 where the kernels hold no sm_90
// code (make ARCH=sm_80 on a Hopper GPU runs compute_80 code: no clusters).
static unsigned int max_cluster(void)
{
    static unsigned int most = 0;
    if (most == 0) {
        most = 1;
        auto kernel = softmax_registers_kernel<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER, 8>;
        cudaFuncAttributes built;
        CHECK_CUDA(cudaFuncGetAttributes(&built, kernel));
        if (device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9 && built.ptxVersion >= 90) {
            cudaLaunchConfig_t config = {};
            cudaLaunchAttribute cluster;
            cluster.id = cudaLaunchAttributeClusterDimension;
            cluster.val.clusterDim.x = MAX_CLUSTER;
            cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
            config.gridDim = dim3(MAX_CLUSTER);
            config.blockDim = dim3(BLOCK_SIZE);
            config.dynamicSmemBytes = shared_limit();
            config.attrs = &cluster;
            config.numAttrs = 1;
            // A device may refuse the size outright rather than answer 0:
            // either way it gets the portable 8.
            int clusters = 0;
            if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                    cudaSuccess ||
                cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)shared_limit()) != cudaSuccess ||
                cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
                (void)cudaGetLastError();   // taken: it must not fail a later check
                clusters = 0;
            }
            most = clusters > 0 ? MAX_CLUSTER : (MAX_CLUSTER < 8 ? MAX_CLUSTER : 8);
        } else {
            fprintf(stderr, "rows/step26: no thread-block clusters before sm_90: step 11's "
                            "one-block groups\n");
        }
    }
    return most;
}

// The widest group: a block of MAX_GROUP threads without clusters, a
// cluster of BLOCK_SIZE-thread blocks with them.
static unsigned int max_group(void)
{
    return max_cluster() > 1 ? BLOCK_SIZE * max_cluster() : MAX_GROUP;
}

// The smallest G, from MIN_GROUP, that gives every SM WARPS_PER_SM warps' worth
// of threads, but no more threads than a row has packs of 8; and at least
// cols / MAX_PER_THREAD, so that the row fits the group's registers.
static unsigned int group_size(size_t rows, size_t cols)
{
    static int sms = 0;
    if (sms == 0)
        sms = device_attribute(cudaDevAttrMultiProcessorCount);
    unsigned int g = MIN_GROUP;
    while (g < max_group() && rows * g < (size_t)sms * WARPS_PER_SM * WARP_SIZE &&
           2 * g * 8 <= cols)
        g *= 2;
    while (g < max_group() && g * MAX_PER_THREAD < cols)
        g *= 2;
    return g;
}

// The most dynamic shared memory a bulk block may ask for: the opt-in limit
// (past the 48 KB any block gets), less its own arrays.
static size_t bulk_limit(void)
{
    static size_t bytes = 0;
    if (bytes == 0) {
        cudaFuncAttributes own;
        CHECK_CUDA(cudaFuncGetAttributes(&own, softmax_bulk_kernel));
        bytes = (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) - own.sharedSizeBytes;
        CHECK_CUDA(cudaFuncSetAttribute(softmax_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)bytes));
    }
    return bytes;
}

// Blocks of the bulk kernel per row: the fewest (2, 4 or 8) whose shares,
// each under SHARE_BYTES, hold the row; 0 where the row stays on step 16's
// path (rows that one block's share holds, rows too wide for a cluster's,
// x and y not equally aligned, GPUs without clusters).
static unsigned int bulk_cluster(const struct row_problem *p)
{
    if (max_cluster() == 1 || !rows_aligned(p) || p->cols * 2 <= SHARE_BYTES ||
        SHARE_BYTES > bulk_limit())
        return 0;
    for (unsigned int c = 2; c <= max_cluster(); c *= 2)
        if (p->cols * 2 < (size_t)c * SHARE_BYTES && p->rows * c <= 0x7fffffffu)
            return c;
    return 0;
}

// The shared memory each block of a group of g threads in clusters of
// `cluster` blocks needs for the elements past the registers, kept as
// floats: whole packs of 8 per thread, each block holding its own threads'.
static size_t rest_bytes(size_t cols, unsigned int g, unsigned int cluster)
{
    size_t in_registers = (size_t)g * MAX_PER_THREAD;
    if (cols <= in_registers)
        return 0;
    size_t per_thread = (cols - in_registers + (size_t)g * 8 - 1) / ((size_t)g * 8);   // packs
    return per_thread * (g / cluster) * 8 * sizeof(float);
}

// The widths where the kernel changes, for the grader to check both sides
// of each: past G x MAX_PER_THREAD floats the group doubles (with clusters,
// past 256 x MAX_PER_THREAD a cluster doubles), past the widest group's
// registers the rest of the row waits in shared memory, and past what
// shared memory holds the row is read from global memory again. The bulk
// kernel takes rows past one block's SHARE_BYTES, its cluster doubling at
// each power of 2 of them, and gives back the rows its widest cluster does
// not hold (all of step 16's widths stay: unequally aligned rows take them).
int row_path_widths(size_t *widths, int max)
{
    size_t all[32];
    int count = 0;
    for (size_t g = MIN_GROUP; g <= max_group(); g *= 2)
        all[count++] = g * MAX_PER_THREAD + 1;
    size_t g = max_group(), threads = max_cluster() > 1 ? BLOCK_SIZE : MAX_GROUP;
    size_t packs = shared_limit() / (threads * 8 * sizeof(float));   // per thread, in shared memory
    all[count++] = g * MAX_PER_THREAD + packs * 8 * g + 1;
    if (max_cluster() > 1) {
        all[count++] = SHARE_BYTES / 2 + 1;
        for (size_t c = 2; c <= max_cluster(); c *= 2)
            all[count++] = c * SHARE_BYTES / 2;
    }
    int kept = 0;
    while (kept < max) {   // in increasing order, each once
        size_t least = (size_t)-1;
        for (int j = 0; j < count; j++)
            if (all[j] < least && (kept == 0 || all[j] > widths[kept - 1]))
                least = all[j];
        if (least == (size_t)-1)
            break;
        widths[kept++] = least;
    }
    return kept;
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
                                  static_cast<__nv_bfloat16 *>(p->y_bf16), (unsigned int)p->rows,
                                  (unsigned int)p->cols));
}

// The bulk kernel over clusters of `cluster` blocks, one row each.
static void launch_bulk(const struct row_problem *p, unsigned int cluster)
{
    unsigned int packs = (unsigned int)(p->cols / 8);   // at most, whatever the head
    unsigned int share = (packs + cluster - 1) / cluster;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    config.gridDim = dim3((unsigned int)p->rows * cluster);
    config.blockDim = dim3(BLOCK_SIZE);
    config.dynamicSmemBytes = (size_t)share * 16;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CHECK_CUDA(cudaLaunchKernelEx(&config, softmax_bulk_kernel,
                                  static_cast<const __nv_bfloat16 *>(p->x_bf16),
                                  static_cast<__nv_bfloat16 *>(p->y_bf16), (unsigned int)p->cols, share));
}

template <unsigned int G, unsigned int CLUSTER>
static void launch(const struct row_problem *p)
{
    unsigned int threads = G < BLOCK_SIZE ? BLOCK_SIZE : G / CLUSTER;
    unsigned int rows_per_block = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    unsigned int blocks = (unsigned int)((p->rows + rows_per_block - 1) / rows_per_block) * CLUSTER;
    size_t shared = rest_bytes(p->cols, G, CLUSTER);
    if (shared <= shared_limit()) {
        auto kernel = rows_aligned(p) ? softmax_registers_kernel<G, CLUSTER, 8>
                                      : softmax_registers_kernel<G, CLUSTER, 1>;
        launch_kernel(kernel, CLUSTER, blocks, threads, shared, p);
    } else {   // two passes, online, each row one block of MAX_GROUP threads
        auto kernel = rows_aligned(p) ? softmax_kernel<MAX_GROUP, 8> : softmax_kernel<MAX_GROUP, 1>;
        launch_kernel(kernel, 1, (unsigned int)p->rows, MAX_GROUP, 0, p);
    }
}

// launch<G, G / BLOCK_SIZE>, compiled only for clusters a GPU may have.
template <unsigned int G>
static void launch_cluster(const struct row_problem *p)
{
    if constexpr (G / BLOCK_SIZE <= MAX_CLUSTER) {
        launch<G, G / BLOCK_SIZE>(p);
    } else {
        fprintf(stderr, "error: no kernel for a group of %u threads\n", G);
        exit(EXIT_WRONG);
    }
}

void row_forward(const struct row_problem *p)
{
    unsigned int cluster = bulk_cluster(p);
    if (cluster > 0) {
        launch_bulk(p, cluster);
        return;
    }
    unsigned int g = group_size(p->rows, p->cols);
    if (max_cluster() > 1 && g > BLOCK_SIZE) {
        switch (g) {   // a cluster of g / BLOCK_SIZE blocks
        case 512: launch_cluster<512>(p); break;
        case 1024: launch_cluster<1024>(p); break;
        case 2048: launch_cluster<2048>(p); break;
        default: launch_cluster<4096>(p); break;
        }
        return;
    }
    switch (g) {
    case 8: launch<8, 1>(p); break;
    case 16: launch<16, 1>(p); break;
    case 32: launch<32, 1>(p); break;
    case 64: launch<64, 1>(p); break;
    case 128: launch<128, 1>(p); break;
    case 256: launch<256, 1>(p); break;
    case 512: launch<512, 1>(p); break;
    default: launch<1024, 1>(p); break;
    }
}

const enum row_op step_op = ROW_SOFTMAX;
const enum row_dtype step_dtype = ROW_BF16;
