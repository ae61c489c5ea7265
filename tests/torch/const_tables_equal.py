# Two constant tables of equal values, one per use: each was a model input of its own (c1,
# c2), and each rank's table was matched to the first that fit, so the plan read c1 where the
# model reads c2, two independent symbols: a false NOT EQUIVALENT.  Constants of single() of
# equal values are now one model input, and a rank's constant is matched by exact values.
# Run: shardproof check --torch tests/torch/const_tables_equal.py --world 2
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
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = torch.tensor([[1.0, 2.0], [3.0, 4.0]])     # equal to a, another tensor
    loss = (x @ w @ a).sum() + (x @ w @ b).sum() * 2
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
