"""The relaxation curve's models read by the analyses: a relaxed model's applications each run
with their own correction (full rank is the source again, layer by layer)."""

import numpy as np
from conftest import TEXTS


def test_a_full_rank_model_oscillates_as_its_source(tiny_bert):
    """The oscillation of a relaxed model ran every application through the first layer's block (its
    spec has one sharing group): full rank, the source again, measured a path of its own."""
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.analysis.relaxation import _bundle
    from albert_lab.relax import Relaxation, load_source, source_eps, source_state

    folder, _ = tiny_bert
    source = load_source(str(folder))
    relaxation = Relaxation.of(source_state(source), source.spec, source.spec.hidden_size, "all", None, "average",
                               source_eps(source))
    full = _bundle("full", source, relaxation.at(relaxation.ranks("full")))
    frame = oscillation([full, _bundle("source", source)], TEXTS)
    l2 = {name: group.sort_values("layer").l2.to_numpy() for name, group in frame.groupby("checkpoint")}
    assert np.allclose(l2["full"], l2["source"], rtol=1e-4, atol=1e-4), l2


def test_map_ablation_takes_one_map_out_of_every_application(tiny_bert, small_corpus):
    """Each row is the model without one map's corrections: where that map's corrections were zero already, the
    row equals the whole model; elsewhere the model moves away from its source."""
    import torch

    from albert_lab.analysis.relaxation import _bundle, map_ablation
    from albert_lab.data.heldout import build_eval_pairs
    from albert_lab.models import layer_applications
    from albert_lab.relax import Relaxation, load_source, source_eps, source_state

    folder, _ = tiny_bert
    source = load_source(str(folder))
    # weights six times their init's: layers that differ enough for their corrections to change what the model says
    state = {k: v * 6 if k.endswith("weight") and "LayerNorm" not in k else v for k, v in source_state(source).items()}
    relaxation = Relaxation.of(state, source.spec, source.spec.hidden_size, "all", None, "average", source_eps(source))
    relaxed = _bundle("rank 4", source, relaxation.at(relaxation.ranks(4)))
    reference = _bundle("source", source, relaxation.at(relaxation.ranks("full")))  # the scaled source itself
    with torch.no_grad():
        for module in layer_applications(relaxed.model):
            module.albert_layers[0].attention.query.lora_b.zero_()
    held = build_eval_pairs(small_corpus.train[:40])
    frame = map_ablation(relaxed, reference, held, 16, 64).set_index("map")
    assert list(frame.index) == ["", "attention.query", "attention.key", "attention.value", "attention.dense", "ffn",
                                 "ffn_output"]
    assert frame.loc["attention.query", "kl_added"] == 0 and frame.loc["attention.query", "mlm_lost"] == 0
    assert (frame.drop(["", "attention.query"]).kl_added > 1e-4).all(), frame  # float noise is ~1e-6
    assert frame.loc["", "kl"] < frame.kl.drop(["", "attention.query"]).min()
