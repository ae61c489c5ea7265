# Bug variant of zero1_adam.py: each rank's Adam shard takes its gradient before the data-
# parallel reduction (a copy of the local gradient), so the moments and the update use the
# rank's own gradient.  The gradient the optimizer reads must be the parameter's (a contract),
# which fails at the line that handed it the local one.
# expect: NOT EQUIVALENT at zero1_adam.py:73
import zero1_adam

zero1_adam.BUG = "adam_local_grad"
from zero1_adam import parallel, single  # noqa: E402,F401
