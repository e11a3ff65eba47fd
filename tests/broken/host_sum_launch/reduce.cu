// Deliberately wrong (test fixture): tests/broken/host_sum with a kernel put
// in to look busy. Each pass launches a kernel that does nothing useful, then
// copies the input to the host and sums it there, so "no kernel" cannot catch
// it: the bytes on their way to the host must.
// caught by: gpu-work
#include <stdlib.h>

#include "check.h"
#include "reduce.h"

__global__ void busy_kernel(float *g_out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        g_out[0] = 0.0f;
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    if (d_out == NULL)
        return 1;
    busy_kernel<<<1, 32>>>(d_out);
    CHECK_LAUNCH();
    float *h = (float *)malloc(n * sizeof(float));
    if (h == NULL) {
        fprintf(stderr, "error: host_sum_launch: out of host memory\n");
        exit(3);
    }
    CHECK_CUDA(cudaMemcpy(h, d_in, n * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += h[i];
    float result = (float)sum;
    CHECK_CUDA(cudaMemcpy(d_out, &result, sizeof result, cudaMemcpyHostToDevice));
    free(h);
    return 1;
}
