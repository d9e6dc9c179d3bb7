"""The Training page (AppTest): the form, a live run, runs of other sessions, starting from a checkpoint."""

import json
import shutil
import time
from pathlib import Path

import pytest
import streamlit as st
from conftest import MAIN, charts, goto, start, wait_until
from streamlit.testing.v1 import AppTest

from albert_lab.errors import RunError
from albert_lab.spec import PRESETS
from albert_lab.training.optim import lr_factor
from albert_lab.training.runs import list_runs
from app.rooms.training.views import warmup_note


def test_training_form_and_live_run(app, small_corpus):
    at = goto(app, "training")
    at.number_input(key="tr_max_seq_len").set_value(256)  # lab-albert has 128 positions
    next(b for b in at.button if b.label == "Start training").click().run()
    assert any("max_seq_len: must be between 16 and the model's max_positions (128), got 256" in e.value for e in at.error)
    lines = [json.dumps({"text": " ".join(d.segments)}) for d in small_corpus.train[:80]]
    lines[3:3] = ["not JSON", '{"body": "no text field"}']  # skipped, and said so where the run is watched
    corpus = ("corpus.jsonl", "\n".join(lines).encode(), "application/json")
    at.selectbox(key="tr_corpus").set_value("upload a .txt / .jsonl file")
    at.file_uploader(key="tr_upload").set_value(corpus)
    for key, value in (("tr_lr", 0.003), ("tr_max_steps", 6), ("tr_batch_size", 4), ("tr_vocab_size", 100), ("tr_max_seq_len", 64)):
        at.number_input(key=key).set_value(value)
    for key, value in (("tr_hidden_size", 32), ("tr_num_layers", 2), ("tr_num_heads", 2), ("tr_embedding_size", 16)):
        at.number_input(key=key).set_value(value)
    at.text_input(key="tr_name").set_value("tiny-form")
    next(b for b in at.button if b.label == "Start training").click().run()
    # the warm-up that fills the run is said before anything starts (it was said only after the run started)
    (note,) = [w.value for w in at.warning if "warm-up (50 steps) is longer than the run (6)" in w.value]
    assert "climbs for the whole run and reaches only 0.00036, not the 0.003 asked for" in note, note
    assert "Nothing is started yet" in note and not at.success
    assert not list_runs(Path(__import__("os").environ["ALBERT_LAB_RUNS"]))
    next(b for b in at.button if b.label == "Start training").click().run()  # again, the same settings: it starts
    assert not at.error, [e.value for e in at.error]
    assert any("started" in s.value and "a vocabulary of 100 pieces" in s.value for s in at.success)
    (run,) = list_runs(Path(__import__("os").environ["ALBERT_LAB_RUNS"]))
    spec = run.config["spec"]  # the run trains what the form showed
    assert (spec["hidden_size"], spec["num_layers"], spec["num_heads"], spec["embedding_size"]) == (32, 2, 2, 16)
    assert at.session_state["tr_watch"] == run.id  # the Runs tab follows the new run
    skipped = [e for e in at.expander if "of its corpus skipped" in e.label]  # where it started, and under 'Runs'
    assert len(skipped) == 2 and {e.label for e in skipped} == {"2 lines of its corpus skipped"}
    assert all("line 4: not valid JSON" in e.text[0].value and "line 5: has no string field 'text'" in e.text[0].value
               for e in skipped)
    wait_until(lambda: not any(r.active for r in list_runs(Path(__import__("os").environ["ALBERT_LAB_RUNS"]))), "the run to end")
    at.run()
    assert any(":material/check_circle:" in m.value and "succeeded" in m.value for m in at.markdown)
    assert any("run:" in c.value for c in at.caption)  # now selectable in the sidebar
    __import__("streamlit").cache_data.clear()  # the checkpoints list is cached for 5 s
    at.run()  # the sidebar names it as the user did ('run:20261126-0818...' alone, cut off, looked like every other run)
    assert f"tiny-form · run:{run.id}" in at.sidebar.multiselect(key="picked").options
    loss = next(json.loads(c.proto.spec) for c in charts(at) if "Training loss" in c.proto.spec)
    # names in words ('mlm_loss' before), colours that do not swap with the theme's colorway
    assert {t["name"]: t["line"]["color"] for t in loss["data"]} == {"total": "#4c78a8", "MLM": "#f58518",
                                                                      "pair (SOP or NSP)": "#54a24b"}


