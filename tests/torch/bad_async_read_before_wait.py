# dist.all_reduce(t, async_op=True) returns before the reduction completes; the capture ran it
# at once, so a plan copying the gradient before work.wait() (the local, unreduced gradient in
# a real run, or a race) was captured as reading the reduced one: EQUIVALENT.  The tensors of
# an asynchronous collective (async_op=True, isend, irecv) are now pending until its work's
# wait() (or is_completed()); an operator reading or writing them before is refused.
# expect: error: bad_async_read_before_wait.py:17: reads a tensor that the asynchronous all_reduce
# Run: shardproof check --torch tests/torch/bad_async_read_before_wait.py --world 2
import torch.distributed as dist

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, reduce=False)
    if world > 1:
        work = dist.all_reduce(w.grad, async_op=True)
        g = w.grad.clone()          # before the reduction is waited for
        work.wait()
        w.grad.copy_(g)
    opt.step()


single, parallel = sgd_step.entry_points(step)
