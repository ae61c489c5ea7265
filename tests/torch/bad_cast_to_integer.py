# A conversion of a floating point tensor to an integer type rounds toward zero: each rank
# rounds its averaged gradient down to quarters.  The capture mapped `.long()` (ATen _to_copy)
# to the identity, so the plan lost the rounding and was EQUIVALENT (helper-45's review,
# session 31); such a conversion (to an integer or bool type) is now refused.
# expect: error: bad_cast_to_integer.py:15: _to_copy computing int64 values from float32
# Run: shardproof check --torch tests/torch/bad_cast_to_integer.py --world 2
import torch

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    with torch.no_grad():
        w.grad.copy_((w.grad * 4).long().float() / 4)
    opt.step()


single, parallel = sgd_step.entry_points(step)
