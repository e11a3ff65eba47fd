// Deliberately wrong (test fixture): tests/broken/rows/host_rows without a
// copy call. A kernel copies the matrix into unified (managed) memory, and
// the host reads it from there, each row summed in double: the driver moves
// the pages to the host on demand, and only its unified-memory counters see
// those bytes.
// caught by: gpu-work
#include <stdlib.h>

#include "check.h"
#include "rows.h"

__global__ void copy_kernel(const float *g_x, float *g_m, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        g_m[i] = g_x[i];
}

void row_forward(const struct row_problem *p)
{
    size_t n = p->rows * p->cols;
    float *m = NULL;
    CHECK_CUDA(cudaMallocManaged(&m, (n ? n : 1) * sizeof(float)));
    copy_kernel<<<256, 256>>>(p->x, m, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    float *y = (float *)malloc((p->rows ? p->rows : 1) * sizeof(float));
    if (y == NULL) {
        fprintf(stderr, "error: host_rows_managed: out of host memory\n");
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
