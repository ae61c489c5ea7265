"""aten.py: ATen operators (as recorded, functional form) -> shardproof plan-language operators.

A mapper gets a context `c` and the operator's arguments by schema name, and returns the
operator's result as language text: one expression (one output) or a list of expressions (an
operator with several outputs).  `c.t(x)` is the text of a tensor argument, `c.shape(x)` its
shape, `c.out_shape(k)` the shape of output k, `c.num(v)` an exact rational literal for a Python
number, `c.ints(x)` a constant integer tensor's values, `c.temp(expr)` binds an expression to a
fresh name (for collectives whose result several outputs slice).  An operator without a mapper
is an error naming it and the Python line that ran it; nothing is skipped silently.

Backward operators are mapped to the language's gradient operators or spelled out from the
forward values, exactly as autograd computes them (so the check verifies what ran, not a
re-derivation).
"""

# Operators whose value does not depend on their tensor arguments' values (only on shapes):
# their results are constants.
VALUE_FREE = {
    "ones_like", "zeros_like", "full_like", "empty_like", "new_zeros", "new_ones", "new_full",
    "new_empty", "new_empty_strided", "empty", "empty_strided", "zeros", "ones", "full",
    "scalar_tensor", "arange", "fill", "zero", "rand", "randn", "rand_like", "randn_like",
    "randint", "randperm", "linspace", "eye", "bernoulli", "normal", "uniform", "tril_indices",
    "triu_indices", "_local_scalar_dense", "lift_fresh_copy",
}


class MapError(Exception):
    pass


def _dim(d, n):
    d = int(d)
    return d + n if d < 0 else d


def _lst(v):
    return "[" + ", ".join(str(int(x)) for x in v) + "]"


def _reshape(c, x, shape):
    if tuple(c.shape(x)) == tuple(shape):
        return c.t(x)
    return "reshape(%s, %s)" % (c.t(x), _lst(shape))


def _same(c, a):
    return lambda **k: _reshape(c, k[a], c.out_shape(0))


def _scaled(c, text, k):
    """text * k (k a Python number), simplified for k == 1 and k == -1."""
    if k == 1:
        return text
    if k == -1:
        return "(-%s)" % text
    return "(%s * %s)" % (text, c.num(k))


def _binop(sym):
    def f(c, self, other, alpha=1, **_):
        b = c.t(other) if not isinstance(other, (int, float)) else c.num(other)
        return "(%s %s %s)" % (c.t(self), sym, _scaled(c, b, alpha) if alpha != 1 else b)
    return f


def _unary(name):
    return lambda c, self, **_: "%s(%s)" % (name, c.t(self))


def _red(name):
    def f(c, self, dim=None, keepdim=False, dtype=None, **_):
        n = len(c.shape(self))
        if dim is None or (isinstance(dim, list) and len(dim) == 0):
            if not keepdim:
                return "%s(%s)" % (name, c.t(self))
            dim = list(range(n))
        if not isinstance(dim, list):
            dim = [dim]
        ds = sorted(_dim(d, n) for d in dim)
        if n == 0:
            return c.t(self)
        return "%s(%s, dim = %s, keepdim = %d)" % (name, c.t(self), _lst(ds), 1 if keepdim else 0)
    return f


def _addmm(c, self, mat1, mat2, beta=1, alpha=1, **_):
    mm = _scaled(c, "matmul(%s, %s)" % (c.t(mat1), c.t(mat2)), alpha)
    if beta == 0:
        return mm
    return "(%s + %s)" % (_scaled(c, c.t(self), beta), mm)


def _t(c, self, **_):
    if len(c.shape(self)) < 2:
        return c.t(self)
    return "transpose(%s, 0, 1)" % c.t(self)


def _transpose(c, self, dim0, dim1, **_):
    n = len(c.shape(self))
    a, b = _dim(dim0, n), _dim(dim1, n)
    if a == b:
        return c.t(self)
    return "transpose(%s, %d, %d)" % (c.t(self), a, b)


