#!/usr/bin/env python3
"""torch_rows.py: PyTorch's row kernels timed the way the harness times ours.

    python3 tools/torch_rows.py --csv FILE [--shapes 32768x1024,...] [--ops sum,layernorm]
                                [--reps 20] [--warmup 3] [--round K]

For each shape and op, on float32 inputs uniform in [-1, 1): the L2 is flushed
before every repetition (a sum over a buffer 4x the L2, as common/flush.cu
does), the GPU then waits (a spin of SLEEP_CYCLES) until the host has queued
the op, CUDA events time the op alone, and the median of the timed
repetitions is reported. GB/s counts the bytes common/rows_ref.c counts for
the same op (one read of x, one write of y, plus mean and rstd for
LayerNorm). The ops:
    sum        x.sum(dim=-1)
    layernorm  torch.native_layer_norm(x, [cols], gamma, beta, 1e-5): y, mean
               and rstd, as our LayerNorm writes them
    softmax    torch.softmax(x, dim=-1)
    copy       y.copy_(x)
    rmsnorm    torch.nn.functional.rms_norm(x, [cols], gamma, 1e-5): y (its
               bytes count the rstd our RMSNorm writes too: 4 a row)
    add_rmsnorm  h = x + residual, then rms_norm(h, ...): h and y, as a
               transformer block's residual stream runs them
    layernorm_backward  part 3's (back/; bench.py asks for it only there):
               torch.ops.aten.native_layer_norm_backward(dy, x, [cols], mean,
               rstd, gamma, beta, [True, True, True]): dx, dgamma and dbeta,
               from the inputs common/back_driver.c makes (x, dy and gamma
               uniform in [-1, 1), mean and rstd the rows', computed in double
               with eps 1e-5 and rounded to float once, as the forward pass
               saves them); its bytes are common/back_ref.c's back_bytes()
               (x and dy read and dx written, plus gamma, dgamma, dbeta, mean
               and rstd)
    softmax_backward  part 3's too: torch.ops.aten._softmax_backward_data(dy,
               y, -1, torch.float32): dx = y * (dy - sum(dy * y)), from the
               inputs common/back_driver.c makes (y the softmax of 4 x uniform
               logits, one in 8 masked and every 16th row fully, dy uniform
               in [-1, 1)); its bytes are y and dy read and dx written
    softmax_backward_bf16  part 3's in bfloat16: the same fill, y and dy
               then rounded to bfloat16 (as common/back_driver.c rounds them),
               and torch.ops.aten._softmax_backward_data(dy, y, -1,
               torch.bfloat16): dx in bfloat16; 6 bytes an element
    layernorm_backward_bf16  part 3's in bfloat16: the same fill, mean and
               rstd of the float x, then x and dy rounded to bfloat16 (as
               common/back_driver.c does), and the same
               native_layer_norm_backward call: dx in bfloat16; gamma and beta
               rounded to bfloat16 too (PyTorch's CUDA kernel refuses a float
               gamma beside bfloat16 x), so dgamma and dbeta come back
               bfloat16, not float32 as the project's; its bytes are the
               project's, back_bytes()'s with x, dy and dx at 2 bytes an
               element (gamma, dgamma, dbeta, mean and rstd float)
and part 2's ops each with the suffix _bf16 (layernorm_bf16, softmax_bf16, copy_bf16):
the same on x.to(torch.bfloat16), with gamma and beta in bfloat16 as a bf16
model holds them (torch.native_layer_norm wants them in the input's type)
and the bytes at 2 per element (mean and rstd as torch returns them).
An op named compiled/<op> (compiled/softmax, compiled/layernorm_bf16 ...)
is the same function through torch.compile (Inductor's default mode,
dynamic=False), as users run PyTorch: compiled for each shape on its own,
with dynamo's caches cleared first so that no shape falls back to eager at
the recompile limit, and called once before the warm-up, so that compiling
is never timed. Its rows are step "torch/compiled/<op>", op "<op>".
Each output is compared with a float64 computation of the same op: a sanity
check (relative 1e-3 for LayerNorm and softmax, 1e-5 of sum|x| for sums; for
LayerNorm's backward pass dx to relative 1e-3 and dgamma and dbeta, sums
down the columns, to 1e-5 of the sum of their terms' magnitudes; for
softmax's, dx to 1e-3 of |y| (|dy| + |s|), and exactly 0 where y is; in
bfloat16 the same against the rounded inputs, dx's bounds 2^-8 wider for its
own rounding), not the harness's derived tolerance. Rows go to FILE in the results schema
(tools/schema.py), step "torch/<op>", with torch's, CUDA's and cuDNN's
versions in the toolchain column.

Exit status: 0 every run verified, 1 some run did not, 2 usage error,
3 no torch or no CUDA device (one line).
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import cli  # noqa: E402
import schema  # noqa: E402
# tools/ holds a profile.py, which would shadow the standard library's
# profile module that torch.compile imports (through cProfile): once schema
# is in, tools/ leaves the path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
# Inductor's and Triton's compiled kernels go under build/ (unless the caller
# names other folders): a later round, or a later call on the same machine,
# loads them from disk instead of compiling every shape again, which is most
# of a first round's time.
for _var, _sub in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
    os.environ.setdefault(_var, os.path.join(os.path.dirname(HERE), "build", "torch-cache", _sub))

EPS = 1e-5
OPS = ("sum", "layernorm", "softmax", "copy", "rmsnorm", "add_rmsnorm", "layernorm_bf16",
       "softmax_bf16", "copy_bf16", "rmsnorm_bf16", "add_rmsnorm_bf16", "layernorm_backward",
       "softmax_backward", "softmax_backward_bf16", "layernorm_backward_bf16")
BF16 = "_bf16"
COMPILED = "compiled/"
FLUSH_L2_MULTIPLE = 4
# The GPU's wait before each timed repetition (Runner.time): 2^20 cycles is
# about 0.5 ms at 2 GHz, several times the tens of microseconds a compiled
# op's rounds moved by (rows/README, the baselines); doubled for a repetition
# that outran it, up to 2^26 (about 34 ms).
SLEEP_CYCLES = 1 << 20
MAX_SLEEP_CYCLES = 1 << 26


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        rows, _, cols = item.strip().lower().partition("x")
        if not (rows.isdigit() and cols.isdigit() and int(rows) > 0 and int(cols) > 0):
            raise argparse.ArgumentTypeError(f"a shape is ROWSxCOLS, got {item!r}")
        shapes.append((int(rows), int(cols)))
    return shapes


def row_bytes(op, rows, cols):
    """common/rows_ref.c's row_bytes(): 2 bytes an element of x, y, gamma and
    beta for the _bf16 ops; mean and rstd are float either way. Part 3's
    layernorm_backward: common/back_ref.c's back_bytes() (in bfloat16 x, dy
    and dx at 2 bytes, gamma, dgamma, dbeta, mean and rstd float either way);
    softmax_backward: its softmax_back_bytes(), three streams (in bfloat16
    softmax_back_bf16_bytes(), 6 an element)."""
    base = op.removesuffix(BF16)
    elem = 2.0 if op.endswith(BF16) else 4.0
    matrix = elem * rows * cols
    return {"sum": matrix + elem * rows,
            "layernorm_backward": 3 * matrix + 12.0 * cols + 8.0 * rows,
            "softmax_backward": 3 * matrix,
            "layernorm": 2 * matrix + 8.0 * rows + 2 * elem * cols,
            "softmax": 2 * matrix, "copy": 2 * matrix,
            "rmsnorm": 2 * matrix + 4.0 * rows + elem * cols,
            "add_rmsnorm": 4 * matrix + 4.0 * rows + elem * cols}[base]


def git_rev():
    """The revision measured: GIT_REV where the caller gives it (make bench on
    a copied tree, whose .git may describe another state), else git's."""
    if os.environ.get("GIT_REV"):
        return os.environ["GIT_REV"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"],
                             capture_output=True, text=True, cwd=os.path.dirname(__file__))
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def triton_version():
    """' Triton X.Y' (what torch.compile's kernels are built with), or ''."""
    try:
        import triton
        return f" Triton {triton.__version__}"
    except ImportError:
        return ""


