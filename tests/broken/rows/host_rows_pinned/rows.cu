// Deliberately wrong (test fixture): tests/broken/rows/host_rows_managed with
// pinned host memory (cudaMallocHost, which unified addressing maps for the
// GPU at the same address) in place of managed memory. A kernel stores the
// matrix there, and the host sums each row in double: nothing is copied and
// no page moves, so only the driver call that made the memory shows it.
// caught by: gpu-work
#include <stdlib.h>

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
    size_t n = p->rows * p->cols;
    float *h = NULL;
    CHECK_CUDA(cudaMallocHost((void **)&h, (n ? n : 1) * sizeof(float)));
    store_kernel<<<256, 256>>>(p->x, h, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    float *y = (float *)malloc((p->rows ? p->rows : 1) * sizeof(float));
    if (y == NULL) {
        fprintf(stderr, "error: host_rows_pinned: out of host memory\n");
        exit(3);
    }
    for (size_t r = 0; r < p->rows; r++) {
        double sum = 0.0;
        for (size_t c = 0; c < p->cols; c++)
            sum += h[r * p->cols + c];
        y[r] = (float)sum;
    }
    CHECK_CUDA(cudaMemcpy(p->y, y, p->rows * sizeof(float), cudaMemcpyHostToDevice));
    free(y);
    CHECK_CUDA(cudaFreeHost(h));
}

const enum row_op step_op = ROW_SUM;
