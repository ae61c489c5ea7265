# A conversion of a floating point tensor to an integer type rounds toward zero: each rank
# rounds its averaged gradient down to quarters.  The capture mapped `.long()` (ATen _to_copy)
# to the identity, so the plan lost the rounding and was EQUIVALENT (helper-45's review,
# session 31); such a conversion (to an integer or bool type) is now refused.
# expect: error: bad_cast_to_integer.py:26: _to_copy computing int64 values from float32
# Run: shardproof check --torch tests/torch/bad_cast_to_integer.py --world 2
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
    with torch.no_grad():
        w.grad.copy_((w.grad * 4).long().float() / 4)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
