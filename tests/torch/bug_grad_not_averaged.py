# Bug variant of mlp_tp_dp.py: grad_not_averaged.
# expect: NOT EQUIVALENT at mlp_tp_dp.py:120
import mlp_tp_dp

mlp_tp_dp.BUG = "grad_not_averaged"
from mlp_tp_dp import parallel, single  # noqa: E402,F401
