# dist.all_reduce(t, async_op=True) returns before the reduction completes; the capture ran it
# at once, so a plan copying the gradient before work.wait() (the local, unreduced gradient in
# a real run, or a race) was captured as reading the reduced one: EQUIVALENT.  The tensors of
# an asynchronous collective (async_op=True, isend, irecv) are now pending until its work's
# wait() (or is_completed()); an operator reading or writing them before is refused.
# expect: error: bad_async_read_before_wait.py:26: reads a tensor that the asynchronous all_reduce
# Run: shardproof check --torch tests/torch/bad_async_read_before_wait.py --world 2
import torch
import torch.distributed as dist

import shardproof_torch as sp


def step(rank, world):
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)[2 * rank:2 * rank + 2 * (2 // world)].clone()
    sp.param("wt", w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    loss = (x @ w).sum()
    sp.output("loss", loss)
    loss.backward()
    if world > 1:
        work = dist.all_reduce(w.grad, async_op=True)
        g = w.grad.clone()          # before the reduction is waited for
        work.wait()
        w.grad.copy_(g)
    opt.step()


def single():
    step(0, 1)


def parallel(rank, world):
    step(rank, world)
