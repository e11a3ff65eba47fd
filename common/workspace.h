/* workspace.h: device memory a program's blocks share across one launch
 * (step 9's partial sums and ticket, CUB's temporary storage). The caller
 * owns it, as CUB's callers own its temporary storage: the harness allocates
 * it between NaN guards and gives every call its own. */
#ifndef REDUCE_WORKSPACE_H
#define REDUCE_WORKSPACE_H

#include <stddef.h>

struct workspace {
    void *zeroed;    /* reads 0 when a launch starts; the launch must leave it at 0 */
    void *scratch;   /* no promise: the harness fills it with NaN before every run */
};

struct workspace_size {
    size_t zeroed, scratch;   /* bytes of each part */
};

#endif
