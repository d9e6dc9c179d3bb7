"""Analyses against independent computations."""

import math

import numpy as np
import pytest
import torch

from albert_lab.analysis.attribution import attribute_pair
from albert_lab.analysis.depth import DepthConfig, compare_vgg, train_disc
from albert_lab.analysis.gradflow import gradient_flow, gradient_flow_on_batch
from albert_lab.analysis.intrinsic import intrinsic_eval, pair_probabilities
from albert_lab.analysis.oscillation import oscillation, similarity_matrix, verdict
from albert_lab.analysis.pairs import pairs_frame, score_pairs, summarize
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.batching import batch_from_documents
from albert_lab.data.corpus import MAX_SEGMENT_CHARS
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.data.pairs_file import read_pairs
from albert_lab.errors import AlbertLabError, DataError
from albert_lab.models import build_model
from albert_lab.objective import PretrainingLoss

TEXTS = ["The river flows through the old town. Its bridges are old.",
         "Paris is the capital of France. It has many museums and a famous tower.",
         "Short one."]


@pytest.fixture
def bundles(make_checkpoint):
    albert, _ = make_checkpoint("albert", num_layers=4)
    bert, _ = make_checkpoint("bert", family="bert", embedding_size=32, sharing="none", objective="nsp", num_layers=3)
    return load_checkpoint(albert), load_checkpoint(bert)


def test_oscillation_equals_a_direct_computation(bundles):
    frame = oscillation(list(bundles), TEXTS)
    for bundle in bundles:
        enc = bundle.tokenizer(TEXTS, padding=True, return_token_type_ids=True, return_tensors="pt")
        with torch.no_grad():
            states = bundle.model(**enc, output_hidden_states=True).hidden_states
        keep = enc["attention_mask"].bool().numpy()
        rows = frame[frame.checkpoint == bundle.name].sort_values("layer")
        assert list(rows.layer) == list(range(1, bundle.spec.num_layers + 1))
        for layer, row in zip(range(1, len(states)), rows.itertuples()):
            before, after = states[layer - 1].numpy()[keep], states[layer].numpy()[keep]  # (N, H)
            distances = np.linalg.norm(after - before, axis=1)
            cosines = (after * before).sum(1) / np.linalg.norm(after, axis=1) / np.linalg.norm(before, axis=1)
            angles = np.degrees(np.arccos(np.clip(cosines, -1, 1)))
            assert abs(row.l2 - distances.mean()) < 1e-5 * max(1, distances.mean())
            assert abs(row.angle_deg - angles.mean()) < 1e-3  # degrees
    median = oscillation(bundles[0], TEXTS, aggregate="median")
    assert len(median) == bundles[0].spec.num_layers and (median["aggregate"] == "median").all()
    assert set(verdict(frame).checkpoint) == {b.name for b in bundles}


def test_similarity_matrix_is_symmetric_with_unit_diagonal(bundles):
    sim = similarity_matrix(bundles[0], TEXTS).pivot(index="layer_i", columns="layer_j", values="cosine").to_numpy()
    assert np.allclose(np.diag(sim), 1.0, atol=1e-5) and np.allclose(sim, sim.T, atol=1e-6)


def test_oscillation_rejects_empty_text(bundles):
    with pytest.raises(DataError, match="empty"):
        oscillation(bundles[0], ["fine text.", "   "])
    with pytest.raises(DataError, match="no text"):
        oscillation(bundles[0], [])


def _batch(tokenizer, objective="sop"):
    from albert_lab.data.corpus import Document, split_sentences

    docs = [Document(str(i), tuple(split_sentences(t))) for i, t in enumerate(TEXTS[:2] * 2)]
    return batch_from_documents(docs, tokenizer, objective, 64, seed=0)


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


def _component(name):
    if "LayerNorm" in name or "layer_norm" in name:
        return "LayerNorm"
    return "attention" if "attention" in name else "FFN"


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


def test_batched_scores_equal_one_by_one_and_swaps_are_consistent(bundles):
    a = ["The cat sat on the mat.", "Rome is in Italy.", "A much longer first sentence that goes on and on about rivers."]
    b = ["It was warm.", "It is the capital.", "Short."]
    scores = score_pairs(list(bundles), pairs_frame(a, b, [0, 1, 0]))
    for bundle in bundles:
        mine = scores[scores.checkpoint == bundle.name]
        single = [pair_probabilities(bundle.model, bundle.tokenizer, [x], [y])[0] for x, y in zip(a, b)]
        assert np.allclose(mine.p_ab, single, atol=1e-5)
        swapped = score_pairs(bundle, pairs_frame(b, a))
        assert np.allclose(mine.p_ba, swapped.p_ab, atol=1e-5)  # B->A of (A, B) is A->B of (B, A)
    summary = summarize(scores).set_index("checkpoint")
    for bundle in bundles:
        mine = scores[scores.checkpoint == bundle.name]
        assert summary.loc[bundle.name, "accuracy"] == ((mine.p_ab < 0.5).astype(int) == mine.label).mean()


