"""emit.py: translate the captured traces into a shardproof file (a model and a plan).

* The single-device trace becomes `model single`: registered inputs and parameters are its
  inputs and params, every recorded operator that an output depends on becomes a statement
  (forward, autograd's backward and the optimizer, as they ran), in-place updates are already
  SSA values in the trace.  Outputs: each registered output, and `grad.P` and `P.new` (the
  final gradient and value) of every registered parameter P.
* The rank traces become `plan parallel of single`: the ranks' statements are merged where
  they are the same (SPMD), and restricted with `on AXIS = k { ... }` where ranks differ; a
  collective becomes the language's collective over the mesh axes its process group spans.
* Constants (values that depend on no registered tensor) are folded: a tensor of equal
  elements is a literal (the simplest rational that rounds to the float), any other is an
  input of the model (one per distinct value) that the plan's constants are matched to, as
  shards with exactly their values.
* The layout of each registered input and parameter, and of each output, is inferred from the
  concrete values (which shard or replica of the single-device tensor each rank holds, exactly
  for inputs and parameters, whose layout `check` assumes; for outputs such as a per-rank loss
  also a pending sum or average); `check` then proves the outputs'.
* Every statement ends with `#@ FILE:LINE`, the Python line that ran the operator: the
  language's source-map comment, which reports print next to the plan line.
"""

import math
import re
from fractions import Fraction

import torch

from .aten import VALUE_FREE, MapError, map_op
from .cuts import CutPlan
from .layout import Layout, Mesh, infer_layout, same, shard_layouts, shape_layout

KEYWORDS = {"dim", "model", "plan", "of", "func", "input", "param", "output", "train", "mesh",
            "on", "for", "in", "if", "else", "return"}
COMMS = {"all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
         "reduce_scatter_tensor", "broadcast", "reduce", "all_to_all_single", "all_to_all",
         "send", "recv"}


class EmitError(Exception):
    pass


# ---- numbers ----------------------------------------------------------------------------------

def _simplest(lo, hi):
    """The rational of smallest denominator (then numerator) in [lo, hi], 0 < lo <= hi."""
    fl = math.floor(lo)
    if fl == lo:
        return Fraction(fl)
    if fl + 1 <= hi:
        return Fraction(fl + 1)
    r = _simplest(1 / (hi - fl), 1 / (lo - fl))
    return fl + 1 / r


def rational(x, f32=False):
    """The simplest rational that rounds to the float x (float32 rounding when f32), or x's
    exact value when that is an integer or a small integer times a power of two: scaling by
    a power of two is exact in floating point, and the simplest rational around 2^-30 is
    1/1073741761, around 2^30 the integer 1073741792 (x * 2^30 * 2^-30 was not x)."""
    if isinstance(x, bool):
        return Fraction(int(x))
    if isinstance(x, int):
        return Fraction(x)
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise EmitError("the non-finite number %r has no rational value" % x)
    if x == 0:
        return Fraction(0)
    if x < 0:
        return -rational(-x, f32)
    if f32:
        t = torch.tensor(x, dtype=torch.float32)
        up = float(torch.nextafter(t, torch.tensor(math.inf, dtype=torch.float32)))
        down = float(torch.nextafter(t, torch.tensor(0.0, dtype=torch.float32)))
        x = float(t)
    else:
        up, down = math.nextafter(x, math.inf), math.nextafter(x, 0.0)
    fx = Fraction(x)
    if fx.denominator == 1 or fx.numerator < 2 ** 12:
        return fx
    return _simplest((Fraction(down) + fx) / 2, (fx + Fraction(up)) / 2)


def frac_text(q):
    """A rational as a literal that is one operand wherever it stands: `x / (3/4)` must not
    read as `(x / 3) / 4`."""
    q = Fraction(q)
    s = str(q.numerator) if q.denominator == 1 else "%d/%d" % (abs(q.numerator), q.denominator)
    if q < 0:
        return "(-%s)" % (s if q.denominator != 1 else str(-q.numerator))
    return s if q.denominator == 1 else "(%s)" % s


# ---- names ------------------------------------------------------------------------------------

def mangle(name):
    """A registered name as a language identifier: 'layers.0.weight' -> 'layers_0.weight'."""
    parts = [re.sub(r"[^A-Za-z0-9_]", "_", p) for p in str(name).split(".") if p != ""]
    out = ""
    for p in parts:
        if not out:
            out = p if not p[0].isdigit() else "_" + p
        elif p[0].isdigit():
            out += "_" + p
        else:
            out += "." + p
    if not out:
        out = "_"
    if out in KEYWORDS:
        out += "_"
    return out


# ---- trace analysis ---------------------------------------------------------------------------

def refs(x):
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "v":
        yield x[1]
    elif isinstance(x, list):
        for y in x:
            yield from refs(y)


def flat_outs(outs):
    for o in outs:
        if isinstance(o, list):
            yield from o
        elif isinstance(o, int):
            yield o


