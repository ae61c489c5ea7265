# Values read into Python through .numpy() (or .tolist()) dispatch no ATen operator, so a
# branch on them was captured for the data of the capture only: a gradient scaled by 0.5 or
# 0.25 depending on the inputs' sum was EQUIVALENT (helper-45's review, session 31).  Such a
# read of a tensor computed from registered inputs is now refused, as .item() is.
# expect: error: bad_numpy_read.py:25: a Python value is read (.numpy())
# Run: shardproof check --torch tests/torch/bad_numpy_read.py --world 2
import torch
import torch.distributed as dist

import shardproof_torch as sp


def step(rank, world):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(2 * world, 2)[2 * rank:2 * rank + 2].clone()
    sp.param("w", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    loss = (x @ w).sum()
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    f = 1.0 if x.detach().numpy().sum() < 100 else 0.5
    w.grad.mul_(f)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
