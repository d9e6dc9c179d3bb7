"""The compiled training step: no graph breaks, one graph per batch shape, few shapes an epoch,
the same losses and gradients as the step run eagerly, and a compiled run that trains."""

import numpy as np
import pytest
import torch
from conftest import CORPUS, tiny_spec

from albert_lab.data.batching import WIDTH_BUCKETS, Batch, PretrainingData, Shapes
from albert_lab.data.masking import masking_config, prediction_budget
from albert_lab.data.tokenized import tokenize_documents
from albert_lab.kernels import tune_for_training
from albert_lab.models import build_model
from albert_lab.objective import PretrainingLoss, padding_mask
from albert_lab.training.config import TrainConfig


@pytest.fixture(scope="module")
def docs(small_corpus, tokenizer):
    return tokenize_documents(small_corpus.train, tokenizer)


def _data(docs, tokenizer, shapes: Shapes, seq_len: int = 128, batch_size: int = 8) -> PretrainingData:
    tok = tokenizer
    return PretrainingData(docs, "sop", masking_config(tok), (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id),
                           seq_len, batch_size, seed=0, shapes=shapes)


def _inputs(batch) -> tuple:
    return (batch.input_ids, batch.token_type_ids, padding_mask(batch), batch.mlm_positions, batch.mlm_labels,
            batch.pair_labels, False)


def test_bucketed_shapes_are_few_and_hold_every_batch(docs, tokenizer):
    """Widths: WIDTH_BUCKETS of them up to the sequence length; predictions: one count per width, which
    every batch of that width fits (rows x the masking budget of a pair that wide)."""
    cfg = masking_config(tokenizer)
    assert Shapes.bucketed(128, cfg).widths == (32, 64, 96, 128)
    assert Shapes.bucketed(512, cfg).widths == (128, 256, 384, 512)
    assert Shapes.bucketed(100, cfg).widths == (32, 64, 80, 100)  # the last is the sequence length itself
    data = _data(docs, tokenizer, Shapes.bucketed(128, cfg))
    plain = _data(docs, tokenizer, Shapes())
    epoch = len(data.epoch_batches(0))
    shapes, plain_shapes = set(), set()
    for step in range(epoch):
        batch, reference = data.batch(step), plain.batch(step)
        width = batch.input_ids.shape[1]
        shapes.add((width, len(batch.mlm_positions)))
        plain_shapes.add((reference.input_ids.shape[1], len(reference.mlm_positions)))
        assert len(batch.mlm_positions) == 8 * prediction_budget(cfg, width)
        # the same pairs, masks and labels: only the padding differs
        real = batch.mlm_labels != -100
        assert torch.equal(batch.mlm_labels[real], reference.mlm_labels[reference.mlm_labels != -100])
        narrow = reference.input_ids.shape[1]
        assert torch.equal(batch.input_ids[:, :narrow], reference.input_ids)
        assert batch.step_tokens == reference.step_tokens == int(reference.attention_mask.sum())
    assert len(shapes) <= WIDTH_BUCKETS < len(plain_shapes), (shapes, plain_shapes)


@pytest.mark.parametrize("family, objective", [("albert", "sop"), ("bert", "nsp"), ("albert", "none")])
def test_the_step_traces_without_a_graph_break(docs, tokenizer, family, objective):
    """`torch._dynamo.explain` of the model as training tunes it and the losses, on a padded batch and on one without padding
    (which runs attention without a mask): one graph each, no break."""
    spec = tiny_spec(tokenizer.vocab_size, family=family, objective="nsp" if objective == "none" else objective, num_layers=2,
                     max_positions=128, **({"embedding_size": 32} if family == "bert" else {}))  # 2 layers: a shared one applied again
    loss = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), objective)
    data = _data(docs, tokenizer, Shapes.bucketed(128, masking_config(tokenizer)))
    padded = data.batch(0)
    full = Batch(**{**padded.tensors(), "attention_mask": torch.ones_like(padded.attention_mask)},
                 counts=(padded.input_ids.numel(), padded.num_predictions))  # every position a real token
    assert padding_mask(padded) is not None and padding_mask(full) is None
    for batch in (padded, full):
        explained = torch._dynamo.explain(loss._core)(*_inputs(batch))
        assert explained.graph_break_count == 0, [r.reason for r in explained.break_reasons]
        assert explained.graph_count == 1


