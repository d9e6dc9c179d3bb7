"""Depth lab: why deep stacks are hard to train, in seconds on a CPU.

1. The "disc" toy of the lecture notes (EE-559, "Going deeper"): points in [-1, 1]^2,
   class = inside the disc of area 1/2; a deep MLP (width 32, 16 hidden layers of
   Linear + ReLU) with naive Gaussian initialisation, cross-entropy, plain SGD with
   lr 0.1. Options: BatchNorm before or after the ReLU, LayerNorm, residual
   connections, initialisation, dropout.
2. The coursework's comparison in miniature: a shallow and a very deep VGG-style
   conv net (8 vs 38 weight layers), with and without BatchNorm, on scikit-learn's
   8x8 digits (shipped with scikit-learn, no download).

Both return tidy frames: training history (step, loss, accuracy) and per-layer
gradient flow over time (step, layer, mean_abs, max_abs of dL/dW).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch
from torch import nn

from albert_lab.analysis.registry import Init
from albert_lab.errors import AlbertLabError

Norm = Literal["none", "batchnorm_before", "batchnorm_after", "layernorm"]


@dataclass(frozen=True)
class DepthConfig:
    depth: int = 16  # hidden layers
    width: int = 32
    norm: Norm = "none"
    residual: bool = False
    init: Init = "gaussian"  # gaussian: N(0, init_std^2), the notes' "naive" initialisation
    init_std: float = 0.1
    dropout: float = 0.0
    steps: int = 300
    lr: float = 0.1
    batch_size: int = 100
    train_size: int = 1000
    record_every: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        if self.norm not in ("none", "batchnorm_before", "batchnorm_after", "layernorm"):
            raise AlbertLabError(f"norm: {self.norm!r}; allowed: none, batchnorm_before, batchnorm_after, layernorm")
        if self.init not in ("gaussian", "pytorch", "he"):
            raise AlbertLabError(f"init: {self.init!r}; allowed: gaussian, pytorch, he")
        for name in ("depth", "width", "steps", "batch_size", "train_size", "record_every"):
            if getattr(self, name) < 1:
                raise AlbertLabError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.dropout < 1 or self.lr <= 0 or self.init_std <= 0:
            raise AlbertLabError("dropout must be in [0, 1), lr and init_std positive")


class Block(nn.Module):
    """Linear (+ norm) + ReLU (+ norm) (+ dropout), optionally residual: x + f(x)."""

    def __init__(self, n_in: int, n_out: int, cfg: DepthConfig):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        layers: list[nn.Module] = [self.linear]
        if cfg.norm == "batchnorm_before":
            layers.append(nn.BatchNorm1d(n_out))
        if cfg.norm == "layernorm":
            layers.append(nn.LayerNorm(n_out))
        layers.append(nn.ReLU())
        if cfg.norm == "batchnorm_after":
            layers.append(nn.BatchNorm1d(n_out))
        if cfg.dropout:
            layers.append(nn.Dropout(cfg.dropout))
        self.body = nn.Sequential(*layers)
        self.residual = cfg.residual and n_in == n_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


def build_mlp(cfg: DepthConfig) -> nn.Sequential:
    """`depth` hidden layers (Linear 2 -> width, then depth - 1 Linear width -> width, each
    with its ReLU) and the output Linear: depth + 1 weight layers."""
    blocks = [Block(2, cfg.width, cfg)] + [Block(cfg.width, cfg.width, cfg) for _ in range(cfg.depth - 1)]
    model = nn.Sequential(*blocks, nn.Linear(cfg.width, 2))
    for module in model.modules():
        if isinstance(module, nn.Linear):
            _initialise(module, cfg)
    return model


def _initialise(linear: nn.Linear, cfg: DepthConfig) -> None:
    if cfg.init == "gaussian":
        nn.init.normal_(linear.weight, 0.0, cfg.init_std)
        nn.init.normal_(linear.bias, 0.0, cfg.init_std)
    elif cfg.init == "he":
        nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
        nn.init.zeros_(linear.bias)
    # "pytorch": keep nn.Linear's default (uniform +-1/sqrt(fan_in))


def disc_data(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Points uniform in [-1, 1]^2; label 1 inside the disc of radius sqrt(2/pi) (half the area)."""
    x = torch.rand(n, 2, generator=generator) * 2 - 1
    return x, (x.norm(dim=1) < math.sqrt(2 / math.pi)).long()


def _weight_layers(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]


