# torch.clamp with tensor bounds (clamp.Tensor; its backward tests both bounds with
# logical_and): the mapping read a bound as a Python number and failed with an unclear message.
# A bound is now a number or a tensor broadcast to the result, and logical_and/or/xor/not of
# bool masks (0/1 values) are products.
# Run: shardproof check --torch tests/torch/clamp_tensor_bounds.py --world 2
import torch

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.setup(rank, world)
    h = x @ w
    lo = torch.full((2,), -0.1)
    hi = (x[:1] * 0).detach() + 0.3     # computed from an input, broadcast over the rows
    loss = torch.clamp(h, min=lo).sum() + torch.clamp(h, min=lo, max=hi).sum()
    sgd_step.backward(loss, w, world)
    opt.step()


single, parallel = sgd_step.entry_points(step)
