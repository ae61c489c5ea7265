# Example 1b: the MLP under torch's own DistributedDataParallel (gloo, 2 data-parallel ranks),
# trained with SGD: DDP's reducer scales each gradient by 1/world into its bucket, all-reduces
# the bucket and copies it back, all in C++; the capture sees those operators as they run.
# Run: shardproof check --torch tests/torch/mlp_ddp.py --world 2
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import shardproof_torch as sp

B, H, FF = 2, 2, 4


def full_model():
    torch.manual_seed(1)
    return nn.Sequential(OrderedDict(fc1=nn.Linear(H, FF), act=nn.GELU(), fc2=nn.Linear(FF, H)))


def data():
    torch.manual_seed(2)
    return torch.randn(B, H), torch.randn(B, H)


def step(model, x, y):
    sp.input("x", x)
    sp.input("y", y)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(x), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()


def single():
    model = sp.params(full_model())
    step(model, *data())


def parallel(rank, world):
    sp.mesh(dp=world)
    model = full_model()
    sp.params(model)
    ddp = DDP(model)
    x, y = data()
    rows = slice(rank * B // world, (rank + 1) * B // world)
    step(ddp, x[rows].clone(), y[rows].clone())
