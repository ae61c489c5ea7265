"""waits.py: where each rank waits, published to run.py, which finds a world that can never go on.

A rank writes its state into a file of the capture's directory when it starts and ends a wait
(a collective, a blocking send or recv, the wait() of an isend or irecv) and when it is done:
what it waits for, and how many point-to-point operations it has posted and collectives it has
completed.  The parent reads the files of all ranks; when no rank runs and no rank's wait can
be satisfied by what the others have posted, the world is deadlocked (`find_deadlock`), and the
capture reports the ranks and their operations at once instead of waiting for the timeout.

Waits, as gloo does them (torch 1.13; NCCL too):
* a receive of the n-th message of (source, group, tag) completes once the source has posted
  its n-th send of that (group, tag) to this rank, and a send once the destination has posted
  the matching receive (gloo's send is a rendezvous: `send(); recv()` on both ranks hangs);
  messages are matched by (source, destination, tag), in posting order for equal tags;
* the k-th collective of a process group completes once every member has reached it.  Groups
  are told apart by their identity (`gid`: torch's name for the group, the same on every rank),
  not by their ranks: two groups of the same ranks are two gloo contexts, and collectives in
  them are counted apart (group A then group B on every rank runs; A then B on one rank and
  B then A on the other waits forever).
"""

import json
import os


def group_key(group):
    return ",".join(str(r) for r in sorted(group))


class Board:
    """A rank's side: its counts of posted messages and completed collectives, and its wait.

    sends[(dst, group_key, tag)] and recvs[(src, group_key, tag)] count the operations posted;
    colls[gid] the collectives completed in the process group gid; wait is None while the rank
    runs."""

    def __init__(self, directory, rank):
        # directory None: counted, not published (single(), a rank run without run.py)
        self.path = os.path.join(directory, "rank%d.state" % rank) if directory else None
        self.rank = rank
        self.version = 0
        self.sends = {}
        self.recvs = {}
        self.colls = {}
        self.wait = None
        self.state = "running"

    def post(self, kind, peer, group, tag):
        """Count a send (kind "send") or receive posted; its index among the messages of the
        same peer, group and tag."""
        d = self.sends if kind == "send" else self.recvs
        k = (int(peer), group_key(group), int(tag))
        n = d.get(k, 0)
        d[k] = n + 1
        return n

    def collective(self, fn, group, gid, loc):
        """The wait of this rank's next collective fn of process group gid (of ranks group),
        posted at loc, for begin()."""
        return dict(kind="collective", fn=fn, group=group, gid=gid, k=self.colls.get(gid, 0),
                    loc=loc, at=loc)

    def begin(self, wait):
        """wait: dict(kind = "send" | "recv" | "collective", fn, loc, and peer, group, tag, n
        (a message) or group (its ranks), gid, k (the k-th collective of process group gid))."""
        self.wait = wait
        self._write()

    def end(self):
        w, self.wait = self.wait, None
        if w is not None and w["kind"] == "collective":
            self.colls[w["gid"]] = self.colls.get(w["gid"], 0) + 1
        self._write()

    def done(self):
        self.state = "done"
        self._write()

    def _write(self):
        if self.path is None:
            return
        self.version += 1
        st = dict(v=self.version, state=self.state, wait=self.wait,
                  sends=[[p, g, t, n] for (p, g, t), n in sorted(self.sends.items())],
                  recvs=[[p, g, t, n] for (p, g, t), n in sorted(self.recvs.items())],
                  colls=sorted(self.colls.items()))
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f)
        os.replace(tmp, self.path)


class Waiting:
    """A context manager around one wait on a board (None: no board, nothing published)."""

    def __init__(self, board, wait):
        self.board, self.w = board, wait

    def __enter__(self):
        if self.board is not None:
            self.board.begin(self.w)

    def __exit__(self, *exc):
        if self.board is not None and exc[0] is None:
            self.board.end()


def read_states(directory, world):
    """rank -> state dict (None for a rank that has published nothing: it runs)."""
    out = {}
    for r in range(world):
        try:
            with open(os.path.join(directory, "rank%d.state" % r)) as f:
                out[r] = json.load(f)
        except (OSError, ValueError):
            out[r] = None
    return out


def _count(st, field, peer, group, tag):
    for p, g, t, n in st[field]:
        if p == peer and g == group and t == tag:
            return n
    return 0


def _can_complete(r, w, states):
    if w["kind"] in ("send", "recv"):
        other = states.get(w["peer"])
        if other is None:
            return True
        field = "recvs" if w["kind"] == "send" else "sends"
        return _count(other, field, r, group_key(w["group"]), w["tag"]) > w["n"]
    g = w["gid"]
    for q in w["group"]:
        st = states.get(q)
        if st is None:
            return True
        if dict((k, n) for k, n in st["colls"]).get(g, 0) > w["k"]:
            continue
        qw = st["wait"]
        if not (qw and qw["kind"] == "collective" and qw["gid"] == g and qw["k"] == w["k"]):
            return False
    return True


def _collective(w):
    """A collective's wait, in a message: "all_reduce over ranks 0,1" and its group."""
    return "%s over ranks %s%s" % (w["fn"], ",".join(str(q) for q in w["group"]), _group_name(w))


def _group_name(w):
    """The process group of a collective's wait, in a message: nothing for the default group
    (torch names it "0"), else the new_group() call that made it (torch names the n-th "n")."""
    if w["gid"] == "0":
        return ""
    if w["gid"].isdigit():
        return " (process group of the %s new_group() call)" % _ordinal(int(w["gid"]))
    return " (process group %s)" % w["gid"]


def _ordinal(n):
    if n % 100 in (11, 12, 13):
        return "%dth" % n
    return "%d%s" % (n, {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def describe(r, w):
    """One rank's wait, for the message: the operation, its peer and tag or its group, the
    line that posted it and, for an isend's or irecv's wait(), the line that waits."""
    if w["kind"] == "collective":
        op = _collective(w)
    else:
        op = "%s %s rank %d (tag %d)" % (w["fn"], "to" if w["kind"] == "send" else "from",
                                         w["peer"], w["tag"])
    if w.get("at", w["loc"]) != w["loc"]:
        return "rank %d waits at %s for the %s posted at %s" % (r, w["at"], op, w["loc"])
    return "rank %d waits in %s at %s" % (r, op, w["loc"])


def describe_finished(r, waits):
    """A finished rank, for the message: what the waiting ranks (waits, of find_deadlock)
    wait for it to post or join and it never did."""
    missing = []
    for q, w in sorted(waits.items()):
        if w["kind"] == "collective":
            if r in w["group"]:
                missing.append("joining the %s that rank %d waits in" % (_collective(w), q))
        elif w["peer"] == r:
            op = "recv from" if w["kind"] == "send" else "send to"
            missing.append("posting the matching %s rank %d (tag %d)" % (op, q, w["tag"]))
    if not missing:
        return "rank %d has finished" % r
    return "rank %d has finished without %s" % (r, ", nor ".join(missing))


def find_deadlock(states):
    """The waits of a deadlocked world (rank -> wait, for every rank that waits), or None: no
    rank runs, some rank waits, and no wait can complete with what the others have posted.
    states: rank -> state (read_states); a rank that is done waits for nothing and posts
    nothing more."""
    waits = {}
    for r, st in states.items():
        if st is None or (st["state"] != "done" and st["wait"] is None):
            return None
        if st["state"] != "done":
            waits[r] = st["wait"]
    if not waits:
        return None
    for r, w in waits.items():
        if _can_complete(r, w, states):
            return None
    return waits
