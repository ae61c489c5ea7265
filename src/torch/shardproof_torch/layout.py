"""layout.py: the device mesh, layouts, and the relations between a model value and the values
the ranks hold, inferred from concrete values.

A relation says: on every rank, the plan value is `scale` times that rank's part of the model
tensor (or of rows lo..hi of its dim 0) under a layout, where a layout shards dims over mesh
axes and may leave a pending reduction (partial sum or average) over other axes.  Values are
compared in float64 with a relative tolerance (the capture runs float32) where the relation is a
proposal that `check` proves (outputs, cut points), and exactly where it is assumed (registered
inputs and parameters, constants: `same`).
"""

import itertools
from fractions import Fraction

import torch

RTOL, ATOL = 1e-4, 1e-5


# ---- the mesh ---------------------------------------------------------------------------------

class Mesh:
    def __init__(self, axes):
        self.axes = [(str(a), int(n)) for a, n in axes]
        self.sizes = [n for _, n in self.axes]
        self.names = [a for a, _ in self.axes]
        self.nranks = 1
        for n in self.sizes:
            self.nranks *= n

    def coords(self, r):
        c = []
        for n in reversed(self.sizes):
            c.append(r % n)
            r //= n
        return list(reversed(c))

    def rank(self, coords):
        r = 0
        for c, n in zip(coords, self.sizes):
            r = r * n + c
        return r

    def group(self, r, axes):
        """The ranks that agree with r on every axis not in axes, in rank order."""
        c = self.coords(r)
        return [q for q in range(self.nranks)
                if all(self.coords(q)[i] == c[i] for i in range(len(c)) if i not in axes)]

    def axes_of(self, ranks):
        """The axes (indexes) a process group spans, or None."""
        ranks = sorted(ranks)
        if len(ranks) == 1:
            return ()
        for k in range(1, len(self.sizes) + 1):
            for axes in itertools.combinations(range(len(self.sizes)), k):
                if self.group(ranks[0], axes) == ranks:
                    return axes
        return None

    def axes_text(self, axes):
        if len(axes) == 1:
            return self.names[axes[0]]
        return "[" + ", ".join(self.names[a] for a in axes) + "]"


# ---- layouts ----------------------------------------------------------------------------------

def close(a, b):
    a = a.detach().to(torch.float64)
    b = b.detach().to(torch.float64)
    if a.shape != b.shape:
        return False
    scale = max(1.0, float(a.abs().max()) if a.numel() else 1.0)
    return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL * scale))


