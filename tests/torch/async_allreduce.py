# Data parallel with the gradient all-reduce issued asynchronously (async_op=True), waited
# for before the gradient is used: the capture runs the collective at once and keeps its
# tensor pending until work.wait() (bad_async_read_before_wait.py reads it before).
# Run: shardproof check --torch tests/torch/async_allreduce.py --world 2
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
        work = dist.all_reduce(w.grad, async_op=True)
        y = (x * 2).sum()           # other work while the reduction runs
        work.wait()
        sp.output("y", y)
    else:
        sp.output("y", (x * 2).sum())
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
