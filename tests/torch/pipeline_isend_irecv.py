# Variant of pipeline_2stages.py: the activations and gradients go through isend/irecv, each
# waited for (work.wait()).  The capture runs an asynchronous collective at once and returns a
# work whose wait() ends the tensors' pending state; it used to return gloo's own work, whose
# second wait() blocks forever after a send (the capture had waited once already): the step
# hung until the 300 s timeout.
import torch.distributed as dist

import pipeline_2stages


class _AsyncP2P:
    """torch.distributed, with send and recv issued as isend and irecv and waited for."""

    def __getattr__(self, name):
        return getattr(dist, name)

    @staticmethod
    def send(tensor, dst):
        dist.isend(tensor, dst).wait()

    @staticmethod
    def recv(tensor, src):
        dist.irecv(tensor, src).wait()


pipeline_2stages.dist = _AsyncP2P()
from pipeline_2stages import parallel, single  # noqa: E402,F401
