"""cuts.py: relate the cut points of the ranks to model values (lineage `~ T : layout`).

The recorder puts an identity operator "cut" at every module output, at the gradient autograd
computes for it, at the boundaries of custom autograd.Functions and at the gradients an
optimizer reads (capture.py).  Here each cut point of the plan gets its model counterpart and
a relation inferred from the concrete values, or is dropped:

* a module output (its gradient) pairs with the model's output (gradient) of the module with
  the same path: the same call, or, when the plan calls the module more often (micro-batches),
  the model's first call and a row slice of it;
* an output of a Function's forward pairs with the model value of one of its inputs, or of a
  module output, whichever the values fit;
* the gradient a Function's backward returns for an input pairs with the model's gradient of
  that input's counterpart (a module output);
* the gradient an optimizer reads pairs with the model's gradient of the same parameter.

Contracts.  When the capture itself shows a wrong output (some output's values fit no layout),
cut points are proposed by what they must be rather than by what the values show, so that
`check` fails at the first of them and names its line:
* a module output has scale 1 (the forward computes the model's values);
* the gradient of a module output has the output's layout without a pending reduction (the
  gradient of a partial sum is the whole gradient), at the scale the registered loss implies
  (a per-rank mean loss, partial(avg@dp), makes every activation gradient dp times the model's;
  else 1);
* the gradient a Function's backward returns has the layout of the input it belongs to,
  without a pending reduction (Megatron's regions exist to make it so), at that scale;
* the gradient an optimizer reads has the layout of its parameter and scale 1.
Otherwise the values decide (a correct program that reduces later is related as it is).
Every proposal is proven by `check`; a wrong one costs a failing stage, never a wrong
EQUIVALENT.
"""

from fractions import Fraction

from .layout import Relation, fit_relation, infer_layout


