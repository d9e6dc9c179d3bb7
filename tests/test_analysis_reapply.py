"""A shared block applied again: extrapolation, logit lens, attention and CKA against independent computations."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TEXTS
from transformers import AlbertConfig, AlbertForPreTraining, AlbertModel

from albert_lab.analysis.attention import attention_entropy, attention_maps
from albert_lab.analysis.cka import layer_cka
from albert_lab.analysis.extrapolation import extrapolate, extrapolation_verdict
from albert_lab.analysis.lens import lens_predictions, logit_lens
from albert_lab.analysis.reapply import application_groups, encode, run_applications
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.errors import AlbertLabError

TOL = 1e-5


@pytest.fixture
def bundles(bundles, make_checkpoint):
    """conftest's ALBERT and BERT, with an ALBERT of the same depth in 2 groups between them."""
    grouped, _ = make_checkpoint("grouped", num_layers=4, num_groups=2)
    albert, bert = bundles
    return albert, load_checkpoint(grouped), bert


def reference_states(bundle, inputs, layers=None):
    """transformers' own forward (optionally with L' layers, the same weights)."""
    model = bundle.model
    if layers is not None:
        config = AlbertConfig(**{**model.config.to_dict(), "num_hidden_layers": layers})
        model = AlbertForPreTraining(config).eval()
        model.load_state_dict(bundle.model.state_dict())
    with torch.no_grad():
        out = model(**inputs.model_inputs(), output_hidden_states=True)
    return out


def close(a, b, tol=TOL):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.allclose(a, b, atol=tol, rtol=tol)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_k1_equals_the_models_forward(bundles, which):
    bundle = bundles[which]
    inputs = encode(bundle, TEXTS, seed=3)
    states = run_applications(bundle, inputs, repeat=1)
    out = reference_states(bundle, inputs)
    assert len(states) == len(out.hidden_states) == bundle.spec.num_layers + 1
    for mine, theirs in zip(states, out.hidden_states):
        assert close(mine, theirs)
    frame = extrapolate(bundle, TEXTS, repeat=1, seed=3)
    keep = inputs.attention_mask.bool().numpy()
    h = [s.numpy()[keep] for s in out.hidden_states]  # (N, H) each
    steps = [np.linalg.norm(h[a] - h[a - 1], axis=1).mean() for a in range(1, len(h))]
    to_l = [np.linalg.norm(x - h[-1], axis=1).mean() for x in h]
    assert close(frame.l2_step.iloc[1:], steps) and close(frame.l2_to_depth_L, to_l)
    logits = out.prediction_logits.reshape(-1, out.prediction_logits.shape[-1])[inputs.positions]
    assert abs(frame.mlm_accuracy.iloc[-1] - float((logits.argmax(-1) == inputs.labels).float().mean())) < TOL


@pytest.mark.parametrize("which", [0, 1])
def test_k_times_l_equals_a_deeper_model_with_the_same_weights(bundles, which):
    bundle = bundles[which]
    inputs = encode(bundle, TEXTS)
    states = run_applications(bundle, inputs, repeat=3)
    out = reference_states(bundle, inputs, layers=3 * bundle.spec.num_layers)
    assert len(states) == 13 and all(close(a, b, 1e-4) for a, b in zip(states, out.hidden_states))
    if which == 1:  # grouped: each group runs 3x as long
        assert application_groups(bundle.spec, 3) == [0] * 6 + [1] * 6


def test_masking_is_deterministic_and_15_percent(bundles):
    a, b = encode(bundles[0], TEXTS, seed=1), encode(bundles[0], TEXTS, seed=1)
    assert torch.equal(a.input_ids, b.input_ids) and not torch.equal(a.input_ids, encode(bundles[0], TEXTS, seed=2).input_ids)
    assert (a.input_ids.flatten()[a.positions] == bundles[0].tokenizer.mask_token_id).all()
    real = int(a.attention_mask.sum()) - 2 * len(TEXTS)
    assert abs(len(a.positions) - 0.15 * real) <= len(TEXTS)


def test_unshared_models_stay_at_depth_l_with_a_note(bundles):
    frame = extrapolate([bundles[0], bundles[2]], TEXTS, repeat=3)
    bert = frame[frame.checkpoint == bundles[2].name]
    assert len(bert) == 4 and not bert.beyond_L.any() and bert.note.str.contains("BERT").all()
    assert len(frame[frame.checkpoint == bundles[0].name]) == 13
    verdicts = extrapolation_verdict(frame).set_index("checkpoint")
    assert verdicts.loc[bundles[2].name, "verdict"] == "not judged"
    assert verdicts.loc[bundles[0].name, "verdict"] in ("converges", "cycles", "slows down", "drifts")
    with pytest.raises(AlbertLabError, match="repeat"):
        extrapolate(bundles[0], TEXTS, repeat=5)


