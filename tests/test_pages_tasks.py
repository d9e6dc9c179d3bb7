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
