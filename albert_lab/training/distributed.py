"""Several processes, one run: DistributedDataParallel under `torchrun`.

`torchrun --nproc_per_node=N -m albert_lab train ... --foreground --run-dir DIR`
starts N ranks; each builds the same global batch and trains on its slice; gradients
are averaged by DDP (gloo on CPU, nccl on GPUs). Only rank 0 writes files.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist
from torch import nn


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> DistContext:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        if not torch_dist.is_initialized():
            torch_dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
        return cls(rank=torch_dist.get_rank(), world_size=world, local_rank=int(os.environ.get("LOCAL_RANK", "0")))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device(self, default: torch.device) -> torch.device:
        if self.world_size > 1 and default.type == "cuda":
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return default

    def wrap(self, module: nn.Module, find_unused: bool = False) -> nn.Module:
        if self.world_size <= 1:
            return module
        device_ids = [self.local_rank] if torch.cuda.is_available() else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids, find_unused_parameters=find_unused)

    def barrier(self, timeout_s: float | None = None) -> None:
        """Wait for every rank; with `timeout_s` on gloo, raise RuntimeError after that long
        instead of waiting for ever (a rank that stopped a step apart never comes)."""
        if self.world_size <= 1:
            return
        if timeout_s is not None and torch_dist.get_backend() == "gloo":
            torch_dist.monitored_barrier(timeout=datetime.timedelta(seconds=timeout_s))
        else:
            torch_dist.barrier()

    def close(self) -> None:
        if self.world_size > 1 and torch_dist.is_initialized():
            torch_dist.destroy_process_group()
