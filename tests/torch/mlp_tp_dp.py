# Example 1: a two-layer MLP (after an input layer) under tensor parallelism (Megatron-style
# column- then row-parallel linear layers with autograd-function regions) and data parallelism
# (gradients all-reduced over dp by hand and averaged), trained with SGD.  World 4 = dp 2 x tp 2.
# Run: shardproof check --torch tests/torch/mlp_tp_dp.py --world 4
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import shardproof_torch as sp

B, H, FF = 4, 4, 8            # batch, hidden, feed-forward
DP, TP = 2, 2
BUG = None                    # the bug variants set this (tests/torch/bugs/)


def full_model():
    torch.manual_seed(1)
    return nn.Sequential(OrderedDict(fc0=nn.Linear(H, H), fc1=nn.Linear(H, FF), act=nn.GELU(),
                                     fc2=nn.Linear(FF, H)))


def data():
    torch.manual_seed(2)
    return torch.randn(B, H), torch.randn(B, H)


def single():
    model = full_model()
    x, y = data()
    sp.input("x", x)
    sp.input("y", y)
    sp.params(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(x), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()


class CopyToTP(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the gradient over tp backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        if BUG != "region_skips_allreduce":
            dist.all_reduce(g, group=ctx.group)
        return g, None


class ReduceFromTP(torch.autograd.Function):
    """Megatron's g: all-reduce over tp forward, identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class ColumnParallelLinear(nn.Module):
    def __init__(self, full, tp, group):
        super().__init__()
        n = full.out_features // TP
        self.weight = nn.Parameter(full.weight.detach()[tp * n:(tp + 1) * n].clone())
        self.bias = nn.Parameter(full.bias.detach()[tp * n:(tp + 1) * n].clone())
        self.group = group

    def forward(self, x):
        return F.linear(CopyToTP.apply(x, self.group), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    def __init__(self, full, tp, group):
        super().__init__()
        n = full.in_features // TP
        self.weight = nn.Parameter(full.weight.detach()[:, tp * n:(tp + 1) * n].clone())
        self.bias = nn.Parameter(full.bias.detach().clone())
        self.group = group

    def forward(self, x):
        return ReduceFromTP.apply(F.linear(x, self.weight), self.group) + self.bias


def groups(rank):
    """tp groups {0,1}, {2,3}; dp groups {0,2}, {1,3} (every rank creates every group)."""
    tp_groups = [dist.new_group([d * TP + t for t in range(TP)]) for d in range(DP)]
    dp_groups = [dist.new_group([d * TP + t for d in range(DP)]) for t in range(TP)]
    return tp_groups[rank // TP], dp_groups[rank % TP]


def parallel(rank, world):
    sp.mesh(dp=DP, tp=TP)
    dp, tp = rank // TP, rank % TP
    tp_group, dp_group = groups(rank)
    full = full_model()
    model = nn.Sequential(OrderedDict(fc0=full.fc0, fc1=ColumnParallelLinear(full.fc1, tp, tp_group),
                                      act=nn.GELU(), fc2=RowParallelLinear(full.fc2, tp, tp_group)))
    x, y = data()
    rows = slice(dp * B // DP, (dp + 1) * B // DP)
    x, y = x[rows].clone(), y[rows].clone()
    sp.input("x", x)
    sp.input("y", y)
    sp.params(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(x), y)
    sp.output("loss", loss)
    loss.backward()
    for p in model.parameters():                     # data parallel: average the gradients
        dist.all_reduce(p.grad, group=dp_group)
        if BUG != "grad_not_averaged":
            p.grad /= DP
    opt.step()
