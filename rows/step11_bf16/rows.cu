// bfloat16 in and out: half the bytes, every sum still in float.
//
// Change: x and y are bfloat16 (common/rows.h's step_dtype): a 16-byte load
//         brings 8 of them, widened to float in registers (exact), and each
//         output is rounded once to bfloat16 as it is stored. The max, the
//         exponentials, the sums and the division stay float: with 8
//         significant bits a bfloat16 sum of ones stops at 256, since
//         256 + 1 rounds back to 256 (ACCURACY.md).
// Why it helps: softmax is limited by memory, and it now moves 4 bytes per
//         element instead of 8. A float kernel handed bfloat16 buffers
//         would read each pair of values as one float; one that summed in
//         bfloat16 would be wrong.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
#include <cuda_bf16.h>

#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256   // threads per block when G <= 256 (then 256 / G rows per block)
#define UNROLL 4         // independent loads in flight per thread
#define WARPS_PER_SM 32  // enough rows' loads in flight (half the 64 warps an SM holds)
#define MAX_GROUP 1024   // the most threads a block can have
#define MAX_PER_THREAD 32 // floats of its row a thread keeps in registers
#define REST_UNROLL 2    // packs in flight per thread while filling shared memory
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

// One warp, 32 values -> their max (or sum) in every lane: at each level lane
// i combines lane i ^ offset's value, so both halves end with the same result.
template <typename Op>
__device__ float warp_allreduce(float v, Op op)
{
#pragma unroll
    for (unsigned int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v = op(v, __shfl_xor_sync(FULL_MASK, v, offset));
    return v;
}

// A group of G threads, G values -> their max (or sum) in every thread of the
// group, combined in the same order in each. With G > 32 the warps' results
// go through shared memory; the first barrier keeps a previous call's reads apart.
template <unsigned int G, typename Op>
__device__ float group_allreduce(float v, float *s_warp, Op op)
{
    v = warp_allreduce(v, op);
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
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce need every thread of the block.
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

// Every block has max(G, BLOCK_SIZE) threads: telling the compiler lets it
// budget registers so that such a block always fits an SM.
template <unsigned int G, unsigned int PACK>
__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G)
softmax_registers_kernel(const __nv_bfloat16 *g_x, __nv_bfloat16 *g_y, unsigned int rows,
                         unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one value per warp of the block
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    constexpr unsigned int SLOTS = MAX_PER_THREAD / PACK;   // packs per thread
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / G;
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
    // Only the widest group has any (a narrower one would have grown).
    extern __shared__ float s_rest[];
    unsigned int rest = (G == MAX_GROUP && packs > SLOTS * G) ? packs - SLOTS * G : 0;
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
                store_pack<PACK>(s_rest, i + k * G, r[k]);
                for (unsigned int j = 0; j < PACK; j++)
                    max = fmaxf(max, r[k][j]);
            }
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        for (unsigned int j = 0; j < PACK; j++)
            max = fmaxf(max, v[k][j]);
    max = group_allreduce<G>(max, s_warp, Max());

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
        load_pack<PACK>(s_rest, i, r);
        for (unsigned int j = 0; j < PACK; j++) {
            r[j] = exp_minus_max(r[j], max);
            sum += r[j];
        }
        store_pack<PACK>(s_rest, i, r);
    }
    if (t < split.head) {
        e_head = exp_minus_max(e_head, max);
        sum += e_head;
    }
    if (t < split.tail) {
        e_tail = exp_minus_max(e_tail, max);
        sum += e_tail;
    }
    float inv = inverse(group_allreduce<G>(sum, s_warp, Sum()));

    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK];
        load_pack<PACK>(s_rest, i, r);
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
}

// 16-byte loads and stores need each row's body on a 16-byte boundary in x
// and in y: when x and y are a multiple of 16 bytes apart, every row starts
// as far from a boundary in one as in the other, whatever its width.
static bool rows_aligned(const struct row_problem *p)
{
    return ((size_t)p->x_bf16 - (size_t)p->y_bf16) % 16 == 0;
}

// The smallest G that gives every SM WARPS_PER_SM warps, but no more
// threads than a row has packs of 8; and at least cols / MAX_PER_THREAD, so
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
           2 * g * 8 <= cols)
        g *= 2;
    while (g < MAX_GROUP && g * MAX_PER_THREAD < cols)
        g *= 2;
    return g;
}

// The most dynamic shared memory a block may ask for: the opt-in limit (past
// the 48 KB any block gets), less the shared memory the kernel declares.
static size_t shared_limit(void)
{
    static int bytes = 0;
    if (bytes == 0) {
        int device;
        CHECK_CUDA(cudaGetDevice(&device));
        CHECK_CUDA(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    }
    return (size_t)bytes - MAX_GROUP / WARP_SIZE * sizeof(float);   // s_warp takes the rest
}

// The widths where the kernel changes, for the grader to check both sides
// of each: past G x MAX_PER_THREAD floats the group doubles, past MAX_GROUP x
// MAX_PER_THREAD the rest of the row waits in shared memory, and past what
// shared memory holds the row is read from global memory again.
int row_path_widths(size_t *widths, int max)
{
    int count = 0;
    for (size_t g = WARP_SIZE; g <= MAX_GROUP && count < max; g *= 2)
        widths[count++] = g * MAX_PER_THREAD + 1;
    if (count < max)
        widths[count++] = MAX_GROUP * MAX_PER_THREAD + shared_limit() / sizeof(float) + 1;
    return count;
}

template <unsigned int G>
static void launch(const struct row_problem *p)
{
    unsigned int threads = G < BLOCK_SIZE ? BLOCK_SIZE : G;
    unsigned int rows_per_block = threads / G;
    unsigned int blocks = (unsigned int)((p->rows + rows_per_block - 1) / rows_per_block);
    size_t in_registers = (size_t)G * MAX_PER_THREAD;
    size_t rest_bytes = p->cols > in_registers ? (p->cols - in_registers) * sizeof(float) : 0;
    bool fits = rest_bytes <= shared_limit();   // else two passes, online
    auto kernel = rows_aligned(p) ? (fits ? softmax_registers_kernel<G, 8> : softmax_kernel<G, 8>)
                                  : (fits ? softmax_registers_kernel<G, 1> : softmax_kernel<G, 1>);
    size_t shared = fits ? rest_bytes : 0;
    if (shared > 0)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)shared));
    kernel<<<blocks, threads, shared>>>(static_cast<const __nv_bfloat16 *>(p->x_bf16),
                                        static_cast<__nv_bfloat16 *>(p->y_bf16),
                                        (unsigned int)p->rows, (unsigned int)p->cols);
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

const enum row_op step_op = ROW_SOFTMAX;
const enum row_dtype step_dtype = ROW_BF16;
