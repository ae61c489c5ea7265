"""capture.py: record every ATen operator and collective of one process (a TorchDispatchMode).

The recorder turns what runs into a trace of single-assignment values:

* every tensor version is a value id (vid); an operator reads the vids of its tensor arguments
  and defines new vids for what it returns and for the arguments it writes (in-place and out=
  operators, collectives), so in-place code becomes SSA;
* tensors are known by their memory (storage, offset, sizes, strides): views, `.data`,
  `detach()` and `set_()` aliases of a tensor read the same vid; a write through one view of a
  storage that other views alias is tracked on the storage as a list of byte segments
  (contiguous views only), so DistributedDataParallel's bucket views read what was written
  into the bucket, and memory read as another element type than it was written is a value
  (`_reinterpret`) that emit.py folds when constant and refuses otherwise;
* every read compares the memory with the value the recorder holds for it: memory changed
  without an operator (numpy, ctypes) holds a new value (`_external_write`, likewise);
* a tensor read without a recorded producer is a leaf: a registered input or parameter, or a
  constant whose concrete value is kept;
* values that reach Python without an operator (.numpy(), .tolist(), data_ptr(), a tensor in
  the data of torch.tensor, float(), pickling) are recorded as `_local_scalar_dense`, the
  operator of .item(), which emit.py refuses for a value computed from registered tensors;
* each operator carries the user's Python file:line: the innermost frame of the user's file, or
  for the backward operators autograd runs, the line of the forward call that created the
  autograd node (found through node pre-hooks installed by a TorchFunctionMode);
* collectives are recorded by wrappers of torch.distributed's functions (group ranks, reduce
  operator, peers, and for a send or recv its tag and the index of its message among those
  of its peer and tag); an asynchronous collective runs at once, an isend or irecv is posted
  and waited for at its work's wait() (where an irecv is recorded), and their tensors stay
  pending (any access refused) until the program waits for the work; every wait is published
  on the rank's board (waits.py) for run.py's deadlock check, and so is
  DistributedDataParallel's constructor, as one collective of its group (its own collectives
  run unrecorded); collectives issued by C++
  (DistributedDataParallel's reducer) arrive as c10d dispatcher operators and use the group of
  the DistributedDataParallel instance; the tensor of a rank other than dst after a reduce
  holds what the backend left there (`_backend_defined`, which emit.py refuses when computed
  from registered tensors: gloo leaves partial results, NCCL the input);
* cut points: at the output of every watched module, at the gradient autograd computes for it,
  at the outputs of a custom autograd.Function's forward and the gradients its backward returns,
  and at the gradient an optimizer's step reads, the recorder adds an identity operator "cut"
  whose output replaces the value (every later read sees the cut); emit.py relates it to the
  model value of the same key, or drops it.
"""

import contextlib
import os
import sys
import threading

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .waits import Board, Waiting

_tls = threading.local()
_active = [None]


def current_recorder():
    return _active[0]


class CaptureError(Exception):
    """Something the capture cannot represent; the message names the Python file:line."""


def ref(vid):
    return ("v", vid)


def is_ref(x):
    return isinstance(x, tuple) and len(x) == 2 and x[0] == "v"


def _quiet(fn):
    """Run a recorder method with the recorder paused (its own tensor operations are not the
    user's)."""
    def f(self, *a, **k):
        self.paused += 1
        try:
            return fn(self, *a, **k)
        finally:
            self.paused -= 1
    f.__name__ = fn.__name__
    f.__doc__ = fn.__doc__
    return f


class Val:
    __slots__ = ("shape", "dtype", "value", "kind", "name", "loc", "producer")

    def __init__(self, shape, dtype, value, kind, name=None, loc=None, producer=None):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.value = value  # a CPU tensor (a copy), or None for undefined memory
        self.kind = kind    # op | input | param | const | undef
        self.name = name
        self.loc = loc
        self.producer = producer


class Op:
    __slots__ = ("fn", "args", "outs", "loc", "comm", "cut", "in_bwd")

    def __init__(self, fn, args, outs, loc, comm=None, cut=None, in_bwd=False):
        self.fn = fn        # functional operator name ("mm", "add", "all_reduce", ...)
        self.args = args    # list of (name, value): refs, lists of refs, python values
        self.outs = outs    # list of vids (a list entry may itself be a list for list returns)
        self.loc = loc
        self.comm = comm    # collectives: dict(group=[global ranks], op=..., peer=...)
        self.cut = cut      # fn "cut": dict(key=..., ...) (see Recorder.cut)
        self.in_bwd = in_bwd  # ran inside autograd's backward (a node, a hook, a Function)


class Trace:
    """What one process ran: values, operators, registrations."""

    def __init__(self, rank):
        self.rank = rank
        self.vals = []
        self.ops = []
        self.inputs = {}     # name -> vid
        self.params = {}     # name -> vid of the initial value
        self.final = {}      # name -> (vid of the final value, vid of the final grad or None)
        self.outputs = []    # (name, vid, loc)
        self.mesh = None
        self.file = None


_VIEW_OPS = {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "slice", "select",
             "as_strided", "detach", "alias", "unsqueeze", "squeeze", "diagonal", "narrow",
             "split", "split_with_sizes", "unbind", "chunk", "view_as", "reshape", "_reshape_alias",
             "unfold", "movedim", "lift_fresh"}
_IDENTITY_OPS = {"detach", "alias", "lift_fresh"}


def _dtype_name(dt):
    return str(dt).replace("torch.", "")


def _key(t):
    st = t.storage()
    return (st.data_ptr(), st.element_size(), int(t.storage_offset()), tuple(t.shape),
            tuple(t.stride()), t.dtype)


def _contiguous_block(k):
    """(lo, hi) element range of a key whose view is a contiguous block, else None."""
    _, _, off, shape, stride, _ = k
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return (off, off)
    expect = 1
    for s, st in reversed(list(zip(shape, stride))):
        if s != 1 and st != expect:
            return None
        expect *= s
    return (off, off + n)


def _extent(k):
    _, _, off, shape, stride, _ = k
    lo = hi = off
    for s, st in zip(shape, stride):
        if s == 0:
            return (off, off)
        if st >= 0:
            hi += (s - 1) * st
        else:
            lo += (s - 1) * st
    return (lo, hi + 1)


def _byte_extent(k):
    lo, hi = _extent(k)
    return (lo * k[1], hi * k[1])


def _bits(x):
    """x's elements as integers of their width, so that equality is bit equality (NaN, -0)."""
    if x.is_complex():
        x = torch.view_as_real(x)
    if x.is_floating_point():
        x = x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])
    return x


def _same_memory(value, t):
    """Does the memory of t hold exactly value (a snapshot the recorder took)?"""
    if value is None or tuple(value.shape) != tuple(t.shape) or value.dtype != t.dtype:
        return False
    return bool(torch.equal(_bits(value), _bits(t.detach())))


def _flat_bytes(t):
    """The whole memory of t's storage as a 1-dim uint8 tensor (an alias)."""
    return torch.tensor([], dtype=torch.uint8).set_(t.storage()._storage)


