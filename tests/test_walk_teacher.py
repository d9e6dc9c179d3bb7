"""What a teacher and a researcher hit walking every page and README command on a busy
machine (issue 26, 'What a new user hit'): each test failed on the code before its fix."""

import json

import pandas as pd
import pytest
from test_app import app, charts, goto  # noqa: F401  (the fixture)

import albert_lab.analysis.depth as depth
from app import depth_cache


# ---- Depth lab: VGG-8 vs VGG-38 fits a class ---------------------------------------------------
def test_vgg_comparison_at_its_default_settings_trains_nothing(app, monkeypatch):
    """The button promised half a minute and took half an hour on a busy machine: the
    default settings' four nets ship with the app and draw at once."""
    def refuse(*args, **kwargs):
        raise AssertionError("the default VGG comparison should come from app/depth_default.json")

    monkeypatch.setattr(depth, "_train", refuse)
    at = goto(app, "depth_lab")
    assert any("Ready for these settings" in c.value for c in at.caption)
    at.button(key="vgg_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    names = {t["name"] for c in charts(at) if "8x8 digits" in c.proto.spec for t in json.loads(c.proto.spec)["data"]}
    assert names == {"VGG-8", "VGG-8 + BatchNorm", "VGG-38", "VGG-38 + BatchNorm"}


def test_vgg_comparison_says_how_long_and_keeps_what_a_stop_left(app, monkeypatch):
    """Other settings say how long they take before the click, train one net at a time
    behind a progress bar, and a Stop keeps the nets already trained."""
    trained = []

    def quick(depth_, batchnorm, steps, lr, record_every=20, progress=None, **kwargs):
        trained.append((depth_, batchnorm))
        for step in range(1, steps + 1):
            progress(step)
        frame = pd.DataFrame(dict(model=depth.vgg_label(depth_, batchnorm), step=[1, steps], loss=[2.3, 1.0],
                                  test_accuracy=[0.1, 0.5]))
        flow = pd.DataFrame(dict(model=frame.model.iloc[0], step=steps, layer=[1, 2], mean_abs=[1e-3, 1e-3],
                                 max_abs=[1e-2, 1e-2]))
        return frame, flow

    monkeypatch.setattr(depth, "train_vgg", quick)
    at = goto(app, "depth_lab")
    at.slider(key="vgg_steps").set_value(100).run()
    caption = next(c.value for c in at.caption if "conv nets of 100 steps" in c.value)
    assert "idle 2-core CPU" in caption and "Stop keeps" in caption
    at.button(key="vgg_run").click().run()
    assert len(trained) == 4 and not at.exception
    assert not at.get("progress")  # the bar is gone once the nets are trained
    depth_cache._VGG_TRAINED.pop(depth_cache.vgg_key(38, True, 100, 0.1))  # as if Stop came during the last net
    at.session_state["vgg_done"], at.session_state["vgg_stopped"] = False, True
    at.run()
    assert any("Stopped: 3 of 4 nets" in i.value for i in at.info)
    assert len(trained) == 4  # a stopped comparison trains nothing more until Train is pressed
    assert any("8x8 digits" in c.proto.spec for c in charts(at))


@pytest.mark.slow
def test_shipped_vgg_default_matches_a_fresh_run():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        history, _ = depth.train_vgg(8, True, record_every=depth_cache.VGG_RECORD_EVERY, **depth_cache.VGG_DEFAULTS)
    finally:
        torch.set_num_threads(threads)
    shipped, _ = depth_cache.vgg_result(8, True, **depth_cache.VGG_DEFAULTS)
    assert list(history.step) == list(shipped.step)
    early = history.step <= 100  # later, CPU-dependent rounding may be amplified (see the MLP's test)
    assert history.loss[early].to_numpy() == pytest.approx(shipped.loss[early].to_numpy(), rel=1e-3)


def test_a_diverged_net_does_not_stretch_the_depth_labs_loss_axis():
    """At 32 layers the residual net's one loss before it diverged (24.5) stretched the axis
    to 25 and flattened the curves of the nets that trained."""
    from app.figures import depth_figures

    steps = [1, 10, 20]
    history = pd.DataFrame(dict(model=["plain"] * 3 + ["residual"] * 3, step=steps * 2,
                                loss=[0.69, 0.6, 0.5, 24.5, float("nan"), float("nan")],
                                test_accuracy=[0.5, 0.6, 0.7, 0.5, float("nan"), float("nan")]))
    flow = pd.DataFrame(dict(model=["plain", "residual"], step=1, layer=1, mean_abs=1e-3, max_abs=1e-2))
    loss = depth_figures(history, flow)["loss"]
    assert loss.layout.yaxis.range[1] < 1.0
    assert "residual (diverged at step 10) up to 24.5" in loss.layout.annotations[0].text


# ---- Training: a browser keeps owning its runs across a reload ----------------------------------
def test_a_reload_keeps_the_cancel_button_of_ones_own_run(app, monkeypatch):
    """Reloading the page started a new session, which showed the user's own run as
    'started by another session ... read-only'. The browser's owner cookie keeps it."""
    from conftest import tiny_spec
    from streamlit.testing.v1 import AppTest
    from test_app import MAIN

    import albert_lab.training.jobs as jobs
    from albert_lab.training.config import TrainConfig
    from app import owner

    config = TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_steps=5,
                         max_seq_len=64, name="mine")
    monkeypatch.setattr(jobs, "start_run", lambda cfg: jobs.read_run(jobs.create_run(config)[0]))  # queued, not run
    cookie = {"value": None}
    monkeypatch.setattr(owner, "_cookie", lambda: cookie["value"])
    at = goto(app, "training")
    at.selectbox(key="tr_preset").set_value("lab-tiny").run()
    next(b for b in at.button if b.label == "Start training").click().run()
    assert not at.exception and any("started" in s.value for s in at.success), [e.value for e in at.error]
    cookie["value"] = at.session_state["_owner_token"]  # what the page asked the browser to keep

    def reload() -> AppTest:
        fresh = AppTest.from_file(MAIN, default_timeout=120)
        fresh.run()
        return goto(fresh, "training")

    assert any(b.label == "Cancel this run" for b in reload().button)
    cookie["value"] = "another-browser-token-0123456789"
    other = reload()
    assert not any(b.label == "Cancel this run" for b in other.button)
    assert any("Started in another browser" in c.value for c in other.caption)