def test_picking_a_preset_sets_the_architecture_fields(app):
    at = goto(app, "training")
    assert at.number_input(key="tr_hidden_size").value == PRESETS["lab-albert"].hidden_size
    at.selectbox(key="tr_preset").set_value("lab-bert").run()
    bert = PRESETS["lab-bert"]
    assert at.number_input(key="tr_hidden_size").value == bert.hidden_size and at.number_input(key="tr_num_layers").value == bert.num_layers
    assert at.number_input(key="tr_embedding_size").disabled and at.selectbox(key="tr_sharing").disabled
    at.selectbox(key="tr_preset").set_value("lab-tiny").run()
    assert at.number_input(key="tr_hidden_size").value == PRESETS["lab-tiny"].hidden_size
    assert not at.number_input(key="tr_embedding_size").disabled
    # Enter in a field (Steps, say) submitted the form and started a run: only the button starts one
    (form,) = [f for f in at.form if f.key == "tr_form"]
    assert form.proto.form.enter_to_submit is False


def test_training_page_without_the_long_document_sources_offers_what_is_installed(app, tmp_path, monkeypatch):
    monkeypatch.setenv("ALBERT_LAB_DATA", str(tmp_path / "no-data"))
    st.cache_data.clear()
    at = goto(app, "training")
    options = at.selectbox(key="tr_corpus").options
    assert "long-mix" not in options and "long-mix-plus" not in options  # they would fail at the start
    assert any("corpora --install" in c.value for c in at.caption)
    corpora = next(d.value for d in at.dataframe if "licence" in d.value)
    assert set(corpora.installed) == {"yes", "no: albert-lab corpora --install", *(
        f"no: albert-lab corpora --install {name}" for name in ("debian-handbook", "django-docs", "postgres-docs", "linux-docs"))}


def test_training_page_says_when_there_is_nothing_to_watch_or_compare(app):
    at = goto(app, "training")  # the runs folder of this test is empty
    infos = [i.value for i in at.info]
    assert "No runs yet: start one under 'New run'." in infos
    assert "No runs to compare yet: start one under 'New run'." in infos


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


def two_runs(tmp_path) -> None:
    """A finished run without a pair task and one with SOP, two logged steps each."""
    for name, objective, pair in (("nopair", "none", {}), ("withsop", "sop", {"pair_loss": 0.69, "pair_acc": 0.55})):
        run = tmp_path / "runs" / f"20261122-000000-{name}-1"
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({
            "id": run.name, "status": "succeeded", "created": 1.0, "pid": 1, "step": 2, "total_steps": 2,
            "config": {"objective": objective, "name": name, "max_steps": 2}, "spec_label": "ALBERT tiny", "message": ""}))
        (run / "metrics.jsonl").write_text("".join(json.dumps(
            {"kind": "train", "step": step, "loss": 9.7, "mlm_loss": 9.0, **pair, "mlm_acc": 0.1, "tokens": 100 * step,
             "tokens_per_s": 50.0, "run_tokens_per_s": 50.0, "eta_s": 1.0, "time": 1.0}) + "\n" for step in (1, 2)))


def compared(at: AppTest) -> dict:
    """Compare runs' figure, as drawn."""
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "by run" in c.proto.spec)


def smoothed_names(spec: dict) -> list[str]:
    """The runs whose smoothed lines are drawn, in order (the raw ones are faint, behind them)."""
    return [trace["name"] for trace in spec["data"] if "opacity" not in trace]


