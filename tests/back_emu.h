/* back_emu.h: just enough of CUDA's device side to run a part 3 step's
 * back.cu on the CPU, so that its kernels' indexing, barriers, shuffles and
 * tickets meet the driver's checks before any GPU has run them (make test
 * builds build/back_emu/<step>/run: the step's source with each launch
 * rewritten as emu_launch(), this header forced in, and back_fake.c's
 * device half; tests/cli_tests.sh runs them).
 *
 * A launch runs its blocks (a grid in x and y) one at a time, in a shuffled order (another one
 * every launch, so a last block or an atomic's order changes from run to
 * run, as on a GPU); a block's threads are std::threads: __syncthreads() is
 * a barrier of the block, a shuffle one of the warp, and a thread that
 * returns drops out of both (as an exited thread does on the GPU). Atomics
 * take a lock. __shared__ is static: right only because one block runs at a
 * time. What this cannot show: blocks running at once (a missing fence, a
 * race between blocks), speed, and anything the compiler does. EMU_SMS sets
 * the SM count a step sees (default 3; 2 or 3 blocks fit on each, by kernel). */
#ifndef REDUCE_BACK_EMU_H
#define REDUCE_BACK_EMU_H

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#undef __global__
#undef __device__
#undef __shared__
#undef __forceinline__
#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(...)
#define __forceinline__ inline

/* cooperative_groups (step 13's clusters) is nvcc's: its include is made a
 * no-op here. The emulator is no sm_90 device (compute capability 0, below),
 * so a step takes its path without clusters and never calls into it. */
#define _COOPERATIVE_GROUPS_H_
namespace cooperative_groups {}

namespace emu {
struct block_state {
    std::barrier<> *block;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<float> slots;   // a shuffle's exchange: one float per thread
};
inline thread_local dim3 thread_index, block_index;
inline thread_local block_state *state;
inline dim3 grid_dim, block_dim;
inline std::mutex atomic_lock;
inline unsigned launches;
}   // namespace emu

#define threadIdx emu::thread_index
#define blockIdx emu::block_index
#define gridDim emu::grid_dim
#define blockDim emu::block_dim

inline void __syncthreads()
{
    emu::state->block->arrive_and_wait();
}

inline void __trap()
{
    std::abort();
}

inline void __threadfence()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

/* Every lane of the warp leaves v in its slot, waits for the others, reads
 * the slot it asked for, and waits again before any slot is reused. */
inline float emu_shuffle(float v, unsigned from)
{
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    std::barrier<> &bar = *emu::state->warps[warp];
    float *slots = emu::state->slots.data() + warp * 32;
    slots[lane] = v;
    bar.arrive_and_wait();
    float r = from < 32 ? slots[from] : v;
    bar.arrive_and_wait();
    return r;
}

inline float __shfl_xor_sync(unsigned, float v, unsigned offset)
{
    return emu_shuffle(v, (threadIdx.x % 32) ^ offset);
}

inline float __shfl_down_sync(unsigned, float v, unsigned offset)
{
    return emu_shuffle(v, threadIdx.x % 32 + offset);
}

template <class T, class U>
inline T atomicAdd(T *p, U v)
{
    std::lock_guard<std::mutex> lock(emu::atomic_lock);
    T old = *p;
    *p = old + (T)v;
    return old;
}

/* The 16-byte pack's constructor (cuda_runtime_api.h has the type only). */
inline float4 make_float4(float x, float y, float z, float w)
{
    float4 v;
    v.x = x, v.y = y, v.z = z, v.w = w;
    return v;
}

/* CUDA's min and max, with its mixed overloads (both sides to unsigned). */
using std::max;
using std::min;
inline unsigned min(int a, unsigned b)
{
    return std::min((unsigned)a, b);
}
inline unsigned min(unsigned a, int b)
{
    return std::min(a, (unsigned)b);
}

template <class... A, class... P>
void emu_launch(dim3 grid, dim3 block, void (*kernel)(P...), A... args)
{
    emu::grid_dim = grid;
    emu::block_dim = block;
    std::vector<unsigned> order(grid.x * grid.y);   // a block b is (b % grid.x, b / grid.x)
    for (unsigned b = 0; b < order.size(); b++)
        order[b] = b;
    std::shuffle(order.begin(), order.end(), std::mt19937(++emu::launches));
    for (unsigned b : order) {
        std::barrier<> bar(block.x);
        emu::block_state st{&bar, {}, std::vector<float>(block.x)};
        for (unsigned w = 0; w < (block.x + 31) / 32; w++)
            st.warps.emplace_back(new std::barrier<>(std::min(32u, block.x - 32 * w)));
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block.x; t++)
            threads.emplace_back([&, t] {
                emu::thread_index = dim3(t);
                emu::block_index = dim3(b % grid.x, b / grid.x, 0);
                emu::state = &st;
                kernel(args...);
                st.warps[t / 32]->arrive_and_drop();
                bar.arrive_and_drop();
            });
        for (std::thread &th : threads)
            th.join();
    }
}

/* A launch with attributes (step 6's early launch): the emulator runs
 * kernels one after the other, so the attributes change nothing here. */
#pragma push_macro("gridDim")
#pragma push_macro("blockDim")
#undef gridDim
#undef blockDim
template <class... A, class... P>
inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(P...),
                                      A... args)
{
    emu_launch(config->gridDim, config->blockDim, kernel, args...);
    return cudaSuccess;
}
#pragma pop_macro("blockDim")
#pragma pop_macro("gridDim")

/* The runtime calls a back.cu makes (the driver's own are back_fake.c's). */
inline cudaError_t cudaMemsetAsync(void *p, int value, size_t count, cudaStream_t)
{
    std::memset(p, value, count);
    return cudaSuccess;
}

inline cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

inline cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}

inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int)
{
    const char *sms = std::getenv("EMU_SMS");
    *value = attr == cudaDevAttrMultiProcessorCount ? (sms != nullptr ? std::atoi(sms) : 3)
             : attr == cudaDevAttrMaxThreadsPerMultiProcessor ? 2048
                                                                : 0;
    return cudaSuccess;
}

/* Blocks an SM: 2 for the first kernel a program asks about, 3 for the
 * second, and so on in turn, the same answer for the same kernel. A GPU
 * answers each kernel by its registers, so a step that sizes its workspace by
 * one kernel and launches another (step 7 once did) meets it here too. */
template <class K>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, K kernel, int,
                                                                 size_t)
{
    static std::vector<const void *> seen;
    auto at = std::find(seen.begin(), seen.end(), (const void *)kernel);
    if (at == seen.end())
        at = seen.insert(seen.end(), (const void *)kernel);
    *blocks = 2 + (int)((at - seen.begin()) % 2);
    return cudaSuccess;
}

/* What a kernel was compiled for (step 7's early launch asks its PTX
 * version): none here, so the emulated steps take the ordinary launch. */
template <class K>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, K)
{
    std::memset(attr, 0, sizeof *attr);
    return cudaSuccess;
}

/* Only a step that found clusters (sm_90) calls these: never here. */
template <class K>
inline cudaError_t cudaFuncSetAttribute(K, cudaFuncAttribute, int)
{
    return cudaSuccess;
}

template <class K>
inline cudaError_t cudaOccupancyMaxActiveClusters(int *clusters, K, const cudaLaunchConfig_t *)
{
    *clusters = 0;
    return cudaSuccess;
}

#endif
