"""Bugs found walking through the app as a new user (issue: walk-through before release)."""

import json
import shutil

import pandas as pd
import pytest
import streamlit as st
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from app.figures import shared_sum_figure
from app.reapply_figures import attention_figure
from app.text import fmt_tokens

MAIN = str(ROOT / "app" / "main.py")


def start(page: str) -> AppTest:
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page(f"../pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_short_run_shows_its_tokens_and_its_single_points(tmp_path, monkeypatch):
    """A 5-step run logs one training row: the loss line must still be drawn (markers),
    and 1,501 tokens are not '0.00M'."""
    run = tmp_path / "runs" / "20261122-000000-tiny-1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "id": run.name, "status": "succeeded", "created": 1.0, "pid": 1, "step": 5, "total_steps": 5,
        "config": {"objective": "sop", "name": "tiny", "max_steps": 5}, "spec_label": "ALBERT tiny", "message": ""}))
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in (
        {"kind": "train", "step": 1, "loss": 9.7, "mlm_loss": 9.0, "pair_loss": 0.69, "mlm_acc": 0.0, "pair_acc": 0.44,
         "tokens": 1501, "tokens_per_s": 5589.0, "run_tokens_per_s": 5589.0, "eta_s": 1.0, "time": 1.0},
        {"kind": "eval", "step": 5, "eval_mlm_acc": 0.0, "eval_sop_acc": 0.51, "time": 2.0})) + "\n")
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    at = start("training")
    assert any(m.label == "Tokens seen" and m.value == "1,501" for m in at.metric)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    loss = next(s for s in specs if "Training loss" in json.dumps(s["layout"].get("title", "")))
    assert all("markers" in trace["mode"] for trace in loss["data"])
    compare = next(s for s in specs if "by run" in json.dumps(s["layout"].get("title", "")))
    assert all("markers" in trace["mode"] for trace in compare["data"])


def test_fmt_tokens():
    assert fmt_tokens(1501) == "1,501"
    assert fmt_tokens(22_434_249) == "22.43M"


def test_table5_says_why_an_old_results_file_shows_nothing(shipped, tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    shutil.copytree(shipped, folder)
    (folder / "results.json").write_text(json.dumps([{"checkpoint": "albert-sop", "sop_acc": 0.9, "nsp_acc": 0.5}]))
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(folder))
    at = start("sentence_pairs")
    assert any("older version" in i.value and "albert-lab evaluate" in i.value for i in at.info)


def test_attention_panels_share_one_set_of_row_labels():
    """The right panel's token labels ran into the left panel."""
    tokens = ["[CLS]", "a", "b"]
    maps = pd.DataFrame([dict(checkpoint="m", application=1, head=0, inner=0, query=q, key=k, key_token=tokens[k],
                              weight=1 / 3, norm_weighted=0.5) for q in range(3) for k in range(3)])
    fig = attention_figure(maps, 1, 0)
    assert fig.layout.yaxis2.matches == "y" and fig.layout.yaxis2.showticklabels is False


def test_shared_gradient_chart_says_what_it_sums_in_a_title_that_fits():
    frame = pd.DataFrame([dict(view="shared_sum", component=c, layer=1, applications="1-6", mean_abs=0.01, max_abs=0.1)
                          for c in ("attention", "FFN")])
    fig = shared_sum_figure(frame)
    assert "summed over applications" in fig.layout.title.text and len(fig.layout.title.text) <= 60  # half a page
    assert fig.layout.yaxis.type == "log" and {x for bar in fig.data for x in bar.x} == {"attention", "FFN"}


@pytest.fixture(autouse=True)
def _no_leftover_caches():
    yield
    st.cache_data.clear()


def test_classroom_preset_labels_fit_the_sidebar():
    """'Figure 1: ALBERT vs BERT oscillation' was cut to 'Figure 1: ALBERT vs BERT os...'."""
    from app.presets import PRESET_HELP, PRESETS

    assert all(len(label) <= 26 for label, _, _ in PRESETS)
    assert all(stem in PRESET_HELP for _, stem, _ in PRESETS)