# ---- Gradient flow: the checkpoint's own pair loss by default ----------------------------------
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


# ---- a folder named from its own files, never an objective nothing recorded ---------------------
def test_a_generic_folder_is_named_from_its_own_files(tmp_path):
    from albert_lab.checkpoint.files import checkpoint_label

    card = tmp_path / "pkg" / "model"
    card.mkdir(parents=True)
    (card / "README.md").write_text("---\nlicense: apache-2.0\n---\n\n# all-MiniLM-L6-v2\nThis is a model.\n")
    assert checkpoint_label(card) == "all-MiniLM-L6-v2"
    bare = tmp_path / "my-encoder" / "weights"
    bare.mkdir(parents=True)
    assert checkpoint_label(bare) == "my-encoder"  # no card: the folder above
    snapshot = tmp_path / "models--org--tiny-bert" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    assert checkpoint_label(snapshot) == "org/tiny-bert"  # a hub cache: its repository
    assert checkpoint_label(tmp_path / "albert-sop") == "albert-sop" and checkpoint_label(card, "given") == "given"


def test_a_sentence_transformers_folder_in_the_app_is_named_and_never_labelled_nsp(app, minilm, monkeypatch):
    """all-MiniLM-L6-v2 appeared as 'model' with the title '..., NSP', 'pair objective nsp'
    and a chart with an MLM head and a pair head it does not have."""
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(minilm.parent))
    app.sidebar.text_input(key="add_source").set_value(str(minilm))
    app.sidebar.button(key="add_button").click().run()
    assert "all-MiniLM-L6-v2" in app.sidebar.multiselect(key="picked").value
    app.selectbox(key="card_checkpoint").set_value("all-MiniLM-L6-v2").run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    title = app.subheader[0].value
    assert "NSP" not in title and title.endswith("pair objective not recorded"), title
    spec = next(t.value for t in app.table if "field" in t.value and "hidden size (H)" in set(t.value.field))
    assert spec.set_index("field").loc["pair objective", "value"] == "not recorded"
    svg = next(m.value for m in app.markdown if m.value.startswith("<svg"))
    assert "MLM head" not in svg and "pair head" not in svg


