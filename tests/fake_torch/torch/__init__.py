"""A stand-in for torch on a machine without it or a GPU: just what
tools/torch_rows.py's part 3 paths call (layernorm_backward and
softmax_backward, float and bfloat16; tests/test_bench.py, TorchRowsTest),
in plain Python on small tensors of one or two dimensions. float32 tensors
hold floats rounded to float32, bfloat16 ones floats rounded to bfloat16
(to nearest, ties to even). native_layer_norm_backward is LayerNorm's
backward pass (common/back.h's formulas) in float64, then rounded to its
inputs' types; as torch 2.11's CUDA kernel it refuses a gamma of another
type than x's. _softmax_backward_data is dx = y (dy - sum(dy y)) in float64,
rounded to input_dtype. So that torch_rows.py's checks can be seen failing,
FAKE_TORCH_BROKEN makes them wrong: nm1, LayerNorm's means over N - 1; nos,
softmax's dx without its sum (y dy); float32, every output float32 whatever
its inputs; unrounded, bfloat16 outputs left at float32's precision (right
to 1e-7 only against the very inputs the op read). Not torch: nothing else
works."""
import itertools
import math
import os
import random
import struct

__version__ = "0.0-fake"


class _Version:
    cuda = "13.0"


version = _Version()
float32, float64, bfloat16, bool_ = "float32", "float64", "bfloat16", "bool"


def _broken(mode):
    return os.environ.get("FAKE_TORCH_BROKEN") == mode


def _round32(v):
    return struct.unpack("f", struct.pack("f", v))[0] if math.isfinite(v) else v


def _round16(v):
    """v to the nearest bfloat16 (ties to even), as torch's .to(torch.bfloat16)."""
    if not math.isfinite(v):
        return v
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


_ROUND = {float32: _round32, bfloat16: lambda v: _round16(_round32(v))}


def _output(shape, data, dtype):
    """An op's output of dtype (FAKE_TORCH_BROKEN=float32: float32; unrounded:
    a bfloat16 output that holds float32's values)."""
    if _broken("float32"):
        dtype = float32
    if dtype == bfloat16 and _broken("unrounded"):
        return Tensor(shape, data, float32)._as(bfloat16)
    return Tensor(shape, data, dtype)


