"""What every step's kernel touches, replayed from its own index expressions.

No GPU and no matplotlib: plain Python that runs each step's index math for
one block (the tree: which lanes work at each level, which warps issue the
level, which shared-memory word and bank each lane touches) and for a grid
(which thread loads which input element). tools/diagrams.py draws the
results; tests/test_patterns.py compares them with the Nsight Compute
counters measured on the GPU.

Each model transcribes its kernel line by line. Every transcribed line is
named by an `at(step, line, text)` reference next to it; the tests check that
the line still says that, so an edit to a reduce.cu cannot silently leave
its model behind. BLOCK_SIZE, UNROLL, MIN_PER_THREAD and WARP_SIZE come from
the step's own #defines.

Adding a step (step 9 and beyond) is one function decorated with
@model("stepN_slug") that returns a StepModel; see the existing ones. A
single-pass step puts what only its last block does (adding the partial sums
of all blocks) in StepModel.once, which is counted once per launch. Step 9's
work depends on gridDim.x (its last block loops over gridDim.x partials, and
a grid of one block needs no ticket), so its model is built for a grid and
StepModel.for_grid rebuilds it for the grid of the launch being counted.
"""

import os
import re
from collections import Counter
from dataclasses import dataclass, field

WARP = 32           # lanes per warp
NUM_BANKS = 32      # shared memory: 32 banks ...
WORD_BYTES = 4      # ... of 4-byte words: word w lives in bank w % 32
FLOAT4 = 4          # floats per 16-byte vector load
ALIGN_BYTES = 16    # a float4 load needs a 16-byte aligned address

# sm_90 (H200) limits that decide how many blocks of one kernel fit on an SM,
# what cudaOccupancyMaxActiveBlocksPerMultiprocessor returns in steps 6-8.
# With 256 threads and 22-28 registers per thread the thread limit binds
# first (registers: 7168 of 65536 per block; shared memory: 1 KiB).
SM90_THREADS_PER_SM = 2048
SM90_BLOCKS_PER_SM = 32
# The SMs of an H200, the GPU of plots/reference (tests/test_patterns.py
# checks the reference's sms column): a grid-dependent model (step 9) is
# built for a full wave there when no launch is given, as in its pictures.
EXAMPLE_SMS = 132

# What one lane does in one warp instruction; the pictures' colours.
WORK = "work"     # its condition is true and a later level uses its result
SPARE = "spare"   # it runs the instruction, but nobody reads its result
OFF = "off"       # its warp issues the instruction, its condition is false
SKIP = "skip"     # its warp does not issue the instruction at all
LANE_STATES = (WORK, SPARE, OFF, SKIP)

# How nvcc 13 (-O3, sm_90) compiles an `if`, and so which warps issue its
# body. A short body is PREDICATED: every warp that reaches it issues every
# instruction, and lanes whose condition is false idle. A long body
# (warp_reduce) or the final `if (tid == 0)` is a BRANCH: a warp issues it
# only if at least one of its lanes goes in. The SASS (`make sass`) shows
# both forms; smsp__inst_executed_op_shared_ld.sum confirms the count.
PREDICATED = "predicated"
BRANCH = "branch"

# Parts of the input in step 8 (and the only part in the other steps).
BODY, HEAD, TAIL = "body", "head", "tail"

STEP_RE = re.compile(r"^step(\d+)_")
DEFINE_RE = re.compile(r"^\s*#define\s+(\w+)\s+(0[xX][0-9a-fA-F]+|\d+)u?\b", re.M)


class ModelError(Exception):
    """A model cannot be built (missing step, missing #define)."""


# ----------------------------------------------------------------------------
# Source references
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Src:
    """The line of a step's reduce.cu that a piece of the model transcribes."""
    step: str
    line: int
    text: str

    def __str__(self):
        return f"{self.step}/reduce.cu:{self.line}"


def at(step, line, text):
    return Src(step, line, text)


def source_problems(root, models):
    """Every Src whose text is no longer in its step's reduce.cu: [message, ...]."""
    problems, cache = [], {}
    for built in models:
        for src in built.sources:
            path = os.path.join(root, src.step, "reduce.cu")
            if path not in cache:
                if not os.path.isfile(path):
                    problems.append(f"{src}: file missing")
                    cache[path] = None
                    continue
                with open(path, encoding="utf-8") as handle:
                    cache[path] = handle.read().split("\n")
            lines = cache[path]
            if lines is None:
                continue
            if resolve_line(lines, src) is None:
                problems.append(f"{src}: expected {src.text!r}, no longer in the file; re-check "
                                f"the model in tools/patterns.py")
    return problems


def resolve_line(lines, src):
    """The line (1-based) that holds src.text: src.line when it still does,
    else the nearest one that does (comments above the code, such as the
    header comment, may move it), or None."""
    if 0 < src.line <= len(lines) and src.text in lines[src.line - 1]:
        return src.line
    found = [k + 1 for k, line in enumerate(lines) if src.text in line]
    return min(found, key=lambda k: abs(k - src.line)) if found else None


def read_defines(root, step):
    """The integer #defines of <root>/<step>/reduce.cu, e.g. BLOCK_SIZE."""
    path = os.path.join(root, step, "reduce.cu")
    if not os.path.isfile(path):
        raise ModelError(f"no {step}/reduce.cu under {root}")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return {name: int(value, 0) for name, value in DEFINE_RE.findall(text)}


def need(defines, step, *names):
    missing = [name for name in names if name not in defines]
    if missing:
        raise ModelError(f"{step}/reduce.cu has no #define {', '.join(missing)}")
    return [defines[name] for name in names]


