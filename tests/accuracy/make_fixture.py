#!/usr/bin/env python3
"""Writes fixture-accuracy.csv beside this file: INVENTED numbers in the
accuracy CSV's layout, for the chart and docs tests only. No GPU ran them;
the gpu column says so, and nothing outside tests/ may read this file.

The errors follow the textbook shapes (a tree's grows like log2 n, a chain's
like its length, Kahan's stays flat) with a seeded wobble, so the chart has
something realistic to draw. Run it again to regenerate the same bytes.
"""
import csv
import math
import os
import random
import struct

HEADER = ("step,n,reps,warmup,median_us,min_us,max_us,gbps,pct_peak,result,reference,abs_err,"
          "tol,pass,gpu,cc,driver,cuda,peak_gbps,l2_mb,sms,flush,offset,fill,seed,git_rev,mode,"
          "distinct,code_hash,sum_abs,cpu_seq,cpu_kahan").split(",")
GPU = "FIXTURE GPU (invented numbers, tests only)"
PROGRAMS = ("step0_naive", "step1_divergence", "step2_bankconflict", "step3_idle", "step4_warp",
            "step5_unroll", "step6_multi", "step7_shfl", "step8_vector", "step9_singlepass",
            "cub", "kahan_step8")
CHAINS = ("step6_multi", "step7_shfl", "step8_vector", "step9_singlepass", "cub")
FILLS = ("random", "positive", "wide")
SIZES = tuple(1 << k for k in range(10, 29, 3))
U = 2.0 ** -24
THREADS = 132 * 2048


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def invented_error(step, n, rng):
    depth = max(1, (n - 1).bit_length())
    chain = max(1, n // THREADS)
    if step == "kahan_step8":
        size = 0.2 * math.sqrt(depth)
    elif step in CHAINS:
        size = 0.2 * math.sqrt(chain + depth)
    else:
        size = 0.2 * math.sqrt(depth)
    return size * U * rng.uniform(0.3, 1.7) * rng.choice((-1, 1))


def row(step, n, fill, seed, rng, **extra):
    sum_abs = n * (0.5 if fill != "wide" else 40000.0)
    reference = sum_abs * (0.002 if fill != "positive" else 1.0) * rng.uniform(0.5, 1.5)
    result = f32(reference + invented_error(step, n, rng) * sum_abs)
    if step == "step0_naive" and n == SIZES[0] and seed == 2:
        result = reference = f32(reference)  # an exact sum: the chart's floor
    values = dict(step=step, n=n, reps=1, warmup=0, result=f"{result:.9g}",
                  reference=f"{reference:.17g}", abs_err=f"{abs(result - reference):.3g}",
                  tol=f"{(depth(n) + 1) * U * sum_abs:.3g}", pass_=1, gpu=GPU, cc="9.0",
                  driver="000.00", cuda="13.0", peak_gbps="4800.0", l2_mb="60.0", sms=132,
                  flush=0, offset=0, fill=fill, seed=seed, git_rev="fixture", mode="check",
                  distinct=1, code_hash="0123456789ab", sum_abs=f"{sum_abs:.17g}")
    values.update(extra)
    values["pass"] = values.pop("pass_")
    return values


def depth(n):
    return (n - 1).bit_length()


def cpu_sums(n, fill, reference, sum_abs, rng):
    if fill == "positive":
        seq = min(reference, 2.0 ** 24) if n > 1 << 25 else reference * (1 - n * U * 0.1)
    else:
        seq = reference + rng.uniform(-1, 1) * U * math.sqrt(n) * sum_abs / 50
    kahan = reference + rng.uniform(-1, 1) * U * abs(reference)
    return f"{f32(seq):.9g}", f"{f32(kahan):.9g}"


def main():
    rng = random.Random(20240601)
    rows = []
    for fill in FILLS:
        for n in SIZES:
            for seed in ((1, 2, 3) if n <= 1 << 16 else (1,)):
                for step in PROGRAMS:
                    r = row(step, n, fill, seed, rng)
                    if (step, n, fill) == ("step3_idle", SIZES[-1], "positive"):
                        # A failed run: it must never reach a chart or a table.
                        r.update(result="12345678", abs_err="1e+07")
                        r["pass"] = 0
                    if step == "cub":
                        r["cpu_seq"], r["cpu_kahan"] = cpu_sums(
                            n, fill, float(r["reference"]), float(r["sum_abs"]), rng)
                    rows.append(r)
    # The run-to-run repeat: every program again on one input, same bits.
    first = {r["step"]: r for r in rows if (r["fill"], r["n"], r["seed"]) == ("random", 1 << 22, 1)}
    rows += [dict(first[step], cpu_seq="", cpu_kahan="") for step in PROGRAMS]
    # The cost pair, timed: three alternating rounds per n.
    for n in (1 << 25, 1 << 28):
        for k in range(3):
            for step, us in (("step8_vector", 36.7), ("kahan_step8", 36.9)):
                median = us * (n >> 25) * (1 + 0.004 * k)
                rows.append(row(step, n, "random", 1, rng, reps=20, warmup=3,
                                median_us=f"{median:.3f}", min_us=f"{median * 0.99:.3f}",
                                max_us=f"{median * 1.02:.3f}",
                                gbps=f"{4 * n / median / 1e3:.2f}",
                                pct_peak=f"{100 * 4 * n / median / 1e3 / 4800:.2f}",
                                flush=1, mode="timed"))
    # A failed timed run (two sums among its repetitions): no table may use it.
    rows.append(row("step8_vector", 1 << 25, "random", 1, rng, reps=20, warmup=3,
                    median_us="999.000", min_us="990.000", max_us="1010.000", gbps="134.33",
                    pct_peak="2.80", flush=1, mode="timed", distinct=2, pass_=0))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture-accuracy.csv")
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, HEADER, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path}: {len(rows)} rows")


if __name__ == "__main__":
    main()
