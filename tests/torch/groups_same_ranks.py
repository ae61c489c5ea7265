# Data parallel SGD whose gradient is all-reduced a row at a time in two process groups of the
# same ranks: the first row in group A, the second in group B, in that order on every rank
# (the legal twin of bad_groups_swapped.py).  The capture counts collectives per process
# group, not per set of ranks, so a rank in B's first all-reduce while its peer is still in
# A's is no deadlock.
# Run: shardproof check --torch tests/torch/groups_same_ranks.py --world 2
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        a = dist.new_group([0, 1])
        b = dist.new_group([0, 1])
        g = w.grad
        dist.all_reduce(g[0], group=a)
        dist.all_reduce(g[1], group=b)
    opt.step()


single, parallel = sgd_step.entry_points(step)