def _permute(c, self, dims, **_):
    n = len(c.shape(self))
    ds = [_dim(d, n) for d in dims]
    if ds == list(range(n)):
        return c.t(self)
    return "permute(%s, %s)" % (c.t(self), _lst(ds))


def _expand(c, self, size=None, **_):
    out = c.out_shape(0)
    shp = list(c.shape(self))
    if tuple(shp) == tuple(out):
        return c.t(self)
    x = c.t(self)
    if len(shp) < len(out):
        shp = [1] * (len(out) - len(shp)) + shp
        x = "reshape(%s, %s)" % (x, _lst(shp))
    return "expand(%s, %s)" % (x, _lst(out))


def _slice(c, self, dim=0, start=None, end=None, step=1, **_):
    shp = c.shape(self)
    d = _dim(dim, len(shp))
    n = shp[d]
    s = 0 if start is None else int(start)
    e = n if end is None else int(end)
    s = max(0, min(n, s + n if s < 0 else s))
    e = max(0, min(n, e + n if e < 0 else e))
    if s == 0 and e == n and step == 1:
        return c.t(self)
    if step != 1:
        return "slice(%s, %d, %d, %d, %d)" % (c.t(self), d, s, e, int(step))
    return "slice(%s, %d, %d, %d)" % (c.t(self), d, s, e)


def _select(c, self, dim, index, **_):
    shp = c.shape(self)
    d = _dim(dim, len(shp))
    i = int(index) + (shp[d] if int(index) < 0 else 0)
    return "reshape(slice(%s, %d, %d, %d), %s)" % (c.t(self), d, i, i + 1, _lst(c.out_shape(0)))


def _slice_backward(c, grad_output, input_sizes, dim, start, end, step, **_):
    """The gradient of slice: grad_output padded with zeros back to the input's size."""
    n = len(input_sizes)
    d = _dim(dim, n)
    size = int(input_sizes[d])
    s = 0 if start is None else int(start)
    e = size if end is None else int(end)
    s = max(0, min(size, s + size if s < 0 else s))
    e = max(0, min(size, e + size if e < 0 else e))
    if int(step) != 1:
        raise MapError("slice_backward with step %d" % int(step))
    if s == 0 and e == size:
        return c.t(grad_output)
    return "pad(%s, %d, %d, %d)" % (c.t(grad_output), d, s, size - e)


def _select_backward(c, grad_output, input_sizes, dim, index, **_):
    n = len(input_sizes)
    d = _dim(dim, n)
    size = int(input_sizes[d])
    i = int(index) + (size if int(index) < 0 else 0)
    shp = [int(k) for k in input_sizes]
    shp[d] = 1
    return "pad(reshape(%s, %s), %d, %d, %d)" % (c.t(grad_output), _lst(shp), d, i, size - i - 1)


def _cat(c, tensors, dim=0, **_):
    ts = [x for x in tensors if 0 not in c.shape(x)]
    if not ts:
        raise MapError("concatenation of empty tensors")
    n = len(c.shape(ts[0]))
    if len(ts) == 1:
        return c.t(ts[0])
    return "concat(%s, dim = %d)" % (", ".join(c.t(x) for x in ts), _dim(dim, n))


def _pieces(c, self, sizes, dim):
    shp = c.shape(self)
    d = _dim(dim, len(shp))
    outs, s = [], 0
    for k in sizes:
        sub = _slice(c, self, d, s, s + k)
        outs.append(sub)
        s += k
    return outs


def _split(c, self, split_size, dim=0, **_):
    n = c.shape(self)[_dim(dim, len(c.shape(self)))]
    k = int(split_size)
    sizes = [min(k, n - i) for i in range(0, n, k)] if k > 0 else [n]
    return _pieces(c, self, sizes, dim)


def _split_sizes(c, self, split_sizes, dim=0, **_):
    return _pieces(c, self, [int(s) for s in split_sizes], dim)


def _unbind(c, self, dim=0, **_):
    shp = c.shape(self)
    d = _dim(dim, len(shp))
    out = list(shp[:d]) + list(shp[d + 1:])
    return ["reshape(%s, %s)" % (p, _lst(out)) for p in _pieces(c, self, [1] * shp[d], d)]


