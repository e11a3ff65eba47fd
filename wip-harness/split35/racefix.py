#!/usr/bin/env python3
"""Session 35: a variant of step 23 for racecheck's set-up warning (not a step): thread 0 initialises
s_loaded before the block barrier and sets its expected bytes after it. Writes rows/step27_racefix/.
Run on the device: python3 wip-harness/split35/racefix.py && make rows/step27_racefix/run"""
import os, shutil
src, dst = "rows/step23_bf16_bulk", "rows/step27_racefix"
shutil.rmtree(dst, ignore_errors=True)
os.makedirs(dst)
s = open(os.path.join(src, "rows.cu")).read()
old = """    if (t == 0)
        mbarrier_expect(&s_loaded, bytes);
    __syncthreads();
"""
new = """    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&s_loaded)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(&s_loaded)),
                     "r"(bytes) : "memory");
"""
assert s.count(old) == 1
open(os.path.join(dst, "rows.cu"), "w").write(s.replace(old, new))
