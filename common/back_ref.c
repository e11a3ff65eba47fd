/* back_ref.c: part 3's CPU references and tolerances (back_ref.h). */
#include "back_ref.h"

#include <math.h>

#define U 0x1p-24          /* float's unit roundoff */
#define MARGIN 0x1p-20     /* the second-order terms, relative */

/* g(k) = k u / (1 - k u): the relative error bound of k roundings. */
static double g(double k)
{
    return k * U / (1.0 - k * U);
}

void ln_backward_row_ref(const float *x, const float *dy, const float *gamma, float mean,
                         float rstd, size_t cols, double *dx, double *dx_tol)
{
    double n = (double)cols, r = rstd, m = mean;
    double s1 = 0.0, s2 = 0.0, mag1 = 0.0, mag2 = 0.0, amag2 = 0.0;
    for (size_t k = 0; k < cols; k++) {
        double gk = (double)dy[k] * gamma[k];
        double xhat = ((double)x[k] - m) * r;
        s1 += gk;
        s2 += gk * xhat;
        mag1 += fabs(gk);
        mag2 += fabs(gk * xhat);
        amag2 += fabs(gk) * (fabs((double)x[k]) + fabs(m)) * r;
    }
    double m1 = s1 / n, m2 = s2 / n;
    double e1 = g(n + 2) * mag1 / n, e2 = (g(n + 3) * mag2 + g(6) * amag2) / n;
    for (size_t j = 0; j < cols; j++) {
        double gj = (double)dy[j] * gamma[j];
        double xhat = ((double)x[j] - m) * r;
        double a = (fabs((double)x[j]) + fabs(m)) * r;
        dx[j] = r * (gj - m1 - xhat * m2);
        double tol = r * (g(5) * (fabs(gj) + fabs(m1) + fabs(xhat * m2)) + e1 +
                          (fabs(xhat) + g(3) * a) * e2 + g(3) * a * fabs(m2));
        dx_tol[j] = tol * (1.0 + MARGIN);
    }
}

void ln_param_grads_add(const float *x, const float *dy, float mean, float rstd, size_t cols,
                        double *dgamma, double *dgamma_mag, double *dgamma_amag, double *dbeta,
                        double *dbeta_mag)
{
    double r = rstd, m = mean;
    for (size_t j = 0; j < cols; j++) {
        double d = dy[j], xhat = ((double)x[j] - m) * r;
        dgamma[j] += d * xhat;
        dgamma_mag[j] += fabs(d * xhat);
        dgamma_amag[j] += fabs(d) * (fabs((double)x[j]) + fabs(m)) * r;
        dbeta[j] += d;
        dbeta_mag[j] += fabs(d);
    }
}

double ln_dgamma_tol(size_t rows, double dgamma_mag, double dgamma_amag)
{
    return (g((double)rows + 1) * dgamma_mag + g(4) * dgamma_amag) * (1.0 + MARGIN);
}

double ln_dbeta_tol(size_t rows, double dbeta_mag)
{
    return g((double)rows) * dbeta_mag * (1.0 + MARGIN);
}

void softmax_backward_row_ref(const float *y, const float *dy, size_t cols, double *dx,
                              double *dx_tol)
{
    double s = 0.0, mag = 0.0;
    for (size_t k = 0; k < cols; k++) {
        s += (double)y[k] * dy[k];
        mag += fabs((double)y[k] * dy[k]);
    }
    double e = g((double)cols) * mag;
    for (size_t j = 0; j < cols; j++) {
        double yj = y[j];
        dx[j] = yj * ((double)dy[j] - s);
        dx_tol[j] = (fabs(yj) * e + g(3) * fabs(yj) * (fabs((double)dy[j]) + fabs(s) + e)) *
                    (1.0 + MARGIN);
    }
}
