# Bug variant of transformer_tp_sp.py: the norms' weight gradients are not all-reduced over tp
# after the backward.  Under sequence parallelism a norm sees only its rank's tokens, so each
# rank holds a part of the gradient (Megatron all-reduces the gradients of its
# sequence-parallel parameters).  The gradient the optimizer reads must be the parameter's
# whole gradient (a contract): it fails at the step.
# expect: NOT EQUIVALENT at transformer_tp_sp.py:197
import transformer_tp_sp

transformer_tp_sp.BUG = "norm_grads_not_reduced"
from transformer_tp_sp import parallel, single  # noqa: E402,F401
