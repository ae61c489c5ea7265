# A tensor made by torch.from_numpy shares the array's memory: numpy wrote it after the
# recorder had read it, and the recorder kept the stale snapshot, so each rank's scaling of
# its gradient by 2 (through the array) was captured as a scaling by 1: EQUIVALENT.  A read
# now compares the memory with the value the recorder holds for it; a constant changed behind
# its back is a new constant (the plan multiplies by 2 and fails where it does), a value
# computed from registered tensors changed so is refused.
# expect: NOT EQUIVALENT at bug_numpy_write_after_read.py:32
# Run: shardproof check --torch tests/torch/bug_numpy_write_after_read.py --world 2
import numpy as np
import torch
import torch.distributed as dist

import shardproof_torch as sp


def step(rank, world, bug):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)[2 * rank:2 * rank + 2 * (2 // world)].clone()
    sp.param("wt", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    a = np.ones(2, dtype=np.float32)
    scale = torch.from_numpy(a).view(2)     # read: the recorder knows a constant of ones
    loss = (x @ w).sum()
    sp.output("loss", loss)
    loss.backward()
    if bug:
        a[:] = 2.0                          # numpy writes the memory that scale views
    if world > 1:
        dist.all_reduce(w.grad)
    w.grad.mul_(scale)
    opt.step()


def single():
    step(0, 1, False)


def parallel(rank, world):
    step(rank, world, True)
