# Data parallel SGD with a static loss scale of 2^30, the gradient unscaled by 2^-30 after its
# all-reduce: scaling by a power of two is exact in floating point, so the step is the
# single-device one (single() does not scale).  The capture wrote each Python number as the simplest rational in its
# float32 rounding interval: 2^30 became 1073741792 and 2^-30 1/1073741761, whose product is
# not 1, and the check was NOT EQUIVALENT for this correct step, with a witness of the
# reference executor at the real sizes (helper-52's review).  A float that is an integer, or
# a power of two times a small integer, is now its exact value.
# Run: shardproof check --torch tests/torch/loss_scale_pow2.py --world 2
import torch.distributed as dist

import sgd_step
import shardproof_torch as sp


def step(rank, world, scaled):
    w, x, opt = sgd_step.setup(rank, world)
    loss = (x @ w).sum()
    sp.output("loss", loss)
    if not scaled:                  # single(): no scaling
        loss.backward()
    else:
        (loss * 2.0 ** 30).backward()
        if world > 1:
            dist.all_reduce(w.grad)
        w.grad.mul_(2.0 ** -30)
    opt.step()


single, parallel = sgd_step.entry_points(step, bug=True)
