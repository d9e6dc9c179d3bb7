"""The depth lab's nets: MLPs and VGGs whose gradients vanish or not, and the results shipped for its first views."""

import pytest
import torch

from albert_lab.analysis.depth import DepthConfig, compare_vgg, train_disc, train_vgg
from albert_lab.errors import AlbertLabError
from app.rooms.depth_lab import cache as depth_cache


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


def _one_thread(train, *args, **kwargs):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # what scripts/make_depth_default.py runs on
    try:
        return train(*args, **kwargs)
    finally:
        torch.set_num_threads(threads)


def _agrees_with_shipped(history, flow, shipped_history, shipped_flow, until: int, end_loss: float) -> None:
    """Within what depth_cache measured across CPU kinds: the same curves (rel 1e-4: fresh runs
    agreed to < 1e-6, the file keeps 6 digits) up to `until`; after that only equally trained
    nets (end loss within `end_loss`, about twice the spread measured, and the accuracy's
    spread doubled), since SGD at lr 0.1 amplifies the kernels' rounding."""
    assert list(history.step) == list(shipped_history.step)
    early, early_flow = history.step <= until, flow.step <= until
    assert history.loss[early].to_numpy() == pytest.approx(shipped_history.loss[early].to_numpy(), rel=1e-4)
    assert flow.mean_abs[early_flow].to_numpy() == pytest.approx(shipped_flow.mean_abs[early_flow].to_numpy(), rel=1e-4)
    late_fresh, late_shipped = history.loss.tail(10).mean(), shipped_history.loss.tail(10).mean()
    assert late_fresh < 0.5 * history.loss.iloc[0] and late_fresh == pytest.approx(late_shipped, rel=end_loss)
    accuracy_spread = 2 * depth_cache.END_ACCURACY_SPREAD
    assert history.test_accuracy.iloc[-1] == pytest.approx(shipped_history.test_accuracy.iloc[-1], abs=accuracy_spread)


def test_shipped_depth_default_matches_a_fresh_run():
    cfg = next(c for c in depth_cache.default_configs() if c.residual)  # the fastest of the three
    history, flow = _one_thread(train_disc, cfg)
    _agrees_with_shipped(history, flow, *depth_cache.precomputed(cfg), until=depth_cache.AGREES_UNTIL["mlp"],
                         end_loss=2 * depth_cache.END_LOSS_SPREAD)


@pytest.mark.slow
def test_shipped_vgg_default_matches_a_fresh_run():
    history, flow = _one_thread(train_vgg, 8, True, record_every=depth_cache.VGG_RECORD_EVERY, **depth_cache.VGG_DEFAULTS)
    # VGG-8's end loss spread only 2% across CPU kinds, but it is a small number (0.036): 10%
    _agrees_with_shipped(history, flow, *depth_cache.shipped_vgg(8, True, **depth_cache.VGG_DEFAULTS),
                         until=depth_cache.AGREES_UNTIL["vgg"], end_loss=0.1)


def test_the_shipped_default_says_where_it_was_made(monkeypatch):
    from albert_lab import devices

    made = depth_cache.made_on()
    assert made["model"] and "avx2" in made["flags"] and made["torch"] and made["torch_capability"]
    monkeypatch.setattr(devices, "cpu_kind", lambda: dict(made))
    assert depth_cache.shipped_note().endswith("a CPU of this machine's kind: training here gives the same curves.")
    monkeypatch.setattr(devices, "cpu_kind", lambda: dict(made, flags=["avx2"], torch_capability="AVX2"))
    note = depth_cache.shipped_note()
    assert note.startswith(f"Computed once on {made['model']} ({', '.join(made['flags'])}; PyTorch {made['torch']})")
    assert "kernels differ (avx2)" in note and "final loss within about 14%, accuracy within 2 points" in note
