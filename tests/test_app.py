"""Every page through Streamlit's AppTest, on tiny checkpoints: what it shows, uploads,
and bad input shown as messages (never exceptions)."""

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import streamlit as st
from conftest import ROOT, tiny_spec
from streamlit.testing.v1 import AppTest

from albert_lab.params import count
from albert_lab.spec import PRESETS
from albert_lab.training.runs import list_runs
from app.text import si

MAIN = str(ROOT / "app" / "main.py")
PAIRS_CSV = (b"sentence_a,sentence_b,label\n"
             b"The Nile is a river in Africa.,It flows north into the Mediterranean Sea.,0\n"
             b"It flows north into the Mediterranean Sea.,The Nile is a river in Africa.,1\n"
             b",A row without its first sentence.,0\n")


@pytest.fixture
def app(shipped, monkeypatch):
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"../pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def emoji_codes(at: AppTest) -> list[str]:
    """Text the browser reads as emoji codes (Streamlit's own test, ':38:' in '12:38:29'
    included): a cell or paragraph with one is drawn only after the emoji plugin (260 kB)
    has been fetched."""
    pattern = re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:")
    texts = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "success") for e in getattr(at, kind)]
    texts += [str(v) for t in at.table for v in t.value.to_numpy().ravel()]
    return [m for text in texts for m in pattern.findall(text)]


def test_model_card(app):
    assert app.title[0].value == "Model card"
    assert app.sidebar.multiselect(key="picked").value == ["albert-sop", "hub-albert", "bert-nsp"]  # SOP first
    expected = count(tiny_spec(1000, num_layers=3)).total
    assert app.metric[0].value == f"{expected / 1e6:.2f}M"
    assert not charts(app) and not app.warning  # no plotly.js on the landing page: the chart is SVG (app/svg.py)
    svg = next(m.value for m in app.markdown if m.value.startswith("<svg"))
    report = count(tiny_spec(1000, num_layers=3))
    for name, part in report.by_component().items():  # every component, held and applied, named on hover
        assert html.escape(f"{name}, held in memory: {part['unique']:,} parameters") in svg
        assert html.escape(f"{name}, applied per forward pass: {part['applied']:,} parameters") in svg
    assert not emoji_codes(app)  # the browser would hold those cells back until it has its emoji plugin
    fields = [f for t in app.table if "field" in t.value for f in t.value["field"]]
    assert "hidden size (H)" in fields and "saved" in fields and not [f for f in fields if "_" in f]  # words, not keys
    metrics = next(t.value for t in app.table if "metric" in t.value)
    assert list(metrics.metric) == ["SOP, interior pairs (held-out)"]
    app.selectbox(key="card_checkpoint").set_value("hub-albert").run()
    assert any("SOP head weights are missing" in w.value for w in app.warning)
    tables = [t.value for t in app.table]
    assert any((t["status"] == "missing").any() for t in tables if "status" in t)


def test_parameters(app):
    at = goto(app, "parameters")
    assert at.metric[0].value == "11,683,584"  # albert-base, the default preset
    frames = [d.value for d in at.dataframe]
    table1 = next(f for f in frames if "paper speedup" in f)
    assert table1.set_index("model").loc["albert-base", "exact params"] == 11_683_584
    assert len(charts(at)) == 3  # calculator bars, params curve, FLOPs curve
    at.number_input(key="groups-albert-base").set_value(5).run()
    assert any("Groups (N): 5 must divide L (layers) 12" in e.value for e in at.error)  # the calculator's names


def test_parameters_flops_read_at_both_ends_of_the_range(app):
    """'669,805.3M' and '0.0M' before: 3 significant digits with an SI suffix now."""
    at = goto(app, "parameters")
    for key, value in (("l-albert-base", 96), ("ffn-albert-base", 65536), ("calc_seq", 8192)):
        at.number_input(key=key).set_value(value).run()
    spec = PRESETS["albert-base"].replace(num_layers=96, ffn_size=65536)
    assert at.metric[3].value == si(count(spec, 8192).flops_per_token) == "22.2G"  # was "22,196.5M"


def test_oscillation(app):
    at = goto(app, "oscillation")
    assert len(charts(at)) == 3  # curves, roughness bars, similarity heatmap
    verdicts = [m.value for m in at.markdown if m.value.startswith("**") and "roughness" in m.value]
    assert len(verdicts) == 3 and all(("oscillating" in v) or ("converging" in v) for v in verdicts)
    at.radio(key="osc_input").set_value("My text").run()
    at.text_area(key="osc_text").set_value("   ").run()
    assert not at.exception and any("no text" in e.value for e in at.error)


