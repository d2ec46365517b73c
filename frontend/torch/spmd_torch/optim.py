"""Functional optimizers, traced into the training step.

Each optimizer is a pure update (param, grad, state..., step) -> (new param,
new state...) written with plain tensor ops, matching torch.optim's
single-tensor (foreach=False) algorithms of PyTorch 1.13. State tensors have
the parameter's shape (so they follow its layout); Adam's step counter is one
0-d float32 tensor shared by all parameters.
"""

import torch


class FunctionalOptimizer:
    state_names = ()  # per-parameter state tensors
    uses_step = False

    def init_state(self, param):
        return [torch.zeros_like(param) for _ in self.state_names]

    def update(self, param, grad, state, step):
        raise NotImplementedError


class SGD(FunctionalOptimizer):
    def __init__(self, lr=1e-2, momentum=0.0, weight_decay=0.0, nesterov=False,
                 dampening=0.0, maximize=False):
        if dampening != 0.0:
            raise ValueError("spmd_torch.SGD: dampening != 0 is not supported")
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.nesterov, self.maximize = nesterov, maximize
        self.state_names = ("momentum_buffer",) if momentum != 0 else ()

    def update(self, p, g, state, step):
        if self.maximize:
            g = -g
        if self.weight_decay != 0:
            g = g + self.weight_decay * p
        new_state = []
        if self.momentum != 0:
            # torch starts the buffer at the first gradient; with dampening 0
            # momentum * 0 + grad is the same value.
            buf = state[0] * self.momentum + g
            new_state.append(buf)
            g = g + self.momentum * buf if self.nesterov else buf
        return p - self.lr * g, new_state


class Adam(FunctionalOptimizer):
    state_names = ("exp_avg", "exp_avg_sq")
    uses_step = True
    decoupled = False

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, maximize=False):
        if amsgrad:
            raise ValueError("spmd_torch.Adam: amsgrad is not supported")
        self.lr, self.betas, self.eps = lr, tuple(betas), eps
        self.weight_decay, self.maximize = weight_decay, maximize

    def update(self, p, g, state, step):
        b1, b2 = self.betas
        m, v = state
        if self.maximize:
            g = -g
        if self.decoupled:
            p = p * (1 - self.lr * self.weight_decay)
        elif self.weight_decay != 0:
            g = g + self.weight_decay * p
        m = m * b1 + (1 - b1) * g
        v = v * b2 + (1 - b2) * (g * g)
        t = step + 1  # the step counter after this update
        bc1 = 1 - torch.pow(b1, t)
        bc2 = 1 - torch.pow(b2, t)
        denom = torch.sqrt(v) / torch.sqrt(bc2) + self.eps
        p = p - (self.lr / bc1) * (m / denom)
        return p, [m, v]


class AdamW(Adam):
    decoupled = True

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, maximize=False):
        super().__init__(lr, betas, eps, weight_decay, amsgrad, maximize)


def from_torch(opt):
    """A FunctionalOptimizer with the hyperparameters of a torch.optim one."""
    if isinstance(opt, FunctionalOptimizer):
        return opt
    if len(opt.param_groups) != 1:
        raise ValueError("only optimizers with one parameter group are supported")
    g = opt.param_groups[0]
    if isinstance(opt, torch.optim.AdamW):
        return AdamW(g["lr"], g["betas"], g["eps"], g["weight_decay"],
                     g.get("amsgrad", False), g.get("maximize", False))
    if isinstance(opt, torch.optim.Adam):
        return Adam(g["lr"], g["betas"], g["eps"], g["weight_decay"],
                    g.get("amsgrad", False), g.get("maximize", False))
    if isinstance(opt, torch.optim.SGD):
        return SGD(g["lr"], g["momentum"], g["weight_decay"], g["nesterov"],
                   g["dampening"], g.get("maximize", False))
    raise ValueError(f"unsupported optimizer {type(opt).__name__} (spmd_torch "
                     "traces SGD, Adam and AdamW)")


def from_name(name, **kw):
    name = name.lower()
    table = {"sgd": SGD, "adam": Adam, "adamw": AdamW}
    if name not in table:
        raise ValueError(f"unknown optimizer '{name}' (sgd, adam, adamw)")
    return table[name](**kw)


def torch_state(opt, fopt, params):
    """Current state of a torch optimizer as (per-param lists, step)."""
    states, step = [], 0.0
    for p in params:
        st = opt.state.get(p, {}) if opt is not None else {}
        row = []
        for n in fopt.state_names:
            row.append(st[n].detach().clone() if n in st and st[n] is not None
                       else torch.zeros_like(p))
        if "step" in st:
            step = float(st["step"])
        states.append(row)
    return states, step
