// Wide rows: what the registers cannot hold waits in shared memory.
//
// Change: rows wider than G x MAX_PER_THREAD = 32768 floats keep their first
//         32768 floats in registers, as in step 6, and the rest in shared
//         memory (up to the 227 KB a Hopper block may ask for: rows of about
//         90000 floats). Each thread writes and reads only its own packs
//         there, so only the group's sums need barriers. Wider rows still
//         take step 5's three passes.
// Why it helps: a row of 65536 floats is 256 KB: registers hold 128 KB of
//         it (32 floats a thread) and shared memory at most 227 KB, neither
//         all of it, but both together do: it is read once, not three times.
// Effect: measured in README.md beside this file, whose tables make docs
//         writes from plots/reference (a number here would go stale).
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

// Every block has max(G, BLOCK_SIZE) threads: telling the compiler lets it
// budget registers so that such a block always fits an SM.
template <unsigned int G, unsigned int PACK>
__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G)
layernorm_registers_kernel(const float *g_x, float *g_y, float *g_mean,
                                           float *g_rstd, const float *g_gamma,
                                           const float *g_beta, float eps, unsigned int rows,
                                           unsigned int cols)
{
    __shared__ float s_warp[MAX_GROUP / WARP_SIZE];   // one sum per warp of the block
    constexpr unsigned int ROWS_PER_BLOCK = G < BLOCK_SIZE ? BLOCK_SIZE / G : 1;
    constexpr unsigned int SLOTS = MAX_PER_THREAD / PACK;   // packs per thread
    unsigned int t = threadIdx.x % G;   // this thread's place in its row's group
    unsigned int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / G;
    // A group past the last row reads nothing but stays: the barriers in
    // group_allreduce need every thread of the block.
    unsigned int packs = (row < rows) ? cols / PACK : 0;   // PACK divides cols
    // This thread's first pack; slot k is k G packs further, a constant
    // offset once the loops are unrolled (no address arithmetic per slot).
    const float *x = g_x + (size_t)row * cols + t * PACK;
    float *y = g_y + (size_t)row * cols + t * PACK;
    const float *gamma_t = g_gamma + t * PACK, *beta_t = g_beta + t * PACK;
    float v[SLOTS][PACK];   // constant indices only, after unrolling: registers
    // Packs past the registers' SLOTS x G: this thread's are i = t, t + G, ...
    // Only the widest group has any (a narrower one would have grown).
    extern __shared__ float s_rest[];
    unsigned int rest = (G == MAX_GROUP && packs > SLOTS * G) ? packs - SLOTS * G : 0;
    const float *x_rest = g_x + (size_t)row * cols + SLOTS * G * PACK;

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
                    sum += r[k][j];
            }
    }
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        for (unsigned int j = 0; j < PACK; j++)
            sum += v[k][j];
    float mean = group_allreduce<G>(sum, s_warp) / cols;

    // The variance, two-pass, from the registers (empty slots left out).
    sum = 0.0f;
#pragma unroll
    for (unsigned int k = 0; k < SLOTS; k++)
        if (t + k * G < packs)
            for (unsigned int j = 0; j < PACK; j++)
                sum += (v[k][j] - mean) * (v[k][j] - mean);
    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK];
        load_pack<PACK>(s_rest, i, r);
        for (unsigned int j = 0; j < PACK; j++)
            sum += (r[j] - mean) * (r[j] - mean);
    }
    float var = group_allreduce<G>(sum, s_warp) / cols;
    float rstd = rsqrtf(var + eps);

    for (unsigned int i = t; i < rest; i += G) {
        float r[PACK], gamma[PACK], beta[PACK];
        unsigned int c = SLOTS * G + i;   // the pack's place in the row
        load_pack<PACK>(s_rest, i, r);
        load_pack<PACK>(g_gamma, c, gamma);
        load_pack<PACK>(g_beta, c, beta);
        for (unsigned int j = 0; j < PACK; j++)
            r[j] = (r[j] - mean) * rstd * gamma[j] + beta[j];
        store_pack<PACK>(g_y + (size_t)row * cols, c, r);
    }
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
    bool fits = rest_bytes <= shared_limit();   // else three passes, as in step 5
    auto kernel = rows_aligned(p) ? (fits ? layernorm_registers_kernel<G, 4> : layernorm_kernel<G, 4>)
                                  : (fits ? layernorm_registers_kernel<G, 1> : layernorm_kernel<G, 1>);
    size_t shared = fits ? rest_bytes : 0;
    if (shared > 0)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)shared));
    kernel<<<blocks, threads, shared>>>(p->x, p->y, p->mean, p->rstd, p->gamma, p->beta, p->eps,
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

const enum row_op step_op = ROW_LAYERNORM;
