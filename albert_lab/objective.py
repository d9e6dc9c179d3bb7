"""The pretraining loss: MLM + inter-sentence (pair) loss, on transformers' own modules.

The MLM head runs only at the predicted positions (about 15% of tokens) instead of
every position: with a 30k vocabulary the decoder matmul and its softmax are a large
share of a small model's step, and the loss is identical. Wrapped in an nn.Module so
that DistributedDataParallel can wrap it. With a teacher (albert_lab/distil.py) the loss
adds the distillation term; the teacher is held outside the module's parameters, so
that neither the optimizer nor DDP nor a checkpoint ever sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from albert_lab.data.batching import WIDTH_BUCKETS, Batch
from albert_lab.distil import Teacher, distillation_loss
from albert_lab.models import Parts, PretrainingModel


@dataclass
class LossOutput:
    loss: torch.Tensor  # scalar: mlm_loss + pair_weight * pair_loss (+ distil_weight * distil_loss)
    mlm_loss: torch.Tensor
    pair_loss: torch.Tensor  # 0 for objective 'none' (nothing measured: pair_count is 0)
    mlm_correct: torch.Tensor  # count of argmax hits among predictions
    mlm_count: int
    pair_correct: torch.Tensor
    pair_count: int  # pairs whose label means something: 0 for objective 'none', whose labels are fillers
    hidden_states: tuple[torch.Tensor, ...] | None = None  # (L+1) x (B, T, H) when asked
    distil_loss: torch.Tensor | None = None  # the distillation term (unweighted), with a teacher


def padding_mask(batch: Batch) -> torch.Tensor | None:
    """The batch's attention mask, or None where no row is padded: decided from the real tokens the
    batch counted on the host (`Batch.counts`), so that nothing is read from the device, and a batch
    without padding runs attention without a mask (on a GPU, the flash kernel a mask rules out)."""
    if batch.counts is not None and batch.counts[0] == batch.input_ids.numel():
        return None
    return batch.attention_mask


class PretrainingLoss(nn.Module):
    def __init__(self, model: PretrainingModel, objective: str, teacher: Teacher | None = None, distil_weight: float = 1.0,
                 pair_weight: float = 1.0):
        super().__init__()
        self.model = model
        self.objective = objective
        self.teachers = (teacher,) if teacher else ()  # a tuple: not a submodule
        self.distil_weight = distil_weight
        self.pair_weight = pair_weight

    def forward(self, batch: Batch, output_hidden_states: bool = False) -> LossOutput:
        hidden_wanted = output_hidden_states or bool(self.teachers)
        out = self._core(batch.input_ids, batch.token_type_ids, padding_mask(batch), batch.mlm_positions,
                         batch.mlm_labels, batch.pair_labels, hidden_wanted)
        loss, mlm_loss, pair_loss, mlm_correct, pair_correct = out[:5]
        distil = None
        if self.teachers:
            mlm_logits, pair_logits, pooled, hidden_states = out[5:]
            distil = distillation_loss(self.teachers[0], batch, hidden_states, mlm_logits, pooled, pair_logits)
            loss = loss + self.distil_weight * distil
        # Under 'none' the batch's pair labels are fillers (every pair in order): an untrained
        # head that says 0 would score 1.0 on them. Nothing is measured, so nothing is counted.
        pair_count = 0 if self.objective == "none" else len(batch.pair_labels)
        return LossOutput(loss=loss, mlm_loss=mlm_loss, pair_loss=pair_loss,
                          mlm_correct=mlm_correct, mlm_count=batch.num_predictions,
                          pair_correct=pair_correct, pair_count=pair_count,
                          hidden_states=out[8] if output_hidden_states else None, distil_loss=distil)

    def compile_core(self, backend: str = "inductor") -> None:
        """Run the model and the losses (`_core`) compiled, one graph per batch shape and per
        padded or not (data/batching.py's Shapes.bucketed keeps those few). The batch's host-side
        counts stay outside the graph: read inside, each new count would compile a new graph."""
        from torch import _dynamo

        _dynamo.config.recompile_limit = max(_dynamo.config.recompile_limit, 4 * WIDTH_BUCKETS)
        self._core = torch.compile(self._core, backend=backend, dynamic=False)

    def _core(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor | None,
              mlm_positions: torch.Tensor, mlm_labels: torch.Tensor, pair_labels: torch.Tensor, hidden_wanted: bool
              ) -> tuple:
        """Of the tensors of a batch: (loss without distillation, MLM loss, pair loss, MLM hits, pair hits,
        MLM logits, pair logits, pooled [CLS], hidden states (with `hidden_wanted`, else None))."""
        parts = Parts.of(self.model)
        out = parts.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                            output_hidden_states=hidden_wanted)
        hidden = out.last_hidden_state  # (B, T, H)
        picked = hidden.reshape(-1, hidden.shape[-1]).index_select(0, mlm_positions)  # (P, H)
        mlm_logits = parts.mlm_head(picked).float()  # (P, V)
        mlm_loss = F.cross_entropy(mlm_logits, mlm_labels)
        pair_logits = parts.pair_head(out.pooler_output).float()  # (B, 2)
        if self.objective == "none":
            pair_loss = mlm_loss.new_zeros(())
            pair_logits = pair_logits.detach()
        else:
            pair_loss = F.cross_entropy(pair_logits, pair_labels)
        loss = mlm_loss + self.pair_weight * pair_loss  # x 1.0 is exact: the paper's loss, bit for bit
        with torch.no_grad():
            mlm_correct = (mlm_logits.argmax(-1) == mlm_labels).sum()
            pair_correct = (pair_logits.argmax(-1) == pair_labels).sum()
        return (loss, mlm_loss, pair_loss, mlm_correct, pair_correct, mlm_logits, pair_logits, out.pooler_output,
                out.hidden_states if hidden_wanted else None)
