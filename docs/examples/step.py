import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
import shardproof_torch as sp

def model():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(2, 4), nn.GELU(), nn.Linear(4, 2))

def data():
    torch.manual_seed(2)
    return torch.randn(2, 2), torch.randn(2, 2)

def step(m, x, y):
    sp.input("x", x); sp.input("y", y)          # data, by name
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    loss = F.mse_loss(m(x), y)
    sp.output("loss", loss)
    loss.backward()
    opt.step()

def single():
    step(sp.params(model()), *data())           # parameters, by module path

def parallel(rank, world):
    sp.mesh(dp=world)
    m = sp.params(model())
    x, y = data()
    step(DDP(m), x[rank:rank + 1], y[rank:rank + 1])   # this rank's rows
