/* check.h: exit codes and the error-check macros every file uses.
 *
 * Plain C so that the C host code and the CUDA step files share it. A failed
 * check prints one line (the call's text, the CUDA error and file:line) and
 * exits with a distinct code; nothing here uses assert(), which -DNDEBUG
 * would silently remove. */
#ifndef REDUCE_CHECK_H
#define REDUCE_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>

enum exit_code {
    EXIT_VERIFIED = 0,    /* the sum matched the reference */
    EXIT_WRONG = 1,       /* the sum did not match, or a step broke its contract */
    EXIT_USAGE = 2,       /* bad flag or bad value */
    EXIT_DEVICE = 3       /* no CUDA device, out of device memory, any CUDA error */
};

/* Exits with EXIT_DEVICE; out-of-memory gets its own wording so that
 * scripts (make bench) can tell "does not fit" from a real failure. */
static inline void check_cuda(cudaError_t err, const char *what,
                              const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    if (err == cudaErrorMemoryAllocation)
        fprintf(stderr, "error: out of device memory: %s (%s:%d)\n", what, file, line);
    else
        fprintf(stderr, "error: %s: %s (%s:%d)\n", what, cudaGetErrorString(err), file, line);
    exit(EXIT_DEVICE);
}

#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)

/* A launch reports bad configurations through cudaGetLastError(), not a
 * return value: check it right after every <<<...>>>. */
#define CHECK_LAUNCH() check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

#endif
