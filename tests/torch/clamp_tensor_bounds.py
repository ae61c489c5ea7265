# torch.clamp with tensor bounds (clamp.Tensor; its backward tests both bounds with
# logical_and): the mapping read a bound as a Python number and failed with an unclear message.
# A bound is now a number or a tensor broadcast to the result, and logical_and/or/xor/not of
# bool masks (0/1 values) are products.
# Run: shardproof check --torch tests/torch/clamp_tensor_bounds.py --world 2
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
    h = x @ w
    lo = torch.full((2,), -0.1)
    hi = (x[:1] * 0).detach() + 0.3     # computed from an input, broadcast over the rows
    loss = torch.clamp(h, min=lo).sum() + torch.clamp(h, min=lo, max=hi).sum()
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
