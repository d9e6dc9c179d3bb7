"""How the pages write numbers, token counts, times and commit hashes."""

from app.shell.text import fmt_tokens


def test_numbers_read_as_people_write_them():
    from app.shell.text import fmt_value

    assert fmt_value("nsp_pairs", 515.0) == "515" and fmt_value("tokens", 25637385) == "25,637,385"
    assert fmt_value("wall_time_s", 3565.4) == "59 min" and fmt_value("sop_acc", 0.91456) == "0.9146"
    assert fmt_value("layer_norm_eps", 1e-12) == "1e-12" and fmt_value("family", "albert") == "albert"


def test_fmt_tokens():
    assert fmt_tokens(1501) == "1,501"
    assert fmt_tokens(22_434_249) == "22.43M"


def test_an_iso_time_reads_to_the_minute():
    from app.shell.text import fmt_value

    assert fmt_value("created", "2026-11-23T12:38:29+0000") == "2026-11-23 12:38 UTC"
    assert fmt_value("created", "2026-11-23T12:38:29-05:30") == "2026-11-23 12:38 UTC-05:30"
    assert fmt_value("note", "at 12:38:29 it stopped") == "at 12:38:29 it stopped"


def test_card_code_hash_is_short_enough_for_the_card():
    """The full 40-character commit ran past the provenance table's edge at 1400 px."""
    from app.shell.text import fmt_value

    full = "8c628f548f96749080bc715cdd54cba45235476e"
    assert fmt_value("code", full) == "8c628f548f96" and fmt_value("code", full + "+changes") == "8c628f548f96+changes"


def test_a_record_in_the_card_reads_as_fields_not_as_python():
    """The Model card showed a run's start, teacher and first stage as "{'folder': ...}"."""
    from app.shell.text import fmt_value

    teacher = {"folder": "checkpoints/bert-sop-minilm", "weight": 1.0, "hidden_states_matched": [0, 3, 6],
               "pair_distribution_matched": False, "conversion": None}
    assert fmt_value("distilled_from", teacher) == ("folder: checkpoints/bert-sop-minilm; weight: 1; "
                                                    "hidden states matched: 0, 3, 6; pair distribution matched: False")
    start = {"name": "x", "pooler_standardized": {"pairs": 512, "gain": 0.5}, "created": "2026-11-23T12:38:29+0000"}
    assert fmt_value("init_from", start) == "name: x; pooler standardized: (pairs: 512; gain: 0.5); saved: 2026-11-23 12:38 UTC"
    metrics = {"mlm": {"accuracy": 0.29312, "low": 0.29, "high": 0.3, "n": 43099}, "ood_sop_interior": {"accuracy": 0.476}}
    assert fmt_value("metrics", metrics) == "MLM (held-out) 0.293, SOP, interior pairs (out of domain) 0.476"


def test_a_card_s_records_are_named_in_one_cell_and_its_early_stop_said():
    """albert-sop-minilm's card: 'first stage' was one cell of 2,000 characters, 'started from' named the model
    itself without a word, and '--steps 4000' stood beside 2,058 steps with no 'stopped' row."""
    import json

    from conftest import ROOT

    from app.shell.text import provenance_view

    card = json.loads((ROOT / "checkpoints" / "albert-sop-minilm" / "albert_lab.json").read_text())
    rows, records = provenance_view(card)
    table = {r["field"]: r["value"] for r in rows}
    assert table["stopped"] == "the 110-minute budget ended the run at step 2,058 of 4,000"
    assert table["started from"].startswith("checkpoints/albert-sop-minilm (this model as it was before this stage, "
                                            "its first stage below)")
    assert {"started from", "distilled from", "first stage"} <= set(records)
    assert table["first stage"] == "1,800 steps, 13,230,076 tokens; in full below"
    assert "command (reproduces it)" in table and "command as run (the paths of that day)" in table
    bert = json.loads((ROOT / "checkpoints" / "bert-sop-minilm" / "albert_lab.json").read_text())
    assert dict((r["field"], r["value"]) for r in provenance_view(bert)[0])["stopped"].startswith("the 6-minute budget")
    cancelled = {"provenance": {"steps": 50, "wall_time_s": 12.0, "train_config": {"max_steps": 100, "max_minutes": 5}}}
    assert "stopped" not in {r["field"] for r in provenance_view(cancelled)[0]}  # 12 s of 5 minutes: not the budget


HOSTILE = "![x](http://h/i.png) [c](javascript:alert(1)) <img src=x onerror=alert(1)> :red[R] $x$ **b** www.h.org a@h.org"


def test_plain_text_leaves_no_markup_and_no_autolink_but_reads_the_same():
    """Streamlit's markdown (CommonMark, GFM autolinks, colours, icons, LaTeX) finds nothing to draw in it; the
    browser test draws it (tests/test_browser_hostile.py). Decoded, it is the text itself, but for the joiners."""
    import html

    from app.shell.text import JOINER, plain

    said = plain(HOSTILE)
    assert not set("[]<*$`") & set(said) and not {"http:", "www.", "@h"} & {said[i:i + 5] for i in range(len(said))}
    assert "&#58;red" in said and ":r" not in said  # no colour
    assert html.unescape(said).replace(JOINER, "") == HOSTILE
    assert plain("- a list? # no heading") == "&#45; a list? # no heading" and plain("# h") == "&#35; h"
    words = "ALBERT_LAB_ALLOWED_DIRS 'albert-sop' (2 of 3): run:2"  # what cannot start markup stays as it is
    assert plain(f"_em_ {words}") == f"&#95;em&#95; {words}"
    assert plain("~user $5") == "~user $5" and plain("~~s~~ $x$") == "&#126;&#126;s&#126;&#126; &#36;x&#36;"  # pairs only
    assert plain("line\nbreak") == "line break"


def test_quoted_text_is_one_code_span_whatever_its_backticks():
    from app.shell.text import quoted

    assert quoted("(a+)+$") == "`(a+)+$`" and quoted("a``b") == "```a``b```" and quoted("`x") == "`` `x ``"
    assert quoted("") == "''"
