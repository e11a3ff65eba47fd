#!/usr/bin/env python3
"""Variants for the next GPU session (not part of the tutorial).

Each variant is a shipped step's rows.cu with text changes, written to
build/variants/<name>/rows.cu (the folder name is what the timing script
prints); wip-harness/step22_variants.sh builds and times each beside the step
it comes from, in one device call. Two leads (wip-harness/NOTES.md):

- Step 22's one-read pass takes 56 registers (one 1024-thread block an SM,
  occupancy 48% against step 13's 94%) and every thread merges the 32 warps'
  parts one after another, each with a division in double.
- Issue 49 item 5: from step 4 on, a group's second level is a serial loop
  over its warps' values in shared memory, in every thread. A shuffle
  butterfly over the W = G / 32 values does it in log2(W) steps. Lane i takes
  value i mod W, so every aligned run of W lanes holds all W values and ends
  with the same bits (the operation is commutative): no identity element is
  needed, for the sum or the max.
Usage: python3 wip-harness/step22_variants.py  (prints "name base path" lines)
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KERNEL = "template <unsigned int G, unsigned int PACK, bool SPLIT>\n__global__ void layernorm_kernel("
BOUNDS = ("template <unsigned int G, unsigned int PACK, bool SPLIT>\n"
          "__global__ void __launch_bounds__(MAX_GROUP, 2) layernorm_kernel(")
UNROLL2 = [("    for (unsigned int i = t; i < packs; i += UNROLL * G) {\n        float c[UNROLL][PACK];",
            "    for (unsigned int i = t; i < packs; i += 2 * G) {\n        float c[2][PACK];"),
           ("        for (unsigned int k = 0; k < UNROLL; k++)\n            if (i + k * G < packs)\n"
            "                load_pack<PACK>(x, i + k * G, c[k]);\n"
            "        if (i + (UNROLL - 1) * G < packs) {\n"
            "            m = chan_merge(m, chunk_moments<UNROLL>(c, 0));",
            "        for (unsigned int k = 0; k < 2; k++)\n            if (i + k * G < packs)\n"
            "                load_pack<PACK>(x, i + k * G, c[k]);\n"
            "        if (i + G < packs) {\n"
            "            m = chan_merge(m, chunk_moments<2>(c, 0));"),
           ("            for (unsigned int k = 0; k < UNROLL; k++)\n                if (i + k * G < packs)\n"
            "                    m = chan_merge(m, chunk_moments<1>(c, k));",
            "            for (unsigned int k = 0; k < 2; k++)\n                if (i + k * G < packs)\n"
            "                    m = chan_merge(m, chunk_moments<1>(c, k));")]
# Step 22: the warps' parts by a butterfly over W lanes, the lower lane's part first.
MERGE_SERIAL = ("        m = {0.0, 0.0, 0.0};\n"
                "        for (unsigned int w = 0; w < G / WARP_SIZE; w++)\n"
                "            m = chan_merge(m, {s_n[first + w], s_mean[first + w], s_m2[first + w]});\n")
MERGE_BUTTERFLY = ("        constexpr unsigned int W = G / WARP_SIZE;   // the group's warps\n"
                   "        unsigned int w = lane % W;\n"
                   "        m = {s_n[first + w], s_mean[first + w], s_m2[first + w]};\n"
                   "#pragma unroll\n"
                   "        for (unsigned int offset = 1; offset < W; offset <<= 1) {\n"
                   "            Moments o = {__shfl_xor_sync(FULL_MASK, m.n, offset),\n"
                   "                         __shfl_xor_sync(FULL_MASK, m.mean, offset),\n"
                   "                         __shfl_xor_sync(FULL_MASK, m.m2, offset)};\n"
                   "            m = (lane & offset) ? chan_merge(o, m) : chan_merge(m, o);\n"
                   "        }\n")
# Issue 49 item 5, the sum form (steps 13, 17, 19) and the op form (step 10).
SUM_SERIAL = ("        sum = 0.0f;\n"
              "        for (unsigned int w = 0; w < G / WARP_SIZE; w++)\n"
              "            sum += s_warp[first + w];\n")
SUM_BUTTERFLY = ("        constexpr unsigned int W = G / WARP_SIZE;   // the group's warps\n"
                 "        sum = s_warp[first + threadIdx.x % W];\n"
                 "#pragma unroll\n"
                 "        for (unsigned int offset = W / 2; offset > 0; offset >>= 1)\n"
                 "            sum += __shfl_xor_sync(FULL_MASK, sum, offset);\n")
OP_SERIAL = ("        v = s_warp[first];\n"
             "        for (unsigned int w = 1; w < G / WARP_SIZE; w++)\n"
             "            v = op(v, s_warp[first + w]);\n")
OP_BUTTERFLY = ("        constexpr unsigned int W = G / WARP_SIZE;   // the group's warps\n"
                "        v = s_warp[first + threadIdx.x % W];\n"
                "#pragma unroll\n"
                "        for (unsigned int offset = W / 2; offset > 0; offset >>= 1)\n"
                "            v = op(v, __shfl_xor_sync(FULL_MASK, v, offset));\n")

# Step 22: each thread sums x - K and (x - K)^2 in float (K = the row's first
# float, read by every thread: a broadcast), then makes one Moments of them;
# Chan's merge only across lanes and warps. No double in the load loop.
SHIFT_OLD = """    Moments m = {0.0, 0.0, 0.0};
    if (t < split.head)
        m = chan_merge(m, {1.0, (double)e_head, 0.0});
    if (t < split.tail)
        m = chan_merge(m, {1.0, (double)e_tail, 0.0});
    for (unsigned int i = t; i < packs; i += UNROLL * G) {
        float c[UNROLL][PACK];
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs)
                load_pack<PACK>(x, i + k * G, c[k]);
        if (i + (UNROLL - 1) * G < packs) {
            m = chan_merge(m, chunk_moments<UNROLL>(c, 0));
        } else {   // the row's last packs: one chunk each
#pragma unroll
            for (unsigned int k = 0; k < UNROLL; k++)
                if (i + k * G < packs)
                    m = chan_merge(m, chunk_moments<1>(c, k));
        }
    }
