# A raw pointer to a tensor's memory (data_ptr()) lets Python read its values with ctypes,
# without any operator: a branch on the gradient read that way was captured for the capture's
# data only (EQUIVALENT).  data_ptr() of memory holding a value computed from registered
# tensors, called by code other than torch's, is now a read of those values, and refused.
# expect: error: bad_data_ptr_read.py:27: a Python value is read (data_ptr(), a raw pointer
# Run: shardproof check --torch tests/torch/bad_data_ptr_read.py --world 2
import ctypes

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
    g0 = ctypes.c_float.from_address(w.grad.data_ptr()).value
    w.grad.mul_(1.0 if g0 < 100 else 0.5)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