class Analysis:
    """Which values of a trace are symbolic (depend on a registered tensor) and which operators
    the roots need."""

    def __init__(self, tr):
        self.tr = tr
        n = len(tr.vals)
        self.sym = [False] * n
        for v, val in enumerate(tr.vals):
            if val.kind in ("input", "param"):
                self.sym[v] = True
        for op in tr.ops:
            ins = [v for _, a in op.args for v in refs(a)]
            s = op.fn in COMMS or (op.fn not in VALUE_FREE and any(self.sym[v] for v in ins))
            if (op.fn in VALUE_FREE and op.fn != "_local_scalar_dense" and
                    any(self.sym[v] for name, a in op.args if name != "self" for v in refs(a))):
                raise EmitError("%s: %s takes a value computed from registered inputs or "
                                "parameters (a fill with a tensor, a random draw with a tensor "
                                "parameter): the capture would keep one number" % (op.loc, op.fn))
            if op.fn == "_local_scalar_dense" and any(self.sym[v] for v in ins):
                how = dict(op.args).get("how") or ".item(), a tensor in an `if`"
                raise EmitError("%s: a Python value is read (%s) from a tensor computed from "
                                "registered inputs or parameters; the capture cannot follow "
                                "data-dependent Python" % (op.loc, how))
            for v in flat_outs(op.outs):
                self.sym[v] = s

    def needed(self, roots):
        """Operator indexes the symbolic roots depend on, in trace order.  Point-to-point
        operators are always kept (a send has no output; its peer's recv may be needed)."""
        need = set()
        todo = [v for v in roots if v is not None and self.sym[v]]
        for i, op in enumerate(self.tr.ops):
            if op.fn in ("send", "recv"):
                need.add(i)
                todo += [w for _, a in op.args for w in refs(a) if self.sym[w]]
        seen = set()
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            p = self.tr.vals[v].producer
            if p is None:
                continue
            need.add(p)
            for name, a in self.tr.ops[p].args:
                if self.tr.ops[p].fn == "copy" and name == "self":
                    continue    # copy_ overwrites its destination: the result is src's value
                for w in refs(a):
                    if self.sym[w]:
                        todo.append(w)
        return sorted(need)


def trace_roots(tr):
    roots = [vid for _, vid, _ in tr.outputs]
    for name in tr.params:
        v, g = tr.final[name]
        roots += [v, g]
    return roots


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# words an axis name must not be: in a plan an axis name stands for its size, and a
# collective's arguments take an axis or a reduction
_NOT_AXES = KEYWORDS | {"rank", "sum", "avg", "max", "min"}


def registered_names(traces):
    """The language names of every registered input, parameter and output (mangled)."""
    names = set()
    for tr in traces:
        names.update(mangle(n) for n in tr.inputs)
        names.update(mangle(n) for n in tr.params)
        names.update(mangle(n) for n, _, _ in tr.outputs)
    return names


def infer_mesh(ranks, world, used=frozenset()):
    """The mesh of sp.mesh(...), or one inferred from the process groups, named apart from
    the names in used (the registered tensors': a parameter `w` and an axis `w` would be one
    name in the plan)."""
    given = [tr.mesh for tr in ranks if tr.mesh]
    if given:
        m = given[0]
        if any(g != m for g in given):
            raise EmitError("sp.mesh(...) differs between ranks")
        mesh = Mesh(m)
        if mesh.nranks != world:
            raise EmitError("sp.mesh(%s) has %d ranks, the world %d" % (
                ", ".join("%s=%d" % a for a in m), mesh.nranks, world))
        for a in mesh.names:
            if not _IDENT.fullmatch(a) or a in _NOT_AXES:
                raise EmitError("sp.mesh(...): the axis name '%s' is not usable in a plan (a "
                                "plain identifier other than %s)" % (
                                    a, ", ".join(sorted(_NOT_AXES))))
            if a in used:
                raise EmitError("sp.mesh(...): the axis name '%s' is also the name of a "
                                "registered tensor (in a plan an axis name stands for its "
                                "size); rename one of them" % a)
        return mesh
    groups = set()
    for tr in ranks:
        for op in tr.ops:
            if op.comm and len(op.comm["group"]) > 1:
                groups.add(tuple(sorted(op.comm["group"])))
    for k in range(1, 4):
        names = ["w"] if k == 1 else ["m%d" % i for i in range(k)]
        while any(n in used for n in names):
            names = [n + "_" for n in names]
        for sizes in _factorizations(world, k):
            mesh = Mesh(list(zip(names, sizes)))
            if all(mesh.axes_of(g) is not None for g in groups):
                return mesh
    raise EmitError("the process groups of the collectives do not form a mesh; name the axes "
                    "with sp.mesh(...)")


