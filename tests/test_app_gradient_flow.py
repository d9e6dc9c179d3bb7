"""The Gradient flow page (AppTest): its charts, their axes, and the pair loss a checkpoint was trained with."""


import json

import pandas as pd
from conftest import charts, goto, start, tiny_spec

from albert_lab.figures.gradient_flow import shared_sum_figure


def test_gradient_flow(app):
    at = goto(app, "gradient_flow")
    assert len(charts(at)) >= 3
    outside = at.dataframe[0].value
    assert {"embeddings", "E->H projection", "MLM head", "pair head"} <= set(outside.component)
    assert (outside.mean_abs > 0).all()
    import json

    shared = next(json.loads(c.proto.spec) for c in charts(at) if "summed over" in c.proto.spec)
    # which applications each sum covers ('from layer 1' before)
    assert {t["name"] for t in shared["data"]} == {f"{c}, shared block, applications 1-3" for c in ("attention", "FFN", "LayerNorm")}


def test_gradient_flow_says_when_the_pair_loss_runs_through_an_untrained_head(tmp_path, tokenizer, monkeypatch):
    """albert-none's SOP head was never trained: its gradients were plotted without a word,
    while the model card and Sentence pairs both say so."""
    from albert_lab.analysis.gradflow import default_objective
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    spec = tiny_spec(len(tokenizer), objective="none")
    save_checkpoint(build_model(spec, seed=0), tokenizer, spec, tmp_path / "albert-none", {"name": "albert-none"})
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(tmp_path))
    at = start("gradient_flow")
    assert at.selectbox(key="gf_objective").value == default_objective(load_checkpoint(tmp_path / "albert-none")) == "none"
    at.selectbox(key="gf_objective").set_value("sop").run()
    assert any("SOP head was never trained" in w.value for w in at.warning)
    at.selectbox(key="gf_objective").set_value("none").run()
    assert not any("never trained" in w.value for w in at.warning) and not at.exception


def test_gradient_flow_defaults_to_the_checkpoints_own_objective(app):
    """On an NSP checkpoint the page ran an SOP loss through the NSP head, with no word;
    the CLI defaults to the checkpoint's own objective."""
    at = goto(app, "gradient_flow")
    assert at.selectbox(key="gf_checkpoint").value == "albert-sop" and at.selectbox(key="gf_objective").value == "sop"
    at.selectbox(key="gf_checkpoint").set_value("bert-nsp").run()
    assert at.selectbox(key="gf_objective").value == "nsp" and not at.warning
    at.selectbox(key="gf_checkpoint").set_value("hub-albert").run()  # no card, no pair head: MLM alone
    assert at.selectbox(key="gf_objective").value == "none" and not at.error, [e.value for e in at.error]
    at.selectbox(key="gf_checkpoint").set_value("bert-nsp").run()
    at.selectbox(key="gf_objective").set_value("sop").run()  # asked for: computed, with a word
    assert any("trained for NSP, not SOP" in w.value for w in at.warning)


def test_the_page_starts_from_the_librarys_default_pair_loss(app, shipped):
    """The page's default and the library's (and so `albert-lab gradflow`'s) are one rule,
    analysis.gradflow.own_objective: the library's was the spec's, 'sop' for a hub ALBERT without its SOP head."""
    from albert_lab.analysis.gradflow import default_objective
    from albert_lab.checkpoint.load import load_checkpoint

    at = goto(app, "gradient_flow")
    for name in ("hub-albert", "bert-nsp", "albert-sop"):
        at.selectbox(key="gf_checkpoint").set_value(name).run()
        library = default_objective(load_checkpoint(shipped / name, device="cpu"))
        assert at.selectbox(key="gf_objective").value == library, name


def test_figures_have_unit_axis_titles_and_integer_layer_ticks(app):
    import json

    at = goto(app, "gradient_flow")
    for chart in charts(at):
        layout = json.loads(chart.proto.spec)["layout"]
        for axis in [v for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))]:
            title = axis.get("title", {}).get("text", "")
            assert title and title not in ("value", "variable", "mean_abs", "layer"), title
            if "layer" in title:
                assert axis.get("dtick") == 1
            if axis.get("type") == "log":
                assert axis.get("exponentformat") == "power"
        assert json.loads(chart.proto.config)["toImageButtonOptions"]["filename"].startswith("gradflow")


def test_shared_gradient_chart_says_what_it_sums_in_a_title_that_fits():
    frame = pd.DataFrame([dict(view="shared_sum", component=c, layer=1, applications="1-6", mean_abs=0.01, max_abs=0.1)
                          for c in ("attention", "FFN")])
    fig = shared_sum_figure(frame)
    assert "summed over applications" in fig.layout.title.text
    # 57 characters were cut at 1280 px in half the page (402 px); the app wraps them to what fits there
    from app.shell.look import title_chars, wrap_title

    text = fig.layout.title.text
    lines = wrap_title(fig, title_chars(0.5)).layout.title.text.split("<br>")
    assert " ".join(lines) == text and len(lines) == 2 and max(map(len, lines)) <= title_chars(0.5) == 50
    assert wrap_title(fig, title_chars(0.5)).layout.title.text.split("<br>") == lines  # wrapping again changes nothing
    assert fig.layout.yaxis.type == "log" and {x for bar in fig.data for x in bar.x} == {"attention", "FFN"}