def test_gradient_flow_says_when_the_pair_loss_runs_through_an_untrained_head(tmp_path, tokenizer, monkeypatch):
    """albert-none's SOP head was never trained: its gradients were plotted without a word,
    while the model card and Sentence pairs both say so."""
    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    spec = tiny_spec(len(tokenizer), objective="none")
    save_checkpoint(build_model(spec, seed=0), tokenizer, spec, tmp_path / "albert-none", {"name": "albert-none"})
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(tmp_path))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = goto(AppTest.from_file(MAIN, default_timeout=120).run(), "gradient_flow")
    at.selectbox(key="gf_objective").set_value("sop").run()
    assert any("SOP head was never trained" in w.value for w in at.warning)
    at.selectbox(key="gf_objective").set_value("none").run()
    assert not any("never trained" in w.value for w in at.warning) and not at.exception


def test_gradient_flow(app):
    at = goto(app, "gradient_flow")
    assert len(charts(at)) >= 3
    outside = at.dataframe[0].value
    assert {"embeddings", "E->H projection", "MLM head", "pair head"} <= set(outside.component)
    assert (outside.mean_abs > 0).all()
    import json

    shared = next(json.loads(c.proto.spec) for c in charts(at) if "summed over applications" in c.proto.spec)
    # which applications each sum covers ('from layer 1' before)
    assert {t["name"] for t in shared["data"]} == {f"{c}, shared block, applications 1-3" for c in ("attention", "FFN", "LayerNorm")}


def test_sentence_pairs_upload_and_bad_files(app):
    at = goto(app, "sentence_pairs")
    typed = at.dataframe[0].value
    assert set(typed.checkpoint) == {"albert-sop", "bert-nsp", "hub-albert"}
    assert typed[typed.checkpoint == "hub-albert"].p_ab.isna().all()
    assert any("not scored: pair head missing" in w.value for w in at.warning)
    import json

    bars = json.loads(charts(at)[0].proto.spec)["data"]  # one colour per order, whatever the theme's colorway
    layout = json.loads(charts(at)[0].proto.spec)["layout"]  # 'chance' in the right margin, not on the first bar
    (label,) = [a for a in layout["annotations"] if a["text"] == "chance"]
    assert label["x"] >= 1 and label["xanchor"] == "left" and layout["margin"]["r"] >= 60
    assert {b["name"]: b["marker"]["color"] for b in bars} == {"A -> B (as typed)": "#4c78a8", "B -> A (swapped)": "#f58518"}
    at.file_uploader(key="pairs_file").set_value(("pairs.csv", PAIRS_CSV, "text/csv"))
    at.run()
    assert any("row 4: sentence_a is empty; skipped" in w.value for w in at.warning)
    summary = next(d.value for d in at.dataframe if "accuracy" in d.value)
    assert summary.set_index("checkpoint").loc["albert-sop", "labelled"] == 2
    assert "hub-albert" not in set(summary.checkpoint)  # not scored (its warning says why): no row of blanks
    scores = next(d.value for d in at.dataframe if "p_ab" in d.value and len(d.value) == 6)
    scored = scores[scores.checkpoint != "hub-albert"]
    assert scored.p_ab.between(0, 1).all() and scored.p_ba.between(0, 1).all()
    assert [h.value for h in at.subheader if "scored" in h.value] == ["2 pairs scored from pairs.csv"]  # which file
    at.file_uploader(key="pairs_file").set_value(("bad.csv", b"sentence_a;sentence_b\nx;y\n", "text/csv"))
    at.run()
    assert any("semicolons as delimiter" in e.value for e in at.error) and not at.exception
    assert all(e.value.count("bad.csv") == 1 for e in at.error)  # was 'reading bad.csv: bad.csv: ...'
    at.file_uploader(key="pairs_file").set_value(("latin.csv", b"sentence_a,sentence_b\ncaf\xe9,x\n", "text/csv"))
    at.run()
    assert any("not UTF-8" in e.value for e in at.error)


