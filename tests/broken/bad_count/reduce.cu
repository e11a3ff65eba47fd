// Deliberately wrong (test fixture): a pass that does not shrink its input.
// The harness must stop it with exit 1 instead of looping forever.
// caught by: a pass must return
#include "check.h"
#include "reduce.h"

size_t reduce_pass(const float *d_in, float *d_out, size_t n, struct workspace /* unused */)
{
    (void)d_in;
    (void)d_out;
    return n;
}