def test_compare_runs_draws_no_pair_accuracy_for_a_run_without_a_pair_task(tmp_path, monkeypatch):
    """A run trained with objective 'none' was drawn at pair accuracy 1.0 beside the SOP run's 0.4-0.7."""
    two_runs(tmp_path)
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    at = start("training")
    at.multiselect(key="tr_compare_metric").set_value(["pair_acc"]).run()
    captions = " ".join(c.value for c in at.caption)
    assert "no pair accuracy for nopair (none): not measured" in captions
    assert smoothed_names(compared(at)) == ["withsop (sop)"]


def test_compare_runs_names_a_picked_run_that_logged_no_step(tmp_path, monkeypatch):
    """A picked run with no logged step (failed at once, or queued) was left out of the panels without a word."""
    two_runs(tmp_path)
    for name, status in (("early", "failed"), ("waiting", "queued")):
        run = tmp_path / "runs" / f"20261122-000002-{name}-1"
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({
            "id": run.name, "status": status, "created": time.time(), "pid": None, "step": 0, "total_steps": 2,
            "config": {"objective": "sop", "name": name, "max_steps": 2}, "spec_label": "ALBERT tiny", "message": ""}))
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    at = start("training")
    ids = [r.id for r in list_runs(tmp_path / "runs")]
    at.multiselect(key="tr_compare_runs").set_value(ids).run()
    captions = " ".join(c.value for c in at.caption)
    assert "early (sop) logged no step (failed)" in captions
    assert "waiting (sop) has logged no step yet (queued)" in captions
    assert smoothed_names(compared(at)) == ["nopair (none)", "withsop (sop)"]
    at.multiselect(key="tr_compare_runs").set_value([i for i in ids if "early" in i]).run()  # nothing to draw: still said
    assert "early (sop) logged no step (failed)" in " ".join(c.value for c in at.caption)
    assert not any("by run" in c.proto.spec for c in at.get("plotly_chart"))


def test_compare_runs_tells_two_runs_of_one_name_apart(tmp_path, monkeypatch):
    """Two runs started with one name and loss were one legend entry, and runs.csv had no column to
    tell their rows apart: the legend names their ids, and runs.csv has a run_id column."""
    two_runs(tmp_path)
    first = tmp_path / "runs" / "20261122-000000-withsop-1"
    second = tmp_path / "runs" / "20261122-000001-withsop-2"
    shutil.copytree(first, second)
    (second / "run.json").write_text((first / "run.json").read_text().replace(first.name, second.name))
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    from app.shell import draw

    downloads = {}
    monkeypatch.setattr(draw, "download", lambda frame, name, *args, **kwargs: downloads.__setitem__(name, frame))
    at = start("training")
    at.multiselect(key="tr_compare_runs").set_value([first.name, second.name]).run()
    assert smoothed_names(compared(at)) == [f"withsop (sop, {first.name})", f"withsop (sop, {second.name})"]
    assert list(downloads["runs.csv"].run_id) == [first.name] * 2 + [second.name] * 2


def test_compare_runs_selection_and_metric_are_in_the_link(tmp_path, monkeypatch):
    """Compare runs' picked runs and metric were not in the link: a shared address showed the first
    three runs' loss. They travel now, beside the New run form's model."""
    from conftest import link_of, opened_by_link

    two_runs(tmp_path)
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    at = start("training")
    sop = next(r for r in at.multiselect(key="tr_compare_runs").options if "withsop" in r)
    at.multiselect(key="tr_compare_runs").set_value([sop]).run()
    at.multiselect(key="tr_compare_metric").set_value(["pair_acc"]).run()
    link = link_of(at)
    assert link["runs"] == sop and link["metric"] == "pair_acc" and "tr_preset" in link and "ckpt" in link
    fresh = opened_by_link({**link, "runs": f"{sop},no-such-run"}, "training")  # a run unknown here is left out
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.multiselect(key="tr_compare_runs").value == [sop] and fresh.multiselect(key="tr_compare_metric").value == ["pair_acc"]
    assert smoothed_names(compared(fresh)) == ["withsop (sop)"]