def test_a_pair_the_vocabulary_cannot_read_is_scored_with_a_warning(app):
    """Chinese for an English SentencePiece is '▁' and one unknown piece per side: its
    P(A->B) = P(B->A) means nothing, and the page said nothing."""
    at = goto(app, "sentence_pairs")
    assert not any("cannot read" in w.value for w in at.warning)  # the built-in English pair
    at.text_area(key="pair_a").set_value("尼罗河是非洲东北部的一条主要河流。")
    at.text_area(key="pair_b").set_value("它流入地中海。")
    at.button[0].click().run()
    (warning,) = [w.value for w in at.warning if "cannot read" in w.value]
    assert warning.startswith("1 pair (row 1) is mostly text the models cannot read: up to 50% of the pieces")


def test_typed_text_the_vocabulary_cannot_read_gets_a_warning(app):
    """Emoji on the Shared layer page gave a flat 0% accuracy with no word of why."""
    for page, radio, area in (("oscillation", "osc_input", "osc_text"), ("shared_block", "sb_input", "sb_text")):
        at = goto(app, page)
        at.radio(key=radio).set_value("My text").run()
        assert not any("unknown to" in w.value for w in at.warning)  # the English example
        at.text_area(key=area).set_value("🍕🍕🍕 🍕🍕").run()
        assert any("of this text's pieces are unknown to albert-sop's vocabulary" in w.value for w in at.warning), page


def test_training_form_and_live_run(app, small_corpus):
    at = goto(app, "training")
    at.number_input(key="tr_lr").set_value(0.0)
    next(b for b in at.button if b.label == "Start training").click().run()
    assert any("lr: learning rate must be positive" in e.value for e in at.error)
    text = "\n\n".join(" ".join(d.segments) for d in small_corpus.train[:80])
    corpus = ("corpus.txt", text.encode(), "text/plain")
    at.selectbox(key="tr_corpus").set_value("upload a .txt / .jsonl file")
    at.file_uploader(key="tr_upload").set_value(corpus)
    for key, value in (("tr_lr", 0.003), ("tr_steps", 6), ("tr_batch", 4), ("tr_vocab", 100), ("tr_seq", 64)):
        at.number_input(key=key).set_value(value)
    for key, value in (("tr_h", 32), ("tr_l", 2), ("tr_heads", 2), ("tr_e", 16)):
        at.number_input(key=key).set_value(value)
    next(b for b in at.button if b.label == "Start training").click().run()
    assert not at.error, [e.value for e in at.error]
    assert any("started" in s.value and "a vocabulary of 100 pieces" in s.value for s in at.success)
    assert any("warm-up (50 steps) is as long as the run (6)" in i.value for i in at.info)  # its lr never peaks
    (run,) = list_runs(Path(__import__("os").environ["ALBERT_LAB_RUNS"]))
    spec = run.config["spec"]  # the run trains what the form showed
    assert (spec["hidden_size"], spec["num_layers"], spec["num_heads"], spec["embedding_size"]) == (32, 2, 2, 16)
    assert at.session_state["watch_select"] == run.id  # the Runs tab follows the new run
    deadline = time.time() + 120
    while time.time() < deadline and any(r.active for r in list_runs(Path(__import__("os").environ["ALBERT_LAB_RUNS"]))):
        time.sleep(0.5)
    at.run()
    assert any(":material/check_circle:" in m.value and "succeeded" in m.value for m in at.markdown)
    assert any("run:" in c.value for c in at.caption)  # now selectable in the sidebar
    import json

    loss = next(json.loads(c.proto.spec) for c in charts(at) if "Training loss" in c.proto.spec)
    # names in words ('mlm_loss' before), colours that do not swap with the theme's colorway
    assert {t["name"]: t["line"]["color"] for t in loss["data"]} == {"total": "#4c78a8", "MLM": "#f58518",
                                                                      "pair (SOP or NSP)": "#54a24b"}


def test_depth_lab(app):
    at = goto(app, "depth_lab")
    assert len(charts(at)) == 4
    at.multiselect(key="dl_variants").set_value(["none", "layernorm"]).run()
    assert not at.exception and len(charts(at)) == 4


def test_path_field_refuses_folders_outside_the_allowed_roots(app):
    app.sidebar.text_input(key="add_source").set_value("/etc")
    app.sidebar.button(key="add_button").click().run()
    assert any("outside the folders the app may read" in e.value for e in app.error)
    assert not app.exception


