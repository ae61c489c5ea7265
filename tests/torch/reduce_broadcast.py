# Data parallel SGD whose gradient is reduced to rank 0 with dist.reduce and broadcast back:
# the buffer of rank 1 after the reduce (what the backend left there: bad_reduce_nonroot_read.py)
# is overwritten by the broadcast before anything reads it.
# Run: shardproof check --torch tests/torch/reduce_broadcast.py --world 2
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        dist.reduce(w.grad, dst=0)
        dist.broadcast(w.grad, src=0)
    opt.step()


single, parallel = sgd_step.entry_points(step)
