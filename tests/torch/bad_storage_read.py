# A value read through a tensor's storage (storage()[i], .tolist(), iteration) goes through
# set_(), which the recorder took for an operator writing a new constant: the read of the
# gradient was not seen as a read, so the branch on it was captured for the capture's data only
# and the step was EQUIVALENT.  set_() is now an alias (the tensor reads the memory it views),
# so the element read is the .item() of the gradient and is refused.
# expect: error: bad_storage_read.py:26: a Python value is read (a storage's elements
# Run: shardproof check --torch tests/torch/bad_storage_read.py --world 2
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
    f = 1.0 if w.grad.storage()[0] < 100 else 0.5
    w.grad.mul_(f)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