def test_the_first_runs_of_a_session_are_picked_in_compare_runs(tmp_path, monkeypatch):
    """Compare runs opened before any run existed kept its empty pick: the session's first run,
    finished, was drawn nowhere until picked by hand."""
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    at = start("training")
    assert "No runs to compare yet: start one under 'New run'." in [i.value for i in at.info]
    two_runs(tmp_path)
    at.run()
    assert at.multiselect(key="tr_compare_runs").value == [r.id for r in list_runs(tmp_path / "runs")][:3] != []
    assert any("by run" in c.proto.spec for c in at.get("plotly_chart"))
    at.multiselect(key="tr_compare_runs").set_value([]).run()  # emptied by the visitor: stays empty
    assert at.multiselect(key="tr_compare_runs").value == []


def test_the_new_run_form_is_as_the_visitor_left_it_after_another_page(app):
    """The form went back to lab-albert, SOP and 200 steps after a visit to the model card, where
    Oscillation keeps its choices."""
    at = goto(app, "training")
    at.selectbox(key="tr_preset").set_value("lab-tiny").run()
    at.radio(key="tr_objective").set_value("none")
    at.number_input(key="tr_max_steps").set_value(20)
    next(b for b in at.button if b.label == "Start training").click().run()  # a form's values count once it is sent
    assert any("Nothing is started yet" in w.value for w in at.warning)  # 50 warm-up steps in a run of 20: said first
    goto(at, "model_card")
    goto(at, "training")
    assert at.selectbox(key="tr_preset").value == "lab-tiny"
    assert at.number_input(key="tr_hidden_size").value == PRESETS["lab-tiny"].hidden_size
    assert at.radio(key="tr_objective").value == "none" and at.number_input(key="tr_max_steps").value == 20


def test_the_install_makes_the_tokenizer_a_first_start_needs(tmp_path, monkeypatch):
    """The first Start on a fresh install trained a SentencePiece tokenizer inside the server (184.6 s on a
    busy machine) before the run existed. `corpora --install` makes it (prepare_tokenizers), once: a Start
    of the same corpus, vocabulary and case then trains none, and installing again makes nothing."""
    from conftest import CORPUS

    from albert_lab.cli.corpora import prepare_tokenizers
    from albert_lab.training import jobs, prepare
    from albert_lab.training.config import TrainConfig

    monkeypatch.setenv("ALBERT_LAB_CACHE", str(tmp_path / "cache"))  # a fresh install's cache
    config = TrainConfig(vocab_size=700, batch_size=4, max_steps=2)
    from app.rooms.training.views import start_words

    at_corpus = TrainConfig(**{**config.__dict__, "corpus": CORPUS})
    # the spinner said 'about 40 s' and the Start took 184.6 s: it says what it will do, from the measured Start
    assert "then training a tokenizer of 700 pieces for this corpus, once: about 41 s" in start_words(at_corpus)
    said = []
    (folder,) = prepare_tokenizers([CORPUS], said.append, config)
    assert start_words(at_corpus) == "Checking the settings and preparing the corpus: about 2 s on two cores"
    assert (folder / "tokenizer_config.json").is_file() and len(said) == 2 and "once" in said[0]
    assert said[1].startswith("made in ") and said[1].endswith(" s")  # what it took, beside what it said it would

    def refuse(*args, **kwargs):
        raise AssertionError("a tokenizer was trained after the install had made it")

    real = prepare.train_tokenizer
    monkeypatch.setattr(prepare, "train_tokenizer", refuse)
    said.clear()
    assert prepare_tokenizers([CORPUS], said.append, config) == [folder] and not said  # nothing to do, nothing said
    run, prepared = jobs.create_run(at_corpus)
    assert prepared.tokenizer_dir == folder and (run / "run.json").is_file()
    (tmp_path / "cache" / "tokenizers" / "made-at-install.json").write_text("{not json")  # damaged: made again
    monkeypatch.setattr(prepare, "train_tokenizer", real)
    assert prepare_tokenizers([CORPUS], said.append, config) == [folder] and len(said) == 2  # found in the cache



