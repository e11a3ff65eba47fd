// Deliberately wrong (test fixture): step 2's kernel, with a memory. The
// first pass over an input reads 64 of its values (256 bytes, far under the
// gpu-work check's share) and looks up the input's address, its length and
// those values among the sums it kept; on a hit it writes the kept sum with
// one thread and stops. Otherwise it reduces honestly and keeps the sum when
// the last pass ends. Timed on one input (--same-input, n = 2^25) it ran at
// 5044 GB/s on the H200, above the 4814 GB/s peak; with a fresh input for
// every timed run (common/harness.h, fresh_next), the kept sum is the one
// from before the run's change.
// caught by: timed
#include <string.h>

#include "check.h"
#include "reduce.h"

#define BLOCK_SIZE 256
#define SAMPLES 64
#define KEPT 16

__global__ void reduce_kernel(const float *g_in, float *g_out, unsigned int n)
{
    __shared__ float s_data[BLOCK_SIZE];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s_data[tid] = (i < n) ? g_in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            s_data[tid] += s_data[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        g_out[blockIdx.x] = s_data[0];
}

__global__ void gather_kernel(const float *g_in, size_t n, float *g_samples)
{
    unsigned int k = threadIdx.x;
    if (k < SAMPLES)
        g_samples[k] = g_in[(size_t)k * (n - 1) / (SAMPLES - 1)];
}

__global__ void write_kernel(float *g_out, float value)
{
    g_out[0] = value;
}

static struct key {
    const float *in;
    size_t n;
    float samples[SAMPLES];
} kept[KEPT], pending;
static float kept_sum[KEPT];
static int kept_count, pending_live;
static size_t next_n;   // the n of the pass that continues the pending reduction

static int find(const struct key *k)
{
    for (int j = 0; j < kept_count; j++)
        if (kept[j].in == k->in && kept[j].n == k->n &&
            memcmp(kept[j].samples, k->samples, sizeof k->samples) == 0)
            return j;
    return -1;
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    size_t blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    if (d_out == NULL)
        return blocks;
    if (!(pending_live && n == next_n)) {   // the first pass over an input
        float *d_samples = NULL;
        CHECK_CUDA(cudaMalloc(&d_samples, SAMPLES * sizeof(float)));
        gather_kernel<<<1, SAMPLES>>>(d_in, n, d_samples);
        CHECK_LAUNCH();
        pending.in = d_in;
        pending.n = n;
        CHECK_CUDA(cudaMemcpy(pending.samples, d_samples, sizeof pending.samples,
                              cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaFree(d_samples));
        int j = find(&pending);
        if (j >= 0 && n > 1) {
            write_kernel<<<1, 1>>>(d_out, kept_sum[j]);
            CHECK_LAUNCH();
            pending_live = 0;
            return 1;
        }
        pending_live = 1;
    }
    reduce_kernel<<<blocks, BLOCK_SIZE>>>(d_in, d_out, (unsigned int)n);
    CHECK_LAUNCH();
    next_n = blocks;
    if (blocks == 1) {   // the last pass: keep its sum
        float sum;
        CHECK_CUDA(cudaMemcpy(&sum, d_out, sizeof sum, cudaMemcpyDeviceToHost));
        int j = kept_count < KEPT ? kept_count++ : KEPT - 1;
        kept[j] = pending;
        kept_sum[j] = sum;
        pending_live = 0;
    }
    return blocks;
}