def test_adding_a_listed_checkpoint_picks_it_instead_of_listing_it_twice(app, shipped):
    """Two entries of one name merged both models' rows in every analysis (on Oscillation
    albert-sop's line ran from layer 6 back to layer 1)."""
    before = app.sidebar.multiselect(key="picked").value
    for text in (f"{shipped / 'albert-sop'}/", "albert-sop"):  # its folder, and its name alone
        app.sidebar.text_input(key="add_source").set_value(text)
        app.sidebar.button(key="add_button").click().run()
        assert not app.exception and not app.error, [e.value for e in app.error]
        assert app.sidebar.multiselect(key="picked").value == before
        assert [t.value for t in app.toast] == ["albert-sop is already listed; it is picked."]


def test_a_typed_root_folder_name_is_a_folder_not_a_hub_id(app):
    """'runs' (the field invites folders inside runs/) was taken for a hub id, wherever the
    app was started; now it is looked for where the app's runs are."""
    runs = Path(os.environ["ALBERT_LAB_RUNS"])
    runs.mkdir(parents=True, exist_ok=True)
    app.sidebar.text_input(key="add_source").set_value(runs.name)
    app.sidebar.button(key="add_button").click().run()
    (error,) = [e.value for e in app.error]
    assert "no config.json" in error and "hub" not in error


# ---- issue #14: the oscillation page's words agree with its numbers ------------------------
def test_roughness_calls_a_steady_decay_smoother_than_a_zigzag():
    import pandas as pd

    from albert_lab.analysis.oscillation import verdict

    # the shipped models' curves: ALBERT decays steadily, BERT goes down and up
    albert = [12.96, 5.77, 4.39, 3.62, 3.06, 2.70]
    bert = [7.78, 6.03, 5.80, 6.74, 6.86, 8.14]
    frame = pd.DataFrame([dict(checkpoint=name, layer=i + 1, l2=v, angle_deg=10.0)
                          for name, curve in (("albert", albert), ("bert", bert)) for i, v in enumerate(curve)])
    rough = verdict(frame).set_index("checkpoint").roughness
    assert rough["albert"] < rough["bert"]
    assert rough["bert"] == pytest.approx((0.23 + 0.94 + 0.12 + 1.28 - (8.14 - 6.03)) / (0.23 + 0.94 + 0.12 + 1.28))
    line = pd.DataFrame([dict(checkpoint="line", layer=i + 1, l2=10.0 - i, angle_deg=1.0) for i in range(6)])
    assert verdict(line).roughness.iloc[0] == pytest.approx(0.0)


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
    assert rows.roughness["albert-nsp"] == pytest.approx(0.04 / 2.97, abs=1e-3)  # only its +0.02 is undone
    assert rows.roughness["albert-nsp"] < rows.roughness["bert-nsp"]
    assert rows.verdict["bert-nsp"].startswith("oscillating") and "fall steadily from layer to layer" in rows.verdict["albert-nsp"]


def test_oscillation_page_names_the_smoother_model_from_its_own_numbers(app):
    at = goto(app, "oscillation")
    rough = {}
    for m in at.markdown:
        if m.value.startswith("**") and "roughness" in m.value:
            name, rest = m.value[2:].split("**", 1)
            rough[name] = float(rest.split("roughness ")[1].split(" ")[0])
    sentence = next(m.value for m in at.markdown if m.value.startswith("Smoothest to roughest"))
    order = sorted(rough, key=rough.get)
    positions = [sentence.index(f"{name} (") for name in order]
    assert positions == sorted(positions), (sentence, rough)
    assert "lower is smoother" in next(m.value for m in at.markdown if "roughness" in m.value)


# ---- issue #14: the launcher says the port it starts on; the favicon is local ---------------
@pytest.mark.parametrize("argv, port", [(["app"], 8501), (["app", "--port", "9100"], 9100),
                                        (["app", "--server.port", "9000"], 9000),
                                        (["app", "--server.port=9001", "--server.headless", "true"], 9001)])
def test_app_launcher_prints_the_port_it_starts(argv, port, monkeypatch, capsys):
    import os

    from albert_lab import cli

    calls = []
    monkeypatch.setattr(os, "chdir", lambda path: None)
    monkeypatch.setattr(os, "execve", lambda exe, command, env: calls.append(command))
    assert cli.main(argv) == 0
    assert f"http://localhost:{port}" in capsys.readouterr().err
    command = calls[0]
    assert command.count("--server.port") == 1 and command[command.index("--server.port") + 1] == str(port)
    assert command[1:4] == ["-m", "app.serve", "run"] and command[4].endswith("main.py")  # streamlit run, imports warming