class Runner:
    def __init__(self, torch, reps, warmup, sleep_cycles=None):
        self.torch, self.reps, self.warmup = torch, reps, warmup
        self.sleep_cycles = SLEEP_CYCLES if sleep_cycles is None else sleep_cycles
        props = torch.cuda.get_device_properties(0)
        self.gpu = torch.cuda.get_device_name(0)
        self.cc = f"{props.major}.{props.minor}"
        self.sms = props.multi_processor_count
        self.l2 = getattr(props, "L2_cache_size", 50 << 20)
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        self.toolchain = (f"torch {torch.__version__} CUDA {torch.version.cuda}"
                          + (f" cuDNN {cudnn}" if cudnn else "") + triton_version())
        self.flush_buf = torch.zeros(FLUSH_L2_MULTIPLE * self.l2 // 4, dtype=torch.float32,
                                     device="cuda")
        self.late = 0   # repetitions made again: the host queued the op after the GPU's wait

    def time(self, fn):
        """The op's GPU time in each repetition, as events around its kernels.
        The host must have queued the op before the GPU reaches the start
        event, or the GPU idles inside the timed span: torch.compile's Python
        wrapper and Triton's launcher can take about as long as the flush.
        So the GPU spins (torch.cuda._sleep) between the
        flush and the start event while the host queues the op, as NVBench's
        blocking kernel holds a stream; a repetition whose start event had
        already passed when the op was queued is made again with twice the
        wait (self.late counts them)."""
        torch = self.torch
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times, cycles, r = [], self.sleep_cycles, 0
        while r < self.warmup + self.reps:
            self.flush_buf.sum()          # reads 4x the L2: the input comes from DRAM
            if cycles:
                torch.cuda._sleep(cycles) # the GPU waits while the host queues the op
            start.record()
            out = fn()
            stop.record()
            # the GPU reached the start before the op was queued (not asked without a wait)
            late = bool(cycles) and start.query()
            stop.synchronize()
            if late:
                self.late += 1
                if cycles >= MAX_SLEEP_CYCLES:
                    raise RuntimeError(f"the op was still not queued after the GPU waited "
                                       f"{cycles} cycles (does it wait for the GPU itself?)")
                cycles *= 2
                continue
            if r >= self.warmup:
                times.append(start.elapsed_time(stop) * 1e3)
            r += 1
        return times, out

    def prepare(self, fn, compiled, *args):
        """A function of no arguments that runs fn(*args): eager as it is, or
        compiled for these shapes now, before any timing."""
        if not compiled:
            return lambda: fn(*args)
        torch = self.torch
        torch._dynamo.reset()   # every shape its own graph: no recompile limit, no dynamic shapes
        graph = torch.compile(fn, dynamic=False)
        graph(*args)            # compiles here; the timed calls only run it
        torch.cuda.synchronize()
        return lambda: graph(*args)

    def run(self, op, rows, cols, seed):
        torch = self.torch
        compiled = op.startswith(COMPILED)
        op = op.removeprefix(COMPILED)
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.rand((rows, cols), generator=gen, device="cuda") * 2 - 1
        bf16 = op.endswith(BF16)
        backward = {"layernorm_backward": self.layernorm_backward,
                    "softmax_backward": self.softmax_backward}.get(op.removesuffix(BF16))
        if backward:
            # Part 3's: made from the float x, and rounded where the driver rounds.
            return backward(x, rows, cols, gen, compiled, bf16)
        if bf16:
            # The reference below starts from the rounded input, as the harness's does.
            x = x.to(torch.bfloat16)
            op = op.removesuffix(BF16)
        # The output's own rounding: bfloat16 keeps 8 significant bits.
        rel = 2.0 ** -8 + 1e-3 if bf16 else 1e-3
        if op == "sum":
            times, out = self.time(self.prepare(lambda a: a.sum(dim=-1), compiled, x))
            ref = x.double().sum(dim=-1)
            scale = x.double().abs().sum(dim=-1)
            err = ((out.double() - ref).abs() / (scale + 1e-30)).max().item()
            ok = err <= 1e-5
        elif op == "layernorm":
            gamma = 1 + (torch.rand(cols, generator=gen, device="cuda") - 0.5)
            beta = torch.rand(cols, generator=gen, device="cuda") - 0.5
            gamma, beta = gamma.to(x.dtype), beta.to(x.dtype)
            times, out = self.time(self.prepare(
                lambda a, g, b: torch.native_layer_norm(a, [cols], g, b, EPS), compiled, x, gamma,
                beta))
            y, mean, rstd = out
            if mean.element_size() != 4:   # row_bytes() counts float mean and rstd
                print(f"torch_rows: layernorm's mean is {mean.dtype}, not float32: its bytes "
                      "are counted as float", file=sys.stderr)
            xd = x.double()
            m = xd.mean(dim=-1, keepdim=True)
            v = ((xd - m) ** 2).mean(dim=-1, keepdim=True)
            r = 1 / torch.sqrt(v + EPS)
            want = (xd - m) * r * gamma.double() + beta.double()
            err = ((y.double() - want).abs() / (1 + want.abs())).max().item()
            ok = err <= rel and (mean.double().view(-1) - m.view(-1)).abs().max().item() <= 1e-3
        elif op in ("rmsnorm", "add_rmsnorm"):
            gamma = (1 + (torch.rand(cols, generator=gen, device="cuda") - 0.5)).to(x.dtype)
            rms = torch.nn.functional.rms_norm
            if op == "rmsnorm":
                times, y = self.time(self.prepare(lambda a, g: rms(a, [cols], g, EPS), compiled,
                                                  x, gamma))
                hd = x.double()
            else:
                res = (torch.rand((rows, cols), generator=gen, device="cuda") * 2 - 1).to(x.dtype)

                def add_rms(a, r, g):
                    h = a + r
                    return h, rms(h, [cols], g, EPS)
                times, (h, y) = self.time(self.prepare(add_rms, compiled, x, res, gamma))
                hd = (x.float() + res.float()).to(x.dtype).double()   # h as stored
                ok_h = (h.double() - hd).abs().max().item() <= 2.0 ** -8 * hd.abs().max().item()

            def rel_err(hd):
                want = hd * torch.rsqrt((hd * hd).mean(dim=-1, keepdim=True) + EPS) * gamma.double()
                return ((y.double() - want).abs() / (1 + want.abs())).max().item()
            err = rel_err(hd)
            if op == "add_rmsnorm":
                # torch.compile keeps the sum in float and normalises it unrounded
                # (seen on the H200: 0.005 from h as stored, over the bfloat16
                # bound): either order is right, so y is held to the nearer one.
                err = min(err, rel_err(x.double() + res.double()))
            ok = err <= rel and (op == "rmsnorm" or ok_h)
        elif op == "softmax":
            times, out = self.time(self.prepare(lambda a: torch.softmax(a, dim=-1), compiled, x))
            want = torch.softmax(x.double(), dim=-1)
            err = ((out.double() - want).abs() / (want + 1e-30)).max().item()
            ok = err <= rel
        else:
            y = torch.empty_like(x)
            times, out = self.time(self.prepare(lambda a: y.copy_(a), compiled, x))
            err = (out.float() - x.float()).abs().max().item()
            ok = err == 0
        return times, err, ok


    def layernorm_backward(self, x, rows, cols, gen, compiled, bf16=False):
        """(times, error, ok) of native_layer_norm_backward on common/back_driver.c's
        random fill (back_fill in common/back_ref.c): x, dy and gamma uniform in
        [-1, 1), and each row's mean and rstd = 1 / sqrt(var + eps) computed in
        double from the float x and rounded to float once, shaped (rows, 1) as
        native_layer_norm returns them. The reference is the same formulas in
        float64 from the same float inputs (common/back.h): dx to relative 1e-3,
        dgamma and dbeta to 1e-5 of the sum of |terms| down their column.
        bf16: x and dy then rounded to bfloat16 (after the statistics, as the
        driver rounds them). The project's gamma, dgamma and dbeta are float32,
        but PyTorch's CUDA kernel refuses a float gamma beside bfloat16 x
        ("expected scalar type BFloat16 but found Float", torch 2.11 on the
        H200), so gamma and beta are rounded to bfloat16 as a bfloat16 model
        holds them, and dgamma and dbeta come back bfloat16 (checked, as dx's
        bfloat16: 6 bytes a column fewer than row_bytes() counts, under 0.01%
        at every shape part 3 runs). The reference is on the rounded x, dy and
        gamma; dx's and dgamma's and dbeta's bounds 2^-8 wider for their own
        rounding."""
        torch = self.torch
        dy = torch.rand((rows, cols), generator=gen, device="cuda") * 2 - 1
        gamma = torch.rand(cols, generator=gen, device="cuda") * 2 - 1
        beta = torch.zeros(cols, device="cuda")   # not read: it shapes dbeta
        xd = x.double()
        m = xd.mean(dim=-1, keepdim=True)
        var = ((xd - m) ** 2).mean(dim=-1, keepdim=True)
        mean, rstd = m.float(), (1 / torch.sqrt(var + EPS)).float()
        if bf16:
            x, dy = x.to(torch.bfloat16), dy.to(torch.bfloat16)
            gamma, beta = gamma.to(torch.bfloat16), beta.to(torch.bfloat16)
            xd = x.double()

        def backward(g, a, mu, rs, w, b):
            return torch.ops.aten.native_layer_norm_backward(g, a, [cols], mu, rs, w, b,
                                                             [True, True, True])
        times, (dx, dgamma, dbeta) = self.time(self.prepare(backward, compiled, dy, x, mean,
                                                            rstd, gamma, beta))
        dyd, gd = dy.double(), gamma.double()
        xhat = (xd - mean.double()) * rstd.double()
        g = dyd * gd
        m1, m2 = g.mean(dim=-1, keepdim=True), (g * xhat).mean(dim=-1, keepdim=True)
        want = rstd.double() * (g - m1 - xhat * m2)
        dx_err = ((dx.double() - want).abs() / (1 + want.abs())).max().item()
        col_err = 0.0
        for got, terms in ((dgamma, dyd * xhat), (dbeta, dyd)):
            scale = terms.abs().sum(dim=0) + 1e-30
            col_err = max(col_err, ((got.double() - terms.sum(dim=0)).abs() / scale).max().item())
        types = self.types_ok("layernorm_backward", (dx, x.dtype), (dgamma, gamma.dtype),
                              (dbeta, gamma.dtype))
        bound = 2.0 ** -8 if bf16 else 0.0   # the outputs' own rounding
        return (times, max(dx_err, col_err),
                dx_err <= 1e-3 + bound and col_err <= 1e-5 + bound and types)


    def softmax_backward(self, x, rows, cols, gen, compiled, bf16=False):
        """(times, error, ok) of _softmax_backward_data on common/back_driver.c's
        random fill (softmax_back_fill in common/back_ref.c): y the softmax, in
        float64 rounded to float, of 4 x uniform logits with one in 8 masked
        (-inf) and every 16th row fully, and dy uniform in [-1, 1). The
        reference: dx = y (dy - s), s = sum(dy y), in float64 from the same
        floats, dx to 1e-3 of |y| (|dy| + |s|): exactly 0 where y is.
        bf16: y and dy then rounded to bfloat16 (as the driver rounds them),
        dx bfloat16 (input_dtype torch.bfloat16, checked), the reference on
        the rounded y and dy. Its scale is |y| (|dy| + sum |y dy|), the sum's
        terms' magnitudes in place of |s| (PyTorch's eager kernel was seen
        off by up to 0.3 of |y| (|dy| + |s|) on the H200, where s cancels: an
        error in s of the order of 2^-8 of its terms, as products rounded to
        bfloat16 before the sum would give; against this scale 0.0053 eager
        and 0.0029 compiled at 64 x 1000 to 128 x 262144), and its bound
        2^-7 + 1e-3: the terms' rounding and dx's own."""
        torch = self.torch
        masked = torch.rand((rows, cols), generator=gen, device="cuda") < 0.125
        masked[15::16] = True
        logits = (4 * x).masked_fill(masked, float("-inf")).double()
        y = torch.softmax(logits, dim=-1).nan_to_num(0.0).float()   # a fully masked row: 0
        dy = torch.rand((rows, cols), generator=gen, device="cuda") * 2 - 1
        dtype = torch.bfloat16 if bf16 else torch.float32
        if bf16:
            y, dy = y.to(dtype), dy.to(dtype)

        def backward(g, out):
            return torch.ops.aten._softmax_backward_data(g, out, -1, dtype)
        times, dx = self.time(self.prepare(backward, compiled, dy, y))
        yd, dyd = y.double(), dy.double()
        s = (yd * dyd).sum(dim=-1, keepdim=True)
        terms = (yd * dyd).abs().sum(dim=-1, keepdim=True) if bf16 else s.abs()
        scale = yd.abs() * (dyd.abs() + terms)
        diff = (dx.double() - yd * (dyd - s)).abs()
        err = torch.where(scale > 0, diff / scale.clamp_min(1e-300), diff * 1e30).max().item()
        rel = 2.0 ** -7 + 1e-3 if bf16 else 1e-3
        return times, err, err <= rel and self.types_ok("softmax_backward", (dx, dtype))

    def types_ok(self, op, *pairs):
        """True if each (tensor, dtype) holds that type: the bytes counted
        are those types' (row_bytes); else one line says which did not."""
        wrong = [f"{got.dtype}, not {want}" for got, want in pairs if got.dtype != want]
        if wrong:
            print(f"torch_rows: {op}: outputs of other types than counted ({'; '.join(wrong)}): "
                  "its bytes are not the ones counted", file=sys.stderr)
        return not wrong


