# A tensor given another tensor's memory with set_() read that memory unseen: the recorder
# took set_() for an operator writing a new constant, so a branch on the gradient read through
# it was captured for the capture's data only (EQUIVALENT).  set_() is now an alias: the
# tensor reads the value the recorder knows in that memory, and the branch is refused.
# expect: error: bad_set_storage_read.py:15: a Python value is read (bool(), a condition)
# Run: shardproof check --torch tests/torch/bad_set_storage_read.py --world 2
import torch

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    g = torch.tensor([]).set_(w.grad.storage())
    f = 1.0 if g[0] < 100 else 0.5
    w.grad.mul_(f)
    opt.step()


single, parallel = sgd_step.entry_points(step)
