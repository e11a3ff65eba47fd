/* back_emu.h: just enough of CUDA's device side to run a part 3 step's
 * back.cu on the CPU, so that its kernels' indexing, barriers, shuffles and
 * tickets meet the driver's checks before any GPU has run them (make test
 * builds build/back_emu/<step>/run: the step's source with each launch
 * rewritten as emu_launch(), this header forced in, and back_fake.c's
 * device half; tests/cli_tests.sh runs them).
 *
 * A launch runs its blocks (a grid in x and y) one at a time, in a shuffled order (another one
 * every launch, so a last block or an atomic's order changes from run to
 * run, as on a GPU). A block's threads are coroutines on the one CPU thread
 * (ucontext: each its own stack), taking turns in a shuffled order (another
 * one every block): a thread runs until it waits at a barrier or returns,
 * then passes on to the next one that can run. __syncthreads() is a barrier of the
 * block, a shuffle one of the warp, and a thread that returns drops out of
 * both (as an exited thread does on the GPU); threads that all wait at a
 * barrier the others never reach stop the program with a message. __shared__
 * is static: right only because one block runs at a time. What this cannot
 * show: blocks running at once (a missing fence, a race between blocks), a
 * race between two of a block's barriers other than by the order of the
 * turns (no thread is stopped between them), speed, and anything the
 * compiler does. EMU_SMS sets the SM count a step sees (default 3; 2 or 3
 * blocks fit on each, by kernel).
 *
 * Coroutines rather than a std::thread per thread: a 1024-thread block's
 * threads meeting at a barrier on two cores cost the kernel's scheduler
 * thousands of switches, and the cli suite's emulated runs took 45 s on two
 * cores where they take 5 s this way; the same runs fail, on every fixture
 * of tests/broken/mutants.txt and every step with one of its
 * __syncthreads() taken out (git log tests/back_emu.h says how it was
 * measured). Between turns a thread is left by _setjmp/_longjmp, not
 * swapcontext (no signal mask set), and it serves every block of a launch
 * from one stack: the bfloat16 LayerNorm steps' runs went from 17 to 7 s. */
#ifndef REDUCE_BACK_EMU_H
#define REDUCE_BACK_EMU_H

/* _longjmp below moves between the threads' stacks on purpose: a fortified
 * build's __longjmp_chk would take that for a bug. This header comes first. */
#undef _FORTIFY_SOURCE

#include <cuda_runtime_api.h>
/* A bfloat16 step's __nv_bfloat16 and its conversions: cuda_bf16.h has host
 * versions of them (round to nearest even, as on the GPU). Included before
 * __device__ and the rest are redefined below, and it brings CUDA's own
 * make_float4 (vector_functions.h) with it. */
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

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
/* One of the block's threads: where it stopped, and whether it has
 * returned or waits at a barrier. */
struct fiber {
    ucontext_t context;   // its first entry, onto its own stack
    jmp_buf jump;         // where it stopped since
    unsigned index;
    bool done, waiting, started;
};
inline jmp_buf launch;   // emu_launch(), which gets control back when no thread can run
inline std::vector<fiber> *fibers;
inline std::vector<unsigned> *turns;   // the order the threads take turns in
inline size_t turn;                    // the running thread's place in it
inline dim3 thread_index, block_index;   // the running thread's

/* The thread that runs next: the first after the running one, in the
 * turns' order and round again, that has not returned and does not wait;
 * null when there is none. */
inline fiber *next_to_run()
{
    size_t n = turns->size();
    for (size_t k = 1; k <= n; k++) {
        size_t i = (turn + k) % n;
        fiber &f = (*fibers)[(*turns)[i]];
        if (!f.done && !f.waiting) {
            turn = i;
            return &f;
        }
    }
    return nullptr;
}

/* Into a thread: where it stopped, by _longjmp (no system call: swapcontext
 * sets the signal mask at every switch, and the switches were most of an
 * emulated run's time), or the first time in a launch onto its own stack. */
[[noreturn]] inline void enter(fiber *f)
{
    thread_index = dim3(f->index);
    if (f->started)
        _longjmp(f->jump, 1);
    f->started = true;
    setcontext(&f->context);
    std::abort();   // setcontext returns only on an error
}

/* The running thread stops (it waits, or it returned), and the next one
 * runs where it stopped; with none to run, back to emu_launch(). */
inline void run_next(fiber *self)
{
    if (_setjmp(self->jump) != 0)
        return;   // its turn again (a returned thread's: in the launch's next block)
    fiber *next = next_to_run();
    if (next == nullptr)
        _longjmp(launch, 1);
    enter(next);
}

/* A barrier of a block's threads or of a warp's: a thread that arrives
 * waits (the next thread runs) until the last one arrives. arrive_and_drop()
 * counts as an arrival now and leaves every later phase a thread short, as
 * std::barrier's does. */
