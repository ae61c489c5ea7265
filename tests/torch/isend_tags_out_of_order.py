# Data parallel SGD whose gradient all-reduce is written as point-to-point messages: each rank
# isends its gradient's two rows to the other with tags 1 and 2, then irecvs them in the
# other order (tag 2 first) and waits for the receives before the sends.  gloo (and NCCL)
# match a receive with the send of the same source, destination and tag, so the program
# runs; the capture used to wait for every isend at once, and a send waits in gloo until its
# receive is posted: both ranks waited in their tag-1 isend, and the world hung until the
# 300 s timeout.  The plan's messages are first-in first-out per pair of ranks, so the
# translation writes each rank's sends in the order its peer receives them.
# Run: shardproof check --torch tests/torch/isend_tags_out_of_order.py --world 2
import torch
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        peer = 1 - rank
        g = w.grad
        sends = [dist.isend(g[0].clone(), peer, tag=1), dist.isend(g[1].clone(), peer, tag=2)]
        r1, r0 = torch.empty(2), torch.empty(2)
        second = dist.irecv(r1, peer, tag=2)
        first = dist.irecv(r0, peer, tag=1)
        second.wait()
        first.wait()
        for s in sends:
            s.wait()
        g[0].add_(r0)
        g[1].add_(r1)
    opt.step()


single, parallel = sgd_step.entry_points(step)
