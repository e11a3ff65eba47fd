// Deliberately wrong (test fixture): tests/broken/host_sum_mapped with plain
// host memory registered for the GPU (cudaHostRegister with
// cudaHostRegisterMapped) instead of a pinned allocation: a kernel stores the
// input into it, and the host sums it there.
// caught by: gpu-work
#include <stdlib.h>

#include "check.h"
#include "reduce.h"

__global__ void store_kernel(const float *g_in, float *g_host, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        g_host[i] = g_in[i];
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    if (d_out == NULL)
        return 1;
    float *h = (float *)malloc(n * sizeof(float)), *h_dev = NULL;
    if (h == NULL) {
        fprintf(stderr, "error: host_sum_registered: out of host memory\n");
        exit(3);
    }
    CHECK_CUDA(cudaHostRegister(h, n * sizeof(float), cudaHostRegisterMapped));
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&h_dev, h, 0));
    store_kernel<<<256, 256>>>(d_in, h_dev, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += h[i];
    float result = (float)sum;
    CHECK_CUDA(cudaMemcpy(d_out, &result, sizeof result, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaHostUnregister(h));
    free(h);
    return 1;
}
