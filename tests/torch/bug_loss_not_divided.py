# Bug variant of pipeline_2stages.py: each micro-batch's loss is not divided by the number of
# micro-batches, so the accumulated gradients (and the loss) are NM times too large.
# expect: NOT EQUIVALENT at pipeline_2stages.py:81
import pipeline_2stages

pipeline_2stages.BUG = "loss_not_divided"
from pipeline_2stages import parallel, single  # noqa: E402,F401
