"""A training step dispatches no more ATen ops than the transformers loop a user would write
(torch.profiler on the CPU, same spec, same padded batch, both under bf16 autocast): on a GPU
every op that computes is at least one kernel launch, and a small model's step is bound by
launches. Ops that only make a view of a tensor or allocate one launch nothing, and how many of
them the CPU's kernels call differs by CPU kind (on an AVX2-only AMD EPYC the step's matmuls called
990 as_strided and 701 resolve_conj, where an Intel Xeon called far fewer): they are not counted."""

from collections import Counter

import torch
from conftest import tiny_spec
from test_training_attention import padded_batch
from torch.profiler import ProfilerActivity, profile

from albert_lab.kernels import autocast, set_attention, tune_for_training
from albert_lab.models import build_model
from albert_lab.objective import PretrainingLoss
from albert_lab.training.optim import build_optimizer

CPU = torch.device("cpu")
# ATen ops that only make a view, read metadata or allocate: no kernel on a GPU
NO_KERNEL = frozenset(f"aten::{name}" for name in (
    "as_strided", "select", "resolve_conj", "resolve_neg", "view", "_unsafe_view", "_reshape_alias", "t", "transpose", "expand",
    "alias", "detach", "slice", "narrow", "unsqueeze", "squeeze", "reshape", "flatten", "permute", "unbind", "split",
    "split_with_sizes", "chunk", "contiguous", "empty", "empty_like", "empty_strided", "lift_fresh", "result_type"))


def our_step(spec):
    """The body of training.loop's step: loss under autocast, backward, clip, LAMB."""
    model = tune_for_training(build_model(spec, seed=0)).train()
    loss_fn, optimizer = PretrainingLoss(model, spec.objective), build_optimizer(model, "lamb", 1e-3)
    params = [p for p in model.parameters() if p.requires_grad]

    def step(batch):
        with autocast(CPU, torch.bfloat16):
            out = loss_fn(batch)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(out.loss.detach())
    return step


def user_step(spec):
    """The loop a user writes: the pretraining model's own loss, SDPA, AdamW, bf16 autocast."""
    model = build_model(spec, seed=0).train()
    set_attention(model, "sdpa")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(batch):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, token_type_ids=batch.token_type_ids,
                         labels=batch.labels, sentence_order_label=batch.pair_labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())
    return step


def aten_ops(step, batch) -> tuple[int, int, Counter]:
    """(every ATen op that computes, those called from Python rather than from another ATen op, the latter
    by name) of one step."""
    step(batch)  # the first step makes the optimizer's state
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step(batch)
    ops = [e for e in prof.events() if e.name.startswith("aten::") and e.name not in NO_KERNEL]
    top = [e for e in ops if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")]
    return len(ops), len(top), Counter(e.name for e in top)


def test_a_training_step_launches_no_more_ops_than_the_users_loop():
    spec = tiny_spec(100, max_positions=64)
    batch = padded_batch(0)
    batch.labels = batch.dense_mlm_labels()  # made outside the profiled step, as the user's data loader would
    ours, theirs = aten_ops(our_step(spec), batch), aten_ops(user_step(spec), batch)
    assert ours[0] <= 1.2 * theirs[0] and ours[1] <= 1.2 * theirs[1], (ours[:2], theirs[:2])
    # The optimizer's update is a few ops per group, not ten per parameter.
    assert ours[2]["aten::sqrt"] == 0 and ours[2]["aten::_foreach_sqrt"] == 2
