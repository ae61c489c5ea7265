# Values read into Python through .numpy() (or .tolist()) dispatch no ATen operator, so a
# branch on them was captured for the data of the capture only: a gradient scaled by 0.5 or
# 0.25 depending on the inputs' sum was EQUIVALENT (helper-45's review, session 31).  Such a
# read of a tensor computed from registered inputs is now refused, as .item() is.
# expect: error: bad_numpy_read.py:12: a Python value is read (.numpy())
# Run: shardproof check --torch tests/torch/bad_numpy_read.py --world 2
import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    f = 1.0 if x.detach().numpy().sum() < 100 else 0.5
    w.grad.mul_(f)
    opt.step()


single, parallel = sgd_step.entry_points(step)
