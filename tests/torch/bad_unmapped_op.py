# An ATen operator without a mapping to the plan language is a hard error naming it and the
# Python line that ran it (here sin, whose value on a registered tensor the language lacks).
# expect: error: bad_unmapped_op.py:18: ATen operator 'sin' has no shardproof mapping
# Run: shardproof check --torch tests/torch/bad_unmapped_op.py --world 2
import torch

import shardproof_torch as sp


def step(world):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(2, 2)
    sp.param("w", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    loss = (x @ w).sum() * world
    loss = torch.sin(loss)
    sp.output("loss", loss)
    loss.backward()
    opt.step()


def single():
    step(1)


def parallel(rank, world):
    step(1)