def _rsub(c, self, other, alpha=1, **_):
    b = c.t(other) if not isinstance(other, (int, float)) else c.num(other)
    return "(%s - %s)" % (b, _scaled(c, c.t(self), alpha))


def _div(c, self, other, rounding_mode=None, **_):
    if rounding_mode is not None:
        raise MapError("division with rounding_mode=%r" % rounding_mode)
    b = c.t(other) if not isinstance(other, (int, float)) else c.num(other)
    return "(%s / %s)" % (c.t(self), b)


def _pow(c, self, exponent, **_):
    e = exponent
    if isinstance(e, float) and e == int(e):
        e = int(e)
    if isinstance(e, int):
        if e == 1:
            return c.t(self)
        if e == 0:
            return "expand(1, %s)" % _lst(c.out_shape(0)) if c.out_shape(0) else "1"
        if e < 0:
            return "(1 / pow(%s, %d))" % (c.t(self), -e)
        return "pow(%s, %d)" % (c.t(self), e)
    if e == 0.5:
        return "sqrt(%s)" % c.t(self)
    if e == -0.5:
        return "rsqrt(%s)" % c.t(self)
    raise MapError("pow with the non-integer exponent %r" % e)


def _softmax(name):
    def f(c, self, dim, half_to_float=False, **_):
        return "%s(%s, dim = %d)" % (name, c.t(self), _dim(dim, len(c.shape(self))))
    return f


def _softmax_bwd(name):
    def f(c, grad_output, output, dim, input_dtype=None, **_):
        return "%s(%s, %s, dim = %d)" % (name, c.t(output), c.t(grad_output),
                                         _dim(dim, len(c.shape(output))))
    return f


def _grad_op(name):
    # the language's <op>_grad(forward input, dy)
    return lambda c, grad_output, self, **_: "%s(%s, %s)" % (name, c.t(self), c.t(grad_output))


def _threshold_backward(c, grad_output, self, threshold, **_):
    return "where(%s > %s, %s, 0)" % (c.t(self), c.num(threshold), c.t(grad_output))


def _sigmoid_backward(c, grad_output, output, **_):
    o = c.t(output)
    return "(%s * (%s * (1 - %s)))" % (c.t(grad_output), o, o)


def _tanh_backward(c, grad_output, output, **_):
    o = c.t(output)
    return "(%s * (1 - %s * %s))" % (c.t(grad_output), o, o)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _mse(c, self, target, reduction=1, **_):
    d = "pow(%s - %s, 2)" % (c.t(self), c.t(target))
    if reduction == 0:
        return d
    return "%s(%s)" % ("mean" if reduction == 1 else "sum", d)


def _mse_bwd(c, grad_output, self, target, reduction=1, **_):
    k = 2
    if reduction == 1:
        from fractions import Fraction
        k = Fraction(2, _numel(c.shape(self)))
    return "(%s * (%s - %s) * %s)" % (c.t(grad_output), c.t(self), c.t(target), c.frac(k))


def _addcmul(c, self, tensor1, tensor2, value=1, **_):
    return "(%s + %s)" % (c.t(self), _scaled(c, "(%s * %s)" % (c.t(tensor1), c.t(tensor2)), value))


def _addcdiv(c, self, tensor1, tensor2, value=1, **_):
    return "(%s + %s)" % (c.t(self), _scaled(c, "(%s / %s)" % (c.t(tensor1), c.t(tensor2)), value))


def _lerp(c, self, end, weight, **_):
    w = c.num(weight) if isinstance(weight, (int, float)) else c.t(weight)
    return "(%s + %s * (%s - %s))" % (c.t(self), w, c.t(end), c.t(self))


def _copy(c, self, src, non_blocking=False, **_):
    out = c.out_shape(0)
    if tuple(c.shape(src)) == tuple(out):
        return c.t(src)
    shp = list(c.shape(src))
    x = c.t(src)
    if len(shp) < len(out):
        x = "reshape(%s, %s)" % (x, _lst([1] * (len(out) - len(shp)) + shp))
    return "expand(%s, %s)" % (x, _lst(out))


