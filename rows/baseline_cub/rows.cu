// CUB DeviceSegmentedReduce::Sum: NVIDIA's library sum of many segments.
//
// Not a step: the library bar for the row sums, as DeviceReduce::Sum is for
// part 1. Row r is the segment [r * cols, (r + 1) * cols); its offsets come
// from an iterator (no offset array to fill). CUB's temporary storage is the
// caller's workspace: the harness allocates it before any timing.
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "check.h"
#include "rows.h"

// Row r starts at r * cols.
struct row_start {
    long long cols;
    __host__ __device__ long long operator()(long long r) const { return r * cols; }
};

typedef thrust::transform_iterator<row_start, thrust::counting_iterator<long long>> offsets;

static size_t temp_bytes(const struct row_problem *p, offsets begin)
{
    static size_t last_rows = 0, last_cols = 0, last_bytes = 0;
    if (p->rows != last_rows || p->cols != last_cols) {
        last_bytes = 0;
        CHECK_CUDA(cub::DeviceSegmentedReduce::Sum(NULL, last_bytes, p->x, p->y,
                                                   (long long)p->rows, begin, begin + 1));
        last_rows = p->rows;
        last_cols = p->cols;
    }
    return last_bytes;
}

static offsets begin_offsets(const struct row_problem *p)
{
    return thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                           row_start{(long long)p->cols});
}

struct workspace_size row_workspace(const struct row_problem *p)
{
    struct workspace_size size = {0, temp_bytes(p, begin_offsets(p))};
    return size;
}

void row_forward(const struct row_problem *p)
{
    offsets begin = begin_offsets(p);
    size_t bytes = temp_bytes(p, begin);
    CHECK_CUDA(cub::DeviceSegmentedReduce::Sum(p->work.scratch, bytes, p->x, p->y,
                                               (long long)p->rows, begin, begin + 1));
    CHECK_LAUNCH();
}

const enum row_op step_op = ROW_SUM;
