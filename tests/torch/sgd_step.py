# sgd_step.py: the small data-parallel SGD step that many examples here share (`import
# sgd_step`): a 2x2 parameter, a batch of 4 rows split over the ranks (world 1 or 2), the sum
# loss, its gradient all-reduced.  Not an example itself: no '# Run:' line, so run.sh skips
# it.  It is the user's code to the capture like the example importing it (a file beside it),
# so its operations are reported at sgd_step.py:LINE: what an example is about (the read, the
# collective, the constant, ...) stays in the example's own file, at the line its
# '# expect:' names.
import torch
import torch.distributed as dist

import shardproof_torch as sp


def setup(rank, world, name="wt"):
    """Seed 0, the parameter w (registered as `name`), this rank's rows of the batch x (all
    4 in single()) registered as input `x`, and SGD on w: (w, x, opt)."""
    torch.manual_seed(0)
    w = torch.randn(2, 2, requires_grad=True)
    x = torch.randn(4, 2)[2 * rank:2 * rank + 2 * (2 // world)].clone()
    sp.param(name, w)
    sp.input("x", x)
    opt = torch.optim.SGD([w], lr=0.5)
    return w, x, opt


def backward(loss, w, world, reduce=True):
    """Output `loss` and run its backward; with reduce, all-reduce w's gradient over the
    ranks (a sum, as the loss sums over the batch)."""
    sp.output("loss", loss)
    loss.backward()
    if reduce and world > 1:
        dist.all_reduce(w.grad)


def grad(rank, world, name="wt", reduce=True):
    """setup() and backward() of the loss (x @ w).sum(): (w, x, opt) with w.grad computed
    (and all-reduced with reduce); the optimizer's step is the caller's."""
    w, x, opt = setup(rank, world, name)
    backward((x @ w).sum(), w, world, reduce)
    return w, x, opt


def entry_points(step, bug=False):
    """(single, parallel) of an example: single() runs step(0, 1) and parallel(rank, world)
    step(rank, world); with bug, step takes a third argument, False in single() and True on
    every rank of parallel()."""
    if bug:
        def single():
            step(0, 1, False)

        def parallel(rank, world):
            step(rank, world, True)
    else:
        def single():
            step(0, 1)

        def parallel(rank, world):
            step(rank, world)
    return single, parallel