# ----------------------------------------------------------------------------
# One block: warp instructions on shared memory and registers
# ----------------------------------------------------------------------------

def bank(word):
    return word % NUM_BANKS


@dataclass(frozen=True)
class WarpInst:
    """One warp instruction of the model: one source operation, one warp."""
    warp: int
    op: str            # LDS, STS (shared), ADD, SHFL (registers), LDG, STG, ATOM (global)
    on: tuple          # 32 bools: the lane's condition is true
    words: tuple = ()  # LDS/STS: the shared word each lane touches (None if off)
    what: str = ""     # the operand in the source, e.g. "s_data[tid + s]"

    @property
    def lanes_on(self):
        return sum(self.on)

    def words_per_bank(self):
        """Distinct words each of the 32 banks serves in this request."""
        per_bank = [set() for _ in range(NUM_BANKS)]
        for word in self.words:
            if word is not None:
                per_bank[bank(word)].add(word)
        return [len(words) for words in per_bank]

    @property
    def degree(self):
        """Conflict degree: the most distinct words one bank must serve.
        Lanes reading the same word share one access (a broadcast), so they
        count once. A k-way conflict takes k passes (wavefronts)."""
        return max(self.words_per_bank()) if self.words else 0

    @property
    def extra_passes(self):
        # What l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum
        # counts: the passes beyond the first.
        return max(self.degree - 1, 0)


@dataclass(frozen=True)
class Stage:
    """One step of a block's reduction: a tree level, the store before the
    tree, a shuffle level, the final write. Barriers separate stages."""
    label: str            # "s = 64", "offset 16", ...
    kind: str             # "store", "level", "warp level", "shuffle", "exchange",
                          # "ticket", "gather" (step 9's last block), "final"
    threads: tuple        # per thread of the block: WORK, SPARE, OFF or SKIP
    insts: tuple          # every WarpInst issued, in warp order
    src: tuple            # the Src lines this stage transcribes
    shuffle_offset: int = 0   # "shuffle" stages: lane i reads lane i + offset

    def issuing_warps(self):
        return sorted({inst.warp for inst in self.insts})

    def working_warps(self):
        return sorted({inst.warp for inst in self.insts if inst.lanes_on})

    def shared(self):
        return [inst for inst in self.insts if inst.op in ("LDS", "STS")]

    def worst(self):
        """The shared request with the highest conflict degree (or None)."""
        requests = [inst for inst in self.shared() if inst.lanes_on]
        return max(requests, key=lambda inst: inst.degree, default=None)


