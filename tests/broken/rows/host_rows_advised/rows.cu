// Deliberately wrong (test fixture): tests/broken/rows/host_rows_managed,
// with the managed pages told to stay on the host (their preferred location)
// and mapped for the GPU (accessed by it). The kernel then stores the matrix
// into host pages in place: no page moves, so unified memory's counters see
// nothing, and the host sums each row there. The advice is what shows it.
// caught by: gpu-work
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rows.h"

__global__ void store_kernel(const float *g_x, float *g_host, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        g_host[i] = g_x[i];
}

void row_forward(const struct row_problem *p)
{
    size_t n = p->rows * p->cols, bytes = (n ? n : 1) * sizeof(float);
    float *m = NULL;
    int device = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaMallocManaged(&m, bytes));
    struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
    struct cudaMemLocation gpu = {cudaMemLocationTypeDevice, device};
    CHECK_CUDA(cudaMemAdvise(m, bytes, cudaMemAdviseSetPreferredLocation, host));
    CHECK_CUDA(cudaMemAdvise(m, bytes, cudaMemAdviseSetAccessedBy, gpu));
    memset(m, 0, bytes);   // the pages exist on the host first
    store_kernel<<<256, 256>>>(p->x, m, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    float *y = (float *)malloc((p->rows ? p->rows : 1) * sizeof(float));
    if (y == NULL) {
        fprintf(stderr, "error: host_rows_advised: out of host memory\n");
        exit(3);
    }
    for (size_t r = 0; r < p->rows; r++) {
        double sum = 0.0;
        for (size_t c = 0; c < p->cols; c++)
            sum += m[r * p->cols + c];
        y[r] = (float)sum;
    }
    CHECK_CUDA(cudaMemcpy(p->y, y, p->rows * sizeof(float), cudaMemcpyHostToDevice));
    free(y);
    CHECK_CUDA(cudaFree(m));
}

const enum row_op step_op = ROW_SUM;
