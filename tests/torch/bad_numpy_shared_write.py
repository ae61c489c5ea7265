# A tensor made by torch.from_numpy shares the array's memory: numpy reads what an operator
# writes there without an operator the recorder sees.  The gradient copied into such a buffer
# and tested through the array was a branch captured for the capture's data only
# (EQUIVALENT).  A value written into memory that numpy shares now counts as read into Python,
# and is refused when it is computed from registered tensors (a registered tensor that numpy
# shares is refused too: register a copy).
# expect: error: bad_numpy_shared_write.py:19: a Python value is read (a write into memory that numpy
# Run: shardproof check --torch tests/torch/bad_numpy_shared_write.py --world 2
import numpy as np
import torch

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    a = np.zeros((2, 2), dtype=np.float32)
    buf = torch.from_numpy(a)
    buf.copy_(w.grad)
    w.grad.mul_(1.0 if a.sum() < 100 else 0.5)
    opt.step()


single, parallel = sgd_step.entry_points(step)
