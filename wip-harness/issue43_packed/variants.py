#!/usr/bin/env python3
"""Issue 43 item 2, packed bfloat16 (development variants, never shipped as
they are): step 18 (bfloat16 cluster LayerNorm) with its register slots kept
as bfloat16 bits, two to a 32-bit register, widened to float at each use
(exact: a bfloat16 is the top half of a float). Writes each variant's rows.cu
under build/wip/<name>/ and prints "name base source" lines for the call
script.
  pk64: MAX_PER_THREAD 64 (the same 32 registers hold twice the elements), so
        a group is half as wide for a given row: 32768 columns take 512
        threads (two blocks an SM) instead of 1024, 50257 fit one block's
        registers with no shared memory, 128256 a cluster of 8 without any.
  pk32: the packed slots at MAX_PER_THREAD 32: the same groups as step 18,
        half the registers for x (does the register count alone move?).
  ng:   step 24 (bfloat16 softmax) without the -inf guards of exp_minus_max
        and inverse (issue 43 item 3: what the guards cost at 65536 x 768);
        wrong on fully masked rows by design, so timed on the random fill only.
ptxas (nvcc 13.0, sm_90): pk64's 1024-thread and cluster kernels spill
56-96 bytes a thread at 64 registers; its 512-thread kernel none.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = "rows/step18_bf16_layernorm_cluster"

PACKED_HELPERS = r'''
// Packed slots: PACK bfloat16s as their bits, two to a 32-bit word (PACK 1:
// one word, the bits in its top half). A bfloat16 is the top 16 bits of a
// float, so widening is a shift or a mask: exact, and cheap enough to redo at
// each pass over the slots.
template <unsigned int PACK>
struct Packed {
    unsigned int w[PACK == 8 ? 4 : 1];
};

template <unsigned int PACK>
__device__ void load_packed(const __nv_bfloat16 *p, unsigned int i, Packed<PACK> &v)
{
    if constexpr (PACK == 8) {
        uint4 u = reinterpret_cast<const uint4 *>(p)[i];
        v.w[0] = u.x; v.w[1] = u.y; v.w[2] = u.z; v.w[3] = u.w;
    } else {
        v.w[0] = (unsigned int)__bfloat16_as_ushort(p[i]) << 16;
    }
}

template <unsigned int PACK>
__device__ float unpack(const Packed<PACK> &v, unsigned int j)
{
    if constexpr (PACK == 8)
        return __uint_as_float(j % 2 == 0 ? v.w[j / 2] << 16 : v.w[j / 2] & 0xffff0000u);
    else
        return __uint_as_float(v.w[0]);
}
'''


def sub(text, old, new, count=1):
    if text.count(old) != count:
        sys.exit(f"variants.py: {old[:60]!r} found {text.count(old)} times, not {count}")
    return text.replace(old, new)


def packed(src, max_per_thread):
    s = src
    s = sub(s, "#define MAX_PER_THREAD 32 // floats of its row a thread keeps in registers",
            f"#define MAX_PER_THREAD {max_per_thread} // elements of its row a thread keeps in registers, packed")
    s = sub(s, "// The one rounding of each output: to nearest, ties to even.",
            PACKED_HELPERS.strip() + "\n\n// The one rounding of each output: to nearest, ties to even.")
    s = sub(s, "    float v[SLOTS][PACK];   // constant indices only, after unrolling: registers",
            "    Packed<PACK> v[SLOTS];   // constant indices only, after unrolling: registers")
    s = sub(s, """        if (t + k * G < packs)
            load_pack<PACK>(x, k * G, v[k]);
        else
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = 0.0f;""",
            """        if (t + k * G < packs)
            load_packed<PACK>(x, k * G, v[k]);
        else
            for (unsigned int j = 0; j < (PACK == 8 ? 4 : 1); j++)
                v[k].w[j] = 0u;""")
    s = sub(s, """        for (unsigned int j = 0; j < PACK; j++)
            sum += v[k][j];""", """        for (unsigned int j = 0; j < PACK; j++)
            sum += unpack(v[k], j);""")
    s = sub(s, """            for (unsigned int j = 0; j < PACK; j++)
                sum += (v[k][j] - mean) * (v[k][j] - mean);""",
            """            for (unsigned int j = 0; j < PACK; j++)
                sum += (unpack(v[k], j) - mean) * (unpack(v[k], j) - mean);""")
    s = sub(s, """            float gamma[PACK], beta[PACK];
            load_params<PACK, SPLIT>(gamma_q, t + k * G, gamma);
            load_params<PACK, SPLIT>(beta_q, t + k * G, beta);
            for (unsigned int j = 0; j < PACK; j++)
                v[k][j] = (v[k][j] - mean) * rstd * gamma[j] + beta[j];
            store_pack<PACK>(y, k * G, v[k]);""",
            """            float gamma[PACK], beta[PACK], r[PACK];
            load_params<PACK, SPLIT>(gamma_q, t + k * G, gamma);
            load_params<PACK, SPLIT>(beta_q, t + k * G, beta);
            for (unsigned int j = 0; j < PACK; j++)
                r[j] = (unpack(v[k], j) - mean) * rstd * gamma[j] + beta[j];
            store_pack<PACK>(y, k * G, r);""")
    return s


def unguarded(src):
    s = sub(src, "    return expf(x - (max == -INFINITY ? 0.0f : max));", "    return expf(x - max);")
    return sub(s, "    return sum > 0.0f ? 1.0f / sum : 0.0f;", "    return 1.0f / sum;")


def main():
    src = open(os.path.join(ROOT, BASE, "rows.cu")).read()
    narrow = open(os.path.join(ROOT, "rows/step24_bf16_narrow", "rows.cu")).read()
    for name, text in (("pk64", packed(src, 64)), ("pk32", packed(src, 32))):
        folder = os.path.join(ROOT, "build", "wip", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "rows.cu"), "w") as f:
            f.write(text)
        print(name, BASE, os.path.join("build", "wip", name, "rows.cu"))
    folder = os.path.join(ROOT, "build", "wip", "ng")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "rows.cu"), "w") as f:
        f.write(unguarded(narrow))
    print("ng", "rows/step24_bf16_narrow", os.path.join("build", "wip", "ng", "rows.cu"))


if __name__ == "__main__":
    main()
