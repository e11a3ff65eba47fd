// Deliberately wrong (test fixture): part 2's twin of tests/broken/host_sum.
// Every row sum is right, but computed on the host: the matrix is copied to
// the host, each row summed there in double, the sums copied back, and no
// kernel runs. Only the grader's watch on the work (common/gpu_work.c) can
// fail it.
// caught by: gpu-work
#include <stdlib.h>

#include "check.h"
#include "rows.h"

void row_forward(const struct row_problem *p)
{
    size_t n = p->rows * p->cols;
    float *x = (float *)malloc((n ? n : 1) * sizeof(float));
    float *y = (float *)malloc((p->rows ? p->rows : 1) * sizeof(float));
    if (x == NULL || y == NULL) {
        fprintf(stderr, "error: host_rows: out of host memory\n");
        exit(3);
    }
    CHECK_CUDA(cudaMemcpy(x, p->x, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t r = 0; r < p->rows; r++) {
        double sum = 0.0;
        for (size_t c = 0; c < p->cols; c++)
            sum += x[r * p->cols + c];
        y[r] = (float)sum;
    }
    CHECK_CUDA(cudaMemcpy(p->y, y, p->rows * sizeof(float), cudaMemcpyHostToDevice));
    free(x);
    free(y);
}

const enum row_op step_op = ROW_SUM;
