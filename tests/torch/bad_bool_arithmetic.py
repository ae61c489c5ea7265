# Arithmetic on bool or integer tensors is not real arithmetic (bool + bool is logical or, uint8
# wraps, sum(dtype=int64) truncates, a dtype view reinterprets bits): the capture mapped it as
# real arithmetic and a parallel step adding two masks was EQUIVALENT (helper-46's review,
# session 31).  An operator with an integer or bool result other than a comparison or a move of
# values of its own type is now refused (emit.py integer_values).
# expect: error: bad_bool_arithmetic.py:28: add computing bool values from bool
# Run: shardproof check --torch tests/torch/bad_bool_arithmetic.py --world 2
import torch
import torch.distributed as dist
import shardproof_torch as sp

def step(rank, world, bug):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)
    n = 4 // world
    x = x[n * rank:n * rank + n].clone()
    sp.param("wt", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    loss = (x @ w).sum()  # sum: gradients add over ranks
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        dist.all_reduce(w.grad)
    m = w.grad > 0
    if bug:
        w.grad.add_((m + m).float())     # bool + bool is logical or: 1 where positive
    else:
        w.grad.add_(m.float() * 2)
    opt.step()

def single():
    step(0, 1, False)

def parallel(rank, world):
    step(rank, world, True)