def _train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, x_test: torch.Tensor, y_test: torch.Tensor, steps: int,
           lr: float, batch_size: int, record_every: int, generator: torch.Generator, label: str,
           progress: Callable[[int], None] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Plain SGD; `progress(step)` after each step (a page's progress bar, where a
    user's Stop interrupts)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    layers = _weight_layers(model)
    history, flow = [], []
    for step in range(1, steps + 1):
        model.train()
        idx = torch.randint(len(x), (batch_size,), generator=generator)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        if step % record_every == 0 or step == 1:
            for i, layer in enumerate(layers, start=1):
                g = layer.weight.grad.abs()
                flow.append(dict(model=label, step=step, layer=i, mean_abs=float(g.mean()), max_abs=float(g.max())))
            history.append(dict(model=label, step=step, loss=float(loss.detach()), **_accuracy(model, x_test, y_test)))
        optimizer.step()
        if progress is not None:
            progress(step)
        if not math.isfinite(float(loss.detach())):
            if history[-1]["step"] != step:  # the step it diverged at is in the history, always
                history.append(dict(model=label, step=step, loss=float(loss.detach()), test_accuracy=math.nan))
            break  # diverged: keep what was recorded
    return pd.DataFrame(history), pd.DataFrame(flow)


@torch.no_grad()
def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    model.eval()
    return {"test_accuracy": float((model(x).argmax(1) == y).float().mean())}


def train_disc(cfg: DepthConfig, label: str | None = None,
               progress: Callable[[int], None] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train the disc MLP; returns (history, gradient flow), both tidy. `progress(step)`
    after each step, as in `_train`."""
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    x, y = disc_data(cfg.train_size, gen)
    x_test, y_test = disc_data(1000, gen)
    model = build_mlp(cfg)
    return _train(model, x, y, x_test, y_test, cfg.steps, cfg.lr, cfg.batch_size, cfg.record_every, gen,
                  label or describe(cfg), progress)


def describe(cfg: DepthConfig) -> str:
    extras = [] if cfg.norm == "none" else [cfg.norm.replace("_", " ")]
    extras += ["residual"] if cfg.residual else []
    extras += [f"dropout {cfg.dropout}"] if cfg.dropout else []
    return f"MLP depth {cfg.depth}" + (f" + {', '.join(extras)}" if extras else " (plain)")


# ---- VGG-style conv nets on 8x8 digits ---------------------------------------------
DIGIT_CLASSES = 10  # the 8x8 digits' classes, about equally many: chance accuracy is 1/10


def build_vgg(weight_layers: int, batchnorm: bool, channels: int = 16, classes: int = DIGIT_CLASSES) -> nn.Sequential:
    """`weight_layers` - 1 conv 3x3 layers in three stages (8x8, 4x4, 2x2) + one linear."""
    convs = weight_layers - 1
    per_stage = [convs // 3 + (1 if i < convs % 3 else 0) for i in range(3)]
    modules: list[nn.Module] = []
    n_in = 1
    for stage, count in enumerate(per_stage):
        for _ in range(count):
            modules.append(nn.Conv2d(n_in, channels, 3, padding=1))
            if batchnorm:
                modules.append(nn.BatchNorm2d(channels))
            modules.append(nn.ReLU())
            n_in = channels
        if stage < 2:
            modules.append(nn.MaxPool2d(2))
    modules += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, classes)]
    return nn.Sequential(*modules)


def digits_data(seed: int = 0) -> tuple[torch.Tensor, ...]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (N, 1, 8, 8) in [0, 1]
    y = torch.tensor(digits.target)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    train, test = order[:1400], order[1400:]
    return x[train], y[train], x[test], y[test]


VGG_NETS: tuple[tuple[int, bool], ...] = ((8, False), (8, True), (38, False), (38, True))  # (weight layers, BatchNorm)


def vgg_label(depth: int, batchnorm: bool) -> str:
    return f"VGG-{depth}" + (" + BatchNorm" if batchnorm else "")


def train_vgg(depth: int, batchnorm: bool, steps: int = 300, lr: float = 0.05, batch_size: int = 64,
              record_every: int = 20, seed: int = 0, progress: Callable[[int], None] | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One VGG-style net on the digits: (history, gradient flow), both tidy."""
    x, y, x_test, y_test = digits_data(seed)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    return _train(build_vgg(depth, batchnorm), x, y, x_test, y_test, steps, lr, batch_size, record_every, gen,
                  vgg_label(depth, batchnorm), progress)


def compare_vgg(depths: tuple[int, ...] = (8, 38), steps: int = 300, lr: float = 0.05, batch_size: int = 64,
                record_every: int = 20, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """VGG-8 and VGG-38, each without and with BatchNorm (the coursework's experiment)."""
    runs = [train_vgg(depth, batchnorm, steps, lr, batch_size, record_every, seed)
            for depth in depths for batchnorm in (False, True)]
    return pd.concat([h for h, _ in runs], ignore_index=True), pd.concat([f for _, f in runs], ignore_index=True)