def test_attention_of_one_cached_model_from_two_threads_at_once(shipped):
    """Two sessions (or a rerun overlapping the run it replaces) on the shared-layer page
    use the same cached model: each thread's hooks caught the other's q/k/v ('The size of
    tensor a (19) must match the size of tensor b (128)')."""
    import threading

    from albert_lab.analysis.attention import attention_entropy
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(shipped / "albert-sop", device="cpu")
    texts = {"long": ["The Nile is a river in Africa. " * 12], "short": ["The river flows through the old town."]}
    alone = {name: attention_entropy(bundle, t, 2) for name, t in texts.items()}
    results, errors, start = {}, [], threading.Barrier(2)

    def work(name: str) -> None:
        start.wait()
        try:
            for _ in range(40):  # a tiny model: many rounds, so that the two threads overlap
                results[name] = attention_entropy(bundle, texts[name], 2)
        except Exception as err:  # pragma: no cover - the failure being tested
            errors.append(repr(err))

    threads = [threading.Thread(target=work, args=(name,)) for name in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name in texts:
        pd.testing.assert_frame_equal(results[name], alone[name])


def test_cost_curves_use_a_log_axis_only_where_the_cost_spans_orders_of_magnitude():
    """FLOPs per token against E change by under 1%: on a log axis clipped to the data that
    looked like a steep rise, and the four identical strategies hid behind one line."""
    from albert_lab.params import sweep
    from albert_lab.spec import PRESETS
    from app.figures import sweep_figure

    frame = pd.DataFrame(sweep(PRESETS["albert-base"], "embedding_size", [32, 128, 512, 1024]))
    flops = sweep_figure(frame, "embedding_size", "E (embedding)", "flops_per_token")
    assert flops.layout.yaxis.type != "log" and flops.layout.yaxis.rangemode == "tozero"
    assert "coincide" in flops.layout.title.text and "(log scale)" not in flops.layout.yaxis.title.text
    params = sweep_figure(frame, "embedding_size", "E (embedding)", "params")
    assert params.layout.yaxis.type == "log" and "coincide" not in params.layout.title.text
    assert len(params.layout.title.text.split("<br>")[0]) <= 40  # fits half a page


def test_an_iso_time_reads_to_the_minute():
    from app.text import fmt_value

    assert fmt_value("created", "2026-11-23T12:38:29+0000") == "2026-11-23 12:38 UTC"
    assert fmt_value("created", "2026-11-23T12:38:29-05:30") == "2026-11-23 12:38 UTC-05:30"
    assert fmt_value("note", "at 12:38:29 it stopped") == "at 12:38:29 it stopped"


def test_figures_of_a_block_applied_24_times_stay_readable():
    """At k = 4 the top-k heatmap had 25 columns of words and the axes ticks at -1 and 25."""
    from app.reapply_figures import cka_figure, lens_figure, top_k_figure

    apps = range(25)
    top = pd.DataFrame([dict(checkpoint="m", application=a, depth_L=6, rank=r, token=f"t{a}{r}", probability=0.5 / r,
                             watched="x") for a in apps for r in (1, 2, 3)])
    fig = top_k_figure(top, "m")
    worded = [a for a in apps if fig.data[0].text[0][a]]
    # every application worded (every sixth was too few to follow a word; issue 26), in smaller type
    assert worded == list(apps) and list(fig.layout.xaxis.range) == [-0.5, 24.5] and fig.data[0].textfont.size == 9
    lens = pd.DataFrame([dict(checkpoint="m", family="albert", application=a, depth_L=6, mlm_accuracy=0.1, nll=5.0)
                         for a in apps])
    fig = lens_figure(lens)
    assert list(fig.layout.xaxis.range) == [-0.5, 24.5] and fig.layout.yaxis.tickformat == ".0%"
    cka = pd.DataFrame([dict(application_x=i, application_y=j, cka=0.5, checkpoint_x="m", checkpoint_y="m", unit="token",
                             n=100) for i in apps for j in apps])
    assert not cka_figure(cka).data[0].texttemplate
    small = cka[(cka.application_x < 7) & (cka.application_y < 7)]
    assert cka_figure(small).data[0].texttemplate
