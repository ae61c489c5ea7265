# Bug variant of mlp_tp_dp.py: the copy region's backward returns the gradient without its
# all-reduce over tp, so each tp rank passes on only its own part of the input's gradient.
# The cut point at the Function's backward (the gradient of its input has the input's layout)
# fails there, at the line of its return.
# expect: NOT EQUIVALENT at mlp_tp_dp.py:55
import mlp_tp_dp

mlp_tp_dp.BUG = "region_skips_allreduce"
from mlp_tp_dp import parallel, single  # noqa: E402,F401