def test_the_server_entry_point_imports_the_model_code_then_is_streamlit_run():
    """app.serve imports what the pages need, then hands its command line to streamlit's:
    the URL the server prints opens on a page that does not wait for imports. In a fresh
    interpreter, so that what is imported is the entry point's doing."""
    probe = ("import runpy, sys\n"
             "import streamlit.web.cli as cli\n"
             "cli.main = lambda prog_name: print(prog_name, sys.argv[1:], 'torch' in sys.modules,"
             " 'albert_lab.checkpoint.load' in sys.modules, 'plotly.express' in sys.modules)\n"
             "sys.argv = ['serve', 'run', 'app/main.py', '--server.port', '8600']\n"
             "runpy.run_module('app.serve', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "streamlit ['run', 'app/main.py', '--server.port', '8600'] True True True"
    assert "importing torch and transformers" in done.stderr


def test_the_model_card_draws_without_importing_torch():
    """With a CPU-only torch (the pinned wheel), the landing page needs no torch: under
    `streamlit run app/main.py` it draws while the model code imports in the background."""
    probe = ("import sys\n"
             "from streamlit.testing.v1 import AppTest\n"
             "import app.ui as ui\n"
             "ui._WARMING = True  # no background import: what is imported is the page's doing\n"
             "at = AppTest.from_file('app/main.py', default_timeout=60).run()\n"
             "print(not at.exception, [t.value for t in at.title], 'torch' in sys.modules,"
             " [s.options for s in at.sidebar.selectbox if s.label == 'Device'])\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().split("\n")[-1] == "True ['Model card'] False [['auto', 'cpu']]"


def test_a_cpu_only_torch_is_known_from_its_build_files():
    import torch

    from albert_lab.devices import available_devices
    from albert_lab.torch_build import cpu_only, known_devices

    expected = torch.version.cuda is None and torch.version.hip is None and sys.platform != "darwin"
    assert cpu_only() is expected
    assert known_devices() in (None, available_devices())


def test_the_app_computes_on_one_thread_while_a_run_trains(monkeypatch):
    import torch

    from app import ui

    threads = torch.get_num_threads()
    try:
        monkeypatch.setattr(ui, "active_run", lambda: True)
        torch.set_num_threads(2)
        ui.use_threads(wait=False)
        assert torch.get_num_threads() == 1
        monkeypatch.setattr(ui, "active_run", lambda: False)
        ui.use_threads()
        assert torch.get_num_threads() == max(1, os.cpu_count() or 1)
    finally:
        torch.set_num_threads(threads)


def test_favicon_is_drawn_locally():
    """The page icon is one emoji character, which the browser draws itself; a
    ':material/...' icon or an image address is fetched from the network on every load."""
    import unicodedata

    from app import ui

    assert len(ui.PAGE_ICON) == 1 and unicodedata.category(ui.PAGE_ICON) == "So"


# ---- issue #14: the parameters calculator keeps its results when H and heads disagree ------
def test_parameters_h_steps_by_heads_and_snaps_invalid_values(app):
    at = goto(app, "parameters")
    at.number_input(key="heads-albert-base").set_value(12).run()
    assert at.number_input(key="h-albert-base").step == 12  # 768 -> 780, still a multiple of 12
    at.number_input(key="h-albert-base").set_value(800).run()  # typed: not a multiple of 12
    assert not at.error and not at.exception
    assert any("H = 800 is not a multiple of the 12 heads" in w.value and "H = 804" in w.value for w in at.warning)
    assert at.metric[0].value.replace(",", "").isdigit() and len(charts(at)) == 3


def test_parameters_bert_shows_e_equal_h_and_no_groups(app):
    at = goto(app, "parameters")
    at.selectbox(key="calc_preset").set_value("bert-base").run()
    e_field = next(n for n in at.number_input if n.label.startswith("E (embedding)"))
    assert e_field.disabled and e_field.value == 768
    assert not [n for n in at.number_input if n.label.startswith("Groups")]
    at.number_input(key="h-bert-base").set_value(1024).run()
    e_field = next(n for n in at.number_input if n.label.startswith("E (embedding)"))
    assert e_field.value == 1024 and not at.error


# ---- issue #14: the depth lab draws its first view at once; diverged models say so ----------
def _figure_names(at: AppTest) -> set[str]:
    import json

    return {trace.get("name", "") for c in charts(at) for trace in json.loads(c.proto.spec)["data"]}


def test_depth_lab_first_view_trains_nothing(app, monkeypatch):
    import albert_lab.analysis.depth as depth

    def refuse(*args, **kwargs):
        raise AssertionError("the default view should come from app/depth_default.json")

    monkeypatch.setattr(depth, "train_disc", refuse)
    start = time.perf_counter()
    at = goto(app, "depth_lab")
    assert not at.error and len(charts(at)) == 4
    assert time.perf_counter() - start < 10
    assert "MLP depth 16 (plain)" in _figure_names(at)


def test_shipped_depth_default_matches_a_fresh_run():
    import torch

    from albert_lab.analysis.depth import train_disc
    from app.depth_cache import default_configs, precomputed

    cfg = next(c for c in default_configs() if c.residual)  # the fastest of the three
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        history, flow = train_disc(cfg)
    finally:
        torch.set_num_threads(threads)
    shipped_history, shipped_flow = precomputed(cfg)
    assert list(history.step) == list(shipped_history.step)
    # At lr 0.1 the run is chaotic: float rounding that differs between CPUs (AVX-512 on one
    # machine, AVX2 on another) is amplified after ~100 steps. Until then the two runs agree
    # to float precision; afterwards both must have learned equally well.
    early = history.step <= 100
    assert history.loss[early].to_numpy() == pytest.approx(shipped_history.loss[early].to_numpy(), rel=1e-4)
    early_flow = flow.step <= 100
    assert flow.mean_abs[early_flow].to_numpy() == pytest.approx(shipped_flow.mean_abs[early_flow].to_numpy(), rel=1e-3)
    late_fresh, late_shipped = history.loss.tail(10).mean(), shipped_history.loss.tail(10).mean()
    assert late_fresh < 0.5 * history.loss.iloc[0] and late_fresh == pytest.approx(late_shipped, rel=0.3)


def test_depth_lab_marks_a_diverged_model_instead_of_dropping_it(app):
    at = goto(app, "depth_lab")
    at.multiselect(key="dl_variants").set_value(["none", "batchnorm_before"])
    at.number_input(key="dl_std").set_value(2.0)
    at.slider(key="dl_steps").set_value(50).run()
    assert not at.exception and not at.error
    assert any("MLP depth 16 (plain) diverged at step" in w.value for w in at.warning)
    names = _figure_names(at)
    assert any(n.startswith("MLP depth 16 (plain) (diverged at step") for n in names), names
    assert "MLP depth 16 + batchnorm before" in names  # the model that trains keeps its plain name
    assert at.selectbox(key="dl_heat").value == "MLP depth 16 + batchnorm before"  # the heatmap opens on one that trained


def test_divergence_cuts_the_trace_at_the_first_bad_step():
    import pandas as pd

    from app.figures import cut_at_divergence, divergence, legend_names

    history = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "step": [1, 10, 20, 23, 1, 10],
                            "loss": [0.7, 5e4, float("nan"), float("nan"), 0.7, 0.6]})
    assert divergence(history) == {"a": 10}
    assert list(cut_at_divergence(history, {"a": 10}).step) == [1, 1, 10]
    assert legend_names(["a", "b"], {"a": 10}) == {"a": "a (diverged at step 10)", "b": "b"}


