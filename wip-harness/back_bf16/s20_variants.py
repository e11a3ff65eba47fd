#!/usr/bin/env python3
"""Session 20, issue 42: step 18's lead (0.58 of its copy at 1024 columns),
four development variants of back/step18_ln_bf16_ahead written as folders
back/step9N_<name> (never committed; the device call makes and removes them):
  step91_a3        three rows ahead where a thread holds at most 4 elements
                   (ptxas 13.0: <1,4> at 64 registers spills 24 bytes)
  step92_a3b3      the same, held to 3 blocks an SM there (72 registers, no spill)
  step95_pairs     two bfloat16s a load (4 bytes) up to 2048 columns where the
                   row and pointers allow, two rows ahead as in step 18
  step96_pairs_a3  pairs, and three rows ahead at 4 elements a thread
                   (<2,2> at 1024 columns: 64 registers, no spill)
python3 wip-harness/back_bf16/s20_variants.py [--remove]"""
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ("step91_a3", "step92_a3b3", "step95_pairs", "step96_pairs_a3")


def swap(s, a, b):
    assert s.count(a) == 1, a[:60]
    return s.replace(a, b)


def pairs(s):
    s = swap(s, """    } else if constexpr (PACK == 4) {
        float4 t = *(const float4 *)p;
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else {
        v[0] = *p;
    }""", """    } else if constexpr (PACK == 4) {
        float4 t = *(const float4 *)p;
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else if constexpr (PACK == 2) {
        float2 t = *(const float2 *)p;
        v[0] = t.x, v[1] = t.y;
    } else {
        v[0] = *p;
    }""")
    s = swap(s, """    } else if constexpr (PACK == 4) {
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        *p = v[0];
    }""", """    } else if constexpr (PACK == 4) {
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    } else if constexpr (PACK == 2) {
        *(float2 *)p = make_float2(v[0], v[1]);
    } else {
        *p = v[0];
    }""")
    s = swap(s, """        *(uint2 *)p = t;
    } else {
        *p = __float2bfloat16_rn(v[0]);
    }""", """        *(uint2 *)p = t;
    } else if constexpr (PACK == 2) {
        *(__nv_bfloat162 *)p = __floats2bfloat162_rn(v[0], v[1]);
    } else {
        *p = __float2bfloat16_rn(v[0]);
    }""")
    s = swap(s, "    return p->cols % 4 == 0 && p->cols > 8 * BLOCK_SIZE && starts % 8 == 0 ? 4 : 1;",
             """    if (p->cols % 4 == 0 && p->cols > 8 * BLOCK_SIZE && starts % 8 == 0)
        return 4;
    return p->cols % 2 == 0 && starts % 4 == 0 ? 2 : 1;""")
    return swap(s, """    size_t floats = (p->cols + BLOCK_SIZE - 1) / BLOCK_SIZE;
    if (floats <= 1)""", """    if (pack_of(p) == 2) {
        size_t packs = (p->cols / 2 + BLOCK_SIZE - 1) / BLOCK_SIZE;
        if (packs <= 1)
            return ln_backward_kernel<2, 1>;
        if (packs <= 2)
            return ln_backward_kernel<2, 2>;
        return packs <= 4 ? ln_backward_kernel<2, 4> : ln_backward_kernel<2, 8>;
    }
    size_t floats = (p->cols + BLOCK_SIZE - 1) / BLOCK_SIZE;
    if (floats <= 1)""")


def main():
    for name in NAMES:
        shutil.rmtree(os.path.join(ROOT, "back", name), ignore_errors=True)
    if sys.argv[1:] == ["--remove"]:
        return
    src = open(os.path.join(ROOT, "back", "step18_ln_bf16_ahead", "back.cu")).read()
    ahead = re.search(r"#define AHEAD_OF\(floats\) .*", src).group(0)
    blocks = re.search(r"#define MIN_BLOCKS\(floats\) .*", src).group(0)
    a3 = "#define AHEAD_OF(floats) ((floats) <= 4 ? 3 : (floats) <= MAX_AHEAD2 ? 2 : 1)"
    b3 = "#define MIN_BLOCKS(floats) ((floats) <= 2 ? NARROW_BLOCKS : (floats) <= 4 ? 3 : 2)"
    made = {"step91_a3": swap(src, ahead, a3),
            "step92_a3b3": swap(swap(src, ahead, a3), blocks, b3),
            "step95_pairs": pairs(src),
            "step96_pairs_a3": swap(pairs(src), ahead, a3)}
    for name, text in made.items():
        os.makedirs(os.path.join(ROOT, "back", name))
        with open(os.path.join(ROOT, "back", name, "back.cu"), "w") as f:
            f.write(text)


main()
