"""The Parameters page's 'Relaxed sharing' view (AppTest): the curve computed through the runner equals
the library's frame, which maps need rank most, a rank's model made and offered in the sidebar, the
inputs in the link, and bad input said in one line; a sweep's two curves, before and after uptraining,
drawn from its run folder, and a sweep started from the page."""

import base64
from itertools import pairwise

import numpy as np
import pytest
from conftest import CORPUS, charts, goto, link_of, opened_by_link

from albert_lab.checkpoint.files import read_card

SOURCE = "bert-nsp"  # the `shipped` fixture's tiny BERT (H = 32, 3 layers, NSP)
PAIRS = 8


@pytest.fixture
def held(small_corpus, monkeypatch):
    """A few held-out pairs from the tiny corpus, and the curve's sample of them kept small."""
    import albert_lab.analysis.relaxation as relaxation
    from albert_lab.data.heldout import build_eval_pairs

    pairs = build_eval_pairs(small_corpus.train[:40]).assign(domain="in")
    monkeypatch.setattr(relaxation, "evaluation_pairs", lambda out_of_domain=True: pairs)
    monkeypatch.setattr(relaxation, "DEFAULT_PAIRS", PAIRS)
    return pairs


def open_view(app, **link):
    at = opened_by_link({"params_tab": "On real weights", "calc_real_view": "relaxed", **link}, "parameters")
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_curve_shown_is_the_librarys(app, held, shipped):
    from albert_lab.analysis.relaxation import curve_and_energy

    at = open_view(app, calc_relax_source=SOURCE, calc_relax_ranks="0,2,full")
    assert at.selectbox(key="calc_relax_source").options == [SOURCE]  # the BERTs only: albert-sop and hub-albert are ALBERTs
    assert "Compute the curve (about" in at.button(key="calc_relax_go").label
    others = len(charts(at))  # the other tabs' (calculator, curves): nothing of the view's before it is asked for
    assert not [t for t in at.dataframe if "share of source" in t.value]
    at.button(key="calc_relax_go").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    curve, energy = curve_and_energy(str(shipped / SOURCE), [0, 2, "full"], pairs=PAIRS)
    table = next(t.value for t in at.dataframe if "share of source" in t.value)
    assert list(table.model) == list(curve.model) == ["ALBERT (rank 0)", "rank 2", "rank full", "source BERT"]
    assert list(table["parameters"]) == [f"{p:,}" for p in curve.parameters]
    assert list(table["MLM accuracy"]) == [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in
                                           zip(curve.mlm_accuracy, curve.mlm_low, curve.mlm_high)]
    assert list(table["NSP accuracy"]) == [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in
                                           zip(curve.pair_accuracy, curve.pair_low, curve.pair_high)]
    assert list(table["energy kept"]) == [f"{e:.1%}" for e in curve.energy_kept]
    assert len(charts(at)) == others + 3  # the curve, the energy kept, what sharing took
    remarks = [m.value for m in at.markdown if m.value.startswith("- rank 2 (")]
    assert len(remarks) == 1 and "MLM " in remarks[0] and "NSP " in remarks[0] and "roughness" in remarks[0]  # every panel
    sentence = next(m.value for m in at.markdown if "carries most of what makes each layer its own" in m.value)
    at2 = energy[energy["rank"] == "2"]
    top = at2.groupby("map").energy.sum().idxmax()
    from albert_lab.figures.parameters import MAP_LABELS

    assert sentence.startswith(f"**{MAP_LABELS[top]}**") and "At rank 2" in sentence
    assert link_of(at)["calc_relax_ranks"] == "0,2,full" and link_of(at)["calc_real_view"] == "relaxed"


