"""shardproof_torch: capture a PyTorch training step for shardproof (docs/torch.md).

A user file defines two functions:

    def single():               # one training step on one device
    def parallel(rank, world):  # the same step as the distributed code runs it

and registers, in both, what corresponds:

    import shardproof_torch as sp
    sp.input("x", x)            # a data tensor, by name (before it is used)
    sp.params(model)            # every parameter, by its module path (prefix= for a sub-module)
    sp.param("emb.weight", w)   # one parameter tensor by name
    sp.output("loss", loss)     # an output value (its value at this call)
    sp.mesh(dp=2, tp=2)         # optional, in parallel(): the mesh axes, major to minor

Gradients (`grad.<path>`) and updated parameters (`<path>.new`) of every registered parameter
are outputs too: their values when the function returns.  `shardproof torch FILE.py --world N`
runs both functions under the recorder and writes a shardproof plan file.
"""

__all__ = ["input", "params", "param", "output", "mesh"]


def _rec(what):
    from .capture import current_recorder  # torch is imported only when capturing
    r = current_recorder()
    if r is None:
        raise RuntimeError(
            "shardproof_torch.%s: called outside a capture (run the file with "
            "`shardproof torch FILE.py --world N`)" % what)
    return r


def input(name, tensor):
    """Register a data tensor (inputs, targets) under a name shared by single() and parallel()."""
    _rec("input").register_input(str(name), tensor)
    return tensor


def param(name, tensor):
    """Register one trained parameter tensor under a name (its module path in single())."""
    _rec("param").register_param(str(name), tensor)
    return tensor


def params(module, prefix=""):
    """Register every parameter of a torch.nn.Module by its module path (prefix + path)."""
    rec = _rec("params")
    for path, p in module.named_parameters():
        rec.register_param(prefix + path, p)
    rec.watch_modules(module, prefix)
    return module


def output(name, tensor):
    """Register an output value (the loss, ...) under a name; its value at this call counts."""
    _rec("output").register_output(str(name), tensor)
    return tensor


def mesh(**axes):
    """Name the mesh axes of the world, major to minor: sp.mesh(dp=2, tp=2).  Optional: without
    it the axes are inferred from the process groups the collectives use."""
    _rec("mesh").set_mesh([(str(k), int(v)) for k, v in axes.items()])
