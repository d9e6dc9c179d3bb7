"""A step's scalars read one step late, so that the host never waits for the device in between.

Each step's numbers (loss, its parts, the gradient norm, hits) are one small tensor on the device.
Reading it at once makes the host wait for the step to finish before it queues the next one: on a
GPU the queue runs dry once per step. Instead the tensor is copied to the host without waiting (into
pinned memory, an event marking when the copy is done) and read after the next step has been queued,
when it is long done. A step that needs its own numbers at once (a logged, evaluated, saved or last
step) reads them then: those are the only reads that wait (`blocking`). On the CPU nothing waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class _Pending:
    values: torch.Tensor  # on the host (pinned on CUDA) once the event has passed
    event: Any  # torch.cuda.Event, or None off CUDA
    info: Any  # what the step carries beside its numbers


class LateScalars:
    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.pending: _Pending | None = None
        self.blocking = 0  # reads that waited for the device (or would have, on a GPU)

    def put(self, values: torch.Tensor, info: Any) -> None:
        """A step's scalars, one 1-D tensor on the device, and what goes with them."""
        if self.cuda:
            host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
            host.copy_(values.detach(), non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        else:
            host, event = values.detach(), None
        self.pending = _Pending(host, event, info)

    def take(self, now: bool = False) -> tuple[list[float], Any] | None:
        """The pending step's numbers and info (None when none is pending). `now`: the step that made
        them is the current one, and reading them waits for it."""
        pending, self.pending = self.pending, None
        if pending is None:
            return None
        if now or (pending.event is not None and not pending.event.query()):
            self.blocking += 1
        if pending.event is not None:
            pending.event.synchronize()
        return pending.values.tolist(), pending.info