class barrier {
public:
    explicit barrier(unsigned threads) : expected_(threads) {}
    void arrive_and_wait()
    {
        if (++arrived_ == expected_) {
            release();
            return;
        }
        fiber *self = &(*fibers)[thread_index.x];
        self->waiting = true;
        waiting_.push_back(self);
        run_next(self);
    }
    void arrive_and_drop()
    {
        if (--expected_ != 0 && arrived_ == expected_)
            release();
    }

private:
    void release()
    {
        for (fiber *f : waiting_)
            f->waiting = false;
        waiting_.clear();
        arrived_ = 0;
    }
    unsigned expected_, arrived_ = 0;
    std::vector<fiber *> waiting_;
};

struct block_state {
    barrier *block;
    std::vector<std::unique_ptr<barrier>> warps;
    std::vector<float> slots;   // a shuffle's exchange: one float per thread
};
inline block_state *state;
inline dim3 grid_dim, block_dim;
inline unsigned launches;
inline void *body;              // the launch's kernel with its arguments,
inline void (*call_body)(void *);   // and how to call it

/* The threads' stacks, made once and kept for every launch: STACK_BYTES
 * each (the kernels' arrays are a few hundred bytes), with a page below
 * each that is not mapped, so that a thread past its stack crashes rather
 * than write over its neighbour's. */
constexpr size_t STACK_BYTES = 256 * 1024;
inline char *stack_of(unsigned t)
{
    static std::vector<char *> stacks;
    while (stacks.size() <= t) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void *p = mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED || mprotect(p, page, PROT_NONE) != 0) {
            std::perror("emu: a thread's stack");
            std::abort();
        }
        stacks.push_back((char *)p + page);
    }
    return stacks[t];
}

/* A thread: the kernel, then out of its warp's barrier and its block's. */
/* A thread of every block of a launch in turn: one stack and one
 * makecontext() for the launch, not for each block. */
inline void thread_main()
{
    for (;;) {
        fiber *self = &(*fibers)[thread_index.x];
        call_body(body);
        state->warps[self->index / 32]->arrive_and_drop();
        state->block->arrive_and_drop();
        self->done = true;
        run_next(self);
    }
}
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

/* Step 14 takes a shared address for its sm_90 instructions, which sit
 * under __CUDA_ARCH__ >= 900 and so never reach the emulator; the address
 * itself is worked out outside them. */
inline size_t __cvta_generic_to_shared(const void *p)
{
    return (size_t)p;
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
    emu::barrier &bar = *emu::state->warps[warp];
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

/* One thread runs at a time, and none stops inside an atomic. */
template <class T, class U>
inline T atomicAdd(T *p, U v)
{
    T old = *p;
    *p = old + (T)v;
    return old;
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
    std::mt19937 random(++emu::launches);
    std::shuffle(order.begin(), order.end(), random);
    auto run = [&] { kernel(args...); };
    emu::body = &run;
    emu::call_body = [](void *f) { (*(decltype(run) *)f)(); };
    std::vector<emu::fiber> fibers(block.x);   // value-initialized: none started
    std::vector<unsigned> turns(block.x);
    for (unsigned t = 0; t < block.x; t++)
        turns[t] = t;
    emu::fibers = &fibers;
    emu::turns = &turns;
    for (unsigned b : order) {
        emu::barrier bar(block.x);
        emu::block_state st{&bar, {}, std::vector<float>(block.x)};
        for (unsigned w = 0; w < (block.x + 31) / 32; w++)
            st.warps.emplace_back(new emu::barrier(std::min(32u, block.x - 32 * w)));
        for (unsigned t = 0; t < block.x; t++) {
            emu::fiber &f = fibers[t];
            f.done = f.waiting = false;
            if (f.started)
                continue;   // it waits in run_next() since the last block
            f.index = t;
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = emu::stack_of(t);
            f.context.uc_stack.ss_size = emu::STACK_BYTES;
            f.context.uc_link = nullptr;   // thread_main() never returns: run_next() leaves it
            makecontext(&f.context, emu::thread_main, 0);
        }
        std::shuffle(turns.begin(), turns.end(), random);
        emu::block_index = dim3(b % grid.x, b / grid.x, 0);
        emu::state = &st;
        /* The first thread in the turns' order runs; each passes on to the
         * next (run_next()); control comes back here when none can run. */
        emu::turn = block.x - 1;
        if (emu::fiber *first = emu::next_to_run()) {
            if (_setjmp(emu::launch) == 0)
                emu::enter(first);
        }
        unsigned left = 0;
        for (const emu::fiber &f : fibers)
            left += !f.done;
        if (left > 0) {
            std::fprintf(stderr, "emu: block (%u, %u): its %u threads still running all wait "
                         "at barriers that no other thread will reach\n", b % grid.x, b / grid.x, left);
            std::abort();
        }
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
