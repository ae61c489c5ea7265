"""test_waits.py: point-to-point messages matched by (source, destination, tag) and the
deadlock a world's published waits show (shardproof_torch/waits.py, emit.py
sends_in_receive_order).

Run by tests/torch/run.sh (python3 -m unittest, with the package's directory on sys.path).
"""
import tempfile
import unittest

from shardproof_torch.capture import Op, Trace
from shardproof_torch.emit import sends_in_receive_order
from shardproof_torch.waits import (Board, describe, describe_finished, find_deadlock,
                                    read_states)

W = [0, 1]


def msg(kind, peer, tag, n, fn=None, loc="f.py:1"):
    return dict(kind=kind, fn=fn or kind, peer=peer, group=W, tag=tag, n=n, loc=loc, at=loc)


def coll(k, gid="0", loc="f.py:1"):
    return dict(kind="collective", fn="all_reduce", group=W, gid=gid, k=k, loc=loc, at=loc)


class TestDeadlock(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.b = [Board(self.dir.name, r) for r in W]

    def tearDown(self):
        self.dir.cleanup()

    def states(self):
        return read_states(self.dir.name, len(W))

    def test_waits_deadlock_tag_mismatch(self):
        n = self.b[0].post("send", 1, W, 1)
        self.b[0].begin(msg("send", 1, 1, n))
        n = self.b[1].post("recv", 0, W, 2)
        self.b[1].begin(msg("recv", 0, 2, n))
        waits = find_deadlock(self.states())
        self.assertEqual(sorted(waits), [0, 1])
        self.assertEqual(describe(1, waits[1]), "rank 1 waits in recv from rank 0 (tag 2) at "
                                                "f.py:1")

    def test_waits_out_of_order_tags_complete(self):
        # rank 0 posted tags 1 and 2 and waits for tag 1; rank 1 posted tag 2, then 1, and
        # waits for tag 2: both can complete
        self.b[0].post("send", 1, W, 1)
        self.b[0].post("send", 1, W, 2)
        self.b[0].begin(msg("send", 1, 1, 0))
        self.b[1].post("recv", 0, W, 2)
        self.b[1].post("recv", 0, W, 1)
        self.b[1].begin(msg("recv", 0, 2, 0))
        self.assertIsNone(find_deadlock(self.states()))

    def test_waits_send_is_a_rendezvous(self):
        # send(); recv() on both ranks hangs in gloo
        for r in W:
            n = self.b[r].post("send", 1 - r, W, 0)
            self.b[r].begin(msg("send", 1 - r, 0, n))
        self.assertIsNotNone(find_deadlock(self.states()))

    def test_waits_running_rank_no_deadlock(self):
        n = self.b[0].post("recv", 1, W, 0)
        self.b[0].begin(msg("recv", 1, 0, n))
        self.assertIsNone(find_deadlock(self.states()))   # rank 1 has published nothing
        self.b[1].begin(coll(0))
        self.b[1].end()                                   # running again
        self.assertIsNone(find_deadlock(self.states()))

    def test_waits_collective(self):
        self.b[0].begin(coll(0))
        self.b[1].begin(coll(0))
        self.assertIsNone(find_deadlock(self.states()))   # both joined it
        n = self.b[1].post("recv", 0, W, 0)
        self.b[1].end()
        self.b[1].begin(msg("recv", 0, 0, n))             # rank 1 left it, so rank 0 can too
        self.assertIsNone(find_deadlock(self.states()))
        self.b[0].end()
        self.b[0].begin(coll(1))                          # the next one: rank 1 never joins
        self.assertEqual(sorted(find_deadlock(self.states())), [0, 1])

    def test_board_counts_collectives_per_group(self):
        # the k of a rank's next collective counts the ones it completed in that group only
        b = self.b[0]
        self.assertEqual(b.collective("all_reduce", W, "1", "f.py:2"), coll(0, "1", "f.py:2"))
        b.begin(b.collective("all_reduce", W, "1", "f.py:2"))
        b.end()
        self.assertEqual(b.collective("all_reduce", W, "1", "f.py:3")["k"], 1)
        self.assertEqual(b.collective("all_reduce", W, "2", "f.py:3")["k"], 0)

    def test_waits_groups_of_same_ranks(self):
        # two process groups of ranks 0,1 (torch names them "1" and "2"): each counts its own
        # collectives, so rank 0 in A's first and rank 1 in B's first wait forever
        self.b[0].begin(coll(0, "1"))
        self.b[1].begin(coll(0, "2"))
        waits = find_deadlock(self.states())
        self.assertEqual(sorted(waits), [0, 1])
        self.assertEqual(describe(1, waits[1]), "rank 1 waits in all_reduce over ranks 0,1 "
                                                "(process group of the 2nd new_group() call) "
                                                "at f.py:1")
        # A then B on both ranks: rank 0 left A's first and waits in B's, rank 1 is still in
        # A's first (about to leave it)
        self.b[1].begin(coll(0, "1"))
        self.b[0].end()
        self.b[0].begin(coll(0, "2"))
        self.assertIsNone(find_deadlock(self.states()))

    def test_waits_finished_rank(self):
        n = self.b[0].post("recv", 1, W, 0)
        self.b[0].begin(msg("recv", 1, 0, n))
        self.b[1].done()
        waits = find_deadlock(self.states())
        self.assertEqual(sorted(waits), [0])
        self.assertEqual(describe_finished(1, waits), "rank 1 has finished without posting "
                                                      "the matching send to rank 0 (tag 0)")

    def test_waits_finished_rank_posted(self):
        # rank 1 posted its send and finished: rank 0's receive of it can complete
        self.b[1].post("send", 0, W, 0)
        self.b[1].done()
        n = self.b[0].post("recv", 1, W, 0)
        self.b[0].begin(msg("recv", 1, 0, n))
        self.assertIsNone(find_deadlock(self.states()))

    def test_waits_finished_rank_collective(self):
        self.b[0].begin(coll(0))
        self.b[1].done()
        waits = find_deadlock(self.states())
        self.assertEqual(describe_finished(1, waits), "rank 1 has finished without joining "
                                                      "the all_reduce over ranks 0,1 that "
                                                      "rank 0 waits in")


def trace(rank, ops):
    tr = Trace(rank)
    tr.ops = [Op(fn, [], [], "f.py:%d" % i, dict(group=W, peer=1 - rank, tag=tag, msg=0))
              for i, (fn, tag) in enumerate(ops)]
    return tr


class TestReceiveOrder(unittest.TestCase):
    def test_sends_in_receive_order(self):
        # rank 0 sends tags 1, 2, 3; rank 1 receives 2, 3, 1: the plan's first-in first-out
        # messages need the sends in that order
        t0 = trace(0, [("send", 1), ("send", 2), ("send", 3), ("recv", 5)])
        t1 = trace(1, [("recv", 2), ("recv", 3), ("send", 5), ("recv", 1)])
        seqs = sends_in_receive_order([t0, t1], [[0, 1, 2, 3], [0, 1, 2, 3]])
        self.assertEqual(seqs, [[1, 2, 0, 3], [0, 1, 2, 3]])

    def test_unreceived_send_last(self):
        t0 = trace(0, [("send", 7), ("send", 1)])
        t1 = trace(1, [("recv", 1)])
        seqs = sends_in_receive_order([t0, t1], [[0, 1], [0]])
        self.assertEqual(seqs, [[1, 0], [0]])


if __name__ == "__main__":
    unittest.main()