class _Storage:
    """The segments of one storage whose views alias, in bytes: [(lo, hi, vid, vlo)], bytes
    lo..hi of the storage are bytes vlo..vlo+hi-lo of vid (flattened).  Bytes, not elements,
    so that views of other element types (a storage's bytes, set_) find what they read."""

    def __init__(self, nbytes, segs):
        self.nbytes = nbytes
        self.segs = segs

    def write(self, lo, hi, vid):
        out = []
        for (a, b, v, va) in self.segs:
            if b <= lo or a >= hi:
                out.append((a, b, v, va))
                continue
            if a < lo:
                out.append((a, lo, v, va))
            if b > hi:
                out.append((hi, b, v, va + (hi - a)))
        out.append((lo, hi, vid, 0))
        out.sort()
        self.segs = out

    def pieces(self, lo, hi):
        res = []
        for (a, b, v, va) in self.segs:
            if b <= lo or a >= hi:
                continue
            s, e = max(a, lo), min(b, hi)
            res.append((v, va + (s - a), va + (e - a)))
        return res


class _Pending:
    """The memory an asynchronous collective (async_op=True, isend, irecv) reads or writes
    until its work is waited for: bytes lo..hi of the storage at ptr."""

    def __init__(self, t, written, what, loc):
        k = _key(t)
        self.ptr = k[0]
        self.lo, self.hi = _byte_extent(k)
        self.t = t              # kept alive: the address stays this memory's
        self.written = written  # the collective writes it (reads are refused too)
        self.what = what
        self.loc = loc


class _Work:
    """The work an asynchronous collective returns.  The program may not touch its tensors
    before wait() (or is_completed()), so every access of them until then is refused (the
    value read would be the program's race, not the collective's result).

    A collective (async_op=True) ran at once: its wait() only ends the pending state.  An
    isend or irecv is only posted (gloo matches it with its peer's by source, destination and
    tag, whatever the order they are posted and waited in): its wait() waits for gloo's work,
    published on the rank's board (waits.py) so that a world where no wait can complete is
    reported at once; an irecv's value is recorded then (complete)."""

    def __init__(self, rec, work, pending, wait=None, complete=None):
        self._rec, self._work, self._pending = rec, work, pending
        self._wait, self._complete = wait, complete
        self._done = False

    def _settle(self):
        if self._done:
            return
        self._done = True
        for p in self._pending:
            if p in self._rec.pending:
                self._rec.pending.remove(p)
        if self._complete is not None:
            self._complete()

    def wait(self, *a, **k):
        if not self._done and self._wait is not None:
            with self._rec.blocked(dict(self._wait, at=self._rec.op_loc())):
                self._work.wait(*a, **k)
        self._settle()
        return True

    def is_completed(self):
        # an isend's or irecv's: waits, then true.  gloo (torch 1.13) says false until wait()
        # whether the message has arrived or not, so that a loop polling it never ends;
        # true is what the call answers in a run where the message arrived before it
        # (NCCL), and a wait that cannot complete is reported as a deadlock
        return self.wait()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._work, name)


# torch functions that build a tensor from Python data (a tensor inside a list is read as a
# number), and Python conversions of a tensor (FnMode sees them where C++ calls them too:
# torch.asarray([t]), torch.FloatTensor([t]))
_DATA_CTORS = {"tensor", "as_tensor", "asarray", "new_tensor", "sparse_coo_tensor",
               "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
               "sparse_bsc_tensor", "sparse_compressed_tensor"}
_CONVERSIONS = {"__float__": "float()", "__int__": "int()", "__index__": "an index",
                "__bool__": "bool(), a condition", "__complex__": "complex()"}


def _tensors_in_data(x, top=True):
    """The tensors inside the lists and tuples of x (a tensor given as the data itself is
    copied by operators the recorder sees)."""
    if isinstance(x, torch.Tensor):
        if not top:
            yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors_in_data(y, False)


class _FnMode(TorchFunctionMode):
    """Above autograd: remember the user line of every autograd node a torch call creates, and
    install pre/post hooks that tell the recorder which node's backward is running."""

    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        rec = self.rec
        if not rec.paused:
            name = getattr(func, "__name__", "")
            if name in _DATA_CTORS:
                # torch.tensor([t]) reads t's value in C++ without an operator: a
                # constant made from it would be one sample of a computed value
                for x in list(args) + list((kwargs or {}).values()):
                    for t in _tensors_in_data(x):
                        rec.python_read(t, "%s%s() of data holding a tensor" % (
                            "." if name == "new_tensor" else "torch.", name))
            elif name in _CONVERSIONS and args and isinstance(args[0], torch.Tensor):
                rec.python_read(args[0], _CONVERSIONS[name])
        out = func(*args, **(kwargs or {}))
        if rec.paused:
            return out
        outs = out if isinstance(out, (tuple, list)) else (out,)
        loc = None
        for o in outs:
            gf = getattr(o, "grad_fn", None) if isinstance(o, torch.Tensor) else None
            if gf is None or id(gf) in rec.node_loc:
                continue
            if loc is None:
                loc = rec.user_loc()
            rec.note_node(gf, loc)
        return out


