// Softmax backward over a thread-block cluster: a wide row split over blocks.
//
// Change: on Hopper (sm_90) a row wider than 256 threads' registers hold
//         (256 x 16 = 4096 floats, so rows step 12 gave one block of 512 or
//         1024 threads too) is split over a thread-block cluster of up to 16
//         blocks (8 where a GPU runs only portable clusters; of 256 threads,
//         or 512 or 1024 where 16 of 256 do not hold it), which the hardware
//         runs at the same time on one GPC. Block k takes the row's k-th
//         share of 16 x B floats, as step 12's block took its row. Each block
//         sums its share of s as step 12's block summed the row; thread 0
//         leaves that sum in the block's shared memory, and after one cluster
//         barrier every block reads all of them (distributed shared memory)
//         and adds them in the same order. Up to 262144 floats stay in
//         registers. Before sm_90, step 12's one-block rows, and a line on
//         stderr says so.
// Why it helps: a block of 1024 threads at 64 registers fills an SM, so an
//         SM held one wide row, and while that block waited at its barrier
//         nothing else loaded; past 16384 floats, step 12 read the rest of
//         the row twice. Blocks of 256 threads let several rows share an SM,
//         and 16 of them hold rows 16 times wider.
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include <cooperative_groups.h>
#include <stdio.h>

#include "back.h"
#include "check.h"

namespace cg = cooperative_groups;

#define MAX_BLOCK 1024   // the most threads a block can have
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define PER_THREAD 16   // floats of y, and of dy, a thread keeps: 32 registers
#define CLUSTER_BLOCK 256   // threads a block while a cluster holds the row: several blocks an SM
#define MAX_CLUSTER 16   // the most blocks a Hopper cluster can have (8 is portable)

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
// array is written once.
template <unsigned int B>
__device__ float block_allreduce(float v)
{
    __shared__ float s_warp[B / WARP_SIZE];
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

// B threads a block, a template so that thread t's columns t + k * B are one
// address and constant offsets: no register for each of the 16.
template <unsigned int B>
__global__ void __launch_bounds__(B)
softmax_backward_kernel(const float *g_y, const float *g_dy, float *g_dx, unsigned int cols,
                        unsigned int blocks)
{
    // blocks: a row's blocks, one cluster (1: a block a row, as in step 12).
    // Block k of them holds the row's k-th share of PER_THREAD x B floats.
    unsigned int row = blockIdx.x / blocks, rank = blockIdx.x % blocks;
    const float *y_row = g_y + (size_t)row * cols;
    const float *dy_row = g_dy + (size_t)row * cols;
    float *dx_row = g_dx + (size_t)row * cols;
    // This thread's first column; its k-th is k * B floats on, a constant
    // offset from one address (y_row[first + k * B] with an unsigned index,
    // which could wrap, would take a register pair for each address).
    unsigned int first = rank * PER_THREAD * B + threadIdx.x;
    const float *y = y_row + first, *dy = dy_row + first;
    float *dx = dx_row + first;
    // How many of its columns are in the row: one compare each below.
    unsigned int mine = first < cols ? (cols - 1 - first) / B + 1 : 0;
    // Past what the cluster holds, the rest of a wide row: read twice.
    unsigned int rest = (blocks * PER_THREAD + rank) * B + threadIdx.x, stride = blocks * B;

    // Loop 1: this thread's columns into registers (0 past the row's end,
    // which adds nothing), and their share of s; the rest only summed.
    float y_r[PER_THREAD], dy_r[PER_THREAD];
#pragma unroll
    for (unsigned int k = 0; k < PER_THREAD; k++) {
        y_r[k] = k < mine ? y[k * B] : 0.0f;
        dy_r[k] = k < mine ? dy[k * B] : 0.0f;
    }
    float sum = 0.0f;
#pragma unroll
    for (unsigned int k = 0; k < PER_THREAD; k++)
        sum += dy_r[k] * y_r[k];
    for (unsigned int c = rest; c < cols; c += stride)
        sum += dy_row[c] * y_row[c];
    sum = block_allreduce<B>(sum);
    if (blocks > 1)
        sum = cluster_allreduce(sum, blocks);

    // Loop 2: dx, from the registers; the rest read again.
#pragma unroll
    for (unsigned int k = 0; k < PER_THREAD; k++)
        if (k < mine)
            dx[k * B] = y_r[k] * (dy_r[k] - sum);
    for (unsigned int c = rest; c < cols; c += stride)
        dx_row[c] = y_row[c] * (dy_row[c] - sum);
#if __CUDA_ARCH__ >= 900
    if (blocks > 1)
        cg::this_cluster().barrier_wait();
#endif
}

// Threads for a row: the fewest of 32, 64, ..., 1024 whose PER_THREAD
// floats each cover it.
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
    auto kernel = softmax_backward_kernel<MAX_BLOCK>;
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
        fprintf(stderr, "back/step13: no thread-block clusters before sm_90: step 12's "
                        "one-block rows\n");
    }
    return most;
}

template <unsigned int B>
static void launch(const struct back_problem *p, unsigned int cluster)
{
    auto kernel = softmax_backward_kernel<B>;
    if (cluster > 8)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchAttribute attribute = {};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    // grid, block, dynamic shared memory, stream (the harness's, 0), attributes
    cudaLaunchConfig_t config = {dim3((unsigned int)p->rows * cluster), dim3(B), 0, 0,
                                 &attribute, cluster > 1 ? 1u : 0u};
    CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, p->y, p->dy, p->dx, (unsigned int)p->cols,
                                  cluster));
}

void back_run(const struct back_problem *p)
{
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
    switch (threads) {
    case 32: launch<32>(p, cluster); break;
    case 64: launch<64>(p, cluster); break;
    case 128: launch<128>(p, cluster); break;
    case 256: launch<256>(p, cluster); break;
    case 512: launch<512>(p, cluster); break;
    default: launch<1024>(p, cluster); break;
    }
}

const enum back_op step_op = BACK_SOFTMAX;