def test_an_epoch_compiles_no_more_graphs_than_it_has_shapes(docs, tokenizer):
    """Compiled (a counting backend), an epoch of bucketed batches makes one graph per (width, padded or
    not) it holds, at most 2 x WIDTH_BUCKETS; nothing recompiles for a new count of tokens or predictions."""
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    spec = tiny_spec(tokenizer.vocab_size, num_layers=2, max_positions=128)  # 2 layers: a shared one applied again
    loss = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), "sop")
    counter = CompileCounter()
    loss.compile_core(counter)
    data = _data(docs, tokenizer, Shapes.bucketed(128, masking_config(tokenizer)))
    kinds = set()
    for step in range(len(data.epoch_batches(0))):
        batch = data.batch(step)
        out = loss(batch)
        out.loss.backward()
        assert out.mlm_count == batch.num_predictions
        kinds.add((batch.input_ids.shape[1], padding_mask(batch) is None))
    assert counter.frame_count == len(kinds) <= 2 * WIDTH_BUCKETS
    torch._dynamo.reset()


def test_compiled_losses_and_gradients_equal_the_eager_ones(docs, tokenizer):
    """Through AOTAutograd (the graphs inductor would compile, run by eager kernels): the losses, hits
    and gradients of the eager step. fp32; the bound is a sum of K = 48 products (the widest
    contraction) through 3 layers: 3 x 48 x 2^-24 relative, x 8 for the backward's longer paths."""
    torch._dynamo.reset()
    spec = tiny_spec(tokenizer.vocab_size, max_positions=128)
    eager = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), "sop")
    compiled = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), "sop")
    compiled.compile_core("aot_eager")
    data = _data(docs, tokenizer, Shapes.bucketed(128, masking_config(tokenizer)))
    bound = 8 * 3 * 48 * 2.0 ** -24
    for batch in (data.batch(0), data.batch(1)):
        a, b = eager(batch), compiled(batch)
        a.loss.backward()
        b.loss.backward()
        assert abs(a.loss.item() - b.loss.item()) <= bound * abs(a.loss.item())
        assert (a.mlm_correct.item(), a.pair_correct.item()) == (b.mlm_correct.item(), b.pair_correct.item())
        for (name, p), q in zip(eager.model.named_parameters(), compiled.model.parameters()):
            scale = p.grad.abs().max().item()
            assert (p.grad - q.grad).abs().max().item() <= bound * max(scale, 1e-30), name
    torch._dynamo.reset()


def test_a_compiled_run_trains(monkeypatch, capfd):
    """--compile on: the log says so, the batches come bucketed, and the loss falls as the eager run's."""
    from albert_lab.training import loop
    from albert_lab.training.jobs import start_run
    from albert_lab.training.runs import read_run

    torch._dynamo.reset()
    monkeypatch.setattr(loop, "COMPILE_BACKEND", "aot_eager")
    settings = dict(spec=tiny_spec(1000, num_layers=2, hidden_size=32).to_dict(), corpus=CORPUS, vocab_size=1000,
                    max_seq_len=64, batch_size=8, max_steps=6, warmup_steps=2, lr=2e-3, log_every=2, eval_every=100,
                    eval_limit=16, checkpoint_every=100, gradflow_every=100, seed=0, threads=1)
    losses = {}
    for mode in ("off", "on"):
        info = start_run(TrainConfig(**settings, compile=mode, name=f"compile-{mode}"), foreground=True)
        assert read_run(info.folder.path).status == "succeeded"
        losses[mode] = [m["loss"] for m in read_run(info.folder.path).metrics() if m["kind"] == "train"]
    assert "compiled" in capfd.readouterr().out
    assert losses["on"][-1] < losses["on"][0]
    # the same batches padded wider: the same losses to float rounding, compounded over 6 steps
    assert np.allclose(losses["on"], losses["off"], rtol=1e-3), losses
    torch._dynamo.reset()


def test_auto_compiles_only_long_runs_on_a_gpu():
    from albert_lab.training.config import COMPILE_MIN_STEPS

    assert TrainConfig(max_steps=COMPILE_MIN_STEPS).compiled("cuda")
    assert not TrainConfig(max_steps=20).compiled("cuda")  # a short run from the page: compiling would cost more
    assert not TrainConfig(max_steps=COMPILE_MIN_STEPS).compiled("cpu")
    assert TrainConfig(max_steps=20, compile="on").compiled("cpu")
    assert not TrainConfig(max_steps=10 ** 6, compile="off").compiled("cuda")