def same(a, b):
    """a and b hold exactly the same finite values (as rationals: a float converts to float64
    exactly).  Where a value is assumed rather than proven (a registered tensor's layout, a
    constant matched to the model's), nothing but equality is sound."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    if not (a.is_floating_point() and b.is_floating_point()):
        return False
    a = a.detach().to(torch.float64)
    b = b.detach().to(torch.float64)
    return bool(torch.isfinite(a).all()) and bool(torch.equal(a, b))


class Layout:
    def __init__(self, dims, partial=None):
        self.dims = dims            # per dim: tuple of axis indexes (major to minor)
        self.partial = partial      # None or (op, axes)

    def shard(self, mesh, value, r):
        c = mesh.coords(r)
        for d, axes in enumerate(self.dims):
            if not axes:
                continue
            n, idx = 1, 0
            for a in axes:
                idx = idx * mesh.sizes[a] + c[a]
                n *= mesh.sizes[a]
            k = value.shape[d] // n
            value = value.narrow(d, idx * k, k)
        return value

    def text(self, mesh, shape):
        ds = []
        for s, axes in zip(shape, self.dims):
            if not axes:
                ds.append(str(s))
            elif len(axes) == 1:
                ds.append("%d@%s" % (s, mesh.names[axes[0]]))
            else:
                ds.append("%d@(%s)" % (s, ",".join(mesh.names[a] for a in axes)))
        t = "[" + ", ".join(ds) + "]"
        if self.partial:
            op, axes = self.partial
            t += " partial(%s@%s)" % (op, mesh.names[axes[0]] if len(axes) == 1 else
                                      "(" + ",".join(mesh.names[a] for a in axes) + ")")
        return t


def _dim_choices(mesh, full, local):
    if local == full:
        return [()]
    if local == 0 or full % local:
        return []
    f = full // local
    res = []
    for k in (1, 2):
        for axes in itertools.permutations(range(len(mesh.sizes)), k):
            n = 1
            for a in axes:
                n *= mesh.sizes[a]
            if n == f:
                res.append(tuple(sorted(axes)) if k > 1 else axes)
    return sorted(set(res))


def _shard_cands(mesh, shape, local):
    choices = [_dim_choices(mesh, f, l) for f, l in zip(shape, local)]
    cands = []
    for dims in itertools.product(*choices):
        used = [a for ax in dims for a in ax]
        if len(used) != len(set(used)):
            continue
        cands.append(Layout(list(dims)))
    return cands


def shard_layouts(mesh, model_value, local_value, rank):
    """Every layout (without a pending reduction) under which rank's shard of model_value is
    exactly local_value."""
    if len(local_value.shape) != len(model_value.shape):
        return []
    return [L for L in _shard_cands(mesh, tuple(model_value.shape), tuple(local_value.shape))
            if same(L.shard(mesh, model_value, rank), local_value)]


def infer_layout(mesh, model_value, plan_values, partial_ok=False, exact=False):
    """A Layout such that each rank's plan value is its shard of the model value (or the
    reduction of its group's values, with partial_ok), or None.  exact: the shards equal
    exactly (a registered input or parameter, whose layout the check assumes); otherwise
    within a float tolerance (an output's layout, which the check proves)."""
    ranks = sorted(plan_values)
    shape = tuple(model_value.shape)
    local = tuple(plan_values[ranks[0]].shape)
    if len(local) != len(shape) or any(tuple(plan_values[r].shape) != local for r in ranks):
        return None
    cands = _shard_cands(mesh, shape, local)
    eq = same if exact else close
    for L in cands:
        if all(eq(L.shard(mesh, model_value, r), plan_values[r]) for r in ranks):
            return L
    if not partial_ok:
        return None
    for L in cands:
        used = {a for ax in L.dims for a in ax}
        free = [a for a in range(len(mesh.sizes)) if a not in used]
        for k in range(1, len(free) + 1):
            for axes in itertools.combinations(free, k):
                for op in ("sum", "avg"):
                    if _partial_ok(mesh, L, axes, op, model_value, plan_values):
                        return Layout(L.dims, (op, axes))
    return None


def _partial_ok(mesh, L, axes, op, model_value, plan_values):
    for r in plan_values:
        g = mesh.group(r, axes)
        if any(q not in plan_values for q in g):
            return False
        s = sum(plan_values[q].detach().to(torch.float64) for q in g)
        if op == "avg":
            s = s / len(g)
        if not close(L.shard(mesh, model_value, r), s):
            return False
    return True


# ---- relations (cut points) -------------------------------------------------------------------

class Relation:
    """Every rank's plan value is scale * its part, under layout, of the model tensor (rows
    lo..hi of dim 0 when rows is set)."""

    def __init__(self, layout, scale=Fraction(1), rows=None):
        self.layout = layout
        self.scale = Fraction(scale)
        self.rows = rows

    def key(self):
        L = self.layout
        return (tuple(tuple(a) for a in L.dims), L.partial, self.scale, self.rows)

    def without_partial(self):
        return Relation(Layout(list(self.layout.dims)), self.scale, self.rows)

    def target_shape(self, shape):
        shape = list(shape)
        if self.rows:
            shape[0] = self.rows[1] - self.rows[0]
        return shape

    def text(self, mesh, model_name, shape):
        """`NAME[lo..hi] : layout`, the lineage after `~`."""
        t = model_name
        if self.rows:
            t += "[%d..%d]" % self.rows
        return "%s : %s" % (t, self.layout.text(mesh, self.target_shape(shape)))


def _informative(x):
    """A value that a coincidence is unlikely to match: finite, not all (nearly) zero."""
    x = x.detach().to(torch.float64)
    return x.numel() > 0 and bool(torch.isfinite(x).all()) and float(x.abs().max()) > 1e-6


def _layout_cands(mesh, shape, local, axes_ok):
    choices = [[c for c in _dim_choices(mesh, f, l) if all(a in axes_ok for a in c)]
               for f, l in zip(shape, local)]
    out = []
    for dims in itertools.product(*choices):
        used = [a for ax in dims for a in ax]
        if len(used) == len(set(used)):
            out.append(Layout(list(dims)))
    return out


def spanned_axes(mesh, ranks):
    """The axes whose every group the rank set holds whole (the axes a layout of a value that
    only these ranks hold may use)."""
    rs = set(ranks)
    return [a for a in range(len(mesh.sizes))
            if all(set(mesh.group(r, (a,))) <= rs for r in rs)]


def _group_value(mesh, pv, r, axes):
    g = mesh.group(r, axes)
    if any(q not in pv for q in g):
        return None, 0
    return sum(pv[q].detach().to(torch.float64) for q in g), len(g)


def _scale_of(pairs):
    """The simple rational s with plan = s * model in every (plan, model) pair, or None."""
    best, at = 0.0, None
    for k, (p, m) in enumerate(pairs):
        m64 = m.detach().to(torch.float64).reshape(-1)
        if m64.numel() == 0:
            continue
        i = int(m64.abs().argmax())
        if abs(float(m64[i])) > best:
            best, at = abs(float(m64[i])), (k, i)
    if at is None or best < 1e-6:
        return None
    k, i = at
    s = float(pairs[k][0].detach().to(torch.float64).reshape(-1)[i]) / \
        float(pairs[k][1].detach().to(torch.float64).reshape(-1)[i])
    q = Fraction(s).limit_denominator(64)
    if q == 0 or abs(q.numerator) > 64 or abs(float(q) - s) > 1e-4 * abs(s):
        return None
    if all(close(p.detach().to(torch.float64), m.detach().to(torch.float64) * float(q))
           for p, m in pairs):
        return q
    return None


def _fit_on(mesh, T, pv, free_scale):
    """A Relation (without rows) of the plan values pv to the model tensor T, or None."""
    ranks = sorted(pv)
    local = tuple(pv[ranks[0]].shape)
    axes_ok = spanned_axes(mesh, ranks)
    cands = _layout_cands(mesh, tuple(T.shape), local, axes_ok)
    for L in cands:
        pairs = [(pv[r], L.shard(mesh, T, r)) for r in ranks]
        if not free_scale:
            if all(close(m, p) for p, m in pairs):
                return Relation(L)
            continue
        s = _scale_of(pairs)
        if s is not None and s != 1:
            return Relation(L, s)
    for L in cands:
        used = {a for ax in L.dims for a in ax}
        free = [a for a in axes_ok if a not in used]
        for k in range(1, len(free) + 1):
            for axes in itertools.combinations(free, k):
                pairs, n = [], 0
                for r in ranks:
                    v, n = _group_value(mesh, pv, r, axes)
                    if v is None:
                        break
                    pairs.append((v, L.shard(mesh, T, r)))
                if len(pairs) != len(ranks):
                    continue
                if free_scale:
                    s = _scale_of(pairs)
                    if s is not None and s != 1 and s != n:
                        return Relation(Layout(L.dims, ("sum", axes)), s)
                    continue
                if all(close(m, p) for p, m in pairs):
                    return Relation(Layout(L.dims, ("sum", axes)))
                if all(close(m * n, p) for p, m in pairs):
                    return Relation(Layout(L.dims, ("avg", axes)))
    return None


def shape_layout(mesh, shape, local, ranks):
    """The first layout whose shards have the plan's shape (the layout of a value that fits
    none: `check` then shows where it differs), or None."""
    cands = _layout_cands(mesh, tuple(shape), tuple(local), spanned_axes(mesh, ranks))
    return cands[0] if cands else None


def _row_heights(mesh, local0, full0):
    ks = {1}
    for k in range(1, len(mesh.sizes) + 1):
        for axes in itertools.combinations(range(len(mesh.sizes)), k):
            n = 1
            for a in axes:
                n *= mesh.sizes[a]
            ks.add(n)
    return sorted(h for h in (local0 * k for k in ks) if 0 < h < full0)


def fit_relation(mesh, model_value, plan_values, rows_ok=True, scale_min_elems=2):
    """The Relation under which every rank's value in plan_values (rank -> tensor) is its part
    of model_value, or None.  Tried in order: scale 1 over the whole tensor, then over row
    slices, then a scale that is a simple rational (a gradient under a per-rank mean loss is
    the data-parallel size times the model's); within each, layouts without a pending
    reduction first.  A scale other than 1 is fitted only to values of at least
    scale_min_elems elements (one element fits nearly any simple ratio)."""
    ranks = sorted(plan_values)
    if not ranks:
        return None
    local = tuple(plan_values[ranks[0]].shape)
    shape = tuple(model_value.shape)
    if len(local) != len(shape) or any(tuple(plan_values[r].shape) != local for r in ranks):
        return None
    if not _informative(model_value):
        return None
    if not all(bool(torch.isfinite(v.detach().to(torch.float64)).all())
               for v in plan_values.values()):
        return None
    targets = [(None, model_value)]
    if rows_ok and shape and local[0] < shape[0]:
        for h in _row_heights(mesh, local[0], shape[0]):
            for lo in range(0, shape[0] - h + 1, h):
                targets.append(((lo, lo + h), model_value[lo:lo + h]))
    n = 1
    for d in local:
        n *= d
    for free_scale in (False, True) if n >= scale_min_elems else (False,):
        for rows, T in targets:
            if not _informative(T):
                continue
            rel = _fit_on(mesh, T, plan_values, free_scale)
            if rel is not None:
                rel.rows = rows
                return rel
    return None