def test_runs_of_other_sessions_are_read_only_unless_single_user(app, monkeypatch):
    from conftest import tiny_spec

    from albert_lab.training.config import TrainConfig
    from albert_lab.training.jobs import create_run

    config = TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_steps=5, max_seq_len=64,
                         name="elsewhere")
    run_dir, _ = create_run(config)  # queued, started outside this browser session
    at = goto(app, "training")
    assert not any(b.label == "Cancel this run" for b in at.button)
    assert any(f"albert-lab runs --cancel {run_dir.name}" in c.value for c in at.caption)
    assert any("One run trains at a time in this runs folder" in c.value for c in at.caption)  # why it waits
    monkeypatch.setenv("ALBERT_LAB_SINGLE_USER", "1")
    at.run()
    next(b for b in at.button if b.label == "Cancel this run").click().run()
    assert [t.value for t in at.toast] == ["Cancel requested: the run stops before its first step, with no checkpoint "
                                           "(it had none to save)."]  # queued: it never promises a checkpoint
    assert (run_dir / "cancel").exists()
    from app.rooms.training.views import cancel_words
    assert cancel_words("running", 40) == "Cancel requested: the run saves its checkpoint (step 40 or the next) and stops."


def test_a_queued_run_names_the_run_it_waits_for(app, monkeypatch):
    import subprocess
    import sys

    from conftest import tiny_spec

    from albert_lab.training.config import TrainConfig
    from albert_lab.training.jobs import create_run
    from albert_lab.training.runs import update_run

    make = lambda name: TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000,
                                    max_steps=5, max_seq_len=64, name=name)
    first, _ = create_run(make("ahead"))
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "albert_lab"])  # a live 'worker'
    try:
        update_run(first, status="running", pid=worker.pid, heartbeat=time.time())
        create_run(make("behind"))
        at = goto(app, "training")
        assert any("this one starts when **ahead** ends" in c.value for c in at.caption), [c.value for c in at.caption]
        # its steps done, the run scores its held-out pairs (77 s for 60 steps on a busy CPU: it showed '0 s left')
        update_run(first, message="final evaluation: 2,481 held-out pairs and texts", step=3, total_steps=5)
        row = dict(kind="train", step=5, loss=6.0, mlm_loss=5.3, pair_loss=0.69, mlm_acc=0.1, pair_acc=0.5, lr=1e-3,
                   tokens=5000, tokens_per_s=1000.0, eta_s=0.0)
        (first / "metrics.jsonl").write_text(json.dumps(row) + "\n")  # run.json's step lags its metrics
        at.selectbox(key="tr_watch").set_value(first.name).run()
        assert any(c.value.startswith("All steps done; now the final evaluation: 2,481") for c in at.caption)
        assert any(m.value.endswith("**ahead**: running, step 5 of 5") for m in at.markdown)  # was 'step 3 of 5' beside it
        runs = next(d.value for d in at.dataframe if "status" in d.value)
        assert runs.set_index("name").loc["ahead", "step"] == 5
        monkeypatch.setenv("ALBERT_LAB_SINGLE_USER", "1")  # its owner: no Cancel button that would do nothing
        at.run()
        assert not any(b.label == "Cancel this run" for b in at.button)
        assert any(c.value.startswith("Its steps are done and saved") for c in at.caption)
    finally:
        worker.kill()
        worker.wait()


def test_a_reload_keeps_the_cancel_button_of_ones_own_run(app, monkeypatch):
    """Reloading the page started a new session, which showed the user's own run as
    'started by another session ... read-only'. The browser's owner cookie keeps it."""
    from conftest import MAIN, tiny_spec
    from streamlit.testing.v1 import AppTest

    import albert_lab.training.jobs as jobs
    from albert_lab.training.config import TrainConfig
    from app.shell import owner

    config = TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_steps=5,
                         max_seq_len=64, name="mine")
    monkeypatch.setattr(jobs, "start_run", lambda cfg, owner=None, budget=None, address=None: jobs.read_run(
        jobs.create_run(config, owner=owner, budget=budget)[0]))  # queued, not run
    cookie = {"value": None}
    monkeypatch.setattr(owner, "_cookie", lambda: cookie["value"])
    at = goto(app, "training")
    at.selectbox(key="tr_preset").set_value("lab-tiny").run()
    next(b for b in at.button if b.label == "Start training").click().run()
    assert not at.exception and any("started" in s.value for s in at.success), [e.value for e in at.error]
    cookie["value"] = at.session_state["_shell"].owner_token  # what the page asked the browser to keep

    def reload() -> AppTest:
        fresh = AppTest.from_file(MAIN, default_timeout=120)
        fresh.run()
        return goto(fresh, "training")

    assert any(b.label == "Cancel this run" for b in reload().button)
    cookie["value"] = "another-browser-token-0123456789"
    other = reload()
    assert not any(b.label == "Cancel this run" for b in other.button)
    assert any("Started in another browser" in c.value for c in other.caption)