def _broadcast(c, x, shape):
    """A tensor argument broadcast to shape (leading dims of 1 added, then expanded)."""
    shp = list(c.shape(x))
    t = c.t(x)
    if tuple(shp) == tuple(shape):
        return t
    if len(shp) < len(shape):
        shp = [1] * (len(shape) - len(shp)) + shp
        t = "reshape(%s, %s)" % (t, _lst(shp))
    return "expand(%s, %s)" % (t, _lst(shape))


def _bound(c, v, shape):
    if v is None or isinstance(v, (int, float)):
        return None if v is None else c.num(v)
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "v":
        return _broadcast(c, v, shape)
    raise MapError("clamp with the bound %r (a number or a tensor)" % (v,))


def _clamp(c, self, min=None, max=None, **_):
    """clamp(x, min, max) = minimum(maximum(x, min), max), as ATen computes it (a bound above
    the other gives that bound); a bound is a number or a tensor (clamp.Tensor, broadcast to
    the result's shape, which may be larger than x's)."""
    out = c.out_shape(0)
    x = _broadcast(c, self, out)
    lo, hi = _bound(c, min, out), _bound(c, max, out)
    if lo is not None and hi is not None:
        return "clamp(%s, %s, %s)" % (x, lo, hi)
    if lo is not None:
        return "maximum(%s, %s)" % (x, lo)
    if hi is not None:
        return "minimum(%s, %s)" % (x, hi)
    return x


def _cmp(name):
    def f(c, self, other, **_):
        b = c.t(other) if not isinstance(other, (int, float)) else c.num(other)
        return "%s(%s, %s)" % (name, c.t(self), b)
    return f


# Logical operators of bool tensors (emit.py lets them through only when every input is bool,
# so their values are 0/1 masks: comparisons, moves): exact as products
def _logical_and(c, self, other, **_):
    return "(%s * %s)" % (c.t(self), c.t(other))


def _logical_or(c, self, other, **_):
    a, b = c.t(self), c.t(other)
    return "(%s + %s - %s * %s)" % (a, b, a, b)


def _logical_xor(c, self, other, **_):
    a, b = c.t(self), c.t(other)
    return "(%s + %s - 2 * %s * %s)" % (a, b, a, b)


def _logical_not(c, self, **_):
    return "(1 - %s)" % c.t(self)


def _where(c, condition, self, other, **_):
    return "where(%s, %s, %s)" % (c.t(condition), c.t(self), c.t(other))


def _embedding(c, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False, **_):
    ids = c.ints(indices)
    return "embedding(%s, ids = %s, shape = %s)" % (c.t(weight), _lst(ids),
                                                    _lst(c.shape(indices)))


def _embedding_bwd(c, grad_output, indices, num_weights, padding_idx=-1, scale_grad_by_freq=False,
                   **_):
    if scale_grad_by_freq:
        raise MapError("embedding backward with scale_grad_by_freq")
    if padding_idx is not None and padding_idx >= 0:
        raise MapError("embedding backward with padding_idx")
    h = c.shape(grad_output)[-1]
    ids = c.ints(indices)
    return "embedding_grad(expand(0, %s), %s, ids = %s, shape = %s)" % (
        _lst([int(num_weights), h]), c.t(grad_output), _lst(ids), _lst(c.shape(indices)))


def _gelu(c, self, approximate="none", **_):
    if approximate != "none":
        raise MapError("gelu(approximate=%r)" % approximate)
    return "gelu(%s)" % c.t(self)


def _gelu_bwd(c, grad_output, self, approximate="none", **_):
    if approximate != "none":
        raise MapError("gelu_backward(approximate=%r)" % approximate)
    return "gelu_grad(%s, %s)" % (c.t(self), c.t(grad_output))


def _view(c, self, **_):
    return _reshape(c, self, c.out_shape(0))


def _square(c, self, **_):
    return "pow(%s, 2)" % c.t(self)


def _reciprocal(c, self, **_):
    return "(1 / %s)" % c.t(self)


def _maxmin(name):
    return lambda c, self, other, **_: "%s(%s, %s)" % (name, c.t(self), c.t(other))


