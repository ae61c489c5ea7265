# Example 4: ZeRO-1 (sharded optimizer state) with torch.optim.Adam under data parallelism.
# The gradients are all-reduced and averaged as under plain data parallelism, but each rank's
# Adam holds the moments of its own shard of every parameter only (rows of dim 0, a view of
# the parameter's memory) and updates that shard; the updated shards are all-gathered into
# every rank's full parameters.  Adam's moments are outputs too: sharded over dp in the plan,
# whole in single().  World 2 = dp 2.
# Run: shardproof check --torch tests/torch/zero1_adam.py --world 2
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import shardproof_torch as sp

B, H, FF = 4, 2, 4            # batch, hidden, feed-forward
DP = 2
LR = 0.01
BUG = None                    # the bug variants set this


def full_model():
    torch.manual_seed(1)
    return nn.Sequential(OrderedDict(fc1=nn.Linear(H, FF), act=nn.GELU(), fc2=nn.Linear(FF, H)))


def data():
    torch.manual_seed(2)
    return torch.randn(B, H), torch.randn(B, H)


def register_state(opt, named):
    for name, p in named:
        sp.output("exp_avg." + name, opt.state[p]["exp_avg"])
        sp.output("exp_avg_sq." + name, opt.state[p]["exp_avg_sq"])


def single():
    model = sp.params(full_model())
    x, y = data()
    sp.input("x", x)
    sp.input("y", y)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss = F.mse_loss(model(x), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()
    register_state(opt, model.named_parameters())


def rows(p, rank):
    n = p.shape[0] // DP
    return slice(rank * n, (rank + 1) * n)


def parallel(rank, world):
    sp.mesh(dp=DP)
    model = sp.params(full_model())
    x, y = data()
    x, y = x[rows(x, rank)].clone(), y[rows(y, rank)].clone()
    sp.input("x", x)
    sp.input("y", y)
    params = list(model.parameters())
    # ZeRO-1: this rank's Adam updates its shard of every parameter (a view of its memory)
    shards = [p.detach()[rows(p, rank)].requires_grad_() for p in params]
    opt = torch.optim.Adam(shards, lr=LR)
    loss = F.mse_loss(model(x), y)
    sp.output("loss", loss)
    loss.backward()
    for p, s in zip(params, shards):
        if BUG == "adam_local_grad":
            s.grad = p.grad[rows(p, rank)].clone()      # taken before the reduction
        dist.all_reduce(p.grad)                          # data parallel: average the gradients
        p.grad /= DP
        if BUG != "adam_local_grad":
            s.grad = p.grad[rows(p, rank)]
    opt.step()                                           # this rank's shards only
    for p, s in zip(params, shards):                     # all-gather the updated shards
        parts = [torch.empty_like(s) for _ in range(DP)]
        dist.all_gather(parts, s.detach())
        with torch.no_grad():
            p.copy_(torch.cat(parts))
    register_state(opt, zip([n for n, _ in model.named_parameters()], shards))