# ---- a shareable link keeps the folders added in the sidebar ------------------------------------
def test_a_link_naming_an_added_folder_opens_it(app, minilm, monkeypatch, tmp_path):
    """The link carried only the folder's name, which the recipient's app did not know: it
    dropped it silently and opened the card on albert-sop."""
    from streamlit.testing.v1 import AppTest
    from test_app import MAIN

    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", f"{minilm.parent}:{tmp_path}")
    app.sidebar.text_input(key="add_source").set_value(str(minilm))
    app.sidebar.button(key="add_button").click().run()
    app.selectbox(key="card_checkpoint").set_value("all-MiniLM-L6-v2").run()
    link = {k: v if isinstance(v, str) else v[0] for k, v in app.query_params.items()}
    assert str(minilm) in link["ckpt"].split(",") and link["card_checkpoint"] == "all-MiniLM-L6-v2"

    fresh = AppTest.from_file(MAIN, default_timeout=120)  # the recipient, in a new session
    fresh.query_params.update(link)
    fresh.run()
    assert not fresh.exception and not any("left out" in w.value for w in fresh.warning)
    assert "all-MiniLM-L6-v2" in fresh.sidebar.multiselect(key="picked").value
    assert fresh.selectbox(key="card_checkpoint").value == "all-MiniLM-L6-v2"

    gone = AppTest.from_file(MAIN, default_timeout=120)  # a folder the recipient's machine lacks: said, not dropped
    gone.query_params.update({"ckpt": f"albert-sop,{tmp_path / 'nowhere'},run:20261101-000000-x"})
    gone.run()
    assert not gone.exception and gone.sidebar.multiselect(key="picked").value == ["albert-sop"]
    assert any("nowhere" in w.value and "left out" in w.value for w in gone.warning), [w.value for w in gone.warning]
    assert any("run:20261101-000000-x" in w.value and "no training run" in w.value for w in gone.warning)


# ---- Sentence pairs: the live Table 5 says what it scores and how long it takes ----------------
def test_live_table5_says_its_sample_and_what_each_n_counts(app, small_corpus, monkeypatch):
    """'Evaluate ... (about a minute)' took 342 s on a busy machine, and the caption said
    200 pairs per task while the cells showed n = 163, 197, 40 and 5."""
    import albert_lab.analysis.evaluation as evaluation
    from albert_lab.data.heldout import build_eval_pairs

    pairs = build_eval_pairs(small_corpus.train[:60]).assign(domain="in")
    monkeypatch.setattr(evaluation, "evaluation_pairs", lambda: pairs)
    at = goto(app, "sentence_pairs")
    button = at.button(key="t5_run")
    assert "about a minute" not in button.label and "two cores" in button.label
    at.select_slider(key="t5_limit").set_value(50).run()
    at.button(key="t5_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.caption)
    assert "A fixed sample of 50 pairs per task" in captions and "MLM counts masked tokens" in captions
    assert "lead + interior exceeds SOP" in captions  # why SOP's n is not lead's + interior's
    assert set(at.session_state["t5_live"]) == set(at.sidebar.multiselect(key="picked").value)


def test_shipped_sop_counts_are_explained_where_they_are_shown():
    """Held-out SOP n = 2,474 against lead 591 + interior 2,369 needed a word; out of domain
    SOP and SOP interior were equal with no word that cfi's pairs are nearly all interior."""
    import json

    from conftest import ROOT

    from albert_lab.card import count_notes, metric_counts

    metrics = json.loads((ROOT / "checkpoints" / "albert-sop" / "albert_lab.json").read_text())["metrics"]
    held, out = count_notes(metric_counts(metrics))
    assert "SOP counts the 2,474 pairs" in held and "591 of them lead" in held and "1,883 interior ones and 486 more" in held
    assert out.startswith("Out of domain (cfi)") and "Only 16 of the 761 hold a document's first sentence" in out


# ---- the command line a new user met -------------------------------------------------------------
def _queued_run(runs, metrics: list[dict]):
    from conftest import tiny_spec

    from albert_lab.training.config import TrainConfig
    from albert_lab.training.jobs import create_run

    config = TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_steps=5,
                         max_seq_len=64, name="walk")
    run_dir, _ = create_run(config, runs)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    return run_dir