TABLE = {
    "mm": lambda c, self, mat2, **_: "matmul(%s, %s)" % (c.t(self), c.t(mat2)),
    "bmm": lambda c, self, mat2, **_: "matmul(%s, %s)" % (c.t(self), c.t(mat2)),
    "matmul": lambda c, self, other, **_: "matmul(%s, %s)" % (c.t(self), c.t(other)),
    "addmm": _addmm,
    "baddbmm": lambda c, self, batch1, batch2, beta=1, alpha=1, **_: _addmm(
        c, self, batch1, batch2, beta, alpha),
    "t": _t,
    "transpose": _transpose,
    "permute": _permute,
    "expand": _expand,
    "view": _view, "_unsafe_view": _view, "reshape": _view, "view_as": _view,
    "unsqueeze": _view, "squeeze": _view, "flatten": _view, "clone": _view,
    "contiguous": _view, "_to_copy": _view, "to": _view, "_reshape_alias": _view,
    "slice": _slice,
    "narrow": lambda c, self, dim, start, length, **_: _slice(c, self, dim, start,
                                                              int(start) + int(length)),
    "select": _select,
    "slice_backward": _slice_backward, "select_backward": _select_backward,
    "cat": _cat, "concat": _cat,
    "split": _split, "split_with_sizes": _split_sizes, "unbind": _unbind,
    "add": _binop("+"), "sub": _binop("-"), "rsub": _rsub,
    "mul": lambda c, self, other, **_: "(%s * %s)" % (
        c.t(self), c.t(other) if not isinstance(other, (int, float)) else c.num(other)),
    "div": _div,
    "neg": lambda c, self, **_: "(-%s)" % c.t(self),
    "pow": _pow, "square": _square, "reciprocal": _reciprocal,
    "sqrt": _unary("sqrt"), "rsqrt": _unary("rsqrt"), "exp": _unary("exp"), "log": _unary("log"),
    "tanh": _unary("tanh"), "sigmoid": _unary("sigmoid"), "silu": _unary("silu"),
    "relu": _unary("relu"), "abs": _unary("abs"), "erf": _unary("erf"), "gelu": _gelu,
    "sum": _red("sum"), "mean": _red("mean"), "amax": _red("amax"), "amin": _red("amin"),
    "_softmax": _softmax("softmax"), "_log_softmax": _softmax("log_softmax"),
    "_softmax_backward_data": _softmax_bwd("softmax_grad"),
    "_log_softmax_backward_data": _softmax_bwd("log_softmax_grad"),
    "threshold_backward": _threshold_backward,
    "silu_backward": _grad_op("silu_grad"),
    "gelu_backward": _gelu_bwd,
    "sigmoid_backward": _sigmoid_backward,
    "tanh_backward": _tanh_backward,
    "mse_loss": _mse, "mse_loss_backward": _mse_bwd,
    "addcmul": _addcmul, "addcdiv": _addcdiv, "lerp": _lerp,
    "copy": _copy,
    "clamp": _clamp, "clamp_min": lambda c, self, min, **_: _clamp(c, self, min=min),
    "clamp_max": lambda c, self, max, **_: _clamp(c, self, max=max),
    "maximum": _maxmin("maximum"), "minimum": _maxmin("minimum"),
    "gt": _cmp("gt"), "lt": _cmp("lt"), "ge": _cmp("ge"), "le": _cmp("le"), "eq": _cmp("eq"),
    "ne": _cmp("ne"),
    "where": _where,
    "logical_and": _logical_and, "logical_or": _logical_or, "logical_xor": _logical_xor,
    "logical_not": _logical_not,
    "embedding": _embedding, "embedding_dense_backward": _embedding_bwd,
}


def map_op(c, fn, args):
    """The language text of a recorded operator: a string, or a list for several outputs."""
    f = TABLE.get(fn)
    if f is None:
        raise MapError("ATen operator '%s' has no shardproof mapping" % fn)
    try:
        return f(c, **dict(args))
    except TypeError as e:
        raise MapError("ATen operator '%s' with unexpected arguments (%s)" % (fn, e))
