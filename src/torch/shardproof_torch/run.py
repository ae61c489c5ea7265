"""run.py: run single() in this process and parallel(rank, world) in a gloo world it starts.

One process per rank (forked before this process computes anything, so no thread pool is
inherited), gloo over loopback with a file store in a temporary directory; each rank records
its trace and pickles it there.  Every process is seeded with torch.manual_seed(0) before the
user's function runs, so the capture is deterministic.
"""

import importlib.util
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist

from .capture import CaptureError, Recorder, install_dist_wrappers
from .waits import Board, describe, describe_finished, find_deadlock, read_states


class UserError(Exception):
    """A problem in the user's file or what it ran (reported as an error, exit 2)."""


def load_user(path):
    # like `python3 FILE.py`: the file's directory is on the module path
    d = os.path.dirname(path)
    if d not in sys.path:
        sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location("shardproof_user", path)
    if spec is None:
        raise UserError("%s: cannot load" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["shardproof_user"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception:
        raise UserError("%s: loading the file failed:\n%s" % (path, traceback.format_exc()))
    for fn in ("single", "parallel"):
        if not callable(getattr(mod, fn, None)):
            raise UserError("%s: the file must define %s()" % (
                path, "single" if fn == "single" else "parallel(rank, world)"))
    return mod


def _capture(path, fn, rank=None, board=None):
    rec = Recorder(path, rank, board)
    torch.manual_seed(0)
    with rec:
        fn()
    rec.finish()
    return rec.trace


def _child(path, mod, rank, world, tmp, timeout, parent):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    rc = 0
    try:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "store"),
                                rank=rank, world_size=world)
        board = Board(tmp, rank)
        trace = _capture(path, lambda: mod.parallel(rank, world), rank, board)
        board.done()
        with open(os.path.join(tmp, "rank%d.pkl" % rank), "wb") as f:
            pickle.dump(trace, f, protocol=pickle.HIGHEST_PROTOCOL)
        _linger(tmp, world, timeout, parent)
        dist.destroy_process_group()
    except BaseException as e:
        with open(os.path.join(tmp, "rank%d.err" % rank), "w") as f:
            if isinstance(e, CaptureError):
                f.write(str(e) + "\n")
            else:
                f.write(_user_traceback(path))
        rc = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def _linger(tmp, world, timeout, parent):
    """A finished rank stays in the world until every rank has finished (or the parent ends
    it).  Its exit closes its gloo connections: a peer still waiting for a message from it, or
    in a collective it never joins, would fail at once with gloo's "Connection closed by
    peer" instead of waiting, and the parent would report that traceback rather than the
    deadlock its watch (_Stuck) sees after HOLD seconds.  parent: the capture's pid, taken
    before the fork (os.getppid() here would be the reaper's if the parent died before this
    rank finished, and the rank would linger for the whole timeout)."""
    deadline = time.time() + timeout
    while time.time() < deadline and os.getppid() == parent:
        states = read_states(tmp, world)
        if all(st is not None and st["state"] == "done" for st in states.values()):
            return
        time.sleep(0.02)


def _user_traceback(path):
    return "".join(traceback.format_exc())


class _Stuck:
    """The parent's watch on the ranks' boards (waits.py): the waits of a deadlocked world
    once the same deadlocked states (the same versions) have been read for HOLD seconds.  A
    rank's state changes only when it starts or ends a wait, so states read twice with the
    same versions are one snapshot; a deadlock stays, a wait about to complete (its data in
    flight after every rank published) does not, and the hold keeps such a moment out."""

    HOLD = 0.5

    def __init__(self, tmp, world):
        self.tmp, self.world = tmp, world
        self.since, self.versions = None, None
        self.next = 0.0

    def poll(self):
        now = time.time()
        if now < self.next:
            return None
        self.next = now + 0.1
        states = read_states(self.tmp, self.world)
        waits = find_deadlock(states)
        if waits is None:
            self.since, self.versions = None, None
            return None
        versions = [states[r]["v"] for r in range(self.world)]
        if versions != self.versions:
            self.since, self.versions = now, versions
            return None
        return waits if now - self.since >= self.HOLD else None


def _deadlock_message(world, waits):
    """The error of a deadlocked world: each waiting rank's wait, then each finished rank
    with what the waiting ranks wait for it to post or join."""
    lines = ["  " + describe(r, w) for r, w in sorted(waits.items())]
    lines += ["  " + describe_finished(r, waits) for r in range(world) if r not in waits]
    return ("parallel(rank, %d) deadlocks: every rank waits%s and no wait can complete (a "
            "message is matched by source, destination and tag, and a send completes when its "
            "receive is posted; a collective when every rank of its group joins it):\n%s" % (
                world, " or has finished" if len(waits) < world else "", "\n".join(lines)))


def capture(path, world, timeout=300):
    """(single trace, [rank traces]) for the user file at path."""
    path = os.path.abspath(path)
    install_dist_wrappers()
    mod = load_user(path)
    tmp = tempfile.mkdtemp(prefix="shardproof-torch-")
    pids = {}
    parent = os.getpid()
    try:
        for r in range(world):
            pid = os.fork()
            if pid == 0:
                _child(path, mod, r, world, tmp, timeout, parent)
            pids[pid] = r
        try:
            single = _capture(path, mod.single)
        except CaptureError as e:
            raise UserError(str(e))
        except Exception:
            raise UserError("single() failed:\n%s" % traceback.format_exc())
        deadline = time.time() + timeout
        failed = {}
        stuck = _Stuck(tmp, world)
        while pids:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                if time.time() > deadline:
                    raise UserError("parallel(rank, %d) did not finish within %d s (a collective "
                                    "that some rank never joins?)" % (world, timeout))
                waits = stuck.poll()
                if waits is not None:
                    raise UserError(_deadlock_message(world, waits))
                time.sleep(0.02)
                continue
            r = pids.pop(pid)
            if status != 0:
                failed[r] = status
                # one rank failed: the others may wait for it forever
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
        if failed:
            # the rank whose failure is the cause: one the capture refused (the others then
            # fail in their collectives with it, or are killed), else the first to fail
            msgs = {}
            for r in failed:
                err = os.path.join(tmp, "rank%d.err" % r)
                msgs[r] = open(err).read() if os.path.exists(err) else "killed"
            order = list(failed)
            refused = [r for r in order if msgs[r] != "killed" and
                       not msgs[r].startswith("Traceback")]
            r = (refused or order)[0]
            raise UserError("parallel(rank=%d, world=%d) failed:\n%s" % (r, world,
                                                                        msgs[r].rstrip()))
        ranks = []
        for r in range(world):
            with open(os.path.join(tmp, "rank%d.pkl" % r), "rb") as f:
                ranks.append(pickle.load(f))
        return single, ranks
    finally:
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
                os.waitpid(p, 0)
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
