"""Distillation while uptraining (`albert-lab train --distil-from TEACHER`): the teacher and its loss.

An albertized model starts far from the BERT it came from: averaging six layers into one
shared block, and an embedding cut to E < H, lose most of what the layers knew, and the
MLM and SOP labels alone win it back slowly (docs/ablation.md). A frozen teacher of the
same width says much more per token: its hidden state after every layer, and, where its
MLM head is trained, its whole distribution over the vocabulary at each masked position.

The student's hidden state i (0 = the embeddings, after ALBERT's E -> H projection) is
matched to the teacher's hidden state round(i * L_teacher / L_student), as a relative
squared error (||s - t||^2 / ||t||^2 over the real tokens of the batch, averaged over the
L + 1 states), so that one weight fits teachers of any scale. The MLM distributions are
matched by KL(teacher || student) per masked position. What the pair head reads and
says, the pooled [CLS] vector (relative squared error) and the pair distribution (KL per
pair), is matched only when asked (`--distil-pair`) and only from a teacher whose pair
head was trained for the student's own task: a student trained with NSP must not learn sentence
order from a teacher trained with SOP.

The teacher runs in eval mode without gradients and without dropout, so a step's loss
depends only on the step's batch and the student: a resumed run stays bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from albert_lab.data.batching import Batch
from albert_lab.errors import AlbertLabError, RunError
from albert_lab.models import Parts, PretrainingModel
from albert_lab.paths import user_path
from albert_lab.spec import ModelSpec


@dataclass(frozen=True)
class Teacher:
    model: PretrainingModel  # frozen, eval mode
    layers: tuple[int, ...]  # the teacher hidden state matched by each student hidden state (0 = embeddings)
    logits: bool  # the teacher's MLM head is trained: its distributions are matched too
    name: str
    pair: bool = False  # the teacher's pooled [CLS] and pair distribution are matched too (same task, trained head)

    def describe(self) -> dict[str, object]:
        """What a run's card records about its teacher."""
        return {"name": self.name, "hidden_states_matched": list(self.layers), "mlm_distribution_matched": self.logits,
                "pair_distribution_matched": self.pair}


def check_teacher(folder: str | Path, student: ModelSpec, tokenizer, pair: bool = False, seq_len: int | None = None) -> None:
    """RunError when a checkpoint cannot teach a run whose model is `student`, whose tokenizer
    is `tokenizer` and whose pairs are `seq_len` tokens (see _refuse), before the run's folder
    exists: loaded as the run will load it, so NaN weights or outputs are refused here too."""
    from albert_lab.checkpoint.files import read_card, read_spec
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.checkpoint.loadable import make_loadable
    from albert_lab.tokenizer import load_tokenizer

    try:  # the files first (what the teacher is), then the model (what it computes)
        path = make_loadable(user_path(folder, "distil_from"))
        card = read_card(path)
        spec, own = read_spec(path, card), load_tokenizer(path)
    except AlbertLabError as err:
        raise RunError(f"distil_from: {err}") from None
    _refuse(str(path), spec, own, student, tokenizer, seq_len)
    if pair:
        _refuse_pair(str(path), spec, (card.get("heads") or {}).get("pair"), student)
    try:
        load_checkpoint(path, device="cpu")
    except AlbertLabError as err:
        raise RunError(f"distil_from: {err}") from None


def _refuse(where: str, spec: ModelSpec, own, student: ModelSpec, tokenizer, seq_len: int | None = None) -> None:
    """RunError for another width (hidden states of different sizes), another vocabulary
    (distributions over other pieces) or fewer positions than the run's pairs have tokens
    (a teacher of one position broadcast: it saw position 0 only)."""
    if seq_len is not None and spec.max_positions < seq_len:
        raise RunError(f"distil_from: the teacher has {spec.max_positions} position{'s' * (spec.max_positions != 1)}, "
                       f"the run's pairs are {seq_len} tokens; give a teacher of at least {seq_len} positions or a "
                       f"--seq-len of at most {spec.max_positions}")
    if spec.hidden_size != student.hidden_size:
        raise RunError(f"distil_from: the teacher's hidden size is {spec.hidden_size}, the model's {student.hidden_size}; "
                       "hidden states are compared one to one, so they must be equal")
    if own.get_vocab() != tokenizer.get_vocab():
        raise RunError(f"distil_from: {where} has another vocabulary than the model's tokenizer "
                       f"({len(own)} pieces against {len(tokenizer)}); distil from a checkpoint with the same tokenizer")


