# A value read through a tensor's storage (storage()[i], .tolist(), iteration) goes through
# set_(), which the recorder took for an operator writing a new constant: the read of the
# gradient was not seen as a read, so the branch on it was captured for the capture's data only
# and the step was EQUIVALENT.  set_() is now an alias (the tensor reads the memory it views),
# so the element read is the .item() of the gradient and is refused.
# expect: error: bad_storage_read.py:13: a Python value is read (a storage's elements
# Run: shardproof check --torch tests/torch/bad_storage_read.py --world 2
import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world)
    f = 1.0 if w.grad.storage()[0] < 100 else 0.5
    w.grad.mul_(f)
    opt.step()


single, parallel = sgd_step.entry_points(step)