class CutPlan:
    """The relation text of every cut operator of the plan (by id of the Op), or None (the
    cut is dropped: an alias)."""

    def __init__(self, em):
        self.em = em
        self.mesh = em.mesh
        self.single = em.single
        self.model = {}       # key -> model vid (cut output in single())
        self.model_key = {}   # model vid -> key
        for op in self.single.ops:
            if op.fn == "cut":
                v = op.outs[0]
                self.model[op.cut["key"]] = v
                self.model_key.setdefault(op.args[0][1][1], op.cut["key"])
                self.model_key.setdefault(v, op.cut["key"])
        self.loss_scale = self._loss_scale()
        self.banned = set()   # model vids never cut (recomputed by the plan)
        self._reset()

    # ---- model side

    def model_name(self, mvid):
        """The model's name of a value a lineage may target (defined by a statement)."""
        n = self.em.model_names.get(mvid)
        if n is None or n not in self.em.model_defined:
            return None
        return n

    def model_grad_of(self, mvid):
        k = self.model_key.get(mvid)
        if k is None or k[0] != "mod":
            return None
        return self.model.get(("mod_grad",) + tuple(k[1:]))

    def model_cands(self, key):
        """The model's cut of the same key, then of the first call (a module the plan calls
        once per micro-batch pairs with rows of the model's one call)."""
        out = []
        for k in (key, (key[0], key[1], 0)):
            v = self.model.get(k)
            if v is not None and v not in out:
                out.append(v)
        return out

    # ---- the proposals

    def run(self):
        """Propose every cut point; a model value that some rank recomputes (activation
        checkpointing) is then never cut: the plan's backward reads the recomputation while
        the model's reads the value itself, so no cut of it can be proven."""
        while True:
            self._reset()
            self._run_once()
            if self.conflicts <= self.banned:
                return self
            self.banned |= self.conflicts

    def _reset(self):
        self.text = {}         # id(op) -> (lineage text after `~`, scale), or None
        self.rel_of = {}       # (rank, plan vid) -> (model vid, Relation): cut inputs, outputs
        self.grad_scales = {}  # scale -> count, over the fitted module-gradient cut points
        self.proposed = []     # (key, model name, relation text, how, Python lines), in order
        self.crossed = {}      # (rank, model vid) -> [(rows, cut output vid)]
        self.rel_by_key = {}   # key -> the Relation proposed
        self.conflicts = set()  # model vids the plan relates again from other values

    def _run_once(self):
        groups = {}   # key -> {rank: op}
        order = {}
        for tr in self.em.ranks:
            for i, op in enumerate(tr.ops):
                if op.fn != "cut":
                    continue
                k = op.cut["key"]
                groups.setdefault(k, {})[tr.rank] = op
                order.setdefault(k, (i, tr.rank))
        for k in sorted(groups, key=lambda k: order[k]):
            self.propose(k, groups[k])

    def _values(self, per):
        return {r: self.em.ranks[r].vals[op.outs[0]].value for r, op in per.items()}

    def propose(self, key, per):
        kind = key[0]
        pv = self._values(per)
        fit, mvid, contract = None, None, None
        if kind in ("mod", "mod_grad", "opt_grad"):
            for m in self.model_cands(key):
                rel = fit_relation(self.mesh, self.single.vals[m].value, pv)
                if rel is not None:
                    fit, mvid = rel, m
                    break
            if kind == "mod" and fit is not None:
                contract = Relation(fit.layout, 1, fit.rows)
            elif kind == "mod_grad" and fit is not None and self.loss_scale is not None:
                fwd = self.rel_by_key.get(("mod",) + tuple(key[1:]))
                base = fwd if fwd is not None else fit
                contract = Relation(base.without_partial().layout, self.loss_scale, base.rows)
            elif kind == "opt_grad":
                contract = self._opt_contract(key, per)
                if mvid is None and contract is not None:
                    mvid = self.model.get(("opt_grad", key[1], 0))
        elif kind == "fn_out":
            fit, mvid = self._fit_fn_out(per, pv)
        elif kind == "fn_grad":
            r0 = min(per)
            c = self.rel_of.get((r0, per[r0].cut["fn_in"]))
            if c is not None and all(self.rel_of.get((r, op.cut["fn_in"]), (None,))[0] == c[0]
                                     for r, op in per.items()):
                m = self.model_grad_of(c[0])
                if m is not None:
                    mvid = m
                    fit = fit_relation(self.mesh, self.single.vals[m].value, pv)
                    contract = Relation(c[1].without_partial().layout, self._grad_scale(),
                                        c[1].rows)
        rel, how = fit, "values"
        if contract is not None and self.em.buggy and mvid is not None and (
                fit is None or fit.key() != contract.key()):
            rel, how = contract, "contract"
        name = self.model_name(mvid) if mvid is not None else None
        if rel is None or name is None or mvid in self.banned:
            for op in per.values():
                self.text[id(op)] = None
            return
        if kind == "mod_grad" and how == "values":
            self.grad_scales[rel.scale] = self.grad_scales.get(rel.scale, 0) + 1
        if self._recomputed(per, mvid, rel):
            self.conflicts.add(mvid)
            for op in per.values():
                self.text[id(op)] = None
            return
        shape = self.single.vals[mvid].shape
        text = rel.text(self.mesh, name, shape)
        for r, op in per.items():
            self.crossed.setdefault((r, mvid), []).append((rel.rows, op.outs[0]))
            prev = self.rel_of.get((r, op.args[0][1][1]))
            if prev is not None and self.model_name(prev[0]) == name and \
                    prev[1].key() == rel.key():
                self.text[id(op)] = None     # the same cut again (a module and its last child)
            else:
                self.text[id(op)] = (text, rel.scale)
            self.rel_of[(r, op.outs[0])] = (mvid, rel)
            self.rel_of.setdefault((r, op.args[0][1][1]), (mvid, rel))
        locs = sorted({op.loc for op in per.values() if op.loc and self.text[id(op)]})
        if locs:
            self.proposed.append((key, name, text, how, ", ".join(locs)))
        self.rel_by_key[key] = rel

    def _fit_fn_out(self, per, pv):
        """The model value of one of the Function's inputs, or of a module output, that the
        values of its output fit."""
        cands = []
        r0 = min(per)
        for v in per[r0].cut["fn_ins"].values():
            c = self.rel_of.get((r0, v))
            if c is not None and c[0] not in cands:
                cands.append(c[0])
        for k in sorted(self.model, key=lambda k: self.model[k]):
            if k[0] == "mod" and self.model[k] not in cands:
                cands.append(self.model[k])
        for m in cands:
            rel = fit_relation(self.mesh, self.single.vals[m].value, pv)
            if rel is not None:
                return rel, m
        return None, None

    def _recomputed(self, per, mvid, rel):
        """Would this cut relate a model value the plan already crossed (on some of these ranks
        and rows) to a plan value not computed from that crossing?  After a cut the model
        continues from fresh values, so a recomputation (activation checkpointing) cannot be
        related to it again; a value computed from the cut (its all-gather) can."""
        for r, op in per.items():
            tr = self.em.ranks[r]
            for rows, v in self.crossed.get((r, mvid), []):
                if rows is not None and rel.rows is not None and \
                        (rows[1] <= rel.rows[0] or rel.rows[1] <= rows[0]):
                    continue
                if not _depends(tr, op.args[0][1][1], v):
                    return True
        return False

    def contract_lines(self):
        """Comment lines naming the cut points proposed as contracts, and why."""
        why = {"mod": "a module output (scale 1)",
               "mod_grad": "a module output's gradient (the output's layout, the loss's scale)",
               "fn_grad": "the gradient a Function returns (its input's layout)",
               "opt_grad": "the gradient the optimizer reads (its parameter's layout)"}
        return ["#   %s at %s: %s" % (text, loc or "?", why[key[0]])
                for key, name, text, how, loc in self.proposed if how == "contract"]

    def _grad_scale(self):
        if self.loss_scale is not None:
            return self.loss_scale
        if not self.grad_scales:
            return Fraction(1)
        return max(sorted(self.grad_scales), key=lambda s: self.grad_scales[s])

    def _loss_scale(self):
        """The scale of the activation gradients the registered loss implies: a per-rank loss
        whose average over some axes is the model's (a per-rank mean under data parallelism)
        makes every gradient of an activation the product of their sizes times the model's;
        a loss that is the model's on its ranks, or a part of its sum, scale 1.  None when no
        scalar output is registered, or its layout is unclear."""
        from .emit import mangle
        for tr in self.em.ranks:
            for name, _, _ in tr.outputs:
                mvid = dict(self.em.model_outputs).get(mangle(name))
                if mvid is None or self.single.vals[mvid].shape != ():
                    continue
                pv = {}
                for t in self.em.ranks:
                    for n2, v, _ in t.outputs:
                        if n2 == name:
                            pv[t.rank] = t.vals[v].value
                mv = self.single.vals[mvid].value
                rel = fit_relation(self.mesh, mv, pv, rows_ok=False)
                if rel is None:
                    rel = fit_relation(self.mesh, mv, pv, rows_ok=False, scale_min_elems=1)
                    if rel is None or rel.layout.partial:
                        return None
                    return Fraction(1)
                p = rel.layout.partial
                k = 1
                if p and p[0] == "avg":
                    for a in p[1]:
                        k *= self.mesh.sizes[a]
                return Fraction(k)
        return None

    def _opt_contract(self, key, per):
        """The gradient of a parameter has the parameter's layout: the layout under which the
        optimizer's parameter (the registered one, or a shard of it) is the model's."""
        name = key[1]
        mp = self.single.params.get(name)
        if mp is None:
            return None
        pv = {r: self.em.ranks[r].vals[op.cut["param"]].value for r, op in per.items()}
        L = infer_layout(self.mesh, self.single.vals[mp].value, pv)
        if L is None:
            return None
        return Relation(L)


def _depends(tr, vid, on):
    """Is the value vid of trace tr computed from the value on (vid itself included)?  Values
    are numbered in creation order, so the search stays above on."""
    todo, seen = [vid], set()
    while todo:
        v = todo.pop()
        if v == on:
            return True
        if v < on or v in seen:
            continue
        seen.add(v)
        p = tr.vals[v].producer
        if p is None:
            continue
        for _, a in tr.ops[p].args:
            if isinstance(a, tuple) and len(a) == 2 and a[0] == "v":
                todo.append(a[1])
            elif isinstance(a, list):
                todo += [x[1] for x in a if isinstance(x, tuple) and len(x) == 2 and x[0] == "v"]
    return False
