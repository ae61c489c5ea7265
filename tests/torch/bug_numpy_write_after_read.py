# A tensor made by torch.from_numpy shares the array's memory: numpy wrote it after the
# recorder had read it, and the recorder kept the stale snapshot, so each rank's scaling of
# its gradient by 2 (through the array) was captured as a scaling by 1: EQUIVALENT.  A read
# now compares the memory with the value the recorder holds for it; a constant changed behind
# its back is a new constant (the plan multiplies by 2 and fails where it does), a value
# computed from registered tensors changed so is refused.
# expect: NOT EQUIVALENT at bug_numpy_write_after_read.py:25
# Run: shardproof check --torch tests/torch/bug_numpy_write_after_read.py --world 2
import numpy as np
import torch
import torch.distributed as dist

import sgd_step


def step(rank, world, bug):
    w, x, opt = sgd_step.setup(rank, world)
    a = np.ones(2, dtype=np.float32)
    scale = torch.from_numpy(a).view(2)     # read: the recorder knows a constant of ones
    sgd_step.backward((x @ w).sum(), w, world, reduce=False)
    if bug:
        a[:] = 2.0                          # numpy writes the memory that scale views
    if world > 1:
        dist.all_reduce(w.grad)
    w.grad.mul_(scale)
    opt.step()


single, parallel = sgd_step.entry_points(step, bug=True)
