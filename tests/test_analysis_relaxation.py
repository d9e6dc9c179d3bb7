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