# ---- issue #14: one look everywhere; the link reproduces the view --------------------------
def test_numbers_read_as_people_write_them():
    from app.text import fmt_value

    assert fmt_value("nsp_pairs", 515.0) == "515" and fmt_value("tokens", 25637385) == "25,637,385"
    assert fmt_value("wall_time_s", 3565.4) == "59 min" and fmt_value("sop_acc", 0.91456) == "0.9146"
    assert fmt_value("layer_norm_eps", 1e-12) == "1e-12" and fmt_value("family", "albert") == "albert"


def test_a_checkpoint_keeps_its_colour_whatever_else_is_selected():
    import pandas as pd

    from app.figures import colour_for, oscillation_figure
    from app.reapply_figures import extrapolation_figure, lens_figure

    def frame(names):
        return pd.DataFrame([dict(checkpoint=n, family="bert" if "bert-" in n else "albert", layer=layer, l2=1.0,
                                  angle_deg=1.0, l2_spread=0.0, angle_spread=0.0) for n in names for layer in (1, 2)])

    def colours(fig):
        return {t.name: t.line.color for t in fig.data}

    assert colours(oscillation_figure(frame(["bert-nsp"])))["bert-nsp"] == \
        colours(oscillation_figure(frame(["albert-sop", "bert-nsp"])))["bert-nsp"] == colour_for("bert-nsp")

    def applications(names):  # the Shared layer page's frames: one row per checkpoint and application
        return pd.DataFrame([dict(checkpoint=n, family="bert" if "bert-" in n else "albert", application=a, depth_L=6,
                                  l2_step=1.0, l2_to_depth_L=1.0, mlm_accuracy=0.1, nll=5.0) for n in names for a in (0, 1)])

    for figure in (extrapolation_figure, lens_figure):  # coloured by place in the selection before
        assert {name: colour for name, colour in colours(figure(applications(["albert-sop", "bert-nsp", "albert-none"]))).items()} \
            == {name: colour_for(name) for name in ("albert-sop", "bert-nsp", "albert-none")}


