#!/usr/bin/env python3
"""Session 36: which part of step 26's push pays (not a step). Writes build/wip/dsst/rows.cu from
step 24: each warp's lane r stores the warp's pair into block r's slot (rank x W + warp) with a
plain distributed-shared-memory store, the cluster meets at cluster.sync as in step 24, and every
warp then reads its own block's slots only, so no block reads another's shared memory after the
barrier and the split barrier at exit goes. Against step 24: the remote reads and the end wait,
gone. Against step 26: the cluster barrier in place of st.async on an mbarrier."""
import os
src = open("rows/step24_bf16_narrow/rows.cu").read()
def swap(s, old, new):
    assert s.count(old) == 1, old
    return s.replace(old, new)
s = swap(src, "    __shared__ float2 s_pairs[WARPS_PER_BLOCK];   // this block's warps' pairs\n",
         "    __shared__ float2 s_pairs[MAX_CLUSTER * WARPS_PER_BLOCK];   // slot r x WARPS_PER_BLOCK + w\n")
s = swap(s, """    if (lane == 0)
        s_pairs[warp] = make_float2(mine.m, mine.s);
    cluster.sync();   // every block's pairs are in place, and visible to all
    MaxSum row_ms = {-INFINITY, 0.0f};
    for (unsigned int i = lane; i < pairs; i += WARP_SIZE) {
        float2 p = cluster.map_shared_rank(s_pairs, (int)(i / WARPS_PER_BLOCK))[i % WARPS_PER_BLOCK];
        row_ms = combine(row_ms, {p.x, p.y});
    }
    row_ms = warp_allreduce_pair(row_ms);
    cluster.barrier_arrive();   // this block has read the others' pairs
""", """    if (lane < blocks)
        cluster.map_shared_rank(s_pairs, (int)lane)[rank * WARPS_PER_BLOCK + warp] = make_float2(mine.m, mine.s);
    cluster.sync();   // every block's pairs are in every block, and visible
    MaxSum row_ms = {-INFINITY, 0.0f};
    for (unsigned int i = lane; i < pairs; i += WARP_SIZE) {
        float2 p = s_pairs[i];
        row_ms = combine(row_ms, {p.x, p.y});
    }
    row_ms = warp_allreduce_pair(row_ms);
""")
s = swap(s, "    cluster.barrier_wait();   // no block exits while another may still read its pairs\n", "")
# As step 26: every block has started (its shared memory exists) before the first remote store.
s = swap(s, """        mbarrier_expect_bytes(&s_loaded, bytes);
    if (warp == 0)""", """        mbarrier_expect_bytes(&s_loaded, bytes);
    cluster.barrier_arrive();   // this block has started: the others may store into it
    if (warp == 0)""")
s = swap(s, """    if (lane < blocks)
        cluster.map_shared_rank""", """    cluster.barrier_wait();   // every block has started
    if (lane < blocks)
        cluster.map_shared_rank""")
os.makedirs("build/wip/dsst", exist_ok=True)
open("build/wip/dsst/rows.cu", "w").write(s)
print("wrote build/wip/dsst/rows.cu")