def _factorizations(n, k):
    if k == 1:
        if n >= 1:
            yield [n]
        return
    for a in range(2, n + 1):
        if n % a == 0:
            for rest in _factorizations(n // a, k - 1):
                yield [a] + rest


# ---- rendering one operator -------------------------------------------------------------------

class _Render:
    """The mapper context for one operator of one trace (names of that trace)."""

    def __init__(self, em, tr, names, op):
        self.em, self.tr, self.names, self.op = em, tr, names, op
        self.temps = []

    def t(self, x):
        if not (isinstance(x, tuple) and x[0] == "v"):
            if isinstance(x, (int, float)):
                return self.num(x)
            raise MapError("expected a tensor argument, got %r" % (x,))
        v = x[1]
        if v in self.names:
            return self.names[v]
        return self.em.const_text(self.tr, v, self.op.loc)

    def shape(self, x):
        return self.tr.vals[x[1]].shape

    def out_shape(self, k):
        outs = list(flat_outs(self.op.outs))
        return self.tr.vals[outs[k]].shape

    def num(self, v):
        """A Python number the operator applies to its tensors: a float32 operator computes
        with the number rounded to float32 (as PyTorch casts a scalar to the tensors' type),
        so the simplest rational that rounds to that float32 ((1 - 0.9) -> 1/10)."""
        outs = list(flat_outs(self.op.outs))
        f32 = bool(outs) and self.tr.vals[outs[0]].dtype == "float32"
        return frac_text(rational(v, f32=f32))

    def frac(self, q):
        return frac_text(q)

    def ints(self, x):
        val = self.tr.vals[x[1]]
        if self.em.an[id(self.tr)].sym[x[1]]:
            raise MapError("indices computed from registered tensors (the capture needs constant "
                           "indices)")
        return [int(i) for i in val.value.reshape(-1).tolist()]

    def temp(self, expr):
        self.temps.append(expr)
        return "$%d" % (len(self.temps) - 1)


_FLOATS = {"float16", "bfloat16", "float32", "float64"}
_COMPARISONS = {"gt", "lt", "ge", "le", "eq", "ne"}
_LOGICAL = {"logical_and", "logical_or", "logical_xor", "logical_not"}
_MOVES = {"view", "_unsafe_view", "reshape", "view_as", "unsqueeze", "squeeze", "flatten",
          "clone", "contiguous", "_reshape_alias", "t", "transpose", "permute", "expand", "slice",
          "narrow", "select", "cat", "concat", "split", "split_with_sizes", "unbind", "where",
          "_to_copy", "to", "copy"}


def _message(op):
    """A send's or recv's message among those of its pair of ranks: (group, tag, index of the
    messages of that group and tag, in posting order), as torch.distributed matches them."""
    c = op.comm
    return (tuple(sorted(c["group"])), c.get("tag", 0), c.get("msg", 0))


def sends_in_receive_order(ranks, seqs):
    """seqs (each rank's operator indexes, in trace order) with every rank's sends to a peer
    in the order the peer receives them.

    torch matches a receive with the send of the same source, destination and tag (the
    capture records which message each receive took, and a receive where its wait completed),
    while the plan language's recv takes the oldest message from its source.  A send is
    moved later, to just after the send that precedes it in its peer's receive order: it
    defines nothing, so what it reads is unchanged, and its receive still follows it (that
    receive completed after the later-posted send it now follows was posted).  Sends no
    receive takes stay last, in posting order."""
    order = {}      # (src, dst) -> messages, in dst's receive order
    for d, tr in enumerate(ranks):
        for i in seqs[d]:
            op = tr.ops[i]
            if op.fn == "recv":
                order.setdefault((op.comm["peer"], d), []).append(_message(op))
    out = []
    for r, tr in enumerate(ranks):
        seq, held, nxt = [], {}, {}
        for i in seqs[r]:
            op = tr.ops[i]
            if op.fn != "send":
                seq.append(i)
                continue
            d = op.comm["peer"]
            want = order.get((r, d), [])
            h = held.setdefault(d, {})
            h[_message(op)] = i
            k = nxt.get(d, 0)
            while k < len(want) and want[k] in h:
                seq.append(h.pop(want[k]))
                k += 1
            nxt[d] = k
        for d in sorted(held):
            seq += sorted(held[d].values())
        out.append(seq)
    return out


def integer_values(c, op):
    """An operator with an integer or bool result computes with wrapping integers, logical
    operations or truncation (bool + bool is `or`, uint8 wraps, sum(dtype=int64) truncates, a
    dtype view reinterprets bits), which exact real arithmetic would not follow: only
    comparisons (a 0/1 mask of real values) and moves of values of the result's own type are
    taken (helper-46's review, session 31).  A conversion (`_to_copy`, `to`) is a move: float
    to int or bool is refused here, int to float is the identity."""
    outs = list(flat_outs(op.outs))
    bad = [c.tr.vals[v].dtype for v in outs if c.tr.vals[v].dtype not in _FLOATS]
    if not bad or op.fn in _COMPARISONS:
        return
    ins = {c.tr.vals[v].dtype for _, a in op.args for v in refs(a)}
    if op.fn in _MOVES and ins <= set(bad):
        return
    if op.fn in _LOGICAL and ins == {"bool"} and set(bad) == {"bool"}:
        return      # of 0/1 masks: products (aten.py), clamp's backward with tensor bounds
    raise MapError("%s computing %s values from %s (integer or bool arithmetic, truncation or "
                   "a reinterpretation of bits, which shardproof's exact real arithmetic does "
                   "not follow)" % (op.fn, bad[0], ", ".join(sorted(ins)) or "no tensor"))


# Values the recorder saw appear without an operator relating them to what was there (capture.py):
# a constant one is folded (its value is what the memory held), one computed from registered
# tensors cannot be translated.
_UNFOLLOWED = {
    "_external_write": "the memory of a tensor holding a value computed from registered "
                       "tensors changed without a PyTorch operator (numpy writing an array "
                       "that torch.from_numpy or .numpy() shares, ctypes through data_ptr()); "
                       "the capture cannot follow that write",
    "_reinterpret": "memory holding a value computed from registered tensors is read as "
                    "another element type or through a strided alias (a storage's bytes, "
                    "set_() with another dtype, copy.deepcopy of a tensor); the capture cannot "
                    "follow it",
    "_backend_defined": "the tensor of a rank other than dst after dist.reduce holds a value "
                        "computed from registered tensors that the backend defines (gloo "
                        "leaves partial results in it, NCCL the input), not the collective: "
                        "the capture cannot say what the code computes; reduce a copy, or "
                        "use all_reduce or reduce then broadcast",
}


def render(em, tr, names, op, mesh=None):
    """(lines, nouts): the statements of one operator; lines[i] may use $j (j < i) for the
    name of line j; the last nouts lines define the operator's outputs in order."""
    c = _Render(em, tr, names, op)
    try:
        if op.fn in _UNFOLLOWED:
            raise MapError(_UNFOLLOWED[op.fn])
        if op.fn == "cut":
            outs = em.cut_text(c, op)
        elif op.fn in COMMS:
            outs = em.comm_text(c, op, mesh)
        else:
            integer_values(c, op)
            outs = map_op(c, op.fn, op.args)
    except MapError as e:
        raise EmitError("%s: %s" % (op.loc, e))
    if isinstance(outs, str):
        outs = [outs]
    return tuple(c.temps) + tuple(outs), len(outs)


# ---- the emitter --------------------------------------------------------------------------------

class Emitter:
    def __init__(self, path, world, single, ranks):
        self.path, self.world, self.single, self.ranks = path, world, single, ranks
        self.an = {id(single): Analysis(single)}
        for tr in ranks:
            self.an[id(tr)] = Analysis(tr)
        self.model_consts = []   # (name, value, loc)
        self.const_names = {}    # (id(trace), vid) -> text
        self.plan_consts = {}    # model const name -> [Layout]: those every match fits
        self.counter = 0
        self.used = set()
        self.cuts = None         # cuts.CutPlan, once the mesh is known
        self.buggy = False       # some captured output fits no layout of its model value
        self.model_defined = set()   # names the model's statements define
        # the mesh first: its axis names are taken before any generated name
        self.mesh = infer_mesh(ranks, world, registered_names([single] + list(ranks)))
        self.used.update(self.mesh.names)

    def fresh(self):
        while True:
            self.counter += 1
            n = "t%d" % self.counter
            if n not in self.used:
                self.used.add(n)
                return n

    # ---- constants

    def const_text(self, tr, v, loc):
        key = (id(tr), v)
        if key in self.const_names:
            return self.const_names[key]
        val = tr.vals[v]
        x = val.value
        if x is None:
            raise MapError("a tensor read before it was written (torch.empty)")
        if x.numel() > 0 and bool((x == x.reshape(-1)[0]).all()):
            q = rational(x.reshape(-1)[0].item(), f32=(x.dtype == torch.float32))
            if x.dtype == torch.bool:
                q = Fraction(int(bool(x.reshape(-1)[0])))
            t = frac_text(q)
            if len(val.shape):
                t = "expand(%s, [%s])" % (t, ", ".join(str(s) for s in val.shape))
        else:
            if x.dtype == torch.bool or not x.is_floating_point():
                raise MapError("a constant %s tensor that is not constant-filled (a mask or "
                               "indices used as values)" % val.dtype)
            if not bool(torch.isfinite(x).all()):
                raise MapError("a constant tensor with a non-finite element (inf, nan), which "
                               "has no rational value")
            t = self.model_const(x, loc, val.shape) if tr is self.single else \
                self.match_const(tr, x)
        self.const_names[key] = t
        return t

    def model_const(self, x, loc, shape):
        """The model input standing for a constant tensor of single(): one per distinct value
        (two equal tables are one input, so that which of them a rank's constant is matched
        to does not matter)."""
        for name, mv, _, _ in self.model_consts:
            if same(mv, x):
                return name
        k = len(self.model_consts) + 1
        while "c%d" % k in self.used:
            k += 1
        name = "c%d" % k
        self.used.add(name)
        self.model_consts.append((name, x, loc, shape))
        return name

    def match_const(self, tr, x):
        """The model constant whose shard on this rank x is, exactly (the plan reads the
        model's constant in its place, so anything but equality would check another
        program).  The layout stays open among those that fit every rank matched so far;
        a constant that is a shard of two different constants is refused (which one the code
        means is not in the values, and a wrong pick is a false NOT EQUIVALENT)."""
        found = []
        for name, mv, _, _ in self.model_consts:
            Ls = shard_layouts(self.mesh, mv, x, tr.rank)
            prev = self.plan_consts.get(name)
            if prev is not None:
                Ls = [L for L in Ls if any(L.dims == P.dims for P in prev)]
            if Ls:
                found.append((name, Ls))
        if not found:
            raise MapError("a constant tensor of shape %s on rank %d that is no shard of a "
                           "constant of single() (constants are matched by their exact "
                           "values)" % (list(x.shape), tr.rank))
        if len(found) > 1:
            raise MapError("a constant tensor of shape %s on rank %d is a shard of several "
                           "different constants of single() (%s): the values do not say which "
                           "one the code uses" % (list(x.shape), tr.rank,
                                                  ", ".join(n for n, _ in found)))
        name, Ls = found[0]
        self.plan_consts[name] = Ls
        return name

    # ---- cut points

    def cut_text(self, c, op):
        """A cut operator: its input, with the lineage cuts.py proposed (scaled back when the
        relation has a scale), or just its input (a dropped cut, and every cut of the model)."""
        x = c.t(op.args[0][1])
        rel = self.cuts.text.get(id(op)) if self.cuts is not None and c.tr is not self.single \
            else None
        if rel is None:
            return x
        text, scale = rel
        if scale == 1:
            return "%s ~ %s" % (x, text)
        tmp = c.temp("(%s * %s) ~ %s" % (x, frac_text(1 / scale), text))
        return "(%s * %s)" % (tmp, frac_text(scale))

    # ---- collectives

    def comm_text(self, c, op, mesh):
        if mesh is None:
            raise MapError("a collective (%s) in single()" % op.fn)
        g = op.comm["group"]
        axes = mesh.axes_of(g)
        if axes is None:
            raise MapError("process group %s is not a group of mesh axes (%s)" % (
                g, ", ".join("%s=%d" % a for a in mesh.axes)))
        ins = [x for x in dict(op.args)["tensors"]]
        outs = list(flat_outs(op.outs))
        ax = mesh.axes_text(axes)
        fn = op.fn
        red = op.comm.get("op", "sum")
        if red not in ("sum", "avg", "max", "min"):
            raise MapError("reduction %s" % red)
        if fn in ("send", "recv"):
            peer = op.comm["peer"]
            me, pc = mesh.coords(c.tr.rank), mesh.coords(peer)
            spec = ", ".join("%s = %d" % (mesh.names[i], pc[i]) for i in range(len(pc))
                             if pc[i] != me[i])
            if fn == "send":
                return "send(%s, %s)" % (c.t(ins[0]), spec)
            return "recv(%s)" % spec
        if not axes:
            # a group of one rank: every collective is the identity (a copy)
            if fn == "all_gather":
                return [c.t(ins[0])]
            return [c.t(ins[0])] * len(outs)
        if fn == "all_reduce":
            return "all_reduce(%s, %s, %s)" % (c.t(ins[0]), red, ax)
        if fn == "broadcast":
            return "broadcast(%s, %d, %s)" % (c.t(ins[0]), g.index(op.comm["root"]), ax)
        if fn == "all_gather_into_tensor":
            return "all_gather(%s, 0, %s)" % (c.t(ins[0]), ax)
        if fn == "reduce_scatter_tensor":
            return "reduce_scatter(%s, 0, %s, %s)" % (c.t(ins[0]), red, ax)
        if fn == "all_gather":
            s = list(c.shape(ins[0]))
            x = "reshape(%s, [%s])" % (c.t(ins[0]), ", ".join(str(k) for k in [1] + s))
            tmp = c.temp("all_gather(%s, 0, %s)" % (x, ax))
            return ["reshape(slice(%s, 0, %d, %d), [%s])" % (tmp, j, j + 1,
                                                            ", ".join(str(k) for k in s))
                    for j in range(len(outs))]
        if fn == "reduce_scatter":
            s = list(c.shape(ins[0]))
            parts = ", ".join("reshape(%s, [%s])" % (c.t(x), ", ".join(str(k) for k in [1] + s))
                              for x in ins)
            return "reshape(reduce_scatter(concat(%s, dim = 0), 0, %s, %s), [%s])" % (
                parts, red, ax, ", ".join(str(k) for k in s))
        if fn == "all_to_all_single":
            if any(x is not None for x in op.comm.get("split", (None, None))):
                raise MapError("all_to_all_single with split sizes")
            return "all_to_all(%s, 0, 0, %s)" % (c.t(ins[0]), ax)
        if fn == "reduce":
            return "reduce(%s, %s, %d, %s)" % (c.t(ins[0]), red, g.index(op.comm["root"]), ax)
        raise MapError("collective %s" % fn)

    # ---- the model

    def model_text(self):
        tr = self.single
        an = self.an[id(tr)]
        self.model_names = names = {}
        body = []
        decls = []
        for name, vid in tr.inputs.items():
            names[vid] = self._leaf_name(name)
            decls.append(("input", names[vid], tr.vals[vid]))
        for name, vid in tr.params.items():
            names[vid] = self._leaf_name(name)
            decls.append(("param", names[vid], tr.vals[vid]))
        if not tr.params:
            raise EmitError("single() registers no parameter (sp.params(model))")
        hints = self._model_hints()
        for i in an.needed(trace_roots(tr)):
            op = tr.ops[i]
            lines, nout = render(self, tr, names, op)
            self._bind(body, lines, nout, op, [names], [tr], "  ", hints=hints)
        outs = []
        for name, vid, loc in tr.outputs:
            outs.append(self._model_out(body, mangle(name), vid, names, loc))
        for name in tr.params:
            v, g = tr.final[name]
            if g is None:
                raise EmitError("single(): parameter '%s' has no gradient after the step" % name)
            pn = self._leaf_name(name)
            outs.append(self._model_out(body, "grad." + pn, g, names, None))
            outs.append(self._model_out(body, pn + ".new", v, names, None))
        self.model_outputs = outs
        text = ["model single {"]
        for kind, n, val in decls:
            text.append("  %s %s : %s%s" % (kind, n, _shape(val.shape), _src(val.loc)))
        for n, x, loc, shape in self.model_consts:
            text.append("  input %s : %s%s    # a constant of the code" % (n, _shape(shape),
                                                                            _src(loc)))
        for ln in body:
            m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_.]*) = ", ln)
            if m:
                self.model_defined.add(m.group(1))
        text += body
        text.append("  output " + ", ".join(n for n, _ in outs))
        text.append("}")
        return text

    def _model_hints(self):
        """Names for the model values that cut points target (reports name them): a module's
        output `out.PATH` (`out.PATH_K` for its call K > 0), its gradient `grad.out.PATH`, a
        parameter's gradient `grad.P` (the output's name)."""
        hints = {}
        for op in self.single.ops:
            if op.fn != "cut":
                continue
            k = op.cut["key"]
            if k[0] in ("mod", "mod_grad"):
                n = "out." + mangle(k[1]) + ("_%d" % k[2] if k[2] else "")
                n = n if k[0] == "mod" else "grad." + n
            elif k[0] == "opt_grad" and k[2] == 0:
                n = "grad." + mangle(k[1])
            else:
                continue
            hints.setdefault(op.args[0][1][1], n)
        return hints

    def _leaf_name(self, name):
        n = mangle(name)
        self.used.add(n)
        return n

    def _model_out(self, body, oname, vid, names, loc):
        if oname in self.used and names.get(vid) != oname:
            raise EmitError("output name '%s' is used twice" % oname)
        src = names.get(vid)
        if src is None:
            src = self.const_text(self.single, vid, loc)
        self.used.add(oname)
        if src != oname:
            body.append("  %s = %s%s" % (oname, src, _src(loc or self.single.vals[vid].loc)))
        names.setdefault(("out", oname), vid)
        return (oname, vid)

    def _bind(self, body, lines, nout, op, names_list, outs_traces, indent, ops=None,
              out_names=None, hints=None):
        """Emit the lines of one operator (for one or several traces with the same text) and
        name its outputs in every trace; out_names: the names its outputs must get (a
        statement each, even for an alias); hints: vid -> a name for the statement that
        defines it, when still free."""
        tnames = []
        outv = list(flat_outs(op.outs))
        for i, ln in enumerate(lines):
            for j in range(len(tnames) - 1, -1, -1):
                ln = ln.replace("$%d" % j, tnames[j])
            k = i - (len(lines) - nout)
            if k >= 0 and out_names is not None:
                n = out_names[k]
            elif k >= 0 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", ln):
                tnames.append(ln)   # an alias: no statement
                continue
            elif k >= 0 and hints and k < len(outv) and hints.get(outv[k]) not in (None,) and \
                    hints[outv[k]] not in self.used:
                n = hints[outv[k]]
                self.used.add(n)
            else:
                n = self.fresh()
            tnames.append(n)
            body.append("%s%s = %s%s" % (indent, n, ln, _src(op.loc)))
        outn = tnames[len(lines) - nout:]
        for k, (names, tr) in enumerate(zip(names_list, outs_traces)):
            o = ops[k] if ops else op
            for vid, n in zip(flat_outs(o.outs), outn):
                names[vid] = n

    # ---- the plan

    def plan_text(self):
        mesh = self.mesh
        R = len(self.ranks)
        names = [dict() for _ in range(R)]
        decls = []
        # registered inputs and parameters: layouts from the values
        for kind in ("input", "param"):
            regs = {}
            for tr in self.ranks:
                for name, vid in (tr.inputs if kind == "input" else tr.params).items():
                    regs.setdefault(name, {})[tr.rank] = (vid, tr)
            mod = self.single.inputs if kind == "input" else self.single.params
            for name, per in regs.items():
                if name not in mod:
                    r0 = min(per)
                    raise EmitError("%s: %s '%s' registered in parallel() but not in single()" % (
                        per[r0][1].vals[per[r0][0]].loc, kind, name))
                mv = self.single.vals[mod[name]].value
                L = infer_layout(mesh, mv, {r: tr.vals[v].value for r, (v, tr) in per.items()},
                                 exact=True)
                if L is None:
                    r0 = min(per)
                    raise EmitError(
                        "%s: %s '%s' (shape %s on rank %d) is not a shard or a replica of "
                        "single()'s '%s' (shape %s) on the mesh %s" % (
                            per[r0][1].vals[per[r0][0]].loc, kind, name,
                            list(per[r0][1].vals[per[r0][0]].shape), r0, name, list(mv.shape),
                            ", ".join("%s=%d" % a for a in mesh.axes)))
                n = mangle(name)
                decls.append("  %s : %s%s" % (n, L.text(mesh, mv.shape),
                                              _src(per[min(per)][1].vals[per[min(per)][0]].loc)))
                for r, (v, tr) in per.items():
                    names[r][v] = n
        for name in self.single.params:
            if not any(name in tr.params for tr in self.ranks):
                raise EmitError("parameter '%s' of single() is registered on no rank of "
                                "parallel()" % name)
        self.buggy = not self._outputs_fit()
        self.cuts = CutPlan(self).run()
        seqs = []
        for tr in self.ranks:
            an = self.an[id(tr)]
            seqs.append(an.needed(trace_roots(tr)))
        body = self._merge(sends_in_receive_order(self.ranks, seqs), names)
        outs = self._plan_outputs(names)
        text = ["plan parallel of single {",
                "  mesh " + ", ".join("%s = %d" % a for a in mesh.axes)]
        text += decls
        for n, Ls in self.plan_consts.items():
            shape = [s for (m, _, _, s) in self.model_consts if m == n][0]
            text.append("  %s : %s" % (n, Ls[0].text(mesh, shape)))
        text += body
        text += outs
        text.append("}")
        return text

    def _on_text(self, S):
        mesh = self.mesh
        S = sorted(S)
        if len(S) == mesh.nranks:
            return None
        cs = [mesh.coords(r) for r in S]
        fixed = [i for i in range(len(mesh.sizes)) if all(c[i] == cs[0][i] for c in cs)]
        match = [r for r in range(mesh.nranks)
                 if all(mesh.coords(r)[i] == cs[0][i] for i in fixed)]
        if match == S:
            return ", ".join("%s = %d" % (mesh.names[i], cs[0][i]) for i in fixed)
        return False

    def _split_on(self, S, op_of):
        """Rank sets, each expressible by an `on` block, covering S (collectives stay whole)."""
        t = self._on_text(S)
        if t is not False:
            return [sorted(S)]
        parts = []
        left = set(S)
        for r in sorted(S):
            if r not in left:
                continue
            op = op_of(r)
            g = sorted(op.comm["group"]) if op.comm and op.fn not in ("send", "recv") else [r]
            parts.append(g)
            left -= set(g)
        return parts

    def _merge(self, seqs, names):
        mesh = self.mesh
        R = len(self.ranks)
        pos = [0] * R
        body = []
        sent = {}
        cur_on = [None]

        def op_of(r):
            return self.ranks[r].ops[seqs[r][pos[r]]]

        def block(on):
            if on != cur_on[0]:
                if cur_on[0] is not None:
                    body.append("  }")
                if on is not None:
                    body.append("  on %s {" % on)
                cur_on[0] = on
            return "    " if on is not None else "  "

        def emit(rs, lines, nout, out_names=None):
            for part in self._split_on(rs, op_of):
                ind = block(self._on_text(part))
                ops = [op_of(r) for r in part]
                self._bind(body, lines, nout, ops[0], [names[r] for r in part],
                           [self.ranks[r] for r in part], ind, ops, out_names)
                for r in part:
                    o = op_of(r)
                    if o.fn == "send":
                        k = (r, o.comm["peer"])
                        sent[k] = sent.get(k, 0) + 1
                    elif o.fn == "recv":
                        k = (o.comm["peer"], r)
                        sent[k] -= 1
                    pos[r] += 1

        def emit_aligned(subs):
            """The same statement of the program on several ranks, written differently (a
            rank's own slice, its own inputs): one `on` block per text, the outputs under
            shared names, so that the statements after it are the same text again."""
            subs = sorted(subs.items(), key=lambda kv: kv[1][0])
            if len(subs) == 1:
                emit(subs[0][1], subs[0][0][0], subs[0][0][1])
                return
            nout = subs[0][0][1]
            shared = [self.fresh() for _ in range(nout)]
            for sig, rs in subs:
                emit(rs, sig[0], nout, shared)

        def unify_inputs(rs):
            """Give the tensors a collective reads one name on all its members (per-rank
            copies into a shared name), so that it is one statement."""
            ops = {r: op_of(r) for r in rs}
            ins = {r: [v for _, a in ops[r].args for v in refs(a)] for r in rs}
            for k in range(len(ins[rs[0]])):
                texts = {}
                for r in rs:
                    v = ins[r][k]
                    t = names[r].get(v) or self.const_text(self.ranks[r], v, ops[r].loc)
                    texts.setdefault(t, []).append(r)
                if len(texts) < 2:
                    continue
                u = self.fresh()
                for t, trs in sorted(texts.items(), key=lambda kv: kv[1][0]):
                    for part in self._split_on(trs, None):
                        ind = block(self._on_text(part))
                        body.append("%s%s = %s%s" % (ind, u, t, _src(ops[part[0]].loc)))
                for r in rs:
                    names[r][ins[r][k]] = u

        while True:
            pending = [r for r in range(R) if pos[r] < len(seqs[r])]
            if not pending:
                break
            groups = {}     # (fn, line, ...) -> {text: ranks}
            for r in pending:
                op = op_of(r)
                if op.fn in COMMS and op.fn != "send":
                    continue
                sig = render(self, self.ranks[r], names[r], op, mesh)
                key = (op.fn, op.loc, len(sig[0]), sig[1],
                       tuple(self.ranks[r].vals[v].shape for v in flat_outs(op.outs)))
                groups.setdefault(key, {}).setdefault(sig, []).append(r)
            if not groups:
                for r in pending:
                    op = op_of(r)
                    if op.fn == "recv":
                        if sent.get((op.comm["peer"], r), 0) <= 0:
                            continue
                        key = ("recv", r)
                    else:
                        g = op.comm["group"]
                        if not all(q in pending and op_of(q).fn == op.fn and
                                   sorted(op_of(q).comm["group"]) == sorted(g) for q in g):
                            continue
                        key = (op.fn, op.loc, mesh.axes_of(g))
                    groups.setdefault(key, []).append(r)
                if groups:
                    # the collective that most ranks can go on with (every group complete),
                    # else the receive of the lowest rank
                    key = max(groups, key=lambda k: (len(groups[k]), -min(groups[k])))
                    rs = groups[key]
                    if key[0] != "recv":
                        unify_inputs(rs)
                    subs = {}
                    for r in rs:
                        sig = render(self, self.ranks[r], names[r], op_of(r), mesh)
                        subs.setdefault(sig, []).append(r)
                    groups = {key: subs}
            if not groups:
                desc = "; ".join("rank %d waits in %s at %s" % (r, op_of(r).fn, op_of(r).loc)
                                 for r in pending)
                raise EmitError("the ranks' collectives do not match up: " + desc)
            key = max(groups, key=lambda k: (sum(len(rs) for rs in groups[k].values()),
                                             -min(min(rs) for rs in groups[k].values())))
            emit_aligned(groups[key])
        if cur_on[0] is not None:
            body.append("  }")
        # blocks left empty (an operator whose outputs are all aliases)
        out = []
        for ln in body:
            if ln == "  }" and out and out[-1].startswith("  on ") and out[-1].endswith("{"):
                out.pop()
                continue
            out.append(ln)
        return out

    def _output_values(self):
        """output name -> {rank: (vid, trace, kind)}, kind loss (a registered output), grad
        or new."""
        want = {}
        for tr in self.ranks:
            for name, vid, loc in tr.outputs:
                on = mangle(name)
                if on not in dict(self.model_outputs):
                    raise EmitError("%s: output '%s' is registered in parallel() but not in "
                                    "single()" % (loc, name))
                want.setdefault(on, {})[tr.rank] = (vid, tr, "loss")
            for name in tr.params:
                v, g = tr.final[name]
                pn = mangle(name)
                if g is None:
                    raise EmitError("parallel(rank=%d): parameter '%s' has no gradient after the "
                                    "step" % (tr.rank, name))
                want.setdefault("grad." + pn, {})[tr.rank] = (g, tr, "grad")
                want.setdefault(pn + ".new", {})[tr.rank] = (v, tr, "new")
        return want

    def _outputs_fit(self):
        """Does every output's captured value fit a layout of its model value?  (No: the
        capture itself shows a wrong output, and cuts.py proposes contracts.)"""
        model_vid = dict(self.model_outputs)
        for on, per in self._output_values().items():
            kind = next(iter(per.values()))[2]
            pv = {r: tr.vals[v].value for r, (v, tr, _) in per.items()}
            if infer_layout(self.mesh, self.single.vals[model_vid[on]].value, pv,
                            partial_ok=(kind == "loss")) is None:
                return False
        return True

    def _plan_outputs(self, names):
        mesh = self.mesh
        want = self._output_values()
        model_vid = dict(self.model_outputs)
        lines = []
        # in the order of the statements that define them
        items = []
        for on, per in want.items():
            mv = self.single.vals[model_vid[on]].value
            kind = next(iter(per.values()))[2]
            L = infer_layout(mesh, mv, {r: tr.vals[v].value for r, (v, tr, _) in per.items()},
                             partial_ok=(kind == "loss"))
            if L is None and kind != "loss":
                pname = on[5:] if kind == "grad" else on[:-4]
                L = self._param_layout(pname)
            if L is None:
                r0 = min(per)
                L = shape_layout(mesh, mv.shape, per[r0][1].vals[per[r0][0]].shape, list(per))
            if L is None:
                L = Layout([()] * len(mv.shape))
            groups = {}
            for r, (v, tr, _) in sorted(per.items()):
                n = names[r].get(v)
                if n is None:
                    n = self.const_text(tr, v, None)
                groups.setdefault(n, []).append(r)
            for n, rs in groups.items():
                items.append((self._def_index(n), on, n, rs, L.text(mesh, mv.shape)))
        items.sort(key=lambda x: x[0])
        for _, on, n, rs, lt in items:
            for part in self._split_on(rs, None):
                block = self._on_text(part)
                if block is None:
                    lines.append("  output %s = %s : %s" % (on, n, lt))
                else:
                    lines.append("  on %s { output %s = %s : %s }" % (block, on, n, lt))
        return lines

    def _param_layout(self, pname):
        for tr in self.ranks:
            for name, vid in tr.params.items():
                if mangle(name) == pname:
                    per = {t.rank: t.vals[t.params[name]].value for t in self.ranks
                           if name in t.params}
                    return infer_layout(self.mesh, self.single.vals[self.single.params[name]].value,
                                        per)
        return None

    def _def_index(self, n):
        m = re.fullmatch(r"t([0-9]+)", n)
        return int(m.group(1)) if m else -1


def _shape(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _src(loc):
    return "    #@ %s" % loc if loc and loc != "?" else ""


def emit(path, world, single, ranks, command):
    em = Emitter(path, world, single, ranks)
    model = em.model_text()
    plan = em.plan_text()
    head = ["# Generated by `%s`: do not edit, run it again." % command,
            "# model single: single() as PyTorch ran it (forward, autograd's backward and the",
            "# optimizer, operator by operator); plan parallel: parallel(rank, %d) on every rank." %
            world,
            "# '#@ FILE:LINE' after a statement is the Python line that ran it (docs/torch.md).",
            "# %d cut points ('~ T : layout': module outputs and their gradients, custom Function" %
            sum(1 for ln in plan if " ~ " in ln),
            "# boundaries, the gradients the optimizer reads), inferred from the values%s" % (
                "." if not em.buggy else
                "; the\n# capture shows a wrong output, so these state what the value must be "
                "(contracts):")]
    if em.buggy:
        head += em.cuts.contract_lines()
    head.append("")
    return "\n".join(head + model + [""] + plan) + "\n"