def test_the_shipped_checkpoints_each_have_their_own_colour():
    """The picker's order gives the colours; the README's figures use it too
    (albert-sop and albert-nsp once shared a hashed colour in the learning curve)."""
    from conftest import ROOT

    from albert_lab.checkpoint.discover import discover_checkpoints
    from app.figures import colour_for, register_checkpoints, shipped_first

    shipped = discover_checkpoints(ROOT / "checkpoints", ROOT / "no-runs")
    names = [c["name"] for c in shipped_first({"name": c.name, "origin": c.origin, "objective": c.objective} for c in shipped)]
    assert names == ["albert-sop", "bert-sop-minilm", "albert-nsp", "bert-nsp", "albert-none"]
    register_checkpoints(names)
    assert len({colour_for(name) for name in names}) == 5
    fresh = [f"run:never-registered-{i}" for i in range(3)]  # names the picker never saw
    assert len({colour_for(name) for name in fresh}) == 3


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


def test_the_link_carries_the_view_and_a_preset_opens_figure_1(app):
    at = goto(app, "oscillation")
    at.selectbox(key="osc_agg").set_value("median").run()
    assert at.query_params["osc_agg"] == ["median"] or at.query_params["osc_agg"] == "median"
    from app.presets import PRESETS

    label, stem, params = PRESETS[0]
    assert stem == "oscillation" and "Figure 1" in label
    fresh = AppTest.from_file(MAIN, default_timeout=120)
    for key, value in params.items():
        fresh.query_params[key] = value
    fresh.run()
    assert fresh.sidebar.multiselect(key="picked").value == ["albert-sop", "bert-nsp"]
    fresh.switch_page("../pages/oscillation.py").run()
    assert not fresh.exception
    verdicts = [m.value for m in fresh.markdown if m.value.startswith("**") and "roughness" in m.value]
    assert [v.split("**")[1] for v in verdicts] == ["albert-sop", "bert-nsp"]


def test_a_depth_lab_link_reproduces_its_settings(app):
    fresh = AppTest.from_file(MAIN, default_timeout=120)
    fresh.query_params.update({"dl_depth": "4", "dl_steps": "50", "dl_variants": "none,layernorm,bogus"})
    fresh.switch_page("../pages/depth_lab.py").run()  # the link opens the page itself
    assert not fresh.exception and not fresh.error
    assert fresh.slider(key="dl_depth").value == 4 and fresh.multiselect(key="dl_variants").value == ["none", "layernorm"]


def _link(at: AppTest) -> dict[str, str]:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}


def _open_link(link: dict[str, str], page: str) -> AppTest:
    fresh = AppTest.from_file(MAIN, default_timeout=120)
    fresh.query_params.update(link)
    fresh.switch_page(f"../pages/{page}.py").run()  # the link opens the page itself
    assert not fresh.exception, [e.value for e in fresh.exception]
    return fresh


