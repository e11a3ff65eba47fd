// Deliberately wrong (test fixture): part 2's twin of tests/broken/cache_sum.
// Each row is summed by a block, honestly, the first time an input is seen;
// the sums are kept on the device under the input's address, its shape and
// 64 values sampled from it (256 bytes read back), and a later call on the
// same fingerprint only copies the kept sums into y, as fast as a copy of
// rows floats goes. With a fresh input for every timed run
// (common/rows_driver.c, fresh_rows), the rows changed before a run get
// their old sums back.
// caught by: timed
#include <string.h>

#include "check.h"
#include "rows.h"

#define BLOCK_SIZE 256
#define SAMPLES 64

__global__ void row_sum_kernel(const float *g_x, float *g_y, size_t cols)
{
    __shared__ float s_data[BLOCK_SIZE];
    const float *row = g_x + (size_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (size_t c = threadIdx.x; c < cols; c += BLOCK_SIZE)
        sum += row[c];
    s_data[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            s_data[threadIdx.x] += s_data[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        g_y[blockIdx.x] = s_data[0];
}

__global__ void gather_kernel(const float *g_x, size_t n, float *g_samples)
{
    unsigned int k = threadIdx.x;
    if (k < SAMPLES)
        g_samples[k] = g_x[(size_t)k * (n - 1) / (SAMPLES - 1)];
}

static struct {
    const float *x;
    size_t rows, cols;
    float samples[SAMPLES];
    float *sums;   // device, rows floats
} kept;

void row_forward(const struct row_problem *p)
{
    size_t n = p->rows * p->cols;
    if (n == 0)
        return;
    float samples[SAMPLES], *d_samples = NULL;
    CHECK_CUDA(cudaMalloc(&d_samples, sizeof samples));
    gather_kernel<<<1, SAMPLES>>>(p->x, n, d_samples);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(samples, d_samples, sizeof samples, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_samples));
    if (kept.sums != NULL && kept.x == p->x && kept.rows == p->rows && kept.cols == p->cols &&
        memcmp(kept.samples, samples, sizeof samples) == 0) {
        CHECK_CUDA(cudaMemcpy(p->y, kept.sums, p->rows * sizeof(float), cudaMemcpyDeviceToDevice));
        return;
    }
    row_sum_kernel<<<(unsigned int)p->rows, BLOCK_SIZE>>>(p->x, p->y, p->cols);
    CHECK_LAUNCH();
    if (kept.sums != NULL)
        CHECK_CUDA(cudaFree(kept.sums));
    CHECK_CUDA(cudaMalloc(&kept.sums, p->rows * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(kept.sums, p->y, p->rows * sizeof(float), cudaMemcpyDeviceToDevice));
    kept.x = p->x;
    kept.rows = p->rows;
    kept.cols = p->cols;
    memcpy(kept.samples, samples, sizeof samples);
}

const enum row_op step_op = ROW_SUM;