class Recorder(TorchDispatchMode):
    def __init__(self, user_file, rank=None, board=None):
        super().__init__()
        # the rank's posted messages and waits (published to run.py when it has a directory)
        self.board = board if board is not None else Board(None, rank)
        self.user_file = user_file
        self.user_dir = os.path.dirname(user_file)
        self.user_files = {}
        self.trace = Trace(rank)
        self.trace.file = user_file
        self.map = {}          # key -> vid
        self.keep = []         # tensors kept alive so that storage addresses are not reused
        self.stor = {}         # storage address -> _Storage
        self.pending = []      # _Pending: memory of asynchronous collectives not waited for
        self.np_shared = set()  # storage addresses numpy or a buffer shares (from_numpy, ...)
        self.deferred = []     # ops to add after the next one (reads of what it writes)
        self.node_loc = {}     # id(autograd node) -> loc
        self.nodes = []
        self.bwd = []          # stack of locs of the autograd nodes running
        self.paused = 0
        self.param_objs = {}   # name -> tensor
        self.comm_ctx = None
        self.ddp_groups = []   # (ranks, group id) of each DistributedDataParallel instance
        self.fnmode = _FnMode(self)
        self.hooked = set()
        self.occ = {}          # cut point kind and name -> calls so far

    # ---- locations --------------------------------------------------------------------------

    def is_user(self, filename):
        """The user's code: the file, and the Python files beside it (modules it imports from
        its own directory)."""
        r = self.user_files.get(filename)
        if r is None:
            r = filename == self.user_file or os.path.dirname(filename) == self.user_dir
            self.user_files[filename] = r
        return r

    def user_loc(self):
        f = sys._getframe(1)
        while f is not None:
            if self.is_user(f.f_code.co_filename):
                return "%s:%d" % (_base(f.f_code.co_filename), f.f_lineno)
            f = f.f_back
        return None

    def _user_depth(self):
        f, n = sys._getframe(1), 0
        while f is not None:
            if self.is_user(f.f_code.co_filename):
                n += 1
            f = f.f_back
        return n

    @contextlib.contextmanager
    def blocked(self, wait):
        """Around a call that may wait for other ranks: paused (the operators it runs are not
        the program's) and its wait published on the board (waits.py)."""
        self.paused += 1
        try:
            with Waiting(self.board, wait):
                yield
        finally:
            self.paused -= 1

    def op_loc(self):
        loc = self.user_loc()
        if self.bwd:
            depth, nloc = self.bwd[-1]
            # user frames deeper than where backward() was called (a custom Function's
            # backward, a hook) name themselves; else the forward line of the running node
            if self._user_depth() <= depth and nloc is not None:
                return nloc
        return loc or "?"

    def note_node(self, node, loc):
        todo = [node]
        while todo:
            n = todo.pop()
            if n is None or id(n) in self.node_loc:
                continue
            self.node_loc[id(n)] = loc
            self.nodes.append(n)
            rec = self

            def pre(grad_outputs, _loc=loc):
                rec.bwd.append((rec._user_depth(), _loc))

            def post(grad_inputs, grad_outputs):
                if rec.bwd:
                    rec.bwd.pop()
            try:
                n.register_prehook(pre)
                n.register_hook(post)
            except Exception:
                pass
            for nxt, _ in getattr(n, "next_functions", ()):
                todo.append(nxt)

    # ---- values -----------------------------------------------------------------------------

    def new_val(self, t, kind, name=None, loc=None, producer=None, snapshot=True):
        vid = len(self.trace.vals)
        self.paused += 1
        try:
            value = t.detach().clone() if snapshot and t is not None else None
        finally:
            self.paused -= 1
        shape = tuple(t.shape) if t is not None else ()
        dtype = _dtype_name(t.dtype) if t is not None else "float32"
        self.trace.vals.append(Val(shape, dtype, value, kind, name, loc, producer))
        return vid

    @_quiet
    def synth(self, fn, args, like_shape, value, loc):
        """A value computed by an operator the recorder adds itself (view reads of storages)."""
        vid = len(self.trace.vals)
        self.trace.vals.append(Val(like_shape, _dtype_name(value.dtype), value.detach().clone(),
                                   "op", None, loc, len(self.trace.ops)))
        self._add_op(Op(fn, args, [vid], loc))
        return vid

    @_quiet
    def read(self, t, loc, access=True):
        """The vid of the value t's memory holds.  access: the operator reads the values (not
        a view op), so a pending asynchronous collective's memory is refused."""
        k = _key(t)
        if access and self.pending:
            self._check_pending(k, False, loc)
        vid = self.map.get(k)
        if vid is None:
            st = self._tracked(k, t, loc)
            if st is None:
                vid = self.new_val(t, "const", loc=loc)
                self.map[k] = vid
                self.keep.append(t)
                return vid
            blk = _contiguous_block(k)
            if blk is None:
                raise CaptureError("%s: a strided view of a tensor that other views alias and "
                                   "that was written cannot be captured" % loc)
            vid = self._read_block(st, k, blk, t, loc)
            self.map[k] = vid
            self.keep.append(t)
        if not _same_memory(self.trace.vals[vid].value, t):
            # the memory changed without an operator the recorder saw (numpy writing the
            # array torch.from_numpy shares, ctypes through data_ptr()): the value is a new
            # one, derived from nothing the capture knows (emit.py folds it when it is a
            # constant, and refuses it when it was a value computed from registered tensors)
            vid = self._external_write(t, vid, loc)
        return vid

    def unwrap_backend_defined(self, vid):
        """vid, or the value a reduce gave a rank other than its dst when vid is what the
        backend left there (for an operator that does not read the values)."""
        p = self.trace.vals[vid].producer
        if p is not None and self.trace.ops[p].fn == "_backend_defined":
            return self.trace.ops[p].args[0][1][1]
        return vid

    def _external_write(self, t, vid, loc):
        self.prepare_write(t, loc)
        nv = self.synth("_external_write", [("self", ref(vid))], tuple(t.shape), t.detach(), loc)
        self.write(t, nv)
        return nv

    def _tracked(self, k, t, loc=None):
        """The segments of k's storage, built from the views known on it (their current values
        over a snapshot of the memory now) when there are any; None when k is alone."""
        st = self.stor.get(k[0])
        if st is not None:
            return st
        others = sorted((vid, kk) for kk, vid in self.map.items() if kk[0] == k[0] and kk != k)
        if not others:
            return None
        self.paused += 1
        try:
            flat = _flat_bytes(t)
            nbytes = flat.numel()
            if nbytes % k[1] == 0:
                flat = flat.view(t.dtype)
            base = self.new_val(flat, "const")
            # a strided view the segments cannot hold: the memory outside the contiguous
            # views depends on it
            loose = sorted({vid for vid, kk in others if _contiguous_block(kk) is None})
            if loose:
                base = self.synth("_reinterpret", [("tensors", [ref(base)] +
                                                    [ref(v) for v in loose])],
                                  tuple(flat.shape), flat, loc)
        finally:
            self.paused -= 1
        st = _Storage(nbytes, [(0, nbytes, base, 0)])
        # views of the same memory hold the same bytes: those of t's element type last, so
        # that t's reads find values of their own type where there are some
        for vid, kk in sorted(others, key=lambda o: (o[1][5] == t.dtype, o[0])):
            blk = _contiguous_block(kk)
            if blk is not None:
                st.write(blk[0] * kk[1], blk[1] * kk[1], vid)
        self.stor[k[0]] = st
        return st

    @_quiet
    def prepare_write(self, t, loc=None):
        """Before an operator writes t: track its storage if other views alias it (and refuse
        a write into the memory of a pending asynchronous collective)."""
        k = _key(t)
        if self.pending:
            self._check_pending(k, True, loc or self.op_loc())
        self._tracked(k, t, loc)

    def _read_block(self, st, k, blk, t, loc):
        es = k[1]
        lo, hi = blk[0] * es, blk[1] * es
        pieces = st.pieces(lo, hi)
        dt = _dtype_name(t.dtype)
        if any(self.trace.vals[v].dtype != dt or a % es or b % es for v, a, b in pieces):
            # memory written as another element type (a storage's bytes, a dtype view of
            # aliased memory): no tensor operator relates the values (emit.py refuses it
            # when it carries a value computed from registered tensors)
            return self.synth("_reinterpret", [("tensors", [ref(v) for v, _, _ in pieces])],
                              tuple(t.shape), t.detach(), loc)
        n_want = blk[1] - blk[0]
        flats = []
        for (v, a, b) in pieces:
            a, b = a // es, b // es
            vv = self.trace.vals[v]
            n = vv.value.numel() if vv.value is not None else _numel(vv.shape)
            if a == 0 and b == n and len(flats) == 0 and b - a == n_want:
                flats.append(v)
                break
            fv = v
            if len(vv.shape) != 1:
                fv = self.synth("view", [("self", ref(v)), ("size", [n])], (n,),
                                vv.value.reshape(n), loc)
            if a != 0 or b != n:
                fv = self.synth("slice", [("self", ref(fv)), ("dim", 0), ("start", a),
                                          ("end", b), ("step", 1)], (b - a,),
                                vv.value.reshape(n)[a:b], loc)
            flats.append(fv)
        if len(flats) == 1:
            v = flats[0]
        else:
            # the values are the pieces' (not the memory's: read() compares the two)
            v = self.synth("cat", [("tensors", [ref(p) for p in flats]), ("dim", 0)],
                           (n_want,), torch.cat([self.trace.vals[p].value.reshape(-1)
                                                 for p in flats]), loc)
        if tuple(self.trace.vals[v].shape) != tuple(t.shape):
            v = self.synth("view", [("self", ref(v)), ("size", list(t.shape))], tuple(t.shape),
                           self.trace.vals[v].value.reshape(t.shape), loc)
        return v

    def write(self, t, vid):
        """t (whose memory an operator wrote, prepare_write called before) now holds vid."""
        k = _key(t)
        st = self.stor.get(k[0])
        if st is not None:
            blk = _contiguous_block(k)
            if blk is None:
                raise CaptureError("%s: a write through a strided view of a tensor that other "
                                   "views alias cannot be captured" % self.trace.vals[vid].loc)
            st.write(blk[0] * k[1], blk[1] * k[1], vid)
            lo, hi = _byte_extent(k)
            for kk in [kk for kk in self.map if kk[0] == k[0] and kk != k]:
                a, b = _byte_extent(kk)
                if a < hi and b > lo:
                    del self.map[kk]
        self.map[k] = vid
        self.keep.append(t)
        if k[0] in self.np_shared:
            # numpy reads this memory without an operator: what is written into it is read
            # into Python (emit.py refuses it for a value computed from registered tensors;
            # after the operator that writes it, which _add_op adds next)
            self.deferred.append(Op("_local_scalar_dense", [
                ("self", ref(vid)), ("how", "a write into memory that numpy or a Python "
                                            "buffer shares: torch.from_numpy, .numpy()")], [],
                self.trace.vals[vid].loc))

    def _check_pending(self, k, write, loc):
        lo, hi = _byte_extent(k)
        for p in self.pending:
            if p.ptr == k[0] and p.lo < hi and lo < p.hi and (write or p.written):
                raise CaptureError(
                    "%s: %s a tensor that the asynchronous %s at %s %s before its work's "
                    "wait(): the value is undefined until the operation completes (the "
                    "capture cannot follow the race); call work.wait() before using the "
                    "tensor" % (
                        loc, "writes" if write else "reads", p.what, p.loc,
                        "writes" if p.written else "reads"))

    # ---- registration (the public API) --------------------------------------------------------

    @_quiet
    def register_input(self, name, t):
        if name in self.trace.inputs:
            raise CaptureError("%s: input '%s' registered twice" % (self.user_loc(), name))
        vid = self.new_val(t, "input", name=name, loc=self.user_loc())
        self.trace.inputs[name] = vid
        self._bind(t, vid)

    @_quiet
    def register_param(self, name, t):
        if name in self.trace.params:
            raise CaptureError("%s: parameter '%s' registered twice" % (self.user_loc(), name))
        vid = self.new_val(t, "param", name=name, loc=self.user_loc())
        self.trace.params[name] = vid
        self.param_objs[name] = t
        self._bind(t, vid)

    def _bind(self, t, vid):
        k = _key(t)
        if k[0] in self.np_shared:
            raise CaptureError(
                "%s: the registered tensor shares its memory with a numpy array or a Python "
                "buffer (torch.from_numpy, torch.as_tensor, torch.frombuffer, .numpy()), "
                "through which Python reads and writes it without an operator the capture "
                "sees; register a copy (.clone())" %
                self.user_loc())
        if self.pending:
            self._check_pending(k, False, self.user_loc())
        self.map[k] = vid
        self.keep.append(t)
        st = self.stor.get(k[0])
        if st is not None:
            blk = _contiguous_block(k)
            if blk is not None:
                st.write(blk[0] * k[1], blk[1] * k[1], vid)

    @_quiet
    def register_output(self, name, t):
        loc = self.user_loc()
        vid = self.read(t, loc)
        self.trace.outputs.append((name, vid, loc))

    def set_mesh(self, axes):
        self.trace.mesh = axes

    def watch_modules(self, module, prefix):
        """Cut points at every call of the module's submodules (their path is the key shared by
        single() and parallel()): the output, and the gradient autograd computes for it."""
        rec = self
        for path, m in module.named_modules():
            if id(m) in self.hooked:
                continue
            self.hooked.add(id(m))
            full = prefix + path if path else prefix.rstrip(".")
            if full:
                m.register_forward_hook(
                    lambda mod, inp, out, _path=full: rec.on_module_output(_path, out))

    def on_module_output(self, path, out):
        if not isinstance(out, torch.Tensor) or self.paused:
            return
        occ = self.next_occ(("mod", path))
        self.cut(out, ("mod", path, occ), None)
        if out.requires_grad:
            out.register_hook(lambda g: self.on_module_grad(path, occ, g))

    def on_module_grad(self, path, occ, g):
        if not self.paused:
            self.cut(g, ("mod_grad", path, occ), None)

    def next_occ(self, k):
        n = self.occ.get(k, 0)
        self.occ[k] = n + 1
        return n

    def _add_op(self, op):
        op.in_bwd = bool(self.bwd)
        self.trace.ops.append(op)
        self._flush_deferred()

    def _flush_deferred(self):
        while self.deferred:
            d = self.deferred.pop(0)
            d.in_bwd = bool(self.bwd)
            self.trace.ops.append(d)

    @_quiet
    def cut(self, t, key, loc, **info):
        """A cut point on the value t holds: an identity operator whose output every later read
        of t (and of its aliases) sees.  loc None: the line of the operator that produced it."""
        vid = self.read(t, loc)
        if loc is None:
            loc = self.trace.vals[vid].loc
        self.prepare_write(t)
        opi = len(self.trace.ops)
        nv = self.new_val(t, "op", loc=loc, producer=opi)
        self._add_op(Op("cut", [("self", ref(vid))], [nv], loc, cut=dict(key=key, **info)))
        self.write(t, nv)
        return nv

    @_quiet
    def on_opt_step(self, opt):
        """Before an optimizer's step: a cut point at every gradient it reads, keyed by the
        registered parameter the optimizer's parameter is (or is a view of)."""
        step_loc = self.user_loc()
        for group in opt.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                name = self.param_name(p)
                if name is None:
                    continue
                occ = self.next_occ(("opt_grad", name))
                g = p.grad
                base = self.param_objs[name]
                if base is not p and base.grad is not None and \
                        base.grad.storage().data_ptr() == g.storage().data_ptr():
                    # a shard of the parameter (ZeRO) whose gradient is a view of the whole
                    # parameter's: the whole gradient is the cut point (the model's gradient
                    # is cut whole, so every use of it must go through the cut)
                    p, g = base, base.grad
                gv = self.read(g, step_loc)
                prod = self.trace.vals[gv].producer
                # the line that last wrote the gradient outside autograd (a reduction, an
                # average), else the optimizer's step
                loc = step_loc
                if prod is not None and not self.trace.ops[prod].in_bwd:
                    loc = self.trace.vals[gv].loc or step_loc
                self.cut(g, ("opt_grad", name, occ), loc, param=self.read(p, step_loc),
                         step_loc=step_loc)

    def param_name(self, p):
        """The registered parameter p is, or whose memory p views."""
        for name, q in self.param_objs.items():
            if q is p:
                return name
        ptr = p.storage().data_ptr()
        for name, q in self.param_objs.items():
            if q.storage().data_ptr() == ptr:
                return name
        return None

    # ---- custom autograd Functions -----------------------------------------------------------

    def fn_forward(self, cls, orig, ctx, args, kwargs):
        name = cls.__qualname__
        occ = self.next_occ(("fn", name))
        loc = self.user_loc()
        ins = {}
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                ins[i] = self.read(a, loc)
        out, line = _call_returning_line(orig, (ctx,) + tuple(args), kwargs)
        rloc = _loc_of(orig, line) or loc
        ctx._shardproof_fn = (name, occ, ins)
        outs = out if isinstance(out, tuple) else (out,)
        for j, o in enumerate(outs):
            if isinstance(o, torch.Tensor) and self.read(o, rloc) not in ins.values():
                self.cut(o, ("fn_out", name, occ, j), rloc, fn_ins=ins)
        return out

    def fn_backward(self, orig, ctx, grads):
        name, occ, ins = ctx._shardproof_fn
        loc = self.op_loc()
        gin = [self.read(g, loc) if isinstance(g, torch.Tensor) else None for g in grads]
        res, line = _call_returning_line(orig, (ctx,) + tuple(grads), {})
        rloc = _loc_of(orig, line) or loc
        rs = res if isinstance(res, tuple) else (res,)
        for i, g in enumerate(rs):
            if isinstance(g, torch.Tensor) and i in ins:
                self.cut(g, ("fn_grad", name, occ, i), rloc, fn_in=ins[i], grads_in=gin)
        return res

    @_quiet
    def finish(self):
        self._flush_deferred()
        for p in self.pending:
            if p.written:
                raise CaptureError("%s: the asynchronous %s is never waited for (work.wait()): "
                                   "what its tensor holds when the step ends is undefined" % (
                                       p.loc, p.what))
        for name, p in self.param_objs.items():
            vid = self.read(p, None)
            g = p.grad
            gvid = self.read(g, None) if g is not None else None
            self.trace.final[name] = (vid, gvid)

    # ---- the dispatch hook --------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        if self.paused or name.startswith("profiler."):
            return func(*args, **kwargs)
        if name.startswith("c10d."):
            return self._c10d(func, name, args, kwargs)
        loc = self.op_loc()
        schema = func._schema
        packet = func.overloadpacket.__name__
        if packet == "set_":
            # the tensor now views other memory (a storage's, another tensor's): its key is
            # that memory's, so what it reads is what the recorder knows there
            return func(*args, **kwargs)
        bound = _bind_args(schema, args, kwargs)
        access = packet not in _VIEW_OPS
        # read every tensor argument before the operator runs (it may write them); an out=
        # buffer (a written keyword-only argument) is not an input
        in_args = []
        for a, v in bound:
            written = a.alias_info is not None and a.alias_info.is_write
            if written:
                for x in (v if isinstance(v, (list, tuple)) else (v,)):
                    if isinstance(x, torch.Tensor):
                        self.prepare_write(x, loc)
                if a.kwarg_only:
                    continue
            in_args.append((a.name, self._conv(v, loc, access)))
        if packet == "as_strided":
            return self._as_strided(func, args, kwargs, bound, loc)
        if packet in _IDENTITY_OPS:
            out = func(*args, **kwargs)
            vid = self.read(bound[0][1], loc, access=False)
            self.map[_key(out)] = vid
            self.keep.append(out)
            return out
        out = func(*args, **kwargs)
        fn = packet
        if fn.endswith("_") and not fn.startswith("_") and _is_inplace(schema):
            fn = fn[:-1]
        if fn == "_local_scalar_dense" and _called_from(_STORAGE_FILE):
            in_args.append(("how", "a storage's elements: storage()[i], .tolist(), iteration"))
        rets = tuple(out) if len(schema.returns) > 1 else (out,)
        outs = []
        opi = len(self.trace.ops)
        for r, t in zip(schema.returns, rets):
            if isinstance(t, torch.Tensor):
                vid = self.new_val(t, "op", loc=loc, producer=opi)
                outs.append(vid)
                if r.alias_info is not None and r.alias_info.is_write:
                    self.write(t, vid)
                else:
                    self.map[_key(t)] = vid
                    self.keep.append(t)
            elif isinstance(t, (list, tuple)) and all(isinstance(x, torch.Tensor) for x in t):
                sub = []
                for x in t:
                    vid = self.new_val(x, "op", loc=loc, producer=opi)
                    self.map[_key(x)] = vid
                    self.keep.append(x)
                    sub.append(vid)
                outs.append(sub)
            else:
                outs.append(_pyval(t))
        self._add_op(Op(fn, in_args, outs, loc))
        return out

    def _as_strided(self, func, args, kwargs, bound, loc):
        """as_strided as a slice of the input's memory (contiguous blocks only)."""
        x = bound[0][1]
        out = func(*args, **kwargs)
        kx, ko = _key(x), _key(out)
        bx, bo = _contiguous_block(kx), _contiguous_block(ko)
        if kx[0] != ko[0] or bx is None or bo is None or bo[0] < bx[0] or bo[1] > bx[1]:
            raise CaptureError("%s: as_strided that is not a contiguous block of its input "
                               "cannot be captured" % loc)
        vid = self.read(x, loc, access=False)
        n = bx[1] - bx[0]
        flat = x.detach().reshape(-1)
        if len(x.shape) != 1:
            vid = self.synth("view", [("self", ref(vid)), ("size", [n])], (n,), flat, loc)
        a, b = bo[0] - bx[0], bo[1] - bx[0]
        if (a, b) != (0, n):
            vid = self.synth("slice", [("self", ref(vid)), ("dim", 0), ("start", a), ("end", b),
                                       ("step", 1)], (b - a,), flat[a:b], loc)
        if tuple(out.shape) != (b - a,):
            vid = self.synth("view", [("self", ref(vid)), ("size", list(out.shape))],
                             tuple(out.shape), out.detach(), loc)
        self.map[ko] = vid
        self.keep.append(out)
        return out

    def _conv(self, v, loc, access=True):
        if isinstance(v, torch.Tensor):
            return ref(self.read(v, loc, access))
        if isinstance(v, (list, tuple)):
            if any(isinstance(x, torch.Tensor) for x in v):
                return [ref(self.read(x, loc, access)) if isinstance(x, torch.Tensor)
                        else _pyval(x) for x in v]
            return [_pyval(x) for x in v]
        return _pyval(v)

    # ---- collectives --------------------------------------------------------------------------

    def record_comm(self, kind, loc, group, inputs, written, extra):
        """A collective from a torch.distributed wrapper: inputs (tensors read) and written
        (tensors it writes, after it ran)."""
        ins = [ref(self.read(t, loc)) for t in inputs]
        opi = len(self.trace.ops)
        outs = []
        for t in written:
            vid = self.new_val(t, "op", loc=loc, producer=opi)
            self.write(t, vid)
            outs.append(vid)
        comm = dict(extra)
        comm["group"] = group
        self._add_op(Op(kind, [("tensors", ins)], outs, loc, comm))

    def _c10d(self, func, name, args, kwargs):
        """A collective from C++ (DistributedDataParallel): the DDP instance's group."""
        loc = self.op_loc()
        kind = name.split(".")[1]
        if kind != "allreduce_":
            raise CaptureError("%s: collective %s issued outside torch.distributed's Python "
                               "functions is not supported" % (loc, name))
        if len(self.ddp_groups) != 1:
            raise CaptureError("%s: %s from C++ needs exactly one DistributedDataParallel "
                               "instance to name its process group" % (loc, name))
        tensors = args[0]
        ins = [ref(self.read(t, loc)) for t in tensors]
        out = func(*args, **kwargs)
        # the reducer waits for the work later: wait now, so that the values recorded are
        # the reduced ones (what the memory holds when the reducer reads it)
        group, gid = self.ddp_groups[0]
        for w in (out if isinstance(out, (tuple, list)) else (out,)):
            if hasattr(w, "wait"):
                with self.blocked(self.board.collective("all_reduce", group, gid, loc)):
                    w.wait()
        opi = len(self.trace.ops)
        outs = []
        for t in tensors:
            vid = self.new_val(t, "op", loc=loc, producer=opi)
            self.write(t, vid)
            outs.append(vid)
        self._add_op(Op("all_reduce", [("tensors", ins)], outs, loc,
                        dict(group=group, op="sum")))
        return out

    # ---- activation -----------------------------------------------------------------------------

    @_quiet
    def python_read(self, t, how=None):
        """The user's code reads t's values into Python without an ATen operator (.numpy(),
        .tolist(), torch.tensor([t])): recorded as _local_scalar_dense (what .item()
        dispatches), so that reading a tensor computed from registered inputs is refused as
        data-dependent Python (emit.py); how names the operation for the message."""
        if not isinstance(t, torch.Tensor):
            return
        loc = self.op_loc()
        args = [("self", ref(self.read(t, loc)))]
        if how:
            args.append(("how", how))
        self._add_op(Op("_local_scalar_dense", args, [], loc))

    @_quiet
    def python_read_memory(self, obj, how):
        """A raw pointer to the memory of obj (a tensor or a storage) reaches Python code
        (data_ptr()): it can read any value that memory holds, so every value known there
        counts as read into Python."""
        loc = self.op_loc()
        if isinstance(obj, torch.Tensor):
            vids = [self.read(obj, loc)]
            ptr = _key(obj)[0]
        else:
            vids = []
            ptr = obj.data_ptr()
        vids += [v for kk, v in self.map.items() if kk[0] == ptr]
        st = self.stor.get(ptr)
        if st is not None:
            vids += [v for _, _, v, _ in st.segs]
        for v in sorted(set(vids)):
            self._add_op(Op("_local_scalar_dense", [("self", ref(v)), ("how", how)], [], loc))

    @_quiet
    def numpy_shares(self, t):
        """t's memory is shared with a numpy array: numpy code reads and writes it without an
        operator, so values written there are read into Python (write()), a registration of
        it is refused (_bind), and a write numpy makes is found when the recorder reads it
        again (read(): _external_write)."""
        if isinstance(t, torch.Tensor):
            self.np_shared.add(_key(t)[0])
            self.keep.append(t)

    def __enter__(self):
        _wrap_user_functions(self)
        _active[0] = self
        self.saved_attrs = []
        for owner, name, make in _patches():
            if not hasattr(owner, name):
                continue
            orig = owner.__dict__.get(name)
            self.saved_attrs.append((owner, name, orig))
            setattr(owner, name, make(getattr(owner, name)))
        self.fnmode.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        r = super().__exit__(*exc)
        self.fnmode.__exit__(*exc)
        for owner, name, f in reversed(self.saved_attrs):
            if f is None:
                delattr(owner, name)
            else:
                setattr(owner, name, f)
        _active[0] = None
        return r


