#!/usr/bin/env python3
"""A lead for bfloat16 LayerNorm at the vocabulary widths (session 23).

call26.sh measured what holds step 25 back there: from 32769 columns a row
is one 1024-thread block an SM (64 registers a thread fill the register
file), a third of it staged through shared memory by the threads, and the
SM loads nothing while that block reduces (0.50 of the copy at 50257).
Clusters of 256-thread blocks with the whole row in registers (c48, c8)
were slower still: 16 warps an SM. Step 23 (bfloat16 softmax) reached 0.71
at 50257 with bulk copies: each block's share of the row comes into shared
memory by the TMA unit (no register holds a byte in flight, so several
blocks an SM each keep a whole share loading), and the blocks' sums meet on
an mbarrier by asynchronous stores, never at a cluster barrier. These
variants give LayerNorm that path:
  lb:   rows of 32769 to 262143 columns, shares of at most 64 KB (step 23's);
  lb48: the same with shares of at most 48 KB (more, smaller blocks a row).
The two sums (the mean, then the centered squares: two passes, as every
LayerNorm step) are exchanged one after the other, each warp's into every
block, and added in slot order in each block: the same bits everywhere.
Writes build/wip/<name>/rows.cu and prints "name base source" lines.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = "rows/step25_bf16_packed"

DEVICE = r'''
// Hopper's asynchronous transactions, each counted in bytes on an mbarrier
// in shared memory: a bulk copy (the TMA unit moves a whole share, no
// thread holds its bytes in flight) and a store into another block's shared
// memory. A wait on the mbarrier returns once every byte it expects landed.
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
    // Visible to the copy engine and to the cluster's other blocks.
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

// A sum into block `rank`'s slot, counted on that block's mbarrier.
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

// Every warp's sum of the row, once they have all arrived here: the slots
// added in the same order in every warp of every block, the same bits.
__device__ float pushed_total(const float *slots, unsigned long long *bar, unsigned int count)
{
    mbarrier_wait(bar);
    float sum = 0.0f;
    for (unsigned int i = threadIdx.x % WARP_SIZE; i < count; i += WARP_SIZE)
        sum += slots[i];
    return warp_allreduce(sum);
}

// A row of more than one block's SHARE_BYTES, over a cluster of `cluster`
// blocks of BLOCK_SIZE threads: block `rank` takes packs [rank share,
// (rank + 1) share) of the row's body, block 0 also the head elements and
// the last block the tail ones. The share comes in by bulk copies and goes
// out the same way; each warp's sums go to every block by asynchronous
// stores, so no block waits at a cluster barrier for the others.
__global__ void __launch_bounds__(BLOCK_SIZE, 1)
layernorm_bulk_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, float *g_mean, float *g_rstd,
                      const __nv_bfloat16 *g_gamma, const __nv_bfloat16 *g_beta, float eps,
                      unsigned int cols, unsigned int share)
{
#if __CUDA_ARCH__ >= 900
    constexpr unsigned int PACK = 8;   // bfloat16s in 16 bytes
    extern __shared__ __align__(128) __nv_bfloat16 s_share[];
    __shared__ unsigned long long s_loaded, s_pushed[2];
    __shared__ float s_sums[2][MAX_CLUSTER * WARPS_PER_BLOCK];   // slot r x WARPS_PER_BLOCK + w
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
    unsigned int packs = bytes / 16, slots = blocks * WARPS_PER_BLOCK;
    Params gamma_q = params_at<PACK, true>(g_gamma, split.head);
    Params beta_q = params_at<PACK, true>(g_beta, split.head);

    if (t == 0) {
        mbarrier_expect(&s_loaded, bytes);
        mbarrier_expect(&s_pushed[0], slots * sizeof(float));
        mbarrier_expect(&s_pushed[1], slots * sizeof(float));
    }
    __syncthreads();
    cluster.barrier_arrive();   // this block's mbarriers are ready for the others' sums
    if (warp == 0)   // the copies, CHUNK bytes each, spread over the warp's lanes
        for (unsigned int b = lane * CHUNK; b < bytes; b += WARP_SIZE * CHUNK)
            bulk_load((char *)s_share + b, (const char *)x + b, min(CHUNK, bytes - b), &s_loaded);
    bool head = rank == 0 && t < split.head, tail = rank == blocks - 1 && t < split.tail;
    float e_head = head ? __bfloat162float(x_row[t]) : 0.0f;
    float e_tail = tail ? __bfloat162float(x_row[cols - split.tail + t]) : 0.0f;
    mbarrier_wait(&s_loaded);

    // The mean: each warp's sum to every block, then the row's.
    float v[PACK], sum = e_head + e_tail;
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        load_pack<PACK>(s_share, i, v);
        for (unsigned int j = 0; j < PACK; j++)
            sum += v[j];
    }
    sum = warp_allreduce(sum);
    cluster.barrier_wait();   // every block's mbarriers are ready
    if (lane < blocks)
        push_sum(&s_sums[0][rank * WARPS_PER_BLOCK + warp], &s_pushed[0], lane, sum);
    float mean = pushed_total(s_sums[0], &s_pushed[0], slots) / cols;

    // The variance, two-pass, from the share in shared memory.
    sum = 0.0f;
    if (head)
        sum += (e_head - mean) * (e_head - mean);
    if (tail)
        sum += (e_tail - mean) * (e_tail - mean);
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        load_pack<PACK>(s_share, i, v);
        for (unsigned int j = 0; j < PACK; j++)
            sum += (v[j] - mean) * (v[j] - mean);
    }
    sum = warp_allreduce(sum);
    if (lane < blocks)
        push_sum(&s_sums[1][rank * WARPS_PER_BLOCK + warp], &s_pushed[1], lane, sum);
    float rstd = rsqrtf(pushed_total(s_sums[1], &s_pushed[1], slots) / cols + eps);

    // y over x in shared memory, rounded once, then out by bulk copies.
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        float gamma[PACK], beta[PACK];
        load_pack<PACK>(s_share, i, v);
        load_params<PACK, true>(gamma_q, first + i, gamma);
        load_params<PACK, true>(beta_q, first + i, beta);
        for (unsigned int j = 0; j < PACK; j++)
            v[j] = (v[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<PACK>(s_share, i, v);
    }
    if (head)
        y_row[t] = __float2bfloat16_rn((e_head - mean) * rstd * __bfloat162float(g_gamma[t]) +
                                       __bfloat162float(g_beta[t]));
    if (tail) {
        unsigned int c = cols - split.tail + t;
        y_row[c] = __float2bfloat16_rn((e_tail - mean) * rstd * __bfloat162float(g_gamma[c]) +
                                       __bfloat162float(g_beta[c]));
    }
    if (rank == 0 && t == 0) {
        g_mean[row] = mean;
        g_rstd[row] = rstd;
    }
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

'''

HOST = r'''// The bulk kernel's shared memory a block may ask for, beyond the 48 KB
// every block gets, less its own arrays.
static size_t bulk_limit(void)
{
    static size_t bytes = 0;
    if (bytes == 0) {
        cudaFuncAttributes own;
        CHECK_CUDA(cudaFuncGetAttributes(&own, layernorm_bulk_kernel));
        bytes = (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) - own.sharedSizeBytes;
        CHECK_CUDA(cudaFuncSetAttribute(layernorm_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)bytes));
    }
    return bytes;
}

// Blocks of the bulk kernel per row: the fewest (2, 4 or 8) whose shares,
// each under SHARE_BYTES, hold the row; 0 where the row stays on step 25's
// paths (rows that one block's share holds, rows too wide for a cluster's,
// x and y not equally aligned, GPUs without clusters).
static unsigned int bulk_cluster(const struct row_problem *p)
{
    if (cluster_size() == 1 || !rows_aligned(p) || p->cols * 2 <= SHARE_BYTES ||
        SHARE_BYTES > bulk_limit())
        return 0;
    for (unsigned int c = 2; c <= cluster_size(); c *= 2)
        if (p->cols * 2 < (size_t)c * SHARE_BYTES && p->rows * c <= 0x7fffffffu)
            return c;
    return 0;
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
    CHECK_CUDA(cudaLaunchKernelEx(&config, layernorm_bulk_kernel,
                                  static_cast<const __nv_bfloat16 *>(p->x_bf16),
                                  static_cast<__nv_bfloat16 *>(p->y_bf16), p->mean, p->rstd,
                                  static_cast<const __nv_bfloat16 *>(p->gamma_bf16),
                                  static_cast<const __nv_bfloat16 *>(p->beta_bf16), p->eps,
                                  (unsigned int)p->cols, share));
}

void row_forward(const struct row_problem *p)
{
    unsigned int bulk = bulk_cluster(p);
    if (bulk > 0) {
        launch_bulk(p, bulk);
        return;
    }
'''


def sub(text, old, new, count=1):
    if text.count(old) != count:
        sys.exit(f"lnbulk.py: {old[:70]!r} found {text.count(old)} times, not {count}")
    return text.replace(old, new)


def bulk(src, share_kb):
    s = src
    s = sub(s, "#define REST_UNROLL 2    // packs in flight per thread while filling shared memory\n",
            "#define REST_UNROLL 2    // packs in flight per thread while filling shared memory\n"
            f"#define SHARE_BYTES ({share_kb} * 1024) // a bulk block's share at most\n"
            "#define CHUNK (16 * 1024)  // bytes per bulk copy instruction\n"
            "#define WARPS_PER_BLOCK (BLOCK_SIZE / WARP_SIZE)\n")
    s = sub(s, "// 16-byte loads and stores need each row's body on a 16-byte boundary in x\n",
            DEVICE.lstrip("\n") + "// 16-byte loads and stores need each row's body on a 16-byte boundary in x\n")
    s = sub(s, "void row_forward(const struct row_problem *p)\n{\n", HOST)
    return s


NORMALIZE = """    // y over x in shared memory, rounded once, then out by bulk copies.
    for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
        float gamma[PACK], beta[PACK];
        load_pack<PACK>(s_share, i, v);
        load_params<PACK, true>(gamma_q, first + i, gamma);
        load_params<PACK, true>(beta_q, first + i, beta);
        for (unsigned int j = 0; j < PACK; j++)
            v[j] = (v[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<PACK>(s_share, i, v);
    }
"""

UNROLLED = """    // y over x in shared memory, rounded once, then out by bulk copies.
    // gamma and beta come from L2 (a row's are more than L1 keeps beside
    // the shares): NORM_UNROLL packs' loads go out before any is used.
    for (unsigned int i = t; i < packs; i += NORM_UNROLL * BLOCK_SIZE) {
        float gamma[NORM_UNROLL][PACK], beta[NORM_UNROLL][PACK];
#pragma unroll
        for (unsigned int k = 0; k < NORM_UNROLL; k++)
            if (i + k * BLOCK_SIZE < packs) {
                load_params<PACK, true>(gamma_q, first + i + k * BLOCK_SIZE, gamma[k]);
                load_params<PACK, true>(beta_q, first + i + k * BLOCK_SIZE, beta[k]);
            }
#pragma unroll
        for (unsigned int k = 0; k < NORM_UNROLL; k++)
            if (i + k * BLOCK_SIZE < packs) {
                load_pack<PACK>(s_share, i + k * BLOCK_SIZE, v);
                for (unsigned int j = 0; j < PACK; j++)
                    v[j] = (v[j] - mean) * rstd * gamma[k][j] + beta[k][j];
                store_pack<PACK>(s_share, i + k * BLOCK_SIZE, v);
            }
    }
"""


def unrolled(src, n):
    s = sub(src, NORMALIZE, UNROLLED)
    return sub(s, "#define CHUNK (16 * 1024)", f"#define NORM_UNROLL {n}  // packs of gamma and beta in flight per thread\n#define CHUNK (16 * 1024)")


VARIANTS = {
    "lb": lambda src: bulk(src, 64),
    "lb48": lambda src: bulk(src, 48),
    "lbu2": lambda src: unrolled(bulk(src, 48), 2),
    "lbu4": lambda src: unrolled(bulk(src, 48), 4),
    # lbu4 held to 64 registers, four blocks an SM as lb48's shares allow
    "lbu4m": lambda src: sub(unrolled(bulk(src, 48), 4), "__launch_bounds__(BLOCK_SIZE, 1)\nlayernorm_bulk_kernel",
                             "__launch_bounds__(BLOCK_SIZE, 4)\nlayernorm_bulk_kernel"),
}


def main():
    src = open(os.path.join(ROOT, BASE, "rows.cu")).read()
    for name in (sys.argv[1:] or ["lb", "lb48"]):
        out = os.path.join(ROOT, "build", "wip", name)
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "rows.cu")
        with open(path, "w") as f:
            f.write(VARIANTS[name](src))
        print(name, BASE, os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
