# Bug variant of pipeline_2stages.py: the tied embedding's gradient is not all-reduced over
# the pipeline stages, so each stage updates its copy of the shared weight with its own part
# of the gradient only (the lookup's on stage 0, the output layer's on stage 1).  The gradient
# the optimizer reads must be the parameter's whole gradient (a contract): it fails at the step.
# expect: NOT EQUIVALENT at pipeline_2stages.py:90
import pipeline_2stages

pipeline_2stages.BUG = "tied_grad_not_reduced"
from pipeline_2stages import parallel, single  # noqa: E402,F401