def test_a_browser_run_records_the_command_that_makes_it_again(monkeypatch):
    """Its provenance said 'browser: lab-tiny, sop', which cannot be run again: it is the
    equivalent `albert-lab train` command, which builds the same configuration."""
    import shlex

    import albert_lab.training.jobs as jobs
    from albert_lab.cli import main
    from albert_lab.training.recipe import browser_config

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


def test_the_training_page_starts_a_run_from_a_picked_checkpoint(shipped, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import albert_lab.training.jobs as jobs

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    st.cache_data.clear()
    st.cache_resource.clear()
    started = []
    monkeypatch.setattr(jobs, "start_run", lambda cfg, *a, **k: started.append(cfg) or (_ for _ in ()).throw(RunError("stop here")))
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.switch_page("rooms/training/page.py").run()
    assert not at.exception
    start = at.selectbox(key="tr_init_from")
    assert start.value == "random weights" and "bert-nsp" in start.options
    assert at.selectbox(key="tr_distil_from").disabled  # a teacher only for a run that starts from a checkpoint
    assert at.number_input(key="tr_lr").value == 3e-3
    start.set_value("bert-nsp").run()
    assert any("Starting from **bert-nsp**" in c.value for c in at.caption)
    assert at.number_input(key="tr_lr").value == 1e-3  # a gentler default from a checkpoint (3e-3 undid what it knew)
    at.selectbox(key="tr_distil_from").set_value("bert-nsp")
    at.selectbox(key="tr_corpus").set_value(at.selectbox(key="tr_corpus").options[0])
    at.number_input(key="tr_max_seq_len").set_value(64)  # the fixture's positions
    at.number_input(key="tr_pair_weight").set_value(10.0)
    at.button[[b.label for b in at.button].index("Start training")].click().run()
    assert len(started) == 1, [e.value for e in at.error]
    config = started[0]
    assert config.pair_weight == 10.0 and "--pair-weight 10.0" in config.command and config.lr == 1e-3
    assert config.init_from == str(shipped / "bert-nsp") and config.command.startswith("albert-lab train --init-from")
    assert config.distil_from == str(shipped / "bert-nsp") and f"--distil-from {shipped / 'bert-nsp'}" in config.command
    assert any("stop here" in e.value for e in at.error)  # the guard's one-line message, no traceback


def test_start_clicks_past_the_browsers_budget_say_the_queue_is_full_and_keep_no_upload(app, monkeypatch):
    """Four 'Start training' clicks 3 s apart started four worker processes (about 440 MB each);
    the uploads of refused runs stayed in runs/uploads/."""
    import os

    from conftest import tiny_spec

    import albert_lab.training.jobs as jobs
    from albert_lab.training.config import TrainConfig
    from app.shell import owner

    spawned = []
    monkeypatch.setattr(jobs, "spawn_worker", lambda run_dir: spawned.append(run_dir) or 0)
    prepared = jobs.prepare(TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000,
                                        max_steps=5, max_seq_len=64))
    monkeypatch.setattr(jobs, "prepare", lambda config, **_: prepared)
    monkeypatch.setattr(owner, "_cookie", lambda: "one-browser-token-0123456789")
    at = goto(app, "training")
    at.selectbox(key="tr_corpus").set_value("upload a .txt / .jsonl file")
    messages = []
    for click in range(6):
        at.file_uploader(key="tr_upload").set_value((f"corpus-{click}.txt", f"Text {click}. More.\n".encode() * 50,
                                                     "text/plain"))
        next(b for b in at.button if b.label == "Start training").click().run()
        assert not at.exception
        messages.append([e.value for e in at.error])
    assert len(spawned) == 2 and len(list_runs(Path(os.environ["ALBERT_LAB_RUNS"]))) == 2
    assert messages[:2] == [[], []]
    assert all(m == ["starting the run: queue full: you have 2 runs queued or running (at most 2 per browser); start "
                     "this one when one of them ends, or cancel one under 'Runs'"] for m in messages[2:]), messages
    uploads = sorted(p.name.split("-", 1)[1] for p in (Path(os.environ["ALBERT_LAB_RUNS"]) / "uploads").iterdir())
    assert uploads == ["corpus-0.txt", "corpus-1.txt"]  # the refused runs' uploads were never kept
    monkeypatch.setattr(owner, "_cookie", lambda: "another-browser-token-0123456789")
    at.number_input(key="tr_max_seq_len").set_value(256)  # refused after the upload was kept: then it goes
    at.file_uploader(key="tr_upload").set_value(("corpus-x.txt", b"Text x. More.\n" * 50, "text/plain"))
    next(b for b in at.button if b.label == "Start training").click().run()
    assert any("max_seq_len: must be between 16" in e.value for e in at.error), [e.value for e in at.error]
    assert len(list((Path(os.environ["ALBERT_LAB_RUNS"]) / "uploads").iterdir())) == 2