def test_missing_pair_head_is_flagged_not_scored(tmp_path, tokenizer):
    from transformers import AlbertConfig, AlbertForMaskedLM

    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
    AlbertForMaskedLM(config).save_pretrained(tmp_path / "hub")
    tokenizer.save_pretrained(tmp_path / "hub")
    scores = score_pairs(load_checkpoint(tmp_path / "hub"), pairs_frame(["A b."], ["C d."]))
    assert scores.p_ab.isna().all() and scores.note.iloc[0] == "not scored: pair head missing"


def test_pairs_file_problems_are_named():
    good = b"sentence_a,sentence_b,label\nOne.,Two.,0\n,Missing a.,1\nThree.,Four.,maybe\n"
    parsed = read_pairs(good, "p.csv")
    assert list(parsed.pairs.row) == [2, 4]
    assert parsed.problems == ["row 3: sentence_a is empty; skipped",
                               "row 4: label 'maybe' is not 0 or 1; scored without a label"]
    with pytest.raises(DataError, match="semicolons as delimiter"):
        read_pairs(b"sentence_a;sentence_b\nx;y\n", "p.csv")
    with pytest.raises(DataError, match=r"missing column\(s\) sentence_b"):
        read_pairs(b"sentence_a,other\nx,y\n", "p.csv")
    with pytest.raises(DataError, match="empty"):
        read_pairs(b"  \n", "p.csv")
    with pytest.raises(DataError, match="not UTF-8"):
        read_pairs(b"sentence_a,sentence_b\n\xe9t\xe9,x\n", "p.csv")
    with pytest.raises(DataError, match="unsupported file type"):
        read_pairs(b"x", "p.xlsx")
    capped = read_pairs(b"sentence_a\tsentence_b\n" + b"a.\tb.\n" * 12, "p.tsv", max_rows=10)
    assert len(capped.pairs) == 10 and "only the first 10" in capped.problems[0]
    huge = read_pairs(f'{{"sentence_a": "{"word " * 2000}", "sentence_b": "x"}}\nnot json\n'.encode(), "p.jsonl")
    assert MAX_SEGMENT_CHARS - 10 <= len(huge.pairs.sentence_a[0]) <= MAX_SEGMENT_CHARS
    assert any(f"cut to {MAX_SEGMENT_CHARS:,}" in p for p in huge.problems) and any("row 2: not valid JSON" in p for p in huge.problems)


def test_attributions_satisfy_completeness(bundles):
    result = attribute_pair(bundles[0], "The river flows north.", "It reaches the sea.", n_steps=64)
    tokens = result.tokens
    assert tokens.token.iloc[0] == "[CLS]" and set(tokens.segment) == {"special", "A", "B"}
    total = tokens.attribution.sum()
    assert abs(total - (result.probability - result.baseline_probability) - result.delta) < 1e-4
    assert abs(result.delta) < 0.05 * max(1e-3, abs(result.probability - result.baseline_probability)) + 1e-3
    with pytest.raises(DataError):
        attribute_pair(bundles[0], "", "x")


def test_intrinsic_eval_pairs_and_scores(small_corpus, bundles):
    pairs = build_eval_pairs(small_corpus.heldout)
    natural_sop = pairs[(pairs.task == "sop") & pairs.natural]
    assert 0.3 < natural_sop.label.mean() < 0.7 and pairs[pairs.task == "sop"].interior.any()
    assert (pairs[(pairs.task == "sop") & ~pairs.natural].interior).all()
    nsp_neg = pairs[(pairs.task == "nsp") & (pairs.label == 1)]
    assert len(nsp_neg) and all(row.b not in " ".join(d.segments) for row in nsp_neg.itertuples()
                                for d in small_corpus.heldout if d.title == row.doc)
    result = intrinsic_eval(bundles[0].model, bundles[0].tokenizer, pairs, limit=20)
    assert all(0 <= result[k] <= 1 for k in ("mlm_acc", "nsp_acc", "sop_acc", "sop_lead_acc", "sop_interior_acc"))
    assert result["nsp_pairs"] <= 20


def test_depth_lab_builds_the_hidden_layers_it_is_asked_for():
    from albert_lab.analysis.depth import build_mlp

    for depth in (1, 16):
        model = build_mlp(DepthConfig(depth=depth))
        assert sum(isinstance(m, torch.nn.ReLU) for m in model.modules()) == depth  # one per hidden layer
        assert sum(isinstance(m, torch.nn.Linear) for m in model.modules()) == depth + 1


