# After dist.reduce(t, dst=0) the tensor of a rank other than dst holds what the backend left
# there: gloo's ring leaves partial sums in it (here rank 1's updated weight differs from
# single()'s in its second row), NCCL leaves the input.  The capture recorded the plan
# language's reduce (other ranks keep their input), so this step, whose rank 1 steps with its
# reduced buffer, was EQUIVALENT while PyTorch's rank 1 computed another weight (helper-52's
# review).  A read of such a buffer computed from registered tensors is now refused.
# expect: error: bad_reduce_nonroot_read.py:17: the tensor of a rank other than dst after dist.reduce
# Run: shardproof check --torch tests/torch/bad_reduce_nonroot_read.py --world 2
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)       # w.grad all-reduced: every rank holds the sum
    if world > 1:
        dist.reduce(w.grad, dst=0)               # rank 0: twice the sum
        if rank == 0:
            w.grad.div_(2)
    opt.step()


single, parallel = sgd_step.entry_points(step)