def test_chart_titles_fit_a_phone(app):
    """At 390 px (a phone stacks columns: each chart is the main column's 358 px) the titles of Gradient flow and
    Sentence pairs were cut at both ends: 'albert-sop: |dL/dW| per layer application (solid: mean, dashed: max)'
    was not wrapped at all, fitting 1280 px. Every title line drawn fits a phone's width too."""
    from app.shell.look import PHONE_TITLE_CHARS

    for page in ("gradient_flow", "sentence_pairs"):
        at = goto(app, page)
        titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts(at)]
        assert titles, page
        for title in titles:
            lines = title.split("<br>")
            assert max(map(len, lines)) <= PHONE_TITLE_CHARS, (page, lines)


def test_shared_gradients_are_points_with_values_on_their_log_axis():
    """Bars on a log axis made 0.0018 look like nothing beside 0.013 (a bar's length there
    starts at an arbitrary floor)."""
    from albert_lab.figures.gradient_flow import shared_sum_figure

    frame = pd.DataFrame([dict(view="shared_sum", component=c, layer=1, applications="1-6", mean_abs=v, max_abs=0.1)
                          for c, v in (("attention", 0.0018), ("FFN", 0.013))])
    fig = shared_sum_figure(frame)
    assert all(t.type == "scatter" for t in fig.data)
    assert sorted(v for t in fig.data for v in t.text) == ["0.0018", "0.013"]


def test_gradients_are_computed_once_per_input_and_a_failure_leaves_no_stop_button(app, monkeypatch):
    """The page computes through app.shell.runner.run: a second visit with the same
    checkpoint files and inputs reuses the result; an error is shown without the progress
    bar's Stop button left behind."""
    import albert_lab.analysis.gradflow as gradflow
    from albert_lab.errors import AlbertLabError

    real, calls = gradflow.gradient_flow, []

    def counted(*args, **kwargs):
        calls.append(kwargs["progress"])
        return real(*args, **kwargs)

    monkeypatch.setattr(gradflow, "gradient_flow", counted)
    at = goto(app, "gradient_flow")
    at.run()
    assert len(calls) == 1 and len(charts(at)) >= 3 and not any(b.label == "Stop" for b in at.button)

    def fails(*args, **kwargs):
        kwargs["progress"](0.5, "backward, layer 2 of 3")
        raise AlbertLabError("no gradients today")

    monkeypatch.setattr(gradflow, "gradient_flow", fails)
    at.number_input(key="gf_seed").set_value(7).run()  # another input: computed afresh
    assert any("no gradients today" in e.value for e in at.error)
    assert not any(b.label == "Stop" for b in at.button) and not at.exception


def test_the_hidden_gradient_chart_draws_mean_and_max_in_their_own_colours_and_dashes():
    """The theme's colourway gave mean and max each other's shade in dark theme: both are fixed
    now, mean solid and max dashed, as on the |dL/dW| chart."""
    from albert_lab.figures.gradient_flow import hidden_grad_figure
    from albert_lab.figures.look import SERIES_COLOURS

    frame = pd.DataFrame([dict(view="hidden", component="hidden", layer=layer, applications="", mean_abs=0.01 * (layer + 1),
                               max_abs=0.2 * (layer + 1)) for layer in range(4)])
    traces = {t.name: t for t in hidden_grad_figure(frame).data}
    assert set(traces) == {"mean", "max"}
    assert (traces["mean"].line.color, traces["mean"].line.dash) == (SERIES_COLOURS[0], "solid")
    assert (traces["max"].line.color, traces["max"].line.dash) == (SERIES_COLOURS[1], "dash")


def test_runs_without_a_snapshot_are_named_not_silently_left_out(app):
    """A run without a snapshot yet (a 4-step run cancelled at step 2, say) was missing from 'Over a training run'
    without a word."""
    from conftest import tiny_spec

    from albert_lab.training.config import TrainConfig
    from albert_lab.training.jobs import create_run
    from albert_lab.training.runs import update_run

    run_dir, _ = create_run(TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000,
                                        max_steps=4, max_seq_len=64, name="short"))
    update_run(run_dir, status="cancelled", step=2)
    at = goto(app, "gradient_flow")
    assert any(c.value.startswith("Not listed, no snapshot recorded: short.") for c in at.caption)


def test_the_seed_takes_its_bounds_and_default_from_the_analysis_record(app):
    """The page capped the seed at 10,000 while `albert-lab gradflow --seed` takes 0..2**32-1:
    the widget now reads the record's option row, and its help says the bound."""
    from albert_lab.analysis.registry import GRADFLOW
    from albert_lab.limits import MAX_SEED

    at = goto(app, "gradient_flow")
    seed, option = at.number_input(key="gf_seed"), GRADFLOW.option("seed")
    assert (seed.min, seed.max, seed.value) == (option.bounds.low, option.bounds.high, option.default) == (0, MAX_SEED, 0)
    assert "4,294,967,295" in seed.help
    at = seed.set_value(MAX_SEED).run()  # the top of the range computes, as on the command line
    assert not at.exception and not at.error and at.dataframe, [e.value for e in at.error]


def test_the_per_application_chart_draws_max_dashed_as_its_title_says():
    """The title said 'dashed: max' while plotly's default dash order drew max dotted."""
    import pandas as pd

    from albert_lab.figures.gradient_flow import gradflow_figure

    frame = pd.DataFrame([dict(view="per_application", layer=layer, component=c, mean_abs=0.1, max_abs=1.0)
                          for layer in (1, 2) for c in ("attention", "FFN")])
    fig = gradflow_figure(frame, "m")
    dashes = {t.name.split(", ")[1]: t.line.dash for t in fig.data}
    assert dashes == {"mean": "solid", "max": "dash"} and "dashed: max" in fig.layout.title.text