def _frame(steps, returns):
    n = len(steps)
    return pd.DataFrame(dict(checkpoint="m", application=range(n), l2_step=[np.nan, *steps[1:]], l2_return=returns,
                             l2_to_depth_L=1.0, norm=8.0, mlm_accuracy=None, beyond_L=[a > 4 for a in range(n)], depth_L=4,
                             reapplicable=True, note=""))


def test_verdict_rule_on_hand_made_curves():
    converging = _frame([0, 5, 4, 4, 4, 2, 1, 0.2, 0.05], [np.nan] * 2 + [9] * 7)
    cycling = _frame([0, 5, 4, 4, 4, 4, 4, 4, 4], [np.nan] * 2 + [9] * 6 + [0.1])
    drifting = _frame([0, 5, 4, 4, 4, 4, 4, 4, 4], [np.nan] * 2 + [9] * 7)
    curves = (converging, cycling, drifting)
    assert [extrapolation_verdict(f).verdict[0] for f in curves] == ["converges", "cycles", "drifts"]
    # two curves that look alike get one word, whichever side of 10% their last steps fall
    alike = [_frame([0, 5, 4, 4, 4, 2, 1, 0.6, last], [np.nan] * 2 + [9] * 7) for last in (0.35, 0.44)]
    assert [extrapolation_verdict(f).verdict[0] for f in alike] == ["slows down", "slows down"]


def test_verdict_words_define_their_terms_and_give_the_distance_its_scale():
    """'the last step is still 50% of a step within depth L ... ends 14.3 from where it was': 'a step within
    depth L' was defined only in the paper note below, and 14.3 had no scale."""
    drifting = _frame([0, 5, 4, 4, 4, 4, 4, 4, 2], [np.nan] * 2 + [9] * 7)
    words = extrapolation_verdict(drifting).words[0]
    assert words.startswith("the last step (the L2 distance the state moves in the last application, 2) is still 50% of "
                            "a typical step within the trained depth L = 4 (the median over applications 2 to 4, 4)")
    assert words.endswith("it ends at L2 distance 1 from its state at depth L, 12% of that state's norm (8)")


def test_extrapolation_verdict_gives_count_and_interval_and_calls_no_trend_on_few_tokens():
    """At k = 4 the verdict reported 3.1% -> 1.5% as a trend, from a handful of tokens."""
    from albert_lab.analysis.extrapolation import accuracy_words

    few = accuracy_words(0.031, 0.015, 130, 24)
    assert "of 130 masked tokens" in few and "[" in few and "no trend" in few
    many = accuracy_words(0.30, 0.10, 5000, 24)
    assert "a fall beyond the 95% intervals" in many


def test_missing_mlm_head_gives_no_accuracy(tmp_path, tokenizer):
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=48, max_position_embeddings=64)
    AlbertModel(config).save_pretrained(tmp_path / "bare")
    tokenizer.save_pretrained(tmp_path / "bare")
    bare = load_checkpoint(tmp_path / "bare")
    assert bare.heads.mlm == "missing"
    frame = extrapolate(bare, TEXTS, repeat=2)
    assert frame.mlm_accuracy.isna().all() and frame.note.str.contains("no MLM head").all()
    with pytest.raises(AlbertLabError, match="no MLM head"):
        logit_lens(bare, TEXTS)
    with pytest.raises(AlbertLabError, match="no MLM head"):
        lens_predictions(bare, TEXTS[0])


def test_logit_lens_equals_the_head_on_output_hidden_states(bundles):
    albert, _, bert = bundles
    frame = logit_lens([albert, bert], TEXTS, seed=5)
    for bundle in (albert, bert):
        inputs = encode(bundle, TEXTS, seed=5)
        out = reference_states(bundle, inputs)
        head = bundle.model.predictions if bundle.spec.family == "albert" else bundle.model.cls.predictions
        rows = frame[frame.checkpoint == bundle.name]
        final = None
        for a in reversed(range(len(out.hidden_states))):
            with torch.no_grad():
                logits = head(out.hidden_states[a].reshape(-1, bundle.spec.hidden_size)[inputs.positions])
            logp = torch.log_softmax(logits, -1)
            final = logits.argmax(-1) if final is None else final
            row = rows[rows.application == a].iloc[0]
            assert abs(row.mlm_accuracy - float((logits.argmax(-1) == inputs.labels).float().mean())) < TOL
            assert abs(row.nll + float(logp[torch.arange(len(inputs.labels)), inputs.labels].mean())) < 1e-4
            assert abs(row.agrees_with_last - float((logits.argmax(-1) == final).float().mean())) < TOL


