# Example 3: two pipeline stages on two ranks, two micro-batches with gradient accumulation:
# stage 0 looks the tokens up in the embedding and runs a linear layer + GELU, stage 1 runs
# another and the output layer, which shares the embedding's weight (tied, GPT-style).  Stage 0
# sends activations forward, stage 1 sends gradients back.  Each stage holds its own copy of
# the tied weight, so its two gradients are all-reduced over the stages before the step, as
# Megatron's embedding group does.
# Run: shardproof check --torch tests/torch/pipeline_2stages.py --world 2
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import shardproof_torch as sp

B, H, V, NM = 2, 2, 4, 2      # batch, hidden, vocabulary, micro-batches
BUG = None                    # the bug variants set this


class Head(nn.Module):
    """The output layer, tied: the embedding's weight, transposed."""

    def forward(self, h, weight):
        return h @ weight.t()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.emb = nn.Embedding(V, H)
        self.s0 = nn.Sequential(OrderedDict(fc=nn.Linear(H, H), act=nn.GELU()))
        self.s1 = nn.Sequential(OrderedDict(fc=nn.Linear(H, H), act=nn.GELU()))
        self.head = Head()

    def forward(self, ids):
        return self.head(self.s1(self.s0(self.emb(ids))), self.emb.weight)


def data():
    torch.manual_seed(2)
    return torch.tensor([1, 3]), torch.randn(B, V)


def single():
    model = sp.params(Net())
    ids, y = data()
    sp.input("y", y)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(ids), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()


def parallel(rank, world):
    sp.mesh(pp=2)
    net = Net()
    sp.params(net.emb, prefix="emb.")             # both stages hold the tied weight
    stage = net.s0 if rank == 0 else net.s1
    sp.params(stage, prefix="s%d." % rank)
    sp.params(net.head, prefix="head.")
    opt = torch.optim.SGD(list(net.emb.parameters()) + list(stage.parameters()), lr=0.1)
    ids, y = data()
    mb = B // NM
    if rank == 0:
        for m in range(NM):                     # forward, then backward, per micro-batch
            h = stage(net.emb(ids[m * mb:(m + 1) * mb]))
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
            loss = F.mse_loss(net.head(stage(h), net.emb.weight), y[m * mb:(m + 1) * mb])
            if BUG != "loss_not_divided":
                loss = loss / NM
            loss.backward()
            dist.send(h.grad, 0)
            total = total + loss.detach()
        sp.output("loss", total)
    if BUG != "tied_grad_not_reduced":
        dist.all_reduce(net.emb.weight.grad)    # the tied weight's two parts of its gradient
    opt.step()
