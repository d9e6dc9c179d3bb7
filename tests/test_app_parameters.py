"""The Parameters page (AppTest): the calculator, its fields, and the cost curves."""

import pandas as pd
from conftest import charts, goto

from albert_lab.params import count
from albert_lab.spec import PRESETS
from app.shell.text import si


def test_parameters(app):
    at = goto(app, "parameters")
    assert at.metric[0].value == "11,683,584"  # albert-base, the default preset
    frames = [d.value for d in at.dataframe]
    table1 = next(f for f in frames if "paper speedup" in f)
    assert table1.set_index("model").loc["albert-base", "exact params"] == 11_683_584
    assert len(charts(at)) == 3  # calculator bars, params curve, FLOPs curve
    at.number_input(key="calc_groups_albert-base").set_value(5).run()
    assert any("Groups (N): 5 must divide L (layers) 12" in e.value for e in at.error)  # the calculator's names


def test_parameters_flops_read_at_both_ends_of_the_range(app):
    """'669,805.3M' and '0.0M' before: 3 significant digits with an SI suffix now."""
    at = goto(app, "parameters")
    for key, value in (("calc_l_albert-base", 96), ("calc_ffn_albert-base", 65536), ("calc_seq", 8192)):
        at.number_input(key=key).set_value(value).run()
    spec = PRESETS["albert-base"].replace(num_layers=96, ffn_size=65536)
    assert at.metric[3].value == si(count(spec, 8192).flops_per_token) == "22.2G"  # was "22,196.5M"


def test_parameters_h_steps_by_heads_and_snaps_invalid_values(app):
    at = goto(app, "parameters")
    at.number_input(key="calc_heads_albert-base").set_value(24).run()  # set by hand: H no longer moves it
    assert at.number_input(key="calc_h_albert-base").step == 24  # 768 -> 792, still a multiple of 24
    at.number_input(key="calc_h_albert-base").set_value(800).run()  # typed: not a multiple of 24
    assert not at.error and not at.exception and at.number_input(key="calc_heads_albert-base").value == 24
    assert any("H = 800 is not a multiple of the 24 heads" in w.value and "H = 792" in w.value for w in at.warning)
    assert at.metric[0].value.replace(",", "").isdigit() and len(charts(at)) == 3


def test_heads_and_ffn_follow_h_until_set_as_the_cli_counts(app):
    """The README's `params --hidden 4096 --sharing attention --groups 3`: 1.83B by the CLI (64 heads, FFN 16,384
    derived from H), 524M in the calculator, which kept albert-base's 12 heads and FFN 3,072."""
    at = goto(app, "parameters")
    at.selectbox(key="calc_share_albert-base").set_value("attention").run()
    at.number_input(key="calc_groups_albert-base").set_value(3).run()
    at.number_input(key="calc_h_albert-base").set_value(4096).run()
    assert at.number_input(key="calc_heads_albert-base").value == 64 and at.number_input(key="calc_ffn_albert-base").value == 16384
    cli = count(PRESETS["albert-base"].replace(hidden_size=4096, sharing="attention", num_groups=3)).total
    assert at.metric[0].value == f"{cli:,}" == "1,833,572,864"
    assert any(c.value.startswith("Counted: ALBERT L=12 H=4096 E=128") and "64 heads, FFN 16,384" in c.value
               for c in at.caption)
    at.number_input(key="calc_ffn_albert-base").set_value(8192).run()  # set by hand, then H moves: FFN stays
    at.number_input(key="calc_h_albert-base").set_value(2048).run()
    assert at.number_input(key="calc_heads_albert-base").value == 32 and at.number_input(key="calc_ffn_albert-base").value == 8192


def test_parameters_bert_shows_e_equal_h_and_no_groups(app):
    at = goto(app, "parameters")
    at.selectbox(key="calc_preset").set_value("bert-base").run()
    e_field = next(n for n in at.number_input if n.label.startswith("E (embedding)"))
    assert e_field.disabled and e_field.value == 768
    assert not [n for n in at.number_input if n.label.startswith("Groups")]
    at.number_input(key="calc_h_bert-base").set_value(1024).run()
    e_field = next(n for n in at.number_input if n.label.startswith("E (embedding)"))
    assert e_field.value == 1024 and not at.error


def test_parameters_page_gives_xxlarge_one_count(app):
    """'ALBERT-xxlarge (235M parameters)' on one tab, 222.6M on another."""
    at = goto(app, "parameters")
    text = " ".join(m.value for m in at.markdown)
    assert "ALBERT-xxlarge (235M parameters)" not in text and "ALBERT-xxlarge (222.6M parameters as specified" in text


def test_the_paper_avg_column_is_explained_where_it_is_shown(app):
    """Tables 3 and 4 had a 'paper avg' column that nothing on the page explained."""
    at = goto(app, "parameters")
    tables = [d.value for d in at.dataframe if "paper avg" in d.value]
    assert len(tables) == 2  # Tables 3 and 4
    explained = [c.value for c in at.caption if "**paper avg**: the paper's average downstream score" in c.value]
    assert len(explained) == 2 and all("SQuAD v1.1 and v2.0, each the mean of its F1 and exact match" in c
                                       and "MNLI, SST-2 and RACE" in c for c in explained)


def test_cost_curves_use_a_log_axis_only_where_the_cost_spans_orders_of_magnitude():
    """FLOPs per token against E change by under 1%: on a log axis clipped to the data that
    looked like a steep rise, and the four identical strategies hid behind one line."""
    from albert_lab.figures.parameters import sweep_figure
    from albert_lab.params import sweep
    from albert_lab.spec import PRESETS

    frame = pd.DataFrame(sweep(PRESETS["albert-base"], "embedding_size", [32, 128, 512, 1024]))
    flops = sweep_figure(frame, "embedding_size", "E (embedding)", "flops_per_token")
    assert flops.layout.yaxis.type != "log" and flops.layout.yaxis.rangemode == "tozero"
    assert "coincide" in flops.layout.title.text and "(log scale)" not in flops.layout.yaxis.title.text
    params = sweep_figure(frame, "embedding_size", "E (embedding)", "params")
    assert params.layout.yaxis.type == "log" and "coincide" not in params.layout.title.text
    assert len(params.layout.title.text.split("<br>")[0]) <= 40  # fits half a page