def _refuse_pair(where: str, spec: ModelSpec, head: str | None, student: ModelSpec) -> None:
    """RunError unless the teacher's pair head was trained for the student's own task."""
    if head != "trained" or spec.objective != student.objective:
        trained = f"trained with {spec.objective.upper()}" if head == "trained" else head or "not known to be trained"
        raise RunError(f"distil_pair: {where}'s pair head is {trained}, the model's objective is {student.objective.upper()}; "
                       "a pair head is distilled only from a teacher trained for the same task")


def load_teacher(folder: str | Path, student: ModelSpec, tokenizer, device: torch.device, pair: bool = False,
                 seq_len: int | None = None) -> Teacher:
    """The checkpoint in `folder` as the frozen teacher of a run, refused as check_teacher
    refuses (on the loaded spec and tokenizer: the files are read once)."""
    from albert_lab.checkpoint.load import load_checkpoint

    try:
        bundle = load_checkpoint(folder, device="cpu")
    except AlbertLabError as err:
        raise RunError(f"distil_from: {err}") from None
    _refuse(str(folder), bundle.spec, bundle.tokenizer, student, tokenizer, seq_len)
    if pair:
        _refuse_pair(str(folder), bundle.spec, bundle.heads.pair, student)
    model = bundle.model.to(device).eval().requires_grad_(False)
    layers = tuple(round(i * bundle.spec.num_layers / student.num_layers) for i in range(student.num_layers + 1))
    return Teacher(model=model, layers=layers, logits=bundle.heads.mlm == "trained", name=bundle.name, pair=pair)


def distillation_loss(teacher: Teacher, batch: Batch, hidden: tuple[torch.Tensor, ...],
                      mlm_logits: torch.Tensor, pooled: torch.Tensor | None = None,
                      pair_logits: torch.Tensor | None = None) -> torch.Tensor:
    """Relative hidden-state error, averaged over the student's L + 1 states, plus the
    KL divergence of the MLM distributions per masked position where the teacher's MLM
    head is trained, plus, where asked, the relative error of the pooled [CLS] vectors and
    the KL divergence of the pair distributions per pair. `hidden`, `mlm_logits` (P, V),
    `pooled` (B, H) and `pair_logits` (B, 2) are the student's, with gradients.

    Why the pooled vector: the pair head reads only it, one vector per pair against a
    hidden-state error over every token of the batch, where [CLS] weighs 1/128; matched on
    its own, the teacher's sense of order has a direct path into the student. And why then
    [CLS] leaves the hidden-state term: a BERT's [CLS] stays almost constant through its
    middle layers (bert-sop-minilm: std 0.001-0.007 across pairs at layers 1-4, 0.18 at 6), so
    matching it layer by layer taught the one shared block to hold [CLS] constant, and the
    student's pooled vector collapsed (std 0.04 -> 0.01 in 100 steps) instead of learning order."""
    parts = Parts.of(teacher.model)
    with torch.no_grad():
        out = parts.encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                            token_type_ids=batch.token_type_ids, output_hidden_states=True)
        targets = [out.hidden_states[j].float() for j in teacher.layers]
        if teacher.logits:
            picked = out.last_hidden_state.reshape(-1, out.last_hidden_state.shape[-1]).index_select(0, batch.mlm_positions)
            teacher_logp = F.log_softmax(parts.mlm_head(picked).float(), dim=-1)
        if teacher.pair:
            teacher_pooled = out.pooler_output.float()  # (B, H)
            teacher_pair = F.log_softmax(parts.pair_head(out.pooler_output).float(), dim=-1)  # (B, 2)
    real = batch.attention_mask.unsqueeze(-1).float()  # padding is not matched
    if teacher.pair:  # [CLS] through the pooled term only: see below
        real = real.clone()
        real[:, 0] = 0
    errors = [((s.float() - t).square() * real).sum() / (t.square() * real).sum().clamp_min(1e-12)
              for s, t in zip(hidden, targets)]
    loss = torch.stack(errors).mean()
    if teacher.logits:
        loss = loss + F.kl_div(F.log_softmax(mlm_logits.float(), dim=-1), teacher_logp, log_target=True,
                               reduction="batchmean")
    if teacher.pair:
        loss = loss + (pooled.float() - teacher_pooled).square().sum() / teacher_pooled.square().sum().clamp_min(1e-12)
        loss = loss + F.kl_div(F.log_softmax(pair_logits.float(), dim=-1), teacher_pair, log_target=True,
                               reduction="batchmean")
    return loss