def test_a_rank_is_made_and_offered_in_the_sidebar(app, held, tmp_path):
    at = open_view(app, calc_relax_source=SOURCE, calc_relax_ranks="0,2")
    at.button(key="calc_relax_go").click().run()
    at.selectbox(key="calc_relax_make_rank").set_value("2")
    at.button(key="calc_relax_make").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    out = tmp_path / "runs" / "relaxed" / f"{SOURCE}-r2-all-average"
    card = read_card(out)
    assert card["relaxation"]["rank_ffn"] == 2 and card["provenance"]["command"].startswith("albert-lab relax")
    done = next(s.value for s in at.success if "Saved" in s.value)
    assert f"{card['relaxation']['parameters']:,} parameters" in done
    at.button(key="calc_relax_pick").click().run()
    made = f"converted:{out.name}"
    assert made in at.sidebar.multiselect(key="picked").value
    assert [o for o in at.sidebar.multiselect(key="picked").options if out.name in o] == [made]  # listed once


@pytest.mark.parametrize("ranks, words", [("0, four", "'four' is not a whole number >= 0 or 'full'"),
                                          ("0, 999", "rank 999 is above full rank"),
                                          ("0,\u00b2", "'\u00b2' is not a whole number >= 0 or 'full'"),  # issue 67, F4:
                                          ("0,\u0661", "'\u0661' is not a whole number"),  # '²' was a ValueError
                                          (",".join(map(str, range(40))), "40 ranks given; give at most 32")])
def test_bad_ranks_are_said_in_one_line(app, held, ranks, words):
    at = open_view(app, calc_relax_source=SOURCE)
    others = len(charts(at))
    at.text_input(key="calc_relax_ranks").set_value(ranks).run()
    at.button(key="calc_relax_go").click().run()
    assert not at.exception
    assert any(words in e.value for e in at.error), [e.value for e in at.error]
    assert len(charts(at)) == others


def test_rank_labels_sit_neither_on_one_another_nor_on_the_line():
    """Ranks 1, 2, 4, 8 lie a few thousand parameters apart on an axis millions wide: their labels were one blot,
    and a label above a point the line rises into sat on the line."""
    from albert_lab.figures.parameters import label_side, rank_labels

    assert label_side(None, 1, 2) == "top left" and label_side(1, 2, None) == label_side(2, 1, None) == "top center"
    assert label_side(1, 2, 1) == "top center" and label_side(2, 1, 2) == "bottom center"  # a peak, a valley
    assert label_side(1, 2, 3) == "top left" and label_side(3, 2, 1) == "bottom left"  # a rise, a fall
    assert label_side(float("nan"), 2, 3) == "top left"  # a neighbour not measured is no neighbour
    xs = [0, 1e3, 2e3, 4e3, 8e3, 2e5, 4e5, 8e5, 1.6e6]  # rank 0 (pure ALBERT) ... 128
    ys = [0.13, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17, 0.17]  # down to rank 1, then up
    where = rank_labels(xs, ys, span=2e6, gap=0.06)
    assert where[0] == "top center" and where[1] == "bottom center" and where[2:5] == ["", "", ""]
    # pure ALBERT's point has its diamond, no label; still, the line from it decides its neighbour's side
    assert rank_labels(xs, ys, span=2e6, gap=0.06, labelled=[False] + [True] * 8)[:2] == ["", "bottom center"]
    assert where[5:] == ["top left", "top left", "top center", "top center"]  # far apart: every one labelled
    for side in ("top", "bottom"):  # labels on one side are at least the gap apart
        placed = [x for x, w in zip(xs, where) if w.startswith(side)]
        assert all(b - a >= 0.06 * 2e6 for a, b in pairwise(placed))
    assert rank_labels([0, 1e6], [float("nan"), 0.5], span=1e6) == ["", "top center"]  # not measured: no label


def tiny_sweep(source, **changes):
    """A finished sweep of `source` at ranks 0 and 2 beside a BERT of one layer: 4 steps of 8 pairs each."""
    from albert_lab.training.sweep import start_sweep
    from albert_lab.training.sweep_plan import SweepPlan, sweep_config

    plan = SweepPlan(**{"source": str(source), "ranks": ("0", "2"), "pairs": PAIRS, "layers": (1,), **changes})
    config = sweep_config(source, 4, corpus=CORPUS, batch_size=8, threads=1, log_every=2)
    return start_sweep(config, plan, foreground=True)