@pytest.mark.parametrize("forged", ["stored-hash", "token-one-character-off", "../../.owners/x", "A" * 5000])
def test_a_copied_record_or_a_forged_owner_cookie_cannot_cancel_anothers_run(app, monkeypatch, forged):
    """The runs panel's owner cookie: another browser that sends the server's stored record as its
    cookie, the token one character off, or a malformed cookie sees the run read-only."""
    import os

    from conftest import tiny_spec

    import albert_lab.training.jobs as jobs
    from albert_lab.training.config import TrainConfig
    from app.shell import owner

    config = TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_steps=5,
                         max_seq_len=64, name="theirs")
    monkeypatch.setattr(jobs, "spawn_worker", lambda run_dir: 0)  # queued, never trained
    token = "their-browser-token-0123456789abcdef"
    cookie = {"value": token}
    monkeypatch.setattr(owner, "_cookie", lambda: owner._TOKEN.fullmatch(v) and v if (v := cookie["value"]) else None)
    run = jobs.start_run(config, owner=__import__("hashlib").sha256(token.encode()).hexdigest())
    record = (Path(os.environ["ALBERT_LAB_RUNS"]) / ".owners" / run.id).read_text().strip()
    assert token not in record  # the server keeps a hash, never the token
    at = goto(app, "training")
    assert any(b.label == "Cancel this run" for b in at.button)  # its owner's browser
    cookie["value"] = {"stored-hash": record, "token-one-character-off": token[:-1] + "g"}.get(forged, forged)
    fresh = AppTest.from_file(MAIN, default_timeout=120).run()
    other = goto(fresh, "training")
    assert not any(b.label == "Cancel this run" for b in other.button)
    assert any("Started in another browser" in c.value for c in other.caption)


def test_the_warmup_note_says_the_rate_the_last_step_reaches():
    """A warm-up as long as the run reaches the rate asked for at its last step (it said
    'reaches only 0.003 of the 0.003'); a longer one stops short of it; a shorter one says nothing."""
    assert lr_factor(5, 5 / 6, 6) == 1.0 and lr_factor(5, 5 / 6, 50) == 6 / 50  # the last of 6 steps
    equal = warmup_note(6, 6, 0.003)
    assert "is as long as the run" in equal and "reaches the 0.003 asked for only at its last step" in equal
    assert "only" in equal and "reaches only" not in equal
    assert "reaches only 0.00036, not the 0.003 asked for" in warmup_note(50, 6, 0.003)
    assert warmup_note(5, 6, 0.003) is None