def test_lens_predictions_top_k(bundles):
    albert = bundles[0]
    top = lens_predictions(albert, "Paris is the capital of France.", position=3, top_k=4)
    assert len(top) == 5 * 4 and top.masked.all()
    ids = albert.tokenizer(["Paris is the capital of France."], return_tensors="pt", return_token_type_ids=True)
    target = int(ids["input_ids"][0, 3])
    ids["input_ids"][0, 3] = albert.tokenizer.mask_token_id
    with torch.no_grad():
        hidden = albert.model(**ids, output_hidden_states=True).hidden_states
        for a, h in enumerate(hidden):
            probs = torch.softmax(albert.model.predictions(h[0, 3]), -1)
            rows = top[top.application == a].sort_values("rank")
            assert close(rows.probability, probs.topk(4).values)
            assert abs(rows.target_probability.iloc[0] - float(probs[target])) < TOL
    typed = lens_predictions(albert, "The capital of France is [MASK].", top_k=2)
    assert (typed.watched == "[MASK]").all() and typed.target_probability.isna().all()
    with pytest.raises(AlbertLabError, match="position"):
        lens_predictions(albert, "Short one.", position=40)


def _attention_module(bundle, layer):
    if bundle.spec.family == "albert":
        a = bundle.model.albert.encoder.albert_layer_groups[0].albert_layers[0].attention
        return a.value, a.dense
    a = bundle.model.bert.encoder.layer[layer].attention
    return a.self.value, a.output.dense


@pytest.mark.parametrize("which", [0, 2])
def test_attention_weights_equal_eager_output_attentions(bundles, which):
    bundle = bundles[which]
    maps = attention_maps(bundle, TEXTS[1])
    inputs = encode(bundle, [TEXTS[1]], mask_rate=0.0)
    bundle.model.set_attn_implementation("eager")
    with torch.no_grad():
        out = bundle.model(**inputs.model_inputs(), output_attentions=True, output_hidden_states=True)
    t = inputs.input_ids.shape[1]
    for layer, reference in enumerate(out.attentions):
        rows = maps[maps.application == layer + 1].sort_values(["head", "query", "key"])
        assert close(rows.weight.to_numpy().reshape(reference.shape[1:]), reference[0].numpy())
        # Norm-weighted, by hand: f(x_j) = (x_j W_V + b_V) W_O per head, times alpha_ij.
        x = out.hidden_states[layer][0].double().numpy()  # (T, H)
        attn = _attention_module(bundle, layer)
        value = x @ attn[0].weight.detach().double().numpy().T + attn[0].bias.detach().double().numpy()
        w_o = attn[1].weight.detach().double().numpy()  # (H_out, H_in)
        heads = bundle.spec.num_heads
        d = bundle.spec.hidden_size // heads
        for h in range(heads):
            f = value[:, h * d:(h + 1) * d] @ w_o[:, h * d:(h + 1) * d].T  # (T, H)
            alpha = reference[0, h].double().numpy()  # (T, T)
            expected = np.linalg.norm(alpha[:, :, None] * f[None, :, :], axis=-1)
            got = rows[rows["head"] == h].norm_weighted.to_numpy().reshape(t, t)
            assert close(got, expected)
    bundle.model.set_attn_implementation("sdpa")


def test_shared_weights_give_different_patterns_and_entropy_by_hand(bundles):
    albert = bundles[0]
    maps = attention_maps(albert, TEXTS[0], repeat=2)
    assert maps.application.max() == 8
    first, second = (maps[(maps.application == a) & (maps["head"] == 0)].weight.to_numpy() for a in (1, 2))
    assert not np.allclose(first, second)
    entropy = attention_entropy(albert, TEXTS[:2])
    assert len(entropy) == 4 * albert.spec.num_heads
    inputs = encode(albert, TEXTS[:2], mask_rate=0.0)
    albert.model.set_attn_implementation("eager")
    with torch.no_grad():
        attentions = albert.model(**inputs.model_inputs(), output_attentions=True).attentions
    albert.model.set_attn_implementation("sdpa")
    keep = inputs.attention_mask.bool()
    for layer, att in enumerate(attentions):
        p = att.double().numpy()
        ent = -(p * np.log(np.where(p > 0, p, 1))).sum(-1)  # (B, heads, T)
        for h in range(albert.spec.num_heads):
            row = entropy[(entropy.application == layer + 1) & (entropy["head"] == h)].iloc[0]
            assert abs(row.entropy - ent[:, h][keep.numpy()].mean()) < TOL


