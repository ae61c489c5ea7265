# torch.tensor([s]) of a 0-dim tensor s reads s's value in C++ without an operator the
# recorder sees: the result was a constant, so a gradient scaled by its own sum (captured as
# one number) was EQUIVALENT for the capture's data only.  A tensor inside the data of
# torch.tensor, as_tensor, asarray or new_tensor (and float(), int(), an index of a tensor) is
# now read into Python, and refused when it is computed from registered tensors.
# expect: error: bad_tensor_from_values.py:27: a Python value is read (torch.tensor() of data
# Run: shardproof check --torch tests/torch/bad_tensor_from_values.py --world 2
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
    s = w.grad.sum()
    w.grad.mul_(torch.tensor([s]))
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
