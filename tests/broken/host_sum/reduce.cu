// Deliberately wrong (test fixture): right answers, no GPU work. Each pass
// copies the input to the host, sums it there in double and writes the one
// float back, launching no kernel (GPU MODE's reduction problem ships this
// cheat for its grader to reject). Every sum is right, so only the grader's
// watch on the work (common/gpu_work.c) can fail it.
// caught by: gpu-work
#include <stdlib.h>

#include "check.h"
#include "reduce.h"

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    if (d_out == NULL)
        return 1;
    float *h = (float *)malloc(n * sizeof(float));
    if (h == NULL) {
        fprintf(stderr, "error: host_sum: out of host memory\n");
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