def test_inner_groups_run_every_inner_layer(make_checkpoint):
    folder, _ = make_checkpoint("inner", num_layers=2, inner_group_num=2)
    bundle = load_checkpoint(folder)
    inputs = encode(bundle, TEXTS)
    states = run_applications(bundle, inputs, repeat=1)
    plain = encode(bundle, [TEXTS[0]], mask_rate=0.0)
    bundle.model.set_attn_implementation("eager")
    with torch.no_grad():
        out = bundle.model(**inputs.model_inputs(), output_hidden_states=True)
        reference = bundle.model(**plain.model_inputs(), output_attentions=True).attentions
    bundle.model.set_attn_implementation("sdpa")
    assert len(out.hidden_states) == 5 and all(close(a, b) for a, b in zip(states, out.hidden_states[::2]))
    maps = attention_maps(bundle, TEXTS[0])
    assert set(zip(maps.application, maps.inner)) == {(1, 0), (1, 1), (2, 0), (2, 1)}
    for run, (application, inner) in enumerate([(1, 0), (1, 1), (2, 0), (2, 1)]):
        rows = maps[(maps.application == application) & (maps.inner == inner)].sort_values(["head", "query", "key"])
        assert close(rows.weight.to_numpy(), reference[run][0].reshape(-1).numpy())


def hsic_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA by the HSIC formula with the centring matrix H = I - 11^T/n."""
    n = x.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n
    k, l_ = x @ x.T, y @ y.T

    def hsic(a, b):
        return np.trace(a @ h @ b @ h) / (n - 1) ** 2

    return hsic(k, l_) / np.sqrt(hsic(k, k) * hsic(l_, l_))


def test_cka_equals_the_hsic_formula_within_and_across(bundles):
    albert, _, bert = bundles

    def states(bundle):
        inputs = encode(bundle, TEXTS, mask_rate=0.0)
        with torch.no_grad():
            hidden = bundle.model(**inputs.model_inputs(), output_hidden_states=True).hidden_states
        keep = inputs.attention_mask.bool()
        return [h[keep].double().numpy() for h in hidden]

    xs, ys = states(albert), states(bert)
    within = layer_cka(albert, TEXTS)
    across = layer_cka(albert, TEXTS, other=bert)
    assert (across.unit == "token").all() and across.note.str.contains("mislead").all()
    for frame, a, b in ((within, xs, xs), (across, xs, ys)):
        got = frame.pivot(index="application_x", columns="application_y", values="cka").to_numpy()
        expected = np.array([[hsic_cka(x, y) for y in b] for x in a])
        assert close(got, expected)
    assert close(np.diag(within.pivot(index="application_x", columns="application_y", values="cka").to_numpy()), 1.0)


def test_cka_across_tokenizers_uses_text_means(bundles, small_corpus, tmp_path):
    import dataclasses

    from albert_lab.tokenizer import load_tokenizer, train_tokenizer

    albert, _, bert = bundles
    train_tokenizer([s for d in small_corpus.train[:200] for s in d.segments], tmp_path / "other", vocab_size=600)
    other = dataclasses.replace(bert, tokenizer=load_tokenizer(tmp_path / "other"))
    frame = layer_cka(albert, TEXTS, other=other)
    assert (frame.unit == "text").all() and (frame.n == len(TEXTS)).all() and frame.note.str.contains("tokenizers").all()

    def means(bundle):
        inputs = encode(bundle, TEXTS, mask_rate=0.0)
        with torch.no_grad():
            hidden = bundle.model(**inputs.model_inputs(), output_hidden_states=True).hidden_states
        keep = inputs.attention_mask.double().numpy()[..., None]
        return [(h.double().numpy() * keep).sum(1) / keep.sum(1) for h in hidden]

    expected = np.array([[hsic_cka(x, y) for y in means(other)] for x in means(albert)])
    assert close(frame.pivot(index="application_x", columns="application_y", values="cka").to_numpy(), expected)
