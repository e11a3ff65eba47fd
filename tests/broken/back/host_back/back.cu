// Deliberately wrong (test fixture): LayerNorm's backward pass on the host.
// x, dy, gamma, mean and rstd are copied to the host, dx, dgamma and dbeta
// summed there in double and copied back: every output is right and no
// kernel runs, so only the grader's watch on the work (common/gpu_work.c,
// around back_run()) can fail it.
// caught by: gpu-work
#include <stdlib.h>

#include "back.h"
#include "check.h"

const enum back_op step_op = BACK_LAYERNORM;

static float *host_copy(const float *d, size_t count)
{
    float *h = (float *)malloc(count * sizeof(float));
    if (h == NULL) {
        fprintf(stderr, "error: host_back: out of host memory\n");
        exit(3);
    }
    CHECK_CUDA(cudaMemcpy(h, d, count * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

void back_run(const struct back_problem *p)
{
    size_t rows = p->rows, cols = p->cols, n = rows * cols;
    float *x = host_copy(p->x, n), *dy = host_copy(p->dy, n);
    float *gamma = host_copy(p->gamma, cols), *mean = host_copy(p->mean, rows);
    float *rstd = host_copy(p->rstd, rows);
    float *dx = (float *)malloc(n * sizeof(float));
    float *dgamma = (float *)malloc(cols * sizeof(float)), *dbeta = (float *)malloc(cols * sizeof(float));
    double *sum_g = (double *)calloc(cols, sizeof(double)), *sum_b = (double *)calloc(cols, sizeof(double));
    if (dx == NULL || dgamma == NULL || dbeta == NULL || sum_g == NULL || sum_b == NULL) {
        fprintf(stderr, "error: host_back: out of host memory\n");
        exit(3);
    }
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        double a = 0.0, b = 0.0;
        for (size_t c = 0; c < cols; c++) {
            double xhat = ((double)xr[c] - mean[r]) * rstd[r], g = (double)dyr[c] * gamma[c];
            a += g;
            b += g * xhat;
            sum_g[c] += (double)dyr[c] * xhat;
            sum_b[c] += dyr[c];
        }
        for (size_t c = 0; c < cols; c++) {
            double xhat = ((double)xr[c] - mean[r]) * rstd[r], g = (double)dyr[c] * gamma[c];
            dx[r * cols + c] = (float)(rstd[r] * (g - a / cols - xhat * b / cols));
        }
    }
    for (size_t c = 0; c < cols; c++) {
        dgamma[c] = (float)sum_g[c];
        dbeta[c] = (float)sum_b[c];
    }
    CHECK_CUDA(cudaMemcpy(p->dx, dx, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(p->dgamma, dgamma, cols * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(p->dbeta, dbeta, cols * sizeof(float), cudaMemcpyHostToDevice));
    free(x), free(dy), free(gamma), free(mean), free(rstd), free(dx), free(dgamma), free(dbeta);
    free(sum_g), free(sum_b);
}
