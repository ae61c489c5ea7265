# A raw pointer to a tensor's memory (data_ptr()) lets Python read its values with ctypes,
# without any operator: a branch on the gradient read that way was captured for the capture's
# data only (EQUIVALENT).  data_ptr() of memory holding a value computed from registered
# tensors, called by code other than torch's, is now a read of those values, and refused.
# expect: error: bad_data_ptr_read.py:14: a Python value is read (data_ptr(), a raw pointer
# Run: shardproof check --torch tests/torch/bad_data_ptr_read.py --world 2
import ctypes

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    g0 = ctypes.c_float.from_address(w.grad.data_ptr()).value
    w.grad.mul_(1.0 if g0 < 100 else 0.5)
    opt.step()


single, parallel = sgd_step.entry_points(step)
