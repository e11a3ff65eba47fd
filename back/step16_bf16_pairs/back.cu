// Softmax backward in bfloat16, two a load: the register path's loads move 4 bytes again.
//
// Change: where the row, y, dy and dx are 4-byte aligned, a thread of the
//         register path loads and stores two bfloat16s at once (4 bytes,
//         as step 14 loads a float), 8 such loads of y and of dy instead
//         of 16 of one; elsewhere one, as in step 15. It keeps the same 16
//         elements widened to float.
// Why it helps: bytes in flight hide DRAM's latency, and an SM keeps only
//         so many loads outstanding. A warp's load of one bfloat16 a lane
//         fetches 64 bytes where step 14's float load fetched 128, so step
//         15 had half the bytes on their way for the same loads. Two a
//         load fetch 128 again. (The bulk path already moves 16-byte packs.)
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
// Started from step15_bf16_bulk by make new: its diff against step 15 is this step's lesson.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <stdio.h>

#include "back.h"
#include "check.h"

namespace cg = cooperative_groups;

#define MAX_BLOCK 1024   // the most threads a block can have
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define PER_THREAD 16   // elements of y, and of dy, a thread keeps (as floats): 32 registers
#define CLUSTER_BLOCK 256   // threads a block while a cluster holds the row: several blocks an SM
#define MAX_CLUSTER 16   // the most blocks a Hopper cluster can have (8 is portable)
#define BULK_BLOCK 256   // threads a block of the bulk kernel
#define BULK_WARPS (BULK_BLOCK / WARP_SIZE)
#define SHARE_BYTES (80 * 1024)   // y's and dy's share a block at most, where 16 blocks hold the row: 2 blocks an SM at the cap, 3-4 below it
#define MIN_BULK_COLS 16384   // rows up to this wide stay on step 13's path (back/README: what was tried)
#define CHUNK (16 * 1024)   // bytes per bulk copy instruction
#define PACK 8   // bfloat16s in one 16-byte pack
#define VEC 2   // bfloat16s a register-path load where the row allows: 4 bytes, as a float

// One warp, 32 sums -> 1, in every lane: each step adds the lane whose
// index differs in one bit, so after 5 steps all 32 hold the same total.
__device__ float warp_allreduce(float v)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

// The block's B threads, one sum each -> the block's sum, in every thread:
// each warp's by shuffles, then every thread adds the warps' sums in warp
// order, so all of them get the same bits. One call per block: the shared
// array is written once. 16-byte aligned: with two kernels of each B (one
// and two a load) sharing this function, the compiler reads it in 16-byte
// loads, which must not reach into a neighbour (s_block below, which thread
// 0 writes meanwhile: racecheck reports the overlap, though the extra word
// read is never used).
template <unsigned int B>
__device__ float block_allreduce(float v)
{
    __shared__ __align__(16) float s_warp[B / WARP_SIZE];
    v = warp_allreduce(v);
    if (threadIdx.x % WARP_SIZE == 0)
        s_warp[threadIdx.x / WARP_SIZE] = v;
    __syncthreads();
    float sum = 0.0f;
#pragma unroll
    for (unsigned int w = 0; w < B / WARP_SIZE; w++)
        sum += s_warp[w];
    return sum;
}

// The blocks of a cluster, one sum each -> the row's sum, in every thread
// of every block. Each block's sum goes to its own s_block; after the
// cluster barrier lane k of every warp reads block k's (distributed shared
// memory), and the warp adds them as warp_allreduce does: the same order,
// so the same bits, in every block.
__device__ float cluster_allreduce(float v, unsigned int blocks)
{
#if __CUDA_ARCH__ >= 900
    __shared__ float s_block;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0)
        s_block = v;
    cluster.sync();   // every block's sum is in place, and visible to all
    unsigned int lane = threadIdx.x % WARP_SIZE;
    float sum = lane < blocks ? *cluster.map_shared_rank(&s_block, (int)lane) : 0.0f;
    sum = warp_allreduce(sum);
    // The other blocks may still be reading this block's s_block: it must
    // not exit before they are done. Say so now, wait at the very end.
    cluster.barrier_arrive();
    return sum;
#else
    (void)blocks;
    __trap();   // the host launches clusters on sm_90 and later only
    return v;