def partners(stage):
    """What the working lanes fold in at this stage, as (group, item) pairs:
    for a shared level the word of the second operand (s_data[tid + s]),
    group "block"; for a shuffle level the source lane, grouped by warp.
    Within a group, a whole tree must fold in every partial sum but the
    first exactly once."""
    if stage.kind == "shuffle":
        return [(tid // WARP, tid % WARP + stage.shuffle_offset)
                for tid, state in enumerate(stage.threads) if state == WORK]
    folded = []
    for warp in stage.issuing_warps():
        # The second operand is the warp's last load of the stage.
        second = [inst for inst in stage.insts if inst.op == "LDS" and inst.warp == warp][-1]
        folded += [("block", word) for lane, word in enumerate(second.words)
                   if word is not None and stage.threads[warp * WARP + lane] == WORK]
    return folded


def lane_flags(block, warp, condition):
    return tuple(bool(condition(warp * WARP + lane)) for lane in range(WARP))


def make_stage(label, kind, block, src, condition, issue, ops, used=None,
               warps=None, shuffle_offset=0):
    """A stage from the source's condition and operands.

    condition(tid): the `if` that guards the stage. issue: PREDICATED or
    BRANCH (see above). ops: [(op, operand text, word(tid) or None)], one per
    source operation, in source order. used(tid): whether a later stage reads
    this thread's result (default: every working thread's is). warps: the
    warps that reach the code at all (default: all of the block)."""
    used = used or (lambda tid: True)
    reach = range(block // WARP) if warps is None else warps
    insts, states = [], [SKIP] * block
    for warp in reach:
        on = lane_flags(block, warp, condition)
        if issue == BRANCH and not any(on):
            continue
        for op, what, word in ops:
            words = ()
            if word is not None:
                words = tuple(word(warp * WARP + lane) if on[lane] else None
                              for lane in range(WARP))
            insts.append(WarpInst(warp, op, on, words, what))
        for lane in range(WARP):
            tid = warp * WARP + lane
            states[tid] = (WORK if used(tid) else SPARE) if on[lane] else OFF
    return Stage(label, kind, tuple(states), tuple(insts), tuple(src),
                 shuffle_offset)


def everyone(tid):
    return True


# ----------------------------------------------------------------------------
# A grid: which thread loads which input element
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Load:
    """One load of one thread: `width` floats starting at input index `first`."""
    thread: int     # global thread index, blockIdx.x * BLOCK + tid
    slot: str       # which load instruction of the thread, e.g. "trip 1, k 2"
    first: int      # index into g_in
    width: int      # 1 for a float, 4 for a float4
    part: str       # BODY, HEAD or TAIL


def lanes_below(limit, first):
    """Lanes of a warp whose value first + lane is < limit: how many of the
    32 consecutive threads pass a bound check of the form `x < limit`."""
    return min(max(limit - first, 0), WARP)


class OneLoad:
    """Steps 0-2: thread i loads element i, if it exists."""

    def __init__(self, block, src):
        self.block, self.src = block, src

    def grid(self, n, sms):
        return -(-n // self.block)   # one element per thread

    def thread_loads(self, n, grid, offset=0):
        for b in range(grid):
            for tid in range(self.block):
                i = b * self.block + tid   # blockIdx.x * blockDim.x + threadIdx.x
                if i < n:                   # (i < n) ? g_in[i] : 0.0f
                    yield Load(i, "i", i, 1, BODY)

    def warp_insts(self, n, grid, offset=0):
        """[(op, lanes on)] of every global-load-phase instruction, warp by warp."""
        for warp in range(grid * self.block // WARP):
            yield [("LDG", lanes_below(n, warp * WARP))]

    def warp_groups(self, n, grid, offset=0):
        """Counter(warp_insts) without a million generator steps at n = 2^25:
        every warp below n // 32 loads 32 lanes; only the last block's differ."""
        full = min(n // WARP, grid * self.block // WARP)
        groups = Counter({(("LDG", WARP),): full} if full else {})
        for warp in range(full, grid * self.block // WARP):
            groups[(("LDG", lanes_below(n, warp * WARP)),)] += 1
        return groups


class TwoLoads:
    """Steps 3-5: thread tid of block b loads b*2B + tid and b*2B + tid + B."""

    def __init__(self, block, src):
        self.block, self.src = block, src

    def grid(self, n, sms):
        return -(-n // (2 * self.block))   # two elements per thread

    def thread_loads(self, n, grid, offset=0):
        for b in range(grid):
            for tid in range(self.block):
                thread = b * self.block + tid
                i = b * (self.block * 2) + tid      # blockIdx.x * (blockDim.x * 2) + threadIdx.x
                if i < n:                           # (i < n) ? g_in[i] : 0.0f
                    yield Load(thread, "i", i, 1, BODY)
                if i + self.block < n:              # if (i + blockDim.x < n)
                    yield Load(thread, "i + B", i + self.block, 1, BODY)

    def warp_insts(self, n, grid, offset=0):
        for warp in range(grid * self.block // WARP):
            yield self.one_warp(n, warp)

    def one_warp(self, n, warp):
        per_block = self.block // WARP
        first = (warp // per_block) * 2 * self.block + (warp % per_block) * WARP
        # The first load only assigns; the second is `sum += ...`: a load and an add.
        second = lanes_below(n, first + self.block)
        return [("LDG", lanes_below(n, first)), ("LDG", second), ("ADD", second)]

    def warp_groups(self, n, grid, offset=0):
        """Counter(warp_insts): the warps of blocks wholly below n are all full."""
        per_block = self.block // WARP
        full = min(n // (2 * self.block), grid)
        groups = Counter({(("LDG", WARP), ("LDG", WARP), ("ADD", WARP)): full * per_block}
                         if full else {})
        for warp in range(full * per_block, grid * per_block):
            groups[tuple(self.one_warp(n, warp))] += 1
        return groups


def full_wave(sms, block):
    """What cudaOccupancyMaxActiveBlocksPerMultiprocessor times the SM count
    gives steps 6-9: the blocks that fit the GPU at once."""
    return sms * min(SM90_THREADS_PER_SM // block, SM90_BLOCKS_PER_SM)


def resident_grid(n, sms, block, min_per_thread):
    """Steps 6-9's reduce_pass: enough blocks for one full wave, fewer for small n."""
    blocks = -(-n // (block * min_per_thread))
    return min(blocks, full_wave(sms, block))


class GridStride:
    """Steps 6-7: each thread walks the input with the grid's stride,
    UNROLL predicated loads per trip of the loop."""

    def __init__(self, block, unroll, min_per_thread, src):
        self.block, self.unroll, self.min_per_thread = block, unroll, min_per_thread
        self.src = src

    def grid(self, n, sms):
        return resident_grid(n, sms, self.block, self.min_per_thread)

    def thread_loads(self, n, grid, offset=0):
        stride = grid * self.block                       # gridDim.x * BLOCK
        for thread in range(grid * self.block):          # blockIdx.x * BLOCK + threadIdx.x
            i, trip = thread, 0
            while i < n:                                 # for (; i < n; i += UNROLL * stride)
                for k in range(self.unroll):
                    if i + k * stride < n:               # if (i + k * stride < n)
                        yield Load(thread, f"trip {trip}, k {k}", i + k * stride, 1, BODY)
                i += self.unroll * stride
                trip += 1

    def slots(self, n, grid, offset=0):
        """The load instructions thread 0 issues, in order: every slot of
        every trip it enters, taken or not (they are predicated)."""
        trips = -(-n // (self.unroll * grid * self.block)) if n else 0
        return [f"trip {t}, k {k}" for t in range(trips) for k in range(self.unroll)]

    def warp_insts(self, n, grid, offset=0):
        stride = grid * self.block
        for warp in range(grid * self.block // WARP):
            insts, first = [], warp * WARP
            # A warp runs a trip while any lane is still in the loop, and
            # then issues all UNROLL predicated loads and adds of the trip.
            while first < n:
                for k in range(self.unroll):
                    on = lanes_below(n, first + k * stride)
                    insts += [("LDG", on), ("ADD", on)]
                first += self.unroll * stride
            yield insts


class VectorGridStride:
    """Step 8: the head floats one by one, whole float4s with the grid's
    stride (UNROLL per trip), the tail floats one by one."""

    def __init__(self, block, unroll, min_per_thread, src):
        self.block, self.unroll, self.min_per_thread = block, unroll, min_per_thread
        self.src = src

    def grid(self, n, sms):
        return resident_grid(n, sms, self.block, self.min_per_thread)

    @staticmethod
    def split(n, offset):
        """(head, n4, tail) for an input that starts `offset` floats past a
        16-byte boundary (the harness's --offset; cudaMalloc is aligned)."""
        address = offset * WORD_BYTES
        head = ((ALIGN_BYTES - (address & 15)) & 15) // WORD_BYTES
        head = min(head, n)               # head = min(head, n);
        n4 = (n - head) // FLOAT4         # (n - head) / 4: whole float4s
        tail = head + FLOAT4 * n4         # first float after them
        return head, n4, tail

    def thread_loads(self, n, grid, offset=0):
        head, n4, tail = self.split(n, offset)
        stride = grid * self.block
        for thread in range(grid * self.block):
            i = thread
            if i < head:                                   # if (i < head)
                yield Load(thread, "head", i, 1, HEAD)
            if i < n - tail:                               # if (i < n - tail)
                yield Load(thread, "tail", tail + i, 1, TAIL)
            trip = 0
            while i < n4:                                  # for (; i < n4; i += UNROLL * stride)
                for k in range(self.unroll):
                    if i + k * stride < n4:                # g_in4[i + k * stride]
                        yield Load(thread, f"trip {trip}, k {k}",
                                   head + FLOAT4 * (i + k * stride), FLOAT4, BODY)
                i += self.unroll * stride
                trip += 1

    def slots(self, n, grid, offset=0):
        """The load instructions thread 0 issues, in order (see GridStride):
        the head and the tail come before the loop, as in the kernel."""
        n4 = self.split(n, offset)[1]
        trips = -(-n4 // (self.unroll * grid * self.block))
        return [HEAD, TAIL] + [f"trip {t}, k {k}" for t in range(trips)
                               for k in range(self.unroll)]

    def warp_insts(self, n, grid, offset=0):
        head, n4, tail = self.split(n, offset)
        stride = grid * self.block
        for warp in range(grid * self.block // WARP):
            first = warp * WARP
            on_head, on_tail = lanes_below(head, first), lanes_below(n - tail, first)
            insts = [("LDG", on_head), ("ADD", on_head), ("LDG", on_tail), ("ADD", on_tail)]
            while first < n4:
                for k in range(self.unroll):
                    on = lanes_below(n4, first + k * stride)
                    # (v.x + v.y) + (v.z + v.w), then sum += : three adds
                    insts += [("LDG", on)] + [("ADD", on)] * 3
                first += self.unroll * stride
            yield insts


class Ticket:
    """Step 9: how a single-pass kernel finds its last block, and what that
    block reads.

    Thread 0 of every block stores the block's partial sum in
    g_partials[blockIdx.x] and draws a ticket: the counter's value before its
    fetch_add. The block that draws gridDim.x - 1 knows that every other block
    has stored its partial, and its threads read them all with the block's
    stride, in block order."""

    def __init__(self, block, src):
        self.block, self.src = block, src

    @staticmethod
    def draws(finish_order):
        """[(block, ticket, last)] when thread 0 of each block reaches the
        fetch_add in finish_order (the hardware's choice, any order)."""
        grid, counter, draws = len(finish_order), 0, []
        for b in finish_order:
            ticket, counter = counter, counter + 1          # fetch_add(1, ...): the old value
            draws.append((b, ticket, ticket == grid - 1))   # s_last = (ticket == gridDim.x - 1)
        return draws

    def partial_loads(self, grid):
        """The last block's loads of the partials: Load(tid, "trip t", b, 1, BODY)."""
        for tid in range(self.block):
            b, trip = tid, 0
            while b < grid:                   # for (b = tid; b < gridDim.x; b += BLOCK)
                yield Load(tid, f"trip {trip}", b, 1, BODY)     # sum += g_partials[b]
                b += self.block
                trip += 1

    def gather(self, grid):
        """The same loop as stages, one per trip: a warp runs a trip while any
        of its lanes is still in the loop (a branch); its lanes past the last
        partial idle."""
        return [make_stage(f"partials, trip {trip}", "gather", self.block, self.src,
                           lambda tid, t=trip: tid + t * self.block < grid, BRANCH,
                           [("LDG", "g_partials[b]", None), ("ADD", "+", None)])
                for trip in range(-(-grid // self.block))]


# ----------------------------------------------------------------------------
# The step models
# ----------------------------------------------------------------------------

@dataclass
class StepModel:
    step: str
    block: int
    stages: list          # one block's reduction, in program order
    loads: object         # OneLoad, TwoLoads, GridStride, VectorGridStride
    sources: list = field(default_factory=list)
    summary: str = ""     # one line: what the model says this step does
    # Stages that ONE block per launch runs after its own (a single-pass
    # kernel's last block, which adds every block's partial sum): counted
    # once per launch, not once per block, and drawn below the others.
    once: list = field(default_factory=list)
    # A model whose stages depend on gridDim.x (step 9) is built for `grid`;
    # for_grid(grid) builds the same step for another grid. 0 and None: the
    # stages are the same for every grid.
    grid: int = 0
    for_grid: object = None
    ticket: object = None  # step 9's Ticket: the last block's draw and loop

    def all_stages(self):
        return self.stages + self.once

    def tree(self):
        """The stages that reduce partial sums (no store, no final write)."""
        return [st for st in self.all_stages()
                if st.kind in ("level", "warp level", "shuffle")]

    def shared_stages(self):
        return [st for st in self.all_stages() if st.shared()]


MODELS = {}


def model(step):
    """Register a function defines -> StepModel for one step directory."""
    def register(function):
        MODELS[step] = function
        return function
    return register


def step_key(step):
    match = STEP_RE.match(step)
    return (int(match.group(1)) if match else 1 << 30, step)


def modelled_steps(root):
    """The steps that have both a model and a reduce.cu under root."""
    return sorted((s for s in MODELS if os.path.isfile(os.path.join(root, s, "reduce.cu"))),
                  key=step_key)


def build(root, step):
    if step not in MODELS:
        raise ModelError(f"no model for {step} in tools/patterns.py")
    built = MODELS[step](read_defines(root, step))
    # Every Src of the stages and of the loads belongs to the model's list.
    seen = list(built.sources)
    for stage in built.all_stages():
        seen += [src for src in stage.src if src not in seen]
    seen += [src for src in getattr(built.loads, "src", ()) if src not in seen]
    seen += [src for src in getattr(built.ticket, "src", ()) if src not in seen]
    built.sources = seen
    return built


# Pieces that several steps share: each takes the step's name so the Src
# points at that step's own copy of the line.

def initial_store(step, block, line, text="s_data[tid] = "):
    # Every thread stores its value to its own word: lanes on 32 banks.
    return make_stage("store s_data[tid]", "store", block, [at(step, line, text)],
                      everyone, PREDICATED, [("STS", "s_data[tid]", lambda tid: tid)])


def shared_level(step, block, s, lines, condition, index, cond_text, body_text,
                 extra_src=(), name="tid"):
    """One level of the block-wide tree: s_data[index] += s_data[index + s],
    where the source calls the index `name`."""
    return make_stage(
        f"s = {s}", "level", block,
        [at(step, lines[0], cond_text), at(step, lines[1], body_text), *extra_src],
        condition, PREDICATED,
        [("LDS", f"s_data[{name}]", index),
         ("LDS", f"s_data[{name} + s]", lambda tid: index(tid) + s),
         ("ADD", "+", None),
         ("STS", f"s_data[{name}]", index)])


def final_write(step, block, line, from_shared=True):
    # `if (tid == 0)`: the other lanes of warp 0 and warps 1..7 leave
    # (EXIT in the SASS), so only warp 0 issues the write, with one lane.
    ops = [("LDS", "s_data[0]", lambda tid: 0)] if from_shared else []
    return make_stage("write g_out", "final", block,
                      [at(step, line, "if (tid == 0)")],
                      lambda tid: tid == 0, BRANCH,
                      ops + [("STG", "g_out[blockIdx.x]", None)])


def block_loop_then_last_warp(step, block, loop_line, first_warp_line):
    """Steps 4-6: levels s = BLOCK/2 .. 64 for the block, then warp_reduce."""
    stages, s = [], block // 2
    while s > WARP:                      # for (s = BLOCK / 2; s > 32; s >>= 1)
        stages.append(shared_level(
            step, block, s, (loop_line + 1, loop_line + 2),
            lambda tid, s=s: tid < s, lambda tid: tid,
            "if (tid < s)", "s_data[tid] += s_data[tid + s];"))
        s >>= 1
    # if (tid < 32) warp_reduce(s_data, tid): one warp, all 32 lanes, six
    # levels; only the lanes below the offset feed the next level.
    offset, line = WARP, first_warp_line
    while offset >= 1:
        ops = [("LDS", "s_data[tid]", lambda tid: tid)] if offset == WARP else []
        ops += [("LDS", f"s_data[tid + {offset}]", lambda tid, o=offset: tid + o),
                ("ADD", "+", None),
                ("STS", "s_data[tid]", lambda tid: tid)]
        stages.append(make_stage(
            f"warp, +{offset}", "warp level", block,
            [at(step, line, f"s_data[tid + {offset}]")],
            lambda tid: tid < WARP, BRANCH, ops,
            used=lambda tid, o=offset: tid < o))
        offset //= 2
        line += 1
    return stages


def shuffle_levels(step, block, warps, label, line):
    """warp_reduce of steps 7-8: five shuffle levels in each warp listed."""
    stages, offset = [], WARP // 2
    while offset > 0:                    # for (offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        # v += __shfl_down_sync(FULL_MASK, v, offset): every lane shuffles and
        # adds (FULL_MASK); lane i's result matters only for i < offset.
        stages.append(make_stage(
            f"{label}, offset {offset}", "shuffle", block,
            [at(step, line, "v += __shfl_down_sync(FULL_MASK, v, offset);")],
            everyone, BRANCH, [("SHFL", "v", None), ("ADD", "+", None)],
            used=lambda tid, o=offset: tid % WARP < o, warps=warps,
            shuffle_offset=offset))
        offset //= 2
    return stages


@model("step0_naive")
def step0(defines):
    step = "step0_naive"
    (block,) = need(defines, step, "BLOCK_SIZE")
    stages, s = [initial_store(step, block, 22)], 1
    while s < block:                     # for (s = 1; s < blockDim.x; s *= 2)
        stages.append(shared_level(
            step, block, s, (26, 27),
            lambda tid, s=s: tid % (2 * s) == 0, lambda tid: tid,
            "if (tid % (2 * s) == 0)", "s_data[tid] += s_data[tid + s];"))
        s *= 2
    stages.append(final_write(step, block, 31))
    loads = OneLoad(block, [at(step, 19, "blockIdx.x * blockDim.x + threadIdx.x"),
                            at(step, 22, "(i < n) ? g_in[i] : 0.0f"),
                            at(step, 37, "(n + BLOCK_SIZE - 1) / BLOCK_SIZE")])
    return StepModel(step, block, stages, loads, summary=(
        "working threads spread over every warp: all warps issue every level"))


@model("step1_divergence")
def step1(defines):
    step = "step1_divergence"
    (block,) = need(defines, step, "BLOCK_SIZE")
    stages, s = [initial_store(step, block, 23)], 1
    while s < block:                     # for (s = 1; s < blockDim.x; s *= 2)
        def index(tid, s=s):
            return 2 * s * tid           # unsigned int index = 2 * s * tid;
        stages.append(shared_level(
            step, block, s, (28, 29),
            lambda tid, index=index: index(tid) < block, index,
            "if (index < blockDim.x)", "s_data[index] += s_data[index + s];",
            [at(step, 27, "unsigned int index = 2 * s * tid;")], name="index"))
        s *= 2
    stages.append(final_write(step, block, 33))
    loads = OneLoad(block, [at(step, 20, "blockIdx.x * blockDim.x + threadIdx.x"),
                            at(step, 23, "(i < n) ? g_in[i] : 0.0f"),
                            at(step, 39, "(n + BLOCK_SIZE - 1) / BLOCK_SIZE")])
    return StepModel(step, block, stages, loads, summary=(
        "working threads packed into the first warps; stride 2*s between lanes"))


def top_down_tree(step, block, store_line, cond_line, final_line):
    """Steps 2-3: s = BLOCK/2 .. 1, threads tid < s add s_data[tid + s]."""
    stages, s = [initial_store(step, block, store_line)], block // 2
    while s > 0:                         # for (s = blockDim.x / 2; s > 0; s >>= 1)
        stages.append(shared_level(
            step, block, s, (cond_line, cond_line + 1),
            lambda tid, s=s: tid < s, lambda tid: tid,
            "if (tid < s)", "s_data[tid] += s_data[tid + s];"))
        s >>= 1
    stages.append(final_write(step, block, final_line))
    return stages


@model("step2_bankconflict")
def step2(defines):
    step = "step2_bankconflict"
    (block,) = need(defines, step, "BLOCK_SIZE")
    loads = OneLoad(block, [at(step, 19, "blockIdx.x * blockDim.x + threadIdx.x"),
                            at(step, 22, "(i < n) ? g_in[i] : 0.0f"),
                            at(step, 37, "(n + BLOCK_SIZE - 1) / BLOCK_SIZE")])
    return StepModel(step, block, top_down_tree(step, block, 22, 26, 31), loads,
                     summary="consecutive lanes read consecutive words")


@model("step3_idle")
def step3(defines):
    step = "step3_idle"
    (block,) = need(defines, step, "BLOCK_SIZE")
    loads = TwoLoads(block, [at(step, 18, "blockIdx.x * (blockDim.x * 2) + threadIdx.x"),
                             at(step, 21, "(i < n) ? g_in[i] : 0.0f"),
                             at(step, 22, "if (i + blockDim.x < n)"),
                             at(step, 39, "(n + 2 * BLOCK_SIZE - 1) / (2 * BLOCK_SIZE)")])
    return StepModel(step, block, top_down_tree(step, block, 24, 28, 33), loads,
                     summary="two loads per thread, then step 2's tree")


@model("step4_warp")
def step4(defines):
    step = "step4_warp"
    (block,) = need(defines, step, "BLOCK_SIZE")
    stages = ([initial_store(step, block, 47)]
              + block_loop_then_last_warp(step, block, 50, 29)
              + [final_write(step, block, 58)])
    loads = TwoLoads(block, [at(step, 41, "blockIdx.x * (blockDim.x * 2) + threadIdx.x"),
                             at(step, 45, "if (i + blockDim.x < n)"),
                             at(step, 64, "(n + 2 * BLOCK_SIZE - 1) / (2 * BLOCK_SIZE)")])
    sources = [at(step, 28, "float v = s_data[tid];"), at(step, 55, "if (tid < 32)")]
    return StepModel(step, block, stages, loads, sources,
                     summary="the last six levels in one warp, no block barriers")


@model("step5_unroll")
def step5(defines):
    # The same tree as step 4; BLOCK is a template constant, so the compiler
    # unrolls it, but what each lane touches does not change.
    step = "step5_unroll"
    (block,) = need(defines, step, "BLOCK_SIZE")
    stages = ([initial_store(step, block, 48)]
              + block_loop_then_last_warp(step, block, 52, 29)
              + [final_write(step, block, 60)])
    loads = TwoLoads(block, [at(step, 42, "blockIdx.x * (BLOCK * 2) + threadIdx.x"),
                             at(step, 46, "if (i + BLOCK < n)"),
                             at(step, 66, "(n + 2 * BLOCK_SIZE - 1) / (2 * BLOCK_SIZE)")])
    sources = [at(step, 28, "float v = s_data[tid];"), at(step, 57, "if (tid < 32)")]
    return StepModel(step, block, stages, loads, sources,
                     summary="step 4's tree, unrolled at compile time")


@model("step6_multi")
def step6(defines):
    step = "step6_multi"
    block, unroll, min_per = need(defines, step, "BLOCK_SIZE", "UNROLL", "MIN_PER_THREAD")
    stages = ([initial_store(step, block, 58)]
              + block_loop_then_last_warp(step, block, 62, 33)
              + [final_write(step, block, 70)])
    loads = GridStride(block, unroll, min_per, [
        at(step, 46, "blockIdx.x * BLOCK + threadIdx.x"),
        at(step, 47, "unsigned int stride = gridDim.x * BLOCK;"),
        at(step, 52, "for (; i < n; i += UNROLL * stride)"),
        at(step, 55, "if (i + k * stride < n)"),
        at(step, 56, "sum += g_in[i + k * stride];"),
        at(step, 84, "max_blocks = (size_t)sms * per_sm;"),
        at(step, 86, "(n + BLOCK_SIZE * MIN_PER_THREAD - 1) / (BLOCK_SIZE * MIN_PER_THREAD)")])
    sources = [at(step, 32, "float v = s_data[tid];"), at(step, 67, "if (tid < 32)")]
    return StepModel(step, block, stages, loads, sources,
                     summary="a grid-stride loop first, then step 5's tree once")


def shuffle_block(step, block, lines):
    """Steps 7-9 after the loads: shuffles in every warp, one shared word per
    warp, one barrier, shuffles in warp 0, and (with lines["final"]) the
    write of g_out[blockIdx.x]."""
    warps = block // WARP
    stages = shuffle_levels(step, block, range(warps), "each warp", lines["shfl"])
    stages.append(make_stage(
        "store warp sums", "exchange", block,
        [at(step, lines["store"], "if (tid % WARP_SIZE == 0)")],
        lambda tid: tid % WARP == 0, PREDICATED,
        [("STS", "s_data[tid / WARP_SIZE]", lambda tid: tid // WARP)]))
    # Only warp 0 enters `if (tid < WARP_SIZE)`; its lanes below BLOCK / 32
    # read a warp's sum, the rest take 0 (a predicated load).
    stages.append(make_stage(
        "load warp sums", "exchange", block,
        [at(step, lines["load"], "(tid < BLOCK / WARP_SIZE) ? s_data[tid] : 0.0f")],
        lambda tid: tid < warps, PREDICATED,
        [("LDS", "s_data[tid]", lambda tid: tid)], warps=[0]))
    stages += shuffle_levels(step, block, [0], "warp 0", lines["shfl"])
    if "final" in lines:
        stages.append(final_write(step, block, lines["final"], from_shared=False))
    return stages


@model("step7_shfl")
def step7(defines):
    step = "step7_shfl"
    block, unroll, min_per, warp = need(defines, step, "BLOCK_SIZE", "UNROLL",
                                        "MIN_PER_THREAD", "WARP_SIZE")
    if warp != WARP:
        raise ModelError(f"{step}: WARP_SIZE {warp}, the model assumes {WARP}")
    stages = shuffle_block(step, block, dict(shfl=26, store=48, load=53, final=57))
    loads = GridStride(block, unroll, min_per, [
        at(step, 35, "blockIdx.x * BLOCK + threadIdx.x"),
        at(step, 36, "unsigned int stride = gridDim.x * BLOCK;"),
        at(step, 41, "for (; i < n; i += UNROLL * stride)"),
        at(step, 44, "if (i + k * stride < n)"),
        at(step, 71, "max_blocks = (size_t)sms * per_sm;"),
        at(step, 73, "(n + BLOCK_SIZE * MIN_PER_THREAD - 1) / (BLOCK_SIZE * MIN_PER_THREAD)")])
    sources = [at(step, 25, "offset = WARP_SIZE / 2; offset > 0; offset >>= 1"),
               at(step, 49, "s_data[tid / WARP_SIZE] = sum;"),
               at(step, 52, "if (tid < WARP_SIZE)")]
    return StepModel(step, block, stages, loads, sources,
                     summary="shuffles in registers; shared memory holds one sum per warp")


@model("step8_vector")
def step8(defines):
    step = "step8_vector"
    block, unroll, min_per, warp = need(defines, step, "BLOCK_SIZE", "UNROLL",
                                        "MIN_PER_THREAD", "WARP_SIZE")
    if warp != WARP:
        raise ModelError(f"{step}: WARP_SIZE {warp}, the model assumes {WARP}")
    stages = shuffle_block(step, block, dict(shfl=26, store=61, load=66, final=70))
    loads = VectorGridStride(block, unroll, min_per, [
        at(step, 35, "blockIdx.x * BLOCK + threadIdx.x"),
        at(step, 40, "((16 - ((size_t)g_in & 15)) & 15) / sizeof(float)"),
        at(step, 41, "head = min(head, n);"),
        at(step, 42, "unsigned int n4 = (n - head) / 4;"),
        at(step, 43, "unsigned int tail = head + 4 * n4;"),
        at(step, 45, "if (i < head)"),
        at(step, 47, "if (i < n - tail)"),
        at(step, 48, "sum += g_in[tail + i];"),
        at(step, 52, "for (; i < n4; i += UNROLL * stride)"),
        at(step, 55, "if (i + k * stride < n4)"),
        at(step, 57, "sum += (v.x + v.y) + (v.z + v.w);"),
        at(step, 84, "max_blocks = (size_t)sms * per_sm;"),
        at(step, 86, "(n + BLOCK_SIZE * MIN_PER_THREAD - 1) / (BLOCK_SIZE * MIN_PER_THREAD)")])
    return StepModel(step, block, stages, loads, summary=(
        "float4 loads for the body, single floats for the head and the tail"))


@model("step9_singlepass")
def step9(defines, grid=None):
    step = "step9_singlepass"
    block, unroll, min_per, warp = need(defines, step, "BLOCK_SIZE", "UNROLL",
                                        "MIN_PER_THREAD", "WARP_SIZE")
    if warp != WARP:
        raise ModelError(f"{step}: WARP_SIZE {warp}, the model assumes {WARP}")
    if grid is None:
        grid = full_wave(EXAMPLE_SMS, block)
    # block_reduce(): step 8's tree, moved into a function that the last
    # block calls a second time.
    lines = dict(shfl=33, store=45, load=50)
    stages, once = shuffle_block(step, block, lines), []
    ticket = Ticket(block, [at(step, 119, "for (unsigned int b = tid; b < gridDim.x; b += BLOCK)"),
                            at(step, 120, "sum += g_partials[b];")])
    # s_last is the shared word after s_data's BLOCK / 32 floats (the SASS
    # addresses it as byte 0x20 of the block's shared memory, word 8). One
    # word for every lane: a broadcast, one pass.
    s_last = block // WARP
    if grid == 1:
        # if (gridDim.x == 1): the block's own sum is the answer, no ticket.
        stages.append(make_stage(
            "write g_out", "final", block,
            [at(step, 97, "if (gridDim.x == 1)"), at(step, 99, "g_out[0] = sum;")],
            lambda tid: tid == 0, BRANCH, [("STG", "g_out[0]", None)]))
    else:
        # Thread 0 stores the partial, draws a ticket and tells its block;
        # the other lanes of warp 0 wait, warps 1..7 branch past it.
        stages.append(make_stage(
            "partial, ticket", "ticket", block,
            [at(step, 105, "if (tid == 0)"), at(step, 106, "g_partials[blockIdx.x] = sum;"),
             at(step, 107, "fetch_add(1, cuda::memory_order_release)"),
             at(step, 108, "s_last = (ticket == gridDim.x - 1);")],
            lambda tid: tid == 0, BRANCH,
            [("STG", "g_partials[blockIdx.x]", None), ("ATOM", "fetch_add(1)", None),
             ("STS", "s_last", lambda tid: s_last)]))
        # After the barrier every thread reads the flag; all but the last
        # block return.
        stages.append(make_stage(
            "read s_last", "ticket", block, [at(step, 111, "if (!s_last)")],
            everyone, PREDICATED, [("LDS", "s_last", lambda tid: s_last)]))
        final = make_stage(
            "write g_out, reset", "final", block,
            [at(step, 122, "if (tid == 0)"), at(step, 123, "g_out[0] = sum;"),
             at(step, 124, "ticket_ref(*g_ticket).store(0, cuda::memory_order_relaxed);")],
            lambda tid: tid == 0, BRANCH,
            [("STG", "g_out[0]", None), ("STG", "*g_ticket = 0", None)])
        once = ticket.gather(grid) + shuffle_block(step, block, lines) + [final]
    loads = VectorGridStride(block, unroll, min_per, [
        at(step, 63, "blockIdx.x * BLOCK + threadIdx.x"),
        at(step, 68, "((16 - ((size_t)g_in & 15)) & 15) / sizeof(float)"),
        at(step, 69, "head = min(head, n);"),
        at(step, 70, "unsigned int n4 = (n - head) / 4;"),
        at(step, 71, "unsigned int tail = head + 4 * n4;"),
        at(step, 73, "if (i < head)"),
        at(step, 75, "if (i < n - tail)"),
        at(step, 76, "sum += g_in[tail + i];"),
        at(step, 80, "for (; i < n4; i += UNROLL * stride)"),
        at(step, 83, "if (i + k * stride < n4)"),
        at(step, 85, "sum += (v.x + v.y) + (v.z + v.w);"),
        at(step, 150, "max_blocks = (size_t)sms * per_sm;"),
        at(step, 152, "(n + BLOCK_SIZE * MIN_PER_THREAD - 1) / (BLOCK_SIZE * MIN_PER_THREAD)")])
    sources = [at(step, 88, "sum = block_reduce<BLOCK>(sum, s_data);"),
               at(step, 121, "sum = block_reduce<BLOCK>(sum, s_data);")]
    return StepModel(step, block, stages, loads, sources, summary=(
        "step 8's block, then a ticket; the last block adds the partials"),
        once=once, grid=grid, for_grid=lambda g: step9(defines, g), ticket=ticket)


# ----------------------------------------------------------------------------
# What the model predicts for a whole kernel launch
# ----------------------------------------------------------------------------

def stage_counts(stages):
    """Warp instructions by op, extra shared passes, idle lane slots and
    tree levels issued (summed over warps) of these stages."""
    counts = Counter()
    for stage in stages:
        if stage.kind in ("level", "warp level", "shuffle"):
            counts["tree_issues"] += len(stage.issuing_warps())
        for inst in stage.insts:
            counts[inst.op] += 1
            counts["lanes_off"] += WARP - inst.lanes_on
            if inst.op in ("LDS", "STS"):
                counts[f"{inst.op}_conflicts"] += inst.extra_passes
    return counts


def kernel_counts(built, n, sms, offset=0):
    """The model's counts for one launch of the kernel on n floats.

    Keys: blocks, warps, LDS, STS, LDG, STG, ADD, SHFL (warp instructions of
    the modelled source operations), LDS_conflicts, STS_conflicts (passes
    beyond the first), lanes_off (over the modelled instructions: lane slots
    whose condition was false or whose lane had left), tree_issues (tree
    levels issued, summed over warps)."""
    grid = built.loads.grid(n, sms)
    if built.for_grid is not None and grid != built.grid:
        built = built.for_grid(grid)
    counts = Counter()
    for key, value in stage_counts(built.stages).items():
        counts[key] = value * grid
    counts.update(stage_counts(built.once))
    # Warps with the same instructions and lanes are counted once each kind.
    groups = getattr(built.loads, "warp_groups", None)
    groups = groups(n, grid, offset) if groups else \
        Counter(map(tuple, built.loads.warp_insts(n, grid, offset)))
    for insts, warps in groups.items():
        for op, on in insts:
            counts[op] += warps
            counts["lanes_off"] += (WARP - on) * warps
    counts["blocks"] = grid
    counts["warps"] = grid * built.block // WARP
    return counts