# Ways values reach Python without dispatching an ATen operator, patched while recording:
# (owner, attribute, wrapper of the original).
def _patches():
    import torch.storage
    T = torch.Tensor
    return [
        (T, "numpy", _python_read(".numpy()", shares=True)),
        (T, "__array__", _python_read("numpy.asarray", shares=True)),
        (T, "tolist", _python_read(".tolist()")),
        (T, "__reduce_ex__", _python_read("pickling: torch.save, pickle")),
        (T, "data_ptr", _pointer_read("data_ptr(), a raw pointer to its memory")),
        (torch.storage.TypedStorage, "data_ptr",
         _pointer_read("a storage's data_ptr(), a raw pointer to its memory")),
        (torch.storage.UntypedStorage, "data_ptr",
         _pointer_read("a storage's data_ptr(), a raw pointer to its memory")),
        (torch, "from_numpy", _numpy_alias),
        (torch, "as_tensor", _numpy_alias),
        (torch, "asarray", _numpy_alias),
        (torch, "frombuffer", _buffer_alias),
    ]


def _python_read(how, shares=False):
    def make(orig):
        def f(self, *a, **k):
            rec = _active[0]
            if rec is not None and not rec.paused:
                rec.python_read(self, how)
                if shares:
                    rec.numpy_shares(self)
            return orig(self, *a, **k)
        f.__name__ = orig.__name__
        return f
    return make


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STORAGE_FILE = _TORCH_DIR + "storage.py"


