# Rank 0 isends the gradient with tag 1, rank 1 irecvs it with tag 2, and both wait: no
# message of tag 2 is ever sent and gloo's send completes only when its receive is posted, so
# the world can never go on.  The capture used to wait until its 300 s timeout; the ranks
# publish their waits (waits.py) and the capture reports, within a second, every rank's wait
# with its peer, tag and lines.
# expect: error: rank 1 waits at bad_p2p_tag_mismatch.py:23 for the irecv from rank 0 (tag 2) posted at bad_p2p_tag_mismatch.py:22
# Run: shardproof check --torch tests/torch/bad_p2p_tag_mismatch.py --world 2
import torch
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        if rank == 0:
            work = dist.isend(w.grad, 1, tag=1)
            work.wait()
        else:
            g = torch.empty(2, 2)
            work = dist.irecv(g, 0, tag=2)
            work.wait()
            w.grad.add_(g)
    opt.step()


single, parallel = sgd_step.entry_points(step)
