# A parameter named `w` beside the mesh axis inferred from the process groups, also `w`: in a
# plan an axis name stands for its size, so `all_reduce(t, sum, w)` did not parse.  Inferred
# axes are now named apart from every registered name (here `w_`); an sp.mesh(...) axis named
# like a registered tensor is refused, naming both.
# Run: shardproof check --torch tests/torch/param_named_like_axis.py --world 2
import torch
import torch.distributed as dist

import shardproof_torch as sp


def step(rank, world):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)[2 * rank:2 * rank + 2 * (2 // world)].clone()
    sp.param("w", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    loss = (x @ w).sum()
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