def test_runs_cancel_and_show_speak_in_words(tmp_path):
    """`runs --cancel` printed '...: running at step 72' and the raw dict of the last row."""
    from conftest import run_cli

    row = {"kind": "train", "step": 70, "loss": 8.9634, "mlm_loss": 8.2696, "pair_loss": 0.6937, "tokens": 267709,
           "tokens_per_s": 1899.5, "run_tokens_per_s": 2251.9, "eta_s": 6080.2}
    run_dir = _queued_run(tmp_path / "elsewhere", [row])
    shown = run_cli("runs", "--runs-dir", str(tmp_path / "elsewhere"), "--show", run_dir.name)
    assert shown.returncode == 0 and "{" not in shown.stdout, shown.stdout
    assert "last: step 70: loss 8.963 (MLM 8.270, pair 0.694), 2,252 tokens/s, 267,709 tokens seen, about 101 min left" \
        in shown.stdout
    cancelled = run_cli("runs", "--runs-dir", str(tmp_path / "elsewhere"), "--cancel", run_dir.name)
    assert cancelled.returncode == 0 and f"{run_dir.name}: cancel requested (it was queued at step 0)" in cancelled.stdout
    assert "{" not in cancelled.stdout


def test_train_hints_name_the_runs_folder_they_need(tmp_path, capsys, monkeypatch):
    """After `train --runs-dir X`, the hint 'cancel with: albert-lab runs --cancel ID' found no such run."""
    import albert_lab.training.runs as runs
    from albert_lab.cli.train import _follow

    run_dir = _queued_run(tmp_path / "elsewhere", [])
    _follow(run_dir, detach=True)
    assert f"albert-lab runs --show {run_dir.name} --runs-dir {tmp_path / 'elsewhere'}" in capsys.readouterr().out

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "read_run", interrupted)  # Ctrl-C while following
    _follow(run_dir, detach=False)
    assert f"albert-lab runs --cancel {run_dir.name} --runs-dir {tmp_path / 'elsewhere'}" in capsys.readouterr().err


def test_app_on_a_busy_port_says_so_before_printing_an_address():
    """`app --port <busy>` printed 'ALBERT Lab: http://localhost:PORT', then Streamlit's 'Port ... is not available'."""
    import socket

    from conftest import one_line_error, run_cli

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("app", "--port", str(port))
    one_line_error(result, f"port {port} is in use", "--port")
    assert "ALBERT Lab: http" not in result.stderr


def test_evaluate_shows_its_progress(shipped):
    """`evaluate` was silent for minutes."""
    from conftest import run_cli

    result = run_cli("evaluate", "--checkpoint", str(shipped / "albert-sop"), "--corpus", "wiki-vital[:600]", "--no-ood",
                     "--limit", "5")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "building the held-out pairs" in result.stderr
    assert "scoring albert-sop: held-out SOP pairs" in result.stderr and "scoring albert-sop: held-out MLM pairs" in result.stderr


# ---- the card of a run trained in the browser ----------------------------------------------------
def test_a_browser_run_records_the_command_that_makes_it_again(monkeypatch):
    """Its provenance said 'browser: lab-tiny, sop', which cannot be run again: it is the
    equivalent `albert-lab train` command, which builds the same configuration."""
    import shlex

    import albert_lab.training.jobs as jobs
    from albert_lab.cli import main
    from albert_lab.training.config import browser_config

    config = browser_config("lab-tiny", "nsp", hidden=64, layers=3, embedding=32, heads=2, sharing="attention",
                            corpus="wiki-vital[:600]", steps=40, vocab=1000, max_seq_len=64, batch_size=8, lr=0.002,
                            optimizer="adamw", warmup_steps=5, seed=3, name="my run", chunk_start="random")
    assert config.command.startswith("albert-lab train --preset lab-tiny --objective nsp")
    captured = []
    monkeypatch.setattr(jobs, "start_run", lambda cfg, *a, **k: captured.append(cfg) or (_ for _ in ()).throw(SystemExit))
    with pytest.raises(SystemExit):
        main([*shlex.split(config.command)[1:], "--foreground"])
    again = captured[0]
    assert {k: v for k, v in again.to_dict().items() if k != "command"} == \
        {k: v for k, v in config.to_dict().items() if k != "command"}


