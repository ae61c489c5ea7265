#!/usr/bin/python3
"""diff_plan.py: the plan-level differential fuzzer (issue 11): checker against reference executor.

usage: diff_plan.py [--bin SHARDPROOF] [--seed N] [--mutants K | --cpu-seconds T] [--smoke]
                    [--wall-seconds T] [--out DIR] [--run-seeds 1,2,3] [--check-timeout S]
                    [--run-timeout S] [--max-ms MS] [--no-gen] [--no-corpus] [--only-seed NAME]
                    [--corpus-dir DIR]... [--gen-dp 8,8,16] [--gen-max-ranks N]
                    [--gen-require REGEX] [--cutoff-mutations] [--verbose]
       diff_plan.py --classify FILE.sp [--bin SHARDPROOF] [--plan NAME]
       diff_plan.py --seed N --draw I [--out DIR]      (mutant I of seed N again, saved in DIR/draw/)

Seed plans: docs/examples/*.sp, tests/plans/ok/*.sp, tests/plans/bugs/*.sp (Llama-3, DeepSeek and
llama_layer files with their dims rewritten to small real sizes), and `shardproof gen
llama3|deepseek3` with random parallelism flags and small random dims that keep every
divisibility the configuration needs (a candidate is kept only when the unmutated plan is
EQUIVALENT and the reference run finds no difference).  Each mutant is one seed plan with one to
three seeded random semantic mutations (constants, operators, operands, collectives, rank-
conditional edits, layouts, partial annotations, lineage, statements); with --cutoff-mutations,
mutations aimed at the mesh cutoff instead (terms zero with the checked k members of a cut axis
and not with its real N: Newton's identities over the members, members picked by literal
positions, the axis size as a value, reshapes with the axis size as an extent, avg for sum; only
seeds whose check uses the cut).  Each mutant runs through
`shardproof check --no-cross-check` (the checker alone) and `shardproof run` on a few seeds, both
with timeouts, and the pair of verdicts is classified:

  wrong-equivalent        check EQUIVALENT, run DIFFER (a certified difference at the real sizes)
  shape-reduction         the same, but `check --strict-shapes` says NOT EQUIVALENT: the documented
                          holes of --fast-shapes (docs/soundness.md, "Shape reduction"); the
                          default is --strict-shapes since 2026-12-02, so only a seed plan that
                          asks for --fast-shapes can land here
  unrealizable-cex        check NOT EQUIVALENT (or UNKNOWN for a stage difference it could not
                          lift without the cross-check), every run seed without a difference at
                          the real sizes, and `check` with its cross-check NOT EQUIVALENT
  crash                   a signal, a sanitizer report or exit 4 of either tool
  hang                    a tool past its timeout (check runs with --timeout at 3/4 of it, so a
                          check that hangs has ignored its own budget)
  input-disagreement      one tool rejects the file as bad input (exit 2), the other does not
                          (reported, not a find of the checker's verdicts)

The first four and `hang` are finds; each is saved under OUT/<class>/ (the mutant, both outputs
and a .txt with the mutations and the commands), and the summary prints the verdict-pair table.
Everything is a function of --seed (mutant i uses its own generator seeded with (seed, i)); only
timeouts and max_ms limits depend on the machine.  stdlib only; see fuzz/README.md.
"""
import argparse
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- the language's tokens -------------------------------------------------------------------------

TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\r\f\v]+)
| (?P<comment>\#[^\n]*)
| (?P<nl>\n)
| (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
| (?P<op>\.\.|\+=|<=|>=|==|!=|[=:,;()\[\]{}@~+\-*/%^<>])
| (?P<other>.)
""", re.X)

# A line ending in one of these continues on the next (docs/language.md, "Statements and lines").
CONTINUES = {",", "(", "[", "{", "=", "+=", "+", "-", "*", "/", "%", "^", "<", "<=", ">", ">=",
             "==", "!=", "@", "~", ":", ".."}
BLOCK_WORDS = {"model", "plan", "func", "on", "if", "else", "for"}
COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce"}
REDUCTIONS = ["sum", "avg", "max", "min"]


class Tok:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end


def lex(text):
    """Tokens without blanks and comments; newlines kept as 'nl'."""
    out = []
    for m in TOKEN_RE.finditer(text):
        k = m.lastgroup
        if k in ("ws", "comment"):
            continue
        out.append(Tok(k, m.group(), m.start(), m.end()))
    return out


class Stmt:
    """One statement: its tokens (no newlines), the span [start, end) of the text and its context
    (the kinds of the enclosing blocks, outermost first)."""
    __slots__ = ("toks", "start", "end", "ctx", "kind", "owner")

    def __init__(self, toks, ctx, owner):
        self.toks = toks
        self.start, self.end = toks[0].start, toks[-1].end
        self.ctx = tuple(ctx)
        self.owner = owner
        self.kind = stmt_kind(toks)

    def text(self, src):
        return src[self.start:self.end]


def stmt_kind(toks):
    t0 = toks[0].text
    if toks[-1].text == "{":
        return "header"
    if t0 in ("mesh", "output", "dim", "input", "param", "train", "return"):
        return t0
    if t0 == "omit" and len(toks) > 1 and toks[1].kind == "ident":
        return "omit"
    depth = 0
    for t in toks:
        if t.text in "([":
            depth += 1
        elif t.text in ")]":
            depth -= 1
        elif depth == 0 and t.text == "=":
            return "assign"
        elif depth == 0 and t.text == "+=":
            return "accum"
        elif depth == 0 and t.text == ":":
            return "layout"
        elif depth == 0 and t.text == "~":
            break
    if toks[0].kind == "ident" and len(toks) > 1 and toks[1].text == "(":
        return "call"
    return "other"


def statements(text):
    """Split a file into statements (lenient: a newline inside brackets continues)."""
    toks = lex(text)
    out, cur, ctx, owner = [], [], [], []
    depth = 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "nl":
            nxt = next((u for u in toks[i + 1:] if u.kind != "nl"), None)
            if cur and depth == 0 and cur[-1].text not in CONTINUES and not (nxt and nxt.text == "~"):
                out.append(Stmt(cur, ctx, owner[-1] if owner else None))
                cur = []
            i += 1
            continue
        if t.text == ";" and depth == 0:
            if cur:
                out.append(Stmt(cur, ctx, owner[-1] if owner else None))
            cur = []
        elif t.text == "{" and depth == 0:
            cur.append(t)
            head = cur[0].text if cur[0].text in BLOCK_WORDS else "block"
            if cur[0].text == "}":
                head = cur[1].text if len(cur) > 1 else "block"
            out.append(Stmt(cur, ctx, owner[-1] if owner else None))
            if head in ("model", "plan", "func"):
                owner.append((head, cur[1].text if len(cur) > 1 else "?"))
            else:
                owner.append(owner[-1] if owner else None)
            ctx.append(head)
            cur = []
        elif t.text == "}" and depth == 0:
            if cur:
                out.append(Stmt(cur, ctx, owner[-1] if owner else None))
            cur = []
            if ctx:
                ctx.pop()
                owner.pop()
        else:
            if t.text in "([":
                depth += 1
            elif t.text in ")]":
                depth = max(0, depth - 1)
            cur.append(t)
        i += 1
    if cur:
        out.append(Stmt(cur, ctx, owner[-1] if owner else None))
    return out


def matching(toks, i):
    """Index of the bracket closing toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in "([{":
            depth += 1
        elif toks[j].text in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return None


def split_args(toks, lo, hi):
    """Top-level comma-separated token ranges [a, b) of toks[lo:hi]."""
    out, depth, a = [], 0, lo
    for j in range(lo, hi):
        s = toks[j].text
        if s in "([{":
            depth += 1
        elif s in ")]}":
            depth -= 1
        elif s == "," and depth == 0:
            out.append((a, j))
            a = j + 1
    if a < hi:
        out.append((a, hi))
    return out


# ---- what a file declares -----------------------------------------------------------------------------

class Info:
    """Facts a mutator needs: the plan's mesh axes, model tensor names, the plans."""

    def __init__(self, text):
        self.text = text
        self.stmts = statements(text)
        self.axes = {}          # plan name -> [(axis, size or None)]
        self.model_names = []   # model tensors (assignment targets, inputs, params), base names
        self.plans = []
        for s in self.stmts:
            if s.kind == "header" and s.toks[0].text == "plan" and len(s.toks) > 1:
                self.plans.append(s.toks[1].text)
            if s.owner and s.owner[0] == "plan" and s.kind == "mesh":
                axes = []
                for a, b in split_args(s.toks, 1, len(s.toks)):
                    if b - a >= 3 and s.toks[a + 1].text == "=":
                        size = s.toks[a + 2].text if b - a == 3 and s.toks[a + 2].kind == "num" else None
                        axes.append((s.toks[a].text, int(size) if size else None))
                self.axes[s.owner[1]] = axes
            if s.owner and s.owner[0] == "model":
                if s.kind in ("input", "param") and len(s.toks) > 1:
                    self.model_names.append(s.toks[1].text)
                elif s.kind in ("assign", "accum") and s.toks[0].kind == "ident":
                    if s.toks[0].text not in self.model_names:
                        self.model_names.append(s.toks[0].text)

    def plan_axes(self, stmt):
        if stmt.owner and stmt.owner[0] == "plan":
            return self.axes.get(stmt.owner[1], [])
        for v in self.axes.values():   # a function: any plan's axes
            return v
        return []


def in_plan(s):
    return s.owner is not None and s.owner[0] in ("plan", "func")


def axis_choice(rng, axes, avoid=None):
    names = [a for a, _ in axes if a != avoid]
    return rng.choice(names) if names else None


# ---- mutators -------------------------------------------------------------------------------------------
#
# Each takes (text, info, rng) and returns (new text, description) or None when it does not apply.
# Expression mutators work on one statement's text (so the rank-conditional mutators can reuse them
# on a copy of the statement); file mutators choose the statement.

def stmt_edit(text, rng, info, kinds, ctx_ok=in_plan):
    cands = [s for s in info.stmts if s.kind in kinds and ctx_ok(s)]
    return rng.choice(cands) if cands else None


def rhs_range(toks):
    """Token range of an assignment's value (after the top-level '=' or '+=', before '~')."""
    depth, lo = 0, None
    for j, t in enumerate(toks):
        if t.text in "([":
            depth += 1
        elif t.text in ")]":
            depth -= 1
        elif depth == 0 and lo is None and t.text in ("=", "+="):
            lo = j + 1
        elif depth == 0 and lo is not None and t.text == "~":
            return lo, j
        elif depth == 0 and lo is not None and t.text == ":" and toks[0].text == "output":
            return lo, j
    return (lo, len(toks)) if lo is not None else None


def value_positions(toks):
    """Indices of tokens inside expression values (not in a lineage or an output's layout)."""
    r = rhs_range(toks)
    if r is None:
        if toks and toks[0].kind == "ident" and len(toks) > 1 and toks[1].text == "(":
            return range(0, len(toks))   # a call statement
        return range(0)
    return range(r[0], r[1])


def splice(s, a, b, new):
    return s[:a] + new + s[b:]


def new_number(rng, old):
    try:
        v = float(old)
    except ValueError:
        v = 1.0
    n = int(v) if v == int(v) else None
    choices = ["0", "1", "2", "1/2", "(%s + 1/1000)" % old, "(2*%s)" % old, "1e-6"]
    if n is not None:
        choices += [str(n + 1), str(max(0, n - 1))]
    c = rng.choice(choices)
    return c if c != old else "(%s + 1)" % old


def mx_const(st, info, rng, axes):
    toks = lex(st)
    pos = [j for j in value_positions(toks) if toks[j].kind == "num"]
    if not pos:
        return None
    j = rng.choice(pos)
    old = toks[j].text
    if axes and rng.random() < 0.25:
        ax = rng.choice(axes)[0]
        new = "(%s + rank.%s)" % (old, ax) if rng.random() < 0.5 else "(%s * (1 + rank.%s))" % (old, ax)
    else:
        new = new_number(rng, old)
    return splice(st, toks[j].start, toks[j].end, new), "const %s -> %s" % (old, new)


def mx_binop(st, info, rng, axes):
    toks = lex(st)
    vp = set(value_positions(toks))
    pos = [j for j in vp if toks[j].text in ("+", "-", "*", "/") and j > 0
           and (toks[j - 1].kind in ("ident", "num") or toks[j - 1].text in (")", "]"))]
    if not pos:
        return None
    j = rng.choice(sorted(pos))
    new = rng.choice([o for o in ("+", "-", "*", "/") if o != toks[j].text])
    return splice(st, toks[j].start, toks[j].end, new), "binop %s -> %s" % (toks[j].text, new)


def calls(toks, names=None):
    """(name index, '(' index, ')' index) of the calls inside the value."""
    vp = value_positions(toks)
    out = []
    for j in vp:
        if toks[j].kind == "ident" and j + 1 < len(toks) and toks[j + 1].text == "(":
            if names is None or toks[j].text in names:
                k = matching(toks, j + 1)
                if k is not None:
                    out.append((j, j + 1, k))
    return out


def positional(toks, lo, hi):
    return [(a, b) for a, b in split_args(toks, lo, hi) if not (b - a >= 2 and toks[a + 1].text == "=")]


def mx_swap_args(st, info, rng, axes):
    toks = lex(st)
    cs = [c for c in calls(toks) if len(positional(toks, c[1] + 1, c[2])) >= 2]
    if not cs:
        return None
    n, lp, rp = rng.choice(cs)
    args = positional(toks, lp + 1, rp)
    i, j = sorted(rng.sample(range(len(args)), 2)) if len(args) > 2 and rng.random() < 0.3 else (0, 1)
    (a1, b1), (a2, b2) = args[i], args[j]
    s1 = st[toks[a1].start:toks[b1 - 1].end]
    s2 = st[toks[a2].start:toks[b2 - 1].end]
    out = st[:toks[a1].start] + s2 + st[toks[b1 - 1].end:toks[a2].start] + s1 + st[toks[b2 - 1].end:]
    return out, "swap args %d,%d of %s" % (i, j, toks[n].text)


def mx_rhs_scale(st, info, rng, axes):
    r = rhs_range(lex(st))
    toks = lex(st)
    if r is None or r[0] >= r[1]:
        return None
    a, b = toks[r[0]].start, toks[r[1] - 1].end
    f = rng.choice(["2", "1/2", "-1", "(1 + 1/1000)"])
    if rng.random() < 0.7:
        rep, d = "(%s) * %s" % (st[a:b], f), "value * " + f
    else:   # harmless: the same value written another way
        rep, d = "(%s) + %s - %s" % (st[a:b], f, f), "value + %s - %s (harmless)" % (f, f)
    return splice(st, a, b, rep), d


def mx_coll(st, info, rng, axes):
    toks = lex(st)
    cs = calls(toks, COLLECTIVES)
    if not cs:
        return None
    n, lp, rp = rng.choice(cs)
    name = toks[n].text
    args = split_args(toks, lp + 1, rp)
    if not args:
        return None
    call = st[toks[n].start:toks[rp].end]
    x = st[toks[args[0][0]].start:toks[args[0][1] - 1].end]
    axis_args = [(a, b) for a, b in args[1:] if b - a == 1 and toks[a].text in [ax for ax, _ in axes]]
    red_args = [(a, b) for a, b in args[1:] if b - a == 1 and toks[a].text in REDUCTIONS]
    kw_red = [(a, b) for a, b in args[1:] if b - a == 3 and toks[a].text == "op"]
    ax0 = toks[axis_args[0][0]].text if axis_args else (axes[0][0] if axes else "dp")
    options = ["drop", "dup"]
    if axis_args and len(axes) > 1:
        options += ["axis", "regroup"]
    if red_args or kw_red:
        options += ["op"]
    if name == "all_reduce":
        options += ["to_gather"]
    if name in ("all_gather", "reduce_scatter"):
        options += ["to_reduce", "dim"]
    kind = rng.choice(options)
    if kind == "drop":
        rep, d = "(%s)" % x, "drop %s" % name
    elif kind == "dup":
        op = rng.choice(["sum", "avg", "max"])
        rep, d = "all_reduce(%s, %s, %s)" % (call, op, ax0), "wrap %s in all_reduce(%s, %s)" % (name, op, ax0)
    elif kind == "axis":
        a, _ = rng.choice(axis_args)
        other = axis_choice(rng, axes, toks[a].text)
        return splice(st, toks[a].start, toks[a].end, other), "%s axis %s -> %s" % (name, toks[a].text, other)
    elif kind == "regroup":
        a, _ = rng.choice(axis_args)
        present = {toks[u].text for u, _ in axis_args}
        extra = [ax for ax, _ in axes if ax not in present]
        if extra and (len(axis_args) == 1 or rng.random() < 0.5):
            x2 = rng.choice(extra)
            new = "%s, %s" % ((toks[a].text, x2) if rng.random() < 0.5 else (x2, toks[a].text))
            return splice(st, toks[a].start, toks[a].end, new), "%s axes + %s" % (name, new)
        if len(axis_args) > 1:   # remove one of several axes
            lo = toks[a - 1].start if toks[a - 1].text == "," else toks[a].start
            return st[:lo] + st[toks[a].end:], "%s axes - %s" % (name, toks[a].text)
        return None
    elif kind == "op":
        if red_args:
            a, _ = rng.choice(red_args)
        else:
            a = rng.choice(kw_red)[0] + 2
        new = rng.choice([r for r in REDUCTIONS if r != toks[a].text])
        return splice(st, toks[a].start, toks[a].end, new), "%s op %s -> %s" % (name, toks[a].text, new)
    elif kind == "to_gather":
        d = rng.choice([0, 1, 0])
        rep, d = "all_gather(%s, %d, %s)" % (x, d, ax0), "all_reduce -> all_gather(dim %d)" % d
    elif kind == "to_reduce":
        op = rng.choice(["sum", "avg"])
        rep, d = "all_reduce(%s, %s, %s)" % (x, op, ax0), "%s -> all_reduce(%s)" % (name, op)
    else:   # dim
        nums = [(a, b) for a, b in args[1:]
                if b - a == 1 and toks[a].kind == "num" and toks[a].text.isdigit()]
        if not nums:
            return None
        a, _ = nums[0]
        new = str((int(toks[a].text) + rng.choice([1, -1])) % 3)
        return splice(st, toks[a].start, toks[a].end, new), "%s dim %s -> %s" % (name, toks[a].text, new)
    return splice(st, toks[n].start, toks[rp].end, rep), d


def mx_insert_coll(st, info, rng, axes):
    """Wrap a name of the value in a collective: avg over an axis the value is replicated on is
    the identity, sum multiplies it."""
    toks = lex(st)
    vp = value_positions(toks)
    names = [j for j in vp if toks[j].kind == "ident" and not (j + 1 < len(toks) and toks[j + 1].text == "(")
             and not toks[j].text.startswith("rank.")]
    if not names or not axes:
        return None
    j = rng.choice(names)
    end = j
    if j + 1 < len(toks) and toks[j + 1].text == "[":
        end = matching(toks, j + 1) or j
    op = rng.choice(["sum", "avg", "max"])
    ax = rng.choice(axes)[0]
    nm = st[toks[j].start:toks[end].end]
    return splice(st, toks[j].start, toks[end].end, "all_reduce(%s, %s, %s)" % (nm, op, ax)), \
        "all_reduce(%s, %s, %s)" % (nm, op, ax)


def mx_equiv(st, info, rng, axes):
    """A rewrite that keeps the value (the checker must still prove it): an avg all-reduce as a sum
    over the axis size and back, an all-reduce over two axes as two all-reduces, x as x * 3 / 3."""
    toks = lex(st)
    opts = []
    for n, lp, rp in calls(toks, {"all_reduce"}):
        args = split_args(toks, lp + 1, rp)
        ax = [(a, b) for a, b in args[1:] if b - a == 1 and toks[a].text in [x for x, _ in axes]]
        red = [(a, b) for a, b in args[1:] if b - a == 1 and toks[a].text in REDUCTIONS]
        if len(args) >= 3 and len(ax) == len(args) - 2 and len(red) == 1:
            opts.append((n, lp, rp, args, ax, toks[red[0][0]].text))
    if opts and rng.random() < 0.7:
        n, lp, rp, args, ax, op = rng.choice(opts)
        x = st[toks[args[0][0]].start:toks[args[0][1] - 1].end]
        names = [toks[a].text for a, _ in ax]
        if op == "avg":
            rep = "(all_reduce(%s, sum, %s) / (%s))" % (x, ", ".join(names), "*".join(names))
            d = "avg all-reduce as sum / size (harmless)"
        elif len(names) >= 2 and op in ("sum", "max", "min"):
            rep = "all_reduce(all_reduce(%s, %s, %s), %s, %s)" % (x, op, names[0], op, ", ".join(names[1:]))
            d = "all-reduce over %s split in two (harmless)" % "+".join(names)
        elif op == "sum":
            rep = "(all_reduce(%s, avg, %s) * (%s))" % (x, ", ".join(names), "*".join(names))
            d = "sum all-reduce as avg * size (harmless)"
        else:
            rep = "all_reduce(all_reduce(%s, %s, %s), %s, %s)" % (x, op, names[0], op, names[0])
            d = "%s all-reduce applied twice (harmless)" % op
        return splice(st, toks[n].start, toks[rp].end, rep), d
    r = rhs_range(toks)
    if r is None or r[0] >= r[1]:
        return None
    a, b = toks[r[0]].start, toks[r[1] - 1].end
    k = rng.choice(["3", "7/5"])
    return splice(st, a, b, "(%s) * (%s) / (%s)" % (st[a:b], k, k)), "value * (%s) / (%s) (harmless)" % (k, k)


EXPR_MUTATORS = [(mx_const, 4), (mx_binop, 2), (mx_swap_args, 2), (mx_coll, 5), (mx_rhs_scale, 1),
                 (mx_insert_coll, 1), (mx_equiv, 3)]


def expr_mutation(st, info, rng, axes, tries=8):
    for _ in range(tries):
        f = weighted(rng, EXPR_MUTATORS)
        r = f(st, info, rng, axes)
        if r is not None and r[0] != st:
            return r
    return None


def weighted(rng, items):
    total = sum(w for _, w in items)
    x = rng.random() * total
    for f, w in items:
        x -= w
        if x < 0:
            return f
    return items[-1][0]


def fm_expr(text, info, rng):
    s = stmt_edit(text, rng, info, ("assign", "accum", "output", "call"))
    if s is None:
        return None
    r = expr_mutation(s.text(text), info, rng, info.plan_axes(s))
    if r is None:
        return None
    return splice(text, s.start, s.end, r[0]), r[1]


def fm_model_expr(text, info, rng):
    s = stmt_edit(text, rng, info, ("assign", "accum", "train"), lambda u: u.owner and u.owner[0] == "model")
    if s is None:
        return None
    st = s.text(text)
    if s.kind == "train":
        toks = lex(st)
        nums = [t for t in toks if t.kind == "num"]
        if not nums:
            return None
        t = rng.choice(nums)
        new = new_number(rng, t.text)
        return splice(text, s.start + t.start, s.start + t.end, new), "model train %s -> %s" % (t.text, new)
    r = expr_mutation(st, info, rng, [])
    if r is None:
        return None
    return splice(text, s.start, s.end, r[0]), "model: " + r[1]


def indent_of(text, pos):
    ls = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[ls:])
    return m.group()


def fm_rank_if(text, info, rng):
    s = stmt_edit(text, rng, info, ("assign", "accum", "call"))
    if s is None:
        return None
    axes = info.plan_axes(s)
    if not axes:
        return None
    st = s.text(text)
    if rng.random() < 0.15:
        r = (st, "the same statement (harmless)")
    else:
        r = expr_mutation(st, info, rng, axes)
    if r is None:
        return None
    ax, size = rng.choice(axes)
    k = rng.randrange(size) if size else rng.choice([0, 1])
    ind = indent_of(text, s.start)
    form = rng.choice(["if_else", "if_else", "else_if", "on_after", "on_only"])
    if form == "if_else":
        new = "if rank.%s == %d {\n%s  %s\n%s} else {\n%s  %s\n%s}" % (ax, k, ind, r[0], ind, ind, st, ind)
    elif form == "else_if":
        new = "if rank.%s != %d {\n%s  %s\n%s} else {\n%s  %s\n%s}" % (ax, k, ind, st, ind, ind, r[0], ind)
    elif form == "on_after":
        if s.kind != "assign":
            return None
        new = "%s\n%son %s = %d {\n%s  %s\n%s}" % (st, ind, ax, k, ind, r[0], ind)
    else:
        new = "on %s = %d {\n%s  %s\n%s}" % (ax, k, ind, st, ind)
        return splice(text, s.start, s.end, new), "on %s = %d only: %s" % (ax, k, st.split("=")[0].strip())
    return splice(text, s.start, s.end, new), "%s rank.%s %d: %s" % (form, ax, k, r[1])


def layout_spans(s):
    """(lo, hi) token ranges of the layouts of a statement: after each top-level ':' a '[...]'
    and any partial(...) after it."""
    toks, out, depth = s.toks, [], 0
    for j, t in enumerate(toks):
        if t.text in "([":
            depth += 1
        elif t.text in ")]":
            depth -= 1
        elif depth == 0 and t.text == ":" and j + 1 < len(toks) and toks[j + 1].text == "[":
            k = matching(toks, j + 1)
            if k is None:
                continue
            hi = k + 1
            while hi + 1 < len(toks) and toks[hi].text == "partial" and toks[hi + 1].text == "(":
                m = matching(toks, hi + 1)
                if m is None:
                    break
                hi = m + 1
            out.append((j + 1, k, hi))   # '[' index, ']' index, end of the partials
    return out


def fm_layout(text, info, rng):
    cands = []
    for s in info.stmts:
        if s.owner and s.owner[0] == "plan" and s.kind in ("layout", "assign", "accum", "output"):
            for sp in layout_spans(s):
                cands.append((s, sp))
    if not cands:
        return None
    s, (lb, rb, hi) = rng.choice(cands)
    axes = info.plan_axes(s)
    toks = s.toks
    dims = split_args(toks, lb + 1, rb)
    sharded = [(a, b) for a, b in dims if any(toks[u].text == "@" for u in range(a, b))]
    plain = [(a, b) for a, b in dims if (a, b) not in sharded]
    kinds = []
    if sharded:
        kinds += ["unshard", "axis"] if len(axes) > 1 else ["unshard"]
        if plain:
            kinds.append("move")
    if plain and axes:
        kinds.append("shard")
    if hi > rb + 1:
        kinds += ["partial_drop", "partial_op"]
    elif axes:
        kinds.append("partial_add")
    if not kinds:
        return None
    kind = rng.choice(kinds)

    def at_span(a, b):   # the '@axes{...}' part of an ldim
        u = next(u for u in range(a, b) if toks[u].text == "@")
        return toks[u].start, toks[b - 1].end, text[toks[u].start:toks[b - 1].end]

    if kind == "unshard":
        a, b = rng.choice(sharded)
        lo, e, old = at_span(a, b)
        return splice(text, lo, e, ""), "layout unshard %s" % old
    if kind == "axis":
        a, b = rng.choice(sharded)
        lo, e, old = at_span(a, b)
        new = "@" + axis_choice(rng, axes, old[1:].split("{")[0])
        if rng.random() < 0.3:
            new = "@(%s)" % ", ".join(ax for ax, _ in axes)
        return splice(text, lo, e, new), "layout %s -> %s" % (old, new)
    if kind == "move":
        a, b = rng.choice(sharded)
        c, d = rng.choice(plain)
        lo, e, old = at_span(a, b)
        ins = toks[d - 1].end
        if ins < lo:
            t2 = splice(text, lo, e, "")
            return splice(t2, ins, ins, old), "layout move %s" % old
        t2 = splice(text, ins, ins, old)
        return splice(t2, lo, e, ""), "layout move %s" % old
    used = {toks[u].text for u in range(lb, rb) if toks[u].kind == "ident"}
    if kind == "shard":
        c, d = rng.choice(plain)
        free = [a for a, _ in axes if a not in used]
        if not free:
            return None
        ax = rng.choice(free)
        ins = toks[d - 1].end
        return splice(text, ins, ins, "@" + ax), "layout shard dim @%s" % ax
    if kind == "partial_drop":
        return splice(text, toks[rb].end, toks[hi - 1].end, ""), "drop " + text[toks[rb + 1].start:toks[hi - 1].end]
    if kind == "partial_op":
        reds = [u for u in range(rb + 1, hi) if toks[u].text in REDUCTIONS]
        if not reds:
            return None
        u = rng.choice(reds)
        new = rng.choice([r for r in REDUCTIONS if r != toks[u].text])
        return splice(text, toks[u].start, toks[u].end, new), "partial %s -> %s" % (toks[u].text, new)
    op = rng.choice(["sum", "sum", "avg", "max"])
    ax = rng.choice(axes)[0]
    ins = toks[rb].end
    return splice(text, ins, ins, " partial(%s@%s)" % (op, ax)), "add partial(%s@%s)" % (op, ax)


def fm_lineage(text, info, rng):
    cands = []
    for s in info.stmts:
        if s.owner and s.owner[0] == "plan" and s.kind in ("assign", "accum", "layout"):
            for j, t in enumerate(s.toks):
                if t.text == "~":
                    cands.append((s, j))
    if not cands:
        return None
    s, j = rng.choice(cands)
    toks = s.toks
    kind = rng.choice(["drop", "target", "target", "index"])
    if kind == "drop" and s.kind != "layout":
        return splice(text, toks[j - 1].end, s.end, ""), "drop lineage ~ %s" % toks[j + 1].text
    if kind == "index":
        idx = [u for u in range(j + 1, len(toks)) if toks[u].kind == "num" and toks[u - 1].text in ("[", ",")]
        idx = [u for u in idx if toks[u].start < (toks[next((v for v in range(j + 1, len(toks)) if toks[v].text == ":"), len(toks) - 1)].start)]
        if idx:
            u = rng.choice(idx)
            new = str(int(toks[u].text) + rng.choice([1, -1]) if int(toks[u].text) > 0 else 1)
            return splice(text, toks[u].start, toks[u].end, new), "lineage index %s -> %s" % (toks[u].text, new)
    if j + 1 < len(toks) and toks[j + 1].kind == "ident" and info.model_names:
        old = toks[j + 1].text
        others = [n for n in info.model_names if n != old]
        if not others:
            return None
        new = rng.choice(others)
        return splice(text, toks[j + 1].start, toks[j + 1].end, new), "lineage target %s -> %s" % (old, new)
    return None


def fm_stmt(text, info, rng):
    kind = rng.choice(["drop", "dup", "dup", "swap"])
    cands = [s for s in info.stmts if in_plan(s) and s.kind in ("assign", "accum", "call")]
    if not cands:
        return None
    if kind == "drop":
        s = rng.choice(cands)
        return splice(text, s.start, s.end, ""), "drop statement: %s" % s.text(text)[:60]
    if kind == "dup":
        dups = [s for s in cands if s.kind in ("accum", "call")] or cands
        s = rng.choice(dups)
        st = s.text(text)
        return splice(text, s.end, s.end, "\n" + indent_of(text, s.start) + st), "duplicate: %s" % st[:60]
    pairs = [(a, b) for a, b in zip(cands, cands[1:]) if a.ctx == b.ctx and a.owner == b.owner
             and text[a.end:b.start].strip("\n \t") == ""]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    ta, tb = a.text(text), b.text(text)
    return text[:a.start] + tb + text[a.end:b.start] + ta + text[b.end:], "swap statements"


FILE_MUTATORS = [(fm_expr, 10), (fm_rank_if, 4), (fm_layout, 3), (fm_lineage, 2), (fm_stmt, 2),
                 (fm_model_expr, 1)]
MUTATOR_NAMES = {fm_expr: "expr", fm_rank_if: "rank", fm_layout: "layout", fm_lineage: "lineage",
                 fm_stmt: "stmt", fm_model_expr: "model"}


def apply_one(text, mutators, rng, done):
    """One of the weighted file mutators that changes text (20 tries), noted in done."""
    for _ in range(20):
        f = weighted(rng, mutators)
        r = f(text, Info(text), rng)
        if r is not None and r[0] != text:
            done.append((MUTATOR_NAMES[f], r[1]))
            return r[0]
    return text


def mutate(text, rng, count):
    done = []
    for _ in range(count):
        text = apply_one(text, FILE_MUTATORS, rng, done)
    return text, done


# ---- mutations aimed at the mesh cutoff (--cutoff-mutations) --------------------------------------------
#
# Under `--mesh-cutoff` an axis the plan is uniform along (dp = 16) is checked at a smaller prime
# size k (3, 5, 7: no prime factor of a literal of the program).  Each mutator below changes a plan
# value by a term that is zero (or the same value) with k members and not with the real N, keeping
# the plan well-formed and uniform along the axis (no rank.AXIS except in a shard selector, no
# `on`): the bugs of tests/plans/bugs/cutoff_*.sp, aimed at the checked size k read from the
# unmutated seed's report (`mesh cutoff: dp=16 checked as dp=3`).  Every integer the mutators
# write is a power of two or a sum of them (k = 3 is written `(2 + 1)`, 6 x as `4*x + 2*x`), so the
# mutation itself does not move k.  Descriptions end in `(harmless)` when the value at the real
# sizes is unchanged (a term zero at N and not at k: the checker must not call it a difference).

CUT_LINE = re.compile(r"^mesh cutoff: (.*?) \(\d+ ranks", re.M)


def parse_cut(out):
    """{axis: (real size, checked size)} from a check report's `mesh cutoff: ... checked as` line."""
    m = CUT_LINE.search(out or "")
    if not m:
        return {}
    return {a: (int(n), int(k)) for a, n, k in re.findall(r"(\w+)=(\d+) checked as \w+=(\d+)", m.group(1))}


def pow2_sum(k):
    """k > 0 written as a sum of powers of two: 3 -> (2 + 1)."""
    parts = [str(1 << b) for b in range(k.bit_length() - 1, -1, -1) if k >> b & 1]
    return parts[0] if len(parts) == 1 else "(%s)" % " + ".join(parts)


def coef_terms(c, t):
    """c * t as signed terms whose literals are powers of two: -6, t -> ['- 4*t', '- 2*t']."""
    sign = "+" if c > 0 else "-"
    c = abs(c)
    return ["%s %s" % (sign, t if b == 0 else "%d*%s" % (1 << b, t))
            for b in range(c.bit_length() - 1, -1, -1) if c >> b & 1]


def newton_e(n):
    """n! e_n in the power sums: {sorted tuple of power indices: integer coefficient}
    (Newton's identities; 24 e_4 = p1^4 - 6 p1^2 p2 + 3 p2^2 + 8 p1 p3 - 6 p4), zero for fewer
    than n members."""
    from fractions import Fraction
    e = [{(): Fraction(1)}]
    for m in range(1, n + 1):
        acc = {}
        for i in range(1, m + 1):
            for mono, c in e[m - i].items():
                key = tuple(sorted(mono + (i,)))
                acc[key] = acc.get(key, 0) + (1 if i % 2 else -1) * c / m
        e.append({k: v for k, v in acc.items() if v})
    f = math.factorial(n)
    return {k: int(v * f) for k, v in sorted(e[n].items())}


def newton_stmts(n, p, pre):
    """Statements computing n! e_n from the power-sum names p(i) into `PRE_e`, without a literal
    (a literal equal to the axis's real size, 8 p1 p3 on dp = 8, keeps the axis from being cut):
    each monomial PRE_mJ and its doublings PRE_mJ_2, PRE_mJ_4, ... (6 m = 4 m + 2 m)."""
    stmts, terms = [], []
    for j, (mono, c) in enumerate(newton_e(n).items()):
        m = "%s_m%d" % (pre, j)
        stmts.append("%s = %s" % (m, " * ".join(p(i) for i in mono)))
        for b in range(1, abs(c).bit_length()):
            stmts.append("%s_%d = %s + %s" % (m, 1 << b, m if b == 1 else "%s_%d" % (m, 1 << (b - 1)),
                                               m if b == 1 else "%s_%d" % (m, 1 << (b - 1))))
        for b in range(abs(c).bit_length()):
            if abs(c) >> b & 1:
                terms.append(("+ " if c > 0 else "- ") + (m if b == 0 else "%s_%d" % (m, 1 << b)))
    e = " ".join(terms)
    stmts.append("%s_e = %s" % (pre, e[2:] if e.startswith("+ ") else "-" + e[2:]))
    return stmts


def real_dims(text):
    """The dims of the file at their real values (derived ones evaluated), or {} on failure."""
    dims = {}
    for m in re.finditer(r"^\s*dim (.*?)(?:#.*)?$", text, re.M):
        for part in m.group(1).split(","):
            kv = part.split("=")
            if len(kv) != 2:
                continue
            try:
                dims[kv[0].strip()] = dim_value(kv[1], dims)
            except (ValueError, SyntaxError, ZeroDivisionError):
                pass
    return dims


class CutPlan:
    """What the cutoff mutators need of a file: its first plan's top-level statements, the cut
    axes [(axis, N, k)], the real dims, the model's declared shapes and the plan's layouts."""

    def __init__(self, text, cut):
        self.text = text
        self.info = Info(text)
        self.plan = self.info.plans[0] if self.info.plans else None
        self.top = [s for s in self.info.stmts if s.owner == ("plan", self.plan) and s.ctx == ("plan",)]
        axes = self.info.axes.get(self.plan, [])
        if cut:
            self.cut = [(a, n, cut[a][1]) for a, n in axes if a in cut and n]
        else:   # no report (the seed was not checked with --mesh-cutoff): the usual k = 3
            self.cut = [(a, n, 3) for a, n in axes if n and n >= 4]
        self.axes = [a for a, _ in axes]
        self.dims = real_dims(text)
        self.shapes = {}   # model input/param -> [dim expressions]
        for s in self.info.stmts:
            if s.owner and s.owner[0] == "model" and s.kind in ("input", "param"):
                m = re.match(r"(?:input|param)\s+([A-Za-z_]\w*)\s*:\s*\[([^\]]*)\]", s.text(text))
                if m:
                    self.shapes[m.group(1)] = [e.strip() for e in m.group(2).split(",") if e.strip()]
        self.layouts = []   # (stmt, name, [(dim text, axes it is sharded on)], partial axes)
        for s in self.top:
            if s.kind != "layout" or len(s.toks) < 3 or s.toks[1].text != ":" or s.toks[2].text != "[":
                continue
            rb = matching(s.toks, 2)
            if rb is None:
                continue
            dl = []
            for a, b in split_args(s.toks, 3, rb):
                at = [u for u in range(a, b) if s.toks[u].text == "@"]
                shard = {s.toks[u].text for u in range(at[0], b) if s.toks[u].kind == "ident"} if at else set()
                dl.append((" ".join(t.text for t in s.toks[a:at[0] if at else b]), shard))
            part = {t.text for t in s.toks[rb + 1:] if t.kind == "ident" and t.text in self.axes}
            self.layouts.append((s, s.toks[0].text, dl, part))

    def real_shape(self, name):
        try:
            return [dim_value(e, self.dims) for e in self.shapes[name]]
        except (KeyError, ValueError, SyntaxError, ZeroDivisionError):
            return None

    def targets(self):
        """Top-level assignments and outputs with a value (a place to add a term)."""
        return [s for s in self.top if s.kind in ("assign", "output") and rhs_range(s.toks)
                and rhs_range(s.toks)[0] < rhs_range(s.toks)[1] and not s.toks[0].text.startswith("cz")]

    def member_sources(self, A, N, before):
        """Scalars that differ between the members of A, each as (expr, what): a rank's local sum of
        a tensor sharded over A, of a pending sum's part, of its shard-selector slice or its
        reduce_scatter(max) chunk of a replicated tensor; declared before statement `before`."""
        out = []
        for s, name, dl, part in self.layouts:
            if s.start >= before.start or name not in self.shapes:
                continue
            sharded = any(A in sh for _, sh in dl)
            if sharded:
                out.append(("sum(%s)" % name, "local sum of %s (sharded over %s)" % (name, A)))
            elif A in part:
                out.append(("sum(%s)" % name, "sum of the part of %s (partial over %s)" % (name, A)))
            elif not any(sh for _, sh in dl) and not part:
                shape = self.real_shape(name)
                if shape and shape[0] % N == 0 and shape[0] >= N:
                    e0 = self.shapes[name][0]
                    out.append(("sum(slice(%s, 0, rank.%s*((%s)/%s), (rank.%s+1)*((%s)/%s)))"
                                % (name, A, e0, A, A, e0, A),
                                "shard-selector slice of the replicated %s" % name))
                    out.append(("sum(reduce_scatter(%s, max, %s, dim = 0))" % (name, A),
                                "reduce_scatter(max) of the replicated %s" % name))
        for s in self.top:   # lineage cut points sharded over A: `y = ... ~ y : [B@dp, H]`
            if s.start >= before.start or s.kind != "assign":
                continue
            st = s.text(self.text)
            m = re.match(r"([A-Za-z_]\w*(?:\[\d+\])?)\s*=.*~\s*[\w.\[\]]+\s*:\s*\[([^\]]*)\]", st)
            if m and re.search(r"@\(?[^\]]*\b%s\b" % A, m.group(2)):
                out.append(("sum(%s)" % m.group(1), "local sum of %s (cut point sharded over %s)" % (m.group(1), A)))
        return out

    def replicated_sources(self, before):
        """Replicated declared tensors (same value on every rank): (name, real shape)."""
        out = []
        for s, name, dl, part in self.layouts:
            if s.start < before.start and name in self.shapes and not any(sh for _, sh in dl) and not part:
                shape = self.real_shape(name)
                if shape:
                    out.append((name, shape))
        return out


def wrap_term(rng, t, A):
    """The added term as it reaches the value: itself, or behind a nonlinearity or a collective
    (each zero exactly where t is)."""
    return rng.choice([
        (t, ""), (t, ""), ("tanh(%s)" % t, " behind tanh"), ("(relu(%s) + relu(-(%s)))" % (t, t), " behind relu"),
        ("(%s) * (%s)" % (t, t), " squared"), ("all_reduce(%s, max, %s)" % (t, A), " behind all_reduce(max)"),
        ("(exp(%s) - 1)" % t, " behind exp"),
    ])


def add_term(cp, rng, target, stmts, term, A):
    """Insert the statements before the target and add the term to the target's value."""
    text = cp.text
    toks = lex(target.text(text))
    lo, hi = rhs_range(toks)
    a, b = target.start + toks[lo].start, target.start + toks[hi - 1].end
    t, wd = wrap_term(rng, term, A)
    if rng.random() < 0.75:
        new = "(%s) + %s" % (text[a:b], t)
    else:
        new = "(%s) * (1 + %s)" % (text[a:b], t)
    ind = indent_of(text, target.start)
    text = splice(text, a, b, new)
    ins = "".join("%s\n%s" % (st, ind) for st in stmts)
    return splice(text, target.start, target.start, ins), wd


def cut_axis(cp, rng):
    return rng.choice(cp.cut) if cp.cut else None


def member_pick(cp, rng, reject=None):
    """A cut axis (A, N, k), a target and one of its member sources (src, what), or None; reject(k)
    drops an axis size (the random calls in the order the mutators made them)."""
    ax = cut_axis(cp, rng)
    tg = cp.targets()
    if not ax or not tg:
        return None
    A, N, k = ax
    if reject is not None and reject(k):
        return None
    target = rng.choice(tg)
    srcs = cp.member_sources(A, N, target)
    if not srcs:
        return None
    src, what = rng.choice(srcs)
    return A, N, k, target, src, what


def cm_newton(cp, rng):
    """(k+1)! e_(k+1) of the members' values through the all-reduced power sums (Newton's
    identities): zero with k members, not with N (cutoff_relation_*.sp)."""
    got = member_pick(cp, rng, lambda k: k > 7 or (k > 5 and rng.random() < 0.7))
    if got is None:
        return None
    A, N, k, target, src, what = got
    pre = "cz%d" % rng.randrange(100, 1000)
    form = rng.choice(["plain", "plain", "relu", "tanh", "square"])
    s0 = {"plain": src, "relu": "relu(%s)" % src, "tanh": "tanh(%s)" % src, "square": "%s * %s" % (src, src)}[form]
    stmts = ["%s_s = %s" % (pre, s0)]
    for i in range(1, k + 2):
        stmts.append("%s_p%d = all_reduce(%s, sum, %s)" % (pre, i, " * ".join(["%s_s" % pre] * i), A))
    stmts += newton_stmts(k + 1, lambda i: "%s_p%d" % (pre, i), pre)
    text, wd = add_term(cp, rng, target, stmts, "%s_e" % pre, A)
    return text, "newton: %d! e%d over %s of %s%s, added to %s%s" % (
        k + 1, k + 1, A, what, "" if form == "plain" else " (%s)" % form, target.toks[0].text if target.kind != "output" else target.toks[1].text, wd)


def cm_pieces(cp, rng):
    """The members' values all-gathered and k of them picked by literal positions (slice, split,
    embedding ids), against the all-reduce over every member: equal with k members
    (cutoff_gather_member_positions.sp); or their max against a max all-reduce."""
    got = member_pick(cp, rng)
    if got is None:
        return None
    A, N, k, target, src, what = got
    pre = "cz%d" % rng.randrange(100, 1000)
    K = pow2_sum(k)
    stmts = ["%s_s = %s" % (pre, src)]
    form = rng.choice(["slice", "split", "embedding", "max"])
    if form == "embedding":
        stmts.append("%s_g = all_gather(reshape(%s_s, [1, 1]), 0, %s)" % (pre, pre, A))
        ids = ", ".join(str(j) if j == 0 or (j & (j - 1)) == 0 else pow2_sum(j) for j in range(k))
        pick = "sum(embedding(%s_g, ids = [%s]))" % (pre, ids)
    else:
        stmts.append("%s_g = all_gather(reshape(%s_s, [1]), 0, %s)" % (pre, pre, A))
        if form == "split":
            pick = " + ".join("sum(split(%s_g, 1, 0, %s))" % (pre, str(j) if j < 3 or (j & (j - 1)) == 0 else pow2_sum(j))
                              for j in range(k))
        elif form == "slice":
            pick = "sum(slice(%s_g, 0, 0, %s))" % (pre, K)
        else:
            pick = "amax(slice(%s_g, 0, 0, %s))" % (pre, K)
    op = "max" if form == "max" else "sum"
    stmts.append("%s_e = %s - all_reduce(%s_s, %s, %s)" % (pre, pick, pre, op, A))
    text, wd = add_term(cp, rng, target, stmts, "%s_e" % pre, A)
    return text, "pieces: %d of the gathered %s by %s minus all_reduce(%s), added to %s%s" % (
        k, what, form, op, target.toks[0].text if target.kind != "output" else target.toks[1].text, wd)


def size_poly(rng, A, N, k):
    """(expression, harmless): a polynomial or rational function of the axis size that is zero
    at k and not at N, or (harmless) zero at N and not at k; the real size as a literal is a
    sum of two halves (a literal equal to the size keeps the axis from being cut)."""
    K = pow2_sum(k)
    Nl = "(%d + %d)" % (N // 2, N - N // 2)
    if rng.random() < 0.2:
        return rng.choice(["(%s - %s)" % (A, Nl), "(%s / %s - 1)" % (Nl, A), "(%s * %s - %s * %s)" % (A, A, Nl, A)]), True
    return rng.choice(["(%s - %s)" % (A, K), "(%s * %s - %s * %s)" % (A, A, K, A), "(1/%s - 1/%s)" % (A, K),
                       "(%s - %s) * (%s - 1)" % (A, K, A), "(%s / %s - 1)" % (K, A), "(%s %% %s)" % (A, K)]), False


def size_factor(rng, A, N, k):
    """(factor, harmless): the axis size only as a factor (the cut is kept; its value is the real
    size): k/N or N/k times the value, 1 at k; or (harmless) N/N written as the size over halves."""
    K = pow2_sum(k)
    if rng.random() < 0.2:
        return rng.choice(["%s / (%d + %d)" % (A, N // 2, N - N // 2), "(%d + %d) / %s" % (N // 2, N - N // 2, A)]), True
    return rng.choice(["%s / %s" % (K, A), "%s / %s" % (A, K), "(%s / %s) * (%s / %s)" % (K, A, K, A),
                       "%s * %s / (%s * %s)" % (K, K, A, A), "1 / (%s / %s)" % (A, K)]), False


def cm_size_value(cp, rng):
    """The axis size used as a value, in a polynomial that vanishes at k (cutoff_polynomial_in_
    axis_size.sp, cutoff_mlp_dp8_polynomial.sp), or a count: the all-reduce over the axis of a
    replicated value minus k copies (cutoff_count_no_dim_reduced.sp), its avg times the size."""
    ax = cut_axis(cp, rng)
    tg = cp.targets()
    if not ax or not tg:
        return None
    A, N, k = ax
    target = rng.choice(tg)
    reps = cp.replicated_sources(target)
    pre = "cz%d" % rng.randrange(100, 1000)
    K = pow2_sum(k)
    tname = target.toks[0].text if target.kind != "output" else target.toks[1].text
    form = rng.choice(["scale", "count", "count", "avg", "sizepoly"]) if reps else "scale"
    if form == "scale":   # the target's own value times a factor 1 at k, or times 1 + P(A)
        toks = lex(target.text(cp.text))
        lo, hi = rhs_range(toks)
        a, b = target.start + toks[lo].start, target.start + toks[hi - 1].end
        if rng.random() < 0.6:
            P, harmless = size_factor(rng, A, N, k)
            return splice(cp.text, a, b, "(%s) * %s" % (cp.text[a:b], P)), \
                "size value: %s times %s%s" % (tname, P, " (harmless)" if harmless else "")
        P, harmless = size_poly(rng, A, N, k)
        return splice(cp.text, a, b, "(%s) * (1 + %s)" % (cp.text[a:b], P)), \
            "size value: %s times 1 + %s%s" % (tname, P, " (harmless)" if harmless else "")
    name, _ = rng.choice(reps)
    r = rng.choice(["sum(%s)" % name, "amax(%s)" % name, "sum(%s * %s)" % (name, name)])
    stmts = ["%s_r = %s" % (pre, r)]
    harmless = False
    if form == "count":
        sub = " ".join(coef_terms(-k, "%s_r" % pre))
        e = rng.choice(["all_reduce(%s_r, sum, %s) %s" % (pre, A, sub),
                        "all_reduce(%s_r, sum, %s) / %s - %s_r" % (pre, A, K, pre),
                        "sum(reduce_scatter(expand(reshape(%s_r, [1]), [%s]), sum, %s, dim = 0)) - %s_r * %s" % (pre, A, A, pre, K)])
    elif form == "avg":
        e = "all_reduce(%s_r, avg, %s) * %s / %s - %s_r" % (pre, A, A, K, pre)
    else:
        if rng.random() < 0.5:   # zero at k (or, harmless, at N)
            P, harmless = size_poly(rng, A, N, k)
            e = "%s * %s_r" % (P, pre)
        else:                    # one at k (or, harmless, at N)
            P, harmless = size_factor(rng, A, N, k)
            e = "(%s - 1) * %s_r" % (P, pre)
    stmts.append("%s_e = %s" % (pre, e))
    text, wd = add_term(cp, rng, target, stmts, "%s_e" % pre, A)
    return text, "size value: %s %s added to %s%s%s" % (form, e.replace(pre + "_", ""), tname, wd,
                                                       " (harmless)" if harmless else "")


def cm_reshape_rows(cp, rng):
    """A replicated tensor reshaped with the axis size as an extent ([dp, M/dp], [M/dp, -1] then
    transposed, [dp, -1]): its dp row sums are nobody's members; (k+1)! e_(k+1) of them is zero
    with k rows (cutoff_reshape_mesh_rows.sp, cutoff_reshape_minus_one_rows.sp)."""
    ax = cut_axis(cp, rng)
    tg = cp.targets()
    if not ax or not tg:
        return None
    A, N, k = ax
    if k > 5:
        return None
    target = rng.choice(tg)
    reps = [(n, sh) for n, sh in cp.replicated_sources(target) if math.prod(sh) % N == 0 and math.prod(sh) >= 2 * N]
    if not reps:
        return None
    name, _ = rng.choice(reps)
    M = "*".join("(%s)" % e for e in cp.shapes[name])
    pre = "cz%d" % rng.randrange(100, 1000)
    form = rng.choice(["mesh_first", "minus_one", "mesh_minus_one"])
    if form == "mesh_first":
        m = "reshape(%s, [%s, (%s)/%s])" % (name, A, M, A)
    elif form == "minus_one":
        m = "transpose(reshape(%s, [(%s)/%s, -1]), 0, 1)" % (name, M, A)
    else:
        m = "reshape(%s, [%s, -1])" % (name, A)
    stmts = ["%s_m = %s" % (pre, m), "%s_s = sum(%s_m, dim = 1)" % (pre, pre)]
    for i in range(1, k + 2):
        stmts.append("%s_p%d = sum(%s)" % (pre, i, " * ".join(["%s_s" % pre] * i)))
    stmts += newton_stmts(k + 1, lambda i: "%s_p%d" % (pre, i), pre)
    text, wd = add_term(cp, rng, target, stmts, "%s_e" % pre, A)
    tname = target.toks[0].text if target.kind != "output" else target.toks[1].text
    return text, "reshape rows: %d! e%d of the %s row sums of %s (%s), added to %s%s" % (
        k + 1, k + 1, A, name, form, tname, wd)


def cm_avg_sum(cp, rng):
    """In place: an avg collective over the axis as a sum over k (`/ (2 + 1)`), a sum as an avg
    times k, the axis size as a value replaced by k (value-changing) or by its real size, a literal
    equal to the real size by the axis name (both harmless), or by k (cutoff_mlp_dp8_literal.sp,
    cutoff_local_mean_sum.sp)."""
    ax = cut_axis(cp, rng)
    if not ax:
        return None
    A, N, k = ax
    K = pow2_sum(k)
    opts = []
    for s in cp.top:
        if s.kind not in ("assign", "output", "accum"):
            continue
        toks = s.toks
        vp = set(value_positions(toks))
        axis_args = set()
        for n, lp, rp in calls(toks, COLLECTIVES):
            args = split_args(toks, lp + 1, rp)
            for a, b in args[1:]:
                for u in range(a, b):
                    if toks[u].text in cp.axes:
                        axis_args.add(u)
            red = [a for a, b in args[1:] if b - a == 1 and toks[a].text in ("avg", "sum")]
            kw = [a + 2 for a, b in args[1:] if b - a == 3 and toks[a].text == "op" and toks[a + 2].text in ("avg", "sum")]
            axs = {toks[u].text for a, b in args[1:] for u in range(a, b)}
            if A in axs and toks[n].text in ("all_reduce", "reduce_scatter"):
                for r in red + kw:
                    opts.append(("coll", s, n, rp, r))
        for j in vp:
            if toks[j].kind == "ident" and toks[j].text == A and j not in axis_args:
                opts.append(("size", s, j))
            if toks[j].kind == "num" and toks[j].text == str(N):
                opts.append(("literal", s, j))
    if not opts:
        return None
    o = rng.choice(opts)
    s, text = o[1], cp.text
    tname = s.toks[0].text if s.kind != "output" else s.toks[1].text
    if o[0] == "coll":
        _, _, n, rp, r = o
        toks = s.toks
        old = toks[r].text
        cs, ce = toks[n].start, toks[rp].end   # the statement's tokens hold file offsets
        call = text[cs:ce]
        rs = toks[r].start - cs
        new_call = call[:rs] + ("sum" if old == "avg" else "avg") + call[rs + len(old):]
        rep = "(%s / %s)" % (new_call, K) if old == "avg" else "(%s * %s)" % (new_call, K)
        return splice(text, cs, ce, rep), "avg/sum: %s over %s as %s, in %s" % (old, A, rep, tname)
    _, _, j = o
    t = s.toks[j]
    if o[0] == "size":
        if rng.random() < 0.3:
            return splice(text, t.start, t.end, str(N)), "avg/sum: the size %s as %d in %s (harmless)" % (A, N, tname)
        return splice(text, t.start, t.end, K), "avg/sum: the size %s as %s in %s" % (A, K, tname)
    if rng.random() < 0.5:
        return splice(text, t.start, t.end, A), "avg/sum: the literal %d as %s in %s (harmless)" % (N, A, tname)
    return splice(text, t.start, t.end, K), "avg/sum: the literal %d as %s in %s" % (N, K, tname)


CUT_MUTATORS = [(cm_newton, 4), (cm_pieces, 2), (cm_size_value, 3), (cm_reshape_rows, 2), (cm_avg_sum, 2)]
CUT_NAMES = {cm_newton: "newton", cm_pieces: "pieces", cm_size_value: "size", cm_reshape_rows: "reshape",
             cm_avg_sum: "avg/sum"}


def mutate_cut(text, rng, cut):
    """One mutation aimed at the cut (two with probability 1/5), then an ordinary one with
    probability 1/5 (none of the rank-conditional kind: it makes the plan tell the ranks apart)."""
    done = []
    for n in range(2 if rng.random() < 0.2 else 1):
        for _ in range(20):
            f = weighted(rng, CUT_MUTATORS)
            r = f(CutPlan(text, cut), rng)
            if r is not None and r[0] != text:
                text = r[0]
                done.append(("cutoff", r[1]))
                break
    if done and rng.random() < 0.2:
        ordinary = [(f, w) for f, w in FILE_MUTATORS if f is not fm_rank_if]
        text = apply_one(text, ordinary, rng, done)
    return text, done


# ---- seed plans -----------------------------------------------------------------------------------------

LLAMA_DIMS = ("NKV", "HD", "NH", "B", "S", "H", "F", "V")
DEEPSEEK_DIMS = ("NKV", "HD", "NH", "B", "S", "H", "F", "K", "EQ", "FE", "V")


def flag_value(flags, name, default):
    if name in flags:
        i = flags.index(name)
        if i + 1 < len(flags):
            return flags[i + 1]
    return default


def small_dims(family, flags, old, rng):
    """Small real sizes for a generated file: every sharded size a multiple of its group."""
    tp = int(flag_value(flags, "--tp", 1))
    dp = int(flag_value(flags, "--dp", 1))
    cp = int(flag_value(flags, "--cp", 1))
    ep = int(flag_value(flags, "--ep", 1))
    sp = "--sp" in flags
    zero = int(flag_value(flags, "--zero", 0))
    ring = flag_value(flags, "--cp-algo", "") == "ring"
    zd = dp if zero else 1
    lcm = lambda *xs: math.lcm(*xs)
    d = dict(old)
    d["NKV"] = tp * rng.choice([1, 2])
    d["NH"] = d["NKV"] * (1 if family == "deepseek3" else rng.choice([1, 2]))
    d["HD"] = rng.choice([2, 4])
    d["S"] = max(2, lcm(cp * (2 if ring else 1), tp if sp else 1) * rng.choice([1, 2]))
    d["H"] = lcm(zd, 2) * rng.choice([1, 2]) if zd > 1 else rng.choice([2, 3, 4])
    d["F"] = lcm(tp, zd) * rng.choice([1, 2])
    d["V"] = lcm(tp, zd) * rng.choice([1, 2, 3]) if tp > 1 or zd > 1 else rng.choice([3, 4])
    if family == "deepseek3":
        d["EQ"] = max(1, ep // 2) * rng.choice([1, 2])
        d["K"] = rng.choice([1, 2])
        d["FE"] = lcm(tp, zd) * rng.choice([1, 2])
    return d


def rewrite_dims(text, names, new):
    """Replace the values of the first 'dim' line that declares exactly these base dims."""
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        m = re.match(r"dim (.*?)(\s*#.*)?$", ln)
        if m and [p.split("=")[0].strip() for p in m.group(1).split(",")] == list(names):
            lines[i] = "dim " + ", ".join("%s = %d" % (n, new[n]) for n in names) + (m.group(2) or "")
            return "\n".join(lines)
    return None


def base_dims(text, names):
    for ln in text.split("\n"):
        m = re.match(r"dim (.*?)(\s*#.*)?$", ln)
        if m:
            parts = [p.split("=") for p in m.group(1).split(",")]
            if [p[0].strip() for p in parts] == list(names):
                return {p[0].strip(): int(p[1]) for p in parts}
    return None


def family_of(text):
    for fam, names in (("deepseek3", DEEPSEEK_DIMS), ("llama3", LLAMA_DIMS)):
        if base_dims(text, names):
            return fam, names
    return None, None


def random_gen_flags(rng, dps=None, max_ranks=8):
    """dps: the dp sizes to draw from (--gen-dp; default 1, 2, 2); max_ranks: --gen-max-ranks."""
    fam = "llama3" if rng.random() < 0.7 else "deepseek3"
    f = []
    tp = rng.choice([1, 1, 2, 2, 4]) if fam == "llama3" else rng.choice([1, 2])
    dp = rng.choice(dps or [1, 2, 2])
    cp = 2 if rng.random() < 0.2 else 1
    pp = 2 if rng.random() < 0.3 else 1
    ep = rng.choice([1, 2]) if fam == "deepseek3" else 1
    if tp * dp * cp * pp * ep > max_ranks:
        pp, cp = 1, 1
    if tp * dp * cp * pp * ep > max_ranks:
        tp = 1
    nm = rng.choice([1, 1, 2])
    vpp = 2 if pp > 1 and rng.random() < 0.2 else 1
    layers = pp * vpp * rng.choice([1, 1, 2]) if pp > 1 else rng.choice([1, 2])
    f += ["--layers", str(layers)]
    for name, v in (("--dp", dp), ("--tp", tp), ("--cp", cp), ("--pp", pp), ("--ep", ep)):
        if v > 1:
            f += [name, str(v)]
    if vpp > 1:
        f += ["--vpp", str(vpp)]
    if nm > 1 and not (fam == "deepseek3" and ep > 1):
        f += ["--nm", str(nm)]
    if tp > 1 and rng.random() < 0.3:
        f.append("--sp")
    if cp > 1 and rng.random() < 0.5:
        f += ["--cp-algo", "ring"]
    if fam == "llama3" and pp > 1 and nm > 1 and vpp == 1 and rng.random() < 0.4:
        f += ["--schedule", "1f1b"]
    if rng.random() < 0.3:
        f += ["--optim", "adam"]
        if dp > 1 and rng.random() < 0.5:
            f += ["--zero", str(rng.choice([1, 2, 3]))]
    if rng.random() < 0.15:
        f += ["--clip", rng.choice(["1.0", "0.5"])]
    if rng.random() < 0.2:
        f.append("--loss-mask")
    if rng.random() < 0.1:
        f += ["--label-smoothing", "0.1"]
    if rng.random() < 0.15:
        f.append("--tied")
    if rng.random() < 0.1:
        f += ["--freeze", rng.choice(["wout", "wn1", "wq", "emb"])]
    if fam == "deepseek3" and rng.random() < 0.3:
        f += ["--score", "sigmoid"]
    if fam == "llama3" and rng.random() < 0.05:
        f += ["--variant", rng.choice(["zero2_allreduce", "unbalanced_partition", "single_rank_collective"])]
    return fam, f


class Tools:
    def __init__(self, args):
        self.bin = os.path.abspath(args.bin)
        self.check_timeout = args.check_timeout
        self.run_timeout = args.run_timeout
        self.max_ms = args.max_ms
        self.tmp = tempfile.mkdtemp(prefix="diff_plan.")

    def exec(self, argv, timeout, cwd=None):
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                               cwd=cwd)
            return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode("utf-8", "replace")
            return "timeout", out, (e.stderr or b"").decode("utf-8", "replace")

    def check(self, path, extra=(), cross=False):
        argv = [self.bin, "check", path, "--no-progress", "-j", "1", "--max-ms", str(self.max_ms)]
        # the check's own whole-run budget, below the driver's: a slow mutant ends in UNKNOWN
        # (limit timeout), so that a `hang` is a run that ignores its budget
        if self.check_timeout >= 4:
            argv += ["--timeout", "%d" % int(self.check_timeout * 3 / 4)]
        if not cross:
            argv.append("--no-cross-check")
        else:  # the cross-checked run keeps it on even when the plan's `# args:` turn it off
            extra = [a for a in extra if a != "--no-cross-check"]
        return self.exec(argv + list(extra), self.check_timeout)

    def run(self, path, seed, extra=()):
        argv = [self.bin, "run", path, "--seed", str(seed), "--max-mem", "2048"] + list(extra)
        return self.exec(argv, self.run_timeout)

    def gen(self, fam, flags):
        return self.exec([self.bin, "gen", fam] + flags, 60)


# ---- verdicts --------------------------------------------------------------------------------------------

SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer")


def check_verdict(rc, out, err):
    if rc == "timeout":
        return "TIMEOUT"
    if rc < 0 or rc > 4 or SANITIZER.search(err):
        return "CRASH"
    return {0: "EQ", 1: "NE", 2: "BAD", 3: "UNK", 4: "INT"}[rc]


def run_verdict(rc, out, err):
    if rc == "timeout":
        return "TIMEOUT"
    if rc < 0 or rc > 4 or SANITIZER.search(err):
        return "CRASH"
    if rc == 0:
        return "AGREE"
    if rc == 1:
        return "DIFFER"
    if rc == 2:
        return "BAD"
    if rc == 4:
        return "INT"
    if "TOO LARGE" in out or "TOO LARGE" in err:
        return "LARGE"
    m = re.search(r"(\d+) undecided", out)
    return "OVERLAP" if m and m.group(1) == "0" else "UNDEC"


NO_DIFFERENCE = ("AGREE", "OVERLAP")
CUT_USED = re.compile(r"^mesh cutoff: .* checked as ", re.M)


def args_line(text):
    m = re.search(r"^# args: *(.*)$", text, re.M)
    return m.group(1).split() if m else []


def evaluate(tools, text, name, plan, run_seeds):
    """Both tools on one file; returns a record with the verdict pair and every output."""
    path = os.path.join(tools.tmp, name)
    with open(path, "w") as f:
        f.write(text)
    extra = args_line(text) + (["--plan", plan] if plan else [])
    run_extra = ["--plan", plan] if plan else []
    rec = {"path": path, "extra": extra, "run_extra": run_extra}
    rc, out, err = tools.check(path, extra)
    rec["check"] = (rc, out, err)
    cv = check_verdict(rc, out, err)
    runs = []
    for s in run_seeds:
        r = tools.run(path, s, run_extra)
        v = run_verdict(*r)
        runs.append((s, v, r))
        if cv != "NE" and cv != "EQ":
            break                      # only bad input, crashes and hangs matter here
        if cv == "EQ" and v != "DIFFER" and v not in NO_DIFFERENCE:
            break
        if v not in NO_DIFFERENCE:
            break                      # a difference, a limit or an error: seed 1 says it all
    rec["runs"] = runs
    vs = [v for _, v, _ in runs]
    if "CRASH" in vs:
        rv = "CRASH"
    elif "TIMEOUT" in vs:
        rv = "TIMEOUT"
    elif "DIFFER" in vs:
        rv = "DIFFER"
    elif all(v in NO_DIFFERENCE for v in vs):
        rv = "AGREE" if all(v == "AGREE" for v in vs) else "OVERLAP"
    else:
        rv = vs[-1]
    rec["pair"] = (cv, rv)
    return rec


def classify(tools, rec):
    """The find class of a record (None: no find), running the follow-up checks it needs."""
    cv, rv = rec["pair"]
    path, extra = rec["path"], rec["extra"]
    if cv in ("CRASH", "INT") or rv in ("CRASH", "INT"):
        return "crash"
    if cv == "TIMEOUT" or rv == "TIMEOUT":
        return "hang"
    if cv != "BAD" and rv == "BAD":
        strict = tools.check(path, extra + ([] if "--strict-shapes" in extra else ["--strict-shapes"]))
        rec["strict"] = strict
        # the default reduction let shapes meet that differ at the real sizes (docs/soundness.md)
        return "shape-reduction" if check_verdict(*strict) == "BAD" else "input-disagreement"
    if cv == "BAD" and rv not in ("BAD", "LARGE"):
        return "input-disagreement"
    if cv == "EQ" and rv == "DIFFER":
        strict = tools.check(path, extra + ([] if "--strict-shapes" in extra else ["--strict-shapes"]))
        rec["strict"] = strict
        cross = tools.check(path, extra, cross=True)
        rec["cross"] = cross
        sv = check_verdict(*strict)
        if sv == "NE":
            return "shape-reduction"
        return "wrong-equivalent"
    # the checker alone keeps NOT EQUIVALENT only for an inputs-only counterexample at the real
    # sizes; another stage difference is UNKNOWN for want of the cross-check that lifts it
    unlifted = cv == "UNK" and "--no-cross-check skips the reference executor" in rec["check"][1]
    if (cv == "NE" or unlifted) and rv in NO_DIFFERENCE:
        cross = tools.check(path, extra, cross=True)
        rec["cross"] = cross
        xv = check_verdict(*cross)
        if xv in ("CRASH", "INT"):
            return "crash"
        if xv == "TIMEOUT":
            return "hang"
        if xv != "NE":
            return "ne-demoted"         # the cross-check found no witness: UNKNOWN, as documented
        return classify_witness(tools, rec)
    return None


def without_dims(extra):
    out, skip = [], False
    for a in extra:
        if skip:
            skip = False
        elif a == "--dims":
            skip = True
        else:
            out.append(a)
    return out


def classify_witness(tools, rec):
    """NOT EQUIVALENT with a witness, while the real-size runs found no difference: replay the
    witness (an inputs-only counterexample through `run --dims <checked sizes> --inputs`).
    unrealizable-cex: it does not reproduce.  rare-witness: it reproduces and the plan is NOT
    EQUIVALENT at its real sizes too (`check --dims <real sizes>`): a difference random inputs
    miss (an all-zero mask row).  reduced-only-cex: it reproduces only at the checked sizes; at
    the real sizes the plan is not NOT EQUIVALENT (sizes equal at the real sizes, like H/2 and K,
    reduced to different values)."""
    path, extra = rec["path"], rec["extra"]
    out = rec["cross"][1]
    if re.search(r"^  counterexample: .* more; --verbose shows all\)$", out, re.M):
        # a long counterexample is listed in part: replaying part of it draws the rest at
        # random (seed 2620's uneven_shard_empty_rank replayed AGREE); list it whole
        out = tools.check(path, list(extra) + ["--verbose"], cross=True)[1]
    with open(path) as f:
        text = f.read()
    dims = reduced_dims(out)
    same = dims is None or dims[0] == dims[1]
    reproduced = None
    names = literal_dims(text)
    if "end-to-end witness: the counterexample above" in out and dims is not None:
        inputs = cex_inputs(out, text, dims[0])
        if inputs is not None:
            ipath = path + ".inputs"
            with open(ipath, "w") as f:
                f.write(inputs)
            dflag = ",".join("%s=%d" % (n, dims[0][n]) for n in names if n in dims[0])
            r = tools.run(path, 1, rec["run_extra"] + (["--dims", dflag] if dflag else []) + ["--inputs", ipath])
            rec["replay"] = r
            reproduced = run_verdict(*r) == "DIFFER"
    elif "end-to-end witness (reference executor, the checked sizes" in out:
        reproduced = True
    elif "end-to-end witness (reference executor, the real sizes" in out:
        reproduced = same = True
    if not reproduced:
        return "unrealizable-cex"
    if same:
        return "rare-witness"
    real = ",".join("%s=%d" % (n, dims[1][n]) for n in names if n in dims[1])
    r = tools.check(path, without_dims(extra) + (["--dims", real] if real else []))
    rec["real"] = r
    if check_verdict(*r) == "NE":
        return "rare-witness"
    # the real-size check may stop at a limit; a difference the first run seeds missed (a max
    # over members, e4 of relu values: seed 7802's mutants 7 and 113) is found by a few more
    for sd in range(max(rec_seeds(rec)) + 1, max(rec_seeds(rec)) + 6):
        rr = tools.run(path, sd, rec["run_extra"])
        if run_verdict(*rr) == "DIFFER":
            rec["runs"].append((sd, "DIFFER", rr))
            return "rare-witness"
    strict = tools.check(path, extra + ([] if "--strict-shapes" in extra else ["--strict-shapes"]), cross=True)
    rec["strict"] = strict
    return "reduced-only-cex"


def rec_seeds(rec):
    return [s for s, _, _ in rec["runs"]] or [0]


def reduced_dims(out):
    """(reduced, real) dims of a check report, or None."""
    m = re.search(r"^reduced dims: (.*?)  \(real: (.*)\)$", out, re.M)
    if not m:
        return None
    parse = lambda t: {k: int(v) for k, v in (p.split("=") for p in t.split())}
    return parse(m.group(1)), parse(m.group(2))


def literal_dims(text):
    """Names of the dims the file gives as plain numbers (the ones --dims may set)."""
    out = []
    for m in re.finditer(r"^\s*dim (.*?)(?:#.*)?$", text, re.M):
        for part in m.group(1).split(","):
            kv = part.split("=")
            if len(kv) == 2 and kv[1].strip().isdigit():
                out.append(kv[0].strip())
    return out


def dim_value(expr, dims):
    """Value of a size expression of a declaration (integers, dims, + - * / ^ and parentheses)."""
    py = []
    for t in lex(expr):
        if t.kind == "ident":
            if t.text not in dims:
                raise ValueError(t.text)
            py.append(str(dims[t.text]))
        elif t.kind == "num" and t.text.isdigit():
            py.append(t.text)
        elif t.text in ("+", "-", "*", "(", ")"):
            py.append(t.text)
        elif t.text == "/":
            py.append("//")
        elif t.text == "^":
            py.append("**")
        else:
            raise ValueError(t.text)
    return int(eval(" ".join(py), {"__builtins__": {}}))


def input_shapes(text, dims):
    """Shapes of the model's declared tensors at these dims: name -> [sizes]."""
    shapes = {}
    for s in Info(text).stmts:
        if s.owner and s.owner[0] == "model" and s.kind in ("input", "param"):
            st = s.text(text)
            m = re.match(r"(?:input|param)\s+([A-Za-z_][\w.]*)\s*(?:\[[^\]]*\])?\s*:\s*\[([^\]]*)\]", st)
            if m:
                shapes[m.group(1)] = [dim_value(e, dims) for e in m.group(2).split(",") if e.strip()]
    return shapes


def cex_inputs(out, text, dims):
    """The checker's counterexample as `run --inputs` lines (row-major element indices)."""
    m = re.search(r"^  counterexample: (.*)$", out, re.M)
    if not m:
        return None
    shapes = input_shapes(text, dims)
    lines = []
    if "--verbose shows all" in m.group(1):
        return None  # listed in part
    for part in m.group(1).split(", "):   # indices have no blank after their commas
        sym, _, val = part.partition(" = ")
        if not re.match(r"^-?\d+(/\d+)?$", val.strip()):
            return None
        mm = re.match(r"^(.*?)(?:\[([\d,]+)\])?$", sym)
        name, idx = mm.group(1), mm.group(2)
        base = re.sub(r"\[\d+\]$", "", name)
        base = re.sub(r"^(momentum|adam\.m|adam\.v)\.", "", base)
        if base not in shapes:
            return None
        shape = shapes[base]
        ix = [int(v) for v in idx.split(",")] if idx else []
        if len(ix) != len(shape):
            return None
        flat = 0
        for i, n in zip(ix, shape):
            flat = flat * n + i
        lines.append("%s[%d] = %s" % (name, flat, val.strip()))
    return "\n".join(lines) + "\n"


FINDS = ("wrong-equivalent", "unrealizable-cex", "reduced-only-cex", "crash", "hang")
# Notes, saved (at most NOTES_SAVED per class and run) but not finds: shape-reduction (the
# documented default reduction), rare-witness (a real difference random inputs miss), ne-demoted
# (the checker alone said NOT EQUIVALENT, its cross-check made it UNKNOWN), input-disagreement.
NOTES_SAVED = 40


def save_find(outdir, cls, name, text, rec, desc):
    d = os.path.join(outdir, cls)
    os.makedirs(d, exist_ok=True)
    base = os.path.join(d, name)
    with open(base + ".sp", "w") as f:
        f.write(text)
    with open(base + ".txt", "w") as f:
        f.write("class: %s\npair: %s / %s\n" % (cls, rec["pair"][0], rec["pair"][1]))
        f.write("mutations:\n" + "".join("  %s: %s\n" % m for m in desc))
        f.write("check args: %s\n" % " ".join(rec["extra"]))
        rc, out, err = rec["check"]
        f.write("\n==== check --no-cross-check (exit %s)\n%s\n---- stderr\n%s\n" % (rc, out, err))
        for s, v, (rc, out, err) in rec["runs"]:
            f.write("\n==== run --seed %d: %s (exit %s)\n%s\n---- stderr\n%s\n" % (s, v, rc, out, err))
        if "replay" in rec:
            rc, out, err = rec["replay"]
            f.write("\n==== run of the counterexample (exit %s)\n%s\n---- stderr\n%s\n" % (rc, out, err))
        for key, what in (("strict", "check --strict-shapes"), ("cross", "check (cross-check on)"),
                          ("real", "check --no-cross-check --dims <the real sizes>")):
            if key in rec:
                rc, out, err = rec[key]
                f.write("\n==== %s (exit %s)\n%s\n---- stderr\n%s\n" % (what, rc, out, err))


# ---- the corpus ------------------------------------------------------------------------------------------

# Corpus files whose real sizes are too large for the reference executor, by name prefix (the
# sizes of tests/test_ref.c; a run of llama_layer.sp at its own sizes takes 20 s)
SMALL_FILE_DIMS = {"llama_": {"HD": 8, "S": 4, "H": 8, "F": 8}}


def set_dims(text, new):
    """Set the literal values of these dims in the file's dim statements."""
    def one(m):
        name, val = m.group(1), m.group(2)
        return "%s = %d" % (name, new[name]) if name in new else m.group()

    return re.sub(r"^(\s*dim .*)$",
                  lambda ln: re.sub(r"\b([A-Za-z_]\w*)\s*=\s*(\d+)\b", one, ln.group(1)), text, flags=re.M)


def corpus_files(dirs=None):
    """The seed files: docs/examples, tests/plans/ok and tests/plans/bugs, or the --corpus-dir
    directories instead when given."""
    out = []
    for d in dirs or ("docs/examples", "tests/plans/ok", "tests/plans/bugs"):
        p = os.path.join(ROOT, d)
        for n in sorted(os.listdir(p)):
            if n.endswith(".sp"):
                out.append(os.path.join(d, n))
    return out


class Seeds:
    """Seed plans, validated once: (name, text, plan or None, baseline pair)."""

    def __init__(self, tools, args, log):
        self.tools, self.args, self.log = tools, args, log
        self.corpus = []
        self.gen_cache = {}
        self.baselines = []   # records of the unmutated seeds
        self.cut = {}         # seed name -> {axis: (real, checked)} of its unmutated check's report
        if not args.no_corpus:
            for rel in corpus_files(args.corpus_dir):
                if args.only_seed and args.only_seed not in rel:
                    continue
                with open(os.path.join(ROOT, rel)) as f:
                    raw = f.read()
                # a plan that shows an open hole of the checker alone (docs/soundness.md "Open"),
                # which only the cross-check catches, is no seed: it and its mutants are known
                if re.search(r"^# fuzz: not a seed", raw, re.M):
                    log("seed %s: skipped (marked: not a seed)" % rel)
                    continue
                text = self.shrink_corpus(os.path.basename(rel)[:-3], raw)
                if text is None:
                    log("seed %s: skipped (no small real sizes known)" % rel)
                    continue
                if args.cutoff_mutations and not re.search(r"^\s*mesh .*=\s*([4-9]|[1-9]\d+)\b", text, re.M):
                    log("seed %s: skipped (no mesh axis of 4 or more ranks to cut)" % rel)
                    continue
                self.corpus.append([os.path.basename(rel)[:-3], text, None, None])   # name, text, plan, usable

    def corpus_seed(self, rng):
        """A corpus file; its unmutated form is evaluated on first use (too large: drawn again)."""
        for _ in range(20):
            if self.args.cutoff_mutations:   # only seeds not known to be unusable
                pool = [c for c in self.corpus if c[3] is not False]
                if not pool:
                    return None
                c = rng.choice(pool)
            else:
                c = rng.choice(self.corpus)
            if c[3] is None:
                plans = Info(c[1]).plans
                c[2] = plans[0] if len(plans) > 1 else None
                rec = evaluate(self.tools, c[1], c[0] + ".sp", c[2], self.args.run_seeds)
                self.baselines.append((c[0], rec))
                self.cut[c[0]] = parse_cut(rec["check"][1])
                c[3] = rec["pair"][1] != "LARGE"
                if not c[3]:
                    self.log("seed %s: skipped (the reference run is TOO LARGE)" % c[0])
                elif self.args.cutoff_mutations and not self.cut[c[0]]:
                    c[3] = False
                    self.log("seed %s: skipped (its check does not use the mesh cutoff)" % c[0])
            if c[3]:
                return c[0], c[1], c[2]
        return None

    def shrink_corpus(self, name, text):
        fam, names = family_of(text)
        if fam:
            m = re.search(r"^# Generated by: shardproof gen \S+ (.*)$", text, re.M)
            flags = m.group(1).split() if m else []
            old = base_dims(text, names)
            rng = random.Random("corpus:" + name)
            return rewrite_dims(text, names, small_dims(fam, flags, old, rng))
        for prefix, dims in SMALL_FILE_DIMS.items():
            if name.startswith(prefix):
                return set_dims(text, dims)
        return text

    def gen_seed(self, rng):
        """A generated plan at small real sizes whose unmutated form is EQUIVALENT and agrees."""
        for _ in range(6):
            fam, flags = random_gen_flags(rng, self.args.gen_dp, self.args.gen_max_ranks)
            key = (fam, tuple(flags))
            if key in self.gen_cache:
                if self.gen_cache[key] is not None:
                    return self.gen_cache[key]
                continue
            rc, out, err = self.tools.gen(fam, flags)
            if rc != 0:
                self.gen_cache[key] = None
                continue
            names = DEEPSEEK_DIMS if fam == "deepseek3" else LLAMA_DIMS
            old = base_dims(out, names)
            found = None
            for attempt in range(3):
                dims = small_dims(fam, flags, old, random.Random("%s:%s:%d" % (fam, " ".join(flags), attempt)))
                text = rewrite_dims(out, names, dims)
                if text is None:
                    break
                name = "gen-%s-%08x" % (fam, abs(hash_str(" ".join(flags) + str(attempt))))
                rec = evaluate(self.tools, text, name + ".sp", None, self.args.run_seeds[:1])
                self.baselines.append((name + " " + " ".join(flags) + " " + fmt_dims(dims, names), rec))
                if (rec["pair"][0] == "EQ" and rec["pair"][1] in NO_DIFFERENCE + ("UNDEC",)
                        and (not self.args.gen_require or re.search(self.args.gen_require, rec["check"][1], re.M))):
                    found = (name, text, None, fam + " " + " ".join(flags), dims)
                    self.cut[name] = parse_cut(rec["check"][1])
                    break
            self.gen_cache[key] = found
            if found:
                return found
            self.log("gen %s %s: no small sizes verify (last pair %s/%s)" % (fam, " ".join(flags), *rec["pair"]))
        return None


def fmt_dims(d, names):
    return ",".join("%s=%d" % (n, d[n]) for n in names)


def hash_str(s):
    """A hash that does not depend on PYTHONHASHSEED."""
    h = 1469598103934665603
    for c in s.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def first_error(r):
    """The first diagnostic of a tool's output, without its location."""
    for ln in (r[2] + "\n" + r[1]).split("\n"):
        m = re.search(r":\d+:\d+: error: (.*)", ln)
        if m:
            return m.group(1)
    return ""


def cpu_seconds():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


# ---- main -----------------------------------------------------------------------------------------------

def print_table(pairs, cvs, rvs):
    print("%-8s" % "" + "".join("%9s" % r for r in rvs))
    for c in cvs:
        row = [pairs.get((c, r), 0) for r in rvs]
        if any(row):
            print("%-8s" % c + "".join("%9d" % x for x in row))


def fuzz(args):
    tools = Tools(args)
    verbose = args.verbose
    log = (lambda m: print(m, flush=True)) if verbose else (lambda m: None)
    t0, c0 = time.time(), cpu_seconds()
    seeds = Seeds(tools, args, log)
    pairs, harmless, finds, mutkinds, n, disagree = {}, {}, [], {}, 0, {}
    cut_pairs, ncut = {}, 0    # mutants whose check reports `mesh cutoff: ... checked as`
    # mutants with a mutation aimed at the cut (--cutoff-mutations): per kind [mutants, cut used,
    # cut given up, value-changing with the cut used and: check EQ, a difference found at the cut
    # size (NE, or UNKNOWN with a failing stage), UNKNOWN without one (a limit)]; their pairs
    cm_stats, cm_pairs, cm_vc_pairs = {}, {}, {}
    base_finds, nbase = [], 0
    i = args.draw if args.draw is not None else 0
    while True:
        if args.mutants is not None and i >= args.mutants:
            break
        if args.draw is not None and i > args.draw:
            break
        if args.cpu_seconds is not None and cpu_seconds() - c0 >= args.cpu_seconds:
            break
        if args.wall_seconds is not None and time.time() - t0 >= args.wall_seconds:
            break
        rng = random.Random("%d:%d" % (args.seed, i))
        use_gen = not args.no_gen and (args.no_corpus or not seeds.corpus or rng.random() < args.gen_share)
        src = None
        if use_gen:
            g = seeds.gen_seed(rng)
            if g:
                src = (g[0], g[1], g[2], g[3] + " " + fmt_dims(g[4], DEEPSEEK_DIMS if "deepseek3" in g[3] else LLAMA_DIMS))
        if src is None and seeds.corpus:
            c = seeds.corpus_seed(rng)
            if c:
                src = (c[0], c[1], c[2], c[0])
        if src is None:
            print("diff_plan: no seed plans", file=sys.stderr)
            return 2
        for bname, brec in seeds.baselines[nbase:]:   # the unmutated seeds evaluated for this draw
            cls = classify(tools, brec)
            if cls:
                base_finds.append((cls, bname))
                with open(brec["path"]) as f:
                    save_find(args.out, cls, "seed-" + bname.split()[0], f.read(), brec, [])
                print("%s %s: unmutated seed %s" % ("FIND" if cls in FINDS else "note", cls, bname), flush=True)
        nbase = len(seeds.baselines)
        name, text, plan, label = src
        if args.cutoff_mutations:
            mtext, desc = mutate_cut(text, rng, seeds.cut.get(name, {}))
        else:
            count = rng.choice([1, 1, 1, 2, 2, 3])
            mtext, desc = mutate(text, rng, count)
        i += 1
        if not desc:
            continue
        n += 1
        for k, _ in desc:
            mutkinds[k] = mutkinds.get(k, 0) + 1
        mname = "%s-s%d-m%d" % (name, args.seed, i - 1)
        tm = time.time()
        rec = evaluate(tools, mtext, "mutant.sp", plan, args.run_seeds)
        cls = classify(tools, rec)
        tm = time.time() - tm
        pairs[rec["pair"]] = pairs.get(rec["pair"], 0) + 1
        cut = bool(CUT_USED.search(rec["check"][1]))
        if cut:
            ncut += 1
            cut_pairs[rec["pair"]] = cut_pairs.get(rec["pair"], 0) + 1
        if all("(harmless)" in d for _, d in desc):
            harmless[rec["pair"]] = harmless.get(rec["pair"], 0) + 1
        cms = [d for k, d in desc if k == "cutoff"]
        if cms:
            vc = any("(harmless)" not in d for _, d in desc)
            gaveup = bool(re.search(r"^mesh cutoff: none", rec["check"][1], re.M))
            for key in ["all"] + sorted({d.split(":")[0] for d in cms}):
                st = cm_stats.setdefault(key, [0, 0, 0, 0, 0, 0])
                failing = rec["pair"][0] == "NE" or (rec["pair"][0] == "UNK" and
                                                      re.search(r"^first failing stage", rec["check"][1], re.M))
                st[0] += 1
                st[1] += cut
                st[2] += gaveup
                st[3] += cut and vc and rec["pair"][0] == "EQ"
                st[4] += bool(cut and vc and failing)
                st[5] += bool(cut and vc and rec["pair"][0] == "UNK" and not failing)
            cm_pairs[rec["pair"]] = cm_pairs.get(rec["pair"], 0) + 1
            if cut and vc:
                cm_vc_pairs[rec["pair"]] = cm_vc_pairs.get(rec["pair"], 0) + 1
        line = "%5d %-32s %s/%s%s %4.1fs %s" % (i - 1, label[:32], rec["pair"][0], rec["pair"][1],
                                             " cut" if cut else "", tm,
                                             "; ".join(d for _, d in desc)[:150])
        if args.draw is not None:
            save_find(args.out, "draw", mname, mtext, rec, desc)
            print("draw %d: %s (saved in %s/draw/%s.sp)" % (i - 1, cls or "no find", args.out, mname))
        if cls:
            finds.append((cls, mname, label, desc))
            if cls in FINDS or sum(1 for f in finds if f[0] == cls) <= NOTES_SAVED:
                save_find(args.out, cls, mname, mtext, rec, desc)
            if cls == "input-disagreement":
                msg = first_error(rec["check"]) or first_error(rec["runs"][0][2])
                who = "check" if rec["pair"][0] == "BAD" else "run"
                msg = re.sub(r"'[^']*'", "'_'", re.sub(r"\[[\d, ]*\]", "[_]", msg))
                disagree[(who, msg)] = disagree.get((who, msg), 0) + 1
            print("%s %s: %s" % ("FIND" if cls in FINDS else "note", cls, line), flush=True)
        elif verbose:
            print(line, flush=True)
        if verbose and "BAD" in rec["pair"]:
            print("      check: %s | run: %s" % (first_error(rec["check"]), first_error(rec["runs"][0][2])), flush=True)
    cpu = cpu_seconds() - c0
    print("\ndiff_plan: seed %d, %d mutants (%d draws), %.0f s wall, %.0f s CPU (this process and its children)"
          % (args.seed, n, i - (args.draw or 0), time.time() - t0, cpu))
    print("seed plans: %d corpus files used (%d too large), %d generated configurations (%d kept)" %
          (sum(1 for c in seeds.corpus if c[3]), sum(1 for c in seeds.corpus if c[3] is False),
           len(seeds.gen_cache), sum(1 for v in seeds.gen_cache.values() if v)))
    print("mutations: " + ", ".join("%s %d" % kv for kv in sorted(mutkinds.items())))
    cvs = ["EQ", "NE", "UNK", "BAD", "INT", "CRASH", "TIMEOUT"]
    rvs = ["AGREE", "OVERLAP", "UNDEC", "DIFFER", "LARGE", "BAD", "INT", "CRASH", "TIMEOUT"]
    print("\nverdict pairs (rows: check --no-cross-check; columns: run over the seeds %s)" %
          ",".join(map(str, args.run_seeds)))
    print_table(pairs, cvs, rvs)
    if ncut or any(CUT_USED.search(r["check"][1]) for _, r in seeds.baselines):
        print("unmutated seeds whose check used the mesh cutoff (`checked as`): %d of %d" %
              (sum(1 for _, r in seeds.baselines if CUT_USED.search(r["check"][1])), len(seeds.baselines)))
        print("mutants whose check used the mesh cutoff: %d" % ncut)
        print_table(cut_pairs, cvs, rvs)
    if cm_stats:
        print("mutations aimed at the mesh cutoff (--cutoff-mutations), per kind: mutants, cut used "
              "(`checked as`), cut given up (`mesh cutoff: none`); value-changing with the cut used: "
              "check EQ, a difference found at the cut size (NE, or UNKNOWN with a failing stage), "
              "UNKNOWN undecided")
        print("  %-13s %7s %7s %7s %7s %7s %7s" % ("kind", "mutants", "cut", "gaveup", "cut-EQ", "cut-dif", "cut-und"))
        for key, st in sorted(cm_stats.items(), key=lambda kv: (kv[0] != "all", kv[0])):
            print("  %-13s %7d %7d %7d %7d %7d %7d" % (key, *st))
        print("their verdict pairs:")
        print_table(cm_pairs, cvs, rvs)
        if cm_vc_pairs:
            print("of which value-changing with the cut used (a value-changing mutation proved or refuted at the cut size):")
            print_table(cm_vc_pairs, cvs, rvs)
    if harmless:
        print("of which mutants with only value-keeping rewrites (expected EQ / no difference):")
        print_table(harmless, cvs, rvs)
    bad = [f for f in finds + [(c, nm, "", []) for c, nm in base_finds] if f[0] in FINDS]
    counts = {}
    for f in finds:
        counts[f[0]] = counts.get(f[0], 0) + 1
    print("\nclassified: " + (", ".join("%s %d" % kv for kv in sorted(counts.items())) or "nothing"))
    for cls, nm in base_finds:
        print("unmutated seed %s: %s" % (nm, cls))
    if disagree:
        print("input disagreements (the tool that rejects, its first message):")
        for (who, msg), k in sorted(disagree.items(), key=lambda kv: (-kv[1], kv[0]))[:15]:
            print("  %5d %-5s %s" % (k, who, msg[:110]))
    print("finds (%s): %d; saved under %s" % (", ".join(FINDS), len(bad), args.out))
    shutil.rmtree(tools.tmp, ignore_errors=True)
    return 1 if bad else 0


def classify_one(args):
    tools = Tools(args)
    with open(args.classify) as f:
        text = f.read()
    rec = evaluate(tools, text, os.path.basename(args.classify), args.plan, args.run_seeds)
    cls = classify(tools, rec)
    print("%s: %s / %s -> %s" % (args.classify, rec["pair"][0], rec["pair"][1], cls or "no find"))
    shutil.rmtree(tools.tmp, ignore_errors=True)
    return 1 if cls in FINDS else 0


def main():
    ap = argparse.ArgumentParser(description="plan-level differential fuzzer: check against run")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/shardproof"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutants", type=int, default=None, help="stop after this many draws")
    ap.add_argument("--cpu-seconds", type=float, default=None,
                    help="stop when this process and its children used this much CPU")
    ap.add_argument("--wall-seconds", type=float, default=None,
                    help="stop when this much wall time has passed (also with --cpu-seconds)")
    ap.add_argument("--smoke", action="store_true", help="the CI run: seed 1, 20 draws")
    ap.add_argument("--out", default=os.path.join(ROOT, "fuzz/finds-work"))
    ap.add_argument("--run-seeds", default="1,2,3")
    ap.add_argument("--check-timeout", type=float, default=120)
    ap.add_argument("--run-timeout", type=float, default=60)
    ap.add_argument("--max-ms", type=int, default=10000, help="check's --max-ms per query")
    ap.add_argument("--gen-share", type=float, default=0.5, help="share of mutants of gen plans")
    ap.add_argument("--no-gen", action="store_true")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--corpus-dir", action="append", default=None,
                    help="seed files from this directory instead of the default three (repeatable)")
    ap.add_argument("--gen-dp", default=None, help="dp sizes of the gen plans, e.g. 4,8,16 (default 1,2,2)")
    ap.add_argument("--gen-require", default=None,
                    help="keep a gen configuration only if its unmutated check's output matches this "
                         "regex (e.g. '^mesh cutoff: .* checked as ')")
    ap.add_argument("--gen-max-ranks", type=int, default=8, help="ranks of a gen plan at most")
    ap.add_argument("--cutoff-mutations", action="store_true",
                    help="every mutant gets a mutation aimed at the mesh cutoff (with a --bin that adds "
                         "--mesh-cutoff); only seeds whose unmutated check uses the cut (--gen-require "
                         "defaults to its line)")
    ap.add_argument("--only-seed", default=None, help="only corpus files whose path contains this")
    ap.add_argument("--classify", default=None, help="classify one file (a saved find) and exit")
    ap.add_argument("--draw", type=int, default=None,
                    help="only this draw of --seed (a mutant of the log), saved under OUT/draw/")
    ap.add_argument("--plan", default=None)
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    args.run_seeds = [int(s) for s in args.run_seeds.split(",")]
    args.gen_dp = [int(s) for s in args.gen_dp.split(",")] if args.gen_dp else None
    if args.cutoff_mutations and args.gen_require is None:
        args.gen_require = CUT_USED.pattern
    if args.smoke:
        args.seed, args.mutants = 1, args.mutants or 20
    if args.draw is not None:
        args.mutants = None
    elif args.mutants is None and args.cpu_seconds is None and not args.classify:
        args.mutants = 200
    if not os.access(args.bin, os.X_OK):
        print("diff_plan: %s is not an executable (build it first: make)" % args.bin, file=sys.stderr)
        return 2
    if args.classify:
        return classify_one(args)
    return fuzz(args)


if __name__ == "__main__":
    sys.exit(main())
