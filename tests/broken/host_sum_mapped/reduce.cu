// Deliberately wrong (test fixture): the input leaves for the host without a
// copy call. A kernel stores it into pinned host memory mapped for the GPU
// (cudaHostAlloc with cudaHostAllocMapped), and the host sums it there in
// double: no copy, and no page moves, so neither the copies nor unified
// memory's counters see the bytes. The driver call that makes the memory
// does.
// caught by: gpu-work
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
    float *h = NULL, *h_dev = NULL;
    CHECK_CUDA(cudaHostAlloc((void **)&h, n * sizeof(float), cudaHostAllocMapped));
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&h_dev, h, 0));
    store_kernel<<<256, 256>>>(d_in, h_dev, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += h[i];
    float result = (float)sum;
    CHECK_CUDA(cudaMemcpy(d_out, &result, sizeof result, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaFreeHost(h));
    return 1;
}