def test_links_reproduce_the_calculator_the_shared_layer_view_a_typed_pair_and_the_training_preset(app):
    app.sidebar.multiselect(key="picked").set_value(["bert-nsp", "albert-sop"]).run()
    at = goto(app, "parameters")
    at.selectbox(key="calc_preset").set_value("albert-xxlarge").run()
    at.number_input(key="l-albert-xxlarge").set_value(24).run()
    fresh = _open_link(_link(at), "parameters")
    assert fresh.selectbox(key="calc_preset").value == "albert-xxlarge"
    assert fresh.number_input(key="l-albert-xxlarge").value == 24 and fresh.metric[0].value == at.metric[0].value

    at = goto(at, "shared_block")
    at.radio(key="sb_input").set_value("My text").run()
    at.text_area(key="sb_text").set_value("One sentence here. Another one there.\n\nA second text.").run()
    at.slider(key="sb_repeat").set_value(3).run()
    link = _link(at)
    assert link["ckpt"] == "bert-nsp,albert-sop"  # the sidebar's pick travels too
    fresh = _open_link(link, "shared_block")
    assert fresh.sidebar.multiselect(key="picked").value == ["bert-nsp", "albert-sop"]
    assert fresh.radio(key="sb_input").value == "My text" and fresh.slider(key="sb_repeat").value == 3
    assert fresh.text_area(key="sb_text").value == "One sentence here. Another one there.\n\nA second text."

    at = goto(at, "sentence_pairs")
    at.text_area(key="pair_a").set_value("The bridge was closed in winter.")
    at.text_area(key="pair_b").set_value("It reopened in spring.")
    at.button[0].click().run()  # the form's submit button
    fresh = _open_link(_link(at), "sentence_pairs")
    assert fresh.text_area(key="pair_a").value == "The bridge was closed in winter."
    shown = fresh.dataframe[0].value
    assert set(shown["sentence_b"]) == {"It reopened in spring."}

    at = goto(at, "training")
    at.selectbox(key="tr_preset").set_value("lab-bert").run()
    fresh = _open_link(_link(at), "training")
    assert fresh.selectbox(key="tr_preset").value == "lab-bert" and fresh.number_input(key="tr_e").value == 256


def test_typed_pairs_longer_than_the_model_reads_are_flagged(app):
    at = goto(app, "sentence_pairs")
    at.text_area(key="pair_a").set_value(" ".join(["word"] * 400))
    at.button[0].click().run()
    assert any("longer than the 128 tokens" in w.value for w in at.warning)
    assert "pair_a" not in _link(at) and any("not put in the page's link" in c.value for c in at.caption)
    shown = at.dataframe[0].value
    assert "head_status" in shown and set(shown["label"]) == {""}  # no 'None' where no label was given


def test_training_page_without_the_long_document_sources_offers_what_is_installed(app, tmp_path, monkeypatch):
    monkeypatch.setenv("ALBERT_LAB_DATA", str(tmp_path / "no-data"))
    st.cache_data.clear()
    at = goto(app, "training")
    assert "long-mix" not in at.selectbox(key="tr_corpus").options  # it would fail at the start
    assert any("corpora --install" in c.value for c in at.caption)
    corpora = next(d.value for d in at.dataframe if "licence" in d.value)
    assert set(corpora.installed) == {"yes", "no: albert-lab corpora --install"}


def test_training_page_says_when_there_is_nothing_to_watch_or_compare(app):
    at = goto(app, "training")  # the runs folder of this test is empty
    infos = [i.value for i in at.info]
    assert "No runs yet: start one under 'New run'." in infos
    assert "No runs to compare yet: start one under 'New run'." in infos


def test_a_link_with_values_its_widgets_refuse_opens_on_the_defaults(app):
    """A hand-edited link (?dl_depth=500) made the slider raise instead of drawing the page."""
    fresh = AppTest.from_file(MAIN, default_timeout=120)
    fresh.query_params.update({"dl_depth": "500", "dl_steps": "75", "dl_std": "9", "dl_width": "7", "gf_seed": "-3"})
    fresh.switch_page("../pages/depth_lab.py").run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.slider(key="dl_depth").value == 16 and fresh.slider(key="dl_steps").value == 300
    fresh.switch_page("../pages/gradient_flow.py").run()
    assert not fresh.exception and fresh.number_input(key="gf_seed").value == 0


def test_layer_axes_tick_every_layer_only_while_that_reads():
    """VGG-38's and a 48-layer MLP's layer axes had a tick per layer (labels smeared into
    each other); a model that diverged at step 1 drew a one-column heatmap ticked 0.6, 0.8, ..."""
    import pandas as pd
    import plotly.express as px

    from app.figures import flow_heatmap, style

    def axis(layers: int):
        frame = pd.DataFrame({"layer": range(1, layers + 1), "mean_abs": [1e-3] * layers})
        return style(px.line(frame, x="layer", y="mean_abs"), layers=True).layout.xaxis

    assert axis(6).dtick == 1 and axis(6).tickformat == "d"
    assert axis(40).dtick is None and axis(40).tickformat == "d"
    flow = pd.DataFrame({"model": "none", "layer": [1, 2, 3], "step": 0, "mean_abs": [1e-3, 1e-4, 1e-5]})
    heat = flow_heatmap(flow, "none").layout
    assert list(heat.xaxis.tickvals) == [0] and heat.yaxis.dtick == 1
