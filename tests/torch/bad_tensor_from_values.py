# torch.tensor([s]) of a 0-dim tensor s reads s's value in C++ without an operator the
# recorder sees: the result was a constant, so a gradient scaled by its own sum (captured as
# one number) was EQUIVALENT for the capture's data only.  A tensor inside the data of
# torch.tensor, as_tensor, asarray or new_tensor (and float(), int(), an index of a tensor) is
# now read into Python, and refused when it is computed from registered tensors.
# expect: error: bad_tensor_from_values.py:16: a Python value is read (torch.tensor() of data
# Run: shardproof check --torch tests/torch/bad_tensor_from_values.py --world 2
import torch

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    s = w.grad.sum()
    w.grad.mul_(torch.tensor([s]))
    opt.step()


single, parallel = sgd_step.entry_points(step)
