# Example 2: one Llama-style transformer block (RMSNorm, attention with rotary embeddings,
# SwiGLU MLP) under Megatron tensor + sequence parallelism, in plain PyTorch.  The same module
# code runs in single() (tp = 1) and on each rank: between the regions (the norms, the
# residuals) the sequence is sharded over tp; the attention and the MLP all-gather it (their
# column-parallel projections split the heads and the hidden units), and their row-parallel
# output projections reduce-scatter the partial sums back onto the sequence.  The block's
# output is gathered before the loss, which every rank computes on the whole sequence.  The
# norms' weights see only a rank's tokens, so their gradients are all-reduced over tp after
# the backward, as Megatron does for sequence-parallel parameters.  World 2 = tp 2, SGD.
# Run: shardproof check --torch tests/torch/transformer_tp_sp.py --world 2
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import shardproof_torch as sp

B, S, H, NH, FF = 1, 4, 8, 2, 8    # batch, sequence, hidden, heads, MLP hidden
D = H // NH                         # head dim
TP = 2
EPS = 1e-6
BUG = None                          # the bug variants set this


class GatherFromSP(torch.autograd.Function):
    """Megatron's gather_from_sequence_parallel_region: all-gather the sequence (dim 1)
    forward; backward, the reduce-scatter of the gradient when tensor-parallel layers consume
    the gathered tensor (each rank holds a part of its gradient), else this rank's chunk."""

    @staticmethod
    def forward(ctx, x, group, reduce_grad):
        ctx.group, ctx.reduce_grad = group, reduce_grad
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=1)

    @staticmethod
    def backward(ctx, g):
        n, r = dist.get_world_size(ctx.group), dist.get_rank(ctx.group)
        if ctx.reduce_grad:
            g = g.clone()
            dist.all_reduce(g, group=ctx.group)     # gloo in torch 1.13: no reduce-scatter
        return g.chunk(n, dim=1)[r].contiguous(), None, None


class ReduceScatterToSP(torch.autograd.Function):
    """Megatron's reduce_scatter_to_sequence_parallel_region: sum the row-parallel partial
    outputs and keep this rank's chunk of the sequence forward; all-gather backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        n, r = dist.get_world_size(group), dist.get_rank(group)
        x = x.clone()
        dist.all_reduce(x, group=group)
        return x.chunk(n, dim=1)[r].contiguous()

    @staticmethod
    def backward(ctx, g):
        parts = [torch.empty_like(g) for _ in range(dist.get_world_size(ctx.group))]
        dist.all_gather(parts, g.contiguous(), group=ctx.group)
        return torch.cat(parts, dim=1), None


def linear(w):
    m = nn.Linear(w.shape[1], w.shape[0], bias=False)
    m.weight = nn.Parameter(w.detach().clone())
    return m


class RMSNorm(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.weight = nn.Parameter(w.detach().clone())

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotate_half(x):
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, w, group):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (linear(w[k]) for k in ("wq", "wk", "wv", "wo"))
        self.group = group

    def forward(self, x, cos, sin):
        if self.group is not None:
            x = GatherFromSP.apply(x, self.group, True)
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, -1, D).transpose(1, 2)
        k = self.wk(x).view(b, s, -1, D).transpose(1, 2)
        v = self.wv(x).view(b, s, -1, D).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        p = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1)
        o = self.wo((p @ v).transpose(1, 2).reshape(b, s, -1))
        if self.group is not None:
            o = ReduceScatterToSP.apply(o, self.group)
        return o


class MLP(nn.Module):
    def __init__(self, w, group):
        super().__init__()
        self.w1, self.w2, self.w3 = (linear(w[k]) for k in ("w1", "w2", "w3"))
        self.group = group

    def forward(self, x):
        if self.group is not None:
            x = GatherFromSP.apply(x, self.group, True)
        o = self.w2(F.silu(self.w1(x)) * self.w3(x))
        if self.group is not None:
            o = ReduceScatterToSP.apply(o, self.group)
        return o


class Block(nn.Module):
    def __init__(self, w, group=None):
        super().__init__()
        self.attn_norm = RMSNorm(w["attn_norm"])
        self.attn = Attention(w, group)
        self.mlp_norm = RMSNorm(w["mlp_norm"])
        self.mlp = MLP(w, group)

    def forward(self, x, cos, sin):
        h = x + self.attn(self.attn_norm(x), cos, sin)
        return h + self.mlp(self.mlp_norm(h))


def weights():
    torch.manual_seed(1)
    w = {k: torch.randn(H, H) / math.sqrt(H) for k in ("wq", "wk", "wv", "wo")}
    w.update(w1=torch.randn(FF, H) / math.sqrt(H), w3=torch.randn(FF, H) / math.sqrt(H),
             w2=torch.randn(H, FF) / math.sqrt(FF))
    w.update(attn_norm=1 + 0.1 * torch.randn(H), mlp_norm=1 + 0.1 * torch.randn(H))
    return w


def shard(w, t):
    """Rank t's weights: the heads and hidden units of column-parallel projections (rows),
    the matching columns of the row-parallel ones; the norms replicated."""
    out = dict(w)
    for k in ("wq", "wk", "wv", "w1", "w3"):
        out[k] = w[k].chunk(TP, dim=0)[t]
    for k in ("wo", "w2"):
        out[k] = w[k].chunk(TP, dim=1)[t]
    return out


def data():
    torch.manual_seed(2)
    pos = torch.arange(S, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    ang = torch.outer(pos, inv)
    ang = torch.cat((ang, ang), dim=-1)
    return torch.randn(B, S, H), torch.randn(B, S, H), ang.cos(), ang.sin()


def single():
    block = sp.params(Block(weights()))
    x, y, cos, sin = data()
    sp.input("x", x)
    sp.input("y", y)
    opt = torch.optim.SGD(block.parameters(), lr=0.1)
    loss = F.mse_loss(block(x, cos, sin), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()


def parallel(rank, world):
    sp.mesh(tp=TP)
    group = dist.new_group(list(range(TP)))
    block = sp.params(Block(shard(weights(), rank), group))
    x, y, cos, sin = data()
    x = x.chunk(TP, dim=1)[rank].clone()            # this rank's part of the sequence
    sp.input("x", x)
    sp.input("y", y)
    opt = torch.optim.SGD(block.parameters(), lr=0.1)
    out = GatherFromSP.apply(block(x, cos, sin), group, False)
    loss = F.mse_loss(out, y)
    sp.output("loss", loss)
    loss.backward()
    if BUG != "norm_grads_not_reduced":
        for norm in (block.attn_norm, block.mlp_norm):    # sequence-parallel parameters
            dist.all_reduce(norm.weight.grad, group=group)
    opt.step()
