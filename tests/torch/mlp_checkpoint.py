# Activation checkpointing under data parallelism: the first layer and its activation run
# under torch.utils.checkpoint, so the backward recomputes them from the saved input.  The
# plan's backward then reads the recomputation, the model's the values themselves: the
# capture leaves the recomputed modules' outputs uncut (a cut of them could not be proven),
# and cuts everything else.  World 2 = dp 2, SGD.
# Run: shardproof check --torch tests/torch/mlp_checkpoint.py --world 2
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import shardproof_torch as sp

B, H, FF = 4, 2, 4            # batch, hidden, feed-forward
DP = 2


def full_model():
    torch.manual_seed(1)
    return nn.Sequential(OrderedDict(fc1=nn.Linear(H, FF), act=nn.GELU(), fc2=nn.Linear(FF, H)))


def data():
    torch.manual_seed(2)
    return torch.randn(B, H), torch.randn(B, H)


def single():
    model = sp.params(full_model())
    x, y = data()
    sp.input("x", x)
    sp.input("y", y)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(x), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()


def parallel(rank, world):
    sp.mesh(dp=DP)
    model = sp.params(full_model())
    x, y = data()
    rows = slice(rank * B // DP, (rank + 1) * B // DP)
    x, y = x[rows].clone(), y[rows].clone()
    sp.input("x", x)
    sp.input("y", y)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    h = checkpoint(lambda t: model.act(model.fc1(t)), x, use_reentrant=False)
    loss = F.mse_loss(model.fc2(h), y)
    sp.output("loss", loss)
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= DP
    opt.step()
