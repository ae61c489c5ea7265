# Only rank 0 wraps the MLP in DistributedDataParallel (a rank test around the wrapper):
# DDP's constructor broadcasts the module's state over its group, rank 1 never joins, and
# rank 0 waits there forever.  Those collectives run while the capture is paused (torch
# issues them from C++), so the world used to wait for the 300 s timeout; the constructor is
# now published as one collective of the instance's group (capture.py ddp_init), and the
# capture reports rank 0's wait and that rank 1 finished without joining it.
# expect: error: rank 0 waits in DistributedDataParallel() over ranks 0,1 at bad_ddp_one_rank.py:17
import mlp_ddp
from mlp_ddp import DDP, data, full_model, sp, step, B

single = mlp_ddp.single


def parallel(rank, world):
    sp.mesh(dp=world)
    model = sp.params(full_model())
    model = DDP(model) if rank == 0 else model
    x, y = data()
    rows = slice(rank * B // world, (rank + 1) * B // world)
    step(model, x[rows].clone(), y[rows].clone())