def _called_from(filename):
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == filename:
            return True
        f = f.f_back
    return False


def _pointer_read(how):
    """data_ptr() called by code other than torch's and the recorder's (the user's, ctypes
    users): the pointer lets it read the memory."""
    def make(orig):
        def f(self, *a, **k):
            rec = _active[0]
            if rec is not None and not rec.paused:
                caller = sys._getframe(1).f_code.co_filename
                if not (caller.startswith(_TORCH_DIR) or caller.startswith(_OWN_DIR)):
                    rec.python_read_memory(self, how)
            return orig(self, *a, **k)
        f.__name__ = orig.__name__
        return f
    return make


def _numpy_alias(orig):
    """torch.from_numpy, as_tensor, asarray: a result that shares a numpy array's memory."""
    def f(*a, **k):
        out = orig(*a, **k)
        rec = _active[0]
        if rec is not None and not rec.paused and isinstance(out, torch.Tensor):
            for x in list(a) + list(k.values()):
                face = getattr(x, "__array_interface__", None)
                if face is not None and out.numel() > 0 and \
                        _within(out, face["data"][0], getattr(x, "nbytes", 0)):
                    rec.numpy_shares(out)
        return out
    f.__name__ = orig.__name__
    return f


def _buffer_alias(orig):
    """torch.frombuffer: the result shares a Python buffer's memory."""
    def f(*a, **k):
        out = orig(*a, **k)
        rec = _active[0]
        if rec is not None and not rec.paused:
            rec.numpy_shares(out)
        return out
    f.__name__ = orig.__name__
    return f


