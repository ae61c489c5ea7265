# A rank's constant table was matched to single()'s within a tolerance scaled by the table's
# largest element: a 0 matched 0.0099 next to a 1000, the plan read the model's table in
# place of its own, and the wrong step was EQUIVALENT.  A rank's constant is now matched only
# to a shard with exactly its values (the plan reads the model's constant in its place).
# expect: error: bad_const_near_match.py:21: a constant tensor of shape [2, 2] on rank 0 that is no shard
# Run: shardproof check --torch tests/torch/bad_const_near_match.py --world 2
import torch
import torch.distributed as dist

import shardproof_torch as sp


def step(rank, world, bug):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)[2 * rank:2 * rank + 2 * (2 // world)].clone()
    sp.param("wt", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    a = torch.tensor([[1000.0, 0.0099 if bug else 0.0], [3.0, 4.0]])
    loss = (x @ w @ a).sum()
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    opt.step()


def single():
    step(0, 1, False)


def parallel(rank, world):
    step(rank, world, True)
