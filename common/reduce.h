/* reduce.h: the one function every step's reduce.cu defines.
 *
 * reduce_pass() launches ONE pass over d_in[0..n) that writes m partial sums
 * to d_out[0..m) and returns m; with 1 <= m < n whenever n > 1, and m == 1
 * when n == 1. Called with d_out == NULL it launches nothing and only returns
 * m, so the harness can size its buffers (the same idiom as CUB's temp-storage
 * query). The harness makes that query before any timing, so a step may set
 * up its own workspace there. It calls reduce_pass until one float is left. */
#ifndef REDUCE_REDUCE_H
#define REDUCE_REDUCE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

size_t reduce_pass(const float *d_in, float *d_out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
