#!/usr/bin/env python3
"""A measurement, not a kernel (session 23): step 25 and lnbulk.py's lb48
with gamma and beta never read (every gamma and beta taken as 1: a wrong y,
timed with --no-verify only). Beside the real programs it says how much of
the time at the vocabulary widths goes to reading gamma and beta, which a
row of 50257 columns brings from L2 (200 KB of parameters a row: more than
the L1 that shared memory leaves).
Writes build/wip/<name>/rows.cu and prints "name base source" lines.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lnbulk  # noqa: E402

FAKE = """// Timing only: every gamma and beta taken as 1, nothing read.
template <unsigned int PACK, bool SPLIT>
__device__ void fake_params(const Params &q, unsigned int i, float (&v)[PACK])
{
    for (unsigned int j = 0; j < PACK; j++)
        v[j] = 1.0f;
}

"""


def no_params(src):
    n = src.count("load_params<PACK, SPLIT>(") + src.count("load_params<PACK, true>(")
    if n < 4:
        sys.exit(f"noparams.py: {n} load_params calls")
    s = src.replace("load_params<PACK, SPLIT>(", "fake_params<PACK, SPLIT>(")
    s = s.replace("load_params<PACK, true>(", "fake_params<PACK, true>(")
    # the definition itself keeps its name; the fake goes after it
    s = s.replace("template <unsigned int PACK, bool SPLIT>\n__device__ void fake_params(const Params &q, unsigned int i, float (&v)[PACK])\n{\n    const",
                  "template <unsigned int PACK, bool SPLIT>\n__device__ void load_params(const Params &q, unsigned int i, float (&v)[PACK])\n{\n    const")
    at = s.index("// gamma or beta for pack i of the body.")   # before its first use
    s = s[:at] + FAKE + s[at:]
    return s


def main():
    base = open(os.path.join(ROOT, lnbulk.BASE, "rows.cu")).read()
    for name, src in (("s25np", base), ("lb48np", lnbulk.bulk(base, 48))):
        out = os.path.join(ROOT, "build", "wip", name)
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "rows.cu")
        with open(path, "w") as f:
            f.write(no_params(src))
        print(name, lnbulk.BASE, os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
