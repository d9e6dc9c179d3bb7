"""How the pages write numbers, token counts, times and commit hashes."""

from app.text import fmt_tokens


def test_numbers_read_as_people_write_them():
    from app.text import fmt_value

    assert fmt_value("nsp_pairs", 515.0) == "515" and fmt_value("tokens", 25637385) == "25,637,385"
    assert fmt_value("wall_time_s", 3565.4) == "59 min" and fmt_value("sop_acc", 0.91456) == "0.9146"
    assert fmt_value("layer_norm_eps", 1e-12) == "1e-12" and fmt_value("family", "albert") == "albert"


def test_fmt_tokens():
    assert fmt_tokens(1501) == "1,501"
    assert fmt_tokens(22_434_249) == "22.43M"


def test_an_iso_time_reads_to_the_minute():
    from app.text import fmt_value

    assert fmt_value("created", "2026-11-23T12:38:29+0000") == "2026-11-23 12:38 UTC"
    assert fmt_value("created", "2026-11-23T12:38:29-05:30") == "2026-11-23 12:38 UTC-05:30"
    assert fmt_value("note", "at 12:38:29 it stopped") == "at 12:38:29 it stopped"


def test_card_code_hash_is_short_enough_for_the_card():
    """The full 40-character commit ran past the provenance table's edge at 1400 px."""
    from app.text import fmt_value

    full = "8c628f548f96749080bc715cdd54cba45235476e"
    assert fmt_value("code", full) == "8c628f548f96" and fmt_value("code", full + "+changes") == "8c628f548f96+changes"


def test_a_record_in_the_card_reads_as_fields_not_as_python():
    """The Model card showed a run's start, teacher and first stage as "{'folder': ...}"."""
    from app.text import fmt_value

    teacher = {"folder": "checkpoints/bert-sop-minilm", "weight": 1.0, "hidden_states_matched": [0, 3, 6],
               "pair_distribution_matched": False, "conversion": None}
    assert fmt_value("distilled_from", teacher) == ("folder: checkpoints/bert-sop-minilm; weight: 1; "
                                                    "hidden states matched: 0, 3, 6; pair distribution matched: False")
    start = {"name": "x", "pooler_standardized": {"pairs": 512, "gain": 0.5}, "created": "2026-11-23T12:38:29+0000"}
    assert fmt_value("init_from", start) == "name: x; pooler standardized: (pairs: 512; gain: 0.5); saved: 2026-11-23 12:38 UTC"
    metrics = {"mlm": {"accuracy": 0.29312, "low": 0.29, "high": 0.3, "n": 43099}, "ood_sop_interior": {"accuracy": 0.476}}
    assert fmt_value("metrics", metrics) == "MLM (held-out) 0.293, SOP, interior pairs (out of domain) 0.476"
