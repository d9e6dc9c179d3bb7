"""Gradient flow: per-application gradients, the unshared view and hidden-state gradients against autograd."""

import math

import pytest
import torch
from conftest import TEXTS

from albert_lab.analysis.gradflow import gradient_flow, gradient_flow_on_batch
from albert_lab.data.batching import batch_from_documents
from albert_lab.models import build_model
from albert_lab.objective import PretrainingLoss


def _batch(tokenizer, objective="sop"):
    from albert_lab.data.corpus import Document, split_sentences

    docs = [Document(str(i), tuple(split_sentences(t))) for i, t in enumerate(TEXTS[:2] * 2)]
    return batch_from_documents(docs, tokenizer, objective, 64, seed=0)


def _component(name):
    if "LayerNorm" in name or "layer_norm" in name:
        return "LayerNorm"
    return "attention" if "attention" in name else "FFN"


@pytest.mark.parametrize("sharing, groups", [("all", 1), ("all", 2), ("attention", 1), ("ffn", 2), ("none", None)])
def test_per_application_gradients_sum_to_the_shared_grad(tokenizer, sharing, groups):
    from conftest import tiny_spec

    spec = tiny_spec(len(tokenizer), num_layers=4, sharing=sharing, num_groups=groups)
    model = build_model(spec, seed=0)
    batch = _batch(tokenizer)
    PretrainingLoss(model, "sop")(batch).loss.backward()  # the ordinary, summed gradients
    frame = gradient_flow_on_batch(model, spec, batch)
    layers = model.albert.encoder.albert_layer_groups
    per_app = frame[frame.view == "per_application"]
    # Rebuild each group's summed |grad| statistics from the model's own .grad.
    shared = frame[frame.view == "shared_sum"]
    for row in shared.itertuples():
        # all-shared: one module per group; partial sharing: the group's first layer holds the tied module.
        index = spec.group_of_layer[row.layer - 1] if sharing == "all" else row.layer - 1
        params = [p for n, p in layers[index].albert_layers[0].named_parameters() if _component(n) == row.component]
        flat = torch.cat([p.grad.abs().reshape(-1) for p in params])
        assert math.isclose(row.mean_abs, float(flat.mean()), rel_tol=1e-5)
        assert math.isclose(row.max_abs, float(flat.max()), rel_tol=1e-5)
    expected = {("all", 1): 3, ("all", 2): 6, ("attention", 1): 1, ("ffn", 2): 2, ("none", None): 0}[(sharing, groups)]
    assert len(shared) == expected
    assert sorted(per_app.layer.unique()) == [1, 2, 3, 4]
    if sharing == "none":
        assert frame[frame.view == "shared_sum"].empty
        for row in per_app.itertuples():
            params = [p for n, p in layers[row.layer - 1].named_parameters() if _component(n) == row.component]
            assert math.isclose(row.mean_abs, float(torch.cat([p.grad.abs().reshape(-1) for p in params]).mean()),
                                rel_tol=1e-5)


@pytest.mark.parametrize("layers, groups", [(22, 22), (22, 11)])
def test_unshared_view_computes_the_models_function_where_the_group_formulas_differ(tokenizer, layers, groups):
    """L = N = 22: the reference code's int(i / L * N) sends layer 15 to group 14; the model
    (transformers) runs group 15. The gradient-flow view must run what the model runs."""
    from conftest import tiny_spec

    from albert_lab.analysis.gradflow import unshared_view

    spec = tiny_spec(len(tokenizer), num_layers=layers, num_groups=groups, hidden_size=16, ffn_size=16)
    model = build_model(spec, seed=0).eval()
    torch.manual_seed(1)
    for p in model.parameters():  # groups must differ visibly for the test to mean anything
        p.data.add_(0.05 * torch.randn_like(p))
    batch = _batch(tokenizer)
    with torch.no_grad():
        expected = PretrainingLoss(model, "sop")(batch).loss
        got = PretrainingLoss(unshared_view(model, spec).eval(), "sop")(batch).loss
    assert torch.allclose(got, expected, atol=1e-5), (float(got), float(expected))


def test_hidden_state_gradients_match_autograd(tokenizer):
    from conftest import tiny_spec

    spec = tiny_spec(len(tokenizer), num_layers=3)
    model = build_model(spec, seed=0)
    batch = _batch(tokenizer)
    out = PretrainingLoss(model, "sop")(batch, output_hidden_states=True)
    grads = torch.autograd.grad(out.loss, out.hidden_states)
    keep = batch.attention_mask.bool()
    frame = gradient_flow_on_batch(model, spec, batch)
    hidden = frame[frame.view == "hidden"].sort_values("layer")
    assert list(hidden.layer) == [0, 1, 2, 3]
    for row, g in zip(hidden.itertuples(), grads):
        assert math.isclose(row.mean_abs, float(g[keep].abs().mean()), rel_tol=1e-5)
    assert all(p.grad is None for p in build_model(spec, seed=0).parameters())  # the analysis leaves .grad alone


def test_gradient_flow_on_a_checkpoint(bundles):
    frame = gradient_flow(bundles[1], TEXTS[:2] * 3, objective="nsp")
    assert set(frame.view) == {"per_application", "hidden", "outside"}  # BERT shares nothing
    assert (frame.checkpoint == bundles[1].name).all() and (frame.mean_abs > 0).all()