def test_depth_lab_vanishing_vs_healthy_gradients():
    def first_last(cfg):
        history, flow = train_disc(cfg)
        last = flow[flow.step == flow.step.max()].set_index("layer").mean_abs
        return history.test_accuracy.iloc[-1], last.iloc[1] / last.iloc[-1]

    plain_acc, plain_ratio = first_last(DepthConfig(steps=200))
    bn_acc, bn_ratio = first_last(DepthConfig(steps=200, norm="batchnorm_before"))
    res_acc, res_ratio = first_last(DepthConfig(steps=200, residual=True))
    assert plain_ratio < 1e-4 and plain_acc < 0.6  # vanished: no learning
    assert bn_ratio > 1e-2 and bn_acc > 0.85
    assert res_ratio > 1e-3 and res_acc > 0.75
    with pytest.raises(AlbertLabError, match="norm"):
        DepthConfig(norm="groupnorm")


@pytest.mark.slow
def test_vgg_38_needs_batchnorm():
    # Eval-mode accuracy of a 38-layer BN net after 120 steps swings with the kernels a CPU
    # picks (0.2-0.6 across seeds and machines), so assert on what does not: the plain net
    # sits at chance (loss ln 10) with gradients vanished by 16 orders of magnitude,
    # the BatchNorm net learns with gradients of the same size at both ends.
    history, flow = compare_vgg(depths=(38,), steps=120, lr=0.1)
    loss = history.groupby("model").loss.apply(lambda s: s.tail(3).mean())
    accuracy = history.groupby("model").test_accuracy.last()
    last = flow[flow.step == flow.step.max()].groupby("model")
    ratio = last.apply(lambda g: g.sort_values("layer").mean_abs.iloc[0] / g.sort_values("layer").mean_abs.iloc[-1])
    assert loss["VGG-38"] > 2.25 and accuracy["VGG-38"] < 0.15 and ratio["VGG-38"] < 1e-10
    assert loss["VGG-38 + BatchNorm"] < 2.0 and accuracy["VGG-38 + BatchNorm"] > 0.15
    assert 1e-2 < ratio["VGG-38 + BatchNorm"] < 1e2


def test_fast_gelu_matches_albert_gelu_new():
    from transformers.activations import NewGELUActivation

    from albert_lab.kernels import FastGELU, tune_for_inference, tune_for_training

    x = torch.linspace(-8, 8, 20001)
    reference = NewGELUActivation()(x)
    assert (FastGELU()(x) - reference).abs().max() < 1e-6  # fp32: the same tanh formula
    bf16 = FastGELU()(x.bfloat16()).float()
    rounding = (reference.bfloat16().float() - reference).abs().max()
    assert (bf16 - reference).abs().max() < 2 * rounding  # erf in bf16: within bf16's own rounding

    from albert_lab.spec import ModelSpec

    model = build_model(ModelSpec.from_name("lab-tiny"), seed=0).eval()
    ids = torch.randint(5, 100, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        stock = model(input_ids=ids).prediction_logits
        fast = tune_for_inference(model)(input_ids=ids).prediction_logits
    assert not any(isinstance(m, NewGELUActivation) for m in model.modules())
    assert model.config._attn_implementation == "sdpa"
    assert (fast - stock).abs().max() < 1e-5
    assert tune_for_training(model).config._attn_implementation == "eager"


def test_the_oscillation_verdict_says_what_the_curve_does():
    """A steady decline that stays far from 0 is not called 'oscillating' on its own (students read
    the word literally); a curve that goes up and down is; one that reaches ~0 converges."""
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    curves = {"steady": [11.4, 8.0, 6.1, 4.9, 3.9, 3.2], "wobbly": [11.0, 6.0, 7.5, 5.0, 6.8, 4.6],
              "to-zero": [11.0, 6.0, 2.0, 0.6, 0.2, 0.05], "rising": [11.0, 3.0, 3.1, 3.6, 4.2, 5.0],
              "bert-nsp": [8.6, 6.89, 7.56, 6.65, 7.58, 8.39]}  # the shipped BERT: zig-zag, then up
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, values in curves.items() for i, v in enumerate(values)])
    words = verdict(frame).set_index("checkpoint").verdict
    assert words["steady"].startswith("not converging: the distances fall steadily from layer to layer")
    assert "oscillate rather than converge" not in words["steady"]  # a steady decline is not described as going up and down
    assert words["wobbly"].startswith("oscillating: from layer to layer the distances go up and down")
    assert words["to-zero"].startswith("converging")
    assert words["rising"].startswith("not converging: the distances grow")
    assert words["bert-nsp"].startswith("oscillating")
