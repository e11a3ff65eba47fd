#!/usr/bin/env python3
"""A lead for part 2's vocabulary widths (session 22, not yet run on a GPU):
step 25 (packed bfloat16 LayerNorm) gives a row of 32769 to about 90000
columns one block of 1024 threads, 32 elements a thread, and the rest of the
row in shared memory: one block an SM (64 registers a thread fill it), and a
third of a 50257-wide row through shared memory. These variants give such
rows a cluster of 256-thread blocks instead, 64 packed elements a thread, so
that the whole row sits in registers and an SM holds two blocks (their
kernels built for 2 blocks an SM: up to 128 registers a thread, no spills):
  c48: 4 blocks (1024 threads) up to 65536 columns, 8 blocks up to 131072,
       then step 25's 8-block clusters of 32 a thread with shared memory;
  c8:  8 blocks from 32769 up to 131072, then as step 25.
Writes build/wip/<name>/rows.cu and prints "name base source" lines.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = "rows/step25_bf16_packed"


def sub(text, old, new, count=1):
    if text.count(old) != count:
        sys.exit(f"variants26.py: {old[:70]!r} found {text.count(old)} times, not {count}")
    return text.replace(old, new)


def clustered(src, four):
    s = src
    # cluster kernels with 64 a thread are built for 2 blocks an SM (128 registers)
    s = sub(s, "__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G / CLUSTER, CLUSTER > 1 ? MIN_BLOCKS : 0)",
            "__global__ void __launch_bounds__(G < BLOCK_SIZE ? BLOCK_SIZE : G / CLUSTER,\n"
            "                                  CLUSTER > 1 ? (PER_THREAD == MAX_PER_THREAD ? MIN_BLOCKS / 2 : MIN_BLOCKS) : 0)")
    s = sub(s, """static unsigned int per_thread(size_t g, size_t cols)
{
    return (g >= MAX_GROUP || g * (MAX_PER_THREAD / 2) >= cols) ? MAX_PER_THREAD / 2 : MAX_PER_THREAD;
}""", """static unsigned int per_thread(size_t g, size_t cluster, size_t cols)
{
    if (g * (MAX_PER_THREAD / 2) >= cols)
        return MAX_PER_THREAD / 2;
    if (cluster > 1)   // a cluster's kernel with 64 a thread runs 2 blocks an SM: no spills
        return g * MAX_PER_THREAD >= cols ? MAX_PER_THREAD : MAX_PER_THREAD / 2;
    return g >= MAX_GROUP ? MAX_PER_THREAD / 2 : MAX_PER_THREAD;
}""")
    s = sub(s, "size_t in_registers = (size_t)g * per_thread(g, cols);",
            "size_t in_registers = (size_t)g * per_thread(g, cluster, cols);")
    s = sub(s, """    if (fits && per_thread(G, p->cols) == MAX_PER_THREAD) {
        // Here G < MAX_GROUP: no wider group's kernel is built with all the slots.
        constexpr unsigned int N = G < MAX_GROUP ? MAX_PER_THREAD : MAX_PER_THREAD / 2;""",
            """    if (fits && per_thread(G, CLUSTER, p->cols) == MAX_PER_THREAD) {
        // Here G < MAX_GROUP or a cluster: no 1024-thread block is built with all the slots.
        constexpr unsigned int N = (G < MAX_GROUP || CLUSTER > 1) ? MAX_PER_THREAD : MAX_PER_THREAD / 2;""")
    first = ("        if (p->cols <= (size_t)BLOCK_SIZE * 4 * MAX_PER_THREAD)\n"
             "            launch<BLOCK_SIZE * 4, 4>(p);\n        else " if four else "        ")
    s = sub(s, """    if (cluster_size() > 1 && p->cols > on_chip(MAX_GROUP, 1)) {
        if (MAX_CLUSTER > 8 && cluster_size() == MAX_CLUSTER)
            launch<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER>(p);
        else
            launch<BLOCK_SIZE * 8, 8>(p);
        return;
    }""", """    if (cluster_size() > 1 && p->cols > (size_t)(MAX_GROUP / 2) * MAX_PER_THREAD) {
""" + first + """if (MAX_CLUSTER > 8 && cluster_size() == MAX_CLUSTER)
            launch<BLOCK_SIZE * MAX_CLUSTER, MAX_CLUSTER>(p);
        else
            launch<BLOCK_SIZE * 8, 8>(p);
        return;
    }""")
    return s


def main():
    src = open(os.path.join(ROOT, BASE, "rows.cu")).read()
    for name, text in (("c48", clustered(src, True)), ("c8", clustered(src, False))):
        folder = os.path.join(ROOT, "build", "wip", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "rows.cu"), "w") as f:
            f.write(text)
        print(name, BASE, os.path.join("build", "wip", name, "rows.cu"))


if __name__ == "__main__":
    main()
