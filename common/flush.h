/* flush.h: evicting the input from L2 between timed repetitions. */
#ifndef REDUCE_FLUSH_H
#define REDUCE_FLUSH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads d_buf[0..bytes) with a kernel, so the L2 then holds the buffer
 * and none of the input: each timed run starts from DRAM, as a real one
 * would. bytes should be a few times the L2 size and a multiple of 16. */
void l2_flush(const void *d_buf, size_t bytes, float *d_sink);

#ifdef __cplusplus
}
#endif

#endif
