#!/usr/bin/env python3
"""The lead session 23 left for bfloat16 LayerNorm past 32768 columns
(written in session 23, not yet run on a GPU).

call_np.sh measured what lb48 (lnbulk.py: step 23's bulk copies for
LayerNorm) loses to gamma and beta: without reading them it ran 1.26-1.60x
faster (0.73 of the copy at 50257, 0.86 at 65536), and L1 fetched 23.7 M
sectors from L2 with them against 8.4 M without, because a row's 200 KB of
parameters do not stay in L1 beside the shares. These variants keep them on
chip: a persistent cluster, as many as fit the GPU at once, takes row after
row; each block loads its columns' gamma and beta into shared memory once,
as bfloat16, and only x and y move per row.

  lr:   shares of at most 20 KB of x (clusters of 2 to 16 blocks: 8 at
        50257 and 65536, 16 at 128256 and 151936), four blocks an SM (three
        at 151936: 60 KB a block);
  lr8:  at most 8 blocks a cluster, 40 KB shares (4 at 50257 and 65536,
        8 at 128256 and 151936), about two blocks an SM;
  lr2:  lr with two shares of x a block: the next row's bulk copies start
        at the top of this row, before its own have landed, so a block keeps
        bytes in flight through its exchanges and normalize pass (four
        blocks an SM at 50257, three at 32769, 65536 and 128256, two at
        151936: 79 KB a block). The next row's share is the one whose y was
        stored at the end of the row before, so that store's read stays on
        the path (three shares, or a later prefetch, would hide it). All are
        built for four blocks an SM (55 registers, no spills).

What changes against lb48's kernel, and why:
- The parameters' columns are fixed per block, but an odd width starts each
  row's 16-byte packs at a different column (the row's head, 0 to 7): the
  block keeps columns 8 first .. 8 (first + share + 1), and reads the 8
  parameters of a pack as halves head .. head + 7 of two aligned 16-byte
  slots, shifted in registers (a funnel shift for an odd head). The head is
  the same in the whole row, so the normalize loop is compiled once per
  head (a switch per row, no divergence).
- The mbarriers live through many rows: initialized once, re-armed per row
  (arrive.expect_tx), waited with the phase's parity. The pushed sums are
  double-buffered by row: a block is at most one exchange ahead of another
  (it needs every block's sums of a row to leave it), so row k + 2 never
  lands on slots still read for row k.
- The next row's bulk copies wait until this row's bulk stores have read
  the share (bulk_store_wait, then a block barrier); with two shares (lr2)
  row k + 1's copies start at the top of row k, into the share row k - 1
  left (stored and read by then), each share's mbarrier a phase every
  other row.

Writes build/wip/<name>/rows.cu and prints "name base source" lines.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lnbulk  # noqa: E402

ROOT = lnbulk.ROOT

DEVICE = r'''
// A phase of an mbarrier that lives through many rows: initialized once
// (one arrival a phase), re-armed by each row's arrive.expect_tx, waited
// with the phase's parity. Bytes may land before the re-arm: the phase
// cannot end until this block's own arrival.
__device__ void mbarrier_init_one(unsigned long long *bar)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)));
#endif
}

__device__ void mbarrier_arm(unsigned long long *bar, unsigned int bytes)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
                 "r"(bytes) : "memory");
#endif
}

__device__ void mbarrier_wait_parity(unsigned long long *bar, unsigned int parity)
{
#if __CUDA_ARCH__ >= 900
    unsigned int done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory");
#endif
}

// The same, for bytes other blocks stored (st.async releases them at
// cluster scope, so the wait acquires at cluster scope).
__device__ void mbarrier_wait_cluster(unsigned long long *bar, unsigned int parity)
{
#if __CUDA_ARCH__ >= 900
    unsigned int done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory");
#endif
}

__device__ float pushed_total_parity(const float *slots, unsigned long long *bar, unsigned int count,
                                     unsigned int parity)
{
    mbarrier_wait_cluster(bar, parity);
    float sum = 0.0f;
    for (unsigned int i = threadIdx.x % WARP_SIZE; i < count; i += WARP_SIZE)
        sum += slots[i];
    return warp_allreduce(sum);
}

// The 8 parameters of pack i of a row whose body starts H columns past a
// 16-byte boundary: halves H .. H + 7 of slots i and i + 1, widened.
template <unsigned int H>
__device__ void params_shifted(const uint4 *s_p, unsigned int i, float (&v)[8])
{
    uint4 a = s_p[i];
    uint4 b = H > 0 ? s_p[i + 1] : make_uint4(0u, 0u, 0u, 0u);
    unsigned int w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (unsigned int k = 0; k < 4; k++) {
        unsigned int word = H % 2 == 0 ? w[H / 2 + k] : __funnelshift_r(w[H / 2 + k], w[H / 2 + k + 1], 16);
        v[2 * k] = __uint_as_float(word << 16);
        v[2 * k + 1] = __uint_as_float(word & 0xffff0000u);
    }
}

// y over x in the share, with the parameters from shared memory.
template <unsigned int H>
__device__ void normalize_share(__nv_bfloat16 *s_share, const uint4 *s_gamma, const uint4 *s_beta,
                                unsigned int packs, float mean, float rstd)
{
    for (unsigned int i = threadIdx.x; i < packs; i += BLOCK_SIZE) {
        float v[8], gamma[8], beta[8];
        load_pack<8>(s_share, i, v);
        params_shifted<H>(s_gamma, i, gamma);
        params_shifted<H>(s_beta, i, beta);
        for (unsigned int j = 0; j < 8; j++)
            v[j] = (v[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<8>(s_share, i, v);
    }
}

// lb48's kernel made persistent: clusters of `blocks` blocks take rows
// cluster, cluster + clusters, ...; block `rank` always takes packs [rank
// share, (rank + 1) share) of a row's body, and keeps the parameters of
// those columns in shared memory for all its rows.
__global__ void __launch_bounds__(BLOCK_SIZE, 4)   // four blocks an SM: 64 registers at most
layernorm_resident_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, float *g_mean, float *g_rstd,
                          const __nv_bfloat16 *g_gamma, const __nv_bfloat16 *g_beta, float eps,
                          unsigned int rows, unsigned int cols, unsigned int share)
{
#if __CUDA_ARCH__ >= 900
    constexpr unsigned int PACK = 8;   // bfloat16s in 16 bytes
    extern __shared__ __align__(128) unsigned char s_raw[];
    // RES_BUFFERS shares of x (two: the next row's lands while this one is
    // reduced), then share + 1 packs of gamma, then of beta.
    uint4 *s_gamma = reinterpret_cast<uint4 *>(s_raw + (size_t)RES_BUFFERS * share * 16);
    uint4 *s_beta = s_gamma + share + 1;
    __shared__ unsigned long long s_loaded[RES_BUFFERS], s_pushed[2][2];   // [row % 2][exchange]
    __shared__ float s_sums[2][2][RES_CLUSTER * WARPS_PER_BLOCK];   // [row % 2][exchange][slot]
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int blocks = cluster.num_blocks(), rank = cluster.block_rank();
    unsigned int clusters = gridDim.x / blocks;
    unsigned int t = threadIdx.x, lane = t % WARP_SIZE, warp = t / WARP_SIZE;
    unsigned int slots = blocks * WARPS_PER_BLOCK, first = rank * share;

    // The parameters of columns 8 first .. 8 (first + share + 1), once.
    __nv_bfloat16 *g16 = reinterpret_cast<__nv_bfloat16 *>(s_gamma);
    __nv_bfloat16 *b16 = reinterpret_cast<__nv_bfloat16 *>(s_beta);
    for (unsigned int c = t; c < 8 * (share + 1); c += BLOCK_SIZE) {
        size_t col = (size_t)8 * first + c;
        g16[c] = col < cols ? g_gamma[col] : __float2bfloat16(0.0f);
        b16[c] = col < cols ? g_beta[col] : __float2bfloat16(0.0f);
    }
    if (t == 0) {
        for (unsigned int b = 0; b < RES_BUFFERS; b++)
            mbarrier_init_one(&s_loaded[b]);
        for (unsigned int b = 0; b < 2; b++)
            for (unsigned int e = 0; e < 2; e++)
                mbarrier_init_one(&s_pushed[b][e]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    cluster.sync();   // every block's mbarriers are ready for the others' sums

    // This block's share of a row into x buffer `buf` (thread 0 arms its
    // mbarrier, warp 0's lanes start the copies, CHUNK bytes each).
    auto fetch = [&](unsigned int r, unsigned int buf) {
        RowSplit sp = split_row<PACK>(g_x + (size_t)r * cols, cols);
        unsigned int f = min(first, sp.packs);
        unsigned int n = (min(first + share, sp.packs) - f) * 16;
        const char *src = (const char *)(g_x + (size_t)r * cols + sp.head + (size_t)f * PACK);
        char *dst = (char *)s_raw + (size_t)buf * share * 16;
        if (t == 0)
            mbarrier_arm(&s_loaded[buf], n);
        if (warp == 0)
            for (unsigned int o = lane * CHUNK; o < n; o += WARP_SIZE * CHUNK)
                bulk_load(dst + o, src + o, min(CHUNK, n - o), &s_loaded[buf]);
    };
    if (RES_BUFFERS == 2 && blockIdx.x / blocks < rows)
        fetch(blockIdx.x / blocks, 0);

    unsigned int k = 0;   // this block's rows so far
    for (unsigned int row = blockIdx.x / blocks; row < rows; row += clusters, k++) {
        unsigned int b = k % 2, parity = (k / 2) % 2;   // the row's buffers, and their phase
        unsigned int xb = k % RES_BUFFERS;   // its x buffer; the mbarrier's phase:
        unsigned int x_parity = (k / RES_BUFFERS) % 2;
        __nv_bfloat16 *s_share = reinterpret_cast<__nv_bfloat16 *>(s_raw + (size_t)xb * share * 16);
        const __nv_bfloat16 *x_row = g_x + (size_t)row * cols;
        __nv_bfloat16 *y_row = g_y + (size_t)row * cols;
        RowSplit split = split_row<PACK>(x_row, cols);
        unsigned int from = min(first, split.packs);
        unsigned int bytes = (min(first + share, split.packs) - from) * 16;   // this block's
        __nv_bfloat16 *y = y_row + split.head + (size_t)from * PACK;
        unsigned int packs = bytes / 16;
        if (t == 0) {
            mbarrier_arm(&s_pushed[b][0], slots * sizeof(float));
            mbarrier_arm(&s_pushed[b][1], slots * sizeof(float));
        }
        if (RES_BUFFERS == 1)
            fetch(row, 0);
        else if (row + clusters < rows)   // the other buffer's last row has been stored
            fetch(row + clusters, (k + 1) % 2);
        bool head = rank == 0 && t < split.head, tail = rank == blocks - 1 && t < split.tail;
        float e_head = head ? __bfloat162float(x_row[t]) : 0.0f;
        float e_tail = tail ? __bfloat162float(x_row[cols - split.tail + t]) : 0.0f;
        mbarrier_wait_parity(&s_loaded[xb], x_parity);

        float v[PACK], sum = e_head + e_tail;
        for (unsigned int i = t; i < packs; i += BLOCK_SIZE) {
            load_pack<PACK>(s_share, i, v);
            for (unsigned int j = 0; j < PACK; j++)
                sum += v[j];
        }
        sum = warp_allreduce(sum);
        if (lane < blocks)
            push_sum(&s_sums[b][0][rank * WARPS_PER_BLOCK + warp], &s_pushed[b][0], lane, sum);
        float mean = pushed_total_parity(s_sums[b][0], &s_pushed[b][0], slots, parity) / cols;

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
            push_sum(&s_sums[b][1][rank * WARPS_PER_BLOCK + warp], &s_pushed[b][1], lane, sum);
        float rstd = rsqrtf(pushed_total_parity(s_sums[b][1], &s_pushed[b][1], slots, parity) / cols + eps);

        switch (split.head) {   // the same in the whole row: no divergence
        case 0: normalize_share<0>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        case 1: normalize_share<1>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        case 2: normalize_share<2>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        case 3: normalize_share<3>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        case 4: normalize_share<4>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        case 5: normalize_share<5>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        case 6: normalize_share<6>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
        default: normalize_share<7>(s_share, s_gamma, s_beta, packs, mean, rstd); break;
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
            for (unsigned int o = lane * CHUNK; o < bytes; o += WARP_SIZE * CHUNK)
                bulk_store((char *)y + o, (const char *)s_share + o, min(CHUNK, bytes - o));
            bulk_store_wait();   // the share has been read: the next row may land in it
        }
        __syncthreads();
    }
#else
    __trap();   // the host launches it on sm_90 and later only
#endif
}

'''

HOST = r'''// Blocks a cluster for the resident kernel: the fewest (2 to RES_CLUSTER)
// whose shares of x stay within RES_SHARE_BYTES; 0 where the row stays on
// step 25's paths.
static unsigned int resident_cluster(const struct row_problem *p)
{
    if (cluster_size() == 1 || !rows_aligned(p) || p->cols <= RES_MIN_COLS)
        return 0;
    for (unsigned int c = 2; c <= RES_CLUSTER; c *= 2)
        if (p->cols * 2 <= (size_t)c * RES_SHARE_BYTES)
            return c;
    return 0;
}

// As many clusters as the GPU holds at once (at most one a row), each
// taking every clusters-th row.
static bool launch_resident(const struct row_problem *p, unsigned int cluster)
{
    unsigned int share = (unsigned int)((p->cols / 8 + cluster - 1) / cluster);
    size_t shared = (size_t)RES_BUFFERS * share * 16 + 2 * ((size_t)share + 1) * 16;
    auto kernel = layernorm_resident_kernel;
    // The occupancy query and the attributes, once per (cluster, shared): the
    // harness times row_forward, host calls and all.
    static unsigned int last_cluster = 0;
    static size_t last_shared = 0;
    static int fit = 0;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(cluster);
    config.blockDim = dim3(BLOCK_SIZE);
    config.dynamicSmemBytes = shared;
    config.attrs = &attribute;
    config.numAttrs = 1;
    if (cluster != last_cluster || shared != last_shared) {
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
        if (cluster > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
            (void)cudaGetLastError();
        if (cudaOccupancyMaxActiveClusters(&fit, kernel, &config) != cudaSuccess)
            fit = 0;
        (void)cudaGetLastError();
        last_cluster = cluster;
        last_shared = shared;
    }
    if (fit <= 0 || p->rows == 0)
        return false;
    unsigned int clusters = (unsigned int)((size_t)fit < p->rows ? (size_t)fit : p->rows);
    config.gridDim = dim3(clusters * cluster);
    CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, static_cast<const __nv_bfloat16 *>(p->x_bf16),
                                  static_cast<__nv_bfloat16 *>(p->y_bf16), p->mean, p->rstd,
                                  static_cast<const __nv_bfloat16 *>(p->gamma_bf16),
                                  static_cast<const __nv_bfloat16 *>(p->beta_bf16), p->eps,
                                  (unsigned int)p->rows, (unsigned int)p->cols, share));
    return true;
}

void row_forward(const struct row_problem *p)
{
    unsigned int resident = resident_cluster(p);
    if (resident > 0 && launch_resident(p, resident))
        return;
'''


def add_resident(s, share_kb, most, buffers, helpers=""):
    """The resident path into a source that has CHUNK and WARPS_PER_BLOCK
    defined: its knobs, its widths for the grader, its kernel (after
    `helpers`) and its launch. resident() and step() both use it."""
    s = lnbulk.sub(s, "#define CHUNK (16 * 1024)  // bytes per bulk copy instruction\n",
                   "#define CHUNK (16 * 1024)  // bytes per bulk copy instruction\n"
                   f"#define RES_SHARE_BYTES ({share_kb} * 1024) // x a resident block takes at most\n"
                   f"#define RES_CLUSTER {most}  // blocks a resident cluster at most\n"
                   f"#define RES_BUFFERS {buffers}  // shares of x a block holds: 2, the next row's in flight\n"
                   "#define RES_MIN_COLS 32768 // narrower rows keep step 25's paths (0.87 of the copy at 32768)\n")
    s = lnbulk.sub(s, """        widths[count++] = on_chip(BLOCK_SIZE * c, c) + 1;
    return count;
}""", """        widths[count++] = on_chip(BLOCK_SIZE * c, c) + 1;
    // The resident kernel's rows: past RES_MIN_COLS, where its cluster
    // doubles, and past its widest cluster (back to the paths above).
    if (c > 1 && count < max)
        widths[count++] = RES_MIN_COLS + 1;
    for (size_t r = 2; c > 1 && r <= RES_CLUSTER && count < max; r *= 2)
        if (r * RES_SHARE_BYTES / 2 > RES_MIN_COLS)
            widths[count++] = r * RES_SHARE_BYTES / 2 + 1;
    return count;
}""")
    s = lnbulk.sub(s, "// 16-byte loads and stores need each row's body on a 16-byte boundary in x\n",
                   helpers + DEVICE.lstrip("\n") +
                   "// 16-byte loads and stores need each row's body on a 16-byte boundary in x\n")
    return lnbulk.sub(s, "void row_forward(const struct row_problem *p)\n{\n", HOST)


# The variants' waits end: a phase that never completes (a wrong parity, a
# lost arrival) traps after about 4 s at 1.98 GHz, so the launch fails with an
# error instead of holding the GPU until the process is killed. Session 24's
# first run of these variants lost the device machine without a log; this
# makes a hang an ordinary failure. The step keeps step 23's plain waits.
BOUNDED_WAIT = """    unsigned int done = 0;
    long long t0 = clock64();
    while (!done) {
        if (clock64() - t0 > (1ll << 33))
            __trap();
"""


def resident(src, share_kb, most, buffers=1):
    # lb48's helpers and its bulk kernel (for the rows past the resident path)
    s = add_resident(lnbulk.bulk(src, 48), share_kb, most, buffers)
    for scope in ("shared::cta", "acquire.cluster.shared::cta"):
        plain = ("    unsigned int done = 0;\n    while (!done)\n"
                 f"        asm volatile(\"{{\\n .reg .pred p;\\n mbarrier.try_wait.parity.{scope}.b64 p, [%1], %2;\\n\"\n"
                 "                     \" selp.u32 %0, 1, 0, p;\\n}\" : \"=r\"(done) : \"r\"(shared_address(bar)), \"r\"(parity) : \"memory\");\n")
        bounded = BOUNDED_WAIT + plain.split("\n", 2)[2].replace("\n                     ", "\n                         ").replace(
            "        asm", "        asm", 1)
        bounded = bounded.rstrip("\n") + "\n    }\n"
        s = lnbulk.sub(s, plain, bounded)
    # lb48's single-phase wait (its bulk kernel takes the rows past the resident path)
    plain = ("    unsigned int done = 0;\n    while (!done)\n"
             "        asm volatile(\"{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\\n\"\n"
             "                     \" selp.u32 %0, 1, 0, p;\\n}\" : \"=r\"(done) : \"r\"(shared_address(bar)) : \"memory\");\n")
    bounded = BOUNDED_WAIT + plain.split("\n", 2)[2].replace("\n                     ", "\n                         ")
    s = lnbulk.sub(s, plain, bounded.rstrip("\n") + "\n    }\n")
    return s


VARIANTS = {"lr": (20, 16), "lr8": (40, 8), "lr2": (20, 16, 2)}

HEADER = """// Resident parameters: wide bfloat16 rows come in by bulk copies, to clusters that keep gamma and beta.
//
// Change: a bfloat16 row wider than RES_MIN_COLS is split over a cluster
//         of 2 to RES_CLUSTER blocks of 256 threads, and the clusters stay:
//         as many as the GPU holds at once, each taking every clusters-th
//         row. A block loads its columns' gamma and beta into shared memory
//         once, as bfloat16, and each row's share of x comes in by bulk
//         copies (cp.async.bulk: the TMA unit moves it, no register holds a
//         byte in flight). Each warp's sums go to every block by
//         asynchronous stores counted on mbarriers (step 23's exchange), so
//         no block waits at a cluster barrier. Narrower rows, x and y
//         unequally aligned, and GPUs before sm_90 keep step 25's paths.
// Why it helps: past 32768 columns step 25 fetched every row's 200 KB of
//         gamma and beta from L2 again (they do not stay in L1 beside the
//         row's shared memory): 23.7 M sectors against 8.4 M for x alone.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
"""


def step(src, share_kb, most, buffers=1):
    """The step's source: step 25 with the resident path only (none of lb48's
    bulk kernel), its header rewritten; make new's last header line kept."""
    body = src[src.index("// Started from "):]
    body = body.replace("// Started from step18_bf16_layernorm_cluster by make new: make diff STEP=rows/25",
                        "// Started from step25_bf16_packed by make new: make diff STEP=rows/26")
    s = HEADER + body
    helpers = lnbulk.DEVICE.lstrip("\n")
    helpers = (helpers[:helpers.index("// An mbarrier for one phase")] +
               helpers[helpers.index("// bytes (a multiple of 16"):helpers.index("// Every warp's sum of the row")])
    s = lnbulk.sub(s, "#define REST_UNROLL 2    // packs in flight per thread while filling shared memory\n",
                   "#define REST_UNROLL 2    // packs in flight per thread while filling shared memory\n"
                   "#define CHUNK (16 * 1024)  // bytes per bulk copy instruction\n"
                   "#define WARPS_PER_BLOCK (BLOCK_SIZE / WARP_SIZE)\n")
    return add_resident(s, share_kb, most, buffers, helpers)


def main():
    src = open(os.path.join(ROOT, lnbulk.BASE, "rows.cu")).read()
    if sys.argv[1:2] == ["--step"]:   # resident.py --step NAME: the step's rows.cu on stdout
        sys.stdout.write(step(src, *VARIANTS[sys.argv[2]]))
        return
    for name in (sys.argv[1:] or list(VARIANTS)):
        out = os.path.join(ROOT, "build", "wip", name)
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "rows.cu")
        with open(path, "w") as f:
            f.write(resident(src, *VARIANTS[name]))
        print(name, lnbulk.BASE, os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
