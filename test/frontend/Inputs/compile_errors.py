"""spmd_torch.compile's errors: each names what is wrong, none is a crash.
Prints one line per case."""
import os
import sys

import torch

import spmd_torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MLP  # noqa: E402

torch.manual_seed(0)
model = MLP()
x, y = torch.randn(6, 16), torch.randint(0, 8, (6,))


def case(name, fn):
    try:
        fn()
    except Exception as e:  # what the user sees
        print(f"{name}: {type(e).__name__}: {str(e).splitlines()[0]}")
        return
    print(f"{name}: no error")


def no_backward(model, optimizer, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.step()
    return loss


def train(model, optimizer, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


sgd = torch.optim.SGD(model.parameters(), lr=0.1)
case("no backward", lambda: spmd_torch.compile(no_backward)(model, sgd, x, y))
case("backend", lambda: spmd_torch.compile(train, backend="tpu"))
case("ranks", lambda: spmd_torch.compile(train, mesh="dp=2", ranks=4)(
    model, sgd, x, y))
case("optimizer", lambda: spmd_torch.compile(train)(
    model, torch.optim.RMSprop(model.parameters()), x, y))
case("argument", lambda: spmd_torch.compile(train)(model, sgd, x, "y"))
case("no checkpoint", lambda: spmd_torch.compile(train).load("/nonexistent"))
step = spmd_torch.compile(train, mesh="dp=2")
step(model, sgd, x, y)
case("other model", lambda: step(MLP(), sgd, x, y))
case("state_dict", lambda: step.load_state_dict({"fc1.weight": torch.zeros(3)}))
case("before a call", lambda: spmd_torch.compile(train).state_dict())
