/* reduce.h: what every step's reduce.cu defines.
 *
 * reduce_pass() launches ONE pass over d_in[0..n) that writes m partial sums
 * to d_out[0..m) and returns m; with 1 <= m < n whenever n > 1, and m == 1
 * when n == 1. Called with d_out == NULL it launches nothing and only returns
 * m, so the harness can size its buffers (the same idiom as CUB's temp-storage
 * query). It calls reduce_pass until one float is left.
 *
 * work is device memory the caller owns, as CUB's callers own its temporary
 * storage: a step that needs memory shared by the blocks of a pass (step 9's
 * partial sums and ticket counter) says how much in reduce_workspace(), and
 * every call gets its own. Steps that need none do not define it and ignore
 * work. */
#ifndef REDUCE_REDUCE_H
#define REDUCE_REDUCE_H

#include <stddef.h>

#include "workspace.h"

#ifdef __cplusplus
extern "C" {
#endif

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace work);

/* Optional: the workspace a pass over up to n floats needs. Without it the
 * harness (common/driver.c) gives none: both pointers NULL. */
struct workspace_size reduce_workspace(size_t n);

#ifdef __cplusplus
}
#endif

#endif
