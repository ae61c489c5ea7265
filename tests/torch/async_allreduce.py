# Data parallel with the gradient all-reduce issued asynchronously (async_op=True), waited
# for before the gradient is used: the capture runs the collective at once and keeps its
# tensor pending until work.wait() (bad_async_read_before_wait.py reads it before).
# Run: shardproof check --torch tests/torch/async_allreduce.py --world 2
import torch.distributed as dist

import sgd_step
import shardproof_torch as sp


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        work = dist.all_reduce(w.grad, async_op=True)
        y = (x * 2).sum()           # other work while the reduction runs
        work.wait()
        sp.output("y", y)
    else:
        sp.output("y", (x * 2).sum())
    opt.step()


single, parallel = sgd_step.entry_points(step)
