# Two process groups of the same ranks, used in different orders: rank 0 all-reduces the
# gradient's first row in group A, then its second row in group B; rank 1 does B first.  Each
# group is its own gloo context, so rank 0 waits in A for rank 1 and rank 1 in B for rank 0,
# forever.  The capture counted collectives per set of ranks, saw both ranks in "the first
# collective of ranks 0,1" and waited for its 300 s timeout; it counts them per process group
# (waits.py, capture.py _group_id) and reports both waits within seconds.
# expect: error: rank 1 waits in all_reduce over ranks 0,1 (process group of the 2nd new_group() call) at bad_groups_swapped.py:24
# Run: shardproof check --torch tests/torch/bad_groups_swapped.py --world 2
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        a = dist.new_group([0, 1])
        b = dist.new_group([0, 1])
        g = w.grad
        if rank == 0:
            dist.all_reduce(g[0], group=a)
            dist.all_reduce(g[1], group=b)
        else:
            dist.all_reduce(g[1], group=b)
            dist.all_reduce(g[0], group=a)
    opt.step()


single, parallel = sgd_step.entry_points(step)