"""
SHIFT_NEW = """    float shift = (row < rows) ? x_row[0] : 0.0f;
    float s1 = 0.0f, s2 = 0.0f, cnt = 0.0f;
    if (t < split.head) {
        float d = e_head - shift; s1 += d; s2 += d * d; cnt += 1.0f;
    }
    if (t < split.tail) {
        float d = e_tail - shift; s1 += d; s2 += d * d; cnt += 1.0f;
    }
    for (unsigned int i = t; i < packs; i += UNROLL * G) {
        float c[UNROLL][PACK];
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs)
                load_pack<PACK>(x, i + k * G, c[k]);
#pragma unroll
        for (unsigned int k = 0; k < UNROLL; k++)
            if (i + k * G < packs) {
#pragma unroll
                for (unsigned int j = 0; j < PACK; j++) {
                    float d = c[k][j] - shift;
                    s1 += d;
                    s2 = fmaf(d, d, s2);
                }
                cnt += (float)PACK;
            }
    }
    Moments m = {0.0, 0.0, 0.0};
    if (cnt > 0.0f) {
        double mu = (double)s1 / cnt;
        m = {(double)cnt, shift + mu, fmax(0.0, (double)s2 - (double)s1 * mu)};
    }
"""

STEP22 = "rows/step22_welford"
VARIANTS = {   # name: (the step it comes from, [(old, new), ...])
    "s22_bounds2": (STEP22, [(KERNEL, BOUNDS)]),    # ask for 32 registers: two blocks an SM
    "s22_unroll2": (STEP22, UNROLL2),               # chunks of 8 floats in the one-read pass
    "s22_bounds2_unroll2": (STEP22, [(KERNEL, BOUNDS)] + UNROLL2),
    "s22_butterfly": (STEP22, [(MERGE_SERIAL, MERGE_BUTTERFLY)]),
    "s22_butterfly_unroll2": (STEP22, [(MERGE_SERIAL, MERGE_BUTTERFLY)] + UNROLL2),
    "s22_shift": (STEP22, [(SHIFT_OLD, SHIFT_NEW)]),
    "s22_shift_bounds2": (STEP22, [(SHIFT_OLD, SHIFT_NEW), (KERNEL, BOUNDS)]),
    "s10_shuffle2": ("rows/step10_aligned", [(OP_SERIAL, OP_BUTTERFLY)]),
    "s13_shuffle2": ("rows/step13_layernorm_aligned", [(SUM_SERIAL, SUM_BUTTERFLY)]),
    "s17_shuffle2": ("rows/step17_layernorm_cluster", [(SUM_SERIAL, SUM_BUTTERFLY)]),
    "s19_shuffle2": ("rows/step19_rmsnorm", [(SUM_SERIAL, SUM_BUTTERFLY)]),
}


def main():
    only = sys.argv[1:]
    for name, (base, edits) in VARIANTS.items():
        if only and name not in only:
            continue
        with open(os.path.join(ROOT, base, "rows.cu"), encoding="utf-8") as handle:
            out = handle.read()
        for old, new in edits:
            if out.count(old) != 1:
                sys.exit(f"step22_variants: {name}: the text to replace is not in {base} once "
                         f"({out.count(old)} times): {old[:60]!r}")
            out = out.replace(old, new)
        folder = os.path.join(ROOT, "build", "variants", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "rows.cu"), "w", encoding="utf-8") as handle:
            handle.write(out)
        print(name, base, os.path.join(folder, "rows.cu"))


if __name__ == "__main__":
    main()