#endif
}

// V bfloat16s as one load (2 V bytes, aligned to 2 V), widened to float.
template <unsigned int V>
struct __align__(2 * V) bf16s {
    __nv_bfloat16 h[V];
};

template <unsigned int V>
__device__ void load_v(const __nv_bfloat16 *p, float *v)
{
    bf16s<V> u = *reinterpret_cast<const bf16s<V> *>(p);
#pragma unroll
    for (unsigned int j = 0; j < V; j++)
        v[j] = __bfloat162float(u.h[j]);
}

template <unsigned int V>
__device__ void store_v(__nv_bfloat16 *p, const float *v)
{
    bf16s<V> u;
#pragma unroll
    for (unsigned int j = 0; j < V; j++)
        u.h[j] = __float2bfloat16_rn(v[j]);
    *reinterpret_cast<bf16s<V> *>(p) = u;
}

// B threads a block, a template so that thread t's loads t + k * B (V
// bfloat16s each) are one address and constant offsets: no register for
// each of the 16. V: 1, or more where the row's alignment allows.
template <unsigned int B, unsigned int V>
__global__ void __launch_bounds__(B)
softmax_backward_kernel(const __nv_bfloat16 *g_y, const __nv_bfloat16 *g_dy,
                        __nv_bfloat16 *g_dx, unsigned int cols, unsigned int blocks)
{
    // blocks: a row's blocks, one cluster (1: a block a row, as in step 12).
    // Block k of them holds the row's k-th share of PER_THREAD x B elements,
    // in loads of V elements (units below).
    constexpr unsigned int LOADS = PER_THREAD / V;
    unsigned int row = blockIdx.x / blocks, rank = blockIdx.x % blocks;
    const __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
    const __nv_bfloat16 *dy_row = g_dy + (size_t)row * cols;
    __nv_bfloat16 *dx_row = g_dx + (size_t)row * cols;
    unsigned int units = cols / V;   // the host picks V > 1 only where V divides cols
    // This thread's first load; its k-th is k * B loads on, a constant
    // offset from one address (y_row[first + k * B] with an unsigned index,
    // which could wrap, would take a register pair for each address).
    unsigned int first = rank * LOADS * B + threadIdx.x;
    const __nv_bfloat16 *y = y_row + (size_t)first * V, *dy = dy_row + (size_t)first * V;
    __nv_bfloat16 *dx = dx_row + (size_t)first * V;
    // How many of its loads are in the row: one compare each below.
    unsigned int mine = first < units ? (units - 1 - first) / B + 1 : 0;
    // Past what the cluster holds, the rest of a wide row: read twice.
    unsigned int rest = (blocks * LOADS + rank) * B + threadIdx.x, stride = blocks * B;

    // Loop 1: this thread's columns into registers, widened to float
    // (exact; 0 past the row's end, which adds nothing), and their share of
    // s; the rest only summed.
    float y_r[PER_THREAD], dy_r[PER_THREAD];
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++) {
        if (k < mine) {
            load_v<V>(y + k * B * V, &y_r[k * V]);
            load_v<V>(dy + k * B * V, &dy_r[k * V]);
        } else {
#pragma unroll
            for (unsigned int j = 0; j < V; j++)
                y_r[k * V + j] = dy_r[k * V + j] = 0.0f;
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (unsigned int k = 0; k < PER_THREAD; k++)
        sum += dy_r[k] * y_r[k];
    for (unsigned int c = rest; c < units; c += stride) {
        float a[V], d[V];
        load_v<V>(y_row + (size_t)c * V, a);
        load_v<V>(dy_row + (size_t)c * V, d);
#pragma unroll
        for (unsigned int j = 0; j < V; j++)
            sum += d[j] * a[j];
    }
    sum = block_allreduce<B>(sum);
    if (blocks > 1)
        sum = cluster_allreduce(sum, blocks);

    // Loop 2: dx, from the registers, in float and rounded once to
    // bfloat16 as it is stored; the rest read again.
#pragma unroll
    for (unsigned int k = 0; k < LOADS; k++)
        if (k < mine) {
            float o[V];
#pragma unroll
            for (unsigned int j = 0; j < V; j++)
                o[j] = y_r[k * V + j] * (dy_r[k * V + j] - sum);
            store_v<V>(dx + k * B * V, o);
        }
    for (unsigned int c = rest; c < units; c += stride) {
        float a[V], d[V];
        load_v<V>(y_row + (size_t)c * V, a);
        load_v<V>(dy_row + (size_t)c * V, d);
#pragma unroll
        for (unsigned int j = 0; j < V; j++)
            d[j] = a[j] * (d[j] - sum);
        store_v<V>(dx_row + (size_t)c * V, d);
    }
#if __CUDA_ARCH__ >= 900
    if (blocks > 1)
        cg::this_cluster().barrier_wait();
#endif
}

// Hopper's asynchronous transactions, each counted in bytes on an mbarrier
// in shared memory: a bulk copy (the TMA unit moves a whole share, no
// thread holds its bytes in flight) and a store into another block's
// shared memory. A wait on the mbarrier returns once every byte landed.
__device__ unsigned int shared_address(const void *p)
{
    return (unsigned int)__cvta_generic_to_shared(p);
}

// An mbarrier for one phase that completes when `bytes` have arrived.
__device__ void mbarrier_expect(unsigned long long *bar, unsigned int bytes)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
                 "r"(bytes) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
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

// A float into block `rank`'s slot, counted on that block's mbarrier.
__device__ void push_sum(float *slot, unsigned long long *bar, unsigned int rank, float v)
{
#if __CUDA_ARCH__ >= 900
    unsigned int remote_slot, remote_bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_slot) : "r"(shared_address(slot)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(shared_address(bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
                 ::"r"(remote_slot), "f"(v), "r"(remote_bar) : "memory");
#endif
}

// A 16-byte pack of PACK bfloat16s, widened to floats (exact).
__device__ void unpack(uint4 u, float (&v)[PACK])
{
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
    for (unsigned int j = 0; j < PACK / 2; j++) {
        float2 f = __bfloat1622float2(h[j]);
        v[2 * j] = f.x;
        v[2 * j + 1] = f.y;
    }
}

// PACK floats, each rounded once to bfloat16 (to nearest, ties to even).
__device__ uint4 pack(const float (&v)[PACK])
{
    uint4 u;
    __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
    for (unsigned int j = 0; j < PACK / 2; j++)
        h[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
    return u;
}

// A row over a cluster of `blocks` blocks: block `rank` takes packs
// [rank share, (rank + 1) share) of the row's body (16-byte packs of 8
// bfloat16s, from y's first 16-byte boundary), block 0 also the head
// elements before it and the last block the tail elements after it. y and
// dy come in by bulk copies, dx goes out the same way, over dy's share.
__global__ void __launch_bounds__(BULK_BLOCK, 1)
softmax_backward_bulk_kernel(const __nv_bfloat16 *g_y, const __nv_bfloat16 *g_dy,
                             __nv_bfloat16 *g_dx, unsigned int cols, unsigned int share)
{
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) uint4 s_share[];   // y's share, then dy's
    __shared__ unsigned long long s_loaded, s_pushed;
    __shared__ float s_sums[MAX_CLUSTER * BULK_WARPS];   // slot r x BULK_WARPS + w
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int blocks = cluster.num_blocks(), rank = cluster.block_rank();
    unsigned int row = blockIdx.x / blocks;
    unsigned int t = threadIdx.x, lane = t % WARP_SIZE, warp = t / WARP_SIZE;
    const __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
    const __nv_bfloat16 *dy_row = g_dy + (size_t)row * cols;
    __nv_bfloat16 *dx_row = g_dx + (size_t)row * cols;
    unsigned int head =
        (unsigned int)((PACK - (size_t)y_row / sizeof(__nv_bfloat16) % PACK) % PACK);
    head = min(head, cols);
    unsigned int body = (cols - head) / PACK, tail = (cols - head) % PACK;
    unsigned int first = min(rank * share, body);
    unsigned int packs = min(first + share, body) - first, bytes = packs * 16;
    const __nv_bfloat16 *y = y_row + head + (size_t)first * PACK;
    const __nv_bfloat16 *dy = dy_row + head + (size_t)first * PACK;
    __nv_bfloat16 *dx = dx_row + head + (size_t)first * PACK;
    uint4 *s_y = s_share, *s_dy = s_share + share;
    unsigned int sums = blocks * BULK_WARPS;

    if (t == 0) {
        mbarrier_expect(&s_loaded, 2 * bytes);
        mbarrier_expect(&s_pushed, sums * sizeof(float));
    }
    __syncthreads();
    cluster.barrier_arrive();   // this block's mbarrier is ready for the others' sums
    if (warp == 0)   // the copies, CHUNK bytes each, spread over the warp's lanes
        for (unsigned int b = lane * CHUNK; b < bytes; b += WARP_SIZE * CHUNK) {
            unsigned int n = min(CHUNK, bytes - b);
            bulk_load((char *)s_y + b, (const char *)y + b, n, &s_loaded);
            bulk_load((char *)s_dy + b, (const char *)dy + b, n, &s_loaded);
        }
    bool has_head = rank == 0 && t < head, has_tail = rank == blocks - 1 && t < tail;
    unsigned int edge = has_head ? t : cols - tail + t;
    float e_y = has_head || has_tail ? __bfloat162float(y_row[edge]) : 0.0f;
    float e_dy = has_head || has_tail ? __bfloat162float(dy_row[edge]) : 0.0f;
    mbarrier_wait(&s_loaded);

    float sum = e_dy * e_y;
    for (unsigned int i = t; i < packs; i += BULK_BLOCK) {
        float a[PACK], d[PACK];
        unpack(s_y[i], a);
        unpack(s_dy[i], d);
        float part = d[0] * a[0];
#pragma unroll
        for (unsigned int j = 1; j < PACK; j++)
            part += d[j] * a[j];
        sum += part;
    }
    sum = warp_allreduce(sum);

    // Lane r pushes the warp's sum into block r. Each block then waits for
    // its own slots only, and adds them in one fixed order (lane-strided,
    // then the butterfly), as every other block does: the same bits in each.
    cluster.barrier_wait();   // every block's mbarrier is ready
    if (lane < blocks)
        push_sum(&s_sums[rank * BULK_WARPS + warp], &s_pushed, lane, sum);
    mbarrier_wait(&s_pushed);
    float s = 0.0f;
    for (unsigned int i = lane; i < sums; i += WARP_SIZE)
        s += s_sums[i];
    s = warp_allreduce(s);

    // dx over dy in shared memory, each rounded once to bfloat16, then out
    // by bulk copies.
    for (unsigned int i = t; i < packs; i += BULK_BLOCK) {
        float a[PACK], d[PACK];
        unpack(s_y[i], a);
        unpack(s_dy[i], d);
#pragma unroll
        for (unsigned int j = 0; j < PACK; j++)
            d[j] = a[j] * (d[j] - s);
        s_dy[i] = pack(d);
    }
    if (has_head || has_tail)
        dx_row[edge] = __float2bfloat16_rn(e_y * (e_dy - s));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the stores above, seen by the copies
    __syncthreads();
    if (warp == 0) {
        for (unsigned int b = lane * CHUNK; b < bytes; b += WARP_SIZE * CHUNK)
            bulk_store((char *)dx + b, (const char *)s_dy + b, min(CHUNK, bytes - b));
        bulk_store_wait();
    }
#else
    __trap();   // the host launches it on sm_90 and later only
#endif
}

// Threads for a row: the fewest of 32, 64, ..., 1024 whose PER_THREAD
// elements each cover it.
static unsigned int block_size(size_t cols)
{
    unsigned int threads = WARP_SIZE;
    while (threads < MAX_BLOCK && (size_t)threads * PER_THREAD < cols)
        threads *= 2;
    return threads;
}

// Blocks per cluster at most: MAX_CLUSTER where the device can run a cluster
// of that many of the widest kernel's blocks (cudaOccupancyMaxActiveClusters
// says how many fit the GPU at once), else the portable 8; 1 before sm_90,
// and 1 where the kernels hold no sm_90 code (make ARCH=sm_80 on a Hopper
// GPU runs compute_80 code: no clusters).
static unsigned int max_cluster(void)
{
    static unsigned int most = 0;
    if (most > 0)
        return most;
    auto kernel = softmax_backward_kernel<MAX_BLOCK, 1>;
    int device, major;
    cudaFuncAttributes built;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CHECK_CUDA(cudaFuncGetAttributes(&built, kernel));
    most = 1;
    if (major >= 9 && built.ptxVersion >= 90) {
        cudaLaunchAttribute cluster = {};
        cluster.id = cudaLaunchAttributeClusterDimension;
        cluster.val.clusterDim.x = MAX_CLUSTER;
        cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
        // grid, block, dynamic shared memory, stream, attributes
        cudaLaunchConfig_t config = {dim3(MAX_CLUSTER), dim3(MAX_BLOCK), 0, 0, &cluster, 1};
        // A device may refuse the size outright rather than answer 0:
        // either way it gets the portable 8.
        int clusters = 0;
        if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                cudaSuccess ||
            cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
            (void)cudaGetLastError();   // taken: it must not fail a later check
            clusters = 0;
        }
        most = clusters > 0 ? MAX_CLUSTER : 8;
    } else {
        fprintf(stderr, "back/step16: no thread-block clusters before sm_90: step 12's "
                        "one-block rows\n");
    }
    return most;
}

template <unsigned int B, unsigned int V>
static void launch(const struct back_problem *p, unsigned int cluster)
{
    auto kernel = softmax_backward_kernel<B, V>;
    if (cluster > 8)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchAttribute attribute = {};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    // grid, block, dynamic shared memory, stream (the harness's, 0), attributes
    cudaLaunchConfig_t config = {dim3((unsigned int)p->rows * cluster), dim3(B), 0, 0,
                                 &attribute, cluster > 1 ? 1u : 0u};
    CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, (const __nv_bfloat16 *)p->y_bf16,
                                  (const __nv_bfloat16 *)p->dy_bf16, (__nv_bfloat16 *)p->dx_bf16,
                                  (unsigned int)p->cols, cluster));
}