def row_of(runner, name, rows, cols, seed, times, err, ok, reps, warmup, round_):
    op = name.removeprefix(COMPILED)
    median = statistics.median(times)
    nbytes = row_bytes(op, rows, cols)
    gbps = nbytes / (median * 1e3)
    row = {c: "" for c in schema.RESULT_COLUMNS}
    row.update(step=f"torch/{name}", n=rows * cols, reps=reps, warmup=warmup,
               median_us=f"{median:.3f}", min_us=f"{min(times):.3f}", max_us=f"{max(times):.3f}",
               gbps=f"{gbps:.2f}", pct_peak="", result="0", reference="0", abs_err=f"{err:.3g}",
               tol="0", **{"pass": int(ok)}, gpu=runner.gpu, cc=runner.cc, driver="",
               cuda=runner.torch.version.cuda or "", peak_gbps="0", l2_mb=f"{runner.l2 / 1e6:.1f}",
               sms=runner.sms, flush=1, offset=0, fill="random", seed=seed, git_rev=git_rev(),
               mode="timed", distinct="", code_hash="", rows=rows, cols=cols, op=op,
               bytes=f"{nbytes:.0f}", arch="", toolchain=runner.toolchain)
    if "round" in row:
        row["round"] = round_
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True, help="append rows to this results file")
    parser.add_argument("--shapes", type=parse_shapes, default=parse_shapes("32768x1024"))
    parser.add_argument("--ops", default="sum,layernorm")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--round", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sleep-cycles", type=int, default=SLEEP_CYCLES,
                        help="the GPU's wait after the flush (0: none, as before it had one; "
                             "for a comparison of the two)")
    args = parser.parse_args(argv)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    bad = [o for o in ops if o.removeprefix(COMPILED) not in OPS]
    if bad or not ops:
        print(f"torch_rows: error: --ops {args.ops!r}: ops are {', '.join(OPS)}, each also as "
              "compiled/<op>", file=sys.stderr)
        return 2
    if args.reps < 1 or args.warmup < 0 or args.sleep_cycles < 0:
        print("torch_rows: error: --reps must be at least 1, --warmup and --sleep-cycles at "
              "least 0", file=sys.stderr)
        return 2
    problem = cli.output_problem(args.csv)   # written after the timing: said now
    if problem:
        print(f"torch_rows: error: --csv {args.csv}: {problem}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("torch_rows: no torch in this python (skipped)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_rows: no CUDA device for torch (skipped)", file=sys.stderr)
        return 3
    runner = Runner(torch, args.reps, args.warmup, args.sleep_cycles)
    new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
    columns = list(schema.RESULT_COLUMNS)
    failed = 0
    with open(args.csv, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        if new:
            writer.writeheader()
        for rows, cols in args.shapes:
            for op in ops:
                late = runner.late
                try:
                    times, err, ok = runner.run(op, rows, cols, args.seed)
                except Exception as exc:   # one op that cannot run (a compile error) is one failure
                    print(f"torch_rows: torch/{op} {rows}x{cols}: {type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:400]}", file=sys.stderr, flush=True)
                    if os.environ.get("TORCH_ROWS_DEBUG"):
                        raise
                    failed += 1
                    continue
                row = row_of(runner, op, rows, cols, args.seed, times, err, ok, args.reps,
                             args.warmup, args.round)
                writer.writerow(row)
                handle.flush()
                failed += not ok
                print(f"torch/{op:<24} {rows}x{cols}: {float(row['median_us']):9.1f} us "
                      f"{float(row['gbps']):6.0f} GB/s  {'PASS' if ok else 'FAIL'} (error {err:.2g})",
                      flush=True)
                if runner.late > late:
                    print(f"torch_rows: torch/{op} {rows}x{cols}: {runner.late - late} "
                          "repetitions made again with a longer wait: the host queued the op "
                          "after the GPU's wait had ended", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
