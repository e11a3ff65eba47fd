// Deliberately wrong (test fixture): honest except on tiny inputs. Under 16
// floats (64 bytes, the watch's floor for a call's copy to the host) each
// pass copies the input to the host, sums it there and writes the one float
// back, launching no kernel; from 16 floats on, one block sums it in a fixed
// order (the same bits every run, as the timed check's rerun wants). Every
// sum is right. Alone, such a check shows no kernel; in a batch the other
// checks' kernels made the process's count, and its bytes were under the
// floor, until the watch counted the calls that launched no kernel but sent
// bytes to the host (host_calls=).
// caught by: gpu-work
#include "check.h"
#include "reduce.h"

#define TINY 16      /* floats: 64 bytes */
#define THREADS 1024

__global__ void one_block_sum_kernel(const float *g_in, float *g_out, size_t n)
{
    __shared__ float sdata[THREADS];
    float sum = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += THREADS)
        sum += g_in[i];
    sdata[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *g_out = sdata[0];
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    if (d_out == NULL)
        return 1;
    if (n >= TINY) {
        one_block_sum_kernel<<<1, THREADS>>>(d_in, d_out, n);
        CHECK_LAUNCH();
        return 1;
    }
    float h[TINY];
    CHECK_CUDA(cudaMemcpy(h, d_in, n * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += h[i];
    float result = (float)sum;
    CHECK_CUDA(cudaMemcpy(d_out, &result, sizeof result, cudaMemcpyHostToDevice));
    return 1;
}
