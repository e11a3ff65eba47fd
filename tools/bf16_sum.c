/* bf16_sum.c: what a bfloat16 accumulator does to a sum (ACCURACY.md, the
 * bfloat16 section). CPU only: bfloat16 is emulated by rounding a float to
 * its top 16 bits (ties to even, common/rows_ref.c), which is what a
 * bfloat16 add on the GPU returns.
 *
 *   build/bf16_sum    prints, for n ones and for n values uniform in
 *                     [0, 1), the sum kept in bfloat16, in float, and
 *                     exactly (double), with the relative errors.
 *
 * Exit status 0. tests/test_accuracy.py checks the ones' stall at 256. */
#include "harness.h"
#include "rows_ref.h"

#include <math.h>
#include <stdio.h>

static float bf16_round(float f)
{
    return bf16_to_float(bf16_from_float(f));
}

int main(void)
{
    static const size_t sizes[] = {100, 256, 257, 1000, 4096, 65536, 1048576};
    printf("%-8s %8s %14s %14s %14s %11s %11s\n", "values", "n", "bfloat16 sum", "float sum",
           "exact", "bf16 error", "f32 error");
    for (int random = 0; random < 2; random++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            float s16 = 0.0f, s32 = 0.0f;
            double exact = 0.0;
            uint64_t h = 1;
            for (size_t i = 0; i < n; i++) {
                float x = 1.0f;
                if (random) {
                    h = splitmix64(h);
                    x = bf16_round((float)(h >> 40) * 0x1p-24f);   /* a bfloat16 input */
                }
                s16 = bf16_round(s16 + x);   /* each add rounded to bfloat16 */
                s32 += x;
                exact += x;
            }
            printf("%-8s %8zu %14.6g %14.9g %14.9g %11.2e %11.2e\n", random ? "uniform" : "ones",
                   n, s16, s32, exact, fabs(s16 - exact) / exact, fabs(s32 - exact) / exact);
        }
    return 0;
}
