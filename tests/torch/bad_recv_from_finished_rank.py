# Rank 0 receives a gradient from rank 1 (tag 3) that rank 1 never sends: rank 1 returns from
# parallel() while rank 0 waits.  The capture used to let rank 1 exit, and rank 0's receive
# then failed in gloo with "Connection closed by peer", a traceback that names neither rank's
# mistake; a finished rank now stays in the world until every rank has finished (run.py
# _linger), so the world is reported as the deadlock it is: rank 0's wait with its line, and
# what rank 1 finished without posting.
# expect: error: rank 1 has finished without posting the matching send to rank 0 (tag 3)
# Run: shardproof check --torch tests/torch/bad_recv_from_finished_rank.py --world 2
import torch
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    if world > 1 and rank == 0:
        g = torch.empty(2, 2)
        dist.recv(g, 1, tag=3)
        w.grad.add_(g)
    opt.step()


single, parallel = sgd_step.entry_points(step)