def _within(t, ptr, nbytes):
    rec = _active[0]
    rec.paused += 1
    try:
        p = t.data_ptr()
    finally:
        rec.paused -= 1
    return ptr <= p < ptr + max(nbytes, 1)


def _call_returning_line(fn, args, kwargs):
    """(fn(*args, **kwargs), the line of the return statement that ended the call)."""
    code = getattr(fn, "__code__", None)
    line = [None]
    prev = sys.getprofile()

    def prof(frame, event, arg):
        if event == "return" and frame.f_code is code:
            line[0] = frame.f_lineno
    sys.setprofile(prof)
    try:
        r = fn(*args, **kwargs)
    finally:
        sys.setprofile(prev)
    return r, line[0]


def _loc_of(fn, line):
    code = getattr(fn, "__code__", None)
    if code is None or line is None:
        return None
    return "%s:%d" % (_base(code.co_filename), line)


def _subclasses(cls):
    todo, seen = [cls], []
    while todo:
        c = todo.pop()
        for s in c.__subclasses__():
            if s not in seen:
                seen.append(s)
                todo.append(s)
    return seen


def _wrap_user_functions(rec):
    """Wrap forward and backward of the custom autograd.Functions of the user's files (once per
    class): their boundaries are cut points."""
    import inspect
    for cls in _subclasses(torch.autograd.Function):
        if cls.__dict__.get("_shardproof_wrapped") or "forward" not in cls.__dict__:
            continue
        try:
            f = inspect.getsourcefile(cls)
        except (TypeError, OSError):
            continue
        if f is None or not rec.is_user(f):
            continue
        fwd, bwd = cls.__dict__["forward"], cls.__dict__.get("backward")
        if not isinstance(fwd, staticmethod) or not isinstance(bwd, staticmethod):
            continue
        fwd, bwd = fwd.__func__, bwd.__func__

        def forward(ctx, *args, _cls=cls, _orig=fwd, **kwargs):
            r = current_recorder()
            if r is None or r.paused:
                return _orig(ctx, *args, **kwargs)
            return r.fn_forward(_cls, _orig, ctx, args, kwargs)

        def backward(ctx, *grads, _orig=bwd):
            r = current_recorder()
            if r is None or r.paused or not hasattr(ctx, "_shardproof_fn"):
                return _orig(ctx, *grads)
            return r.fn_backward(_orig, ctx, grads)
        cls.forward = staticmethod(forward)
        cls.backward = staticmethod(backward)
        cls._shardproof_wrapped = True


