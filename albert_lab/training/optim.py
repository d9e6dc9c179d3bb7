"""Optimizers and schedule of the paper's recipe.

LAMB follows ALBERT's reference `lamb_optimizer.py`: Adam moments without bias
correction, decoupled weight decay added to the update, and a layer-wise trust ratio
||w|| / ||update|| (1 when either norm is 0). LayerNorm weights and biases get neither
weight decay nor the trust ratio. The learning rate warms up linearly and then decays
linearly to 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import torch
from torch import nn

OptimizerName = Literal["lamb", "adamw"]


class Lamb(torch.optim.Optimizer):
    """LAMB as in ALBERT's reference code. Per group: `weight_decay` and `adapt`
    (whether the trust ratio applies)."""

    def __init__(self, params: Iterable, lr: float = 1.76e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01, adapt: bool = True):
        if lr <= 0:
            raise ValueError(f"learning rate must be positive, got {lr}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, adapt=adapt))
        self._update = lamb_update
        # compiled (compile_update): each group's learning rate as a tensor on its device, by the group's place
        # (which a resume keeps), refilled each step
        self._rates: dict[int, torch.Tensor] | None = None

    @torch.no_grad()
    def step(self, closure=None):  # type: ignore[override]
        """One update of every parameter with a gradient, a group at a time (`lamb_update`)."""
        loss = closure() if closure is not None else None
        for i, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            states = [self._state(p) for p in params]
            torch._foreach_add_([s["step"] for s in states], 1)  # counts on the host
            lr = group["lr"]
            if self._rates is not None:  # compiled: the rate a tensor input of the graph
                lr = self._rates.setdefault(i, torch.zeros((), device=params[0].device)).fill_(lr)
            self._update(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                         [s["exp_avg_sq"] for s in states], lr, *group["betas"], group["eps"],
                         group["weight_decay"], group["adapt"])
        return loss

    def compile_update(self, backend: str = "inductor") -> None:
        """Run `lamb_update` compiled: on a GPU its dozen passes over the parameters become a few fused
        kernels. The learning rate is an input of the graph, not a constant: a new one each step compiles nothing."""
        self._update, self._rates = torch.compile(lamb_update, backend=backend), {}

    def _state(self, p: torch.Tensor) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = torch.zeros((), dtype=torch.float32)  # a count on the host, as torch's own optimizers keep it
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state


def lamb_update(params: list[torch.Tensor], grads: list[torch.Tensor], m: list[torch.Tensor], v: list[torch.Tensor],
                lr: float | torch.Tensor, beta1: float, beta2: float, eps: float, weight_decay: float, adapt: bool) -> None:
    """One LAMB update of a group's tensors in place, each line one `_foreach` op over all of them (on a
    GPU a few kernels per group instead of ten per parameter); the arithmetic is the reference code's,
    op for op, but for the step's scale: lr x the trust ratio, one number per tensor, before it meets the
    update. Compiled, `lr` is a 0-d tensor on the parameters' device: a new rate is an input, not a new graph
    (eagerly a number: on a CPU a tensor there costs a copy per parameter)."""
    torch._foreach_mul_(m, beta1)
    torch._foreach_add_(m, grads, alpha=1 - beta1)
    torch._foreach_mul_(v, beta2)
    torch._foreach_addcmul_(v, grads, grads, value=1 - beta2)
    denominator = torch._foreach_sqrt(v)
    torch._foreach_add_(denominator, eps)
    update = torch._foreach_div(m, denominator)  # m / (sqrt(v) + eps), no bias correction
    if weight_decay:
        torch._foreach_add_(update, params, alpha=weight_decay)
    if adapt:
        torch._foreach_mul_(update, list((-lr * _trust_ratios(params, update)).unbind()))
        torch._foreach_add_(params, update)
    elif isinstance(lr, torch.Tensor):
        torch._foreach_mul_(update, -lr)
        torch._foreach_add_(params, update)
    else:
        torch._foreach_add_(params, update, alpha=-lr)


def _trust_ratios(params: list[torch.Tensor], update: list[torch.Tensor]) -> torch.Tensor:
    """||w|| / ||update|| per tensor (1 where either is 0), one (n,) tensor on the device: no host sync."""
    w_norm = torch.stack(torch._foreach_norm(params))  # (n,)
    u_norm = torch.stack(torch._foreach_norm(update))
    return torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))


def no_decay(name: str, param: nn.Parameter) -> bool:
    """LayerNorm weights and all biases (1-d tensors) are excluded from weight decay."""
    return param.ndim < 2 or "LayerNorm" in name or "layer_norm" in name


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, plain = [], []
    for name, p in model.named_parameters():  # tied parameters appear once
        if p.requires_grad:
            (plain if no_decay(name, p) else decay).append(p)
    return [dict(params=decay, weight_decay=weight_decay, adapt=True),
            dict(params=plain, weight_decay=0.0, adapt=False)]


def build_optimizer(model: nn.Module, name: OptimizerName, lr: float, weight_decay: float = 0.01,
                    eps: float = 1e-6) -> torch.optim.Optimizer:
    groups = parameter_groups(model, weight_decay)
    if name == "lamb":
        return Lamb(groups, lr=lr, eps=eps)
    for group in groups:
        group.pop("adapt")
    # One fused kernel per step where torch has it: 12 ms against 76 ms for MiniLM's 23M
    # parameters on a CPU core, the same weights to 6e-8 after 12 steps (docs/benchmarks.md).
    fused = all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for g in groups for p in g["params"])
    return torch.optim.AdamW(groups, lr=lr, eps=eps, betas=(0.9, 0.999), fused=fused or None)


def lr_factor(step: int, progress: float, warmup_steps: int) -> float:
    """Learning-rate multiplier as in BERT/ALBERT's reference code: linear warm-up
    over `warmup_steps`, afterwards polynomial (power 1) decay 1 - progress, where
    progress in [0, 1] is step / total steps, or elapsed / budget for a time budget."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, 1.0 - progress)
