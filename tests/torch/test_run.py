"""test_run.py: a finished rank's linger (shardproof_torch/run.py _linger).

Run by tests/torch/run.sh (python3 -m unittest, with the package's directory on sys.path).
"""
import os
import tempfile
import time
import unittest

from shardproof_torch.run import _linger
from shardproof_torch.waits import Board


class TestLinger(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.b = [Board(self.dir.name, r) for r in (0, 1)]

    def tearDown(self):
        self.dir.cleanup()

    def linger(self, parent, timeout=5):
        t = time.time()
        _linger(self.dir.name, 2, timeout, parent)
        return time.time() - t

    def test_every_rank_done(self):
        for b in self.b:
            b.done()
        self.assertLess(self.linger(os.getppid()), 1)

    def test_waits_for_a_running_rank(self):
        self.b[0].done()
        self.assertGreaterEqual(self.linger(os.getppid(), timeout=0.3), 0.3)

    def test_parent_gone(self):
        # the parent died before this rank finished: the rank has been reparented, its
        # os.getppid() is no longer the capture's pid, and it must not stay for the timeout
        self.b[0].done()
        self.assertLess(self.linger(os.getpid()), 1)


if __name__ == "__main__":
    unittest.main()