def _is_inplace(schema):
    return any(a.alias_info is not None and a.alias_info.is_write and not a.kwarg_only
               for a in schema.arguments)


def _bind_args(schema, args, kwargs):
    res = []
    pos = list(args)
    for i, a in enumerate(schema.arguments):
        if not a.kwarg_only and i < len(pos):
            res.append((a, pos[i]))
        elif a.name in kwargs:
            res.append((a, kwargs[a.name]))
        elif a.has_default_value():
            res.append((a, a.default_value))
        else:
            res.append((a, None))
    return res


def _pyval(x):
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, torch.dtype):
        return _dtype_name(x)
    if isinstance(x, (torch.device, torch.layout, torch.memory_format)):
        return str(x)
    if isinstance(x, (list, tuple)):
        return [_pyval(y) for y in x]
    if isinstance(x, torch.Tensor):
        return "<tensor>"
    return repr(x)


def _base(path):
    return path.rsplit("/", 1)[-1]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ---- torch.distributed wrappers ----------------------------------------------------------------

def _ranks(group):
    if group is None or group is dist.GroupMember.WORLD:
        return list(range(dist.get_world_size()))
    return [int(r) for r in dist.get_process_group_ranks(group)]


def _group_id(group):
    """A process group's identity, the same on every rank, for the board (waits.py): torch's
    name for it ("0" the default group, "n" the n-th new_group(), which every rank calls in
    the same order).  Two groups of the same ranks are two identities."""
    from torch.distributed import distributed_c10d as c10d
    if group is None or group is dist.GroupMember.WORLD:
        group = c10d._get_default_group()
    name = c10d._pg_names.get(group)
    return name if name is not None else "ranks " + ",".join(str(r) for r in _ranks(group))


def _red(op):
    for name in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        if hasattr(dist.ReduceOp, name) and op == getattr(dist.ReduceOp, name):
            return name.lower()
    return str(op)


def _collective(kind, reads, writes, extra):
    """A wrapper: reads(args) -> tensors read, writes(args) -> tensors written, extra(args) ->
    dict (group, op, peer...)."""
    def wrap(orig):
        def f(*args, **kwargs):
            rec = current_recorder()
            if rec is None or rec.paused:
                return orig(*args, **kwargs)
            loc = rec.op_loc()
            a = _Args(orig, args, kwargs)
            if orig.__name__ in ("isend", "irecv"):
                return _post_p2p(rec, orig, args, kwargs, a, kind, extra(a), loc)
            ins = [ref(rec.read(t, loc)) for t in reads(a)]
            if kind == "broadcast" and dist.get_rank() != int(a.src):
                # a broadcast overwrites the tensor of a rank other than src without reading
                # its values: what a reduce left there (below) may be its input
                ins = [ref(rec.unwrap_backend_defined(v[1])) for v in ins]
            outs = writes(a)
            for t in outs:
                rec.prepare_write(t)
            info = extra(a)
            if kind in ("send", "recv"):
                wait = _message(rec, orig.__name__, kind, info, a, loc)
            else:
                wait = rec.board.collective(orig.__name__, info["group"],
                                            _group_id(a.a.get("group")), loc)
            with rec.blocked(wait):
                work = orig(*args, **kwargs)
                if work is not None and hasattr(work, "wait"):
                    work.wait()
            opi = len(rec.trace.ops)
            vids = []
            for t in outs:
                vid = rec.new_val(t, "op", loc=loc, producer=opi)
                rec.write(t, vid)
                vids.append(vid)
            rec._add_op(Op(kind, [("tensors", ins)], vids, loc, info))
            if kind == "reduce" and dist.get_rank() != info["root"]:
                # the buffer of a rank other than dst holds what the backend left there
                # (gloo: partial results; NCCL: the input), not the plan language's reduce
                # (the input): a value no operator defines (emit.py refuses it when an
                # output depends on it and it was computed from registered tensors)
                for t, vid in zip(outs, vids):
                    rec.write(t, rec.synth("_backend_defined", [("self", ref(vid))],
                                           tuple(t.shape), t.detach(), loc))
            if a.a.get("async_op"):
                # the program sees the collective complete at its wait(), not here: its
                # tensors stay pending until then
                what = orig.__name__ + "(async_op=True)"
                pend = [_Pending(t, False, what, loc) for t in reads(a)]
                pend += [_Pending(t, True, what, loc) for t in outs]
                rec.pending += pend
                return _Work(rec, work, pend)
            return work
        f.__wrapped__ = orig
        f.__name__ = orig.__name__
        return f
    return wrap


