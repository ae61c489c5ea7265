# Bug variant of mlp_tp_dp.py: region_skips_allreduce.
# expect: NOT EQUIVALENT at mlp_tp_dp.py:122
import mlp_tp_dp

mlp_tp_dp.BUG = "region_skips_allreduce"
from mlp_tp_dp import parallel, single  # noqa: E402,F401
