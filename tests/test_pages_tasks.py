"""The Training and Sentence pairs pages as a new user meets them (AppTest)."""

from test_app import app, goto  # noqa: F401 - app is a fixture used as a parameter

from albert_lab.spec import PRESETS


def test_picking_a_preset_sets_the_architecture_fields(app):
    at = goto(app, "training")
    assert at.number_input(key="tr_h").value == PRESETS["lab-albert"].hidden_size
    at.selectbox(key="tr_preset").set_value("lab-bert").run()
    bert = PRESETS["lab-bert"]
    assert at.number_input(key="tr_h").value == bert.hidden_size and at.number_input(key="tr_l").value == bert.num_layers
    assert at.number_input(key="tr_e").disabled and at.selectbox(key="tr_sharing").disabled
    at.selectbox(key="tr_preset").set_value("lab-tiny").run()
    assert at.number_input(key="tr_h").value == PRESETS["lab-tiny"].hidden_size
    assert not at.number_input(key="tr_e").disabled


def test_a_blank_sentence_is_refused_not_scored(app):
    at = goto(app, "sentence_pairs")
    at.text_area(key="pair_a").set_value("   ")
    at.button[0].click().run()  # the form's submit button
    assert any("sentence A is empty" in e.value for e in at.error)
    assert not at.exception


def test_attributions_explain_the_typed_pair(app):
    at = goto(app, "sentence_pairs")
    at.text_area(key="pair_a").set_value("Zebras graze on the savanna.")
    at.text_area(key="pair_b").set_value("They live in herds.")
    next(b for b in at.button if b.label == "Score this pair").click().run()
    next(b for b in at.button if b.label == "Explain").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    request, result = at.session_state["attr_result"]
    assert request[1] == "Zebras graze on the savanna." and request[2] == "They live in herds."
    words = "".join(result.tokens.token).replace("\u2581", " ").lower()
    assert "savanna" in words.replace(" ", "") or "sav" in words


def test_table5_shows_fractions_and_no_paths(app):
    at = goto(app, "sentence_pairs")
    paper = next(d.value for d in at.dataframe if "downstream avg" in d.value)
    assert paper[["MLM", "NSP", "SOP"]].to_numpy().max() < 1  # fractions, like ours
    assert not any("/" in str(v) and str(v).startswith("/") for d in at.dataframe for v in d.value.to_numpy().ravel())


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
    monkeypatch.setenv("ALBERT_LAB_SINGLE_USER", "1")
    at.run()
    assert any(b.label == "Cancel this run" for b in at.button)


def test_fit_a_probe_from_the_model_card(app):
    at = goto(app, "model_card")
    at.selectbox(key="card_checkpoint").set_value("hub-albert").run()
    for key, value in (("probe_train", 100), ("probe_held", 100), ("probe_steps", 10)):
        at.number_input(key=key).set_value(value)
    next(b for b in at.button if b.label.startswith("Fit the probe")).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    name, path, accuracy = at.session_state["probe_done"]
    assert name == "hub-albert-sop-probe" and 0 <= accuracy <= 1
    from albert_lab.checkpoint.load import load_checkpoint

    probe = load_checkpoint(path, device="cpu")
    assert probe.heads.pair == "probe" and probe.card["probe"]["pairs"]["held_out"] == 100


def test_a_real_pretrained_encoder_through_every_page(app, minilm, monkeypatch):
    """all-MiniLM-L6-v2 (no MLM head, no NSP head), added in the sidebar: every page shows
    its head status and never a number from a missing head."""
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(minilm.parent))
    app.text_input(key="add_source").set_value(str(minilm))
    next(b for b in app.button if b.label == "Add").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    name = next(n for n in app.session_state["picked"] if "model" in n or "minilm" in n.lower())
    app.session_state["picked"] = [name]
    at = goto(app, "model_card")
    assert any("MLM head" in w.value and "NSP head" in w.value for w in at.warning)
    heads = next(t.value for t in at.table if "head" in t.value.columns)
    assert set(heads.status) == {"missing"}
    at = goto(at, "oscillation")
    assert not at.error, [e.value for e in at.error]
    at = goto(at, "sentence_pairs")
    typed = next(d.value for d in at.dataframe if "p_ab" in d.value)
    assert typed.p_ab.isna().all() and any("not scored" in w.value for w in at.warning)
    at = goto(at, "gradient_flow")
    assert any("MLM head" in e.value for e in at.error) and not at.exception  # refused in words, not computed
    at = goto(at, "shared_block")
    assert not at.exception
