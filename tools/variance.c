// variance.c: three ways to compute a row's variance in float32, side by side
// on rows whose mean is far from zero (ACCURACY.md, "Variance: one pass or
// two"). Writes CSV to stdout: one line per method and shift.
//
// The arithmetic is the warp-per-row kernel's (rows/step6_registers at 1024
// columns): 32 lanes, lane l adds floats 4(l + 32k) .. 4(l + 32k) + 3 for
// k = 0 .. 7 in that order, then a 5-level xor butterfly combines the lanes.
// Where nvcc fuses a multiply and an add (its default, --fmad=true) this file
// calls fmaf; everything else is one IEEE float32 operation, which rounds the
// same on the CPU as on the GPU. Build with -ffp-contract=off so that the C
// compiler fuses nothing on its own: then these are the kernel's bits.
//
//   one-pass   sum x and sum x^2 together; var = E[x^2] - E[x]^2
//   two-pass   the mean first, then sum (x - mean)^2   (steps 5-7 of part 2)
//   Welford    a running mean and M2 per lane; lanes merged with Chan's formula
//
// The reference is a two-pass variance in double of the same floats.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 1024
#define ROWS 1024
#define LANES 32
#define PACK 4
#define SLOTS (COLS / (LANES * PACK))   // packs per lane

enum method { ONE_PASS, TWO_PASS, WELFORD, METHODS };
static const char *const method_name[METHODS] = { "one-pass", "two-pass", "welford" };

// The shifts: the rows' mean, in units of their standard deviation (1).
// 2000 is the grader's shifted fill (and the mean in PyTorch #51102).
static const double shifts[] = { 0, 1, 3, 10, 30, 100, 300, 1000, 2000, 3000, 10000, 30000,
                                 100000 };

// A row: shift + uniform in [-sqrt(3), sqrt(3)), so variance 1; rounded to float.
static void fill_row(float *x, double shift, uint64_t *state)
{
    for (int i = 0; i < COLS; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;   // LCG (Knuth)
        double u = (double)(*state >> 11) / 9007199254740992.0;            // [0, 1)
        x[i] = (float)(shift + (2.0 * u - 1.0) * sqrt(3.0));
    }
}

static double variance_double(const float *x)
{
    double mean = 0.0, m2 = 0.0;
    for (int i = 0; i < COLS; i++)
        mean += x[i];
    mean /= COLS;
    for (int i = 0; i < COLS; i++)
        m2 += (x[i] - mean) * (x[i] - mean);
    return m2 / COLS;
}

// The float at lane l, slot k, element j of its pack.
static float at(const float *x, int l, int k, int j)
{
    return x[PACK * (l + LANES * k) + j];
}

// __shfl_xor_sync butterfly: every lane ends with the same total.
static float butterfly_sum(float *v)
{
    for (int offset = LANES / 2; offset > 0; offset /= 2) {
        float next[LANES];
        for (int l = 0; l < LANES; l++)
            next[l] = v[l] + v[l ^ offset];
        for (int l = 0; l < LANES; l++)
            v[l] = next[l];
    }
    return v[0];
}

static float one_pass(const float *x)
{
    float sum[LANES], sq[LANES];
    for (int l = 0; l < LANES; l++) {
        sum[l] = 0.0f;
        sq[l] = 0.0f;
        for (int k = 0; k < SLOTS; k++)
            for (int j = 0; j < PACK; j++) {
                float v = at(x, l, k, j);
                sum[l] += v;
                sq[l] = fmaf(v, v, sq[l]);
            }
    }
    float mean = butterfly_sum(sum) / COLS;
    float mean_sq = butterfly_sum(sq) / COLS;
    return fmaf(-mean, mean, mean_sq);   // E[x^2] - E[x]^2, fused as nvcc fuses it
}

static float two_pass(const float *x)
{
    float sum[LANES];
    for (int l = 0; l < LANES; l++) {
        sum[l] = 0.0f;
        for (int k = 0; k < SLOTS; k++)
            for (int j = 0; j < PACK; j++)
                sum[l] += at(x, l, k, j);
    }
    float mean = butterfly_sum(sum) / COLS;
    for (int l = 0; l < LANES; l++) {
        sum[l] = 0.0f;
        for (int k = 0; k < SLOTS; k++)
            for (int j = 0; j < PACK; j++) {
                float d = at(x, l, k, j) - mean;
                sum[l] = fmaf(d, d, sum[l]);
            }
    }
    return butterfly_sum(sum) / COLS;
}

static float welford(const float *x)
{
    float n[LANES], mean[LANES], m2[LANES];
    for (int l = 0; l < LANES; l++) {
        n[l] = 0.0f;
        mean[l] = 0.0f;
        m2[l] = 0.0f;
        for (int k = 0; k < SLOTS; k++)
            for (int j = 0; j < PACK; j++) {
                float v = at(x, l, k, j);
                n[l] += 1.0f;
                float d = v - mean[l];
                mean[l] += d / n[l];
                m2[l] = fmaf(d, v - mean[l], m2[l]);
            }
    }
    // Chan et al.: two (n, mean, M2) merge into one; lane l merges its own
    // with lane l ^ offset's, as a butterfly of shuffles would.
    for (int offset = LANES / 2; offset > 0; offset /= 2) {
        float nn[LANES], nmean[LANES], nm2[LANES];
        for (int l = 0; l < LANES; l++) {
            int o = l ^ offset;
            float total = n[l] + n[o];
            float d = mean[o] - mean[l];
            float share = n[o] / total;
            nn[l] = total;
            nmean[l] = fmaf(d, share, mean[l]);
            nm2[l] = fmaf(d * d, n[l] * share, m2[l] + m2[o]);
        }
        for (int l = 0; l < LANES; l++) {
            n[l] = nn[l];
            mean[l] = nmean[l];
            m2[l] = nm2[l];
        }
    }
    return m2[0] / COLS;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static float x[COLS];
    static double err[METHODS][ROWS];
    printf("method,shift,rows,cols,max_rel_err,median_rel_err,nonpositive\n");
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
        uint64_t state = 0x9e3779b97f4a7c15ull + s;   // the same rows for every method
        int nonpositive[METHODS] = { 0 };
        for (int r = 0; r < ROWS; r++) {
            fill_row(x, shifts[s], &state);
            double ref = variance_double(x);
            float var[METHODS] = { one_pass(x), two_pass(x), welford(x) };
            for (int m = 0; m < METHODS; m++) {
                err[m][r] = fabs((double)var[m] - ref) / ref;
                nonpositive[m] += !(var[m] > 0.0f);   // rsqrt(var + eps) of these is wrong or NaN
            }
        }
        for (int m = 0; m < METHODS; m++) {
            qsort(err[m], ROWS, sizeof err[m][0], by_value);
            printf("%s,%.0f,%d,%d,%.3e,%.3e,%d\n", method_name[m], shifts[s], ROWS, COLS,
                   err[m][ROWS - 1], 0.5 * (err[m][ROWS / 2 - 1] + err[m][ROWS / 2]),
                   nonpositive[m]);
        }
    }
    return 0;
}
