# Example 3: two pipeline stages (one linear layer + GELU each) on two ranks, two micro-batches
# with gradient accumulation: stage 0 sends activations forward, stage 1 sends gradients back.
# Run: shardproof check --torch tests/torch/pipeline_2stages.py --world 2
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import shardproof_torch as sp

B, H, NM = 2, 2, 2            # batch, hidden, micro-batches
BUG = None


def full_model():
    torch.manual_seed(1)
    return nn.Sequential(OrderedDict(s0=nn.Sequential(nn.Linear(H, H), nn.GELU()),
                                     s1=nn.Sequential(nn.Linear(H, H), nn.GELU())))


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
    sp.mesh(pp=2)
    full = full_model()
    stage = full.s0 if rank == 0 else full.s1
    sp.params(stage, prefix="s%d." % rank)
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    x, y = data()
    mb = B // NM
    if rank == 0:
        sp.input("x", x)
        for m in range(NM):                     # forward, then backward, per micro-batch
            h = stage(x[m * mb:(m + 1) * mb])
            dist.send(h.detach(), 1)
            g = torch.empty(mb, H)
            dist.recv(g, 1)
            h.backward(g)
    else:
        sp.input("y", y)
        total = torch.zeros(())
        for m in range(NM):
            h = torch.empty(mb, H)
            dist.recv(h, 0)
            h.requires_grad_(True)
            loss = F.mse_loss(stage(h), y[m * mb:(m + 1) * mb])
            if BUG != "loss_not_divided":
                loss = loss / NM
            loss.backward()
            dist.send(h.grad, 0)
            total = total + loss.detach()
        sp.output("loss", total)
    opt.step()
