"""Oscillation: layer-to-layer distances against a direct computation, and the verdict's words against its numbers."""

import numpy as np
import pytest
import torch
from conftest import TEXTS

from albert_lab.analysis.oscillation import oscillation, similarity_matrix, verdict
from albert_lab.errors import DataError


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


def test_the_oscillation_verdict_says_what_the_curve_does():
    """A steady decline that stays far from 0 is not called 'oscillating' on its own (students read
    the word literally), and a curve that goes up and down is not either: the paper's word for ALBERT's
    smooth decline ('oscillate rather than converge') is said only beside that shape, as the paper's;
    one that reaches ~0 converges."""
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    curves = {"steady": [11.4, 8.0, 6.1, 4.9, 3.9, 3.2], "wobbly": [11.0, 6.0, 7.5, 5.0, 6.8, 4.6],
              "to-zero": [11.0, 6.0, 2.0, 0.6, 0.2, 0.05], "rising": [11.0, 3.0, 3.1, 3.6, 4.2, 5.0],
              "bert-nsp": [8.6, 6.89, 7.56, 6.65, 7.58, 8.39]}  # the shipped BERT: zig-zag, then up
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, values in curves.items() for i, v in enumerate(values)])
    words = verdict(frame).set_index("checkpoint").verdict
    assert words["steady"].startswith("falls steadily, never settles: the distances fall from layer to layer")
    assert words["steady"].endswith("which the paper calls oscillating rather than converging")
    assert "oscillate rather than converge" not in words["steady"]  # a steady decline is not described as going up and down
    assert words["wobbly"].startswith("zig-zag: from layer to layer the distances go up and down")
    assert words["to-zero"].startswith("converging")
    assert words["rising"].startswith("grows: from layer 2 on the distances grow to the last layer, away from 0")
    assert words["bert-nsp"].startswith("zig-zag")
    for name, said in words.items():  # the paper's word only beside ALBERT's shape, and as the paper's
        assert "oscillat" not in said or (name == "steady" and "the paper calls" in said), said
    headlines = verdict(frame).set_index("checkpoint").headline
    assert all(words[name].startswith(headlines[name] + ": ") for name in curves)


def test_roughness_calls_a_steady_decay_smoother_than_a_zigzag():
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    # shipped models' curves: ALBERT decays steadily, BERT goes down, up, down and up
    albert = [12.96, 5.77, 4.39, 3.62, 3.06, 2.70]
    bert = [8.60, 7.07, 7.60, 7.05, 7.37, 8.57]
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, curve in (("albert", albert), ("bert", bert)) for i, v in enumerate(curve)])
    rough = verdict(frame).set_index("checkpoint").roughness
    assert rough["albert"] == 0.0 < rough["bert"]
    # from layer 2: 7.07, 7.60, 7.05, 7.37, 8.57: runs +0.53, -0.55, +1.52 (the last two steps are one run), path 2.60;
    # the shortest path with one turn goes 7.07 -> 7.05 -> 8.57 (0.02 + 1.52): the bump of 0.53, up and back, is the rest
    assert rough["bert"] == pytest.approx(1 - (0.02 + 1.52) / (0.53 + 0.55 + 0.32 + 1.20))
    assert rough["bert"] == pytest.approx(2 * 0.53 / (0.53 + 0.55 + 0.32 + 1.20))
    line = pd.DataFrame([dict(checkpoint="line", layer=i + 1, l2=10.0 - i, angle_deg=1.0) for i in range(6)])
    assert verdict(line).roughness.iloc[0] == pytest.approx(0.0)


def test_verdict_and_roughness_count_the_same_changes_of_direction():
    """albert-sop 'falls steadily (no rise over 5%)' scored rougher (0.16) than bert-sop-minilm (0.15), whose verdict
    'the distances grow' passed over a fall in two small steps (7.0 -> 6.45) that the chart showed."""
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    curves = {"bumpy-fall": [12.0, 9.0, 8.0, 8.2, 7.0, 6.0, 6.1, 5.0],  # bumps of 0.2 and 0.1: under 5% of ~7.0
              "dip-then-rise": [9.0, 7.0, 6.7, 6.45, 7.5, 8.5, 9.5]}  # a fall in two steps, each under 5%
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, curve in curves.items() for i, v in enumerate(curve)])
    rows = verdict(frame).set_index("checkpoint")
    assert rows.verdict["bumpy-fall"].startswith("falls steadily") and rows.roughness["bumpy-fall"] == 0.0
    assert rows.turns["bumpy-fall"] == 0 and rows.turns["dip-then-rise"] == 1
    assert rows.verdict["dip-then-rise"].startswith("one turn: the distances fall to layer 4, then grow to the last layer, no zig")
    assert rows.roughness["dip-then-rise"] == 0.0


