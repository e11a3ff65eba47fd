#!/usr/bin/env python3
"""Step 22's register variants for the next GPU session (not part of the tutorial).

Step 22's one-read pass takes 56 registers, so one 1024-thread block fits an
SM (occupancy 48% against step 13's 94%; wip-harness/NOTES.md). Each variant
below is step 22's rows.cu with one text change, written to
build/variants/<name>/rows.cu; wip-harness/step22_variants.sh builds and
times them beside steps 13 and 22 in one device call.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "rows", "step22_welford", "rows.cu")

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

# The warps' parts merged by a second butterfly in every warp (lane w takes
# warp w's part: 5 merges a thread instead of G / 32 = 32); lanes past the
# group's warps hold empty parts, which chan_merge passes through exactly.
SERIAL = ("        m = {0.0, 0.0, 0.0};\n"
          "        for (unsigned int w = 0; w < G / WARP_SIZE; w++)\n"
          "            m = chan_merge(m, {s_n[first + w], s_mean[first + w], s_m2[first + w]});\n")
BUTTERFLY = ("        m = {0.0, 0.0, 0.0};\n"
             "        if (lane < G / WARP_SIZE)\n"
             "            m = {s_n[first + lane], s_mean[first + lane], s_m2[first + lane]};\n"
             "#pragma unroll\n"
             "        for (unsigned int offset = 1; offset < WARP_SIZE; offset <<= 1) {\n"
             "            Moments o = {__shfl_xor_sync(FULL_MASK, m.n, offset),\n"
             "                         __shfl_xor_sync(FULL_MASK, m.mean, offset),\n"
             "                         __shfl_xor_sync(FULL_MASK, m.m2, offset)};\n"
             "            m = (lane & offset) ? chan_merge(o, m) : chan_merge(m, o);\n"
             "        }\n")

VARIANTS = {
    "bounds2": [(KERNEL, BOUNDS)],          # ask for 32 registers: two blocks an SM
    "unroll2": UNROLL2,                     # chunks of 8 floats in the one-read pass
    "bounds2_unroll2": [(KERNEL, BOUNDS)] + UNROLL2,
    "butterfly": [(SERIAL, BUTTERFLY)],
    "butterfly_unroll2": [(SERIAL, BUTTERFLY)] + UNROLL2,
}


def main():
    with open(SOURCE, encoding="utf-8") as handle:
        text = handle.read()
    for name, edits in VARIANTS.items():
        out = text
        for old, new in edits:
            if out.count(old) != 1:
                sys.exit(f"step22_variants: {name}: the text to replace is not in step 22 once: "
                         f"{old[:60]!r}")
            out = out.replace(old, new)
        folder = os.path.join(ROOT, "build", "variants", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "rows.cu"), "w", encoding="utf-8") as handle:
            handle.write(out)
        print(os.path.join(folder, "rows.cu"))


if __name__ == "__main__":
    main()