def test_a_trained_card_carries_intervals_and_counts():
    """A browser-trained run's card listed raw keys ('sop acc 0.512') without interval or n."""
    from albert_lab.analysis.intrinsic import card_metrics
    from albert_lab.card import metric_lines

    table = pd.DataFrame([dict(metric="sop", source="all", hits=60, n=100, accuracy=0.6, low=0.5, high=0.69)])
    assert metric_lines(card_metrics(table)) == [("sop", "0.600 [0.50, 0.69] n=100")]


# ---- Shared layer: a trend only when the intervals say so ----------------------------------------
def test_extrapolation_verdict_gives_count_and_interval_and_calls_no_trend_on_few_tokens():
    """At k = 4 the verdict reported 3.1% -> 1.5% as a trend, from a handful of tokens."""
    from albert_lab.analysis.extrapolation import accuracy_words

    few = accuracy_words(0.031, 0.015, 130, 24)
    assert "of 130 masked tokens" in few and "[" in few and "no trend" in few
    many = accuracy_words(0.30, 0.10, 5000, 24)
    assert "a fall beyond the 95% intervals" in many


# ---- small things a teacher saw ------------------------------------------------------------------
def test_parameters_page_gives_xxlarge_one_count(app):
    """'ALBERT-xxlarge (235M parameters)' on one tab, 222.6M on another."""
    at = goto(app, "parameters")
    text = " ".join(m.value for m in at.markdown)
    assert "ALBERT-xxlarge (235M parameters)" not in text and "ALBERT-xxlarge (222.6M parameters as specified" in text


def test_card_code_hash_is_short_enough_for_the_card():
    """The full 40-character commit ran past the provenance table's edge at 1400 px."""
    from app.text import fmt_value

    full = "8c628f548f96749080bc715cdd54cba45235476e"
    assert fmt_value("code", full) == "8c628f548f96" and fmt_value("code", full + "+changes") == "8c628f548f96+changes"


def test_the_chance_line_reads_on_the_dark_theme(app, tmp_path, monkeypatch):
    """Plotly's default line colour (near black) vanished on the dark theme (Sentence pairs, Training)."""
    run = tmp_path / "runs" / "20261122-000000-tiny-1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "id": run.name, "status": "succeeded", "created": 1.0, "pid": 1, "step": 5, "total_steps": 5,
        "config": {"objective": "sop", "name": "tiny", "max_steps": 5}, "spec_label": "ALBERT tiny", "message": ""}))
    (run / "metrics.jsonl").write_text(json.dumps(
        {"kind": "train", "step": 1, "loss": 9.7, "mlm_loss": 9.0, "pair_loss": 0.69, "mlm_acc": 0.0, "pair_acc": 0.44,
         "tokens": 1501, "tokens_per_s": 5589.0, "run_tokens_per_s": 5589.0, "eta_s": 1.0, "time": 1.0}) + "\n")
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    pairs = goto(app, "sentence_pairs")
    next(b for b in pairs.button if b.label == "Score this pair").click().run()
    specs = [c.proto.spec for c in charts(pairs)]
    training = goto(pairs, "training")
    specs += [c.proto.spec for c in charts(training)]
    for spec in specs:
        lines = [shape for shape in json.loads(spec)["layout"].get("shapes", []) if shape.get("line", {}).get("dash") == "dot"]
        assert all(shape["line"]["color"] == "#8c8c8c" for shape in lines), lines
    assert sum("chance" in spec for spec in specs) >= 2


def test_a_roughness_of_zero_still_shows_its_value():
    """Bars of roughness 0.00 were invisible: no bar, and the label inside it."""
    from app.figures import roughness_figure

    fig = roughness_figure(pd.DataFrame(dict(checkpoint=["albert-sop", "bert-nsp"], roughness=[0.0, 0.31])))
    assert all(t.textposition == "outside" and t.cliponaxis is False for t in fig.data)
    assert list(fig.layout.yaxis.range) == [0, 1.1]  # the measure's own scale


