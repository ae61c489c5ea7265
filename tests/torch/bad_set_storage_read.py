# A tensor given another tensor's memory with set_() read that memory unseen: the recorder
# took set_() for an operator writing a new constant, so a branch on the gradient read through
# it was captured for the capture's data only (EQUIVALENT).  set_() is now an alias: the
# tensor reads the value the recorder knows in that memory, and the branch is refused.
# expect: error: bad_set_storage_read.py:26: a Python value is read (bool(), a condition)
# Run: shardproof check --torch tests/torch/bad_set_storage_read.py --world 2
import torch
import torch.distributed as dist

import shardproof_torch as sp


def step(rank, world):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)[2 * rank:2 * rank + 2 * (2 // world)].clone()
    sp.param("wt", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    loss = (x @ w).sum()
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    g = torch.tensor([]).set_(w.grad.storage())
    f = 1.0 if g[0] < 100 else 0.5
    w.grad.mul_(f)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