def _message(rec, fn, kind, info, a, loc):
    """A send or recv posted: its tag and its index among the messages of the same peer,
    group and tag (info["msg"]; emit.py matches sends and receives by them), and the wait
    that completes it, for the board."""
    if info["peer"] is None:
        raise CaptureError("%s: %s from any source (src=None) cannot be captured: name the "
                           "source rank" % (loc, fn))
    info["peer"] = int(info["peer"])
    info["tag"] = int(a.tag)
    info["msg"] = rec.board.post(kind, info["peer"], info["group"], info["tag"])
    return dict(kind=kind, fn=fn, peer=info["peer"], group=info["group"], tag=info["tag"],
                n=info["msg"], loc=loc, at=loc)


def _post_p2p(rec, orig, args, kwargs, a, kind, info, loc):
    """isend or irecv: posted, not waited for (gloo matches messages by source, destination
    and tag, so the program may post and wait for them in any order).  An isend is recorded
    here (its tensor may not be written until its wait()); an irecv when its work completes
    (its tensor may not be read or written until then)."""
    fn = orig.__name__
    wait = _message(rec, fn, kind, info, a, loc)
    t = a.tensor
    if kind == "send":
        ins = [ref(rec.read(t, loc))]
    else:
        rec.prepare_write(t)
    rec.paused += 1
    try:
        work = orig(*args, **kwargs)
    finally:
        rec.paused -= 1
    complete = None
    if kind == "send":
        rec._add_op(Op("send", [("tensors", ins)], [], loc, info))
    else:
        def complete():
            vid = rec.new_val(t, "op", loc=loc, producer=len(rec.trace.ops))
            rec.write(t, vid)
            rec._add_op(Op("recv", [("tensors", [])], [vid], loc, info))
    pend = [_Pending(t, kind == "recv", fn, loc)]
    rec.pending += pend
    return _Work(rec, work, pend, wait, complete)


class _Args:
    """A call's arguments by name (the wrapped function's signature)."""

    def __init__(self, fn, args, kwargs):
        import inspect
        sig = inspect.signature(fn)
        b = sig.bind(*args, **kwargs)
        b.apply_defaults()
        self.a = b.arguments

    def __getattr__(self, k):
        return self.a[k]


def install_dist_wrappers():
    """Wrap torch.distributed's collectives (once per process)."""
    if getattr(dist, "_shardproof_wrapped", False):
        return
    W = {
        "all_reduce": ("all_reduce", lambda a: [a.tensor], lambda a: [a.tensor],
                       lambda a: dict(group=_ranks(a.group), op=_red(a.op))),
        "all_gather": ("all_gather", lambda a: [a.tensor], lambda a: list(a.tensor_list),
                       lambda a: dict(group=_ranks(a.group))),
        "all_gather_into_tensor": ("all_gather_into_tensor", lambda a: [a.input_tensor],
                                   lambda a: [a.output_tensor],
                                   lambda a: dict(group=_ranks(a.group))),
        "_all_gather_base": ("all_gather_into_tensor", lambda a: [a.input_tensor],
                             lambda a: [a.output_tensor], lambda a: dict(group=_ranks(a.group))),
        "reduce_scatter": ("reduce_scatter", lambda a: list(a.input_list), lambda a: [a.output],
                           lambda a: dict(group=_ranks(a.group), op=_red(a.op))),
        "reduce_scatter_tensor": ("reduce_scatter_tensor", lambda a: [a.input],
                                  lambda a: [a.output],
                                  lambda a: dict(group=_ranks(a.group), op=_red(a.op))),
        "_reduce_scatter_base": ("reduce_scatter_tensor", lambda a: [a.input],
                                 lambda a: [a.output],
                                 lambda a: dict(group=_ranks(a.group), op=_red(a.op))),
        "broadcast": ("broadcast", lambda a: [a.tensor], lambda a: [a.tensor],
                      lambda a: dict(group=_ranks(a.group), root=int(a.src))),
        "reduce": ("reduce", lambda a: [a.tensor], lambda a: [a.tensor],
                   lambda a: dict(group=_ranks(a.group), root=int(a.dst), op=_red(a.op))),
        "all_to_all_single": ("all_to_all_single", lambda a: [a.input], lambda a: [a.output],
                              lambda a: dict(group=_ranks(a.group),
                                             split=(a.output_split_sizes, a.input_split_sizes))),
        "all_to_all": ("all_to_all", lambda a: list(a.input_tensor_list),
                       lambda a: list(a.output_tensor_list),
                       lambda a: dict(group=_ranks(a.group))),
        "send": ("send", lambda a: [a.tensor], lambda a: [],
                 lambda a: dict(group=_ranks(a.group), peer=int(a.dst))),
        "isend": ("send", lambda a: [a.tensor], lambda a: [],
                  lambda a: dict(group=_ranks(a.group), peer=int(a.dst))),
        "recv": ("recv", lambda a: [], lambda a: [a.tensor],
                 lambda a: dict(group=_ranks(a.group), peer=a.src)),
        "irecv": ("recv", lambda a: [], lambda a: [a.tensor],
                  lambda a: dict(group=_ranks(a.group), peer=a.src)),
    }
    from torch.distributed import distributed_c10d as c10d
    for name, (kind, rd, wr, ex) in W.items():
        orig = getattr(c10d, name, None)
        if orig is None:
            continue
        w = _collective(kind, rd, wr, ex)(orig)
        setattr(c10d, name, w)
        if getattr(dist, name, None) is orig:
            setattr(dist, name, w)
    # DistributedDataParallel's reducer issues its all-reduces from C++: remember its group
    from torch.nn.parallel import DistributedDataParallel as DDP
    init = DDP.__init__

    def ddp_init(self, *args, **kwargs):
        # the constructor's collectives (parameter shapes, the broadcast of the module's
        # state) run paused, unrecorded: the board sees the constructor as one collective of
        # the instance's group, so that a rank that never constructs it is a deadlock
        rec = current_recorder()
        if rec is None or rec.paused:
            return init(self, *args, **kwargs)
        pg = _Args(init, (self,) + args, kwargs).process_group
        group, gid = _ranks(pg), _group_id(pg)
        with rec.blocked(rec.board.collective("DistributedDataParallel()", group, gid,
                                              rec.op_loc())):
            init(self, *args, **kwargs)
        rec.ddp_groups.append((group, gid))
    DDP.__init__ = ddp_init
    # an optimizer's step: cut points at the gradients it reads
    oinit = torch.optim.Optimizer.__init__

    def opt_init(self, *args, **kwargs):
        oinit(self, *args, **kwargs)
        step = self.step

        def stepped(*a, **k):
            rec = current_recorder()
            if rec is not None and not rec.paused:
                rec.on_opt_step(self)
            return step(*a, **k)
        self.step = stepped
    torch.optim.Optimizer.__init__ = opt_init
    dist._shardproof_wrapped = True
