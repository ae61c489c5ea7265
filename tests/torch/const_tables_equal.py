# Two constant tables of equal values, one per use: each was a model input of its own (c1,
# c2), and each rank's table was matched to the first that fit, so the plan read c1 where the
# model reads c2, two independent symbols: a false NOT EQUIVALENT.  Constants of single() of
# equal values are now one model input, and a rank's constant is matched by exact values.
# Run: shardproof check --torch tests/torch/const_tables_equal.py --world 2
import torch

import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.setup(rank, world)
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = torch.tensor([[1.0, 2.0], [3.0, 4.0]])     # equal to a, another tensor
    loss = (x @ w @ a).sum() + (x @ w @ b).sum() * 2
    sgd_step.backward(loss, w, world)
    opt.step()


single, parallel = sgd_step.entry_points(step)