def test_shared_gradients_are_points_with_values_on_their_log_axis():
    """Bars on a log axis made 0.0018 look like nothing beside 0.013 (a bar's length there
    starts at an arbitrary floor)."""
    from app.figures import shared_sum_figure

    frame = pd.DataFrame([dict(view="shared_sum", component=c, layer=1, applications="1-6", mean_abs=v, max_abs=0.1)
                          for c, v in (("attention", 0.0018), ("FFN", 0.013))])
    fig = shared_sum_figure(frame)
    assert all(t.type == "scatter" for t in fig.data)
    assert sorted(v for t in fig.data for v in t.text) == ["0.0018", "0.013"]


# ---- Shared layer, applied again -------------------------------------------------------------------
def test_shared_layer_cka_compare_with_travels_in_the_link(app):
    """'Compare with' was not in the link: a shared CKA view opened on a model against itself."""
    from streamlit.testing.v1 import AppTest
    from test_app import MAIN

    at = goto(app, "shared_block")
    at.radio(key="sb_section").set_value("4. Layer similarity (linear CKA)").run()
    at.selectbox(key="sb_cka_y").set_value("bert-nsp").run()
    at.run()
    link = {k: v if isinstance(v, str) else v[0] for k, v in at.query_params.items()}
    assert link.get("sb_cka_y") == "bert-nsp" and link.get("sb_cka_x") == "albert-sop", link
    fresh = AppTest.from_file(MAIN, default_timeout=120)
    fresh.query_params.update(link)
    fresh.switch_page("../pages/shared_block.py").run()  # the link opens the page itself
    assert not fresh.exception and fresh.selectbox(key="sb_cka_y").value == "bert-nsp"


def test_shared_layer_figures_can_be_read():
    """Top-k heatmaps labelled every sixth application, attention maps had no colour scale,
    and ALBERT vs BERT's CKA heatmap was a small square."""
    from app.reapply_figures import attention_figure, cka_figure, top_k_figure

    top = pd.DataFrame([dict(checkpoint="m", application=a, depth_L=6, rank=r, token=f"w{a}{r}", probability=0.1,
                             watched="x [MASK]") for a in range(25) for r in range(1, 4)])
    text = top_k_figure(top, "m").data[0].text
    assert all(cell for row in text for cell in row)  # every application's words at k = 4
    tokens = ["[CLS]", "a", "[SEP]"]
    maps = pd.DataFrame([dict(checkpoint="m", application=1, head=0, inner=0, query=q, key=k, key_token=tokens[k],
                              weight=1 / 3, norm_weighted=0.5) for q in range(3) for k in range(3)])
    assert [t.showscale is not False for t in attention_figure(maps, 1, 0).data] == [True, True]
    cka = pd.DataFrame([dict(application_x=i, application_y=j, cka=0.5, checkpoint_x="albert-sop", checkpoint_y="bert-nsp",
                             unit="token", n=1024) for i in range(7) for j in range(7)])
    fig = cka_figure(cka)
    assert fig.layout.height >= 420 and fig.layout.yaxis.scaleanchor is None  # full width, not a fixed square


# ---- first visits: long computations show progress and can be stopped ---------------------------
def test_oscillation_computes_checkpoint_by_checkpoint_and_a_stop_keeps_the_finished(app):
    """A first visit took 15 s on a busy machine with nothing to stop it: the checkpoints are
    computed one at a time behind a progress bar with a Stop; after a Stop the page draws those
    finished and offers the others."""
    at = goto(app, "oscillation")
    picked = at.sidebar.multiselect(key="picked").value
    state = at.session_state["_each_oscillation"]
    assert state["done"] == picked and not state["stopped"]
    state.update(done=picked[:1], stopped=True)  # as if Stop came during the second checkpoint
    at.session_state["_each_oscillation"] = state
    at.run()
    assert any(f"Stopped: 1 of {len(picked)} checkpoints" in i.value for i in at.info)
    drawn = {t["name"] for c in charts(at) if "Input vs output of each layer" in c.proto.spec
             for t in json.loads(c.proto.spec)["data"] if t.get("name")}
    assert picked[0] in drawn and not set(picked[1:]) & drawn
    next(b for b in at.button if b.label == "Compute the others").click().run()
    assert not at.info and at.session_state["_each_oscillation"]["done"] == picked
