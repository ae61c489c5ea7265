# Data parallel SGD whose gradient all-reduce is a pair of tagged messages, with rank 1
# finishing while rank 0 has yet to wait for its receive: rank 0 posts its isend and irecv,
# then works on (a sleep longer than the deadlock watch's 0.5 s hold) before it waits; rank 1
# waits for both at once, steps and returns.  A finished rank stays in the world until every
# rank has finished (run.py _linger, so that a rank waiting for it is reported as deadlocked,
# bad_recv_from_finished_rank.py), and what it posted still counts: rank 0's wait is satisfied
# by rank 1's send, so this is no deadlock.
# Run: shardproof check --torch tests/torch/p2p_rank_finishes_first.py --world 2
import time

import torch
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        peer = 1 - rank
        r = torch.empty(2, 2)
        send = dist.isend(w.grad, peer, tag=3)
        recv = dist.irecv(r, peer, tag=3)
        if rank == 0:
            time.sleep(1.0)
        recv.wait()
        send.wait()
        w.grad.add_(r)
    opt.step()


single, parallel = sgd_step.entry_points(step)
