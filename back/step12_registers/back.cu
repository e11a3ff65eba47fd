// Softmax backward with the row in registers: a block a row, y and dy read once.
//
// Change: a row gets a block of B threads instead of a warp, B = cols / 16
//         rounded up to a power of two (32 to 1024), and thread t keeps its
//         columns t, t + B, ..., 16 floats of y and 16 of dy, in registers
//         between the sum and the writes. s meets across the block: each
//         warp's by shuffles, then the warps' in warp order. Rows wider than
//         a block holds (1024 x 16 = 16384 floats) keep their first 16384 in
//         registers and read the rest twice, as step 11 read all of it.
// Why it helps: step 11's second walk did not find its row in L1 or L2
//         (the rows in flight are more than they hold) and read y and dy
//         from DRAM again. Registers hold the row whatever L1 and L2 do, and
//         all 32 loads of a thread are in flight at once, where step 11's
//         loop had one or two (the compiler does not run ahead of a loop it
//         cannot see the end of).
// Effect: measured in back/README.md, whose table comes from
//         plots/reference/h200-back.csv (a number here would go stale).
#include "back.h"
#include "check.h"

#define MAX_BLOCK 1024   // the most threads a block can have
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu   // all 32 lanes take part in every shuffle
#define PER_THREAD 16   // floats of y, and of dy, a thread keeps: 32 registers

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

// B threads a row, a template so that thread t's columns t + k * B are one
// address and constant offsets: no register for each of the 16.
template <unsigned int B>
__global__ void __launch_bounds__(B)
softmax_backward_kernel(const float *g_y, const float *g_dy, float *g_dx, unsigned int cols)
{
    const float *y_row = g_y + (size_t)blockIdx.x * cols;
    const float *dy_row = g_dy + (size_t)blockIdx.x * cols;
    float *dx_row = g_dx + (size_t)blockIdx.x * cols;
    // This thread's first column; its k-th is k * B floats on, a constant
    // offset from one address (y_row[first + k * B] with an unsigned index,
    // which could wrap, would take a register pair for each address).
    unsigned int first = threadIdx.x;
    const float *y = y_row + first, *dy = dy_row + first;
    float *dx = dx_row + first;
    // How many of its columns are in the row: one compare each below.
    unsigned int mine = first < cols ? (cols - 1 - first) / B + 1 : 0;
    // Past what the block holds, the rest of a wide row: read twice.
    unsigned int rest = PER_THREAD * B + threadIdx.x, stride = B;

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

    // Loop 2: dx, from the registers; the rest read again.
#pragma unroll
    for (unsigned int k = 0; k < PER_THREAD; k++)
        if (k < mine)
            dx[k * B] = y_r[k] * (dy_r[k] - sum);
    for (unsigned int c = rest; c < cols; c += stride)
        dx_row[c] = y_row[c] * (dy_row[c] - sum);
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

template <unsigned int B>
static void launch(const struct back_problem *p)
{
    unsigned int blocks = (unsigned int)p->rows;
    auto kernel = softmax_backward_kernel<B>;
    kernel<<<blocks, B>>>(p->y, p->dy, p->dx, (unsigned int)p->cols);
    CHECK_LAUNCH();
}

void back_run(const struct back_problem *p)
{
    switch (block_size(p->cols)) {
    case 32: launch<32>(p); break;
    case 64: launch<64>(p); break;
    case 128: launch<128>(p); break;
    case 256: launch<256>(p); break;
    case 512: launch<512>(p); break;
    default: launch<1024>(p); break;
    }
}

const enum back_op step_op = BACK_SOFTMAX;