def test_roughness_measures_the_zigzag_not_a_single_turn():
    """albert-sop-minilm's curve falls to layer 3 and rises after it (one smooth turn); the share of
    change undone scored it 0.51, as rough as bert-nsp's up-down-up (0.55), and rougher than
    bert-sop-minilm (0.00), which does the same with a smaller dip: the page ranked a U as a zig-zag."""
    import numpy as np
    import pandas as pd

    from albert_lab.analysis.oscillation import _roughness, _turning_points, verdict

    assert _roughness(np.array([0.0, 1, 0, 1, 0])) == pytest.approx(0.5)  # path 4, one turn at most 0 -> 1 -> 0: 2
    assert _roughness(np.array([0.0, 1, 0, 1, 0, 1, 0])) == pytest.approx(1 - 2 / 6)
    assert _roughness(np.array([3.0, 2, 1, 2, 3])) == 0.0  # a U: one turn
    assert _roughness(np.array([1.0, 3, 2])) == 0.0  # up, then down: one turn
    assert _roughness(np.array([5.0, 4, 3, 2])) == 0.0
    # runs +2, -1, +5: path 8; the best one turn is 1 -> 2 -> 7 (1 + 5 = 6): 1 - 6/8, the dip of 1 twice over the path
    assert _roughness(np.array([1.0, 3, 2, 4, 7])) == pytest.approx(2 * 1 / 8)
    assert _roughness(np.array([1.0, 3, 2.9, 4, 7]), tolerance=0.2) == 0.0  # a dip of 0.1: smoothed away
    assert _turning_points(np.array([1.0, 2, 2, 1])) == [0, 1, 3]  # a level step belongs to its run
    assert _turning_points(np.array([1.0, 3, 2.9, 4, 7]), tolerance=0.2) == [0, 4]
    shipped = {"albert-sop-minilm": [6.42, 3.67, 2.34, 2.77, 4.61, 6.21], "bert-sop-minilm": [7.03, 6.79, 6.45, 6.83, 9.70, 10.68],
               "bert-nsp": [8.60, 6.89, 7.56, 6.65, 7.58, 8.39]}  # the shipped models on the built-in sample
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, curve in shipped.items() for i, v in enumerate(curve)])
    rows = verdict(frame).set_index("checkpoint")
    assert rows.roughness["albert-sop-minilm"] == rows.roughness["bert-sop-minilm"] == 0.0
    # bert-nsp from layer 2: runs +0.67, -0.91, +1.74 (all over 5% of 7.4); path 3.32; one turn 6.89 -> 6.65 -> 8.39
    assert rows.roughness["bert-nsp"] == pytest.approx(1 - (0.24 + 1.74) / (0.67 + 0.91 + 1.74))
    assert rows.verdict["bert-nsp"].startswith("zig-zag") and "changing direction 2 times" in rows.verdict["bert-nsp"]


def test_a_plateau_then_a_drop_is_not_rougher_than_a_zigzag():
    """albert-nsp's curve falls in one big drop after a plateau; the mean |second
    difference| scored it rougher (0.31) than bert-nsp's zig-zag (0.13), which the
    verdicts beside it called the only oscillating one."""
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    curves = {"albert-nsp": [10.55, 6.35, 5.68, 5.70, 3.66, 3.42], "bert-nsp": [8.60, 7.07, 7.60, 7.05, 7.37, 8.57]}
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, curve in curves.items() for i, v in enumerate(curve)])
    rows = verdict(frame).set_index("checkpoint")
    assert rows.roughness["albert-nsp"] == 0.0  # its +0.02 is under 5% of the distance: not counted, as in its verdict
    assert rows.roughness["albert-nsp"] < rows.roughness["bert-nsp"]
    assert rows.verdict["bert-nsp"].startswith("zig-zag") and rows.verdict["albert-nsp"].startswith("falls steadily")
    assert all(rows.verdict == rows.headline + ": " + rows.detail)  # the page sets the two apart, never by stripping


def test_a_growing_curve_names_the_dip_it_passes_over():
    """bert-sop-minilm's curve (the default texts) dips over layers 1-3 and then grows: 'the distances grow from
    layer to layer' was said of it. The dip from layer 2 is under 5% of the mean (0.34 of 8.09), so the shape is
    still 'grows', and the words now say from where, and which dip they pass over."""
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    curve = [7.028, 6.793, 6.453, 6.831, 9.695, 10.677]
    frame = pd.DataFrame([dict(checkpoint="bert-sop-minilm", layer=i + 1, l2=v, angle_deg=30.0) for i, v in enumerate(curve)])
    row = verdict(frame).iloc[0]
    assert row["shape"] == "grows" and row.turns == 0
    assert row.verdict.startswith("grows: from layer 2 on the distances grow but for a dip under 5% of their mean at "
                                  "layer 3 (6.79 to 6.45) to the last layer, away from 0"), row.verdict
