"""The Parameters page (AppTest): the calculator, its fields, and the cost curves."""

import pandas as pd
from conftest import charts, goto

from albert_lab.params import count
from albert_lab.spec import PRESETS
from app.text import si


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


def test_parameters_page_gives_xxlarge_one_count(app):
    """'ALBERT-xxlarge (235M parameters)' on one tab, 222.6M on another."""
    at = goto(app, "parameters")
    text = " ".join(m.value for m in at.markdown)
    assert "ALBERT-xxlarge (235M parameters)" not in text and "ALBERT-xxlarge (222.6M parameters as specified" in text


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
