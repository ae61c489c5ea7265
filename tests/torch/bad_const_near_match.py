# A rank's constant table was matched to single()'s within a tolerance scaled by the table's
# largest element: a 0 matched 0.0099 next to a 1000, the plan read the model's table in
# place of its own, and the wrong step was EQUIVALENT.  A rank's constant is now matched only
# to a shard with exactly its values (the plan reads the model's constant in its place).
# expect: error: bad_const_near_match.py:15: a constant tensor of shape [2, 2] on rank 0 that is no shard
# Run: shardproof check --torch tests/torch/bad_const_near_match.py --world 2
import torch

import sgd_step


def step(rank, world, bug):
    w, x, opt = sgd_step.setup(rank, world)
    a = torch.tensor([[1000.0, 0.0099 if bug else 0.0], [3.0, 4.0]])
    loss = (x @ w @ a).sum()
    sgd_step.backward(loss, w, world)
    opt.step()


single, parallel = sgd_step.entry_points(step, bug=True)
