# mlp_ddp.py with DistributedDataParallel over a process group of its own (new_group of both
# ranks, not the default group), after an all-reduce in the default group: the capture
# publishes DDP's constructor and its reducer's all-reduces as collectives of the instance's
# group (capture.py ddp_init, _c10d), counted apart from the default group's (the legal twin
# of bad_ddp_one_rank.py).
# Run: shardproof check --torch tests/torch/mlp_ddp_group.py --world 2
import torch
import torch.distributed as dist

import mlp_ddp
from mlp_ddp import DDP, data, full_model, sp, step, B

single = mlp_ddp.single


def parallel(rank, world):
    sp.mesh(dp=world)
    model = sp.params(full_model())
    ranks = torch.ones(1)
    dist.all_reduce(ranks)
    ddp = DDP(model, process_group=dist.new_group(list(range(world))))
    x, y = data()
    rows = slice(rank * B // world, (rank + 1) * B // world)
    step(ddp, x[rows].clone(), y[rows].clone())