class Tensor:
    def __init__(self, shape, data, dtype=float32):
        self.shape, self.dtype = tuple(shape), dtype
        rounding = _ROUND.get(dtype)
        self.data = [rounding(v) for v in data] if rounding else list(data)

    def _at(self, index):
        """The element at a full index of a broadcast shape (trailing dims aligned)."""
        index = index[len(index) - len(self.shape):]
        flat = 0
        for i, n in zip(index, self.shape):
            flat = flat * n + (i if n > 1 else 0)
        return self.data[flat]

    def _op(self, other, fn):
        if not isinstance(other, Tensor):
            return Tensor(self.shape, [fn(a, other) for a in self.data], self.dtype)
        ndim = max(len(self.shape), len(other.shape))
        a = (1,) * (ndim - len(self.shape)) + self.shape
        b = (1,) * (ndim - len(other.shape)) + other.shape
        shape = tuple(max(x, y) for x, y in zip(a, b))
        dtype = float64 if float64 in (self.dtype, other.dtype) else self.dtype
        data = [fn(self._at(i), other._at(i)) for i in itertools.product(*map(range, shape))]
        return Tensor(shape, data, dtype)

    __add__ = lambda s, o: s._op(o, lambda a, b: a + b)
    __sub__ = lambda s, o: s._op(o, lambda a, b: a - b)
    __mul__ = lambda s, o: s._op(o, lambda a, b: a * b)
    __truediv__ = lambda s, o: s._op(o, lambda a, b: a / b)
    __pow__ = lambda s, o: s._op(o, lambda a, b: a ** b)
    __radd__ = __add__
    __rmul__ = __mul__
    __rtruediv__ = lambda s, o: s._op(o, lambda a, b: b / a)

    __lt__ = lambda s, o: s._op(o, lambda a, b: a < b)._as(bool_)
    __gt__ = lambda s, o: s._op(o, lambda a, b: a > b)._as(bool_)

    def _as(self, dtype):
        self.dtype = dtype
        return self

    def to(self, dtype):
        return Tensor(self.shape, self.data, dtype)

    def __setitem__(self, rows, value):
        """t[rows] = value: whole rows of a matrix (a slice of them) set to one value."""
        cols = self.shape[1]
        for r in range(*rows.indices(self.shape[0])):
            self.data[r * cols:(r + 1) * cols] = [value] * cols

    def masked_fill(self, mask, value):
        return Tensor(self.shape, [value if m else v for v, m in zip(self.data, mask.data)],
                      self.dtype)

    def nan_to_num(self, nan):
        return Tensor(self.shape, [nan if math.isnan(v) else v for v in self.data], self.dtype)

    def clamp_min(self, low):
        return Tensor(self.shape, [max(v, low) for v in self.data], self.dtype)

    def double(self):
        return Tensor(self.shape, self.data, float64)

    def float(self):
        return Tensor(self.shape, self.data, float32)

    def abs(self):
        return Tensor(self.shape, [abs(v) for v in self.data], self.dtype)

    def element_size(self):
        return {float64: 8, bfloat16: 2}.get(self.dtype, 4)

    def _reduce(self, fn, dim, keepdim):
        if dim is None:
            return Tensor((), [fn(self.data)], self.dtype)
        rows, cols = self.shape
        if dim in (-1, 1):
            out = [fn(self.data[r * cols:(r + 1) * cols]) for r in range(rows)]
            return Tensor((rows, 1) if keepdim else (rows,), out, self.dtype)
        out = [fn(self.data[c::cols]) for c in range(cols)]
        return Tensor((1, cols) if keepdim else (cols,), out, self.dtype)

    def sum(self, dim=None, keepdim=False):
        return self._reduce(math.fsum, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        return self._reduce(lambda v: math.fsum(v) / len(v), dim, keepdim)

    def max(self):
        return Tensor((), [max(self.data)], self.dtype)

    def item(self):
        return self.data[0]

    def view(self, *shape):
        return Tensor((len(self.data),), self.data, self.dtype)


def _numel(shape):
    return math.prod((shape,) if isinstance(shape, int) else shape)


class Generator:
    def __init__(self, device=None):
        self.rng = random.Random(0)

    def manual_seed(self, seed):
        self.rng.seed(seed)
        return self


def rand(shape, generator=None, device=None):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return Tensor(shape, [generator.rng.random() for _ in range(_numel(shape))])


def zeros(shape, dtype=float32, device=None):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return Tensor(shape, [0.0] * _numel(shape), dtype)


def sqrt(t):
    return Tensor(t.shape, [math.sqrt(v) for v in t.data], t.dtype)


def where(cond, a, b):
    return Tensor(cond.shape, [x if c else y for c, x, y in zip(cond.data, a.data, b.data)],
                  a.dtype)


def softmax(t, dim=-1):
    """Each row's softmax (dim -1 only); a row of -inf alone is NaN, as torch's."""
    rows, cols = t.shape
    out = []
    for r in range(rows):
        v = t.data[r * cols:(r + 1) * cols]
        top = max(v)
        if top == -math.inf:
            out += [math.nan] * cols
            continue
        e = [math.exp(a - top) for a in v]
        total = math.fsum(e)
        out += [a / total for a in e]
    return Tensor(t.shape, out, t.dtype)


def _softmax_backward_data(grad, output, dim, input_dtype):
    rows, cols = output.shape
    dx = []
    for r in range(rows):
        g, y = grad.data[r * cols:(r + 1) * cols], output.data[r * cols:(r + 1) * cols]
        s = 0.0 if _broken("nos") else math.fsum(a * b for a, b in zip(g, y))
        dx += [b * (a - s) for a, b in zip(g, y)]
    return _output(output.shape, dx, input_dtype)


def _layer_norm_backward(dy, x, normalized_shape, mean, rstd, weight, bias, output_mask):
    if weight.dtype != x.dtype:   # torch 2.11's CUDA kernel, seen on the H200
        raise RuntimeError(f"expected scalar type {x.dtype} but found {weight.dtype}")
    rows, cols = x.shape
    n = cols - 1 if _broken("nm1") else cols
    dx, dgamma, dbeta = [], [0.0] * cols, [0.0] * cols
    for r in range(rows):
        xs, ds = x.data[r * cols:(r + 1) * cols], dy.data[r * cols:(r + 1) * cols]
        m, s = mean.data[r], rstd.data[r]
        xhat = [(v - m) * s for v in xs]
        g = [d * w for d, w in zip(ds, weight.data)]
        m1 = math.fsum(g) / n
        m2 = math.fsum(a * b for a, b in zip(g, xhat)) / n
        dx += [s * (gj - m1 - xj * m2) for gj, xj in zip(g, xhat)]
        for c in range(cols):
            dgamma[c] += ds[c] * xhat[c]
            dbeta[c] += ds[c]
    return (_output(x.shape, dx, x.dtype), _output((cols,), dgamma, weight.dtype),
            _output((cols,), dbeta, weight.dtype))


class _Aten:
    native_layer_norm_backward = staticmethod(_layer_norm_backward)
    _softmax_backward_data = staticmethod(_softmax_backward_data)


class _Ops:
    aten = _Aten()


ops = _Ops()


class _Props:
    major, minor, multi_processor_count, L2_cache_size = 9, 0, 132, 64


class _Event:
    clock = 0.0

    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        _Event.clock += 0.005
        self.t = _Event.clock

    def synchronize(self):
        pass

    late = 0   # FAKE_TORCH_LATE_QUERIES: so many queries answer that the GPU passed the event

    def query(self):
        # False: the GPU has not reached it yet, the host queued the op in time
        _Event.late += 1
        return _Event.late <= int(os.environ.get("FAKE_TORCH_LATE_QUERIES", "0"))

    def elapsed_time(self, other):
        return other.t - self.t


class _Cuda:
    Event = _Event

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_properties(device):
        return _Props()

    @staticmethod
    def get_device_name(device):
        return "NVIDIA H200 (fake torch)"

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def _sleep(cycles):
        pass


cuda = _Cuda()


class _Cudnn:
    @staticmethod
    def is_available():
        return False


class _Backends:
    cudnn = _Cudnn()


backends = _Backends()


class _Dynamo:
    @staticmethod
    def reset():
        pass


_dynamo = _Dynamo()


def compile(fn, dynamic=None):
    return fn