// The most dynamic shared memory a bulk block may ask for: the opt-in limit
// (past the 48 KB any block gets), less its own arrays; set once.
static size_t bulk_limit(void)
{
    static size_t bytes = 0;
    if (bytes == 0) {
        int device, optin;
        cudaFuncAttributes own;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        CHECK_CUDA(cudaFuncGetAttributes(&own, softmax_backward_bulk_kernel));
        bytes = (size_t)optin - own.sharedSizeBytes;
        CHECK_CUDA(cudaFuncSetAttribute(softmax_backward_bulk_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
        CHECK_CUDA(cudaFuncSetAttribute(softmax_backward_bulk_kernel,
                                        cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    return bytes;
}

// The most blocks a cluster of the bulk kernel may have: 16 where
// cudaOccupancyMaxActiveClusters says a cluster of 16 fits with the most
// shared memory a block may ask for (then with less too), else 8
// (max_cluster() asked it for step 13's kernel, which has no shared
// memory to place).
static unsigned int bulk_max_cluster(void)
{
    static unsigned int most = 0;
    if (most == 0) {
        most = max_cluster() < 8 ? max_cluster() : 8;
        if (max_cluster() == MAX_CLUSTER) {
            cudaLaunchAttribute cluster = {};
            cluster.id = cudaLaunchAttributeClusterDimension;
            cluster.val.clusterDim.x = MAX_CLUSTER;
            cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
            cudaLaunchConfig_t config = {dim3(MAX_CLUSTER), dim3(BULK_BLOCK), bulk_limit(), 0,
                                         &cluster, 1};
            int clusters = 0;
            if (cudaOccupancyMaxActiveClusters(&clusters, softmax_backward_bulk_kernel, &config) !=
                cudaSuccess) {
                (void)cudaGetLastError();   // taken: it must not fail a later check
                clusters = 0;
            }
            if (clusters > 0)
                most = MAX_CLUSTER;
        }
    }
    return most;
}

// y's and dy's shares of a row over c blocks, in bytes: packs of 8.
static size_t share_bytes(size_t cols, unsigned int c)
{
    return (cols / PACK + c - 1) / c * 2 * 16;
}

// Blocks of the bulk kernel per row: the fewest (2, 4, 8, 16) whose shares
// are SHARE_BYTES or less, so that two or three blocks share an SM; past 16
// such shares, 16 blocks with bigger shares, up to what a block may ask for
// (fewer blocks an SM still beat step 13's path in float, measured up to
// 128 KB; in bfloat16, back/README says what was tried).
// 0 where the row stays on step 13's path: at most MIN_BULK_COLS wide,
// y, dy and dx not equally aligned, no clusters, or too wide.
static unsigned int bulk_cluster(const struct back_problem *p)
{
    if (p->cols <= MIN_BULK_COLS || max_cluster() == 1 ||
        ((size_t)p->y_bf16 - (size_t)p->dy_bf16) % 16 != 0 ||
        ((size_t)p->y_bf16 - (size_t)p->dx_bf16) % 16 != 0)
        return 0;
    unsigned int c = 2;
    while (c < bulk_max_cluster() && share_bytes(p->cols, c) > SHARE_BYTES)
        c *= 2;
    if (share_bytes(p->cols, c) > bulk_limit() || p->rows * c > 0x7fffffffu)   // a grid's most blocks
        return 0;
    return c;
}

static void launch_bulk(const struct back_problem *p, unsigned int cluster)
{
    unsigned int share = (unsigned int)(share_bytes(p->cols, cluster) / 32);   // packs a block
    cudaLaunchAttribute attribute = {};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    // grid, block, dynamic shared memory (y's and dy's shares), stream, attributes
    cudaLaunchConfig_t config = {dim3((unsigned int)p->rows * cluster), dim3(BULK_BLOCK),
                                 share_bytes(p->cols, cluster), 0, &attribute, 1};
    CHECK_CUDA(cudaLaunchKernelEx(&config, softmax_backward_bulk_kernel,
                                  (const __nv_bfloat16 *)p->y_bf16,
                                  (const __nv_bfloat16 *)p->dy_bf16, (__nv_bfloat16 *)p->dx_bf16,
                                  (unsigned int)p->cols, share));
}

void back_run(const struct back_problem *p)
{
    unsigned int bulk = bulk_cluster(p);
    if (bulk > 0) {
        launch_bulk(p, bulk);
        return;
    }
    // Rows that CLUSTER_BLOCK threads hold take one block, as in step 12.
    // Wider ones take a cluster: of blocks of CLUSTER_BLOCK threads where
    // max_cluster() of them hold the row, else of twice as many threads
    // (and so on), as few blocks as hold it. The fewest threads keep
    // several blocks on an SM; the fewest blocks leave none of them empty.
    unsigned int cluster = 1, threads = block_size(p->cols);
    if (p->cols > (size_t)CLUSTER_BLOCK * PER_THREAD && max_cluster() > 1) {
        threads = CLUSTER_BLOCK;
        while (threads < MAX_BLOCK && (size_t)threads * PER_THREAD * max_cluster() < p->cols)
            threads *= 2;
        size_t per_block = (size_t)threads * PER_THREAD;
        size_t need = (p->cols + per_block - 1) / per_block;
        cluster = need < max_cluster() ? (unsigned int)need : max_cluster();
    }
    bool wide = p->cols % VEC == 0 && (size_t)p->y_bf16 % (2 * VEC) == 0 &&
                (size_t)p->dy_bf16 % (2 * VEC) == 0 && (size_t)p->dx_bf16 % (2 * VEC) == 0;
    if (wide) {
        switch (threads) {
        case 32: launch<32, VEC>(p, cluster); break;
        case 64: launch<64, VEC>(p, cluster); break;
        case 128: launch<128, VEC>(p, cluster); break;
        case 256: launch<256, VEC>(p, cluster); break;
        case 512: launch<512, VEC>(p, cluster); break;
        default: launch<1024, VEC>(p, cluster); break;
        }
        return;
    }
    switch (threads) {
    case 32: launch<32, 1>(p, cluster); break;
    case 64: launch<64, 1>(p, cluster); break;
    case 128: launch<128, 1>(p, cluster); break;
    case 256: launch<256, 1>(p, cluster); break;
    case 512: launch<512, 1>(p, cluster); break;
    default: launch<1024, 1>(p, cluster); break;
    }
}

const enum back_op step_op = BACK_SOFTMAX;
const enum back_dtype step_dtype = BACK_BF16;
