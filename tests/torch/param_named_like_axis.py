# A parameter named `w` beside the mesh axis inferred from the process groups, also `w`: in a
# plan an axis name stands for its size, so `all_reduce(t, sum, w)` did not parse.  Inferred
# axes are now named apart from every registered name (here `w_`); an sp.mesh(...) axis named
# like a registered tensor is refused, naming both.
# Run: shardproof check --torch tests/torch/param_named_like_axis.py --world 2
import sgd_step


def step(rank, world):
    w, x, opt = sgd_step.grad(rank, world, name="w")
    opt.step()


single, parallel = sgd_step.entry_points(step)
