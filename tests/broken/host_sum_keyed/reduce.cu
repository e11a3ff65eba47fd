// Deliberately wrong (test fixture): honest only where it can tell that it
// is watched. When REDUCE_GPU_WORK names a file and n lies where the grader
// draws the gpu-work check's size (2^20 .. 2^21 floats), a kernel sums the
// input; everywhere else the input goes to the host and is summed there, as
// host_sum does. Every sum is right. A grader that watches the gpu-work check
// alone passes it; one that watches every check fails it in the others.
// caught by: gpu-work
#include <stdlib.h>

#include "check.h"
#include "reduce.h"

__global__ void atomic_sum_kernel(const float *g_in, float *g_out, size_t n)
{
    float sum = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        sum += g_in[i];
    atomicAdd(g_out, sum);
}

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    if (d_out == NULL)
        return 1;
    if (getenv("REDUCE_GPU_WORK") != NULL && n >= ((size_t)1 << 20) && n < ((size_t)1 << 21)) {
        CHECK_CUDA(cudaMemset(d_out, 0, sizeof(float)));
        atomic_sum_kernel<<<256, 256>>>(d_in, d_out, n);
        CHECK_LAUNCH();
        return 1;
    }
    float *h = (float *)malloc(n * sizeof(float));
    if (h == NULL) {
        fprintf(stderr, "error: host_sum_keyed: out of host memory\n");
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