def test_a_sweep_draws_both_curves_beside_each_other(app, held, shipped):
    from albert_lab.training.sweep import read_sweep

    done = tiny_sweep(shipped / SOURCE)
    other = tiny_sweep(shipped / SOURCE, init="stepwise")
    at = open_view(app, calc_relax_source=SOURCE, calc_relax_ranks="0,2")
    [shown] = at.selectbox(key="calc_relax_sweep").options  # another init's sweep is not this view's
    assert shown.startswith(f"{done.id}: ranks 0,2, BERTs of 1 layers, 4 steps (succeeded)") and other.id not in shown
    import plotly.io

    figure = next(plotly.io.from_json(c.proto.spec) for c in charts(at) if "after uptraining" in c.proto.spec)
    names = {t.name for t in figure.data}
    assert {"relaxed, by rank", "pure ALBERT", "BERT, fewer layers", "source BERT", "at initialisation",
            "after uptraining"} <= names
    result = read_sweep(done.path)
    kl = next(t for t in figure.data if t.name == "relaxed, by rank" and t.xaxis == "x3" and t.line.dash == "solid")  # KL, after
    line = result.after[result.after.end.isin(["ALBERT", ""])].sort_values("parameters")
    y = np.frombuffer(base64.b64decode(kl.y["bdata"]), dtype=kl.y["dtype"]) if isinstance(kl.y, dict) else np.array(kl.y)
    assert list(y) == pytest.approx(list(line.kl)) and y.min() > 0  # the sweep's own numbers, trained away
    table = next(t.value for t in at.dataframe if "stage" in t.value)
    assert list(table.stage) == ["before"] * 4 + ["after"] * 4
    assert list(table.model[:4]) == ["ALBERT (rank 0)", "rank 2", "BERT L=1", "source BERT"]
    assert any("% of the source's" in m.value for m in at.markdown)  # the recovered shares, in words
    assert link_of(at)["calc_relax_sweep"] == done.id
    again = opened_by_link(link_of(at), "parameters")  # the link opens on the same sweep's two curves
    assert again.selectbox(key="calc_relax_sweep").value == done.id
    assert any("after uptraining" in c.proto.spec for c in charts(again))
    runs = goto(again, "training")  # one run of the queue, listed with the others
    assert not runs.exception and done.id in str([t.value for t in runs.dataframe]) + str([s.options for s in runs.selectbox])


def test_a_sweep_is_started_from_the_page_as_a_queued_run(app, held, shipped, monkeypatch):
    """The button says its estimate; the run it starts is a sweep of the view's ranks, owned by this browser."""
    import app.rooms.parameters.uptrained as uptrained
    from albert_lab.training import sweep

    monkeypatch.setattr(uptrained, "CORPUS", CORPUS)
    started = []
    real = sweep.start_sweep
    monkeypatch.setattr(sweep, "start_sweep", lambda config, plan, root, **kw: started.append(plan) or real(
        config, plan, root, foreground=True, **{k: v for k, v in kw.items() if k != "budget"}))
    at = open_view(app, calc_relax_source=SOURCE, calc_relax_ranks="0,2")
    assert not [s for s in at.selectbox if s.key == "calc_relax_sweep"]  # no sweep yet
    at.number_input(key="calc_relax_sweep_steps").set_value(3).run()
    button = at.button(key="calc_relax_sweep_go")
    assert button.label.startswith("Start the sweep (about ")
    button.click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    [plan] = started
    assert plan.ranks == ("0", "2") and plan.sharing == "all" and plan.init == "average"
    assert any("started" in s.value or "succeeded" in s.value for s in at.success)
    assert any("after uptraining" in c.proto.spec for c in charts(at.run()))
